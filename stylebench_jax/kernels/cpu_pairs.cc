// Rank counting of one all-pairs score tile for XLA:CPU, called through jax.ffi
// (kernels/pair_scores.py, the minority method's counting pass).
//
// XLA computes the tile's [B, B] float32 inner products; this kernel turns each pair (i, j) of the
// counted class into its rank among the rarer class's distinct keys and adds 1 to that bin, in one
// sweep. The same arithmetic in XLA (pair_scores._local_ranks' index_of) runs as separate gather
// passes over [B, B] temporaries and a scatter; here each pair is read once and no temporary exists.
//
// Pair (i, j) of tile (r, c): global rows gi = r B + i, gj = c B + j; counted when r >= 0,
// gi < gj < n and (labels equal) != cls. Its key (the float32 score's bits mapped to an unsigned
// order, -0 as +0: pair_scores.float_keys) gives entry = lut[key >> shift]:
//   entry < 0: no rarer-class key shares the prefix; bin 2 (-entry - 1).
//   entry = s, slot s inside this pass's tables (0 <= s - slot0 < k): rank = table[s - slot0][low],
//     low = key's last `shift` bits; equal when table[.][low + 1] - rank == 1 modulo the table's
//     unsigned type; bin 2 (starts[s] + rank) + equal.
//   entry = s outside the pass: bin 2 starts[s].
// Two stages over XLA's intra-op threads (native_pool.h): the tile's rows shared out, each pair's bin
// written to a scratch output ([B, B] bins and [B] counts per row: XLA's temporary, reused by every
// tile); then the histogram's range split, each thread adding the bins of its range. The histogram
// is updated in place (output 0 aliases input 0).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "native_pool.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

inline uint32_t float_key(float s) {
  s += 0.0f;  // -0 -> +0
  uint32_t bits;
  std::memcpy(&bits, &s, sizeof(bits));
  return (bits >> 31) ? ~bits : (bits | 0x80000000u);
}

constexpr int64_t kChunk = 256;  // pairs whose lookups are issued together
constexpr int64_t kUnitRows = 32;  // tile rows per unit of the lookup stage

// Stage 1 for rows [i0, i1) of the tile: the bin of every counted pair, row i's m_i bins stored at
// bins[i * B .. i * B + m_i), m_i in counts[i].
template <typename T>
void bin_rows(int32_t* bins, int32_t* counts, const float* scores, const int32_t* row_labels,
              const int32_t* col_labels, int64_t B, int64_t i0, int64_t i1, int64_t r, int64_t c, int64_t n,
              int64_t slot0, const int32_t* lut, const int32_t* starts, const T* table, int64_t k,
              int64_t shift, int64_t cls) {
  const uint32_t low_mask = (uint32_t{1} << shift) - 1;
  const int64_t row_len = (int64_t{1} << shift) + 1;
  const int32_t rank_mask = static_cast<int32_t>((uint64_t{1} << (8 * sizeof(T))) - 1);
  const bool want_equal = cls == 0;  // counted pairs: equal labels when the rarer class is 0
  const int64_t col0 = c * B;
  const int64_t j_end = std::min<int64_t>(B, n - col0);
  // Each lookup is a likely cache miss (the prefix lookup and the rank tables are tens of MB):
  // stage by stage over a chunk of pairs, the loads of one stage do not depend on each other, so
  // many are in flight at once (a pair-at-a-time loop waits for dependent misses pair after pair).
  uint32_t key[kChunk];
  int32_t entry[kChunk];
  int64_t at[kChunk];  // the pair's rank-table row offset, -1 outside this pass's tables
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t gi = r * B + i;
    const int32_t la = row_labels[i];
    const float* row = scores + i * B;
    int32_t* out = bins + i * B;
    int64_t filled = 0;
    for (int64_t j0 = std::max<int64_t>(0, gi - col0 + 1); j0 < j_end; j0 += kChunk) {
      const int64_t j1 = std::min(j_end, j0 + kChunk);
      int64_t m = 0;
      for (int64_t j = j0; j < j1; ++j) {
        key[m] = float_key(row[j]);
        m += (la == col_labels[j]) == want_equal;  // keep the counted class's pairs
      }
      for (int64_t q = 0; q < m; ++q) {
        const int32_t e = lut[key[q] >> shift];
        const int64_t local = int64_t{e} - slot0;
        const bool inside = e >= 0 && local >= 0 && local < k;
        entry[q] = e;
        at[q] = inside ? local * row_len : -1;
        if (inside) __builtin_prefetch(table + at[q] + (key[q] & low_mask));
      }
      for (int64_t q = 0; q < m; ++q) {  // branch-free: the slot kinds mix unpredictably
        const int32_t e = entry[q];
        const bool inside = at[q] >= 0;
        const T* t = table + (inside ? at[q] : 0) + (key[q] & low_mask);
        const int32_t rank = inside ? int32_t{t[0]} : 0;
        const bool equal = inside && ((int32_t{t[1]} - rank) & rank_mask) == 1;
        const int32_t start = starts[e >= 0 ? e : 0];
        out[filled + q] = 2 * (e >= 0 ? start + rank : -e - 1) + equal;
      }
      filled += m;
    }
    counts[i] = static_cast<int32_t>(filled);
  }
}

