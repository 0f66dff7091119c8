// Tuning: which fast path each rule of the GEMM-based algorithms takes, as a value carried by
// each call (ConvArgs::tuning, or the tensor-level entry points' last argument) instead of
// process-wide switches. A default Tuning is the measured rules; tests force a path per call
// (Always: wherever it can run, to test it on small problems; Never: the path it replaces), and
// the command line and the benchmark build theirs once (tuning_from_environment in the app and
// bench layers, docs/algorithms.md).
//
// The timings behind each rule: docs/algorithms.md, "Timing evidence behind the rules", under
// the name of the rule's function (engine/src/conv/algorithms.hpp).
#pragma once

#include <cstdint>

namespace convlab {

// Auto: where the rule's measurements say it pays; Always: wherever it can run; Never: not at
// all. Rules whose path is taken wherever it can run say that Always is Auto.
enum class Rule : std::uint8_t { Auto, Always, Never };

// The GEMM core of the column-matrix algorithms (im2col_gemm, col2im, via_forward): ConvLab's
// packed, cache-blocked GEMM, or Eigen's, the reference path.
enum class GemmCore : std::uint8_t { blocked, eigen };

struct Tuning {
    // [SECTION] implicit_gemm
    // The shifted tiles from stride-phase planes (forward, stride-1 backward data, weight
    // gradient) and the 1x1 pointwise tiles: on 196 or more output positions with 32 or more
    // output channels, and 1x1s with 4 or more images, because below that packing W^T once per
    // call cost more than the GEMM's gathers (use_shifted, use_pointwise).
    Rule shifted = Rule::Auto;
    // The shifted forward's output rows of 16 V positions in the lanes: from 64 wide, because
    // conv1 gained at batch 8 and 32 and shorter rows tied (row_lanes_apply).
    Rule row_lanes = Rule::Auto;
    // Non-temporal stores of the shifted forward's output rows: from 16 MiB with whole images per
    // thread (512 KiB one image at a time), because a 12-position tile writes 48 of a line's 64
    // bytes and every line was read first (streams_output).
    Rule stream_output = Rule::Auto;
    // The shifted forward's edge tiles skip the padding column's taps (3 wide, stride 1, padded
    // by 1), 2 of every 21 multiply-adds of a 7-wide row; Always is Auto (edge_tiles_apply).
    Rule edge_tiles = Rule::Auto;
    // The shifted forward reads the input in place where its edge tiles apply and rows are not
    // strided or dilated, no planes padded; Always is Auto (unpadded_tiles_apply).
    Rule unpadded_tiles = Rule::Auto;
    // The 1x1 tiles read a 1x1 strided by 2 along w in place: for outputs 7 or more wide, where
    // with the next tile's inputs prefetched they beat the sampled copy (strided_rows_apply).
    Rule strided_rows = Rule::Auto;
    // The stride-1 shifted weight gradient reads the input in place, 12 input channels of one tap
    // a tile, no padding multiplied; Always is Auto (wgrad_taps_apply).
    Rule wgrad_taps = Rule::Auto;
    // A strided 1x1 weight gradient packs B straight from the input at the strides: for output
    // rows of 14 or more, because its runs end at each row (sampled_wgrad_applies).
    Rule sampled_wgrad = Rule::Auto;
    // Whether that rule also holds with whole images per thread (false: only for the products on
    // all threads, the copy kept per thread, as batch 32 measured best).
    bool sampled_wgrad_whole_images = true;
    // A 1x1's backward data by the forward's pointwise tiles on the swapped problem, where
    // pointwise_bwd_data_problem's rule holds; Always is Auto (Never: the phases' GEMM).
    Rule pointwise_bwd_data = Rule::Auto;
    // The weight gradient's images merged along the reduction: at 64 positions or fewer, because
    // image by image each short product loads and stores all of dW (merge_images_wgrad).
    Rule merge_wgrad = Rule::Auto;
    // A 1x1 weight gradient computed transposed, dW^T = X dY^T: fewer output than input channels
    // and 512 positions or more summed, where transposing dW costs less than it saves
    // (swapped_wgrad).
    Rule swap_wgrad = Rule::Auto;
    // A 1x1 forward computed transposed, dst^T = X^T W^T: with AVX-512, fewer output than input
    // channels, 196 positions or more (strided: 784), where packing W^T beat packing the image
    // (swapped_forward).
    Rule swap_forward = Rule::Auto;
    // The 1x1 forward's rules for cores with 2 MiB of L2 or more, below 4 images with W
    // prepared: the pointwise tiles only on unstrided outputs of 65 to 256 positions and strided
    // ones of 784 or more with fewer output than input channels, and no swapped forward, because
    // there the GEMM reading W in place beat both; from 4 images the tiles on unstrided outputs
    // of at most 784 positions and strided ones of 196 or more positions with fewer output than
    // input channels, the GEMM beating them elsewhere (Xeon; the AMD cores the other rules were
    // measured on have 0.5-1 MiB). Auto: where L2 per core is 2 MiB or more (with AVX-512);
    // Always: with AVX-512 on any machine; Never: not at all (large_l2_forward).
    Rule large_l2_forward = Rule::Auto;

