// Fused softmax attention for XLA:CPU, float32, called through jax.ffi (kernels/cpu_attention.py).
//
// out[b, h] = softmax(scale * q[b, h] k[b, h]^T + bias[b]) v[b, h] for q, k, v, out [B, H, L, D]
// (row-major; or, attribute sequence_major, [B, L, H, D]: the projections' layout, a unit's
// rows H * D floats apart, so no transposes around the call) and a key bias [B, 1, 1, L]
// (0 or -1e9). One (sequence, head) at a time: the
// [L, L] scores never leave the cache (6 rows of them live at once), which is what XLA:CPU's batched
// products over [B, H, L, L] scores cannot do. (sequence, head) units are shared out to XLA's
// intra-op thread pool (native_pool.h); every unit is computed by one thread in a fixed
// order, so the output does not depend on the scheduling.
//
// Training: the forward variant also returns each query row's maximum and log-sum-exp past it,
// stats[b, h, 0, i] = m_i and stats[b, h, 1, i] = log sum_j exp(s_ij - m_i) (float32, [B, H, 2, L]:
// kept apart, since m + log(sum) in float32 loses the log when |m| is large, e.g. a row whose keys
// are all masked at -1e9); the backward handler takes q, k, v, bias, out, stats and d_out and returns
// d_q, d_k, d_v and the bias's gradient per (sequence, head) d_bias[b, h, j] (summed over heads by
// the caller). It recomputes p = exp((scale q k^T + bias - m) - log sum) key-major, 6 key rows at a
// time, so d_v = (p z)^T d_out (z: the dropout below; 1 without)
// and d_k = scale ds^T q come out row by row; ds = p * (d_out v^T - rowsum(d_out * out)) is kept
// for the unit ([L, L] floats) and d_q = scale ds k is read from it column-wise (no transpose).
//
// Attention-probability dropout (training, BERT's attention_probs_dropout_prob): the forward + stats
// and backward handlers take a seed (u32[2]) and a threshold t (attribute; 0 = no dropout). Element
// (i, j) of unit u (= b * H + h) is kept when its 32-bit draw
//   draw = fmix32(row_key ^ (j * 0x85EBCA77 + 0x27D4EB2F)),  row_key = fmix32(unit_key + i * 0x9E3779B9),
//   unit_key = fmix32(seed[0] ^ fmix32(seed[1] + u * 0x9E3779B9))   (fmix32: MurmurHash3's finaliser)
// is >= t, and kept probabilities are divided by 1 - t / 2^32: out = (p * z) v with z = keep / (1 - t/2^32).
// A counter-based draw, so the backward regenerates the forward's mask key-major without storing it;
// encoders/dropout.py (attention_keep) is the same function in jnp (XLA's attention and the tests).
// The backward: d_v = (p z)^T d_out, ds = p * (z (d_out v^T) - rowsum(d_out * out)) (out includes z).
//
// Requires AVX2 and FMA (checked by stylebench_native_supported below) and D % 16 == 0 (checked here).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "native_pool.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using stylebench::run_units;

namespace {

constexpr int kRows = 6;  // query rows per register block: 6 x 16 accumulators = 12 of AVX2's 16 ymm

// exp(x) for x <= 0 (scores minus their row maximum): Cephes' expf (Cody-Waite reduction by ln 2,
// degree-5 polynomial; relative error ~1e-7); exactly 0 below -87.3 (masked keys); NaN stays NaN
// (unordered compare keeps the lane; max returns its second operand when one is NaN).
inline __m256 exp256(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_NLT_UQ);  // x >= -87.3 or NaN
  x = _mm256_max_ps(_mm256_set1_ps(-87.3f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(scale)), keep);
}

// MurmurHash3's 32-bit finaliser (a bijection with full avalanche), scalar and on 8 lanes.
inline uint32_t fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  return x ^ (x >> 16);
}

inline __m256i fmix256(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x85EBCA6Bu)));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 13));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0xC2B2AE35u)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

constexpr uint32_t kGolden = 0x9E3779B9u;

// The dropout of one call (header): threshold 0 = none; scale = 1 / (1 - threshold / 2^32).
struct Drop {
  uint32_t threshold = 0, seed0 = 0, seed1 = 0;
  float scale = 1.0f;
  uint32_t unit_key(uint32_t u) const { return fmix32(seed0 ^ fmix32(seed1 + u * kGolden)); }
};

