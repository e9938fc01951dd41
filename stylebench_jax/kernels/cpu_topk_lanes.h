// The register-blocked part of cpu_topk.cc, included once per vector width (no include guard, on
// purpose): each inclusion sits in its own namespace after a `Vec` traits struct, inside a
// STYLEBENCH_AVX512_BEGIN/END region (native_isa.h) for AVX-512, so every instantiation is compiled
// for its own instruction set and the AVX2 code never holds an AVX-512 instruction.
//
// Vec: T (a vector of W floats), W, zero(), load(p), bcast(p) (one float to every lane),
// fma(a, b, c) = a * b + c rounded once, mul(a, b), gt(a, t) (bit l set where a[l] > t[l]),
// store(p, a). A register block is 6 candidate rows x 2W queries (12 accumulators).

constexpr int kLanes = 2 * Vec::W;  // queries per panel

// Scores of 6 rows (x0 + r * stride) against one panel, compared with the panel's thresholds;
// rows whose score passes go to the heaps (admissibility checked there). Every lane's score is the
// FMA chain over d = 0..D-1, whatever the width.
inline void block6(const Scan& s, const float* x0, int64_t stride, const float* scale, const float* qp,
                   int64_t p, int64_t first, int count, float* thr, Thread& t) {
  using T = typename Vec::T;
  // Named accumulators, not an array: GCC keeps an array's elements in memory across the loop.
  T a00 = Vec::zero(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00, a40 = a00,
    a41 = a00, a50 = a00, a51 = a00;
  const float *x1 = x0 + stride, *x2 = x1 + stride, *x3 = x2 + stride, *x4 = x3 + stride, *x5 = x4 + stride;
  const float* q = qp;
  const int64_t D = s.D;
  for (int64_t d = 0; d < D; ++d, q += kLanes) {
    const T b0 = Vec::load(q), b1 = Vec::load(q + Vec::W);
    T v;
    v = Vec::bcast(x0 + d); a00 = Vec::fma(v, b0, a00); a01 = Vec::fma(v, b1, a01);
    v = Vec::bcast(x1 + d); a10 = Vec::fma(v, b0, a10); a11 = Vec::fma(v, b1, a11);
    v = Vec::bcast(x2 + d); a20 = Vec::fma(v, b0, a20); a21 = Vec::fma(v, b1, a21);
    v = Vec::bcast(x3 + d); a30 = Vec::fma(v, b0, a30); a31 = Vec::fma(v, b1, a31);
    v = Vec::bcast(x4 + d); a40 = Vec::fma(v, b0, a40); a41 = Vec::fma(v, b1, a41);
    v = Vec::bcast(x5 + d); a50 = Vec::fma(v, b0, a50); a51 = Vec::fma(v, b1, a51);
  }
  if (s.flags & kNormalize) {
    T c;
    c = Vec::bcast(scale + 0); a00 = Vec::mul(a00, c); a01 = Vec::mul(a01, c);
    c = Vec::bcast(scale + 1); a10 = Vec::mul(a10, c); a11 = Vec::mul(a11, c);
    c = Vec::bcast(scale + 2); a20 = Vec::mul(a20, c); a21 = Vec::mul(a21, c);
    c = Vec::bcast(scale + 3); a30 = Vec::mul(a30, c); a31 = Vec::mul(a31, c);
    c = Vec::bcast(scale + 4); a40 = Vec::mul(a40, c); a41 = Vec::mul(a41, c);
    c = Vec::bcast(scale + 5); a50 = Vec::mul(a50, c); a51 = Vec::mul(a51, c);
  }
  const T t0 = Vec::load(thr), t1 = Vec::load(thr + Vec::W);
  const uint64_t any = Vec::gt(a00, t0) | Vec::gt(a01, t1) | Vec::gt(a10, t0) | Vec::gt(a11, t1) |
                       Vec::gt(a20, t0) | Vec::gt(a21, t1) | Vec::gt(a30, t0) | Vec::gt(a31, t1) |
                       Vec::gt(a40, t0) | Vec::gt(a41, t1) | Vec::gt(a50, t0) | Vec::gt(a51, t1);
  if (!any) return;
  alignas(64) float sc[kRows][kLanes];
  Vec::store(sc[0], a00); Vec::store(sc[0] + Vec::W, a01);
  Vec::store(sc[1], a10); Vec::store(sc[1] + Vec::W, a11);
  Vec::store(sc[2], a20); Vec::store(sc[2] + Vec::W, a21);
  Vec::store(sc[3], a30); Vec::store(sc[3] + Vec::W, a31);
  Vec::store(sc[4], a40); Vec::store(sc[4] + Vec::W, a41);
  Vec::store(sc[5], a50); Vec::store(sc[5] + Vec::W, a51);
  for (int r = 0; r < count; ++r) {  // rows in increasing order: ties keep the lower index
    const int64_t local = first + r;
    const int32_t j = static_cast<int32_t>(s.start + local);
    for (int l = 0; l < kLanes; ++l) {
      const float v = sc[r][l];
      if (!(v > thr[l])) continue;
      const int64_t qi = p * kLanes + l;
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
inline void scan_rows(const Scan& s, int64_t lo, int64_t hi, Thread& t, float* scratch) {
  float* scale = scratch;              // [kChunk]
  float* tail = scratch + kChunk;      // [kRows * D]: a last partial group, zero padded
  alignas(64) float thr[kLanes];
  for (int64_t c0 = lo; c0 < hi; c0 += kChunk) {
    const int64_t c1 = std::min(hi, c0 + kChunk);
    row_stats(s, c0, c1, t, scale);
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
        block6(s, s.rows + g * s.D, s.D, scale + (g - c0), qp, p, g, kRows, thr, t);
      if (rest) block6(s, tail, s.D, scale + (whole - c0), qp, p, whole, rest, thr, t);
    }
  }
}
