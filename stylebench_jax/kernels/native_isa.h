// Instruction-set helpers for the C++ kernels (cpu_attention.cc, cpu_topk.cc): the library is built
// for AVX2/FMA (kernels/native.py), and the code between STYLEBENCH_AVX512_BEGIN and
// STYLEBENCH_AVX512_END is compiled for AVX-512F on top, to run only where has_avx512() says so
// (a function of the region never inlines into AVX2 code, so the AVX2 paths hold no AVX-512
// instruction).
#pragma once

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

}  // namespace stylebench