inline uint32_t row_key(uint32_t unit_key, uint32_t i) { return fmix32(unit_key + i * kGolden); }
inline uint32_t column_key(uint32_t j) { return j * 0x85EBCA77u + 0x27D4EB2Fu; }

// Lanes whose draw fmix32(a ^ b) is >= threshold: all ones (as floats' bits), else zero. AVX2 compares
// signed, so both sides are offset by 2^31; threshold >= 1 here.
inline __m256 kept256(__m256i a, __m256i b, uint32_t threshold) {
  const __m256i offset = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i draw = _mm256_xor_si256(fmix256(_mm256_xor_si256(a, b)), offset);
  const __m256i bound = _mm256_set1_epi32(static_cast<int>((threshold - 1) ^ 0x80000000u));
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(draw, bound));
}

inline float hsum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float s = 0.0f;
  for (float x : lanes) s += x;
  return s;
}

inline float hmax(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float m = lanes[0];
  for (float x : lanes) m = std::max(m, x);
  return m;
}

// C[R, 16] = A[R, K] x B[K, 16]: A[r, k] at A[r * ars + k] (rows of A), or at A[r + k * ars] when
// kColumns (A read as the transpose of a row-major matrix); B's row stride ldb, C's ldc. Two
// versions rather than a runtime column stride: with one (A[r * ars + k * aks]) the forward took
// 1.5x as long (32 x 12 x 128 x 32: 16.4 vs 11.0 ms, 2026-11-27).
template <int R, bool kColumns>
inline void block(int K, const float* A, int ars, const float* B, int ldb, float* C, int ldc) {
  __m256 c0[R], c1[R];
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm256_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb), b1 = _mm256_loadu_ps(B + k * ldb + 8);
    const float* a = kColumns ? A + k * ars : A + k;
    for (int r = 0; r < R; ++r) {
      const __m256 ar = _mm256_broadcast_ss(kColumns ? a + r : a + r * ars);
      c0[r] = _mm256_fmadd_ps(ar, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(ar, b1, c1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(C + r * ldc, c0[r]);
    _mm256_storeu_ps(C + r * ldc + 8, c1[r]);
  }
}

template <bool kColumns = false>
inline void block_rows(int R, int K, const float* A, int ars, const float* B, int ldb, float* C, int ldc) {
  switch (R) {
    case 6: block<6, kColumns>(K, A, ars, B, ldb, C, ldc); break;
    case 5: block<5, kColumns>(K, A, ars, B, ldb, C, ldc); break;
    case 4: block<4, kColumns>(K, A, ars, B, ldb, C, ldc); break;
    case 3: block<3, kColumns>(K, A, ars, B, ldb, C, ldc); break;
    case 2: block<2, kColumns>(K, A, ars, B, ldb, C, ldc); break;
    default: block<1, kColumns>(K, A, ars, B, ldb, C, ldc); break;
  }
}

// [L, D] rows ld floats apart -> [D, Lp] (columns past L zero).
inline void transpose_padded(const float* x, int L, int D, int ld, int Lp, float* xt) {
  for (int d = 0; d < D; ++d) {
    float* row = xt + d * Lp;
    for (int j = 0; j < L; ++j) row[j] = x[j * ld + d];
    std::fill(row + L, row + Lp, 0.0f);
  }
}

// One (sequence, head) u: q, k, v, out [L, D] with rows ld floats apart (D head-major, heads * D
// sequence-major); bias [L]; stats [2, L] or null (each row's max, then its log sum of exp past the
// max); kDrop: attention dropout (drop); scratch holds D * Lp + kRows * (Lp + D) + Lp floats.
template <bool kDrop>
void attend(const float* q, const float* k, const float* v, const float* bias, float* out, float* stats,
            int L, int D, int ld, float scale, const Drop& drop, uint32_t u, float* scratch) {
  const int Lp = (L + 15) / 16 * 16;
  float* kt = scratch;          // k^T [D, Lp], columns past L zero
  float* s = kt + D * Lp;       // scores, then exp, of kRows query rows [kRows, Lp]
  float* qs = s + kRows * Lp;   // scaled query rows [kRows, D]
  uint32_t* columns = reinterpret_cast<uint32_t*>(qs + kRows * D);  // column_key(j) [Lp]
  const uint32_t unit_key = kDrop ? drop.unit_key(u) : 0;
  if (kDrop)
    for (int j = 0; j < Lp; ++j) columns[j] = column_key(j);
  transpose_padded(k, L, D, ld, Lp, kt);
  for (int i0 = 0; i0 < L; i0 += kRows) {
    const int R = std::min(kRows, L - i0);
    for (int r = 0; r < R; ++r)  // q * scale first, as bert.softmax_attention does
      for (int d = 0; d < D; ++d) qs[r * D + d] = q[(i0 + r) * ld + d] * scale;
    for (int j0 = 0; j0 < Lp; j0 += 16) block_rows(R, D, qs, D, kt + j0, Lp, s + j0, Lp);
    float inv[kRows];
    for (int r = 0; r < R; ++r) {
      float* row = s + r * Lp;
      int j = 0;
      // finite: x * 0 summed is 0 unless some score is NaN or infinite; then the row's maximum is
      // NaN and so is its output, as with XLA (max instructions alone would drop a NaN).
      __m256 mx = _mm256_set1_ps(-INFINITY), finite = _mm256_setzero_ps();
      for (; j + 8 <= L; j += 8) {
        const __m256 x = _mm256_add_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(bias + j));
        _mm256_storeu_ps(row + j, x);
        mx = _mm256_max_ps(mx, x);
        finite = _mm256_fmadd_ps(x, _mm256_setzero_ps(), finite);
      }
      float m = hmax(mx), check = hsum(finite);
      for (int t = j; t < L; ++t) {
        row[t] += bias[t];
        m = std::max(m, row[t]);
        check += row[t] * 0.0f;
      }
      if (check != 0.0f) m = NAN;
      const __m256 mv = _mm256_set1_ps(m);
      const uint32_t rk = kDrop ? row_key(unit_key, i0 + r) : 0;
      const __m256i rkv = _mm256_set1_epi32(static_cast<int>(rk));
      __m256 acc = _mm256_setzero_ps();
      for (j = 0; j + 8 <= L; j += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(row + j), mv));
        acc = _mm256_add_ps(acc, e);  // the softmax's sum is over every key, dropped or not
        if (kDrop) {
          const __m256i cols = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(columns + j));
          _mm256_storeu_ps(row + j, _mm256_and_ps(e, kept256(rkv, cols, drop.threshold)));
        } else {
          _mm256_storeu_ps(row + j, e);
        }
      }
      float sum = hsum(acc);
      for (; j < L; ++j) {
        row[j] = std::exp(row[j] - m);
        sum += row[j];
        if (kDrop && fmix32(rk ^ columns[j]) < drop.threshold) row[j] = 0.0f;
      }
      inv[r] = (kDrop ? drop.scale : 1.0f) / sum;
      if (stats != nullptr) {
        stats[i0 + r] = m;
        stats[L + i0 + r] = std::log(sum);
      }
    }
    // Normalised after the product ([R, D] instead of [R, L] divisions), as bert.softmax_attention.
    for (int c0 = 0; c0 < D; c0 += 16) block_rows(R, L, s, Lp, v + c0, ld, out + i0 * ld + c0, ld);
    for (int r = 0; r < R; ++r)
      for (int d = 0; d < D; ++d) out[(i0 + r) * ld + d] *= inv[r];
  }
}

