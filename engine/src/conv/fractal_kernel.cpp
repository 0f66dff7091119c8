// The fractal product (fractal_kernel.hpp): 16 rows of C held in registers across the whole
// reduction, each step a row of B times the 16 values of a column of A broadcast, as the GEMM
// core's microkernels do; the vector kernels are compiled for their ISA by function attributes
// and picked at run time by the GEMM core's selection (detail::selected_isa).
#include "fractal_kernel.hpp"

#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "../core/bf16.hpp"
#include "../core/bf16_simd.hpp"
#include "transpose16.hpp"
#include "x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::davinci {

namespace {

// Where the kernels find the fractals of reduction row r: A at a + r * a_step and B at
// b + r * b_step (Strided), or A at a[r] and B at b + idx[r] * b_step (Listed: the rows that
// hold data, A fractals anywhere, e.g. in the source itself).
struct Strided {
    const float* a;
    dim_t a_step;
    const float* b;
    dim_t b_step;
    const float* a_row(dim_t r) const { return a + r * a_step; }
    const float* b_row(dim_t r) const { return b + r * b_step; }
};
struct Listed {
    const float* const* a;
    const dim_t* idx;
    const float* b;
    dim_t b_step;
    const float* a_row(dim_t r) const { return a[r]; }
    const float* b_row(dim_t r) const { return b + idx[r] * b_step; }
};

// Any kr and w: plain loops (the reference the vector kernels must equal: each c(i, j) is the
// same chain of fp32 multiply-adds, r then k ascending, in every kernel).
template <class Rows>
void product_portable(dim_t kr, dim_t w, dim_t rows, Rows src, dim_t ldb, float* c, dim_t ldc,
                      bool acc) {
    if (!acc)
        for (dim_t i = 0; i < 16; ++i) std::fill(c + i * ldc, c + i * ldc + w, 0.0f);
    for (dim_t r = 0; r < rows; ++r) {
        const float *a = src.a_row(r), *b = src.b_row(r);
        for (dim_t k = 0; k < kr; ++k)
            for (dim_t i = 0; i < 16; ++i) {
                const float av = a[i * kr + k];
                float* ci = c + i * ldc;
                const float* bk = b + k * ldb;
                for (dim_t j = 0; j < w; ++j) ci[j] += av * bk[j];
            }
    }
}

#if CONVLAB_X86

// 16 x 16: sixteen accumulators, one load of B and sixteen broadcast multiply-adds per step.
template <int KR, class Rows>
__attribute__((target("avx512f,fma"))) void product_avx512(dim_t rows, Rows src, dim_t ldb,
                                                           float* c, dim_t ldc, bool acc) {
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) t[i] = acc ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    for (dim_t r = 0; r < rows; ++r) {
        const float *a = src.a_row(r), *b = src.b_row(r);
        if (r + 1 < rows) {
            _mm_prefetch(reinterpret_cast<const char*>(src.a_row(r + 1)), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(src.b_row(r + 1)), _MM_HINT_T0);
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
template <int KR, class Rows>
__attribute__((target("avx512f,fma"))) void product2_avx512(dim_t rows, Rows src, dim_t b_next,
                                                            float* c, dim_t c_next, dim_t ldc,
                                                            bool acc) {
    for (int half = 0; half < 2; ++half) {
        __m512 t[8][2];
        float* ch = c + half * 8 * ldc;
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            t[i][0] = acc ? _mm512_loadu_ps(ch + i * ldc) : _mm512_setzero_ps();
            t[i][1] = acc ? _mm512_loadu_ps(ch + c_next + i * ldc) : _mm512_setzero_ps();
        }
        for (dim_t r = 0; r < rows; ++r) {
            const float *ar = src.a_row(r) + half * 8 * KR, *br = src.b_row(r);
            if (r + 1 < rows) {
                const float* bn = src.b_row(r + 1);
                _mm_prefetch(reinterpret_cast<const char*>(bn), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(bn + b_next), _MM_HINT_T0);
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
template <int KR, int MR, class Rows>
__attribute__((target("avx2,fma"))) void band_avx2(dim_t rows, Rows src, dim_t i0, dim_t ldb,
                                                   float* c, dim_t ldc, bool acc) {
    __m256 t[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
        for (int h = 0; h < 2; ++h)
            t[i][h] = acc ? _mm256_loadu_ps(c + i * ldc + 8 * h) : _mm256_setzero_ps();
    for (dim_t r = 0; r < rows; ++r) {
        const float *a = src.a_row(r) + i0 * KR, *b = src.b_row(r);
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
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
        for (int h = 0; h < 2; ++h) _mm256_storeu_ps(c + i * ldc + 8 * h, t[i][h]);
}

template <int KR, class Rows>
void product_avx2(dim_t rows, Rows src, dim_t ldb, float* c, dim_t ldc, bool acc) {
    band_avx2<KR, 6>(rows, src, 0, ldb, c, ldc, acc);
    band_avx2<KR, 6>(rows, src, 6, ldb, c + 6 * ldc, ldc, acc);
    band_avx2<KR, 4>(rows, src, 12, ldb, c + 12 * ldc, ldc, acc);
}

#endif

template <class Rows>
using Fn16 = void (*)(dim_t rows, Rows src, dim_t ldb, float* c, dim_t ldc, bool acc);

// The vector kernel of 16 columns for kr under the selected ISA, or null.
template <class Rows>
Fn16<Rows> kernel16(dim_t kr) {
#if CONVLAB_X86
    switch (detail::selected_isa()) {
        case detail::Isa::avx512:
            switch (kr) {
                case 4:
                    return product_avx512<4, Rows>;
                case 8:
                    return product_avx512<8, Rows>;
                case 16:
                    return product_avx512<16, Rows>;
                case 32:
                    return product_avx512<32, Rows>;
                default:
                    return nullptr;
            }
        case detail::Isa::avx2:
            switch (kr) {
                case 4:
                    return product_avx2<4, Rows>;
                case 8:
                    return product_avx2<8, Rows>;
                case 16:
                    return product_avx2<16, Rows>;
                case 32:
                    return product_avx2<32, Rows>;
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

// Rows src shifted by j columns of B.
template <class Rows>
Rows shifted(Rows s, dim_t j) {
    s.b += j;
    return s;
}

template <class Rows>
void product(dim_t kr, dim_t w, dim_t rows, Rows src, dim_t ldb, float* c, dim_t ldc, bool acc) {
    const Fn16<Rows> f = w % 16 == 0 ? kernel16<Rows>(kr) : nullptr;
    if (!f) return product_portable(kr, w, rows, src, ldb, c, ldc, acc);
    for (dim_t j = 0; j < w; j += 16) f(rows, shifted(src, j), ldb, c + j, ldc, acc);
}

template <class Rows>
void product2(dim_t kr, dim_t rows, Rows src, dim_t b_next, float* c, dim_t c_next, bool acc,
              dim_t ldc) {
#if CONVLAB_X86
    if (detail::selected_isa() == detail::Isa::avx512) switch (kr) {
            case 4:
                return product2_avx512<4>(rows, src, b_next, c, c_next, ldc, acc);
            case 8:
                return product2_avx512<8>(rows, src, b_next, c, c_next, ldc, acc);
            case 16:
                return product2_avx512<16>(rows, src, b_next, c, c_next, ldc, acc);
            case 32:
                return product2_avx512<32>(rows, src, b_next, c, c_next, ldc, acc);
            default:
                break;
        }
#endif
    product(kr, kN0, rows, src, kN0, c, ldc, acc);
    product(kr, kN0, rows, shifted(src, b_next), kN0, c + c_next, ldc, acc);
}

#if CONVLAB_X86
// The 16 x 16 tile transposed in registers, column j plus bias[j] stored to out + j * stride.
template <DType kT>
__attribute__((target("avx512f"))) void write_columns_avx512(const float* acc, dim_t cols,
                                                             const float* bias, float* out,
                                                             dim_t stride, bool stream) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(acc + i * 16);
    detail::transpose16(r);  // r[j]: column j
    for (dim_t j = 0; j < cols; ++j) {
        const __m512 v = bias ? _mm512_add_ps(r[j], _mm512_set1_ps(bias[j])) : r[j];
        float* o = out + j * stride;
        if (stream && reinterpret_cast<std::uintptr_t>(o) % 64 == 0)
            _mm512_stream_ps(o, detail::stored_avx512<kT>(v));
        else
            _mm512_storeu_ps(o, detail::stored_avx512<kT>(v));
    }
}
#endif

}  // namespace

void fractal_write_columns(const float* acc, dim_t cols, const float* bias, DType storage,
                           float* out, dim_t stride, [[maybe_unused]] bool stream) {
#if CONVLAB_X86
    if (detail::selected_isa() == detail::Isa::avx512) {
        if (storage == DType::bf16)
            return write_columns_avx512<DType::bf16>(acc, cols, bias, out, stride, stream);
        if (storage == DType::f16)
            return write_columns_avx512<DType::f16>(acc, cols, bias, out, stride, stream);
        return write_columns_avx512<DType::f32>(acc, cols, bias, out, stride, stream);
    }
#endif
    const detail::StorageCopy round =
        storage == DType::f32 ? nullptr : detail::storage_copy(storage);
    for (dim_t j = 0; j < cols; ++j) {
        float v[16];
        for (dim_t i = 0; i < 16; ++i) v[i] = bias ? acc[i * 16 + j] + bias[j] : acc[i * 16 + j];
        if (round)
            round(v, out + j * stride, 16);
        else
            std::memcpy(out + j * stride, v, sizeof v);
    }
}

void fractal_product(dim_t kr, dim_t w, dim_t rows, const float* a, dim_t a_step, const float* b,
                     dim_t b_step, dim_t ldb, float* c, dim_t ldc, bool acc) {
    product(kr, w, rows, Strided{a, a_step, b, b_step}, ldb, c, ldc, acc);
}

void fractal_product2(dim_t kr, dim_t rows, const float* a, dim_t a_step, const float* b,
                      dim_t b_step, dim_t b_next, float* c, dim_t c_next, bool acc, dim_t ldc) {
    product2(kr, rows, Strided{a, a_step, b, b_step}, b_next, c, c_next, acc, ldc);
}

void fractal_product_list(dim_t kr, dim_t rows, const float* const* a, const dim_t* idx,
                          const float* b, dim_t b_step, float* c, bool acc) {
    product(kr, kN0, rows, Listed{a, idx, b, b_step}, kN0, c, kN0, acc);
}

void fractal_product2_list(dim_t kr, dim_t rows, const float* const* a, const dim_t* idx,
                           const float* b, dim_t b_step, dim_t b_next, float* c, dim_t c_next,
                           bool acc) {
    product2(kr, rows, Listed{a, idx, b, b_step}, b_next, c, c_next, acc, kN0);
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
