// Internal: the algorithm functions registered in conv.cpp.
#pragma once

#include <algorithm>

#include "../core/checked.hpp"
#include "convlab/conv.hpp"

namespace convlab::detail {

void forward_direct(const Problem& p, const ConvArgs& a, Profiler* prof);
void forward_im2col_gemm(const Problem& p, const ConvArgs& a, Profiler* prof);
void forward_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof);
// The rules of implicit_gemm's fast paths, each for a problem p under a call's tuning t
// (convlab/tuning.hpp names the rule of each field and why).
// Whether the shifted forward streams its output rows past the caches (non-temporal stores):
// for outputs of 16 MiB or more where it runs whole images per thread, 512 KiB one image at a
// time (t.stream_output). The rule also governs the forward's GEMM writing dst in place and the
// 1x1 weight gradient's last product writing dW (from 1 MiB).
bool streams_output(const Problem& p, const Tuning& t);
// Whether the shifted forward's edge tiles of a 3-wide, stride-1 convolution padded by 1 along w
// skip the taps on the padding column (p a forward problem: the backward data's is its
// transpose; t.edge_tiles).
bool edge_tiles_apply(const Problem& p, const Tuning& t);
// Whether the shifted forward (and the stride-1 backward data through it) reads the input in
// place instead of padded planes, where its edge tiles skip the padding columns and the rows are
// not strided or dilated (t.unpadded_tiles).
bool unpadded_tiles_apply(const Problem& p, const Tuning& t);
// Whether the shifted forward computes whole output rows of 16 V positions (V <= 7: 64 to 112
// wide by Auto, conv1's 112; Always: 16 to 112) with the positions in the lanes, 4 output
// channels at a time (MicroKernel::row_lanes_fn), rather than transposed tiles of 12 positions
// (t.row_lanes).
bool row_lanes_apply(const Problem& p, const Tuning& t);
// Whether the 1x1 tiles read a 1x1 strided by 2 along w from the image in place: outputs at
// least 7 wide by Auto, any width Always (t.strided_rows; Never: the input sampled first).
bool strided_rows_apply(const Problem& p, const Tuning& t);
// The same for the weight gradient's tiles (row_runs_fn), for outputs at least 24 wide (by
// Auto) where an image's dY^T is within 512 KiB; they run where whole images run per thread.
bool strided_wgrad_applies(const Problem& p, const Tuning& t);
// Whether a strided 1x1 weight gradient (not by those tiles) packs B straight from the input at
// the strides (SampledTB) rather than from a sampled copy, as one product on all threads (not
// transposed) or, with whole images per thread, as each thread's products (then in place of
// the transposed product; not where t.sampled_wgrad_whole_images is false): output rows of 14
// or more by Auto (t.sampled_wgrad).
bool sampled_wgrad_applies(const Problem& p, const Tuning& t);
// Whether implicit_gemm runs that pass of p from the padded stride-phase planes, or for a 1x1's
// backward data by the pointwise tiles (with a's prepared weights, where there are: the
// layouts of prepare_weights exist only where the tiles run; a may be null). t.shifted rules
// the shifted and pointwise tiles (forward, weight gradient, stride-1 backward data as the
// forward of FlipRot(W), 1x1 forwards from the input's rows), t.pointwise_bwd_data the 1x1
// backward data by the forward's pointwise tiles on the swapped problem (W's rows as panels).
bool shifted_applies(const Problem& p, Pass pass, const Tuning& t, const ConvArgs* a);
// Whether the shifted weight gradient of a stride-1 problem reads the input in place, 12 input
// channels of one tap per tile over the positions whose inputs lie inside the image (no
// planes padded, no padding multiplied; t.wgrad_taps).
bool wgrad_taps_apply(const Problem& p, const Tuning& t);
// Images per tile of its weight gradient from the planes, where whole images run per thread.
dim_t shifted_wgrad_images(const Problem& p, const Tuning& t);

