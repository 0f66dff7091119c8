// Fast kernels of the index maps (maps.hpp). Each computes exactly what the generic executor of
// its map computes, element for element (tests/test_maps.cpp checks every element); they exist
// only because the generic executor calls a std::function per element.
//
// All buffers are dense row-major fp32.
#pragma once

#include <span>
#include <vector>

#include "convlab/problem.hpp"

namespace convlab {

// maps::im2col for image n, group g:
// src: activations (N, C, in...)   col: column matrix (C/G * prod(k), prod(out)), overwritten.
void im2col_kernel(const Problem& p, const float* src, dim_t n, dim_t g, float* col);
// maps::col2im for image n, group g: adds the column matrix into the channels of group g.
// col: (C/G * prod(k), prod(out))   diff_src: (N, C, in...), accumulated (caller zeroes it once),
// or, with zero_first, overwritten: those channels are zeroed inside the same parallel loop.
// col_ld: floats between col's rows (0: prod(out), dense); a wider stride reads one image's
// block of a product that holds several images side by side.
void col2im_kernel(const Problem& p, const float* col, dim_t n, dim_t g, float* diff_src,
                   bool zero_first = false, dim_t col_ld = 0);
// col2im of output rows [q0, q1) only (q = od * OH + oh, all of a row's positions), from col's
// columns [0, (q1 - q0) * OW) (rows col_ld apart), adding only into the input rows whose index
// id * IH + ih lies in [r0, r1), of image n, group g; on the calling thread. Threads that own
// disjoint [r0, r1) add into dX side by side without a race, each from the output rows whose
// taps reach its rows (col2im_row_touches).
void col2im_rows_kernel(const Problem& p, const float* col, dim_t col_ld, dim_t q0, dim_t q1,
                        dim_t r0, dim_t r1, dim_t n, dim_t g, float* diff_src);
// Whether a tap of output row q (od * OH + oh) lands in an input row id * IH + ih in [r0, r1).
bool col2im_row_touches(const Problem& p, dim_t q, dim_t r0, dim_t r1);
// True when im2col is the identity (1x1 kernel, stride 1, no padding): the column matrix of
// image n, group g is the image's channels of that group, and both kernels can be skipped.
bool im2col_is_identity(const Problem& p);

// maps::strided (zero insertion). diff_dst: (N, K, out...)   z: (N, K, (out-1)*s+1 ...).
void strided_kernel(const Problem& p, const float* diff_dst, float* z);
// maps::pad over (n, c, spatial...) dims; negative pads crop.
// src: dims   dst: (n, c, spatial + pad_begin + pad_end ...).
void pad_kernel(std::span<const dim_t> dims, std::span<const dim_t> pad_begin,
                std::span<const dim_t> pad_end, const float* src, float* dst);
// maps::flip_rot. wei: (K, C/G, k...)   dst: (C, K/G, k...).
void flip_rot_kernel(const Problem& p, const float* wei, float* dst);
// maps::tnc: swap dims 0 and 1. src: dims   dst: (dims[1], dims[0], dims[2:]...).
void tnc_kernel(std::span<const dim_t> dims, const float* src, float* dst);
// maps::tnc_diff_wei. src: (C, K/G, k...) stacked per group   dst: (K, C/G, k...).
void tnc_diff_wei_kernel(const Problem& p, const float* src, float* dst);

}  // namespace convlab

namespace convlab {

// [SECTION] GEMM core of the GEMM-based algorithms (im2col_gemm, col2im, via_forward ...): a
// call's Tuning::gemm_core chooses ConvLab's blocked GEMM (default) or Eigen's.
// ISA of the blocked core's microkernel on this CPU: avx512 | avx2 | portable (CONVLAB_ISA in the
// environment caps it).
const char* gemm_isa();

}  // namespace convlab
