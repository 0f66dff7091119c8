// Internal: bf16_of_bits (round to nearest even, NaN made quiet) on 8 and 16 lanes, fp16's round
// trip on 8 and 16, and the rounding to a storage type on 16 lanes, shared by the conversions of
// core/bf16.cpp, the activation pack's rounding in registers (maps/davinci_pack_simd.cpp) and the
// fractal forward's tile writes (conv/fractal_kernel.cpp), so that all give round_storage's bits.
#pragma once

#include "convlab/tensor.hpp"
#include "x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>

namespace convlab::detail {

// bf16_of_bits on 8 lanes, the bf16 bits in the upper half of each lane (the lower half is left
// over from the rounding add: the callers shift or mask it away).
__attribute__((target("avx2"), always_inline)) inline __m256i rounded_avx2(__m256i x) {
    const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    return _mm256_blendv_epi8(r, _mm256_or_si256(x, _mm256_set1_epi32(0x400000)), nan);
}

// bf16_of_bits on 16 lanes, as rounded_avx2.
__attribute__((target("avx512f"), always_inline)) inline __m512i rounded_avx512(__m512i x) {
    const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f800000));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    return _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x400000));
}

// v rounded to bf16 and widened back (the lower half cleared): detail::round_storage's bits.
__attribute__((target("avx512f"), always_inline)) inline __m512 bf16_avx512(__m512 v) {
    return _mm512_castsi512_ps(_mm512_and_si512(rounded_avx512(_mm512_castps_si512(v)),
                                                _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// float_to_half's rule on 8 lanes, widened back (half_to_float after it): vcvtps2ph rounds to
// nearest even with subnormals, infinities and overflow as the rule does; a NaN, whose payload
// the instruction keeps and the rule drops, becomes the rule's quiet NaN of the same sign. Only
// where the CPU has F16C (cpu_has_f16c).
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 f16_avx2(__m256 v) {
    const __m256 h = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    const __m256 quiet = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)),
                                      _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)));
    return _mm256_blendv_ps(h, quiet, nan);
}

// v rounded to fp16 and widened back: vcvtps2ph rounds to nearest even with subnormals,
// infinities and overflow as float_to_half does; a NaN, whose payload the instruction keeps and
// the rule drops, becomes the rule's quiet NaN of the same sign.
__attribute__((target("avx512f"), always_inline)) inline __m512 f16_avx512(__m512 v) {
    const __m512 h = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i quiet = _mm512_or_si512(
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u))),
        _mm512_set1_epi32(0x7fc00000));
    return _mm512_mask_mov_ps(h, nan, _mm512_castsi512_ps(quiet));
}

// v rounded to the storage type kT and widened back (f32: as is).
template <DType kT>
__attribute__((target("avx512f"), always_inline)) inline __m512 stored_avx512(__m512 v) {
    if constexpr (kT == DType::bf16)
        return bf16_avx512(v);
    else if constexpr (kT == DType::f16)
        return f16_avx512(v);
    else
        return v;
}

}  // namespace convlab::detail
#endif
