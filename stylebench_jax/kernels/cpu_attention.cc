// Fused softmax attention for XLA:CPU, float32, called through jax.ffi (kernels/cpu_attention.py).
//
// out[b, h] = softmax(scale * q[b, h] k[b, h]^T + bias[b]) v[b, h] for q, k, v, out [B, H, L, D]
// (row-major) and a key bias [B, 1, 1, L] (0 or -1e9: padding). One (sequence, head) at a time: the
// [L, L] scores never leave the cache (6 rows of them live at once), which is what XLA:CPU's batched
// products over [B, H, L, L] scores cannot do. (sequence, head) units are shared out to XLA's
// intra-op thread pool through an atomic counter; every unit is computed by one thread in a fixed
// order, so the output does not depend on the scheduling.
//
// Requires AVX2 and FMA (checked by stylebench_cpu_attention_supported) and D % 16 == 0 (checked here).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

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

// C[R, 16] = A[R, K] (row stride lda) x B[K, 16] (row stride ldb); C's row stride ldc.
template <int R>
inline void block(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  __m256 c0[R], c1[R];
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = _mm256_setzero_ps();
  for (int k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb), b1 = _mm256_loadu_ps(B + k * ldb + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(A + r * lda + k);
      c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(C + r * ldc, c0[r]);
    _mm256_storeu_ps(C + r * ldc + 8, c1[r]);
  }
}

inline void block_rows(int R, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  switch (R) {
    case 6: block<6>(K, A, lda, B, ldb, C, ldc); break;
    case 5: block<5>(K, A, lda, B, ldb, C, ldc); break;
    case 4: block<4>(K, A, lda, B, ldb, C, ldc); break;
    case 3: block<3>(K, A, lda, B, ldb, C, ldc); break;
    case 2: block<2>(K, A, lda, B, ldb, C, ldc); break;
    default: block<1>(K, A, lda, B, ldb, C, ldc); break;
  }
}

// One (sequence, head): q, k, v, out [L, D]; bias [L]; scratch holds D * Lp + kRows * (Lp + D) floats.
void attend(const float* q, const float* k, const float* v, const float* bias, float* out, int L, int D,
            float scale, float* scratch) {
  const int Lp = (L + 15) / 16 * 16;
  float* kt = scratch;          // k^T [D, Lp], columns past L zero
  float* s = kt + D * Lp;       // scores, then exp, of kRows query rows [kRows, Lp]
  float* qs = s + kRows * Lp;   // scaled query rows [kRows, D]
  for (int d = 0; d < D; ++d) {
    float* row = kt + d * Lp;
    for (int j = 0; j < L; ++j) row[j] = k[j * D + d];
    std::fill(row + L, row + Lp, 0.0f);
  }
  for (int i0 = 0; i0 < L; i0 += kRows) {
    const int R = std::min(kRows, L - i0);
    for (int r = 0; r < R; ++r)  // q * scale first, as bert.softmax_attention does
      for (int d = 0; d < D; ++d) qs[r * D + d] = q[(i0 + r) * D + d] * scale;
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
      __m256 acc = _mm256_setzero_ps();
      for (j = 0; j + 8 <= L; j += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(row + j), mv));
        _mm256_storeu_ps(row + j, e);
        acc = _mm256_add_ps(acc, e);
      }
      float sum = hsum(acc);
      for (; j < L; ++j) {
        row[j] = std::exp(row[j] - m);
        sum += row[j];
      }
      inv[r] = 1.0f / sum;
    }
    // Normalised after the product ([R, D] instead of [R, L] divisions), as bert.softmax_attention.
    for (int c0 = 0; c0 < D; c0 += 16) block_rows(R, L, s, Lp, v + c0, D, out + i0 * D + c0, D);
    for (int r = 0; r < R; ++r)
      for (int d = 0; d < D; ++d) out[(i0 + r) * D + d] *= inv[r];
  }
}

struct Job {
  const float *q, *k, *v, *bias;
  float* out;
  int64_t heads, length, dim, units;
  float scale;
  std::atomic<int64_t> next{0}, done{0};
};

// Claims (sequence, head) units until none is left. Threads that start after the last claim return
// at once, so the caller never waits for a task that has not started (no deadlock on a busy pool).
void work(Job* job) {
  const int64_t L = job->length, D = job->dim, Lp = (L + 15) / 16 * 16;
  std::vector<float> scratch;  // allocated once a unit is claimed (late tasks claim none)
  for (int64_t u; (u = job->next.fetch_add(1, std::memory_order_relaxed)) < job->units;) {
    if (scratch.empty()) scratch.resize(D * Lp + kRows * (Lp + D));
    const int64_t offset = u * L * D;
    attend(job->q + offset, job->k + offset, job->v + offset, job->bias + (u / job->heads) * L,
           job->out + offset, static_cast<int>(L), static_cast<int>(D), job->scale, scratch.data());
    job->done.fetch_add(1, std::memory_order_release);
  }
}

ffi::Error Attention(ffi::ThreadPool pool, float scale, ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k,
                     ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::F32> bias, ffi::ResultBuffer<ffi::F32> out) {
  const auto dims = q.dimensions();
  if (dims.size() != 4) return ffi::Error::InvalidArgument("cpu_attention: q must be [B, heads, L, D]");
  const int64_t B = dims[0], H = dims[1], L = dims[2], D = dims[3];
  if (D % 16 != 0) return ffi::Error::InvalidArgument("cpu_attention: head_dim must be a multiple of 16");
  for (auto* x : {&k, &v})
    if (x->element_count() != q.element_count())
      return ffi::Error::InvalidArgument("cpu_attention: k and v must have q's shape");
  if (bias.element_count() != B * L) return ffi::Error::InvalidArgument("cpu_attention: bias must be [B, 1, 1, L]");
  auto job = std::make_shared<Job>();
  job->q = q.typed_data();
  job->k = k.typed_data();
  job->v = v.typed_data();
  job->bias = bias.typed_data();
  job->out = out->typed_data();
  job->heads = H;
  job->length = L;
  job->dim = D;
  job->units = B * H;
  job->scale = scale;
  const int64_t helpers = std::min<int64_t>(pool.num_threads(), job->units) - 1;
  for (int64_t t = 0; t < helpers; ++t) pool.Schedule([job] { work(job.get()); });
  work(job.get());
  while (job->done.load(std::memory_order_acquire) < job->units) std::this_thread::yield();
  return ffi::Error::Success();
}

}  // namespace

extern "C" int stylebench_cpu_attention_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(StylebenchCpuAttentionF32, Attention,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Attr<float>("scale")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
