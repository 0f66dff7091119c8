// Internal: bf16_of_bits (round to nearest even, NaN made quiet) on 8 and 16 lanes, shared by the
// conversions of core/bf16.cpp and the activation pack's rounding in registers
// (maps/davinci_pack_simd.cpp), so that both give round_storage's bits.
#pragma once

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

}  // namespace convlab::detail
#endif
