// The AVX-512 microkernels of the blocked SGEMM: 12 x 32 (and 8 x 48, 4 x 64, 6 x 49, 7 x 48
// per product), their edge and tail tiles, and the convolution tiles (shifted rows, row lanes,
// row runs), compiled for AVX-512 by function attributes and picked at run time.
#include "microkernel_x86.hpp"

#if CONVLAB_X86
#include <cstdint>
#include <utility>

namespace convlab::detail {

namespace {

// B's vectors loaded once per k into registers. With few rows GCC folds each load into every
// FMA that uses it (a 512-bit load per FMA): the 4 x 32 tile ran at half the FMA rate
// (57 against 108 GFLOP/s on one core, kc = 256, operands in L1). The empty asm makes the
// value a register the compiler cannot see through.
__attribute__((target("avx512f"))) inline __m512 load_b(const float* p) {
    __m512 v = _mm512_loadu_ps(p);
    __asm__("" : "+v"(v));
    return v;
}

// MR rows x 16*NV columns (12 x 32, or 8 x 48 where M is a multiple of 8 and N is wide: 24
// accumulators either way). kRowA: A read in place from a row-major matrix, a(i, k) =
// a[i*lda + k] (no packing); else a(i, k) = a[k*lda + i] (a packed panel, lda = MR, or
// column-contiguous A).
// t = sum over k < kc of a(k, i) * b[k*ldb + j]: the register tile's k loop, a(k, i) the
// value of A broadcast to row i at step k (packed, row-major, or a convolution's input), B's
// rows ldb apart (a packed panel of 16 NV columns, or of 32 for an edge tile's first 16).
template <int MR, int NV, class AValue, class Step = NoStep>
__attribute__((target("avx512f,fma"))) inline void tile_loop(dim_t kc, const AValue& a,
                                                             const float* b, __m512 (&t)[MR][NV],
                                                             dim_t ldb = 16 * NV,
                                                             const Step& step = {}) {
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) t[i][v] = _mm512_setzero_ps();
    for (dim_t k = 0; k < kc; ++k) {
        step(k);
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = load_b(b + 16 * v);
#pragma GCC unroll 12
        for (int i = 0; i < MR; ++i) {
            const __m512 ai = _mm512_set1_ps(a(k, i));
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) t[i][v] = _mm512_fmadd_ps(ai, bv[v], t[i][v]);
        }
        b += ldb;
    }
}

// B's rows are LDB floats apart (a panel of 16 NV columns, or of 64 for the 6 x 49 tile's 48).
// kStream: C's rows (64-byte aligned) written by non-temporal stores.
// c (MR x 16 NV, leading dim ldc) = t (+ c when acc), by non-temporal stores with kStream.
template <int MR, int NV, bool kStream>
__attribute__((target("avx512f"))) inline void store_tile(__m512 (&t)[MR][NV], float* c, dim_t ldc,
                                                          bool acc) {
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            float* ci = c + i * ldc + 16 * v;
            if (acc) t[i][v] = _mm512_add_ps(t[i][v], _mm512_loadu_ps(ci));
            if constexpr (kStream)
                _mm512_stream_ps(ci, t[i][v]);
            else
                _mm512_storeu_ps(ci, t[i][v]);
        }
}

template <int MR, int NV, bool kRowA, int LDB = 16 * NV, bool kStream = false>
__attribute__((target("avx512f,fma"))) inline void kernel_avx512_t(dim_t kc, const float* a,
                                                                   const float* b, float* c,
                                                                   dim_t ldc, bool acc, dim_t lda) {
    __m512 t[MR][NV];
    if constexpr (kRowA)
        tile_loop<MR, NV>(
            kc, [&](dim_t k, int i) { return a[i * lda + k]; }, b, t, LDB);
    else
        tile_loop<MR, NV>(
            kc, [&](dim_t k, int i) { return a[k * lda + i]; }, b, t, LDB);
    store_tile<MR, NV, kStream>(t, c, ldc, acc);
}

// A and B both read in place (MicroKernelInPlaceFn): A from its rows, B's rows ldb apart.
template <int MR, int NV, bool kStream>
__attribute__((target("avx512f,fma"))) void kernel_avx512_in_place(dim_t kc, const float* a,
                                                                   const float* b, dim_t ldb,
                                                                   float* c, dim_t ldc, bool acc,
                                                                   dim_t lda) {
    __m512 t[MR][NV];
    tile_loop<MR, NV>(
        kc, [&](dim_t k, int i) { return a[i * lda + k]; }, b, t, ldb);
    store_tile<MR, NV, kStream>(t, c, ldc, acc);
}

__attribute__((target("avx512f,fma"))) void kernel_avx512(dim_t kc, const float* a, const float* b,
                                                          float* c, dim_t ldc, bool acc,
                                                          dim_t lda) {
    kernel_avx512_t<12, 2, false>(kc, a, b, c, ldc, acc, lda);
}

