// Exact float32 top-k scan for XLA:CPU, called through jax.ffi (kernels/cpu_topk.py, kernels/scan.py).
//
// One device's step of the blocked search: fold candidate rows r in [lo, hi) of one call into the
// running lists keys/idx [Q, K] (score descending, index ascending), score = <q, x_r> (times
// 1 / |x_r| with normalisation). XLA computes a [Q, block] score tile, writes it to memory and reads
// it again for the selection; here each score is compared with its query's current K-th best while
// it is still in a register, so no tile exists and the search runs at the rate of the products.
//
// Register block: 6 candidate rows x 16 queries (12 ymm accumulators), the 6 rows' values
// broadcast from the row-major candidates (no packing of the pool), the queries packed once per
// call as [Q / 16][D][16] panels. Rows are visited in chunks of 48 (kept in L1/L2 while every panel
// passes over them). Every score is the same FMA chain over d = 0..D-1 whatever the row's place in
// its block (a last partial group of rows is copied into a zeroed 6-row block), so a candidate's
// score does not depend on the call, the mesh or the thread, and exact duplicates tie.
//
// Selection: per thread and query a min-heap of K (key, index) entries, worst = (lowest key, then
// highest index); threads claim units of consecutive rows in increasing order, so a later row only
// enters with a strictly larger key, and ties keep the lower index. A score enters when it is >=
// the running list's K-th key (`floor`, the state from earlier calls) and > the heap's worst. At the
// end the state's list and every thread's heap are merged by (key descending, index ascending):
// the result is the exact top K of the state and the rows, independent of the scheduling.
// Excluded candidates (the query's own id, a candidate of the query's group) are checked only for
// scores that pass the threshold. NaN scores never enter (comparisons are false).
//
// Row statistics as kernels/scan.py's: sq = sum x^2 in float32 (non-finite for NaN/inf or
// |x| > ~1e19: `bad` = lowest such global row), sq_range = (min, max) of sq over the rows scanned
// (of the normalised rows with normalisation, whose factor is 1/sqrt(sq), 0 for a zero row).
//
// Requires AVX2 and FMA (stylebench_native_supported in cpu_attention.cc).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "native_pool.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int kRows = 6;        // candidate rows per register block
constexpr int kLanes = 16;      // queries per register block (two ymm)
constexpr int kChunk = 48;      // rows per chunk: measured best of 24/48/96/384 (Q = 1000, D = 384)
constexpr int64_t kUnitRows = 1536;  // rows per claimed unit (32 chunks)
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kNone = std::numeric_limits<int32_t>::max();

enum Flags : int64_t { kNormalize = 1, kUseIds = 2, kUseGroups = 4 };

// A worse than B in the final order (key descending, index ascending).
inline bool worse(float ka, int32_t ia, float kb, int32_t ib) { return ka < kb || (ka == kb && ia > ib); }

// Min-heap of K entries ordered by `worse` (root = worst); replaces the root and sifts down.
inline void replace_root(float* key, int32_t* idx, int k, float s, int32_t j) {
  int p = 0;
  for (;;) {
    int c = 2 * p + 1;
    if (c >= k) break;
    if (c + 1 < k && worse(key[c + 1], idx[c + 1], key[c], idx[c])) ++c;
    if (!worse(key[c], idx[c], s, j)) break;
    key[p] = key[c];
    idx[p] = idx[c];
    p = c;
  }
  key[p] = s;
  idx[p] = j;
}

struct Scan {
  const float* rows;  // row r at rows + r * D
  const float* packed;  // [P][D][16]
  int64_t D, Q, P, K;
  int64_t start;  // global index of row 0
  const float* floor_minus;  // [P * 16]: largest float below the state's K-th key (+inf: padding lanes)
  const int32_t* query_ids;
  const int32_t* query_groups;
  const int32_t* row_groups;
  int64_t flags;
};

struct Thread {  // one slot's heaps and statistics
  std::vector<float> key;
  std::vector<int32_t> idx;
  int32_t bad = kNone;
  float sq_min = kInf, sq_max = 0.0f;
};

inline float row_sq(const float* x, int64_t D) {
  __m256 acc = _mm256_setzero_ps();
  int64_t d = 0;
  for (; d + 8 <= D; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + d), _mm256_loadu_ps(x + d), acc);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float s = 0.0f;
  for (int l = 0; l < 8; ++l) s += lanes[l];
  for (; d < D; ++d) s += x[d] * x[d];
  return s;
}