// d of one (sequence, head) u (see the header): q, k, v, out, d_out, d_q, d_k, d_v [L, D] with rows
// ld floats apart (as attend); bias, d_bias [L]; stats [2, L]; kDrop: the forward's attention dropout
// (drop); scratch holds L * D + 2 * D * Lp + 4 * Lp + 2 * kRows * Lp + L * Lp floats.
template <bool kDrop>
void attend_backward(const float* q, const float* k, const float* v, const float* bias, const float* out,
                     const float* stats, const float* dout, float* dq, float* dk, float* dv, float* dbias,
                     int L, int D, int ld, float scale, const Drop& drop, uint32_t u, float* scratch) {
  const int Lp = (L + 15) / 16 * 16;
  float* qs = scratch;            // q * scale [L, D]
  float* qst = qs + L * D;        // (q * scale)^T [D, Lp]
  float* dot = qst + D * Lp;      // d_out^T [D, Lp]
  float* rowdot = dot + D * Lp;   // rowsum(d_out * out) [Lp], 0 past L
  float* rowmax = rowdot + Lp;    // m [Lp], +inf past L (p = 0 there)
  float* logsum = rowmax + Lp;    // log sum [Lp], 0 past L
  float* pt = logsum + Lp;        // p^T rows of kRows keys [kRows, Lp]
  float* dpt = pt + kRows * Lp;   // (d_out v^T)^T rows [kRows, Lp]
  float* dst = dpt + kRows * Lp;  // ds^T [L, Lp]: key j's row holds ds[:, j]
  uint32_t* rows = reinterpret_cast<uint32_t*>(dst + L * Lp);  // row_key(i) [Lp]
  if (kDrop) {
    const uint32_t unit_key = drop.unit_key(u);
    for (int i = 0; i < Lp; ++i) rows[i] = row_key(unit_key, i);
  }
  for (int i = 0; i < L; ++i)  // the forward's scaled query, rows packed
    for (int d = 0; d < D; ++d) qs[i * D + d] = q[i * ld + d] * scale;
  transpose_padded(qs, L, D, D, Lp, qst);
  transpose_padded(dout, L, D, ld, Lp, dot);
  for (int i = 0; i < Lp; ++i) {
    float acc = 0.0f;
    if (i < L)
      for (int d = 0; d < D; ++d) acc += dout[i * ld + d] * out[i * ld + d];
    rowdot[i] = acc;
    rowmax[i] = i < L ? stats[i] : INFINITY;
    logsum[i] = i < L ? stats[L + i] : 0.0f;
  }
  for (int j0 = 0; j0 < L; j0 += kRows) {
    const int R = std::min(kRows, L - j0);
    for (int i0 = 0; i0 < Lp; i0 += 16) {
      block_rows(R, D, k + j0 * ld, ld, qst + i0, Lp, pt + i0, Lp);   // s^T = k (q scale)^T
      block_rows(R, D, v + j0 * ld, ld, dot + i0, Lp, dpt + i0, Lp);  // (d_out v^T)^T
    }
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_set1_ps(bias[j0 + r]);
      float* p = pt + r * Lp;
      const float* dp = dpt + r * Lp;
      float* ds = dst + (j0 + r) * Lp;
      const __m256i ck = _mm256_set1_epi32(static_cast<int>(column_key(j0 + r)));
      __m256 acc = _mm256_setzero_ps();
      for (int i = 0; i < Lp; i += 8) {
        const __m256 x = _mm256_sub_ps(_mm256_add_ps(_mm256_loadu_ps(p + i), b), _mm256_loadu_ps(rowmax + i));
        const __m256 e = exp256(_mm256_sub_ps(x, _mm256_loadu_ps(logsum + i)));
        __m256 dpi = _mm256_loadu_ps(dp + i);
        if (kDrop) {  // z = keep * scale: p z for d_v, z (d_out v^T) for ds
          const __m256i rk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + i));
          const __m256 z = _mm256_and_ps(_mm256_set1_ps(drop.scale), kept256(rk, ck, drop.threshold));
          _mm256_storeu_ps(p + i, _mm256_mul_ps(e, z));
          dpi = _mm256_mul_ps(dpi, z);
        } else {
          _mm256_storeu_ps(p + i, e);
        }
        const __m256 g = _mm256_mul_ps(e, _mm256_sub_ps(dpi, _mm256_loadu_ps(rowdot + i)));
        _mm256_storeu_ps(ds + i, g);
        acc = _mm256_add_ps(acc, g);
      }
      dbias[j0 + r] = hsum(acc);
    }
    for (int c0 = 0; c0 < D; c0 += 16) {
      block_rows(R, L, pt, Lp, dout + c0, ld, dv + j0 * ld + c0, ld);           // (p z)^T d_out
      block_rows(R, L, dst + j0 * Lp, Lp, qs + c0, D, dk + j0 * ld + c0, ld);  // ds^T (q scale)
    }
  }
  for (int i0 = 0; i0 < L; i0 += kRows) {  // d_q = scale ds k, ds read column-wise from ds^T
    const int R = std::min(kRows, L - i0);
    for (int c0 = 0; c0 < D; c0 += 16)
      block_rows<true>(R, L, dst + i0, Lp, k + c0, ld, dq + i0 * ld + c0, ld);
    for (int r = 0; r < R; ++r)
      for (int d = 0; d < D; ++d) dq[(i0 + r) * ld + d] *= scale;
  }
}

