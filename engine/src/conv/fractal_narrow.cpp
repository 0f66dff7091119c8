// The narrow fractal product (fractal_kernel.hpp): a tile of 16 positions x K <= 4 output
// channels as dot products along the C0 lanes. Row i of an A fractal (position i's C0 lanes) and
// column j of the narrow B (output channel j's C0 lanes, contiguous) are multiplied lane by lane
// into a vector accumulator per (i, j), which is summed across its lanes once, at the end of the
// call. Only the K columns that exist are computed: ResNet-50's conv1 has K = 3 in its backward
// data, where the 16-wide product computes 13 columns of padding.
#include "fractal_kernel.hpp"

#include <algorithm>
#include <string>

#include "x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::davinci {

namespace {

// sums[i * kNarrowMax + j] = the sum over listed rows r and lanes k of A_r(i, k) * B_r(k, j),
// any c0 and kn, in plain loops; with lo (and hi), row r's positions [lo[r], hi[r]) only, position
// i at a[r] + (i - lo[r]) * c0.
void narrow_portable(dim_t c0, dim_t kn, dim_t rows, const float* const* a, const dim_t* idx,
                     const float* b, float* sums, const dim_t* lo, const dim_t* hi) {
    for (dim_t r = 0; r < rows; ++r) {
        const float* br = b + idx[r] * kn * c0;
        const dim_t l = lo ? lo[r] : 0, h = lo ? hi[r] : kN0;
        for (dim_t i = l; i < h; ++i)
            for (dim_t j = 0; j < kn; ++j) {
                const float* ai = a[r] + (i - l) * c0;
                float s = 0.0f;
                for (dim_t k = 0; k < c0; ++k) s += ai[k] * br[j * c0 + k];
                sums[i * kNarrowMax + j] += s;
            }
    }
}

#if CONVLAB_X86

// An A row loaded once into a register for its K multiply-adds: left to itself, GCC folds the
// load into each of them, K loads of the row with an indexed address each, which ran the band
// at half the rate.
// One per vector width, compiled for its ISA: Clang allocates the asm's vector register only in
// a function whose target has that width.
__attribute__((target("avx512f"), always_inline)) inline void keep_in_register(__m512& v) {
    __asm__("" : "+v"(v));
}
__attribute__((target("avx2"), always_inline)) inline void keep_in_register(__m256& v) {
    __asm__("" : "+x"(v));
}

// Four accumulators' lanes summed: lane q < 4 of the result is the sum of t[q]'s 16 lanes.
// The masked forms with every lane selected: the plain intrinsics of GCC 12 start from an
// undefined register, which -Wuninitialized reports.
__attribute__((target("avx512f"))) inline __m512 sum4_avx512(__m512 t0, __m512 t1, __m512 t2,
                                                             __m512 t3) {
    constexpr __mmask16 kAll = 0xffff;
    constexpr __mmask8 kAll8 = 0xff;
    // Within each 128-bit lane: pairs, then the four accumulators' partial sums side by side.
    const __m512 a01 = _mm512_add_ps(_mm512_mask_unpacklo_ps(t0, kAll, t0, t1),
                                     _mm512_mask_unpackhi_ps(t0, kAll, t0, t1));
    const __m512 a23 = _mm512_add_ps(_mm512_mask_unpacklo_ps(t2, kAll, t2, t3),
                                     _mm512_mask_unpackhi_ps(t2, kAll, t2, t3));
    const __m512d d01 = _mm512_castps_pd(a01), d23 = _mm512_castps_pd(a23);
    __m512 s = _mm512_add_ps(_mm512_castpd_ps(_mm512_mask_unpacklo_pd(d01, kAll8, d01, d23)),
                             _mm512_castpd_ps(_mm512_mask_unpackhi_pd(d01, kAll8, d01, d23)));
    // Then the four 128-bit lanes.
    s = _mm512_add_ps(s, _mm512_mask_shuffle_f32x4(s, kAll, s, s, 0x4e));
    s = _mm512_add_ps(s, _mm512_mask_shuffle_f32x4(s, kAll, s, s, 0xb1));
    return s;
}

// Positions [i0, i0 + MR) of the tile, K channels, C0 = 16 * NV: MR * K accumulators, each row's
// K columns of B loaded once per band and each A row once. kCut: row r holds positions
// [lo[r], hi[r]) only (masked loads: nothing is read outside), position i at a[r] + (i - lo[r]) *
// C0.
template <int K, int MR, int NV, bool kCut>
__attribute__((target("avx512f,fma"))) void narrow_band_avx512(dim_t rows, const float* const* a,
                                                               const dim_t* idx, const float* b,
                                                               int i0, float* sums, const dim_t* lo,
                                                               const dim_t* hi) {
    constexpr int kC0v = 16 * NV;
    static_assert(MR % 4 == 0);
    __m512 t[MR][K];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < K; ++j) t[i][j] = _mm512_setzero_ps();
    for (dim_t r = 0; r < rows; ++r) {
        const float *a0 = a[r], *br = b + idx[r] * (K * kC0v);
        dim_t l = 0, h = kN0;
        if constexpr (kCut) {
            l = lo[r];
            h = hi[r];
        }
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) {
            __m512 bj[K];
#pragma GCC unroll 4
            for (int j = 0; j < K; ++j) bj[j] = _mm512_loadu_ps(br + j * kC0v + 16 * v);
#pragma GCC unroll 16
            for (int i = 0; i < MR; ++i) {
                const dim_t pos = i0 + i;
                __m512 av;
                if constexpr (kCut) {
                    const bool in = pos >= l && pos < h;
                    av = _mm512_maskz_loadu_ps(in ? 0xffff : 0,
                                               in ? a0 + (pos - l) * kC0v + 16 * v : a0);
                } else {
                    av = _mm512_loadu_ps(a0 + pos * kC0v + 16 * v);
                }
                keep_in_register(av);
#pragma GCC unroll 4
                for (int j = 0; j < K; ++j) t[i][j] = _mm512_fmadd_ps(av, bj[j], t[i][j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < K; ++j)
#pragma GCC unroll 4
        for (int i = 0; i < MR; i += 4) {
            float s[4];
            _mm512_mask_storeu_ps(s, 0xf,
                                  sum4_avx512(t[i][j], t[i + 1][j], t[i + 2][j], t[i + 3][j]));
            for (int q = 0; q < 4; ++q) sums[(i0 + i + q) * kNarrowMax + j] += s[q];
        }
}

// Bands of as many positions as keep the accumulators in 32 registers with B's columns and a row
// of A: 16 for one channel, 8 for two or three, 4 for four.
template <int K, int NV, bool kCut>
void narrow_avx512(dim_t rows, const float* const* a, const dim_t* idx, const float* b, float* sums,
                   const dim_t* lo, const dim_t* hi) {
    constexpr int kMr = K == 1 ? 16 : K <= 3 ? 8 : 4;
    for (int i0 = 0; i0 < kN0; i0 += kMr)
        narrow_band_avx512<K, kMr, NV, kCut>(rows, a, idx, b, i0, sums, lo, hi);
}

// Lane q of the result: the sum of t[q]'s 8 lanes (q < 4).
__attribute__((target("avx2"))) inline __m128 sum4_avx2(__m256 t0, __m256 t1, __m256 t2,
                                                        __m256 t3) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(t0, t1), _mm256_hadd_ps(t2, t3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// The AVX2 band (16 registers): MR * K accumulators of 8 lanes, C0 = 8 * NV.
template <int K, int MR, int NV>
__attribute__((target("avx2,fma"))) void narrow_band_avx2(dim_t rows, const float* const* a,
                                                          const dim_t* idx, const float* b, int i0,
                                                          float* sums) {
    constexpr int kC0v = 8 * NV;
    __m256 t[MR][K];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < K; ++j) t[i][j] = _mm256_setzero_ps();
    for (dim_t r = 0; r < rows; ++r) {
        const float *ar = a[r] + i0 * kC0v, *br = b + idx[r] * (K * kC0v);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
#pragma GCC unroll 8
            for (int i = 0; i < MR; ++i) {
                __m256 av = _mm256_loadu_ps(ar + i * kC0v + 8 * v);
                keep_in_register(av);
#pragma GCC unroll 4
                for (int j = 0; j < K; ++j)
                    t[i][j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(br + j * kC0v + 8 * v), t[i][j]);
            }
    }
    const __m256 zero = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int j = 0; j < K; ++j)
#pragma GCC unroll 4
        for (int i = 0; i < MR; i += 4) {
            alignas(16) float s[4];
            _mm_store_ps(
                s, sum4_avx2(t[i][j], i + 1 < MR ? t[i + 1][j] : zero,
                             i + 2 < MR ? t[i + 2][j] : zero, i + 3 < MR ? t[i + 3][j] : zero));
            for (int q = 0; q < 4 && i + q < MR; ++q) sums[(i0 + i + q) * kNarrowMax + j] += s[q];
        }
}

// Bands of 8 positions for one channel, 4 for two or three, 2 for four (at most 12 accumulators).
template <int K, int NV>
void narrow_avx2(dim_t rows, const float* const* a, const dim_t* idx, const float* b, float* sums,
                 const dim_t*, const dim_t*) {
    constexpr int kMr = K == 1 ? 8 : K <= 3 ? 4 : 2;
    for (int i0 = 0; i0 < kN0; i0 += kMr) narrow_band_avx2<K, kMr, NV>(rows, a, idx, b, i0, sums);
}

#endif

using NarrowFn = void (*)(dim_t rows, const float* const* a, const dim_t* idx, const float* b,
                          float* sums, const dim_t* lo, const dim_t* hi);

#if CONVLAB_X86
template <int NV, bool kCut = false>
NarrowFn narrow_avx512_of(dim_t kn) {
    switch (kn) {
        case 1:
            return narrow_avx512<1, NV, kCut>;
        case 2:
            return narrow_avx512<2, NV, kCut>;
        case 3:
            return narrow_avx512<3, NV, kCut>;
        case 4:
            return narrow_avx512<4, NV, kCut>;
        default:
            return nullptr;
    }
}
template <int NV>
NarrowFn narrow_avx2_of(dim_t kn) {
    switch (kn) {
        case 1:
            return narrow_avx2<1, NV>;
        case 2:
            return narrow_avx2<2, NV>;
        case 3:
            return narrow_avx2<3, NV>;
        case 4:
            return narrow_avx2<4, NV>;
        default:
            return nullptr;
    }
}
#endif

// The vector kernel for (c0, kn) under the selected ISA, or null: AVX-512 for C0 16 and 32, AVX2
// (also under AVX-512, whose CPUs have it) for C0 8, 16 and 32.
NarrowFn narrow_kernel(dim_t c0, dim_t kn) {
#if CONVLAB_X86
    const detail::Isa isa = detail::selected_isa();
    if (isa == detail::Isa::avx512) {
        if (c0 == 16) return narrow_avx512_of<1>(kn);
        if (c0 == 32) return narrow_avx512_of<2>(kn);
    }
    if (isa == detail::Isa::avx512 || isa == detail::Isa::avx2) {
        if (c0 == 8) return narrow_avx2_of<1>(kn);
        if (c0 == 16) return narrow_avx2_of<2>(kn);
        if (c0 == 32) return narrow_avx2_of<4>(kn);
    }
#else
    (void)c0;
    (void)kn;
#endif
    return nullptr;
}

// The kernel of rows cut to a range of positions (masked loads, AVX-512 only), or null.
NarrowFn narrow_cut_kernel(dim_t c0, dim_t kn) {
#if CONVLAB_X86
    if (detail::selected_isa() == detail::Isa::avx512) {
        if (c0 == 16) return narrow_avx512_of<1, true>(kn);
        if (c0 == 32) return narrow_avx512_of<2, true>(kn);
    }
#else
    (void)c0;
    (void)kn;
#endif
    return nullptr;
}

void check_kn(dim_t kn) {
    if (kn < 1 || kn > kNarrowMax)
        throw Error("fractal_product_narrow: " + std::to_string(kn) + " columns, not 1 to " +
                    std::to_string(kNarrowMax));
}

// c = (acc ? c : 0) + sums, the tile's kn columns.
void add_sums(const float* sums, dim_t kn, float* c, dim_t ldc, bool acc) {
    for (dim_t i = 0; i < kN0; ++i)
        for (dim_t j = 0; j < kn; ++j)
            c[i * ldc + j] = (acc ? c[i * ldc + j] : 0.0f) + sums[i * kNarrowMax + j];
}

}  // namespace

void fractal_product_narrow(dim_t c0, dim_t kn, dim_t rows, const float* const* a, const dim_t* idx,
                            const float* b, float* c, dim_t ldc, bool acc) {
    check_kn(kn);
    float sums[kN0 * kNarrowMax] = {};
    if (const NarrowFn f = narrow_kernel(c0, kn))
        f(rows, a, idx, b, sums, nullptr, nullptr);
    else
        narrow_portable(c0, kn, rows, a, idx, b, sums, nullptr, nullptr);
    add_sums(sums, kn, c, ldc, acc);
}

void fractal_product_narrow_cut(dim_t c0, dim_t kn, dim_t rows, const float* const* a,
                                const dim_t* lo, const dim_t* hi, const dim_t* idx, const float* b,
                                float* c, dim_t ldc, bool acc) {
    check_kn(kn);
    float sums[kN0 * kNarrowMax] = {};
    if (const NarrowFn f = narrow_cut_kernel(c0, kn))
        f(rows, a, idx, b, sums, lo, hi);
    else
        narrow_portable(c0, kn, rows, a, idx, b, sums, lo, hi);
    add_sums(sums, kn, c, ldc, acc);
}

bool fractal_narrow_cuts(dim_t c0, dim_t kn) {
    return narrow_cut_kernel(c0, kn) != nullptr;
}

bool fractal_narrow_vector(dim_t c0, dim_t kn) {
    return narrow_kernel(c0, kn) != nullptr;
}

bool fractal_narrow_runs(dim_t c0, dim_t kn) {
    return kn >= 1 && kn <= kNarrowMax &&
           (fractal_narrow_vector(c0, kn) || detail::selected_isa() == detail::Isa::portable);
}

bool fractal_multiplies_pairs(const Problem& p, Pass pass, DType storage, dim_t c0, Rule rule) {
    const dim_t out = pass == Pass::BackwardData ? p.icg() : p.ocg();
    return storage == DType::bf16 && fractal_bf16_pairs(c0, rule) && !fractal_narrow_runs(c0, out);
}

void narrow_b(dim_t rows, dim_t c0, dim_t kn, const float* bt, dim_t b_step, float* dst) {
    for (dim_t r = 0; r < rows; ++r)
        for (dim_t j = 0; j < kn; ++j)
            for (dim_t k = 0; k < c0; ++k)
                dst[(r * kn + j) * c0 + k] = bt[r * b_step + k * kN0 + j];
}

}  // namespace convlab::davinci
