// The fractal product (fractal_kernel.hpp): 16 rows of C held in registers across the whole
// reduction, each step a row of B times the 16 values of a column of A broadcast, as the GEMM
// core's microkernels do; the vector kernels are compiled for their ISA by function attributes
// and picked at run time by the GEMM core's selection (detail::selected_isa).
#include "fractal_kernel.hpp"

#include "omp_compat.hpp"

#include <algorithm>
#include <new>
#include <string>

#include "x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::davinci {

namespace {

// Any kr and w: plain loops (the reference the vector kernels must equal: each c(i, j) is the
// same chain of fp32 multiply-adds, r then k ascending, in every kernel).
void product_portable(dim_t kr, dim_t w, dim_t rows, const float* a, dim_t a_step, const float* b,
                      dim_t b_step, dim_t ldb, float* c, dim_t ldc, bool acc) {
    if (!acc)
        for (dim_t i = 0; i < 16; ++i) std::fill(c + i * ldc, c + i * ldc + w, 0.0f);
    for (dim_t r = 0; r < rows; ++r, a += a_step, b += b_step)
        for (dim_t k = 0; k < kr; ++k)
            for (dim_t i = 0; i < 16; ++i) {
                const float av = a[i * kr + k];
                float* ci = c + i * ldc;
                const float* bk = b + k * ldb;
                for (dim_t j = 0; j < w; ++j) ci[j] += av * bk[j];
            }
}

#if CONVLAB_X86

// 16 x 16: sixteen accumulators, one load of B and sixteen broadcast multiply-adds per step.
template <int KR>
__attribute__((target("avx512f,fma"))) void product_avx512(dim_t rows, const float* a, dim_t a_step,
                                                           const float* b, dim_t b_step, dim_t ldb,
                                                           float* c, dim_t ldc, bool acc) {
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) t[i] = acc ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    for (dim_t r = 0; r < rows; ++r, a += a_step, b += b_step) {
        if (r + 1 < rows) {
            _mm_prefetch(reinterpret_cast<const char*>(a + a_step), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(b + b_step), _MM_HINT_T0);
        }
#pragma GCC unroll 4
        for (int k = 0; k < KR; ++k) {
            const __m512 bk = _mm512_loadu_ps(b + k * ldb);
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i)
                t[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * KR + k]), bk, t[i]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(c + i * ldc, t[i]);
}

// Two 16 x 16 tiles of one A (B at b and b + b_next, C at c and c + c_next, ld ldc), as two bands
// of 8 rows x 32 columns: per step two loads of B and eight broadcasts of A for sixteen
// multiply-adds, where the single tile loads B once and broadcasts sixteen times (its
// broadcasts, loads from L1, were as many as its multiply-adds). The sums' order is the single
// tile's (r, then k ascending), so the results are the same bits.
template <int KR>
__attribute__((target("avx512f,fma"))) void product2_avx512(dim_t rows, const float* a,
                                                            dim_t a_step, const float* b,
                                                            dim_t b_step, dim_t b_next, float* c,
                                                            dim_t c_next, dim_t ldc, bool acc) {
    for (int half = 0; half < 2; ++half) {
        __m512 t[8][2];
        float* ch = c + half * 8 * ldc;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            t[i][0] = acc ? _mm512_loadu_ps(ch + i * ldc) : _mm512_setzero_ps();
            t[i][1] = acc ? _mm512_loadu_ps(ch + c_next + i * ldc) : _mm512_setzero_ps();
        }
        const float* ar = a + half * 8 * KR;
        const float* br = b;
        for (dim_t r = 0; r < rows; ++r, ar += a_step, br += b_step) {
            if (r + 1 < rows) {
                _mm_prefetch(reinterpret_cast<const char*>(br + b_step), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(br + b_step + b_next), _MM_HINT_T0);
            }
#pragma GCC unroll 4
            for (int k = 0; k < KR; ++k) {
                const __m512 b0 = _mm512_loadu_ps(br + k * 16),
                             b1 = _mm512_loadu_ps(br + b_next + k * 16);
#pragma GCC unroll 8
                for (int i = 0; i < 8; ++i) {
                    const __m512 av = _mm512_set1_ps(ar[i * KR + k]);
                    t[i][0] = _mm512_fmadd_ps(av, b0, t[i][0]);
                    t[i][1] = _mm512_fmadd_ps(av, b1, t[i][1]);
                }
            }
        }
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            _mm512_storeu_ps(ch + i * ldc, t[i][0]);
            _mm512_storeu_ps(ch + c_next + i * ldc, t[i][1]);
        }
    }
}

