// The AVX2 microkernels of the blocked SGEMM: 6 x 16 with its edge and tail tiles, and the
// convolution tiles (shifted rows as passes of at most 6 positions, row lanes), compiled for
// AVX2 and FMA by function attributes and picked at run time.
#include "microkernel_x86.hpp"

#if CONVLAB_X86
#include <cstdint>
#include <utility>

namespace convlab::detail {

namespace {

// MR (<= 6) rows x 16 columns from a packed B panel, A as kernel_avx512_t's (kRowA: read from
// its rows). MR = 6 is the full tile; 1-5 a last row panel read in place (MicroKernel::tail_fn),
// which was packed and run as a full tile, 64 rows spending 66 rows' work and 128 rows 132. The
// Zen 3, harness, 2 threads, 400-1000 calls alternating, medians, tails against none: 64 x 3136
// x 256 1.113 -> 1.101 and 1.092 -> 1.082 ms (A column-contiguous 0.981 -> 0.980), 64 x 3136 x
// 64 0.271 -> 0.265 (0.235 -> 0.231), 128 x 784 x 512 1.137 -> 1.107 and 0.867 -> 0.848, 512 x
// 784 x 128 1.104 -> 1.088.
template <int MR, bool kRowA>
__attribute__((target("avx2,fma"))) void kernel_avx2_t(dim_t kc, const float* a, const float* b,
                                                       float* c, dim_t ldc, bool acc, dim_t lda) {
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
    for (dim_t k = 0; k < kc; ++k) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            const __m256 ai = _mm256_broadcast_ss(kRowA ? a + i * lda + k : a + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
        if constexpr (!kRowA) a += lda;
        b += 16;
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        float* ci = c + i * ldc;
        if (acc) {
            c0[i] = _mm256_add_ps(c0[i], _mm256_loadu_ps(ci));
            c1[i] = _mm256_add_ps(c1[i], _mm256_loadu_ps(ci + 8));
        }
        _mm256_storeu_ps(ci, c0[i]);
        _mm256_storeu_ps(ci + 8, c1[i]);
    }
}

// Edge tiles of the 6 x 16 kernel (MicroKernel::edge_fn[0][R], edge_rowa_fn[0][R]): the last
// panel of a block with R < 16 columns, where the full tile spent 12 multiply-adds per k on
// them. N = 49 (a 7x7 layer of one image) is 3 x 16 + 1.
// A packed or column-contiguous (a[k*lda + i], 6 values): each column r by one multiply-add
// per k of A's 6 values (a masked load of 8 lanes) and b(k, r), on two accumulators (k even,
// odd) for R <= 4.
template <int R>
__attribute__((target("avx2,fma"))) void kernel_avx2_edge(dim_t kc, const float* a, const float* b,
                                                          const float*, float* c, dim_t ldc,
                                                          dim_t lda) {
    constexpr int MR = 6, NR = 16, U = R <= 4 ? 2 : 1;
    const __m256i six = lanes8(MR);
    __m256 u[U][R];
#pragma GCC unroll 2
    for (int h = 0; h < U; ++h)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) u[h][r] = _mm256_setzero_ps();
    const auto step = [&](int h, const float* ak, const float* bk)
        __attribute__((target("avx2,fma"))) {
        const __m256 av = _mm256_maskload_ps(ak, six);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            u[h][r] = _mm256_fmadd_ps(av, _mm256_broadcast_ss(bk + r), u[h][r]);
    };
    dim_t k = 0;
    if constexpr (U == 2)
        for (; k + 1 < kc; k += 2) {
            step(0, a + k * lda, b + k * NR);
            step(1, a + (k + 1) * lda, b + (k + 1) * NR);
        }
    for (; k < kc; ++k) step(0, a + k * lda, b + k * NR);
    alignas(32) float col[8];
    for (int r = 0; r < R; ++r) {
        __m256 sum = u[0][r];
        if constexpr (U == 2) sum = _mm256_add_ps(sum, u[1][r]);
        _mm256_store_ps(col, sum);
        for (int i = 0; i < MR; ++i) c[i * ldc + r] = col[i];
    }
}

// Loads of 8 floats for kernel_avx2_dot_rowa: all of them, or the lanes of a mask. Function
// objects of the kernel's target (a lambda would be compiled for the build's baseline ISA).
struct LoadAll8 {
    __attribute__((target("avx2"), always_inline)) __m256 operator()(const float* p) const {
        return _mm256_loadu_ps(p);
    }
};
struct LoadMasked8 {
    __m256i m;
    __attribute__((target("avx2"), always_inline)) __m256 operator()(const float* p) const {
        return _mm256_maskload_ps(p, m);
    }
};

// A row-major, read in place (a[i*lda + k]): the R <= 4 columns as dot products along k of A's
// 6 rows and the columns made contiguous along k (bcol[r*kc + k]), 8 k at a time (the last
// ones masked), rows in groups small enough for the accumulators to stay in registers.
template <int R>
__attribute__((target("avx2,fma"))) void kernel_avx2_dot_rowa(dim_t kc, const float* a,
                                                              const float*, const float* bcol,
                                                              float* c, dim_t ldc, dim_t lda) {
    constexpr int MR = 6, G = R <= 2 ? 6 : R == 3 ? 3 : 2;
    for (int i0 = 0; i0 < MR; i0 += G) {
        __m256 t[G][R];
#pragma GCC unroll 6
        for (int i = 0; i < G; ++i)
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) t[i][r] = _mm256_setzero_ps();
        const auto step = [&](dim_t k, auto load) __attribute__((target("avx2,fma"))) {
            __m256 bv[R];
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) bv[r] = load(bcol + r * kc + k);
#pragma GCC unroll 6
            for (int i = 0; i < G; ++i) {
                const __m256 av = load(a + (i0 + i) * lda + k);
#pragma GCC unroll 4
                for (int r = 0; r < R; ++r) t[i][r] = _mm256_fmadd_ps(av, bv[r], t[i][r]);
            }
        };
        dim_t k = 0;
        for (; k + 8 <= kc; k += 8) step(k, LoadAll8{});
        if (k < kc) {
            const __m256i m = lanes8(kc - k);
            step(k, LoadMasked8{m});
        }
#pragma GCC unroll 6
        for (int i = 0; i < G; ++i)
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const __m128 h =
                    _mm_add_ps(_mm256_castps256_ps128(t[i][r]), _mm256_extractf128_ps(t[i][r], 1));
                const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
                c[(i0 + i) * ldc + r] = _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
            }
    }
}

