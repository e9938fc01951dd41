// Work sharing over XLA's intra-op thread pool for the C++ kernels (cpu_attention.cc, cpu_topk.cc).
//
// Units 0..n-1 are claimed through an atomic counter by the calling thread and up to
// pool.num_threads() - 1 helpers; every unit is computed by one thread, so a kernel whose units do
// not share state gives results that do not depend on the scheduling. Threads that start after the
// last claim return at once: the caller never waits for a task that has not started (no deadlock
// on a busy pool). Each thread gets its own scratch (`scratch` floats, allocated once it claims a
// unit) and its own slot number (0 = the caller), for kernels that keep per-thread state.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace stylebench {

struct Job {
  std::function<void(int64_t unit, int slot, float* scratch)> unit;
  int64_t units, scratch;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> slots{0};
};

inline void work(Job* job) {
  std::vector<float> scratch;
  int slot = -1;
  for (int64_t u; (u = job->next.fetch_add(1, std::memory_order_relaxed)) < job->units;) {
    if (slot < 0) {
      slot = job->slots.fetch_add(1, std::memory_order_relaxed);
      scratch.resize(job->scratch);
    }
    job->unit(u, slot, scratch.data());
    job->done.fetch_add(1, std::memory_order_release);
  }
}

// Number of slots a run_units call can use (the caller plus its helpers).
inline int run_slots(xla::ffi::ThreadPool& pool, int64_t units) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(pool.num_threads(), units)));
}

inline void run_units(xla::ffi::ThreadPool& pool, int64_t units, int64_t scratch,
                      std::function<void(int64_t unit, int slot, float* scratch)> unit) {
  auto job = std::make_shared<Job>();
  job->unit = std::move(unit);
  job->units = units;
  job->scratch = scratch;
  const int64_t helpers = run_slots(pool, units) - 1;
  for (int64_t t = 0; t < helpers; ++t) pool.Schedule([job] { work(job.get()); });
  work(job.get());
  while (job->done.load(std::memory_order_acquire) < units) std::this_thread::yield();
}

}  // namespace stylebench