__attribute__((target("avx512f,fma"))) void kernel_avx512_rowa(dim_t kc, const float* a,
                                                               const float* b, float* c, dim_t ldc,
                                                               bool acc, dim_t lda) {
    kernel_avx512_t<12, 2, true>(kc, a, b, c, ldc, acc, lda);
}

__attribute__((target("avx512f,fma"))) void kernel_avx512_8x48(dim_t kc, const float* a,
                                                               const float* b, float* c, dim_t ldc,
                                                               bool acc, dim_t lda) {
    kernel_avx512_t<8, 3, false>(kc, a, b, c, ldc, acc, lda);
}

__attribute__((target("avx512f,fma"))) void kernel_avx512_8x48_rowa(dim_t kc, const float* a,
                                                                    const float* b, float* c,
                                                                    dim_t ldc, bool acc,
                                                                    dim_t lda) {
    kernel_avx512_t<8, 3, true>(kc, a, b, c, ldc, acc, lda);
}

// 12 x 17 edge tiles of 32-column panels with A row-major (MicroKernelEdgeFn in
// microkernel.hpp): columns 0-15 as kernel_avx512_t does, column 16 as 12 dot products along k,
// 16 k at a time (the tail masked).
__attribute__((target("avx512f,fma"))) void kernel_avx512_edge17_rowa(dim_t kc, const float* a,
                                                                      const float* b,
                                                                      const float* bcol, float* c,
                                                                      dim_t ldc, dim_t lda) {
    constexpr int MR = 12, NR = 32;
    __m512 t[MR], d[MR];
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) t[i] = d[i] = _mm512_setzero_ps();
    for (dim_t k0 = 0; k0 < kc; k0 += 16) {
        const dim_t kn = std::min<dim_t>(16, kc - k0);
        const auto mask = static_cast<__mmask16>((1u << kn) - 1u);
        // Masked loads only for the tail (they measured slow on this machine).
        if (kn == 16) {
            const __m512 bc = _mm512_loadu_ps(bcol + k0);
#pragma GCC unroll 12
            for (int i = 0; i < MR; ++i)
                d[i] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i * lda + k0), bc, d[i]);
        } else {
            const __m512 bc = _mm512_maskz_loadu_ps(mask, bcol + k0);
#pragma GCC unroll 12
            for (int i = 0; i < MR; ++i)
                d[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + i * lda + k0), bc, d[i]);
        }
        for (dim_t k = k0; k < k0 + kn; ++k) {
            const __m512 bv = _mm512_loadu_ps(b + k * NR);
#pragma GCC unroll 12
            for (int i = 0; i < MR; ++i)
                t[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * lda + k]), bv, t[i]);
        }
    }
    for (int i = 0; i < MR; ++i) {
        _mm512_storeu_ps(c + i * ldc, t[i]);
        c[i * ldc + 16] = _mm512_reduce_add_ps(d[i]);
    }
}

// 6 x 49 tiles of 64-column panels (MicroKernelColFn; N = 49, a 7x7 output of one image):
// columns 0-47 as kernel_avx512_t<6, 3> does, and column 48 from bcol[k] = b(k, 48),
// contiguous along k. A row-major: column 48 as 6 dot products along k, 16 k at a time, as
// kernel_avx512_edge17_rowa does. A packed or column-contiguous: A's 6 values at k (a 128-bit
// and a 64-bit load, nothing read past row 5) times b(k, 48) by one 256-bit multiply.
// 12 x 32 ran N = 49 as a full tile and a 12 x 17 edge, the edge at 1.26x the full tile's time
// per multiply-add (perf, res5a_branch1 at batch 1). Both fill their FMAs (this tile 18.4 per k
// for 294 products), but this one loads 9.4 values per k for them, the pair 27 for twice as
// many (13.5 per 294).
template <bool kRowA>
__attribute__((target("avx512f,fma"))) void kernel_avx512_6x49(dim_t kc, const float* a,
                                                               const float* b, const float* bcol,
                                                               float* c, dim_t ldc, bool acc,
                                                               dim_t lda) {
    constexpr int MR = 6;
    kernel_avx512_t<MR, 3, kRowA, 64>(kc, a, b, c, ldc, acc, lda);  // columns 0-47
    // Column 48 in a loop of its own (in the tile's loop the registers ran out and spilled),
    // over A's values just read, still in L1.
    if constexpr (kRowA) {
        __m512 d[MR];
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) d[i] = _mm512_setzero_ps();
        dim_t k0 = 0;
        for (; k0 + 16 <= kc; k0 += 16) {
            const __m512 bc = _mm512_loadu_ps(bcol + k0);
#pragma GCC unroll 6
            for (int i = 0; i < MR; ++i)
                d[i] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i * lda + k0), bc, d[i]);
        }
        if (k0 < kc) {  // masked loads only for the tail (they measured slow on this machine)
            const auto mask = static_cast<__mmask16>((1u << (kc - k0)) - 1u);
            const __m512 bc = _mm512_maskz_loadu_ps(mask, bcol + k0);
#pragma GCC unroll 6
            for (int i = 0; i < MR; ++i)
                d[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + i * lda + k0), bc, d[i]);
        }
        for (int i = 0; i < MR; ++i)
            c[i * ldc + 48] = (acc ? c[i * ldc + 48] : 0.0f) + _mm512_reduce_add_ps(d[i]);
    } else {
        __m256 u0 = _mm256_setzero_ps(), u1 = _mm256_setzero_ps();
        // A lambda does not inherit its function's target: named here, or it would be compiled
        // for the build's baseline ISA.
        const auto col = [&](dim_t k) __attribute__((target("avx512f"))) {
            const float* ak = a + k * lda;
            const __m128 hi = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(ak + 4)));
            return _mm256_mul_ps(_mm256_set_m128(hi, _mm_loadu_ps(ak)), _mm256_set1_ps(bcol[k]));
        };
        dim_t k = 0;
        for (; k + 1 < kc; k += 2) {
            u0 = _mm256_add_ps(u0, col(k));
            u1 = _mm256_add_ps(u1, col(k + 1));
        }
        if (k < kc) u0 = _mm256_add_ps(u0, col(k));
        alignas(32) float out[8];
        _mm256_store_ps(out, _mm256_add_ps(u0, u1));
        for (int i = 0; i < MR; ++i) c[i * ldc + 48] = (acc ? c[i * ldc + 48] : 0.0f) + out[i];
    }
}

