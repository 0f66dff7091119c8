// DaVinci (Ascend) formats and the fractal algorithms (docs/design.md, "DaVinci (Ascend) formats").
//
// C0 is a parameter everywhere (16 = the classic value, used for fp16/bf16; current CANN uses
// 32 bytes / sizeof(dtype): 8 for fp32). N0 = 16 (the rows of a fractal: the cube unit's M and N
// block) is fixed. 1-D problems use the 2-D formats with H = 1 (names NC1WC0, FRACTAL_Z over
// (O, I, W)); 3-D problems use NDC1HWC0 and FRACTAL_Z_3D.
//
// Logical dims stay the plain ones (N, C, H, W) / (N, C, D, H, W) / (O, I, H, W) ...; the
// layouts map them to blocked storage. Index maps (the converters) relate *physical* shapes:
// a blocked tensor is seen as the dense row-major tensor of its storage, e.g. NC1HWC0 as
// (n, c1, h, w, c0). Storage lanes that no logical coordinate reaches are padding and hold zero.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/index_map.hpp"
#include "convlab/layout.hpp"
#include "convlab/problem.hpp"
#include "convlab/profiler.hpp"
#include "convlab/tensor.hpp"
#include "convlab/tuning.hpp"

namespace convlab::davinci {

// Rows of a fractal (Cout within its block in FRACTAL_Z, M within its block in FRACTAL_NZ).
inline constexpr dim_t kN0 = 16;
// The classic C0 (fp16).
inline constexpr dim_t kC0 = 16;

// C0 of current CANN for a dtype: 32 bytes / sizeof(dtype): fp32 -> 8, fp16/bf16 -> 16.
dim_t c0_for(DType t);
// Throws Error unless 1 <= c0 <= 64 ("c0 = 0: C0 must be in [1, 64]").
void check_c0(dim_t c0);
// ceil(a / b)
constexpr dim_t blocks_of(dim_t a, dim_t b) {
    return (a + b - 1) / b;
}

// [SECTION] Layouts (step 1): Layout values (Layout::blocked), usable by Tensor and the generic
// executor. Offsets (C1 = ceil(C/C0), N1 = ceil(O/16)):

// NC1HWC0 over logical (N, C, H, W): storage (N, C1, H, W, C0);
// offset = (((n*C1 + c/C0)*H + h)*W + w)*C0 + c%C0; lanes with c >= C are padding.
Layout nc1hwc0(dim_t N, dim_t C, dim_t H, dim_t W, dim_t c0 = kC0);
// NDC1HWC0 over logical (N, C, D, H, W): storage (N, D, C1, H, W, C0), D outside C1;
// offset = ((((n*D + d)*C1 + c/C0)*H + h)*W + w)*C0 + c%C0.
Layout ndc1hwc0(dim_t N, dim_t C, dim_t D, dim_t H, dim_t W, dim_t c0 = kC0);
// FRACTAL_Z over weights (O = Cout, I = Cin, H, W): storage (C1*H*W, N1, 16, C0), seen by the
// layout as (C1, H, W, N1, 16, C0); C1 = ceil(I/C0), N1 = ceil(O/16);
// offset = ((((i/C0)*H + h)*W + w)*N1 + o/16)*16*C0 + (o%16)*C0 + i%C0;
// padding where o >= O or i >= I.
Layout fractal_z(dim_t O, dim_t I, dim_t H, dim_t W, dim_t c0 = kC0);
// FRACTAL_Z_3D over weights (O, I, D, H, W): storage (D*C1*H*W, N1, 16, C0), D outermost;
// offset = (((((d*C1 + i/C0)*H + h)*W + w)*N1 + o/16)*16 + o%16)*C0 + i%C0.
Layout fractal_z_3d(dim_t O, dim_t I, dim_t D, dim_t H, dim_t W, dim_t c0 = kC0);
// FRACTAL_NZ over an M x K matrix: storage (K1 = ceil(K/C0), M1 = ceil(M/16), 16, C0);
// offset = (((k/C0)*M1 + m/16)*16 + m%16)*C0 + k%C0.
Layout fractal_nz(dim_t M, dim_t K, dim_t c0 = kC0);

// By rank. Activations (N, C, W) -> NC1WC0, (N, C, H, W) -> NC1HWC0, (N, C, D, H, W) ->
// NDC1HWC0. Weights (O, I, W) -> FRACTAL_Z with H = 1, (O, I, H, W) -> FRACTAL_Z,
// (O, I, D, H, W) -> FRACTAL_Z_3D. Throws Error for other ranks.
Layout activation_layout(std::span<const dim_t> dims, dim_t c0 = kC0);
Layout weight_layout(std::span<const dim_t> dims, dim_t c0 = kC0);

// Physical shapes (the storage as a dense row-major tensor), for index maps:
// activations: (n, c1, w, c0) / (n, c1, h, w, c0) / (n, d, c1, h, w, c0);
// weights: (c1w | c1hw | dc1hw, n1, n0 = 16, c0); FRACTAL_NZ: (k1, m1, m0 = 16, c0).
// Their numel() equals the storage_size() of the matching layout.
Shape activation_physical(std::span<const dim_t> dims, dim_t c0 = kC0);
Shape weight_physical(std::span<const dim_t> dims, dim_t c0 = kC0);
Shape fractal_nz_physical(dim_t M, dim_t K, dim_t c0 = kC0);

// [SECTION] Index arithmetic shared by the converters and kernels. 1-D and 2-D are seen as 3-D
// with leading spatial axes of size 1: NC1HWC0 (and NC1WC0) offsets equal NDC1HWC0 offsets with
// D = 1, and FRACTAL_Z offsets equal FRACTAL_Z_3D offsets with D = 1.

// An activation tensor of logical dims (N, C, spatial...) in NC1HWC0 / NDC1HWC0.
struct ActGeom {
    dim_t n = 1, c = 1, c1 = 1, d = 1, h = 1, w = 1, c0 = kC0;
    static ActGeom of(std::span<const dim_t> dims, dim_t c0);
    dim_t spatial() const { return d * h * w; }
    dim_t size() const { return n * d * c1 * h * w * c0; }  // storage elements
    // ((((n*D + d)*C1 + c1)*H + h)*W + w)*C0 + ci
    dim_t offset(dim_t in, dim_t id, dim_t ic1, dim_t ih, dim_t iw, dim_t ci) const {
        return ((((in * d + id) * c1 + ic1) * h + ih) * w + iw) * c0 + ci;
    }
};

// A weight tensor of logical dims (O, I, kernel...) in FRACTAL_Z / FRACTAL_Z_3D.
struct WeiGeom {
    dim_t o = 1, i = 1, i1 = 1, n1 = 1, d = 1, h = 1, w = 1, c0 = kC0;
    static WeiGeom of(std::span<const dim_t> dims, dim_t c0);
    dim_t taps() const { return d * h * w; }       // kernel elements
    dim_t rows() const { return d * i1 * h * w; }  // dim 0 of the storage
    dim_t size() const { return rows() * n1 * kN0 * c0; }
    // Fractal row of tap (kd, kh, kw) and input-channel block ic1: ((kd*I1 + ic1)*H + kh)*W + kw.
    dim_t row(dim_t kd, dim_t ic1, dim_t kh, dim_t kw) const {
        return ((kd * i1 + ic1) * h + kh) * w + kw;
    }
    // ((row*N1 + nb)*16 + ni)*C0 + ci
    dim_t offset(dim_t r, dim_t nb, dim_t ni, dim_t ci) const {
        return ((r * n1 + nb) * kN0 + ni) * c0 + ci;
    }
};

// [SECTION] Converters as index maps (step 2). All are gathers; source and destination are the
// physical shapes above (or the plain logical shape for NCHW / OIHW sides), and every padding
// lane of a destination is a kZero (never a read of a source padding lane). Each has a fast
// kernel below that computes exactly what the generic executor computes.

// Pack NCW / NCHW / NCDHW -> NC1WC0 / NC1HWC0 / NDC1HWC0. src: dims (N, C, spatial...), dense.
// dst: activation_physical(dims, c0). dst(n, [d,] c1, h, w, ci) <- src(n, c1*C0 + ci, ...), 0
// where c1*C0 + ci >= C. Defined by inverting activation_layout(dims, c0) (see blocked_pack).
IndexMap pack_activation(std::vector<dim_t> dims, dim_t c0 = kC0);
// Unpack: src activation_physical(dims, c0), dst dims: dst(c) <- src[layout.offset(c)].
IndexMap unpack_activation(std::vector<dim_t> dims, dim_t c0 = kC0);
// Pack OIW / OIHW / OIDHW weights -> FRACTAL_Z / FRACTAL_Z_3D. src: dims (O, I, kernel...).
// dst: weight_physical(dims, c0) = (rows, N1, 16, C0).
IndexMap pack_weight(std::vector<dim_t> dims, dim_t c0 = kC0);
IndexMap unpack_weight(std::vector<dim_t> dims, dim_t c0 = kC0);
// Any blocked layout as a pack (dense logical -> storage seen as `physical`, whose row-major
// index must be the storage offset) and an unpack. The pack's function decodes a storage offset
// into a logical coordinate from the layout's own description (strides and inner blocks), so it
// is the exact inverse of Layout::offset; offsets no coordinate reaches are kZero.
IndexMap blocked_pack(const Layout& layout, Shape logical, Shape physical, std::string name);
IndexMap blocked_unpack(const Layout& layout, Shape logical, Shape physical, std::string name);

// TNC in 5-D (6-D for 3-D): swap N and C of an NC1HWC0 tensor. dims: the source's logical dims
// (N, C, spatial...). src: activation_physical(dims, c0) = (N, C1, H, W, C0).
// dst: activation_physical((C, N, spatial...), c0) = (C, N1 = ceil(N/C0), H, W, C0): the batch
// becomes the blocked channel dim, padded to C0 (with the classic C0 = 16 this is docs/design.md's
// (C, N/16, H, W, 16)). Formula (2-D; 3-D adds d after the batch index on both sides):
//   dst(c, n1, h, w, ni) <- n = n1*C0 + ni < N ? src(n, c/C0, h, w, c%C0) : 0.
IndexMap tnc5d(std::vector<dim_t> dims, dim_t c0 = kC0);
// TNCf: an NC1HWC0 tensor of logical dims (A, B, spatial...) straight into the FRACTAL_Z of the
// weights [B][A][spatial...] (Cout = B, Cin = A). For dY (N, K, Ho, Wo) this is the "kernel" of
// the backward-weight convolution (Cout = K, Cin = N); for that convolution's result (C, K, kh,
// kw) it is the weight gradient in FRACTAL_Z. src: activation_physical(dims, c0).
// dst: weight_physical((B, A, spatial...), c0) = (A1*H*W, B1' = ceil(B/16), 16, C0) with
// A1 = ceil(A/C0). Formula (2-D), with B1 = ceil(B/C0) the source's channel blocks:
//   dst(row = (a1*H + h)*W + w, nb, ni, ai): b = nb*16 + ni, a = a1*C0 + ai;
//     0 if b >= B or a >= A, else src(a, b/C0, h, w, b%C0)
//     = src storage [(((a*B1 + b/C0)*H + h)*W + w)*C0 + b%C0].
// 3-D: row = ((d*A1 + a1)*H + h)*W + w and src(a, d, b/C0, h, w, b%C0) in NDC1HWC0.
IndexMap tncf(std::vector<dim_t> dims, dim_t c0 = kC0);
// FlipRot on FRACTAL_Z. Defined as unpack_weight -> maps::flip_rot(p) -> pack_weight (see
// fliprot_fz_composed); this map is its direct formula, equal on every element (tested).
// src: weight_physical(p.wei_dims()) = FRACTAL_Z of (K, C/G, k...);
// dst: weight_physical((C, K/G, k...)) = FRACTAL_Z of (C, K/G, k...) (the backward-data weights).
// With S = number of kernel taps, s the flattened tap (kd, kh, kw) of a row:
//   dst(row(kd,kc1,kh,kw), nb, ni, ci): c = nb*16 + ni, kc = kc1*C0 + ci;
//     0 if c >= C or kc >= K/G; else with g = c / (C/G), cc = c % (C/G), o = g*(K/G) + kc and
//     tap s' = S-1-s: src(row(s'.kd, cc/C0, s'.kh, s'.kw), o/16, o%16, cc%C0).
// Classic form (C0 = 16, groups 1, 2-D): dst(kc1*S + s, nb, ni, ci) = src(nb*S + S-1-s, kc1, ci,
// ni): the C1 and N1 block indices swap, the flattened kernel index reverses and every 16x16
// fractal is transposed. With C0 != 16 a 16-row block of Cout no longer is a C0-block of Cin, so
// the block swap does not hold; the formula above does.
IndexMap fliprot_fz(const Problem& p, dim_t c0 = kC0);
IndexMap fliprot_fz_composed(const Problem& p, dim_t c0 = kC0);
// Strided (zero insertion) on NC1HWC0 dY. src: activation_physical(p.dst_dims(), c0).
// dst: activation_physical((N, K, (out-1)*s + 1 ...), c0).
//   dst(n, k1, zh, zw, ki) <- k1*C0 + ki < K and s divides zh, zw ? src(n, k1, zh/s, zw/s, ki) : 0.
IndexMap strided5d(const Problem& p, dim_t c0 = kC0);
// Pad (negative: crop) every spatial axis of an NC1HWC0 / NDC1HWC0 tensor of logical dims
// (N, C, spatial...). src: activation_physical(dims), dst: activation_physical(padded dims).
//   dst(n, c1, h, w, ci) <- c valid and inside ? src(n, c1, h - pb_h, w - pb_w, ci) : 0.
IndexMap pad5d(std::vector<dim_t> dims, std::span<const dim_t> pad_begin,
               std::span<const dim_t> pad_end, dim_t c0 = kC0);
// The pad of backward data, defined once (used by backward_data_fractal_via_forward and by
// by_name("pad5d")): strided5d's output dims zdims = (N, K, (out-1)*s + 1 ...), pads begin
// (k-1)d - pb and end (k-1)d - pe + r (r = the leftover rows; negative pads crop).
struct BackwardDataPads {
    std::vector<dim_t> zdims, begin, end;
};
BackwardDataPads backward_data_pads(const Problem& p);
// im2col in fractal form, for one group (groups are packed separately): the column matrix of
// each image, A (M = prod(out) rows, R*C0 columns, column (r, ci)), in FRACTAL_NZ-like storage
// (R, M1 = ceil(M/16), 16, C0), the fractal rows r ordered as the rows of FRACTAL_Z(_3D):
// r = ((kd*C1 + c1)*KH + kh)*KW + kw. src: activation_physical((N, C/G, in...), c0).
// dst: (n, k1 = R, m1, m0 = 16, c0). With m = m1*16 + m0 = (od*OH + oh)*OW + ow:
//   dst(n, r, m1, m0, ci) <- m < M, c1*C0 + ci < C/G, position inside ?
//                            src(n, id, c1, ih, iw, ci) : 0,  i* = o* * s - pb + k* * dil.
IndexMap im2col_fractal(const Problem& p, dim_t c0 = kC0);

// Names for the command line (convlab map --map NAME): nc1hwc0 (ndc1hwc0 for 3-D problems),
// unpack_nc1hwc0, fractal_z, fractal_z_3d, unpack_fractal_z, tnc5d, tncf, fliprot_fz,
// strided5d, pad5d, im2col_fractal.
std::vector<std::string> map_names();
// The map called `name` for problem p (activations p.src_dims(), weights p.wei_dims(), dY
// p.dst_dims(); pad5d is the backward-data pad of strided5d's output). Throws Error for an
// unknown name (listing the known ones) and for fractal_z on a 3-D / fractal_z_3d on a 2-D problem.
IndexMap by_name(std::string_view name, const Problem& p, dim_t c0 = kC0);

// [SECTION] Fast kernels of the converters (dense fp32 buffers; every destination element,
// padding lanes included, is written). Each equals the generic execution of its map.

// pack_activation. src: (N, src_channels, spatial...), reading channels [c_begin, c_begin + C)
// where C = dims[1] (a group's channels); dst: activation_physical(dims, c0).
void pack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                            dim_t src_channels = -1, dim_t c_begin = 0);
// unpack_activation. src: activation_physical(dims, c0); dst: (N, dst_channels, spatial...),
// writing channels [c_begin, c_begin + dims[1]) only.
void unpack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                              dim_t dst_channels = -1, dim_t c_begin = 0);
// pack_weight / unpack_weight. dims (O, I, kernel...); src/dst dense and weight_physical.
void pack_weight_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst);
void unpack_weight_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst);
// tnc5d / tncf / fliprot_fz / strided5d / pad5d / im2col_fractal (image n only: dst is that
// image's (R, M1, 16, C0) slice).
void tnc5d_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst);
// tncf_kernel with dst_b >= 0 writes into the FRACTAL_Z of (dst_b, A, spatial...) the output
// channels [b_begin, b_begin + B) only (one group's share of a grouped weight gradient), leaving
// the others untouched; with dst_b < 0 it writes all of weight_physical((B, A, spatial...)).
void tncf_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                 dim_t dst_b = -1, dim_t b_begin = 0);
void fliprot_fz_kernel(const Problem& p, dim_t c0, const float* src, float* dst);
void strided5d_kernel(const Problem& p, dim_t c0, const float* src, float* dst);
void pad5d_kernel(std::span<const dim_t> dims, std::span<const dim_t> pad_begin,
                  std::span<const dim_t> pad_end, dim_t c0, const float* src, float* dst);