// winograd (winograd.cpp): F(4x4, 3x3) for 2-D 3x3 convolutions of stride 1, undilated (any
// padding, groups); winograd_applies says whether p is one. The others throw Error.
bool winograd_applies(const Problem& p);
// That rule in words (the registry's Algorithm::rule, and the refusals of winograd and of
// maps::winograd_tiles).
inline constexpr const char* kWinogradRule = "2-D, kernel 3x3, stride 1, no dilation";
void forward_winograd(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_data_winograd(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_weight_winograd(const Problem& p, const ConvArgs& a, Profiler* prof);
// Whether auto takes winograd for that pass of p (t.winograd Auto): at least 32 tiles over the
// batch (16 with AVX2), 16 channels in and out per group, weight-gradient sums of at most 64 MiB,
// and for the weight gradient also from 8 tiles where tiles x channels reach 2048, because below
// those the transforms cost more than the products save (timings: docs/algorithms.md,
// "winograd_pays"). Always: wherever winograd applies; Never: not at all (tests of auto's other
// choices).
bool winograd_pays(const Problem& p, Pass pass, const Tuning& t);
// prepare_weights' winograd layout: floats, and the transform of wei for pass (fwd: W, bwd_data:
// FlipRot(W)) into u.
std::size_t winograd_weights_size(const Problem& p);
void prepare_winograd_weights(const Problem& p, Pass pass, const float* wei, float* u,
                              Profiler* prof);

void backward_data_direct(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_data_col2im(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_data_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_data_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof);
// Images per product of implicit_gemm's forward and backward data phases, nb at most, for mb
// images on OpenMP's threads: blocks that the threads share evenly (implicit_gemm_gather.cpp).
dim_t balanced_images(dim_t nb, dim_t mb);

void backward_weight_direct(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_weight_im2col_gemm(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_weight_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_weight_implicit_gemm(const Problem& p, const ConvArgs& a, Profiler* prof);
// Whether implicit_gemm's weight gradient runs over the images side by side along the
// reduction (t.merge_wgrad).
bool merged_wgrad_applies(const Problem& p, const Tuning& t);
// Whether a 1x1 weight gradient is computed transposed (dW^T = X dY^T, then transposed;
// t.swap_wgrad).
bool swapped_wgrad(const Problem& p, const Tuning& t);
// Whether a 1x1 forward (stride 1, or strided from its sampled copy) is computed transposed
// (dst^T = X^T W^T, then transposed), image by image (t.swap_forward).
bool swapped_forward(const Problem& p, const Tuning& t);
// Whether the 1x1 forward takes the rules of cores with 2 MiB of L2 per core or more, with the
// AVX-512 microkernel (t.large_l2_forward; pointwise_forward and swapped_forward say what they
// change).
bool large_l2_forward(const Tuning& t);
// Whether implicit_gemm's forward of p runs the 1x1 pointwise tiles, with weights prepared by
// prepare_weights (prepared) or packed per call.
bool pointwise_forward_applies(const Problem& p, const Tuning& t, bool prepared);
// Whether col2im's 1x1 stride-1 backward data of one image per GEMM is computed transposed (dX^T
// = dY^T W, then transposed): fewer input than output channels, blocked core, at 784 positions
// and more with the AVX-512 microkernel, below 196 (7x7) with the others (t.swap_bwd_data).
bool swapped_bwd_data(const Problem& p, const Tuning& t);
// Whether col2im computes one image's column matrix in blocks of whole output rows, each thread
// owning a band of dX's input rows or whole images (the blocked core, im2col not the identity,
// one image a GEMM): for a column matrix of 4 MiB or more (conv1; t.col2im_blocks).
bool col2im_in_blocks(const Problem& p, const Tuning& t);
// Whether col2im's GEMM reads W^T row by row from prepared weights (prepare_weights makes them
// where this holds), and their rows' stride.
bool col2im_reads_prepared_rows(const Problem& p, const Tuning& t);
dim_t col2im_rows_ld(const Problem& p);

// auto (implicit_gemm_auto.cpp): the heuristic's choice per pass.
void forward_auto(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_data_auto(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_weight_auto(const Problem& p, const ConvArgs& a, Profiler* prof);

void add_bias(const Problem& p, const ConvArgs& a, Profiler* prof);  // dst += bias

// Work memory (beyond the tensors a pass reads and writes) in bytes that each algorithm takes for
// a pass of p on OpenMP's current threads: an upper bound of what it allocates, computed from the
// sizes alone before anything is allocated (checked products: kHugeSize when it does not fit in
// 64 bits). work_bytes (convlab/conv.hpp) dispatches to these.
// Each thread's packing buffers of the blocked GEMM (A and B blocks of at most 96 x 1040 and
// 1536 x 1024 floats, an edge column, a tile) and of its packers, with room to spare.
inline constexpr dim_t kGemmPackBytes = dim_t{8} << 20;
// A thread's share of such a per-thread cap: never more than the problem's tensors (and extra
// floats of intermediates) hold, 64 times over (a packed panel pads a column to up to 64), plus
// 64 KiB. Small problems on thousands of threads then state little.
inline dim_t per_thread_bytes(const Problem& p, dim_t cap, dim_t extra_floats = 0) {
    const dim_t sizes = sat_add(sat_add(sat_mul({p.mb, p.ic, p.in_spatial()}),
                                        sat_mul({p.oc, p.icg(), p.kernel_spatial()})),
                                sat_add(sat_mul({p.mb, p.oc, p.out_spatial()}), extra_floats));
    return std::min(cap, sat_add(sat_mul(sizes, 64 * dim_t{sizeof(float)}), dim_t{64} << 10));
}
dim_t im2col_gemm_work(const Problem& p, Pass pass);
dim_t col2im_work(const Problem& p, const Tuning& t);
dim_t via_forward_work(const Problem& p, Pass pass);
dim_t implicit_gemm_work(const Problem& p, Pass pass);
dim_t winograd_work(const Problem& p, Pass pass, const Tuning& t);
// The DaVinci algorithms' packed tensors and column blocks for C0 = c0 (fractal: fwd;
// fractal_via_forward: bwd_data, bwd_weight).
dim_t fractal_work(const Problem& p, Pass pass, dim_t c0);
// auto's choice for pass of p under tuning t (a: the call's arguments, for its prepared weights,
// or null): the heuristic's algorithm where its work fits the memory budget, else the first of
// the others that fits (direct needs none).
const Algorithm& auto_choice(const Problem& p, Pass pass, const Tuning& t, const ConvArgs* a);

void backward_bias_direct(const Problem& p, const ConvArgs& a, Profiler* prof);

}  // namespace convlab::detail