// The operands' layout: head-major [B, H, L, D] (sequence_major 0) or sequence-major [B, L, H, D]
// (1: the projections' own layout, read and written in place). Unit u = b * H + h either way.
struct Dims {
  int64_t B, H, L, D;
  bool sequence_major;
  int64_t at(int64_t u) const {  // offset of unit u's first row
    return sequence_major ? (u / H) * L * H * D + (u % H) * D : u * L * D;
  }
  int ld() const { return static_cast<int>(sequence_major ? H * D : D); }  // between a unit's rows
};

// Checks q's layout and that the other operands (q's shape) and the [B, 1, 1, L] bias match it.
ffi::Error check(const ffi::Buffer<ffi::F32>& q, std::initializer_list<const ffi::Buffer<ffi::F32>*> same,
                 const ffi::Buffer<ffi::F32>& bias, int64_t sequence_major, Dims* dims) {
  const auto d = q.dimensions();
  if (d.size() != 4)
    return ffi::Error::InvalidArgument("cpu_attention: q must be [B, heads, L, D] or [B, L, heads, D]");
  if (sequence_major != 0 && sequence_major != 1)
    return ffi::Error::InvalidArgument("cpu_attention: sequence_major must be 0 or 1");
  *dims = sequence_major ? Dims{d[0], d[2], d[1], d[3], true} : Dims{d[0], d[1], d[2], d[3], false};
  if (dims->D % 16 != 0) return ffi::Error::InvalidArgument("cpu_attention: head_dim must be a multiple of 16");
  for (auto* x : same)
    if (x->element_count() != q.element_count())
      return ffi::Error::InvalidArgument("cpu_attention: k, v (and out, d_out) must have q's shape");
  if (bias.element_count() != dims->B * dims->L)
    return ffi::Error::InvalidArgument("cpu_attention: bias must be [B, 1, 1, L]");
  return ffi::Error::Success();
}

