// fp32 -> bf16 conversions of whole buffers (bf16.hpp). The vector code is compiled per function
// for its ISA (target attributes) and chosen at run time, as the GEMM core's is; each path does
// its whole vectors and leaves the tail (fewer than a vector's elements) to the portable loop.
#include "bf16.hpp"

#include "omp_compat.hpp"

#include "bf16_simd.hpp"

#include <algorithm>
#include <string>

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::detail {

namespace {

void to_bf16_portable(const float* src, std::uint16_t* dst, dim_t n) {
    for (dim_t i = 0; i < n; ++i) dst[i] = bf16_of_bits(bit_cast<std::uint32_t>(src[i]));
}

void round_portable(const float* src, float* dst, dim_t n) {
    for (dim_t i = 0; i < n; ++i) {
        const std::uint32_t b = bf16_of_bits(bit_cast<std::uint32_t>(src[i]));
        dst[i] = bit_cast<float>(b << 16);
    }
}

#if CONVLAB_X86

__attribute__((target("avx2"))) dim_t to_bf16_avx2(const float* src, std::uint16_t* dst, dim_t n) {
    dim_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i lo = _mm256_srli_epi32(
            rounded_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))), 16);
        const __m256i hi = _mm256_srli_epi32(
            rounded_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8))), 16);
        // packus works within 128-bit halves (lo0 hi0 lo1 hi1): put the quarters in order.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
    }
    return i;
}

__attribute__((target("avx2"))) dim_t round_avx2(const float* src, float* dst, dim_t n) {
    const __m256i upper = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    dim_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm256_and_si256(rounded_avx2(x), upper));
    }
    return i;
}

// The 16 bf16 of rounded_avx512(x).
__attribute__((target("avx512f"), always_inline)) inline __m256i narrowed_avx512(__m512i x) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded_avx512(x), 16));
}

__attribute__((target("avx512f"))) dim_t to_bf16_avx512(const float* src, std::uint16_t* dst,
                                                        dim_t n) {
    dim_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            narrowed_avx512(_mm512_loadu_si512(src + i)));
    return i;
}

__attribute__((target("avx512f"))) dim_t round_avx512(const float* src, float* dst, dim_t n) {
    const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    dim_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_si512(dst + i,
                            _mm512_and_si512(rounded_avx512(_mm512_loadu_si512(src + i)), upper));
    return i;
}

// The lanes of x that hold a denormal (exponent 0, mantissa not 0; zeros excluded, which are
// most of a ReLU's output): vcvtneps2bf16 flushes those to zero, the rule rounds them.
__attribute__((target("avx512f"), always_inline)) inline __mmask16 denormals(__m512i x) {
    const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(abs, _mm512_set1_epi32(1)),
                                   _mm512_set1_epi32(0x7fffff));
}

// vcvtne2ps2bf16 on 32 elements at a time; the integer rule for any 32 with a denormal.
__attribute__((target("avx512f,avx512bf16"))) dim_t to_bf16_native(const float* src,
                                                                   std::uint16_t* dst, dim_t n) {
    dim_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 lo = _mm512_loadu_ps(src + i), hi = _mm512_loadu_ps(src + i + 16);
        const __m512i xl = _mm512_castps_si512(lo), xh = _mm512_castps_si512(hi);
        // The instruction puts its second operand's 16 in the lower half.
        __m512i r = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
        if (denormals(xl) | denormals(xh))
            r = _mm512_inserti64x4(_mm512_castsi256_si512(narrowed_avx512(xl)), narrowed_avx512(xh),
                                   1);
        _mm512_storeu_si512(dst + i, r);
    }
    return i;
}

// vcvtneps2bf16, then the 16 bf16 widened by a shift to the upper half of their lanes.
__attribute__((target("avx512f,avx512bf16"))) dim_t round_native(const float* src, float* dst,
                                                                 dim_t n) {
    const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    dim_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_loadu_ps(src + i);
        const __m512i xi = _mm512_castps_si512(x);
        const __m256i b = (__m256i)_mm512_cvtneps_pbh(x);
        __m512i r = _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
        if (const __mmask16 d = denormals(xi))
            r = _mm512_mask_and_epi32(r, d, rounded_avx512(xi), upper);
        _mm512_storeu_si512(dst + i, r);
    }
    return i;
}

// fp16's round trip on 8 lanes (f16_avx2: vcvtps2ph and back, float_to_half's bits), where the
// CPU has F16C.
__attribute__((target("avx2,f16c"))) dim_t round_f16_avx2(const float* src, float* dst, dim_t n) {
    dim_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, f16_avx2(_mm256_loadu_ps(src + i)));
    return i;
}

// fp16's round trip on 16 lanes (f16_avx512, as f16_avx2).
__attribute__((target("avx512f"))) dim_t round_f16_avx512(const float* src, float* dst, dim_t n) {
    dim_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, f16_avx512(_mm512_loadu_ps(src + i)));
    return i;
}

#endif

void round_f16_portable(const float* src, float* dst, dim_t n) {
    for (dim_t i = 0; i < n; ++i) dst[i] = half_to_float(float_to_half(src[i]));
}

// A vector loop over whole vectors (returning how many elements it did), and the element by
// element loop that finishes its tail.
using VectorRound = dim_t (*)(const float* src, float* dst, dim_t n);

dim_t no_vectors(const float*, float*, dim_t) {
    return 0;
}

