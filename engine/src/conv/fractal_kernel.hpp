// Internal: the fractal product, the CPU's analogue of the DaVinci cube unit, as a register-blocked
// microkernel chosen at run time (AVX-512, AVX2+FMA or portable, following the GEMM core's
// selection, so CONVLAB_ISA caps it too).
#pragma once

#include <cstdint>
#include <span>

#include "../gemm/microkernel.hpp"
#include "convlab/davinci.hpp"
#include "convlab/problem.hpp"

namespace convlab::davinci {

// c (16 x w, leading dim ldc) = (acc ? c : 0) + sum over r < rows of A_r * B_r, with
// A_r = a + r * a_step a row-major 16 x kr fractal (a_r[i*kr + k]) and B_r = b + r * b_step a
// kr x w block whose rows are ldb floats apart (b_r[k*ldb + j]). Forward: kr = C0, w = 16 (A the
// column fractals, B the weight fractals turned C0 x 16); weight gradient: kr = 16 positions,
// w = C0 (A the dY fractals, B the input's). Every kr and w is computed; kr of 4, 8, 16 or 32 with
// w a multiple of 16 by the vector kernels.
void fractal_product(dim_t kr, dim_t w, dim_t rows, const float* a, dim_t a_step, const float* b,
                     dim_t b_step, dim_t ldb, float* c, dim_t ldc, bool acc);

// Two 16 x 16 tiles of one A: fractal_product(kr, 16, rows, a, a_step, b, b_step, 16, c, 16,
// acc) and the same with b + b_next and c + c_next, in one pass over A (the same bits).
void fractal_product2(dim_t kr, dim_t rows, const float* a, dim_t a_step, const float* b,
                      dim_t b_step, dim_t b_next, float* c, dim_t c_next, bool acc);

// pack_weight_kernel with every fractal turned C0 x 16 (the B operand of the forward's fractal
// products), in one pass: dst[((r*N1 + nb)*C0 + k)*16 + j] = W(nb*16 + j, c1*C0 + k, tap) for
// FRACTAL_Z row r = row(kd, c1, kh, kw), 0 for output channels past O and lanes past I.
// dims (O, I, kernel...); dst weight_physical(dims, c0).size() floats.
void pack_weight_transposed(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst);

// conv_fractal with B given as pack_weight_transposed's (bt, wfz unused) or, bt null, made from
// wfz (span transpose_b).
void conv_fractal_bt(const Problem& p, dim_t c0, const float* x5d, const float* wfz,
                     const float* bt, const float* bias, float* y5d, Profiler* prof);

// [SECTION] bf16 operands (vdpbf16ps)

// Whether fractal_product_bf16 runs for a reduction of kr per fractal row: the CPU has
// AVX512_BF16, AVX-512 is the selected ISA (CONVLAB_ISA=avx2 or portable turn it off, leaving the
// fp32 products of rounded operands) and kr is 4, 8, 16 or 32 (pairs of bf16 per 32-bit lane).
bool fractal_bf16_native(dim_t kr);
// The ISA of the bf16 products for kr: "avx512_bf16" where fractal_bf16_native(kr), else
// fractal_isa()'s (fp32 products of bf16-rounded operands).
const char* fractal_bf16_isa(dim_t kr);
// c (16 x 16, leading dim ldc) = (acc ? c : 0) + sum over r < rows of A_r * B_r in fp32, with
// A_r = a + r * a_step a row-major 16 x kr bf16 fractal and B_r = b + r * b_step kr x 16 bf16 in
// pairs along k: B(k, j) = b_r[(k/2)*32 + 2*j + k%2] (the layout vdpbf16ps multiplies). Only where
// fractal_bf16_native(kr). Each step adds two exact products to the fp32 sum (denormal inputs
// and results flushed to zero by the instruction).
void fractal_product_bf16(dim_t kr, dim_t rows, const std::uint16_t* a, dim_t a_step,
                          const std::uint16_t* b, dim_t b_step, float* c, dim_t ldc, bool acc);
// Two tiles of one A, as fractal_product2 (ld 16); fractal_bf16_native(kr) only.
void fractal_product2_bf16(dim_t kr, dim_t rows, const std::uint16_t* a, dim_t a_step,
                           const std::uint16_t* b, dim_t b_step, dim_t b_next, float* c,
                           dim_t c_next, bool acc);
// dst[i] = the bf16 bits of src[i], which must be bf16 values already (rounded): their upper half.
void bf16_bits(const float* src, std::uint16_t* dst, dim_t n);

// B of conv_fractal_b: C0 x 16 fp32 fractals (pack_weight_transposed's layout), or bf16 pairs
// (pack_weight_pairs's; then A is turned to bf16 a block at a time and fractal_product_bf16 runs).
struct FractalB {
    const float* f32 = nullptr;
    const std::uint16_t* bf16 = nullptr;
};
void conv_fractal_b(const Problem& p, dim_t c0, const float* x5d, FractalB b, const float* bias,
                    float* y5d, Profiler* prof);

// [SECTION] B operands packed from OIHW in one pass (fractal_pack.cpp)

// pack_weight_transposed's layout in bf16 pairs along the input channels:
// dst[(r*N1 + nb)*16*C0 + (k/2)*32 + 2*j + k%2] = bf16(W(nb*16 + j, c1*C0 + k, tap)), rounded to
// nearest even, 0 for padding. c0 even.
void pack_weight_pairs(std::span<const dim_t> dims, dim_t c0, const float* src, std::uint16_t* dst);
// Backward data's B for one group: FRACTAL_Z of FlipRot(W) (fliprot_fz_kernel's result) with
// every fractal turned C0 x 16 (transpose_b's), in one pass from the group's weights
// wei (K/G, C/G, k...) of p1 = the group's problem (groups 1). dst: WeiGeom::of((C/G, K/G, k...),
// c0).size() floats: dst[((r*N1 + nb)*C0 + k)*16 + j] = W(kc1*C0 + k, nb*16 + j, flipped tap).
void pack_weight_fliprot_transposed(const Problem& p1, dim_t c0, const float* wei, float* dst);
// The same in bf16 pairs (pack_weight_pairs's layout). c0 even.
void pack_weight_fliprot_pairs(const Problem& p1, dim_t c0, const float* wei, std::uint16_t* dst);
// Floats of the prepared layout of pass (fwd: pack_weight_transposed of each group, bwd_data:
// pack_weight_fliprot_transposed of each group, groups one after another; C0 = 16).
dim_t prepared_fractal_size(const Problem& p, Pass pass);

// Floats of the buffers of backward_weight_fractal_fz for p (fractal_weight.cpp).
dim_t fractal_weight_work(const Problem& p, dim_t c0);

// The DaVinci algorithms' buffers live in the calling thread's scratch slots (detail::scratch),
// kept between calls: a fresh buffer of megabytes costs a page fault per 4 KiB on every call,
// which on a virtual machine took longer than the products themselves. These algorithms run no
// GEMM core, so the slots are theirs during a call: conv_fractal uses kFracColSlot and kFracAccSlot
// (each thread's column block and its tiles) and kFracBtSlot, the NCHW-level calls kFracSlot[i].
inline constexpr int kFracColSlot = 3;
inline constexpr int kFracAccSlot = 0;
inline constexpr int kFracBtSlot = 13;
inline constexpr int kFracSlot[] = {4, 5, 6, 7, 9, 10, 11};
struct Kept {
    float* p;
    float* get() const { return p; }
};
inline Kept kept(int slot, dim_t floats) {
    return {detail::scratch(slot, static_cast<std::size_t>(floats))};
}
// Sizes slot `slot` of each of `threads` threads to `floats` before a parallel region uses it
// (an allocation failing inside the region would end the program); Error when it does not fit.
void reserve_thread_scratch(int slot, dim_t floats, int threads);

// The ISA of the kernels fractal_product runs ("avx512", "avx2" or "portable").
const char* fractal_isa();

}  // namespace convlab::davinci
