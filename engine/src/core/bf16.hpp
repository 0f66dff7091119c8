// Internal: fp32 -> bf16 conversions of whole buffers, vectorised and chosen at run time, each
// equal bit for bit to float_to_bf16 (and bf16_to_float after it) on every element, NaN,
// infinities and denormals included.
#pragma once

#include <cstdint>

#include "../gemm/x86.hpp"
#include "bit_cast.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::detail {

// The bf16 bits of the fp32 bits x, float_to_bf16's rule: round to nearest even on the upper
// half (an integer add of 0x7fff plus the kept half's lowest bit, so ties go to even and the
// largest finite values round to infinity); a NaN keeps its sign and upper payload and is made
// quiet (bit 6), so that no rounding carry turns it into an infinity.
inline std::uint16_t bf16_of_bits(std::uint32_t x) {
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<std::uint16_t>(x >> 16);
}

#if CONVLAB_X86
inline bool cpu_has_avx512_bf16() {
    static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f") &&
                                                       __builtin_cpu_supports("avx512bf16"));
    return has;
}
#endif

// The code paths of the conversions, lowest first: portable (bf16_of_bits per element), AVX2 and
// AVX-512F (the same integer rule on 8 / 16 lanes), AVX512_BF16 (vcvtneps2bf16, whose rounding
// is the rule's; the denormal inputs it flushes to zero take the integer rule instead).
enum class Bf16Path { portable = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3 };

// The path the conversions take: the level of the selected ISA (selected_isa(), capped by
// CONVLAB_ISA), with AVX512_BF16 under AVX-512 where the CPU has it.
Bf16Path bf16_path();
// Whether path runs on this CPU (portable everywhere).
bool bf16_path_runs(Bf16Path path);
// "portable", "avx2", "avx512" or "avx512_bf16".
const char* bf16_path_name(Bf16Path path);

// dst[i] = float_to_bf16(src[i]) for i < n, on bf16_path() or on path (Error where it does not
// run).
void to_bf16(const float* src, std::uint16_t* dst, dim_t n);
void to_bf16(const float* src, std::uint16_t* dst, dim_t n, Bf16Path path);
// dst[i] = bf16_to_float(float_to_bf16(src[i])) for i < n: src rounded to bf16 and widened back
// (the bf16 bits shifted to the upper half); dst may be src. Split between the OpenMP threads
// for large n outside a parallel region.
void round_bf16(const float* src, float* dst, dim_t n);
void round_bf16(const float* src, float* dst, dim_t n, Bf16Path path);
// dst[i] = half_to_float(float_to_half(src[i])) for i < n, the same way: vcvtps2ph and back on
// 16 lanes where the path is avx512 or avx512_bf16, on 8 on the avx2 path where the CPU has F16C,
// else element by element.
void round_f16(const float* src, float* dst, dim_t n);
void round_f16(const float* src, float* dst, dim_t n, Bf16Path path);
// v[i] rounded to the storage type t and widened back to fp32 in place, for i < n (f32: as is):
// what the DaVinci algorithms hold in fp16 or bf16 storage, computed on fp32 buffers.
void round_storage(DType t, float* v, dim_t n);

// A copy that rounds: dst[i] = src[i] rounded to a storage type and widened back, for i < n,
// the bits round_storage gives (f32: a plain copy); src and dst do not overlap. The packs call
// it on each run of elements that they move, so that a packed buffer is rounded as it is
// written instead of in a second pass over it.
using StorageCopy = void (*)(const float* src, float* dst, dim_t n);
// The copy for storage type t, on bf16_path() as it is at this call (a pack takes it once).
StorageCopy storage_copy(DType t);

}  // namespace convlab::detail