// Edge tiles of 16V + R columns of a 32-column panel (the last panel of a block, N = 196 leaves
// 4), A packed or column-contiguous (a[k*lda + i]): columns 0-15 (V = 1) as kernel_avx512_t
// does, and each of the R columns after them by one FMA per k, A's 12 values at k times
// b(k, 16V + r), on two accumulators (k even, odd). R columns cost R FMAs per k where a full
// vector costs 12. A's values are read by a 256-bit and a 128-bit load: a masked 512-bit load
// there measured 20% slower than the full tile on backward data, this 21% faster.
__attribute__((target("avx512f,fma"))) inline __m512 load12(const float* a) {
    return _mm512_insertf32x4(_mm512_castps256_ps512(_mm256_loadu_ps(a)), _mm_loadu_ps(a + 8), 2);
}

// One k of that tile: t += A(:, k) b(k, 0..15) (V = 1), u[r] += A(:, k) b(k, 16V + r).
template <int V, int R>
__attribute__((target("avx512f,fma"))) inline void edge_step(const float* a, const float* b,
                                                             __m512 t[12], __m512 u[]) {
    if constexpr (V == 1) {
        const __m512 bv = load_b(b);
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) t[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), bv, t[i]);
    }
    if constexpr (R > 0) {
        const __m512 av = load12(a);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) u[r] = _mm512_fmadd_ps(av, _mm512_set1_ps(b[16 * V + r]), u[r]);
    }
}

template <int V, int R>
__attribute__((target("avx512f,fma"))) void kernel_avx512_edge(dim_t kc, const float* a,
                                                               const float* b, const float*,
                                                               float* c, dim_t ldc, dim_t lda) {
    constexpr int MR = 12, NR = 32, RU = R > 0 ? R : 1;
    __m512 t[MR], u0[RU], u1[RU];
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) t[i] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < RU; ++r) u0[r] = u1[r] = _mm512_setzero_ps();
    dim_t k = 0;
    for (; k + 1 < kc; k += 2, a += 2 * lda, b += 2 * NR) {
        edge_step<V, R>(a, b, t, u0);
        edge_step<V, R>(a + lda, b + NR, t, u1);
    }
    if (k < kc) edge_step<V, R>(a, b, t, u0);
    if constexpr (V == 1)
        for (int i = 0; i < MR; ++i) _mm512_storeu_ps(c + i * ldc, t[i]);
    if constexpr (R > 0) {
        alignas(64) float col[RU][16];
        for (int r = 0; r < R; ++r) _mm512_store_ps(col[r], _mm512_add_ps(u0[r], u1[r]));
        for (int i = 0; i < MR; ++i)
            for (int r = 0; r < R; ++r) c[i * ldc + 16 * V + r] = col[r][i];
    }
}

// 12 x 16 with A read from its rows: edges of up to 16 columns when A is row-major.
__attribute__((target("avx512f,fma"))) void kernel_avx512_edge16_rowa(dim_t kc, const float* a,
                                                                      const float* b, const float*,
                                                                      float* c, dim_t ldc,
                                                                      dim_t lda) {
    __m512 t[12][1];
    tile_loop<12, 1>(
        kc, [&](dim_t k, int i) { return a[i * lda + k]; }, b, t, 32);
    for (int i = 0; i < 12; ++i) _mm512_storeu_ps(c + i * ldc, t[i][0]);
}

