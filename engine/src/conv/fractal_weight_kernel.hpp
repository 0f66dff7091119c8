// Internal: the weight gradient's own kernels (fractal_weight.cpp): its products over a reduction
// that ends inside a fractal, and the write of a run of taps' tiles to OIHW.
#pragma once

#include "convlab/davinci.hpp"

namespace convlab::davinci {

// The weight gradient's fp32 products of 16 x 16 tiles (kr = C0 = 16) over the first len
// positions of a block of reduction fractals: c (16 x 16, ld ldc) = (acc ? c : 0) + sum over
// positions q < len of A(i, q) * B(q, j), A(i, q) = a[(q/16)*a_step + i*16 + q%16] (dY fractals)
// and B(q, j) = b[(q/16)*b_step + (q%16)*16 + j] (input fractals); with two (b_next >= 0: the
// second tile's B at b + b_next, its C at c + c_next) one pass over A makes both. The positions
// past len are not read: the reduction's last fractal (a 7x7 output's 49 positions fill 3
// fractals and 1 position of a fourth) costs its valid positions only, not 16. Every product is
// the same fp32 multiply-add chain as fractal_product's over the same positions (q ascending);
// ISAs other than AVX-512 run fractal_product / fractal_product2 over whole fractals (whose
// padding positions hold zeros in A and B, so that they add nothing).
void weight_product(dim_t len, const float* a, dim_t a_step, const float* b, dim_t b_step,
                    dim_t b_next, float* c, dim_t c_next, dim_t ldc, bool acc);

// The tiles tp[t] (t < tn, 16 output channels x c0 lanes, tp[t][o*c0 + ci]) of tn consecutive
// taps of one (output block, input block) written to OIHW: out[o*o_stride + ci*taps + t] =
// tp[t][o*c0 + ci] for o < ov and ci < valid (output channel o's input channel ci holds its taps
// consecutively, taps apart). Under AVX-512 with C0 16, sixteen taps at a time are transposed in
// registers and each (o, ci)'s run stored in one masked store, instead of an element at a time.
void weight_taps_to_oihw(const float* const* tp, dim_t tn, dim_t c0, dim_t ov, dim_t valid,
                         float* out, dim_t o_stride, dim_t taps);

}  // namespace convlab::davinci