template <typename T>
void count_tile(ffi::ThreadPool& pool, int32_t* hist, int64_t size, int32_t* bins, int32_t* counts,
                const float* scores, const int32_t* row_labels, const int32_t* col_labels, int64_t B, int64_t r,
                int64_t c, int64_t n, int64_t slot0, const int32_t* lut, const int32_t* starts, const T* table,
                int64_t k, int64_t shift, int64_t cls) {
  // Stage 1, rows shared over the threads: the bins (the lookups' misses overlap across threads).
  stylebench::run_units(pool, (B + kUnitRows - 1) / kUnitRows, 0, [&](int64_t u, int, float*) {
    bin_rows(bins, counts, scores, row_labels, col_labels, B, u * kUnitRows, std::min(B, (u + 1) * kUnitRows),
             r, c, n, slot0, lut, starts, table, k, shift, cls);
  });
  // Stage 2, the histogram's range split over the threads: each thread adds the bins of its range,
  // so no count is touched by two threads (the sums do not depend on the scheduling).
  const int64_t parts = stylebench::run_slots(pool, size);
  const int64_t span = (size + parts - 1) / parts;
  stylebench::run_units(pool, parts, 0, [&](int64_t p, int, float*) {
    if (p * span >= size) return;  // ranges past the end (span rounded up): nothing to add
    const uint32_t lo = static_cast<uint32_t>(p * span);
    const uint32_t width = static_cast<uint32_t>(std::min(size, (p + 1) * span) - p * span);
    for (int64_t i = 0; i < B; ++i) {
      const int32_t* row = bins + i * B;
      for (int64_t q = 0; q < counts[i]; ++q) {
        const uint32_t at = static_cast<uint32_t>(row[q]) - lo;  // bins below lo wrap past width
        if (at < width) ++hist[lo + at];
      }
    }
  });
}

ffi::Error PairRanks(ffi::ThreadPool pool, int64_t shift, int64_t cls, ffi::Buffer<ffi::S32> hist,
                     ffi::Buffer<ffi::F32> scores, ffi::Buffer<ffi::S32> row_labels,
                     ffi::Buffer<ffi::S32> col_labels, ffi::Buffer<ffi::S32> meta, ffi::Buffer<ffi::S32> lut,
                     ffi::Buffer<ffi::S32> starts, ffi::AnyBuffer table, ffi::ResultBuffer<ffi::S32> out,
                     ffi::ResultBuffer<ffi::S32> scratch) {
  const int64_t size = static_cast<int64_t>(hist.element_count());
  int32_t* h = out->typed_data();
  if (h != hist.typed_data()) std::memcpy(h, hist.typed_data(), size * sizeof(int32_t));
  const auto dims = scores.dimensions();
  if (dims.size() != 2 || dims[0] != dims[1]) return ffi::Error::InvalidArgument("scores: expected [B, B]");
  const int64_t B = dims[0];
  if (static_cast<int64_t>(scratch->element_count()) != B * B + B)
    return ffi::Error::InvalidArgument("scratch: expected B * B + B int32");
  const int32_t* m = meta.typed_data();  // r, c, n, slot0
  if (m[0] < 0) return ffi::Error::Success();  // a padding tile
  const auto table_dims = table.dimensions();
  if (table_dims.size() != 2 || table_dims[1] != (int64_t{1} << shift) + 1)
    return ffi::Error::InvalidArgument("table: expected [k, 2^shift + 1]");
  const int64_t k = table_dims[0];
  int32_t* bins = scratch->typed_data();
  int32_t* counts = bins + B * B;
  switch (table.element_type()) {
    case ffi::DataType::U8:
      count_tile(pool, h, size, bins, counts, scores.typed_data(), row_labels.typed_data(), col_labels.typed_data(),
                 B, m[0], m[1], m[2], m[3], lut.typed_data(), starts.typed_data(),
                 static_cast<const uint8_t*>(table.untyped_data()), k, shift, cls);
      break;
    case ffi::DataType::U16:
      count_tile(pool, h, size, bins, counts, scores.typed_data(), row_labels.typed_data(), col_labels.typed_data(),
                 B, m[0], m[1], m[2], m[3], lut.typed_data(), starts.typed_data(),
                 static_cast<const uint16_t*>(table.untyped_data()), k, shift, cls);
      break;
    default:
      return ffi::Error::InvalidArgument("table: expected uint8 or uint16");
  }
  return ffi::Error::Success();
}

}  // namespace

// shift (low bits per key: 32 - prefix bits), cls (the rarer class: 1 = same label); hist [size] (aliased
// with the output), scores [B, B], row_labels [B], col_labels [B], meta i32[4] = (row block, column
// block, n, slot0), lut [2^(32 - shift)], starts [slots], table [k, 2^shift + 1] uint8/uint16 -> hist.
XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchPairRanks, PairRanks,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Attr<int64_t>("shift")
                                  .Attr<int64_t>("cls")
                                  .Arg<ffi::Buffer<ffi::S32>>()  // hist
                                  .Arg<ffi::Buffer<ffi::F32>>()  // scores
                                  .Arg<ffi::Buffer<ffi::S32>>()  // row_labels
                                  .Arg<ffi::Buffer<ffi::S32>>()  // col_labels
                                  .Arg<ffi::Buffer<ffi::S32>>()  // meta
                                  .Arg<ffi::Buffer<ffi::S32>>()  // lut
                                  .Arg<ffi::Buffer<ffi::S32>>()  // starts
                                  .Arg<ffi::AnyBuffer>()         // table
                                  .Ret<ffi::Buffer<ffi::S32>>()    // hist
                                  .Ret<ffi::Buffer<ffi::S32>>());  // scratch [B * B + B]
