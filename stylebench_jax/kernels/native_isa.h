// Instruction-set helpers for the C++ kernels (cpu_attention.cc, cpu_topk.cc): the library is built
// for AVX2/FMA (kernels/native.py), and the code between STYLEBENCH_AVX512_BEGIN and
// STYLEBENCH_AVX512_END is compiled for AVX-512F on top, to run only where has_avx512() says so
// (a function of the region never inlines into AVX2 code, so the AVX2 paths hold no AVX-512
// instruction). Avx2Floats / Avx512Floats: the float vectors of the kernels' register blocks, the
// `Vec` traits their per-width headers (cpu_attention_units.h, cpu_topk_lanes.h) are written against.
#pragma once

#include <immintrin.h>

#if defined(__clang__)
#define STYLEBENCH_AVX512_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f\"))), apply_to = function)")
#define STYLEBENCH_AVX512_END _Pragma("clang attribute pop")
#else
#define STYLEBENCH_AVX512_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f\")")
#define STYLEBENCH_AVX512_END _Pragma("GCC pop_options")
#endif

namespace stylebench {

// Whether this CPU runs AVX-512F code.
inline bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

// T (a vector of W floats), zero(), load(p), bcast(p) (one float to every lane), fma(a, b, c) = a * b +
// c rounded once, mul(a, b), store(p, a); unaligned loads and stores.
struct Avx2Floats {
  using T = __m256;
  static constexpr int W = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static void store(float* p, T a) { _mm256_storeu_ps(p, a); }
};

STYLEBENCH_AVX512_BEGIN
struct Avx512Floats {
  using T = __m512;
  static constexpr int W = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T bcast(const float* p) { return _mm512_set1_ps(*p); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static void store(float* p, T a) { _mm512_storeu_ps(p, a); }
};
STYLEBENCH_AVX512_END

}  // namespace stylebench