// im2col_fractal_kernel may write a range [m1_begin, m1_end) of M blocks only (m1_end < 0: to the
// end): dst is then (R, m1_end - m1_begin, 16, C0), the matching fractals of the full matrix.
void im2col_fractal_kernel(const Problem& p, dim_t c0, const float* src, dim_t n, float* dst,
                           dim_t m1_begin = 0, dim_t m1_end = -1);

// [SECTION] Fractal forward convolution (step 3)
//
// The DaVinci cube unit's scheme: per image, the input is rewritten by im2col_fractal into the
// column matrix A in fractal form (R x M1 fractals of 16 x C0: 16 output positions by C0 input
// channels of one (kd, c1, kh, kw)); the FRACTAL_Z weights are R x N1 fractals of 16 x C0 (16
// output channels by C0 input channels). Each 16 x 16 output tile (mb, nb) is
//   Y(mb, nb) = sum_r A(r, mb) * W(r, nb)^T   (16 x C0 times C0 x 16, accumulated in fp32),
// and is written to NC1HWC0 / NDC1HWC0 (output channel k = nb*16 + j -> block k/C0, lane k%C0).
// Groups: the packed-level call is for one group; the NCHW-level calls run it per group, packing
// each group's C/G input channels and K/G output channels separately, so each group's channels
// start at lane 0 of their own C1 / N1 blocks (C/G or K/G not a multiple of C0 costs padding lanes
// per group, never a wrong result).

