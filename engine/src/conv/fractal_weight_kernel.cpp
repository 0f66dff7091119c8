// The weight gradient's own kernels (fractal_weight_kernel.hpp): products that stop at the
// reduction's last valid position, and the taps' tiles written to OIHW through registers.
#include "fractal_weight_kernel.hpp"

#include <algorithm>

#include "fractal_kernel.hpp"
#include "transpose16.hpp"
#include "x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::davinci {

namespace {

#if CONVLAB_X86

// Positions [0, kt) of one fractal (A at a, B at b), two tiles as 8-row bands (t[i][0], t[i][1]),
// the rows of band `half`: KT fixed (16, every position of a whole fractal, unrolled) or, KT 0,
// kt positions at run time.
template <int KT>
__attribute__((target("avx512f,fma"), always_inline)) inline void band2_steps(
    __m512 (&t)[8][2], const float* a, const float* b, dim_t b_next, dim_t kt) {
    const dim_t n = KT > 0 ? KT : kt;
#pragma GCC unroll 4
    for (dim_t k = 0; k < n; ++k) {
        const __m512 b0 = _mm512_loadu_ps(b + k * 16), b1 = _mm512_loadu_ps(b + b_next + k * 16);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const __m512 av = _mm512_set1_ps(a[i * 16 + k]);
            t[i][0] = _mm512_fmadd_ps(av, b0, t[i][0]);
            t[i][1] = _mm512_fmadd_ps(av, b1, t[i][1]);
        }
    }
}

// Two tiles of one A, as product2_avx512 (two bands of 8 rows x 32 columns: per position two
// loads of B and eight broadcasts of A for sixteen multiply-adds), over len positions.
__attribute__((target("avx512f,fma"))) void product2_len(dim_t len, const float* a, dim_t a_step,
                                                         const float* b, dim_t b_step, dim_t b_next,
                                                         float* c, dim_t c_next, dim_t ldc,
                                                         bool acc) {
    const dim_t full = len / 16, kt = len % 16, frac = full + (kt > 0);
    for (int half = 0; half < 2; ++half) {
        __m512 t[8][2];
        float* ch = c + half * 8 * ldc;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            t[i][0] = acc ? _mm512_loadu_ps(ch + i * ldc) : _mm512_setzero_ps();
            t[i][1] = acc ? _mm512_loadu_ps(ch + c_next + i * ldc) : _mm512_setzero_ps();
        }
        const float* ah = a + half * 8 * 16;
        for (dim_t f = 0; f < full; ++f) {
            const float* bf = b + f * b_step;
            if (f + 1 < frac) {
                _mm_prefetch(reinterpret_cast<const char*>(bf + b_step), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(bf + b_step + b_next), _MM_HINT_T0);
            }
            band2_steps<16>(t, ah + f * a_step, bf, b_next, 16);
        }
        if (kt > 0) band2_steps<0>(t, ah + full * a_step, b + full * b_step, b_next, kt);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            _mm512_storeu_ps(ch + i * ldc, t[i][0]);
            _mm512_storeu_ps(ch + c_next + i * ldc, t[i][1]);
        }
    }
}

template <int KT>
__attribute__((target("avx512f,fma"), always_inline)) inline void band1_steps(__m512 (&t)[16],
                                                                              const float* a,
                                                                              const float* b,
                                                                              dim_t kt) {
    const dim_t n = KT > 0 ? KT : kt;
#pragma GCC unroll 4
    for (dim_t k = 0; k < n; ++k) {
        const __m512 bk = _mm512_loadu_ps(b + k * 16);
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i)
            t[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * 16 + k]), bk, t[i]);
    }
}

// One tile, as product_avx512<16> (sixteen accumulators, one load of B per position), over len
// positions.
__attribute__((target("avx512f,fma"))) void product1_len(dim_t len, const float* a, dim_t a_step,
                                                         const float* b, dim_t b_step, float* c,
                                                         dim_t ldc, bool acc) {
    const dim_t full = len / 16, kt = len % 16;
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) t[i] = acc ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    for (dim_t f = 0; f < full; ++f) band1_steps<16>(t, a + f * a_step, b + f * b_step, 16);
    if (kt > 0) band1_steps<0>(t, a + full * a_step, b + full * b_step, kt);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(c + i * ldc, t[i]);
}

// weight_taps_to_oihw with C0 16: per output channel o, the row o of up to 16 taps' tiles
// (zeros for the missing taps) transposed, so that register ci holds input channel ci's taps.
__attribute__((target("avx512f"))) void taps_to_oihw_avx512(const float* const* tp, dim_t tn,
                                                            dim_t ov, dim_t valid, float* out,
                                                            dim_t o_stride, dim_t taps) {
    alignas(64) static const float zeros[16 * 16] = {};
    for (dim_t t0 = 0; t0 < tn; t0 += 16) {
        const dim_t n = std::min<dim_t>(16, tn - t0);
        const __mmask16 keep = static_cast<__mmask16>((1u << n) - 1u);
        const float* src[16];
        for (dim_t t = 0; t < 16; ++t) src[t] = t < n ? tp[t0 + t] : zeros;
        for (dim_t o = 0; o < ov; ++o) {
            __m512 r[16];
#pragma GCC unroll 16
            for (int t = 0; t < 16; ++t) r[t] = _mm512_loadu_ps(src[t] + o * 16);
            detail::transpose16(r);
            float* run = out + o * o_stride + t0;
            for (dim_t ci = 0; ci < valid; ++ci)
                _mm512_mask_storeu_ps(run + ci * taps, keep, r[ci]);
        }
    }
}

#endif

}  // namespace

void weight_product(dim_t len, const float* a, dim_t a_step, const float* b, dim_t b_step,
                    dim_t b_next, float* c, dim_t c_next, dim_t ldc, bool acc) {
#if CONVLAB_X86
    if (detail::selected_isa() == detail::Isa::avx512) {
        if (b_next >= 0)
            product2_len(len, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
        else
            product1_len(len, a, a_step, b, b_step, c, ldc, acc);
        return;
    }
#endif
    const dim_t rows = blocks_of(len, kN0);
    if (b_next >= 0)
        fractal_product2(kN0, rows, a, a_step, b, b_step, b_next, c, c_next, acc, ldc);
    else
        fractal_product(kN0, kN0, rows, a, a_step, b, b_step, kN0, c, ldc, acc);
}

void weight_taps_to_oihw(const float* const* tp, dim_t tn, dim_t c0, dim_t ov, dim_t valid,
                         float* out, dim_t o_stride, dim_t taps) {
#if CONVLAB_X86
    if (c0 == kN0 && detail::selected_isa() == detail::Isa::avx512)
        return taps_to_oihw_avx512(tp, tn, ov, valid, out, o_stride, taps);
#endif
    for (dim_t o = 0; o < ov; ++o)
        for (dim_t ci = 0; ci < valid; ++ci) {
            float* run = out + o * o_stride + ci * taps;
            const dim_t e = o * c0 + ci;
            for (dim_t t = 0; t < tn; ++t) run[t] = tp[t][e];
        }
}

}  // namespace convlab::davinci