// Scores of 6 rows (x0 + r * stride) against one panel, compared with the panel's 16 thresholds;
// rows whose score passes go to the heaps (admissibility checked there).
inline void block6(const Scan& s, const float* x0, int64_t stride, const float* scale, const float* qp, int p,
                   int64_t first, int count, float* thr, Thread& t) {
  const int64_t D = s.D;
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00,
         a40 = a00, a41 = a00, a50 = a00, a51 = a00;
  const float *x1 = x0 + stride, *x2 = x1 + stride, *x3 = x2 + stride, *x4 = x3 + stride, *x5 = x4 + stride;
  const float* q = qp;
  for (int64_t d = 0; d < D; ++d, q += kLanes) {
    const __m256 b0 = _mm256_loadu_ps(q), b1 = _mm256_loadu_ps(q + 8);
    __m256 x;
    x = _mm256_broadcast_ss(x0 + d); a00 = _mm256_fmadd_ps(x, b0, a00); a01 = _mm256_fmadd_ps(x, b1, a01);
    x = _mm256_broadcast_ss(x1 + d); a10 = _mm256_fmadd_ps(x, b0, a10); a11 = _mm256_fmadd_ps(x, b1, a11);
    x = _mm256_broadcast_ss(x2 + d); a20 = _mm256_fmadd_ps(x, b0, a20); a21 = _mm256_fmadd_ps(x, b1, a21);
    x = _mm256_broadcast_ss(x3 + d); a30 = _mm256_fmadd_ps(x, b0, a30); a31 = _mm256_fmadd_ps(x, b1, a31);
    x = _mm256_broadcast_ss(x4 + d); a40 = _mm256_fmadd_ps(x, b0, a40); a41 = _mm256_fmadd_ps(x, b1, a41);
    x = _mm256_broadcast_ss(x5 + d); a50 = _mm256_fmadd_ps(x, b0, a50); a51 = _mm256_fmadd_ps(x, b1, a51);
  }
  if (s.flags & kNormalize) {
    __m256 c;
    c = _mm256_broadcast_ss(scale + 0); a00 = _mm256_mul_ps(a00, c); a01 = _mm256_mul_ps(a01, c);
    c = _mm256_broadcast_ss(scale + 1); a10 = _mm256_mul_ps(a10, c); a11 = _mm256_mul_ps(a11, c);
    c = _mm256_broadcast_ss(scale + 2); a20 = _mm256_mul_ps(a20, c); a21 = _mm256_mul_ps(a21, c);
    c = _mm256_broadcast_ss(scale + 3); a30 = _mm256_mul_ps(a30, c); a31 = _mm256_mul_ps(a31, c);
    c = _mm256_broadcast_ss(scale + 4); a40 = _mm256_mul_ps(a40, c); a41 = _mm256_mul_ps(a41, c);
    c = _mm256_broadcast_ss(scale + 5); a50 = _mm256_mul_ps(a50, c); a51 = _mm256_mul_ps(a51, c);
  }
  const __m256 t0 = _mm256_loadu_ps(thr), t1 = _mm256_loadu_ps(thr + 8);
  __m256 m0 = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(a00, t0, _CMP_GT_OQ), _mm256_cmp_ps(a10, t0, _CMP_GT_OQ)),
                           _mm256_or_ps(_mm256_cmp_ps(a20, t0, _CMP_GT_OQ), _mm256_cmp_ps(a30, t0, _CMP_GT_OQ)));
  m0 = _mm256_or_ps(m0, _mm256_or_ps(_mm256_cmp_ps(a40, t0, _CMP_GT_OQ), _mm256_cmp_ps(a50, t0, _CMP_GT_OQ)));
  __m256 m1 = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(a01, t1, _CMP_GT_OQ), _mm256_cmp_ps(a11, t1, _CMP_GT_OQ)),
                           _mm256_or_ps(_mm256_cmp_ps(a21, t1, _CMP_GT_OQ), _mm256_cmp_ps(a31, t1, _CMP_GT_OQ)));
  m1 = _mm256_or_ps(m1, _mm256_or_ps(_mm256_cmp_ps(a41, t1, _CMP_GT_OQ), _mm256_cmp_ps(a51, t1, _CMP_GT_OQ)));
  if (!_mm256_movemask_ps(_mm256_or_ps(m0, m1))) return;
  alignas(32) float sc[kRows][kLanes];
  _mm256_store_ps(sc[0], a00); _mm256_store_ps(sc[0] + 8, a01);
  _mm256_store_ps(sc[1], a10); _mm256_store_ps(sc[1] + 8, a11);
  _mm256_store_ps(sc[2], a20); _mm256_store_ps(sc[2] + 8, a21);
  _mm256_store_ps(sc[3], a30); _mm256_store_ps(sc[3] + 8, a31);
  _mm256_store_ps(sc[4], a40); _mm256_store_ps(sc[4] + 8, a41);
  _mm256_store_ps(sc[5], a50); _mm256_store_ps(sc[5] + 8, a51);
  for (int r = 0; r < count; ++r) {  // rows in increasing order: ties keep the lower index
    const int64_t local = first + r;
    const int32_t j = static_cast<int32_t>(s.start + local);
    for (int l = 0; l < kLanes; ++l) {
      const float v = sc[r][l];
      if (!(v > thr[l])) continue;
      const int64_t qi = static_cast<int64_t>(p) * kLanes + l;
      if ((s.flags & kUseIds) && s.query_ids[qi] == j) continue;
      if ((s.flags & kUseGroups) && s.query_groups[qi] == s.row_groups[local]) continue;
      float* key = t.key.data() + qi * s.K;
      int32_t* idx = t.idx.data() + qi * s.K;
      replace_root(key, idx, static_cast<int>(s.K), v, j);
      thr[l] = std::max(key[0], s.floor_minus[qi]);
    }
  }
}