// Edge tiles of R <= 4 columns with A read from its rows (N = 196 = 6 x 32 + 4): c (12 x R) as
// dot products along k of A's rows and the R columns made contiguous along k (bcol[r*kc + k]),
// 6 rows x R columns of 16-float partial sums at a time. 12 x 16 (kernel_avx512_edge16_rowa)
// spent 12 FMAs per k on them, this 12 R / 16 and the sums.
template <int R>
__attribute__((target("avx512f,fma"))) void kernel_avx512_dot_rowa(dim_t kc, const float* a,
                                                                   const float*, const float* bcol,
                                                                   float* c, dim_t ldc, dim_t lda) {
    for (int i0 = 0; i0 < 12; i0 += 6) {
        __m512 t[6][R];
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i)
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) t[i][r] = _mm512_setzero_ps();
        for (dim_t k = 0; k < kc; k += 16) {  // the last 16 masked to kc
            const auto m = static_cast<__mmask16>(k + 16 <= kc ? 0xffffu : (1u << (kc - k)) - 1u);
            __m512 bv[R];
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) bv[r] = _mm512_maskz_loadu_ps(m, bcol + r * kc + k);
#pragma GCC unroll 6
            for (int i = 0; i < 6; ++i) {
                const __m512 av = _mm512_maskz_loadu_ps(m, a + (i0 + i) * lda + k);
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) t[i][r] = _mm512_fmadd_ps(av, bv[r], t[i][r]);
            }
        }
#pragma GCC unroll 6
        for (int i = 0; i < 6; ++i)
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) c[(i0 + i) * ldc + r] = _mm512_reduce_add_ps(t[i][r]);
    }
}

// c[j*ldt + i] = t[i][j/16] lane j%16 (+= when acc) for i < mv (<= 12), j < nv: the tile
// stored transposed after a 16x16 register transpose, 12 rows at a time by a 256- and a
// 128-bit access, else (fewer rows) one float at a time.
__attribute__((target("avx512f"))) inline void store_transposed(const __m512 (&t)[12][2], float* c,
                                                                dim_t ldt, int mv, int nv,
                                                                bool acc) {
    for (int v = 0; v < 2; ++v) {
        __m512 q[16];
        for (int i = 0; i < 12; ++i) q[i] = t[i][v];
        for (int i = 12; i < 16; ++i) q[i] = _mm512_setzero_ps();
        transpose16(q);
        alignas(64) float col[16];
        for (int j = 0; j < 16 && 16 * v + j < nv; ++j) {
            float* cj = c + (16 * v + j) * ldt;
            if (mv == 12) {
                __m256 lo = _mm512_castps512_ps256(q[j]);
                __m128 hi = _mm512_extractf32x4_ps(q[j], 2);
                if (acc) {
                    lo = _mm256_add_ps(lo, _mm256_loadu_ps(cj));
                    hi = _mm_add_ps(hi, _mm_loadu_ps(cj + 8));
                }
                _mm256_storeu_ps(cj, lo);
                _mm_storeu_ps(cj + 8, hi);
            } else {
                _mm512_store_ps(col, q[j]);
                for (int i = 0; i < mv; ++i) cj[i] = acc ? cj[i] + col[i] : col[i];
            }
        }
    }
}

// t (R x 32) stored transposed: c[j*ldt + i] for i < R, j < nv, by a 16x16 register transpose
// and a masked store per channel.
template <int R>
__attribute__((target("avx512f"))) inline void store_row_tile(__m512 (&t)[R][2], float* c,
                                                              dim_t ldt, int nv) {
    constexpr __mmask16 m = static_cast<__mmask16>((1u << R) - 1);
    // v and i unrolled (constant indices): t stays in registers, where a runtime v kept it in
    // memory (zeroed there first, spilled after the k loop). With transpose16 inlined too, one
    // core, operands in L1: the 12-position tile 105.1/109.6 -> 108.5/112.3 GFLOP/s at kc = 147
    // (conv1) and 99.5/100.8 -> 104.9/107.1 at kc = 64; a 7-wide row's edge tile at kc = 576
    // 123.3-123.8 -> 125.9-126.1 (effective, the padding taps skipped).
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
        if (16 * v >= nv) break;
        __m512 q[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) q[i] = i < R ? t[i][v] : _mm512_setzero_ps();
        transpose16(q);
        for (int j = 0; j < 16 && 16 * v + j < nv; ++j)
            _mm512_mask_storeu_ps(c + (16 * v + j) * ldt, m, q[j]);
    }
}

