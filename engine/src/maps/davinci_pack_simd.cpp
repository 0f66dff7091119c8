// The activation pack's and unpack's vector runs (davinci_pack_simd.hpp): C0 channel rows of a
// step of positions are loaded straight from NCHW, transposed in registers and stored as whole
// position rows of C0 lanes (and back), so that both sides move in full vectors and no tile is
// written in between. The AVX-512 pack transposes 16 x 16 (C0 16); the AVX2 runs transpose
// 8 x 8 (C0 16 as two halves, C0 8) and 4 x 8 (C0 4). A partial last step goes through masked
// loads (AVX-512) or zero-padded copies (AVX2).
#include "davinci_pack_simd.hpp"

#include <algorithm>
#include <cstring>

#include "../core/bf16_simd.hpp"
#include "../gemm/transpose16.hpp"
#include "../gemm/x86.hpp"

#if CONVLAB_X86
#include <immintrin.h>
#endif

namespace convlab::davinci::internal {

namespace {

#if CONVLAB_X86

// [SECTION] AVX2

// Compiled for AVX2 with F16C, whose conversions only the fp16 runs use: pack_run hands those out
// where the CPU has F16C, the others wherever it has AVX2.

// float_to_bf16's rule on 8 lanes, widened back (detail::bf16_of_bits: nearest even by an
// integer add; a NaN made quiet instead), so that the bits are those of detail::round_storage on
// every path of the conversions.
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 bf16_avx2(__m256 v) {
    return _mm256_castsi256_ps(_mm256_and_si256(detail::rounded_avx2(_mm256_castps_si256(v)),
                                                _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

// v rounded to the storage type kT and widened back (f32: as is).
template <DType kT>
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 stored_avx2(__m256 v) {
    if constexpr (kT == DType::bf16)
        return bf16_avx2(v);
    else if constexpr (kT == DType::f16)
        return detail::f16_avx2(v);
    else
        return v;
}

// r[i] (8 rows of 8) transposed in place: r[j] holds element j of every row.
__attribute__((target("avx2,f16c"), always_inline)) inline void transpose8(__m256* r) {
    __m256 t[8], s[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // s[4h + c] holds, in 128-bit lane l, element 4l + c of rows 4h..4h+3.
    for (int h = 0; h < 2; ++h) {
        s[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
        s[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xee);
        s[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        s[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xee);
    }
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
}

// The 4 x 4 transposes of each 128-bit lane of r[0..3]: element c of lane l of r[i] moves to
// element i of lane l of r[c].
__attribute__((target("avx2,f16c"), always_inline)) inline void transpose4x2(__m256* r) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    r[0] = _mm256_shuffle_ps(t0, t2, 0x44);
    r[1] = _mm256_shuffle_ps(t0, t2, 0xee);
    r[2] = _mm256_shuffle_ps(t1, t3, 0x44);
    r[3] = _mm256_shuffle_ps(t1, t3, 0xee);
}

// Rows first + c (c < kRows) of 8 positions at src + (first + c) * stride, zeros for the rows
// >= valid, rounded to the storage type kT, into r[0..kRows).
template <int kRows, DType kT>
__attribute__((target("avx2,f16c"), always_inline)) inline void load_rows8(const float* src,
                                                                           dim_t stride,
                                                                           dim_t first, dim_t valid,
                                                                           __m256* r) {
    for (int c = 0; c < kRows; ++c) {
        r[c] =
            first + c < valid ? _mm256_loadu_ps(src + (first + c) * stride) : _mm256_setzero_ps();
        r[c] = stored_avx2<kT>(r[c]);
    }
}

// One step of 8 positions, C0 = 16: channels 0-7 and 8-15 as two 8 x 8 transposes, each giving
// one half of the 8 position rows.
template <DType kT>
__attribute__((target("avx2,f16c"), always_inline)) inline void pack16_step(const float* src,
                                                                            dim_t stride,
                                                                            dim_t valid,
                                                                            float* out) {
    for (int h = 0; h < 2; ++h) {
        __m256 r[8];
        load_rows8<8, kT>(src, stride, h * 8, valid, r);
        transpose8(r);
        for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + j * 16 + h * 8, r[j]);
    }
}

template <DType kT>
__attribute__((target("avx2,f16c"), always_inline)) inline void pack8_step(const float* src,
                                                                           dim_t stride,
                                                                           dim_t valid,
                                                                           float* out) {
    __m256 r[8];
    load_rows8<8, kT>(src, stride, 0, valid, r);
    transpose8(r);
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + j * 8, r[j]);
}

// C0 = 4: 4 rows of 8 positions; after the lane transposes r[c] holds positions c and 4 + c,
// which the lane permutes put in position order, two positions per vector.
template <DType kT>
__attribute__((target("avx2,f16c"), always_inline)) inline void pack4_step(const float* src,
                                                                           dim_t stride,
                                                                           dim_t valid,
                                                                           float* out) {
    __m256 r[4];
    load_rows8<4, kT>(src, stride, 0, valid, r);
    transpose4x2(r);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(r[0], r[1], 0x20));
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(r[2], r[3], 0x20));
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(r[0], r[1], 0x31));
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(r[2], r[3], 0x31));
}

template <int kC0, DType kT>
__attribute__((target("avx2,f16c"), always_inline)) inline void pack_step(const float* src,
                                                                          dim_t stride, dim_t valid,
                                                                          float* out) {
    if constexpr (kC0 == 16)
        pack16_step<kT>(src, stride, valid, out);
    else if constexpr (kC0 == 8)
        pack8_step<kT>(src, stride, valid, out);
    else
        pack4_step<kT>(src, stride, valid, out);
}

// The AVX2 pack runs: whole steps of 8 positions, then the last partial step from zero-padded
// copies of its rows into a scratch block of which the first positions are kept.
template <int kC0, DType kT>
__attribute__((target("avx2,f16c"))) void pack_avx2(const float* src, dim_t stride, dim_t valid,
                                                    dim_t len, float* out) {
    dim_t i = 0;
    for (; i + 8 <= len; i += 8) pack_step<kC0, kT>(src + i, stride, valid, out + i * kC0);
    if (i == len) return;
    const dim_t m = len - i;
    float rows[kC0 * 8] = {}, block[8 * kC0];
    for (dim_t c = 0; c < valid; ++c)
        std::memcpy(rows + c * 8, src + c * stride + i,
                    static_cast<std::size_t>(m) * sizeof(float));
    pack_step<kC0, kT>(rows, 8, valid, block);
    std::memcpy(out + i * kC0, block, static_cast<std::size_t>(m * kC0) * sizeof(float));
}

// Unpack steps: 8 position rows of C0 lanes at in -> channels ci < valid, 8 positions each.
__attribute__((target("avx2,f16c"), always_inline)) inline void unpack16_step(const float* in,
                                                                              dim_t valid,
                                                                              float* dst,
                                                                              dim_t stride) {
    for (int h = 0; h < 2 && h * 8 < valid; ++h) {
        __m256 r[8];
        for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(in + j * 16 + h * 8);
        transpose8(r);
        for (int c = 0; c < 8 && h * 8 + c < valid; ++c)
            _mm256_storeu_ps(dst + (h * 8 + c) * stride, r[c]);
    }
}

__attribute__((target("avx2,f16c"), always_inline)) inline void unpack8_step(const float* in,
                                                                             dim_t valid,
                                                                             float* dst,
                                                                             dim_t stride) {
    __m256 r[8];
    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(in + j * 8);
    transpose8(r);
    for (int c = 0; c < 8 && c < valid; ++c) _mm256_storeu_ps(dst + c * stride, r[c]);
}

// C0 = 4: the 4 vectors of two positions each are permuted to hold positions (c, 4 + c), so that
// the lane transposes give each channel's 8 positions in order.
__attribute__((target("avx2,f16c"), always_inline)) inline void unpack4_step(const float* in,
                                                                             dim_t valid,
                                                                             float* dst,
                                                                             dim_t stride) {
    const __m256 p01 = _mm256_loadu_ps(in), p23 = _mm256_loadu_ps(in + 8);
    const __m256 p45 = _mm256_loadu_ps(in + 16), p67 = _mm256_loadu_ps(in + 24);
    __m256 r[4] = {_mm256_permute2f128_ps(p01, p45, 0x20), _mm256_permute2f128_ps(p01, p45, 0x31),
                   _mm256_permute2f128_ps(p23, p67, 0x20), _mm256_permute2f128_ps(p23, p67, 0x31)};
    transpose4x2(r);
    for (int c = 0; c < 4 && c < valid; ++c) _mm256_storeu_ps(dst + c * stride, r[c]);
}

template <int kC0>
__attribute__((target("avx2,f16c"), always_inline)) inline void unpack_step(const float* in,
                                                                            dim_t valid, float* dst,
                                                                            dim_t stride) {
    if constexpr (kC0 == 16)
        unpack16_step(in, valid, dst, stride);
    else if constexpr (kC0 == 8)
        unpack8_step(in, valid, dst, stride);
    else
        unpack4_step(in, valid, dst, stride);
}

template <int kC0>
__attribute__((target("avx2,f16c"))) void unpack_avx2(const float* in, dim_t valid, dim_t len,
                                                      float* dst, dim_t stride) {
    dim_t i = 0;
    for (; i + 8 <= len; i += 8) unpack_step<kC0>(in + i * kC0, valid, dst + i, stride);
    if (i == len) return;
    const dim_t m = len - i;
    float block[8 * kC0] = {}, rows[kC0 * 8];
    std::memcpy(block, in + i * kC0, static_cast<std::size_t>(m * kC0) * sizeof(float));
    unpack_step<kC0>(block, valid, rows, 8);
    for (dim_t c = 0; c < valid; ++c)
        std::memcpy(dst + c * stride + i, rows + c * 8,
                    static_cast<std::size_t>(m) * sizeof(float));
}

// [SECTION] AVX-512

// The lanes below m (m <= 16).
__attribute__((target("avx512f"), always_inline)) inline __mmask16 first_lanes(dim_t m) {
    return static_cast<__mmask16>((1u << m) - 1u);
}

// C0 = 16, 16 positions a step; a partial last step by masked loads, its rows stored alone. The
// channels past valid load nothing (an empty mask, their address clamped to a valid row): zero
// lanes.
template <DType kT>
__attribute__((target("avx512f"))) void pack16_avx512(const float* src, dim_t stride, dim_t valid,
                                                      dim_t len, float* out) {
    for (dim_t i = 0; i < len; i += 16) {
        const dim_t m = std::min<dim_t>(16, len - i);
        const __mmask16 k = first_lanes(m);
        __m512 r[16];
        for (int c = 0; c < 16; ++c) {
            const bool in = c < valid;
            r[c] = _mm512_maskz_loadu_ps(in ? k : 0, src + (in ? c : 0) * stride + i);
            r[c] = detail::stored_avx512<kT>(r[c]);
        }
        detail::transpose16(r);
        float* o = out + i * 16;
        if (m == 16)
            for (int j = 0; j < 16; ++j) _mm512_storeu_ps(o + j * 16, r[j]);
        else
            for (int j = 0; j < m; ++j) _mm512_storeu_ps(o + j * 16, r[j]);
    }
}

#endif

}  // namespace