// Rows [lo, hi) (local indices) of one unit into thread t's heaps and statistics.
void scan_rows(const Scan& s, int64_t lo, int64_t hi, Thread& t, float* scratch) {
  float* scale = scratch;                  // [kChunk]
  float* tail = scratch + kChunk;          // [kRows * D]: a last partial group, zero padded
  std::vector<float> thr(kLanes);
  for (int64_t c0 = lo; c0 < hi; c0 += kChunk) {
    const int64_t c1 = std::min(hi, c0 + kChunk);
    for (int64_t r = c0; r < c1; ++r) {
      const float* x = s.rows + r * s.D;
      float sq = row_sq(x, s.D);
      if (!std::isfinite(sq)) {
        t.bad = std::min(t.bad, static_cast<int32_t>(s.start + r));
      }
      if (s.flags & kNormalize) {
        const float f = sq > 0.0f ? 1.0f / std::sqrt(sq) : 0.0f;
        scale[r - c0] = f;
        float n = 0.0f;  // sum of (x f)^2, as scan.py's stats of the normalised rows
        for (int64_t d = 0; d < s.D; ++d) n += (x[d] * f) * (x[d] * f);
        sq = n;
      }
      t.sq_min = std::min(t.sq_min, sq);  // NaN: neither moves (min/max return the first operand)
      t.sq_max = std::max(t.sq_max, sq);
    }
    const int64_t whole = c0 + (c1 - c0) / kRows * kRows;
    const int rest = static_cast<int>(c1 - whole);
    if (rest) {
      std::fill(tail, tail + kRows * s.D, 0.0f);
      std::memcpy(tail, s.rows + whole * s.D, sizeof(float) * rest * s.D);
    }
    for (int64_t p = 0; p < s.P; ++p) {
      const float* qp = s.packed + p * s.D * kLanes;
      for (int l = 0; l < kLanes; ++l) {
        const int64_t qi = p * kLanes + l;
        thr[l] = std::max(t.key[qi * s.K], s.floor_minus[qi]);
      }
      for (int64_t g = c0; g < whole; g += kRows)
        block6(s, s.rows + g * s.D, s.D, scale + (g - c0), qp, static_cast<int>(p), g, kRows, thr.data(), t);
      if (rest) block6(s, tail, s.D, scale + (whole - c0), qp, static_cast<int>(p), whole, rest, thr.data(), t);
    }
  }
}