int64_t forward_scratch(const Dims& n) {
  const int64_t Lp = (n.L + 15) / 16 * 16;
  return n.D * Lp + kRows * (Lp + n.D) + Lp;
}

// The dropout of a training call: seed u32[2] and the threshold attribute (0..2^32 - 1).
ffi::Error read_drop(const ffi::Buffer<ffi::U32>& seed, int64_t threshold, Drop* drop) {
  if (seed.element_count() != 2) return ffi::Error::InvalidArgument("cpu_attention: seed must be u32[2]");
  if (threshold < 0 || threshold > 0xFFFFFFFFll)
    return ffi::Error::InvalidArgument("cpu_attention: threshold must be in [0, 2^32)");
  drop->threshold = static_cast<uint32_t>(threshold);
  drop->seed0 = seed.typed_data()[0];
  drop->seed1 = seed.typed_data()[1];
  drop->scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(threshold) / 4294967296.0));
  return ffi::Error::Success();
}

// The forward over all units; stats (each unit's [2, L] row maxima and log sums) or null.
ffi::Error forward(ffi::ThreadPool& pool, float scale, int64_t sequence_major, const ffi::Buffer<ffi::F32>& q,
                   const ffi::Buffer<ffi::F32>& k, const ffi::Buffer<ffi::F32>& v, const ffi::Buffer<ffi::F32>& bias,
                   const Drop& drop, float* op, float* sp) {
  Dims n;
  if (auto error = check(q, {&k, &v}, bias, sequence_major, &n); error.failure()) return error;
  const float *qp = q.typed_data(), *kp = k.typed_data(), *vp = v.typed_data(), *bp = bias.typed_data();
  run_units(pool, n.B * n.H, forward_scratch(n), [=](int64_t u, int, float* scratch) {
    const int64_t at = n.at(u);
    auto unit = drop.threshold ? attend<true> : attend<false>;
    unit(qp + at, kp + at, vp + at, bp + (u / n.H) * n.L, op + at, sp ? sp + u * 2 * n.L : nullptr,
         static_cast<int>(n.L), static_cast<int>(n.D), n.ld(), scale, drop, static_cast<uint32_t>(u), scratch);
  });
  return ffi::Error::Success();
}

