// Exact float32 top-k scan for XLA:CPU, called through jax.ffi (kernels/cpu_topk.py, kernels/scan.py).
//
// One device's step of the blocked search: fold candidate rows r in [lo, hi) of one call into the
// running lists keys/idx [Q, K] (score descending, index ascending), score = <q, x_r> (times
// 1 / |x_r| with normalisation). XLA computes a [Q, block] score tile, writes it to memory and reads
// it again for the selection; here each score is compared with its query's current K-th best while
// it is still in a register, so no tile exists and the search runs at the rate of the products.
//
// Register block: 6 candidate rows x 2W queries (12 vector accumulators; W = 8 floats on AVX2, 16
// on AVX-512, chosen at run time: cpu_topk_lanes.h is compiled once per width), the 6 rows' values
// broadcast from the row-major candidates (no packing of the pool), the queries packed once per
// call as [Q / 2W][D][2W] panels. Rows are visited in chunks of 48 (kept in L1/L2 while every panel
// passes over them). Every score is the same FMA chain over d = 0..D-1 whatever the row's place in
// its block or the vector width (a last partial group of rows is copied into a zeroed 6-row block),
// so a candidate's score does not depend on the call, the mesh, the thread or the CPU's width, and
// exact duplicates tie.
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
// Requires AVX2 and FMA (stylebench_native_supported in cpu_attention.cc); the AVX-512 width runs
// only where the CPU has AVX-512F.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "native_isa.h"
#include "native_pool.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using stylebench::has_avx512;

namespace {

constexpr int kRows = 6;        // candidate rows per register block
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
  const float* packed;  // [P][D][lanes]
  int64_t D, Q, P, K;
  int64_t start;  // global index of row 0
  const float* floor_minus;  // [P * lanes]: largest float below the state's K-th key (+inf: padding lanes)
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

// Row statistics of rows [c0, c1) into t (bad, sq range) and, with normalisation, their factors.
inline void row_stats(const Scan& s, int64_t c0, int64_t c1, Thread& t, float* scale) {
  for (int64_t r = c0; r < c1; ++r) {
    const float* x = s.rows + r * s.D;
    float sq = row_sq(x, s.D);
    if (!std::isfinite(sq)) t.bad = std::min(t.bad, static_cast<int32_t>(s.start + r));
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
}

// The register-blocked loops, once per vector width (cpu_topk_lanes.h).
namespace avx2 {  // 8 lanes per vector: panels of 16 queries
struct Vec : stylebench::Avx2Floats {  // + gt(a, t): bit l set where a[l] > t[l]
  static uint64_t gt(T a, T t) {
    return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(a, t, _CMP_GT_OQ)));
  }
};
#include "cpu_topk_lanes.h"
}  // namespace avx2

namespace avx2x2 {  // two ymm per vector: the 32-query panels of AVX-512 in AVX2 code (tests)
struct Vec {
  struct T {
    __m256 lo, hi;
  };
  static constexpr int W = 16;
  static T zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static T load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static T bcast(const float* p) { return {_mm256_broadcast_ss(p), _mm256_broadcast_ss(p)}; }
  static T fma(T a, T b, T c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static T mul(T a, T b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static uint64_t gt(T a, T t) { return avx2::Vec::gt(a.lo, t.lo) | (avx2::Vec::gt(a.hi, t.hi) << 8); }
  static void store(float* p, T a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
  }
};
#include "cpu_topk_lanes.h"
}  // namespace avx2x2

STYLEBENCH_AVX512_BEGIN
namespace avx512 {  // 16 lanes per vector: panels of 32 queries
struct Vec : stylebench::Avx512Floats {
  static uint64_t gt(T a, T t) { return static_cast<uint16_t>(_mm512_cmp_ps_mask(a, t, _CMP_GT_OQ)); }
};
#include "cpu_topk_lanes.h"
}  // namespace avx512
STYLEBENCH_AVX512_END

// The widths: 0 = the CPU's widest (AVX-512 where it has it), 1 = AVX2, 2 = AVX2 in 32-query
// panels (AVX-512's layout, for tests on AVX2 CPUs), 3 = AVX-512.
enum Variant : int64_t { kAuto = 0, kAvx2 = 1, kAvx2x2 = 2, kAvx512 = 3 };

using F32 = ffi::Buffer<ffi::F32>;
using S32 = ffi::Buffer<ffi::S32>;

ffi::Error TopkScan(ffi::ThreadPool pool, int64_t flags, int64_t n_rows, int64_t block, int64_t variant,
                    F32 keys, S32 idx, F32 rows, F32 queries, S32 query_ids, S32 query_groups, S32 row_groups,
                    S32 info, S32 bad, F32 sq_range, ffi::ResultBuffer<ffi::F32> keys_out,
                    ffi::ResultBuffer<ffi::S32> idx_out, ffi::ResultBuffer<ffi::S32> bad_out,
                    ffi::ResultBuffer<ffi::F32> sq_out) {
  const auto qd = queries.dimensions();
  if (qd.size() != 2) return ffi::Error::InvalidArgument("cpu_topk: queries must be [Q, D]");
  const int64_t Q = qd[0], D = qd[1];
  const int64_t n_keys = static_cast<int64_t>(keys.element_count());
  const int64_t K = Q ? n_keys / Q : 0;
  if (Q == 0 || D == 0 || K == 0 || n_keys != Q * K || static_cast<int64_t>(idx.element_count()) != Q * K)
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

  if (variant == kAuto) variant = has_avx512() ? kAvx512 : kAvx2;
  if (variant < kAvx2 || variant > kAvx512)
    return ffi::Error::InvalidArgument("cpu_topk: variant must be 0..3");
  if (variant == kAvx512 && !has_avx512())
    return ffi::Error::InvalidArgument("cpu_topk: this CPU lacks AVX-512");
  const int64_t kLanes =
      variant == kAvx2 ? avx2::kLanes : variant == kAvx2x2 ? avx2x2::kLanes : avx512::kLanes;
  const auto scan_rows =
      variant == kAvx2 ? avx2::scan_rows : variant == kAvx2x2 ? avx2x2::scan_rows : avx512::scan_rows;
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
  Scan s{rows.typed_data() + lead, packed.data(), D, Q, P, K, start, floor_minus.data(),
         query_ids.typed_data(), query_groups.typed_data(), row_groups.typed_data(), flags};

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

// flags (Flags above), n_rows (rows of the call's segment), block, variant (Variant above);
// keys [1, Q, K], idx [1, Q, K], rows (segment, flat or [n_rows, D]), queries [Q, D], query_ids [Q],
// query_groups [Q],
// row_groups [n_rows] (read with groups only), info i32[4] = (global index of row 0, rows at or past
// this global index are padding, offset of row 0 in rows, blocks to skip), bad i32[1], sq_range
// f32[1, 2] -> keys, idx, bad, sq_range.
XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchTopkScanF32, TopkScan,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Attr<int64_t>("flags")
                                  .Attr<int64_t>("n_rows")
                                  .Attr<int64_t>("block")
                                  .Attr<int64_t>("variant")
                                  .Arg<F32>()  // keys
                                  .Arg<S32>()  // idx
                                  .Arg<F32>()  // rows
                                  .Arg<F32>()  // queries
                                  .Arg<S32>()  // query_ids
                                  .Arg<S32>()  // query_groups
                                  .Arg<S32>()  // row_groups
                                  .Arg<S32>()  // info
                                  .Arg<S32>()  // bad
                                  .Arg<F32>()  // sq_range
                                  .Ret<F32>()
                                  .Ret<S32>()
                                  .Ret<S32>()
                                  .Ret<F32>());
