// The index maps of convolution, each defined once here and used by both the algorithms (through
// the generic executor or a fast kernel tested against it) and the pictures.
#pragma once

#include "convlab/index_map.hpp"
#include "convlab/problem.hpp"

namespace convlab::maps {

// im2col, gather. src: activations (n, c, spatial...). dst: column matrices
// (n, g, row, col) with row = (c_in_group, k_spatial...) and col = (out spatial...), row-major.
// dst(n,g,row,col) <- src(n, g*C/G + c, o*s - pb + k*d) per axis, or 0 in the padding.
// Line steps fill one column (line_axis = row).
IndexMap im2col(const Problem& p);
// col2im: the same function seen as a reduce from the column matrices into the image.
IndexMap col2im(const Problem& p);

// winograd's input tiles (F(4x4, 3x3); 2-D 3x3 convolutions of stride 1, undilated, else Error):
// src: activations (n, c, h, w). dst: (n, c, th, tw, i, j), one 6x6 patch per 4x4 tile of the
// output, th = ceil(oh / 4), tw = ceil(ow / 4): dst(n, c, th, tw, i, j) <- src(n, c, 4 th + i -
// pad_h, 4 tw + j - pad_w), or 0 outside the input. Neighbouring patches overlap by 2 rows and
// columns; a last tile reaches past the output, onto zeros. Line steps fill one patch row.
IndexMap winograd_tiles(const Problem& p);

// Zero insertion ("Strided") of dY for the via-forward backward data: src (n, k, out...),
// dst (n, k, (out-1)*s + 1 ...): dst(i) <- src(i/s) when s divides i, else 0.
IndexMap strided(const Problem& p);

// Pad (or crop where negative) every spatial axis of a (n, c, spatial...) tensor of the given
// sizes: dst(i) <- src(i - pb) when inside, else 0.
IndexMap pad(std::vector<dim_t> dims, std::span<const dim_t> pad_begin,
             std::span<const dim_t> pad_end);
// The pad of the via-forward backward data, applied to strided(p)'s output: begin (k-1)d - pb,
// end (k-1)d - pe + r.
IndexMap pad_for_backward_data(const Problem& p);

// FlipRot in NCHW form: weights (K, C/G, k...) -> (C, K/G, k...): within each group swap the out
// and in channels and reverse every spatial axis: dst(g*Cg + ci, co, k) <- src(g*Kg + co, ci,
// K-1-k).
IndexMap flip_rot(const Problem& p);

// TNC: swap dims 0 and 1 of any tensor (e.g. (n, c, spatial...) -> (c, n, spatial...)).
IndexMap tnc(std::vector<dim_t> dims, std::vector<std::string> names);
// TNC of the activations and of dY for the via-forward backward weight.
IndexMap tnc_src(const Problem& p);
IndexMap tnc_diff_dst(const Problem& p);
// TNC of the result of the backward-weight forward convolution (C, K, k...) -> (K, C, k...),
// per group: (g, Cg, Kg, k...) is written as weights (K, C/G, k...).
IndexMap tnc_diff_wei(const Problem& p);

// The internal problems of the via-forward schemes (pad_end may be negative: a crop).
// Backward data: stride 1, dilation d, on the zero-inserted, padded dY with the FlipRot weights.
Problem backward_data_as_forward(const Problem& p);
// Backward weight, one group: batch = C/G, channels = N, output channels = K/G, kernel = out
// size, stride = d, dilation = s, padding begin pb, end pe - r.
Problem backward_weight_as_forward(const Problem& p);

// Names of the maps for the command line: im2col col2im strided pad fliprot tnc winograd
// (winograd_tiles: Error on problems winograd does not compute).
std::vector<std::string> names();
// The map called `name` for problem p (throws Error for an unknown name, listing the known ones).
IndexMap by_name(std::string_view name, const Problem& p);

}  // namespace convlab::maps