ffi::Error Attention(ffi::ThreadPool pool, float scale, int64_t sequence_major, ffi::Buffer<ffi::F32> q,
                     ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> bias,
                     ffi::ResultBuffer<ffi::F32> out) {
  return forward(pool, scale, sequence_major, q, k, v, bias, Drop{}, out->typed_data(), nullptr);
}

ffi::Error AttentionForward(ffi::ThreadPool pool, float scale, int64_t sequence_major, ffi::Buffer<ffi::F32> q,
                            ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> bias,
                            ffi::Buffer<ffi::U32> seed, int64_t threshold, ffi::ResultBuffer<ffi::F32> out,
                            ffi::ResultBuffer<ffi::F32> stats) {
  Drop drop;
  if (auto error = read_drop(seed, threshold, &drop); error.failure()) return error;
  return forward(pool, scale, sequence_major, q, k, v, bias, drop, out->typed_data(), stats->typed_data());
}

ffi::Error AttentionBackward(ffi::ThreadPool pool, float scale, int64_t sequence_major, ffi::Buffer<ffi::F32> q,
                             ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> bias,
                             ffi::Buffer<ffi::U32> seed,
                             int64_t threshold, ffi::Buffer<ffi::F32> out, ffi::Buffer<ffi::F32> stats,
                             ffi::Buffer<ffi::F32> dout, ffi::ResultBuffer<ffi::F32> dq, ffi::ResultBuffer<ffi::F32> dk,
                             ffi::ResultBuffer<ffi::F32> dv, ffi::ResultBuffer<ffi::F32> dbias) {
  Dims n;
  if (auto error = check(q, {&k, &v, &out, &dout}, bias, sequence_major, &n); error.failure()) return error;
  if (stats.element_count() != 2 * n.B * n.H * n.L)
    return ffi::Error::InvalidArgument("cpu_attention: stats must be [B, heads, 2, L]");
  Drop drop;
  if (auto error = read_drop(seed, threshold, &drop); error.failure()) return error;
  const float *qp = q.typed_data(), *kp = k.typed_data(), *vp = v.typed_data(), *bp = bias.typed_data();
  const float *op = out.typed_data(), *sp = stats.typed_data(), *gp = dout.typed_data();
  float *dqp = dq->typed_data(), *dkp = dk->typed_data(), *dvp = dv->typed_data(), *dbp = dbias->typed_data();
  const int64_t Lp = (n.L + 15) / 16 * 16;
  const int64_t scratch = n.L * n.D + 2 * n.D * Lp + 4 * Lp + 2 * kRows * Lp + n.L * Lp;
  run_units(pool, n.B * n.H, scratch, [=](int64_t u, int, float* s) {
    const int64_t at = n.at(u);
    auto unit = drop.threshold ? attend_backward<true> : attend_backward<false>;
    unit(qp + at, kp + at, vp + at, bp + (u / n.H) * n.L, op + at, sp + u * 2 * n.L, gp + at, dqp + at, dkp + at,
         dvp + at, dbp + u * n.L, static_cast<int>(n.L), static_cast<int>(n.D), n.ld(), scale, drop,
         static_cast<uint32_t>(u), s);
  });
  return ffi::Error::Success();
}

}  // namespace

extern "C" int stylebench_native_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

using F32 = ffi::Buffer<ffi::F32>;

// The binding all three handlers share: XLA's thread pool, the scale, the layout (Dims), q, k, v and
// the bias.
auto bind_qkv_bias() {
  return ffi::Ffi::Bind().Ctx<ffi::ThreadPool>().Attr<float>("scale").Attr<int64_t>("sequence_major")
      .Arg<F32>().Arg<F32>().Arg<F32>().Arg<F32>();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchCpuAttentionF32, Attention, bind_qkv_bias().Ret<F32>());

// Training: + the dropout seed and threshold (header)
XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchCpuAttentionForwardF32, AttentionForward,
                              bind_qkv_bias().Arg<ffi::Buffer<ffi::U32>>().Attr<int64_t>("threshold")
                                  .Ret<F32>().Ret<F32>());

// + seed, threshold, out, stats, d_out -> d_q, d_k, d_v, d_bias
XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchCpuAttentionBackwardF32, AttentionBackward,
                              bind_qkv_bias()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("threshold")
                                  .Arg<F32>()
                                  .Arg<F32>()
                                  .Arg<F32>()
                                  .Ret<F32>()
                                  .Ret<F32>()
                                  .Ret<F32>()
                                  .Ret<F32>());