// storage_copy's copies: kVector's whole vectors, then kTail on the rest.
template <VectorRound kVector, StorageCopy kTail>
void copy_by(const float* src, float* dst, dim_t n) {
    const dim_t i = kVector(src, dst, n);
    kTail(src + i, dst + i, n - i);
}

void copy_f32(const float* src, float* dst, dim_t n) {
    std::copy(src, src + n, dst);
}

// The vector loop of storage type t (bf16 or f16) on path.
VectorRound vector_round(DType t, Bf16Path path) {
#if CONVLAB_X86
    if (t == DType::f16) {
        if (path >= Bf16Path::avx512) return round_f16_avx512;
        return path == Bf16Path::avx2 && cpu_has_f16c() ? round_f16_avx2 : no_vectors;
    }
    switch (path) {
        case Bf16Path::avx512_bf16:
            return round_native;
        case Bf16Path::avx512:
            return round_avx512;
        case Bf16Path::avx2:
            return round_avx2;
        case Bf16Path::portable:
            break;
    }
#else
    (void)t;
    (void)path;
#endif
    return no_vectors;
}

void check_runs(const char* what, Bf16Path path) {
    if (!bf16_path_runs(path))
        throw Error(std::string(what) + ": the " + bf16_path_name(path) +
                    " path does not run on this CPU");
}

// Elements of a block of round_blocks' parallel loop: 64 KB, a thousand AVX-512 vectors.
constexpr dim_t kBlock = 16384;

}  // namespace

Bf16Path bf16_path() {
#if CONVLAB_X86
    switch (selected_isa()) {
        case Isa::avx512:
            return cpu_has_avx512_bf16() ? Bf16Path::avx512_bf16 : Bf16Path::avx512;
        case Isa::avx2:
            return Bf16Path::avx2;
        case Isa::portable:
            break;
    }
#endif
    return Bf16Path::portable;
}

bool bf16_path_runs(Bf16Path path) {
#if CONVLAB_X86
    switch (path) {
        case Bf16Path::portable:
            return true;
        case Bf16Path::avx2:
            return cpu_has_avx2_fma();
        case Bf16Path::avx512:
            return cpu_has_avx512f();
        case Bf16Path::avx512_bf16:
            return cpu_has_avx512_bf16();
    }
    return false;
#else
    return path == Bf16Path::portable;
#endif
}

const char* bf16_path_name(Bf16Path path) {
    switch (path) {
        case Bf16Path::portable:
            return "portable";
        case Bf16Path::avx2:
            return "avx2";
        case Bf16Path::avx512:
            return "avx512";
        case Bf16Path::avx512_bf16:
            return "avx512_bf16";
    }
    return "?";
}

void to_bf16(const float* src, std::uint16_t* dst, dim_t n) {
    to_bf16(src, dst, n, bf16_path());
}

void to_bf16(const float* src, std::uint16_t* dst, dim_t n, Bf16Path path) {
    check_runs("to_bf16", path);
    dim_t i = 0;
#if CONVLAB_X86
    switch (path) {
        case Bf16Path::avx512_bf16:
            i = to_bf16_native(src, dst, n);
            break;
        case Bf16Path::avx512:
            i = to_bf16_avx512(src, dst, n);
            break;
        case Bf16Path::avx2:
            i = to_bf16_avx2(src, dst, n);
            break;
        case Bf16Path::portable:
            break;
    }
#endif
    to_bf16_portable(src + i, dst + i, n - i);
}

void round_bf16(const float* src, float* dst, dim_t n) {
    round_bf16(src, dst, n, bf16_path());
}

namespace {
// dst = src rounded to t and widened back, in blocks split between the threads for large n.
void round_blocks(DType t, const float* src, float* dst, dim_t n, Bf16Path path) {
    const VectorRound vector = vector_round(t, path);
    const StorageCopy tail = t == DType::f16 ? round_f16_portable : round_portable;
    const dim_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 4 && !omp_in_parallel())
    for (dim_t b = 0; b < blocks; ++b) {
        const dim_t i0 = b * kBlock, m = std::min(kBlock, n - i0);
        const dim_t i = vector(src + i0, dst + i0, m);
        tail(src + i0 + i, dst + i0 + i, m - i);
    }
}
}  // namespace

void round_bf16(const float* src, float* dst, dim_t n, Bf16Path path) {
    check_runs("round_bf16", path);
    round_blocks(DType::bf16, src, dst, n, path);
}

void round_f16(const float* src, float* dst, dim_t n) {
    round_f16(src, dst, n, bf16_path());
}

void round_f16(const float* src, float* dst, dim_t n, Bf16Path path) {
    check_runs("round_f16", path);
    round_blocks(DType::f16, src, dst, n, path);
}

void round_storage(DType t, float* v, dim_t n) {
    if (t == DType::bf16)
        round_bf16(v, v, n);
    else if (t == DType::f16)
        round_f16(v, v, n);
}

StorageCopy storage_copy(DType t) {
    if (t == DType::f32) return copy_f32;
    const VectorRound vector = vector_round(t, bf16_path());
#if CONVLAB_X86
    if (vector == round_f16_avx512) return copy_by<round_f16_avx512, round_f16_portable>;
    if (vector == round_f16_avx2) return copy_by<round_f16_avx2, round_f16_portable>;
    if (vector == round_native) return copy_by<round_native, round_portable>;
    if (vector == round_avx512) return copy_by<round_avx512, round_portable>;
    if (vector == round_avx2) return copy_by<round_avx2, round_portable>;
#endif
    (void)vector;
    return t == DType::f16 ? round_f16_portable : round_portable;
}

}  // namespace convlab::detail
