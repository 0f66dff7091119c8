// Internal: the fractal product, the CPU's analogue of the DaVinci cube unit, as a register-blocked
// microkernel chosen at run time (AVX-512, AVX2+FMA or portable, following the GEMM core's
// selection, so CONVLAB_ISA caps it too).
#pragma once

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

// pack_weight_kernel with every fractal turned C0 x 16 (the B operand of the forward's fractal
// products), in one pass: dst[((r*N1 + nb)*C0 + k)*16 + j] = W(nb*16 + j, c1*C0 + k, tap) for
// FRACTAL_Z row r = row(kd, c1, kh, kw), 0 for output channels past O and lanes past I.
// dims (O, I, kernel...); dst weight_physical(dims, c0).size() floats.
void pack_weight_transposed(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst);

// conv_fractal with B given as pack_weight_transposed's (bt, wfz unused) or, bt null, made from
// wfz (span transpose_b).
void conv_fractal_bt(const Problem& p, dim_t c0, const float* x5d, const float* wfz,
                     const float* bt, const float* bias, float* y5d, Profiler* prof);

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