// B's vectors loaded once per k into registers (load_b's AVX2 form): with few positions GCC
// folds each load into every FMA that uses it.
__attribute__((target("avx2"), always_inline)) inline __m256 load_b8(const float* p) {
    __m256 v = _mm256_loadu_ps(p);
    __asm__("" : "+x"(v));
    return v;
}

// c[0 .. N) = v's first N lanes (N <= 8), by 256-, 128-, 64- and 32-bit stores: nothing past
// them is written (the next positions may be another thread's).
template <int N>
__attribute__((target("avx2"), always_inline)) inline void store_first(float* c, __m256 v) {
    if constexpr (N == 8) {
        _mm256_storeu_ps(c, v);
    } else {
        __m128 h = _mm256_castps256_ps128(v);
        int at = 0;
        if constexpr (N >= 4) {
            _mm_storeu_ps(c, h);
            h = _mm256_extractf128_ps(v, 1);
            at = 4;
        }
        constexpr int rest = N % 4;
        if constexpr (rest >= 2) {
            _mm_storeu_si64(c + at, _mm_castps_si128(h));
            if constexpr (rest == 3) _mm_store_ss(c + at + 2, _mm_movehl_ps(h, h));
        } else if constexpr (rest == 1) {
            _mm_store_ss(c + at, h);
        }
    }
}

// One pass of the AVX2 shifted tile: P (<= 6) positions, whose inputs for reduction row k are
// x[off[k] + S i], x 16 output channels (b: a half of a 32-channel W^T panel, rows 32 apart),
// over reduction rows [k0, k0 + kc), in 12 accumulators as the 6 x 16 GEMM tile. They start
// from zero, or with part from a previous block's sums (P x 16 floats, row-major); with out,
// the sums go there; else they are stored transposed, c[j*ldt + i] for i < P, j < nv (<= 16),
// by two 8x8 register transposes and a P-float store per channel.
template <int P, int S, class Step = NoStep>
__attribute__((target("avx2,fma"))) inline void shifted_pass_avx2(
    dim_t k0, dim_t kc, const float* x, const dim_t* off, const float* b, float* c, dim_t ldt,
    int nv, const float* part = nullptr, float* out = nullptr, const Step& step = {}) {
    __m256 t[P][2];
#pragma GCC unroll 6
    for (int i = 0; i < P; ++i)
        for (int v = 0; v < 2; ++v)
            t[i][v] = part ? _mm256_loadu_ps(part + 16 * i + 8 * v) : _mm256_setzero_ps();
    b += k0 * 32;
    for (dim_t k = k0; k < k0 + kc; ++k, b += 32) {
        step(k);
        const float* xr = x + off[k];
        const __m256 b0 = load_b8(b), b1 = load_b8(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < P; ++i) {
            const __m256 ai = _mm256_broadcast_ss(xr + S * i);
            t[i][0] = _mm256_fmadd_ps(ai, b0, t[i][0]);
            t[i][1] = _mm256_fmadd_ps(ai, b1, t[i][1]);
        }
    }
    if (out) {
#pragma GCC unroll 6
        for (int i = 0; i < P; ++i)
            for (int v = 0; v < 2; ++v) _mm256_storeu_ps(out + 16 * i + 8 * v, t[i][v]);
        return;
    }
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
        if (8 * v >= nv) break;
        __m256 q[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) q[i] = i < P ? t[i][v] : _mm256_setzero_ps();
        transpose8(q);
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            if (8 * v + j >= nv) break;
            store_first<P>(c + (8 * v + j) * ldt, q[j]);
        }
    }
}