// The transposed product of a convolution read from its padded stride-phase planes or a 1x1's
// input rows (MicroKernel::shifted_row_fn): R (<= 12) output positions of one output row, whose
// inputs for reduction row k lie side by side at x + off[k], x 32 output channels of a packed
// W^T panel; stored transposed (store_row_tile). (R = 14, 28 accumulators, spilled: 1.35x
// slower.) S = 2: the positions' inputs lie every other float (a 1x1 strided by 2 along w, read
// from the image itself: MicroKernel::shifted_row_s2_fn). The body, shifted_row_tile, is
// shared with the prefetching variant below, whose hook (step) runs at every reduction row.
template <int R, int S = 1, class Step = NoStep>
__attribute__((target("avx512f,fma"))) inline void shifted_row_tile(dim_t kc, const float* x,
                                                                    const dim_t* off,
                                                                    const float* b, float* c,
                                                                    dim_t ldt, int nv,
                                                                    const Step& step = {}) {
    __m512 t[R][2];
    tile_loop<R, 2>(
        kc, [&](dim_t k, int i) { return x[off[k] + S * i]; }, b, t, 32, step);
    store_row_tile<R>(t, c, ldt, nv);
}
template <int R, int S = 1>
__attribute__((target("avx512f,fma"))) void kernel_avx512_shifted_row(dim_t kc, const float* x,
                                                                      const dim_t* off,
                                                                      const float* b, float* c,
                                                                      dim_t ldt, int nv) {
    shifted_row_tile<R, S>(kc, x, off, b, c, ldt, nv);
}

// kernel_avx512_shifted_row with, at reduction row k, the inputs of the tile `ahead` floats on
// prefetched into L2 (MicroKernel::shifted_row_pf_fn): a line or two per row, spread over the
// tile's work.
template <int R, int S = 1>
__attribute__((target("avx512f,fma"))) void kernel_avx512_shifted_row_pf(dim_t kc, const float* x,
                                                                         const dim_t* off,
                                                                         const float* b, float* c,
                                                                         dim_t ldt, int nv,
                                                                         dim_t ahead) {
    shifted_row_tile<R, S>(kc, x, off, b, c, ldt, nv, [&](dim_t k) {
        // As integers: the next tile may be shorter, its last input before p + S (R - 1).
        const auto p = reinterpret_cast<std::uintptr_t>(x + off[k]) +
                       static_cast<std::uintptr_t>(ahead) * sizeof(float);
        __builtin_prefetch(reinterpret_cast<const void*>(p), 0, 2);
        __builtin_prefetch(reinterpret_cast<const void*>(p + S * (R - 1) * sizeof(float)), 0, 2);
    });
}

// An output row of 16 V positions x 4 output channels in 4 V accumulators (MicroKernel::
// row_lanes_fn): per reduction row, V loads of the row's inputs and 4 broadcast weights, 4 V
// multiply-adds; the rows of C stored as they are, where the transposed tiles of 12 positions x
// 32 channels spent two 16x16 transposes and 32 partial-line stores on every tile (and, streamed,
// a copy through a row buffer). Streamed stores are not fenced here (stream_fence).
// Registers: 4 V accumulators, one row vector at a time, three weights broadcast into registers
// and the fourth read by the multiply-add itself ({1to16}, in asm so that GCC does not hoist
// it; the row loads by load_b, not folded into the multiply-adds): 32 at V = 7. With all V row
// vectors loaded first (35 at V = 7) GCC kept 4 accumulators on the stack, loaded and stored every
// reduction row. conv1 (V = 7), harness, alternating: one thread, in cache, 2.105-2.108
// -> 2.068-2.072 ms (97.7% of the FMA loop's peak); 2 threads, batch 32, 34.9/34.7 -> 33.8/33.9;
// batch 1, the output flushed before each call, 1.058-1.079 -> 1.041-1.043.
template <int V>
__attribute__((target("avx512f,fma"))) void kernel_avx512_row_lanes(dim_t kc, const float* x,
                                                                    const dim_t* off,
                                                                    const float* w, dim_t ldw,
                                                                    float* c, dim_t ldc, int nv,
                                                                    bool stream) {
    __m512 t[4][V];
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o)
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) t[o][v] = _mm512_setzero_ps();
    for (dim_t k = 0; k < kc; ++k, w += ldw) {
        const float* xr = x + off[k];
        const __m512 w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(w[1]),
                     w2 = _mm512_set1_ps(w[2]);
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) {
            const __m512 xv = load_b(xr + 16 * v);
            t[0][v] = _mm512_fmadd_ps(w0, xv, t[0][v]);
            t[1][v] = _mm512_fmadd_ps(w1, xv, t[1][v]);
            t[2][v] = _mm512_fmadd_ps(w2, xv, t[2][v]);
            asm("vfmadd231ps %[w]%{1to16%}, %[x], %[acc]"
                : [acc] "+v"(t[3][v])
                : [x] "v"(xv), [w] "m"(w[3]));
        }
    }
    const bool nt = stream && (reinterpret_cast<std::uintptr_t>(c) % 64 == 0) && ldc % 16 == 0;
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o) {
        if (o >= nv) break;
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) {
            if (nt)
                _mm512_stream_ps(c + o * ldc + 16 * v, t[o][v]);
            else
                _mm512_storeu_ps(c + o * ldc + 16 * v, t[o][v]);
        }
    }
}