// Options of the NCHW-level calls.
struct Options {
    dim_t c0 = kC0;  // C0 of the packed tensors
    // Storage type of the packed operands: f32, or f16 / bf16 emulated: the packed buffers stay
    // fp32 but hold values rounded to that type (round to nearest even), so products and sums
    // are those of 16-bit storage with fp32 accumulation.
    DType storage = DType::f32;
    // bf16 storage: whether the products multiply bf16 pairs (Tuning::bf16_pairs' rule).
    Rule bf16_pairs = Rule::Auto;
    // The forward and backward data (via the forward) pack and multiply a batch this many images
    // at a time, so that a slice's packed operand is read back from cache; 0: as many as keep it
    // within 4 MiB a thread, at least two a thread.
    dim_t slice_images = 0;
};

// Whether bf16 storage's products multiply bf16 pairs (vdpbf16ps) on this CPU under rule, rather
// than fp32 products of the rounded operands (a product into at most 4 channels excepted); with
// rate, the pairs' instruction rate over the fp32 FMAs' as measured (0: the CPU has none).
bool bf16_pairs(Rule rule, double* rate = nullptr);

// Packed level, one group (p.groups must be 1; p may crop: pad_end < 0).
// x5d: activation_physical(p.src_dims(), c0); wfz: weight_physical(p.wei_dims(), c0);
// bias: K floats or null; y5d: activation_physical(p.dst_dims(), c0), overwritten entirely
// (padding lanes zero). Padding lanes of x5d and wfz are never read into a result.
// Profiler spans: transpose_b (the weight fractals turned C0 x 16), im2col (im2col_fractal),
// fractal_gemm (the tile products and the write to NC1HWC0).
void conv_fractal(const Problem& p, dim_t c0, const float* x5d, const float* wfz, const float* bias,
                  float* y5d, Profiler* prof = nullptr);

