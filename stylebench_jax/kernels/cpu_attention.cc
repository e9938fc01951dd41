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
// The products run 16-float rows as two ymm (AVX2) or one zmm (AVX-512, chosen at run time on CPUs
// with AVX-512F, attribute width): the same FMA chains, so the same bits (cpu_attention_units.h).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "native_isa.h"
#include "native_pool.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using stylebench::has_avx512;
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

// The products and the per-unit passes, once per vector width (cpu_attention_units.h): AVX2 (two
// ymm per 16-float row of a block) and AVX-512 (one zmm), chosen at run time (Width below).
namespace avx2 {
using Vec = stylebench::Avx2Floats;
#include "cpu_attention_units.h"
}  // namespace avx2

STYLEBENCH_AVX512_BEGIN
namespace avx512 {
using Vec = stylebench::Avx512Floats;
#include "cpu_attention_units.h"
}  // namespace avx512
STYLEBENCH_AVX512_END

// The width attribute: 0 = the CPU's widest (AVX-512 where it has AVX-512F), 1 = AVX2, 2 = AVX-512.
enum Width : int64_t { kAuto = 0, kAvx2 = 1, kAvx512 = 2 };

// Whether to run the AVX-512 code for `width`, or an error naming the bad attribute.
ffi::Error wide(int64_t width, bool* avx512) {
  if (width < kAuto || width > kAvx512) return ffi::Error::InvalidArgument("cpu_attention: width must be 0, 1 or 2");
  if (width == kAvx512 && !has_avx512()) return ffi::Error::InvalidArgument("cpu_attention: this CPU lacks AVX-512");
  *avx512 = width == kAvx512 || (width == kAuto && has_avx512());
  return ffi::Error::Success();
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
  if (static_cast<int64_t>(bias.element_count()) != dims->B * dims->L)
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
ffi::Error forward(ffi::ThreadPool& pool, float scale, int64_t sequence_major, int64_t width,
                   const ffi::Buffer<ffi::F32>& q, const ffi::Buffer<ffi::F32>& k, const ffi::Buffer<ffi::F32>& v,
                   const ffi::Buffer<ffi::F32>& bias, const Drop& drop, float* op, float* sp) {
  Dims n;
  if (auto error = check(q, {&k, &v}, bias, sequence_major, &n); error.failure()) return error;
  bool avx512;
  if (auto error = wide(width, &avx512); error.failure()) return error;
  const auto unit = avx512 ? (drop.threshold ? avx512::attend<true> : avx512::attend<false>)
                           : (drop.threshold ? avx2::attend<true> : avx2::attend<false>);
  const float *qp = q.typed_data(), *kp = k.typed_data(), *vp = v.typed_data(), *bp = bias.typed_data();
  run_units(pool, n.B * n.H, forward_scratch(n), [=](int64_t u, int, float* scratch) {
    const int64_t at = n.at(u);
    unit(qp + at, kp + at, vp + at, bp + (u / n.H) * n.L, op + at, sp ? sp + u * 2 * n.L : nullptr,
         static_cast<int>(n.L), static_cast<int>(n.D), n.ld(), scale, drop, static_cast<uint32_t>(u), scratch);
  });
  return ffi::Error::Success();
}

ffi::Error Attention(ffi::ThreadPool pool, float scale, int64_t sequence_major, int64_t width,
                     ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v,
                     ffi::Buffer<ffi::F32> bias, ffi::ResultBuffer<ffi::F32> out) {
  return forward(pool, scale, sequence_major, width, q, k, v, bias, Drop{}, out->typed_data(), nullptr);
}

ffi::Error AttentionForward(ffi::ThreadPool pool, float scale, int64_t sequence_major, int64_t width,
                            ffi::Buffer<ffi::F32> q,
                            ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> bias,
                            ffi::Buffer<ffi::U32> seed, int64_t threshold, ffi::ResultBuffer<ffi::F32> out,
                            ffi::ResultBuffer<ffi::F32> stats) {
  Drop drop;
  if (auto error = read_drop(seed, threshold, &drop); error.failure()) return error;
  return forward(pool, scale, sequence_major, width, q, k, v, bias, drop, out->typed_data(),
                 stats->typed_data());
}

ffi::Error AttentionBackward(ffi::ThreadPool pool, float scale, int64_t sequence_major, int64_t width,
                             ffi::Buffer<ffi::F32> q,
                             ffi::Buffer<ffi::F32> k, ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> bias,
                             ffi::Buffer<ffi::U32> seed,
                             int64_t threshold, ffi::Buffer<ffi::F32> out, ffi::Buffer<ffi::F32> stats,
                             ffi::Buffer<ffi::F32> dout, ffi::ResultBuffer<ffi::F32> dq, ffi::ResultBuffer<ffi::F32> dk,
                             ffi::ResultBuffer<ffi::F32> dv, ffi::ResultBuffer<ffi::F32> dbias) {
  Dims n;
  if (auto error = check(q, {&k, &v, &out, &dout}, bias, sequence_major, &n); error.failure()) return error;
  if (static_cast<int64_t>(stats.element_count()) != 2 * n.B * n.H * n.L)
    return ffi::Error::InvalidArgument("cpu_attention: stats must be [B, heads, 2, L]");
  Drop drop;
  if (auto error = read_drop(seed, threshold, &drop); error.failure()) return error;
  bool avx512;
  if (auto error = wide(width, &avx512); error.failure()) return error;
  const auto unit = avx512 ? (drop.threshold ? avx512::attend_backward<true> : avx512::attend_backward<false>)
                           : (drop.threshold ? avx2::attend_backward<true> : avx2::attend_backward<false>);
  const float *qp = q.typed_data(), *kp = k.typed_data(), *vp = v.typed_data(), *bp = bias.typed_data();
  const float *op = out.typed_data(), *sp = stats.typed_data(), *gp = dout.typed_data();
  float *dqp = dq->typed_data(), *dkp = dk->typed_data(), *dvp = dv->typed_data(), *dbp = dbias->typed_data();
  const int64_t Lp = (n.L + 15) / 16 * 16;
  const int64_t scratch = n.L * n.D + 2 * n.D * Lp + 4 * Lp + 2 * kRows * Lp + n.L * Lp;
  run_units(pool, n.B * n.H, scratch, [=](int64_t u, int, float* s) {
    const int64_t at = n.at(u);
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

// The binding all three handlers share: XLA's thread pool, the scale, the layout (Dims), the vector
// width (Width), q, k, v and the bias.
auto bind_qkv_bias() {
  return ffi::Ffi::Bind().Ctx<ffi::ThreadPool>().Attr<float>("scale").Attr<int64_t>("sequence_major")
      .Attr<int64_t>("width")
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
