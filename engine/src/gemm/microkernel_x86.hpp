// Internal to the blocked SGEMM (microkernel*.cpp): the x86 primitives its ISA files share, and
// the tables each ISA file fills.
#pragma once

#include <utility>

#include "microkernel.hpp"
#include "x86.hpp"
#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::detail {

// A tile loop step that does nothing (the kernels' default Step).
struct NoStep {
    void operator()(dim_t) const {}
};

// fn[r] = kernel(std::integral_constant<int, r>) for r = 1 .. N: the tables of kernels
// instantiated per tile height or width.
template <int N, class Fn, class Kernel>
void fill_by_size(Fn* fn, const Kernel& kernel) {
    [&]<int... R>(std::integer_sequence<int, R...>) {
        ((fn[R + 1] = kernel(std::integral_constant<int, R + 1>{})), ...);
    }
    (std::make_integer_sequence<int, N>{});
}

#if CONVLAB_X86
// r[c] = column c of the 16 x 16 block whose rows are r[0..16). Always inlined: called out of
// line (GCC's choice in the larger tiles), r went through memory after a vzeroupper.
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4i + m], 128-bit lane L: column 4L + m of rows 4i .. 4i+3.
    for (int i = 0; i < 4; ++i) {
        u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int m = 0; m < 4; ++m) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44);
        const __m512 v1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
        const __m512 v2 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);
        const __m512 v3 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
        r[m] = _mm512_shuffle_f32x4(v0, v1, 0x88);
        r[4 + m] = _mm512_shuffle_f32x4(v0, v1, 0xDD);
        r[8 + m] = _mm512_shuffle_f32x4(v2, v3, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(v2, v3, 0xDD);
    }
}

// r[c] = column c of the 8 x 8 block whose rows are r[0..8) (AVX2's transpose16).
__attribute__((target("avx2"), always_inline)) inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4i + m], 128-bit lane L: column 4L + m of rows 4i .. 4i+3.
    for (int i = 0; i < 2; ++i) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int m = 0; m < 4; ++m) {
        r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
        r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
    }
}

// The first n (0..8) of 8 lanes, as a mask of _mm256_maskload_ps / _mm256_maskstore_ps.
__attribute__((target("avx2"), always_inline)) inline __m256i lanes8(dim_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The AVX-512 kernel (12 x 32) and its per-product companions: 4 x 64 for M <= 4, 8 x 48,
// 6 x 64 with the 49-column edge tile, 7 x 48 (microkernel_avx512.cpp).
MicroKernel avx512_kernel();
void avx512_product_kernels(MicroKernel& narrow, MicroKernel& wide, MicroKernel& n49,
                            MicroKernel& rows7);
// The AVX2 kernel, 6 x 16 (microkernel_avx2.cpp).
MicroKernel avx2_kernel();
#endif

}  // namespace convlab::detail
