// The register-blocked products and the per-(sequence, head) forward and backward of
// cpu_attention.cc, included once per vector width (no include guard, on purpose), as
// cpu_topk_lanes.h is: each inclusion sits in its own namespace after a `Vec` traits struct (T, W,
// zero, load, bcast, fma, store), the AVX-512 one inside STYLEBENCH_AVX512_BEGIN/END (native_isa.h). Only the
// products (`block`) use Vec: the softmax, exp and dropout passes are the same 8-lane AVX2 code in
// both widths, so both give the same bits (each product element is one FMA chain in k order).

// C[R, 16] = A[R, K] x B[K, 16]: A[r, k] at A[r * ars + k] (rows of A), or at A[r + k * ars] when
// kColumns (A read as the transpose of a row-major matrix); B's row stride ldb, C's ldc. Two
// versions rather than a runtime column stride: with one (A[r * ars + k * aks]) the forward took
// 1.5x as long (32 x 12 x 128 x 32: 16.4 vs 11.0 ms, 2026-11-27). Each of C's elements is the FMA
// chain over k = 0..K-1 in order, whatever the width: 16 / W vectors per row (two ymm, one zmm).
template <int R, bool kColumns>
inline void block(int K, const float* A, int ars, const float* B, int ldb, float* C, int ldc) {
  using T = typename Vec::T;
  constexpr int kV = 16 / Vec::W;
  T c[kV][R];
  for (int v = 0; v < kV; ++v)
    for (int r = 0; r < R; ++r) c[v][r] = Vec::zero();
  for (int k = 0; k < K; ++k) {
    T b[kV];
    for (int v = 0; v < kV; ++v) b[v] = Vec::load(B + k * ldb + v * Vec::W);
    const float* a = kColumns ? A + k * ars : A + k;
    for (int r = 0; r < R; ++r) {
      const T ar = Vec::bcast(kColumns ? a + r : a + r * ars);
      for (int v = 0; v < kV; ++v) c[v][r] = Vec::fma(ar, b[v], c[v][r]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kV; ++v) Vec::store(C + r * ldc + v * Vec::W, c[v][r]);
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