    // [SECTION] col2im and im2col_gemm
    // The GEMM core of the column-matrix algorithms.
    GemmCore gemm_core = GemmCore::blocked;
    // col2im's 1x1 stride-1 backward data computed transposed, dX^T = dY^T W: fewer input than
    // output channels, with AVX-512 from 784 positions, with the others below 196, where packing
    // W_g beat packing dY (swapped_bwd_data).
    Rule swap_bwd_data = Rule::Auto;
    // col2im's column matrix in blocks of whole output rows added into dX while in cache: from
    // 4 MiB (conv1's), because written whole and read back both ran at memory speed
    // (col2im_in_blocks).
    Rule col2im_blocks = Rule::Auto;

    // [SECTION] the blocked GEMM (the core under all of the above)
    // A row-major A read from its rows (in place, or copied row by row where its row stride
    // would make the rows collide in L1) rather than packed into panels, because packing is a
    // transpose of about a cycle per element that the two to eight column tiles of the 7x7 and
    // 14x14 layers at batch 1 do not amortise (M=512 N=49 K=4608, 2 threads: 83 GFLOP/s packed,
    // 157 read in place); Always is Auto (Never: packed; read_a_in_place).
    Rule read_a = Rule::Auto;
    // B's rows read in place rather than packed, A read from its rows: at most 8 row panels
    // over a reduction of at most 256, or 24 over at most 64 where B comes from memory, because
    // a packed panel that so few row panels share does not pay for its copy (64 x 3136 x 64:
    // 0.136 -> 0.125 ms; b_in_place_applies).
    Rule b_in_place = Rule::Auto;
    // sgemm's product computed transposed, C^T = B^T A^T, for a column-contiguous A of 2 MiB or
    // more and at most 256 columns: where L2 per core is 2 MiB or more, because there A's far
    // columns came as demand misses (Xeon, 4608x49x512: 1.91 -> 1.45 ms) and with 1 MiB it lost
    // (EPYC Zen 4, res5's backward data at batch 1: 3.78 -> 4.41 ms; sgemm_transposes).
    Rule transposed_products = Rule::Auto;

    // [SECTION] winograd
    // auto takes winograd where winograd_pays (enough tiles and channels that the transforms
    // cost less than the products save); Always: wherever winograd applies.
    Rule winograd = Rule::Auto;
    // Tiles per block of winograd (0: chosen per problem, 96 at most), for tests and measurements.
    std::int32_t winograd_block = 0;
    // Whether winograd's weight gradient runs every block by split steps (one shared sum) rather
    // than side by side, for tests.
    bool winograd_split = false;
    // Whether its single block of split steps skips fused_weight_gradient (the sums over all
    // filters written out, then transformed), for tests and measurements.
    bool winograd_unfused = false;

    // [SECTION] DaVinci
    // bf16 storage multiplies bf16 pairs (vdpbf16ps) where the CPU has them and they outpace its
    // fp32 multiply-adds (fractal_bf16_rate measured once per process: at least 1.25x the
    // multiply-adds a second), because where a pair instruction ran at a quarter of the FMAs'
    // rate (a Xeon with AVX512_BF16) the fp32 products of the rounded operands were twice as
    // fast; Always: wherever the CPU has them; Never: the fp32 products (davinci::Options).
    Rule bf16_pairs = Rule::Auto;

    bool operator==(const Tuning&) const = default;
};

}  // namespace convlab