// NCHW level (the ConvArgs of conv.hpp, dense row-major fp32): forward_fractal reads a.src,
// a.wei, a.bias (may be null) and writes a.dst; it packs (spans pack_src, pack_wei: the weights
// straight into FRACTAL_Z with each fractal turned C0 x 16, so no transpose_b; no pack_wei when
// a.prepared holds them for C0 16 and the call's storage), runs conv_fractal's products per group
// and unpacks (span unpack). The three-argument form (C0 = 16, fp32) is an AlgoFn.
void forward_fractal(const Problem& p, const ConvArgs& a, Profiler* prof);
void forward_fractal(const Problem& p, const ConvArgs& a, Profiler* prof, const Options& o);

// Weights prepared once for the fractal algorithms with storage dtype `storage` at C0 16: the B
// operand of fwd's fractal or of bwd_data's fractal_via_forward, every group, in bf16 pairs where
// the products multiply them (bf16_pairs' rule, as Options::bf16_pairs), else fp32 holding values
// rounded to storage; the NCHW algorithms' layouts are not packed (convlab::prepare_weights packs
// those, with the fractal B for fp32). Set as ConvArgs::prepared of calls with Options{16,
// storage, bf16_pairs}, they then pack no weights (no span pack_wei or fliprot) and give the same
// bits as without it. Throws Error as convlab::prepare_weights does.
PreparedWeights prepare_weights(const Problem& p, Pass pass, const float* wei, DType storage,
                                Profiler* prof = nullptr, Rule bf16_pairs = Rule::Auto);