// Reduction rows a block of AVX2 shifted passes runs (shifted_row_avx2).
inline constexpr dim_t kShiftedAvx2Block = 256;

// MicroKernel::shifted_row_fn (and _s2_fn, S = 2) with AVX2: R (<= 12) positions x 32 channels
// as passes of at most 6 positions x 16 channels (16 accumulators hold no more), the positions
// split in two near-equal runs from 7 on. A long reduction runs in blocks of
// kShiftedAvx2Block rows, every pass over a block before the next (the pass's sums kept in L1
// between blocks), so that the block's inputs and W^T rows (48 KiB) are read from memory once
// for the 4 passes, where whole passes over a 7x7 3x3's 4608 rows read the panel's 576 KiB of
// W^T, past L2, 4 times per tile. step runs in each block's first pass only.
template <int R, int S, class Step = NoStep>
__attribute__((target("avx2,fma"))) inline void shifted_row_avx2(dim_t kc, const float* x,
                                                                 const dim_t* off, const float* b,
                                                                 float* c, dim_t ldt, int nv,
                                                                 const Step& step = {}) {
    constexpr int P0 = R <= 6 ? R : (R + 1) / 2, P1 = R - P0;
    const int lo = std::min(nv, 16), hi = nv - lo;
    alignas(32) float sums[4][6 * 16];
    // (kc = 0, an output row whose taps all read padding, still stores its zeros.)
    for (dim_t k0 = 0; k0 == 0 || k0 < kc; k0 += kShiftedAvx2Block) {
        const dim_t kb = std::min(kShiftedAvx2Block, kc - k0);
        const bool last = k0 + kb == kc;
        const auto pass = [&]<int P>(int q, const float* xq, const float* bq, float* cq, int n)
            __attribute__((target("avx2,fma"))) {
            shifted_pass_avx2<P, S>(k0, kb, xq, off, bq, cq, ldt, n, k0 > 0 ? sums[q] : nullptr,
                                    last ? nullptr : sums[q]);
        };
        shifted_pass_avx2<P0, S>(k0, kb, x, off, b, c, ldt, lo, k0 > 0 ? sums[0] : nullptr,
                                 last ? nullptr : sums[0], step);
        if constexpr (P1 > 0) pass.template operator()<P1>(1, x + S * P0, b, c + P0, lo);
        if (hi > 0) {
            pass.template operator()<P0>(2, x, b + 16, c + 16 * ldt, hi);
            if constexpr (P1 > 0)
                pass.template operator()<P1>(3, x + S * P0, b + 16, c + 16 * ldt + P0, hi);
        }
    }
}
template <int R, int S = 1>
__attribute__((target("avx2,fma"))) void kernel_avx2_shifted_row(dim_t kc, const float* x,
                                                                 const dim_t* off, const float* b,
                                                                 float* c, dim_t ldt, int nv) {
    shifted_row_avx2<R, S>(kc, x, off, b, c, ldt, nv);
}
// MicroKernel::row_lanes_fn with AVX2: an output row of 16 V positions (2 V vectors of 8) x 4
// output channels, in chunks of at most 3 vectors (12 accumulators, the chunk's 3 row vectors
// and one broadcast weight: all 16 registers), each chunk a pass over the reduction; per
// reduction row 3 loads of the row's inputs, 4 broadcasts and 12 multiply-adds, and the rows of
// C stored as they are (where the transposed tiles spent 4 passes, 4 8x8 transposes and 32
// partial stores on each tile of 12 positions).
template <int NV>
__attribute__((target("avx2,fma"))) inline void row_lanes_chunk_avx2(dim_t kc, const float* x,
                                                                     const dim_t* off,
                                                                     const float* w, dim_t ldw,
                                                                     float* c, dim_t ldc, int nv,
                                                                     bool nt) {
    __m256 t[4][NV];
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o)
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) t[o][v] = _mm256_setzero_ps();
    for (dim_t k = 0; k < kc; ++k, w += ldw) {
        const float* xr = x + off[k];
        __m256 xv[NV];
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) xv[v] = load_b8(xr + 8 * v);
#pragma GCC unroll 4
        for (int o = 0; o < 4; ++o) {
            const __m256 wo = _mm256_broadcast_ss(w + o);
#pragma GCC unroll 3
            for (int v = 0; v < NV; ++v) t[o][v] = _mm256_fmadd_ps(wo, xv[v], t[o][v]);
        }
    }