// t[i] += xr[i] * (b's 32 values) for positions i in [LO, HI): one reduction row.
template <int R, int LO, int HI>
__attribute__((target("avx512f,fma"))) inline void shifted_tap(const float* xr, const float* b,
                                                               __m512 (&t)[R][2]) {
    const __m512 b0 = load_b(b), b1 = load_b(b + 16);
#pragma GCC unroll 12
    for (int i = LO; i < HI; ++i) {
        const __m512 ai = _mm512_set1_ps(xr[i]);
        t[i][0] = _mm512_fmadd_ps(ai, b0, t[i][0]);
        t[i][1] = _mm512_fmadd_ps(ai, b1, t[i][1]);
    }
}

// kernel_avx512_shifted_row for a tile at an edge of a row of a 3-wide, stride-1 convolution
// padded by 1 along w (MicroKernel::shifted_edge_fn): the reduction rows come in threes,
// kw = 0, 1, 2 of one (kh, ci), and the taps that read the padding column are skipped: with
// L, position 0 of kw = 0 (the row's first tile), with T, position R - 1 of kw = 2 (its last).
template <int R, bool L, bool T>
__attribute__((target("avx512f,fma"))) void kernel_avx512_shifted_edge(dim_t kc, const float* x,
                                                                       const dim_t* off,
                                                                       const float* b, float* c,
                                                                       dim_t ldt, int nv) {
    __m512 t[R][2];
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) t[i][0] = t[i][1] = _mm512_setzero_ps();
    for (dim_t k = 0; k < kc; k += 3, off += 3, b += 96) {
        shifted_tap<R, L ? 1 : 0, R>(x + off[0], b, t);
        shifted_tap<R, 0, R>(x + off[1], b + 32, t);
        shifted_tap<R, 0, T ? R - 1 : R>(x + off[2], b + 64, t);
    }
    store_row_tile<R>(t, c, ldt, nv);
}

// The weight gradient's counterpart of the shifted tiles (MicroKernel::row_runs_fn, Runs): row
// i's inputs (a row of the padded input planes or of the input, or of a 1x1's input strided by
// 2) from arows[i], S floats apart; b a packed panel of dY^T, the tile stored transposed.
template <int MR, int S>
__attribute__((target("avx512f,fma"))) void kernel_avx512_row_runs(const Runs& u,
                                                                   const float* const* arows,
                                                                   const float* b, float* c,
                                                                   dim_t ldt, bool raw, int nv,
                                                                   bool acc) {
    __m512 tm[MR][2], t[12][2];
    for (int i = 0; i < MR; ++i) tm[i][0] = tm[i][1] = _mm512_setzero_ps();
    for (dim_t m = 0; m < u.ni; ++m) {
        const float* r[MR];
        for (int i = 0; i < MR; ++i) r[i] = arows[i] + m * u.xi;
        const float* bm = b + m * u.bi;
        // One index along the runs for all rows: a run's end costs an add, not MR.
        for (dim_t q = 0, e0 = 0; q < u.nq; ++q, e0 += u.xq) {
            const float* bk = bm + q * u.bq;
            if (u.ahead)
                for (int i = 0; i < MR; ++i)
                    for (dim_t l = 0; l < S * u.len; l += 16)
                        __builtin_prefetch(r[i] + e0 + u.ahead + l, 0, 2);
            for (dim_t e = e0; e < e0 + S * u.len; e += S) {
                // Pinned to registers together: with only load_b's own pin, at MR = 8 GCC kept
                // b1 on the stack, stored and reloaded for each of its 8 multiply-adds. Harness, 2
                // threads, two alternating rounds (ms): res2a_branch2b (64 channels: tiles of 12,
                // 12, 12, 12, 8, 8) batch 1 1.051/1.059 -> 1.004/1.008, batch 32 34.3/34.5
                // -> 32.8/32.8; conv1 batch 1 1.24 -> 1.11; the other 3x3s 1-2% faster or tied.
                __m512 b0 = load_b(bk), b1 = load_b(bk + 16);
                asm("" : "+v"(b0), "+v"(b1));
#pragma GCC unroll 12
                for (int i = 0; i < MR; ++i) {
                    const __m512 ai = _mm512_set1_ps(r[i][e]);
                    tm[i][0] = _mm512_fmadd_ps(ai, b0, tm[i][0]);
                    tm[i][1] = _mm512_fmadd_ps(ai, b1, tm[i][1]);
                }
                bk += 32;
            }
        }
    }
    if (raw) {  // for flush_tap_tiles
        for (int i = 0; i < MR; ++i)
            for (int v = 0; v < 2; ++v) _mm512_storeu_ps(c + i * 32 + 16 * v, tm[i][v]);
        return;
    }
    for (int i = 0; i < 12; ++i)
        for (int v = 0; v < 2; ++v) t[i][v] = i < MR ? tm[i][v] : _mm512_setzero_ps();
    store_transposed(t, c, ldt, MR, nv, acc);
}