// Tensor level for the command line: NCW / NCHW / NCDHW tensors of any dtype and layout in (read
// as fp32), dense fp32 out; the problem and the dims are checked like convlab::forward (Error).
Tensor forward(const Problem& p, const Tensor& src, const Tensor& wei, const Tensor* bias,
               const Options& o = {}, Profiler* prof = nullptr);

// [SECTION] Both backward passes in fractal form (step 4), with the leftover rows r
// (docs/design.md, "Problems and formulas"). Per group, as the forward.
//
// Backward data, fractal_via_forward: dY -> pack (NC1HWC0, span pack_dst), read by the forward's
// im2col through strided5d's zero insertion and pad5d's pad (begin (k-1)d - pb, end
// (k-1)d - pe + r), which are folded into its index tables rather than copied, and whose
// fractals of zeros are neither written nor multiplied (the maps' values, not their copies: the
// fractals it writes equal im2col_fractal of pad5d(strided5d(dY))); W -> FRACTAL_Z
// of FlipRot(W) with each fractal turned C0 x 16 (pack_weight, fliprot_fz and the transpose in
// one pass, span fliprot; none with prepared weights); conv_fractal of
// maps::backward_data_as_forward (stride 1, dilation d), giving dX in NC1HWC0 -> unpack. Reads
// a.diff_dst, a.wei (or a.prepared, at C0 16 and the call's storage); writes a.diff_src (N, C,
// in...). fp16/bf16 storage: packed operands and dX rounded to that type; bf16 products by
// vdpbf16ps where the CPU has AVX512_BF16 (fractal_kernel.hpp), fp32 products of the rounded
// operands elsewhere.
void backward_data_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_data_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof,
                                       const Options& o);