#pragma GCC unroll 4
    for (int o = 0; o < 4; ++o) {
        if (o >= nv) break;
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) {
            if (nt)
                _mm256_stream_ps(c + o * ldc + 8 * v, t[o][v]);
            else
                _mm256_storeu_ps(c + o * ldc + 8 * v, t[o][v]);
        }
    }
}
template <int V>
__attribute__((target("avx2,fma"))) void kernel_avx2_row_lanes(dim_t kc, const float* x,
                                                               const dim_t* off, const float* w,
                                                               dim_t ldw, float* c, dim_t ldc,
                                                               int nv, bool stream) {
    const bool nt = stream && (reinterpret_cast<std::uintptr_t>(c) % 32 == 0) && ldc % 8 == 0;
    int v = 0;
    for (; v + 3 <= 2 * V; v += 3)
        row_lanes_chunk_avx2<3>(kc, x + 8 * v, off, w, ldw, c + 8 * v, ldc, nv, nt);
    if (2 * V - v == 2) row_lanes_chunk_avx2<2>(kc, x + 8 * v, off, w, ldw, c + 8 * v, ldc, nv, nt);
    if (2 * V - v == 1) row_lanes_chunk_avx2<1>(kc, x + 8 * v, off, w, ldw, c + 8 * v, ldc, nv, nt);
}

// kernel_avx2_shifted_row with the next tile's inputs prefetched (kernel_avx512_shifted_row_pf).
template <int R, int S = 1>
__attribute__((target("avx2,fma"))) void kernel_avx2_shifted_row_pf(dim_t kc, const float* x,
                                                                    const dim_t* off,
                                                                    const float* b, float* c,
                                                                    dim_t ldt, int nv,
                                                                    dim_t ahead) {
    shifted_row_avx2<R, S>(kc, x, off, b, c, ldt, nv, [&](dim_t k) {
        const auto p = reinterpret_cast<std::uintptr_t>(x + off[k]) +
                       static_cast<std::uintptr_t>(ahead) * sizeof(float);
        __builtin_prefetch(reinterpret_cast<const void*>(p), 0, 2);
        __builtin_prefetch(reinterpret_cast<const void*>(p + S * (R - 1) * sizeof(float)), 0, 2);
    });
}
}  // namespace

MicroKernel avx2_kernel() {
    MicroKernel k{"avx2", 6, 16, kernel_avx2_t<6, false>, nullptr, kernel_avx2_t<6, true>};
    fill_by_size<5>(k.tail_fn[0],
                    [](auto r) -> MicroKernelFn { return kernel_avx2_t<r(), false>; });
    fill_by_size<5>(k.tail_fn[1], [](auto r) -> MicroKernelFn { return kernel_avx2_t<r(), true>; });
    fill_by_size<8>(k.edge_fn[0],
                    [](auto r) -> MicroKernelEdgeFn { return kernel_avx2_edge<r()>; });
    fill_by_size<4>(k.edge_rowa_fn[0],
                    [](auto r) -> MicroKernelEdgeFn { return kernel_avx2_dot_rowa<r()>; });
    constexpr int kR = kShiftedRowMax;
    fill_by_size<kR>(k.shifted_row_fn,
                     [](auto r) -> ShiftedFn { return kernel_avx2_shifted_row<r()>; });
    fill_by_size<kR>(k.shifted_row_pf_fn,
                     [](auto r) -> ShiftedPfFn { return kernel_avx2_shifted_row_pf<r()>; });
    fill_by_size<kR>(k.shifted_row_s2_pf_fn,
                     [](auto r) -> ShiftedPfFn { return kernel_avx2_shifted_row_pf<r(), 2>; });
    fill_by_size<kR>(k.shifted_row_s2_fn,
                     [](auto r) -> ShiftedFn { return kernel_avx2_shifted_row<r(), 2>; });
    fill_by_size<kRowLanesMax>(k.row_lanes_fn,
                               [](auto v) -> RowLanesFn { return kernel_avx2_row_lanes<v()>; });
    return k;
}
}  // namespace convlab::detail
#endif  // CONVLAB_X86