// 4 x 32 and 8 x 32: the last row panel of a 12 x 32 product when 4 or 8 rows remain.
template <int MR, bool kRowA>
__attribute__((target("avx512f,fma"))) void kernel_avx512_tail(dim_t kc, const float* a,
                                                               const float* b, float* c, dim_t ldc,
                                                               bool acc, dim_t lda) {
    kernel_avx512_t<MR, 2, kRowA>(kc, a, b, c, ldc, acc, lda);
}

// For products with few rows (M <= 4, as the via_forward convolutions with 3 output channels):
// 4 x 64, so that a row tile wastes less than 12 x 32 would. With kRows, row k of the B panel
// is read in place at brows[k] (64 contiguous floats) instead of from a packed panel.
template <bool kRows>
__attribute__((target("avx512f,fma"))) inline void kernel_4x64(dim_t kc, const float* a,
                                                               const float* b,
                                                               const float* const* brows, int nv,
                                                               float* c, dim_t ldc, bool acc,
                                                               dim_t lda) {
    constexpr int MR = 4, NV = 4;
    __mmask16 mask[NV];
    for (int v = 0; v < NV; ++v) {
        const int n = std::clamp(nv - 16 * v, 0, 16);
        mask[v] = static_cast<__mmask16>((1u << n) - 1u);
    }
    __m512 t[MR][NV];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) t[i][v] = _mm512_setzero_ps();
    for (dim_t k = 0; k < kc; ++k) {
        __m512 bv[NV];
        if constexpr (kRows) {
            // Only nv floats of the row are read (masked loads do not touch the rest).
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) bv[v] = _mm512_maskz_loadu_ps(mask[v], brows[k] + 16 * v);
        } else {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) bv[v] = load_b(b + 16 * v);
        }
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
            const __m512 ai = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) t[i][v] = _mm512_fmadd_ps(ai, bv[v], t[i][v]);
        }
        a += lda;
        // With kRows there is no packed panel (b is null): offsetting null is undefined.
        if constexpr (!kRows) b += 16 * NV;
    }
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            float* ci = c + i * ldc + 16 * v;
            if (acc) t[i][v] = _mm512_add_ps(t[i][v], _mm512_loadu_ps(ci));
            _mm512_storeu_ps(ci, t[i][v]);
        }
}

__attribute__((target("avx512f,fma"))) void kernel_avx512_4x64(dim_t kc, const float* a,
                                                               const float* b, float* c, dim_t ldc,
                                                               bool acc, dim_t lda) {
    kernel_4x64<false>(kc, a, b, nullptr, 64, c, ldc, acc, lda);
}

__attribute__((target("avx512f,fma"))) void kernel_avx512_4x64_rows(dim_t kc, const float* a,
                                                                    const float* const* brows,
                                                                    int nv, float* c, dim_t ldc,
                                                                    bool acc, dim_t lda) {
    kernel_4x64<true>(kc, a, nullptr, brows, nv, c, ldc, acc, lda);
}

}  // namespace

// row[r] = kernel_avx512_edge<V, r> for r = 1 .. sizeof...(Rs).
template <int V, int... Rs>
void fill_edges(MicroKernelEdgeFn (&row)[16], std::integer_sequence<int, Rs...>) {
    ((row[Rs + 1] = kernel_avx512_edge<V, Rs + 1>), ...);
}