#if CONVLAB_X86
namespace {

template <DType kT>
PackRun pack_run_for(dim_t c0) {
    const convlab::detail::Isa isa = convlab::detail::selected_isa();
    if (isa == convlab::detail::Isa::portable || !convlab::detail::cpu_has_avx2_fma() ||
        (kT == DType::f16 && !convlab::detail::cpu_has_f16c()))
        return nullptr;
    if (isa == convlab::detail::Isa::avx512 && c0 == 16) return pack16_avx512<kT>;
    switch (c0) {
        case 16:
            return pack_avx2<16, kT>;
        case 8:
            return pack_avx2<8, kT>;
        case 4:
            return pack_avx2<4, kT>;
        default:
            return nullptr;
    }
}

}  // namespace
#endif

PackRun pack_run(dim_t c0, DType storage) {
#if CONVLAB_X86
    switch (storage) {
        case DType::f32:
            return pack_run_for<DType::f32>(c0);
        case DType::bf16:
            return pack_run_for<DType::bf16>(c0);
        case DType::f16:
            return pack_run_for<DType::f16>(c0);
    }
#else
    (void)c0;
    (void)storage;
#endif
    return nullptr;
}

UnpackRun unpack_run(dim_t c0) {
#if CONVLAB_X86
    // The AVX2 runs under AVX-512 too: its 16-lane transpose unpacked no faster on aligned rows
    // and 10-20% slower on rows off 64 bytes (every store split across two cache lines).
    const convlab::detail::Isa isa = convlab::detail::selected_isa();
    if (isa != convlab::detail::Isa::portable && convlab::detail::cpu_has_avx2_fma()) switch (c0) {
            case 16:
                return unpack_avx2<16>;
            case 8:
                return unpack_avx2<8>;
            case 4:
                return unpack_avx2<4>;
            default:
                break;
        }
#else
    (void)c0;
#endif
    return nullptr;
}

}  // namespace convlab::davinci::internal