// Backward weight, fractal_via_forward: the products of conv(TNC(X), TNCf(dY)) with the batch
// packed as the reduction's tail (no batch padded to C0): the reduction runs over N x out
// positions, 16 of them per fractal; dY -> fractals of 16 output channels x 16 positions
// (span tncf); X -> pack (span pack_src) -> per row (kd, c1, kh, kw) of FRACTAL_Z, fractals of
// 16 positions x C0 input channels read at that tap (span tnc, a block of positions at a time);
// each 16 x C0 fractal of the weight gradient in FRACTAL_Z / FRACTAL_Z_3D is the sum of their
// products (span fractal_gemm), fp32 (as Ascend's Conv3DBackpropFilter; with fp16/bf16 storage
// the inputs are rounded, the accumulation and the result stay fp32). Groups: per group, each
// group's K/G rows written into the whole FRACTAL_Z (span tncf_dw).
// backward_weight_fractal_fz: src (N, C, in...), diff_dst (N, K, out...) dense fp32;
// dw_fz: weight_physical(p.wei_dims(), c0) (FRACTAL_Z of (K, C/G, k...)), overwritten entirely.
void backward_weight_fractal_fz(const Problem& p, const float* src, const float* diff_dst,
                                float* dw_fz, Profiler* prof, const Options& o = {});
// The same products with each tile written to a.diff_wei (K, C/G, k...) in their loop (span
// fractal_gemm; no FRACTAL_Z result, no unpack pass, no tncf_dw), the bits of FRACTAL_Z then
// unpack. Reads a.src, a.diff_dst.
void backward_weight_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof);
void backward_weight_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof,
                                         const Options& o);

// Tensor level (NCHW / NCDHW tensors of any dtype in, read as fp32; checked like convlab's).
Tensor backward_data(const Problem& p, const Tensor& diff_dst, const Tensor& wei,
                     const Options& o = {}, Profiler* prof = nullptr);
Tensor backward_weight(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                       const Options& o = {}, Profiler* prof = nullptr);
// The weight gradient as a Tensor in weight_layout(p.wei_dims(), o.c0) (FRACTAL_Z /
// FRACTAL_Z_3D), fp32.
Tensor backward_weight_fz(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                          const Options& o = {}, Profiler* prof = nullptr);

}  // namespace convlab::davinci