MicroKernel avx512_kernel() {
    MicroKernel k;
    k.isa = "avx512";
    k.mr = 12;
    k.nr = 32;
    k.fn = kernel_avx512;
    k.rowa_fn = kernel_avx512_rowa;
    k.stream_fn[0] = kernel_avx512_t<12, 2, false, 32, true>;
    k.stream_fn[1] = kernel_avx512_t<12, 2, true, 32, true>;
    k.in_place_fn[0] = kernel_avx512_in_place<12, 2, false>;
    k.in_place_fn[1] = kernel_avx512_in_place<12, 2, true>;
    k.in_place_tail_fn[0] = kernel_avx512_in_place<4, 2, false>;
    k.in_place_tail_fn[1] = kernel_avx512_in_place<8, 2, false>;
    k.tail_fn[0][4] = kernel_avx512_tail<4, false>;
    k.tail_fn[0][8] = kernel_avx512_tail<8, false>;
    k.tail_fn[1][4] = kernel_avx512_tail<4, true>;
    k.tail_fn[1][8] = kernel_avx512_tail<8, true>;
    // A packed: up to 8 columns alone, or 7 after a vector, one FMA each per k; else a vector
    // for the last 16 columns or fewer (B's panel is zero-padded), or the full tile.
    fill_edges<0>(k.edge_fn[0], std::make_integer_sequence<int, 8>{});
    fill_edges<1>(k.edge_fn[1], std::make_integer_sequence<int, 7>{});
    for (int r = 9; r < 16; ++r) k.edge_fn[0][r] = kernel_avx512_edge<1, 0>;
    k.edge_fn[1][0] = kernel_avx512_edge<1, 0>;
    // A row-major: one vector for up to 16 columns, 17 with column 16 as dot products, 1-4
    // all as dot products.
    for (int r = 1; r < 16; ++r) k.edge_rowa_fn[0][r] = kernel_avx512_edge16_rowa;
    k.edge_rowa_fn[0][1] = kernel_avx512_dot_rowa<1>;
    k.edge_rowa_fn[0][2] = kernel_avx512_dot_rowa<2>;
    k.edge_rowa_fn[0][3] = kernel_avx512_dot_rowa<3>;
    k.edge_rowa_fn[0][4] = kernel_avx512_dot_rowa<4>;
    k.edge_rowa_fn[1][0] = kernel_avx512_edge16_rowa;
    k.edge_rowa_fn[1][1] = kernel_avx512_edge17_rowa;
    constexpr int kR = kShiftedRowMax;
    fill_by_size<kR>(k.shifted_row_fn,
                     [](auto r) -> ShiftedFn { return kernel_avx512_shifted_row<r()>; });
    fill_by_size<kR>(k.shifted_row_pf_fn,
                     [](auto r) -> ShiftedPfFn { return kernel_avx512_shifted_row_pf<r()>; });
    fill_by_size<kR>(k.shifted_row_s2_pf_fn,
                     [](auto r) -> ShiftedPfFn { return kernel_avx512_shifted_row_pf<r(), 2>; });
    fill_by_size<kR>(k.shifted_row_s2_fn,
                     [](auto r) -> ShiftedFn { return kernel_avx512_shifted_row<r(), 2>; });
    fill_by_size<kR>(k.shifted_edge_fn[0], [](auto r) -> ShiftedFn {
        return kernel_avx512_shifted_edge<r(), true, false>;
    });
    fill_by_size<kR>(k.shifted_edge_fn[1], [](auto r) -> ShiftedFn {
        return kernel_avx512_shifted_edge<r(), false, true>;
    });
    fill_by_size<kR>(k.shifted_edge_fn[2], [](auto r) -> ShiftedFn {
        return kernel_avx512_shifted_edge<r(), true, true>;
    });
    fill_by_size<kRowLanesMax>(k.row_lanes_fn,
                               [](auto v) -> RowLanesFn { return kernel_avx512_row_lanes<v()>; });
    fill_by_size<12>(k.row_runs_fn[0],
                     [](auto r) -> RowRunsFn { return kernel_avx512_row_runs<r(), 1>; });
    fill_by_size<12>(k.row_runs_fn[1],
                     [](auto r) -> RowRunsFn { return kernel_avx512_row_runs<r(), 2>; });
    return k;
}

void avx512_product_kernels(MicroKernel& narrow, MicroKernel& wide, MicroKernel& n49,
                            MicroKernel& rows7) {
    narrow = {"avx512", 4, 64, kernel_avx512_4x64, kernel_avx512_4x64_rows};
    wide = {"avx512", 8, 48, kernel_avx512_8x48, nullptr, kernel_avx512_8x48_rowa};
    wide.stream_fn[0] = kernel_avx512_t<8, 3, false, 48, true>;
    wide.stream_fn[1] = kernel_avx512_t<8, 3, true, 48, true>;
    wide.in_place_fn[0] = kernel_avx512_in_place<8, 3, false>;
    wide.in_place_fn[1] = kernel_avx512_in_place<8, 3, true>;
    wide.in_place_tail_fn[0] = kernel_avx512_in_place<4, 3, false>;
    n49 = {"avx512", 6, 64, kernel_avx512_t<6, 4, false>, nullptr, kernel_avx512_t<6, 4, true>};
    n49.col_fn[0] = kernel_avx512_6x49<false>;
    n49.col_fn[1] = kernel_avx512_6x49<true>;
    rows7 = {"avx512", 7, 48, kernel_avx512_t<7, 3, false>, nullptr, kernel_avx512_t<7, 3, true>};
}

}  // namespace convlab::detail
#endif  // CONVLAB_X86