ffi::Error TopkScan(ffi::ThreadPool pool, int64_t flags, int64_t n_rows, int64_t block, ffi::Buffer<ffi::F32> keys,
                    ffi::Buffer<ffi::S32> idx, ffi::Buffer<ffi::F32> rows, ffi::Buffer<ffi::F32> queries,
                    ffi::Buffer<ffi::S32> query_ids, ffi::Buffer<ffi::S32> query_groups,
                    ffi::Buffer<ffi::S32> row_groups, ffi::Buffer<ffi::S32> info, ffi::Buffer<ffi::S32> bad,
                    ffi::Buffer<ffi::F32> sq_range, ffi::ResultBuffer<ffi::F32> keys_out,
                    ffi::ResultBuffer<ffi::S32> idx_out, ffi::ResultBuffer<ffi::S32> bad_out,
                    ffi::ResultBuffer<ffi::F32> sq_out) {
  const auto qd = queries.dimensions();
  if (qd.size() != 2) return ffi::Error::InvalidArgument("cpu_topk: queries must be [Q, D]");
  const int64_t Q = qd[0], D = qd[1];
  const int64_t K = Q ? keys.element_count() / Q : 0;
  if (Q == 0 || D == 0 || K == 0 || keys.element_count() != Q * K || idx.element_count() != Q * K)
    return ffi::Error::InvalidArgument("cpu_topk: keys and idx must be [1, Q, K] with K >= 1");
  if (info.element_count() != 4) return ffi::Error::InvalidArgument("cpu_topk: info must be i32[4]");
  if (block < 1) return ffi::Error::InvalidArgument("cpu_topk: block must be >= 1");
  const int32_t* in = info.typed_data();
  const int64_t start = in[0], n_valid = in[1], lead = in[2], skip = in[3];
  if (lead < 0 || lead + n_rows * D > static_cast<int64_t>(rows.element_count()))
    return ffi::Error::InvalidArgument("cpu_topk: rows hold fewer than lead + n_rows * D values");
  if ((flags & kUseGroups) && static_cast<int64_t>(row_groups.element_count()) < n_rows)
    return ffi::Error::InvalidArgument("cpu_topk: row_groups must hold one label per row");
  const int64_t lo = std::min(n_rows, skip * block);
  const int64_t hi = std::max(lo, std::min(n_rows / block * block, n_valid - start));

  const int64_t P = (Q + kLanes - 1) / kLanes;
  std::vector<float> packed(P * D * kLanes, 0.0f), floor_minus(P * kLanes, kInf);
  const float* qv = queries.typed_data();
  const float* kv = keys.typed_data();
  for (int64_t q = 0; q < Q; ++q) {
    for (int64_t d = 0; d < D; ++d) packed[((q / kLanes) * D + d) * kLanes + q % kLanes] = qv[q * D + d];
    float kth = kInf;  // the state's K-th key: its smallest entry (NaN never stored)
    for (int64_t j = 0; j < K; ++j) kth = std::min(kth, kv[q * K + j]);
    floor_minus[q] = kth == -kInf ? -kInf : std::nextafter(kth, -kInf);
  }
  Scan s{rows.typed_data() + lead, packed.data(), D, Q, P, K, start, floor_minus.data(), query_ids.typed_data(),
         query_groups.typed_data(), row_groups.typed_data(), flags};

  const int64_t units = (hi - lo + kUnitRows - 1) / kUnitRows;
  std::vector<Thread> threads(stylebench::run_slots(pool, units));
  for (auto& t : threads) {
    t.key.assign(P * kLanes * K, -kInf);
    t.idx.assign(P * kLanes * K, kNone);
  }
  if (units > 0)
    stylebench::run_units(pool, units, kChunk + kRows * D, [&](int64_t u, int slot, float* scratch) {
      const int64_t a = lo + u * kUnitRows;
      scan_rows(s, a, std::min(hi, a + kUnitRows), threads[slot], scratch);
    });

  // Merge: the state's list and every thread's heap, by (key descending, index ascending).
  const int32_t* iv = idx.typed_data();
  float* ko = keys_out->typed_data();
  int32_t* io = idx_out->typed_data();
  std::vector<std::pair<float, int32_t>> all;
  for (int64_t q = 0; q < Q; ++q) {
    all.clear();
    for (int64_t j = 0; j < K; ++j) all.emplace_back(kv[q * K + j], iv[q * K + j]);
    for (const auto& t : threads)
      for (int64_t j = 0; j < K; ++j)
        if (t.key[q * K + j] > -kInf) all.emplace_back(t.key[q * K + j], t.idx[q * K + j]);
    std::partial_sort(all.begin(), all.begin() + K, all.end(), [](const auto& a, const auto& b) {
      return worse(b.first, b.second, a.first, a.second);
    });
    for (int64_t j = 0; j < K; ++j) {
      ko[q * K + j] = all[j].first + 0.0f;  // -0 -> +0, as XLA's scan (blockwise.canonical)
      io[q * K + j] = all[j].second;
    }
  }
  int32_t b = bad.typed_data()[0];
  float mn = sq_range.typed_data()[0], mx = sq_range.typed_data()[1];
  for (const auto& t : threads) {
    b = std::min(b, t.bad);
    mn = std::min(mn, t.sq_min);
    mx = std::max(mx, t.sq_max);
  }
  bad_out->typed_data()[0] = b;
  sq_out->typed_data()[0] = mn;
  sq_out->typed_data()[1] = mx;
  return ffi::Error::Success();
}

}  // namespace

// flags (Flags above), n_rows (rows of the call's segment), block; keys [1, Q, K], idx [1, Q, K],
// rows (segment, flat or [n_rows, D]), queries [Q, D], query_ids [Q], query_groups [Q],
// row_groups [n_rows] (read with groups only), info i32[4] = (global index of row 0, rows at or past
// this global index are padding, offset of row 0 in rows, blocks to skip), bad i32[1], sq_range
// f32[1, 2] -> keys, idx, bad, sq_range.
XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchTopkScanF32, TopkScan,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Attr<int64_t>("flags")
                                  .Attr<int64_t>("n_rows")
                                  .Attr<int64_t>("block")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