// AVX2 has 16 registers: the 16 x 16 tile as row bands of MR rows (2 MR accumulators), B's row
// loaded once per band.
template <int KR, int MR>
__attribute__((target("avx2,fma"))) void band_avx2(dim_t rows, const float* a, dim_t a_step,
                                                   const float* b, dim_t b_step, dim_t ldb,
                                                   float* c, dim_t ldc, bool acc) {
    __m256 t[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
        for (int h = 0; h < 2; ++h)
            t[i][h] = acc ? _mm256_loadu_ps(c + i * ldc + 8 * h) : _mm256_setzero_ps();
    for (dim_t r = 0; r < rows; ++r, a += a_step, b += b_step)
#pragma GCC unroll 4
        for (int k = 0; k < KR; ++k) {
            const __m256 b0 = _mm256_loadu_ps(b + k * ldb), b1 = _mm256_loadu_ps(b + k * ldb + 8);
#pragma GCC unroll 8
            for (int i = 0; i < MR; ++i) {
                const __m256 av = _mm256_broadcast_ss(a + i * KR + k);
                t[i][0] = _mm256_fmadd_ps(av, b0, t[i][0]);
                t[i][1] = _mm256_fmadd_ps(av, b1, t[i][1]);
            }
        }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
        for (int h = 0; h < 2; ++h) _mm256_storeu_ps(c + i * ldc + 8 * h, t[i][h]);
}

template <int KR>
void product_avx2(dim_t rows, const float* a, dim_t a_step, const float* b, dim_t b_step, dim_t ldb,
                  float* c, dim_t ldc, bool acc) {
    band_avx2<KR, 6>(rows, a, a_step, b, b_step, ldb, c, ldc, acc);
    band_avx2<KR, 6>(rows, a + 6 * KR, a_step, b, b_step, ldb, c + 6 * ldc, ldc, acc);
    band_avx2<KR, 4>(rows, a + 12 * KR, a_step, b, b_step, ldb, c + 12 * ldc, ldc, acc);
}

#endif

using Fn16 = void (*)(dim_t rows, const float* a, dim_t a_step, const float* b, dim_t b_step,
                      dim_t ldb, float* c, dim_t ldc, bool acc);

// The vector kernel of 16 columns for kr under the selected ISA, or null.
Fn16 kernel16(dim_t kr) {
#if CONVLAB_X86
    switch (detail::selected_isa()) {
        case detail::Isa::avx512:
            switch (kr) {
                case 4:
                    return product_avx512<4>;
                case 8:
                    return product_avx512<8>;
                case 16:
                    return product_avx512<16>;
                case 32:
                    return product_avx512<32>;
                default:
                    return nullptr;
            }
        case detail::Isa::avx2:
            switch (kr) {
                case 4:
                    return product_avx2<4>;
                case 8:
                    return product_avx2<8>;
                case 16:
                    return product_avx2<16>;
                case 32:
                    return product_avx2<32>;
                default:
                    return nullptr;
            }
        case detail::Isa::portable:
            break;
    }
#else
    (void)kr;
#endif
    return nullptr;
}

}  // namespace

void fractal_product(dim_t kr, dim_t w, dim_t rows, const float* a, dim_t a_step, const float* b,
                     dim_t b_step, dim_t ldb, float* c, dim_t ldc, bool acc) {
    const Fn16 f = w % 16 == 0 ? kernel16(kr) : nullptr;
    if (!f) return product_portable(kr, w, rows, a, a_step, b, b_step, ldb, c, ldc, acc);
    for (dim_t j = 0; j < w; j += 16) f(rows, a, a_step, b + j, b_step, ldb, c + j, ldc, acc);
}

void fractal_product2(dim_t kr, dim_t rows, const float* a, dim_t a_step, const float* b,
                      dim_t b_step, dim_t b_next, float* c, dim_t c_next, bool acc, dim_t ldc) {
#if CONVLAB_X86
    if (detail::selected_isa() == detail::Isa::avx512) switch (kr) {
            case 4:
                return product2_avx512<4>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            case 8:
                return product2_avx512<8>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            case 16:
                return product2_avx512<16>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            case 32:
                return product2_avx512<32>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            default:
                break;
        }
#endif
    fractal_product(kr, kN0, rows, a, a_step, b, b_step, kN0, c, ldc, acc);
    fractal_product(kr, kN0, rows, a, a_step, b + b_next, b_step, kN0, c + c_next, ldc, acc);
}

void pack_weight_transposed(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const WeiGeom g = WeiGeom::of(dims, c0);
    const dim_t taps = g.taps(), frac = kN0 * c0;
    // One (nb, c1) block at a time: its 16 output channels' source runs (C0 channels x taps,
    // contiguous) read in order, written into its taps' fractals (taps x frac floats, in L1).
#pragma omp parallel for collapse(2) schedule(static) if (g.size() > 65536)
    for (dim_t nb = 0; nb < g.n1; ++nb)
        for (dim_t c1 = 0; c1 < g.i1; ++c1) {
            const dim_t valid = std::min(c0, g.i - c1 * c0);
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh)
                    for (dim_t kw = 0; kw < g.w; ++kw) {
                        float* out = dst + g.offset(g.row(kd, c1, kh, kw), nb, 0, 0);
                        std::fill(out, out + frac, 0.0f);
                    }
            for (dim_t j = 0; j < kN0 && nb * kN0 + j < g.o; ++j) {
                const float* in = src + ((nb * kN0 + j) * g.i + c1 * c0) * taps;
                for (dim_t kd = 0; kd < g.d; ++kd)
                    for (dim_t kh = 0; kh < g.h; ++kh)
                        for (dim_t kw = 0; kw < g.w; ++kw) {
                            const dim_t tap = (kd * g.h + kh) * g.w + kw;
                            float* out = dst + g.offset(g.row(kd, c1, kh, kw), nb, 0, 0) + j;
                            for (dim_t k = 0; k < valid; ++k) out[k * kN0] = in[k * taps + tap];
                        }
            }
        }
}

void reserve_thread_scratch(int slot, dim_t floats, [[maybe_unused]] int threads) {
    bool ok = true;
#pragma omp parallel num_threads(threads)
    {
        try {
            (void)detail::scratch(slot, static_cast<std::size_t>(floats));
        } catch (const std::bad_alloc&) {
#pragma omp atomic write
            ok = false;
        }
    }
    if (!ok)
        throw Error("fractal: " + std::to_string((floats * dim_t{sizeof(float)}) >> 20) +
                    " MiB of column blocks per thread do not fit in memory");
}

const char* fractal_isa() {
    return detail::runtime_isa();
}

}  // namespace convlab::davinci
