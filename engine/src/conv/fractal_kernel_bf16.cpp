// The fractal product on bf16 operands (fractal_kernel.hpp): vdpbf16ps multiplies pairs of bf16
// along the reduction and adds both products to an fp32 lane, so a 16 x 16 tile takes half the
// instructions of the fp32 kernel per element of the reduction, with fp32 accumulation as the
// Cube unit does. Compiled for AVX512_BF16 by function attributes and used only where the CPU
// has it and AVX-512 is the selected ISA; elsewhere the caller keeps the fp32 products of
// bf16-rounded operands.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "bf16.hpp"
#include "fractal_kernel.hpp"
#include "x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::davinci {

namespace {

#if CONVLAB_X86

// Sixteen fp32 accumulators (the tile's rows); per pair of reduction elements one load of B's
// 16 column pairs and sixteen broadcasts of A's pairs.
template <int KP>
__attribute__((target("avx512f,avx512bf16"))) void product_bf16(dim_t rows, const std::uint16_t* a,
                                                                dim_t a_step,
                                                                const std::uint16_t* b,
                                                                dim_t b_step, float* c, dim_t ldc,
                                                                bool acc) {
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) t[i] = acc ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    for (dim_t r = 0; r < rows; ++r, a += a_step, b += b_step) {
        if (r + 1 < rows) {
            _mm_prefetch(reinterpret_cast<const char*>(a + a_step), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(b + b_step), _MM_HINT_T0);
        }
#pragma GCC unroll 4
        for (int kp = 0; kp < KP; ++kp) {
            const __m512bh bk = (__m512bh)_mm512_loadu_si512(b + kp * 32);
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) {
                std::uint32_t pair;
                std::memcpy(&pair, a + i * 2 * KP + 2 * kp, sizeof pair);
                const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
                t[i] = _mm512_dpbf16_ps(t[i], av, bk);
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(c + i * ldc, t[i]);
}

// Two tiles of one A (B at b and b + b_next, C at c and c + c_next, ld ldc) as two bands of 8
// rows x 32 columns: two loads of B and eight broadcasts per sixteen instructions.
template <int KP>
__attribute__((target("avx512f,avx512bf16"))) void product2_bf16(
    dim_t rows, const std::uint16_t* a, dim_t a_step, const std::uint16_t* b, dim_t b_step,
    dim_t b_next, float* c, dim_t c_next, dim_t ldc, bool acc) {
    for (int half = 0; half < 2; ++half) {
        __m512 t[8][2];
        float* ch = c + half * 8 * ldc;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            t[i][0] = acc ? _mm512_loadu_ps(ch + i * ldc) : _mm512_setzero_ps();
            t[i][1] = acc ? _mm512_loadu_ps(ch + c_next + i * ldc) : _mm512_setzero_ps();
        }
        const std::uint16_t* ar = a + half * 8 * 2 * KP;
        const std::uint16_t* br = b;
        for (dim_t r = 0; r < rows; ++r, ar += a_step, br += b_step) {
#pragma GCC unroll 4
            for (int kp = 0; kp < KP; ++kp) {
                const __m512bh b0 = (__m512bh)_mm512_loadu_si512(br + kp * 32),
                               b1 = (__m512bh)_mm512_loadu_si512(br + b_next + kp * 32);
#pragma GCC unroll 8
                for (int i = 0; i < 8; ++i) {
                    std::uint32_t pair;
                    std::memcpy(&pair, ar + i * 2 * KP + 2 * kp, sizeof pair);
                    const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
                    t[i][0] = _mm512_dpbf16_ps(t[i][0], av, b0);
                    t[i][1] = _mm512_dpbf16_ps(t[i][1], av, b1);
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

#endif

}  // namespace

void fractal_product2_bf16(dim_t kr, dim_t rows, const std::uint16_t* a, dim_t a_step,
                           const std::uint16_t* b, dim_t b_step, dim_t b_next, float* c,
                           dim_t c_next, bool acc, dim_t ldc) {
#if CONVLAB_X86
    if (fractal_bf16_native(kr)) switch (kr) {
            case 4:
                return product2_bf16<2>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            case 8:
                return product2_bf16<4>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            case 16:
                return product2_bf16<8>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            case 32:
                return product2_bf16<16>(rows, a, a_step, b, b_step, b_next, c, c_next, ldc, acc);
            default:
                break;
        }
#endif
    fractal_product_bf16(kr, rows, a, a_step, b, b_step, c, ldc, acc);
    fractal_product_bf16(kr, rows, a, a_step, b + b_next, b_step, c + c_next, ldc, acc);
}

bool fractal_bf16_native(dim_t kr) {
#if CONVLAB_X86
    return (kr == 4 || kr == 8 || kr == 16 || kr == 32) && detail::cpu_has_avx512_bf16() &&
           detail::selected_isa() == detail::Isa::avx512;
#else
    (void)kr;
    return false;
#endif
}

namespace {

#if CONVLAB_X86
// Seconds of n steps of 24 independent chains of vdpbf16ps, and of vfmadd231ps: more chains than
// either instruction's latency times its issue rate, so that both run at their throughput.
constexpr int kChains = 24;

// The chains' results used, so that no chain is left out.
__attribute__((target("avx512f"))) void keep(const __m512* t) {
    __m512 s = t[0];
    for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, t[i]);
    alignas(64) float v[16];
    _mm512_store_ps(v, s);
    volatile float sink = v[0];
    (void)sink;
}

__attribute__((target("avx512f,avx512bf16"), noinline)) double pair_chains(long n) {
    __m512 t[kChains];
    for (int i = 0; i < kChains; ++i) t[i] = _mm512_setzero_ps();
    const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // bf16 pairs of 1.0
    const auto start = std::chrono::steady_clock::now();
    for (long k = 0; k < n; ++k)
#pragma GCC unroll 24
        for (int i = 0; i < kChains; ++i) t[i] = _mm512_dpbf16_ps(t[i], x, x);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    keep(t);
    return s;
}

__attribute__((target("avx512f,fma"), noinline)) double fma_chains(long n) {
    __m512 t[kChains];
    for (int i = 0; i < kChains; ++i) t[i] = _mm512_setzero_ps();
    const __m512 x = _mm512_set1_ps(1.0f);
    const auto start = std::chrono::steady_clock::now();
    for (long k = 0; k < n; ++k)
#pragma GCC unroll 24
        for (int i = 0; i < kChains; ++i) t[i] = _mm512_fmadd_ps(x, x, t[i]);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    keep(t);
    return s;
}

// Best of 7 interleaved windows of 4096 steps each (about 0.1 ms of pairs where they are slow):
// a window that another process interrupted is not the minimum.
double measure_rate() {
    double pair = 1e30, fma = 1e30;
    for (int r = 0; r < 7; ++r) {
        pair = std::min(pair, pair_chains(4096));
        fma = std::min(fma, fma_chains(4096));
    }
    return pair > 0 ? fma / pair : 0.0;
}
#endif

}  // namespace

double fractal_bf16_rate() {
#if CONVLAB_X86
    static const double rate = detail::cpu_has_avx512_bf16() ? measure_rate() : 0.0;
    return fractal_bf16_native(16) ? rate : 0.0;
#else
    return 0.0;
#endif
}

bool fractal_bf16_pairs(dim_t kr, Rule rule) {
    if (rule == Rule::Never || !fractal_bf16_native(kr)) return false;
    return rule == Rule::Always || fractal_bf16_rate() >= 0.625;
}

bool bf16_pairs(Rule rule, double* rate) {
    if (rate) *rate = fractal_bf16_rate();
    return fractal_bf16_pairs(kN0, rule);
}

const char* fractal_bf16_isa(dim_t kr) {
    return fractal_bf16_native(kr) ? "avx512_bf16" : fractal_isa();
}

void fractal_product_bf16(dim_t kr, dim_t rows, const std::uint16_t* a, dim_t a_step,
                          const std::uint16_t* b, dim_t b_step, float* c, dim_t ldc, bool acc) {
#if CONVLAB_X86
    if (fractal_bf16_native(kr)) switch (kr) {
            case 4:
                return product_bf16<2>(rows, a, a_step, b, b_step, c, ldc, acc);
            case 8:
                return product_bf16<4>(rows, a, a_step, b, b_step, c, ldc, acc);
            case 16:
                return product_bf16<8>(rows, a, a_step, b, b_step, c, ldc, acc);
            case 32:
                return product_bf16<16>(rows, a, a_step, b, b_step, c, ldc, acc);
            default:
                break;
        }
#else
    (void)rows, (void)a, (void)a_step, (void)b, (void)b_step, (void)c, (void)ldc, (void)acc;
#endif
    throw Error("fractal_product_bf16: no bf16 products for kr = " + std::to_string(kr) +
                " on this CPU (" + fractal_isa() + ")");
}

// src holds values rounded to bf16, which rounding keeps (their lower half is zero, so the
// rounding add carries nothing, and the rounding's NaNs are quiet already): the vector conversion
// gives their upper half.
void bf16_bits(const float* src, std::uint16_t* dst, dim_t n) {
    detail::to_bf16(src, dst, n);
}

}  // namespace convlab::davinci
