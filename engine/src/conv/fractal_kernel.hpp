// Internal: the fractal product, the CPU's analogue of the DaVinci cube unit, as a register-blocked
// microkernel chosen at run time (AVX-512, AVX2+FMA or portable, following the GEMM core's
// selection, so CONVLAB_ISA caps it too).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "../core/geom.hpp"
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

// Two 16 x 16 tiles of one A: fractal_product(kr, 16, rows, a, a_step, b, b_step, 16, c, ldc,
// acc) and the same with b + b_next and c + c_next, in one pass over A (the same bits).
void fractal_product2(dim_t kr, dim_t rows, const float* a, dim_t a_step, const float* b,
                      dim_t b_step, dim_t b_next, float* c, dim_t c_next, bool acc,
                      dim_t ldc = kN0);

// fractal_product(kr, 16, rows, ...) and fractal_product2 over listed rows: row i's A fractal at
// a[i] (anywhere, e.g. in place in the source), its B at b + idx[i] * b_step (ld 16), C ld 16.
// The same chains of multiply-adds as the strided calls over those rows: the same bits.
void fractal_product_list(dim_t kr, dim_t rows, const float* const* a, const dim_t* idx,
                          const float* b, dim_t b_step, float* c, bool acc);
void fractal_product2_list(dim_t kr, dim_t rows, const float* const* a, const dim_t* idx,
                           const float* b, dim_t b_step, dim_t b_next, float* c, dim_t c_next,
                           bool acc);

// out[j * stride + i] = acc[i * 16 + j] + (bias ? bias[j] : 0), rounded to storage, for i < 16,
// j < cols (<= 16): a 16 x 16 tile's columns stored as rows, transposed and rounded in registers
// under AVX-512 (round_storage's bits). stream: rows on whole lines by non-temporal stores
// (detail::stream_fence before the result is read).
void fractal_write_columns(const float* acc, dim_t cols, const float* bias, DType storage,
                           float* out, dim_t stride, bool stream = false);

// pack_weight_kernel with every fractal turned C0 x 16 (the B operand of the forward's fractal
// products), in one pass: dst[((r*N1 + nb)*C0 + k)*16 + j] = W(nb*16 + j, c1*C0 + k, tap) for
// FRACTAL_Z row r = row(kd, c1, kh, kw), 0 for output channels past O and lanes past I.
// dims (O, I, kernel...); dst weight_physical(dims, c0).size() floats.
void pack_weight_transposed(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst);

// conv_fractal with B given as pack_weight_transposed's (bt, wfz unused) or, bt null, made from
// wfz (span transpose_b).
void conv_fractal_bt(const Problem& p, dim_t c0, const float* x5d, const float* wfz,
                     const float* bt, const float* bias, float* y5d, Profiler* prof);

// The C0 the fractal forward computes with when asked for c0 (checked): with the default 16, a
// group of at most 4 input channels runs in 16 x 4 fractals, the idea of the Ascend toolkits' C04
// format for such layers. On conv1 (3 channels) 13 of 16 lanes would be padding in the products
// and the column matrix; with 4 lanes, 1 of 4. The Cube unit needs 16-lane fractals, so C04
// packs four taps' 4 channels into one; the CPU's product takes 4-lane fractals as they are.
inline constexpr dim_t kC0Small = 4;
dim_t forward_c0(const Problem& p, dim_t c0);

// Where the kernel is wide (at least kTapLanesMinWidth taps along w), such a forward puts taps in
// the lanes as the Cube unit's C04 does: t_lanes consecutive taps along w of 4 lanes each fill
// one 16-lane fractal, so the products run 16 deep over kw' = ceil(kw / t_lanes) tap groups a
// kernel row instead of 4 deep over kw taps (conv1: 2 rows of 16 instead of 7 rows of 4 a
// kernel row, where the 4-deep rows spent more on their addresses than on their multiply-adds).
// The forward of p is then that of a virtual problem v over X'' (lane t*4 + c of position u
// holding X(c, u - pad + t*dw)): ic 4 * t_lanes, kernel kw' along w with its taps step * dw
// apart (groups of t_lanes taps starting step apart: the last one ends on the kernel's last tap,
// so no lane reads past the kernel; a tap in two groups is weighted in the first only), no
// padding along w (X'' holds it).
// With a stride along w, the tap groups are folded into the channels instead (folded): group j
// is channel block j of X''(u, j*16 + t*4 + c) = X(c, u*stride - pad + (j*step + t)*dw), one
// position per output, and v is 1 wide along w with stride 1, so that each fractal of 16
// consecutive outputs lies in X'' as it is and is read in place (strided, none does); X'' is
// about as large (conv1: 112 positions of 32 lanes a row instead of 230 of 16).
inline constexpr dim_t kTapLanesMinWidth = 5;
struct TapLanes {
    Problem v;  // one group's virtual problem
    dim_t t_lanes = 0, step = 0;
    bool folded = false;
    dim_t groups = 0;  // tap groups along w: v's kernel width, or (folded) its channel blocks
};
// Whether p's forward, asked for C0 c0, runs with taps in the lanes (C0 16, at most 4 channels a
// group, kernel width at least kTapLanesMinWidth and a t_lanes of 4, 3 or 2 that tiles it), and
// its plan in *out.
bool tap_lanes(const Problem& p, dim_t c0, TapLanes* out);
// W'(k, t*4 + c, kd, kh, j) = W(k, c, kd, kh, j*step + t) of one group's weights w (K/G, C/G,
// kernel...), 0 where c >= C/G or that tap belongs to group j - 1: dst v.wei_dims() floats.
// Folded: W'(k, j*16 + t*4 + c, kd, kh, 0).
void tap_lanes_weights(const Problem& p1, const TapLanes& tl, const float* w, float* dst);
// X'' of channels [c_begin, c_begin + C/G) of src (N, src_channels, spatial...) as NC1HWC0 of
// v.src_dims() (C0 16), each value rounded to storage.
void tap_lanes_input(const Problem& p1, const TapLanes& tl, const float* src, dim_t src_channels,
                     dim_t c_begin, DType storage, float* dst);

// [SECTION] bf16 operands (vdpbf16ps)

// Whether fractal_product_bf16 runs for a reduction of kr per fractal row: the CPU has
// AVX512_BF16, AVX-512 is the selected ISA (CONVLAB_ISA=avx2 or portable turn it off, leaving the
// fp32 products of rounded operands) and kr is 4, 8, 16 or 32 (pairs of bf16 per 32-bit lane).
bool fractal_bf16_native(dim_t kr);
// The CPU's rate of vdpbf16ps (each two multiply-adds a lane) over its rate of fp32 FMAs, in
// instructions, measured once per process (independent chains, best of several windows); 0
// where fractal_bf16_native(16) does not hold.
double fractal_bf16_rate();
// Whether products for kr multiply bf16 pairs under rule: fractal_bf16_native(kr) and, with
// Auto, a fractal_bf16_rate() of at least 0.625 (1.25x the fp32 multiply-adds a second).
bool fractal_bf16_pairs(dim_t kr, Rule rule);
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
// Two tiles of one A, as fractal_product2 (ld ldc); fractal_bf16_native(kr) only.
void fractal_product2_bf16(dim_t kr, dim_t rows, const std::uint16_t* a, dim_t a_step,
                           const std::uint16_t* b, dim_t b_step, dim_t b_next, float* c,
                           dim_t c_next, bool acc, dim_t ldc = kN0);
// dst[i] = the bf16 bits of src[i], which must be bf16 values already (rounded): their upper half.
void bf16_bits(const float* src, std::uint16_t* dst, dim_t n);

// B of conv_fractal_b: C0 x 16 fp32 fractals (pack_weight_transposed's layout), or bf16 pairs
// (pack_weight_pairs's; then A is built in bf16 a block at a time and fractal_product_bf16 runs).
struct FractalB {
    const float* f32 = nullptr;
    const std::uint16_t* bf16 = nullptr;
};
void conv_fractal_b(const Problem& p, dim_t c0, const float* x5d, FractalB b, const float* bias,
                    float* y5d, Profiler* prof);

// [SECTION] The column matrix from its source (fractal_im2col.cpp)

// The tap and input-channel block of FRACTAL_Z row r (WeiGeom::row's order: kd outermost, then
// the C1 blocks, kh, kw innermost), for a kernel of g.k and c1 blocks: the one decomposition that
// the forward's im2col and the weight gradient's input gather both walk their rows by.
struct FractalRow {
    dim_t kd, c1, kh, kw;
};
inline FractalRow fractal_row(dim_t r, const detail::Geom3& g, dim_t c1) {
    FractalRow f{};
    f.kw = r % g.k[2];
    r /= g.k[2];
    f.kh = r % g.k[1];
    r /= g.k[1];
    f.c1 = r % c1;
    f.kd = r / c1;
    return f;
}

// The input of conv_fractal_b's problem q as its im2col reads it: an activation in NC1HWC0 /
// NDC1HWC0 (x5, geometry g over (N, C/G, len...)), seen on each axis (d, h, w as Geom3's) through
// a zero insertion and a pad: q's input coordinate i is x(u / ins) with u = i - off when
// 0 <= u <= (len - 1) * ins and ins divides u, else 0. A plain input has ins 1 and off 0; backward
// data via forward reads dY itself with ins = the stride and off = the pad's begin, instead of a
// zero-inserted, padded copy of it.
struct ColSource {
    const float* x5 = nullptr;
    ActGeom g;
    dim_t ins[3] = {1, 1, 1}, off[3] = {0, 0, 0};
    // Whether x5's padding lanes hold zeros (the engine's own packs): then whole C0 blocks are
    // copied, or read in place. A caller's packed tensor is not trusted there.
    bool zero_padding = false;
};
// x5d as the plain input of q (activation_physical of q.src_dims() for one group).
ColSource plain_source(const Problem& q, dim_t c0, const float* x5d);
// The order of the column matrix's M rows and, per axis, the source index that each output
// reads at each tap (or -1: a zero), built once per call so that im2col does no index arithmetic
// per element. Along an axis read through a zero insertion (ins > 1, q's stride 1) the outputs
// are taken phase by phase (o = ph + j*ins): row m of the column matrix is the output position
// whose per-axis indices, in that order, are m's row-major digits (position()); elsewhere m is
// the position itself. tab[at[a] + k * out[a] + o'] is the source index of the o'-th output of
// axis a in that order at tap k.
struct ColPlan {
    ColPlan(const Problem& q, const ColSource& s);
    // Row m's digits (d, h, w), row-major over the outputs' extents, which the next row carries
    // on by one (step).
    void digits(dim_t m, dim_t& d, dim_t& h, dim_t& w) const {
        w = m % g.out[2];
        m /= g.out[2];
        h = m % g.out[1];
        d = m / g.out[1];
    }
    void step(dim_t& d, dim_t& h, dim_t& w) const {
        if (++w == g.out[2]) {
            w = 0;
            if (++h == g.out[1]) {
                h = 0;
                ++d;
            }
        }
    }
    // The output position (od, oh, ow) of the row of digits (d, h, w): themselves unless permuted.
    void output(dim_t d, dim_t h, dim_t w, dim_t& od, dim_t& oh, dim_t& ow) const {
        od = permuted ? perm[static_cast<std::size_t>(pat[0] + d)] : d;
        oh = permuted ? perm[static_cast<std::size_t>(pat[1] + h)] : h;
        ow = permuted ? perm[static_cast<std::size_t>(pat[2] + w)] : w;
    }
    // The output position (od, oh, ow) of row m of the column matrix.
    void position(dim_t m, dim_t& od, dim_t& oh, dim_t& ow) const {
        dim_t d, h, w;
        digits(m, d, h, w);
        output(d, h, w, od, oh, ow);
    }
    ColSource src;
    detail::Geom3 g;
    // run[i] (i as tab's index): how many outputs from the o'-th on, along its line at its tap,
    // read consecutive source elements (0 where tab[i] is -1); gap[i]: how many outputs from the
    // o'-th on read nothing before one that reads. A fractal's segment is then checked in O(1).
    std::vector<dim_t> run, gap;
    std::vector<dim_t> tab, perm;  // perm[pat[a] + o'] = the output index of the o'-th
    dim_t at[3] = {0, 0, 0}, pat[3] = {0, 0, 0};
    bool permuted = false;
};
// M blocks [mb0, mb0 + cm) of image n's column matrix in plan's order (groups 1): fractal
// (r, mb) at dst + (r*cm + mb)*16*C0, as im2col_fractal_kernel's block column; nz[r*cm + mb] says
// whether it reads any element of the source. Fractals that read none are not written (their
// products add nothing); in the others row i is, for output position plan.position((mb0 + mb)*16
// + i), that of im2col_fractal_kernel on the zero-inserted, padded source (zeros past the last
// position).
// With in_place (not null), a fractal whose 16 rows are 16 consecutive positions of the source,
// of a whole C0 block or of a source with zero_padding, is not copied either: in_place[r*cm + mb]
// points to it in the source; every other fractal's in_place[] is its place in dst.
void im2col_fractal_block(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb0, dim_t cm, float* dst,
                          unsigned char* nz, const float** in_place = nullptr);
// The same block as bf16 bits, for the bf16 products (no fractal left in place): dst[i] = the
// upper half of the fp32 block's element i, which is its bf16 value when the source holds bf16
// values (rounded: the DaVinci algorithms' packs in bf16 storage); nz as im2col_fractal_block's.
void im2col_fractal_block_bf16(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb0, dim_t cm,
                               std::uint16_t* dst, unsigned char* nz);
// A plain result for conv_fractal_b: channels [c_begin, c_begin + K) of dst (N, channels,
// out...), its values rounded to storage.
struct PlainOut {
    float* dst = nullptr;
    dim_t channels = 0, c_begin = 0;
    DType storage = DType::f32;
    // Whole images per thread: the tiles' rows that fill lines written by non-temporal stores
    // (a result too large for the caches to keep until it is read).
    bool stream = false;
};
// conv_fractal_b reading its input through src, writing y5d or, with plain, the plain result
// (the products' tiles written out in the plain layout, as the Ascend parts whose output stage
// converts fractals to ND do, rather than NC1HWC0 and an unpack pass over it).
void conv_fractal_b(const Problem& p, dim_t c0, const ColSource& src, FractalB b, const float* bias,
                    float* y5d, Profiler* prof, const PlainOut* plain = nullptr);

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
// The blocks of reduction fractals that the weight gradient's products for p run in (1: each
// tile is final when its first product returns; 0 for an empty reduction).
dim_t fractal_weight_blocks(const Problem& p, dim_t c0);
// backward_weight_fractal_fz's products with the gradient written in OIHW / OIDHW instead:
// dw (K, C/G, k...) dense fp32, overwritten entirely; the same bits as FRACTAL_Z then
// unpack_weight_kernel. Each 16 x C0 tile reaches dw in the loop of the products (span
// fractal_gemm), not in a pass of its own: a 1x1 kernel's tile is a block of dw's rows (16
// output channels x C0 consecutive input channels), which the products write and accumulate in
// place; a tile of a kernel with taps is made in a per-thread buffer (one reduction block) or in
// FRACTAL_Z (several: the earlier blocks accumulate there) and scattered by the thread that made
// it, the taps of one (input block, output block) together. Groups need no scatter of their own
// (a group's K/G output channels are consecutive rows of dw). With at most 4 channels a group
// (C0 16), the input fractals are FRACTAL_Z_C04's (16 / (C/G) taps x C/G channels) and the tiles
// reach dw after the last reduction block (span scatter).
void backward_weight_fractal_oihw(const Problem& p, const float* src, const float* diff_dst,
                                  float* dw, Profiler* prof, const Options& o);

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

// [SECTION] Narrow products: at most 4 output channels (fractal_narrow.cpp)

// The products of a forward whose output has at most this many channels (a group's), e.g.
// backward data's forward into ResNet-50's conv1 input (3 channels), run as narrow products: a
// 16-wide tile would compute at least 12 columns of padding.
inline constexpr dim_t kNarrowMax = 4;
// c (16 x kn, leading dim ldc) = (acc ? c : 0) + sum over listed rows r < rows of A_r * B_r,
// 1 <= kn <= kNarrowMax: A_r = a[r] a row-major 16 x c0 fractal (anywhere, e.g. in place in the
// source) and B_r = b + idx[r] * kn * c0 the narrow B of narrow_b, column j's c0 lanes contiguous
// (B_r(k, j) = b_r[j * c0 + k]). Each c(i, j) is the dot product of A's row i and B's column j
// accumulated lane by lane over the rows and summed across the lanes at the end of the call, so
// its rounding differs from fractal_product's order (exact on small integers). Vector kernels for
// c0 16 and 32 (AVX-512) and 8, 16 and 32 (AVX2), plain loops otherwise.
void fractal_product_narrow(dim_t c0, dim_t kn, dim_t rows, const float* const* a, const dim_t* idx,
                            const float* b, float* c, dim_t ldc, bool acc);
// fractal_product_narrow over rows cut to a range of positions: row r's A holds positions
// [lo[r], hi[r]) of the 16 (0 <= lo < hi <= 16), position i's c0 lanes at a[r] + (i - lo[r]) * c0,
// zeros elsewhere, which are not read (a line's edge in the source, read in place: no copy with
// zeros around it). A vector kernel where fractal_narrow_cuts(c0, kn), plain loops otherwise.
void fractal_product_narrow_cut(dim_t c0, dim_t kn, dim_t rows, const float* const* a,
                                const dim_t* lo, const dim_t* hi, const dim_t* idx, const float* b,
                                float* c, dim_t ldc, bool acc);
bool fractal_narrow_cuts(dim_t c0, dim_t kn);
// Whether a vector kernel computes fractal_product_narrow(c0, kn, ...) under the selected ISA.
bool fractal_narrow_vector(dim_t c0, dim_t kn);
// Whether conv_fractal_b's fp32 products for an output of kn channels are narrow ones: kn <=
// kNarrowMax and a vector kernel for c0, or plain loops either way (the portable ISA); else the
// 16-wide vector kernels compute them (e.g. C0 4 under AVX-512).
bool fractal_narrow_runs(dim_t c0, dim_t kn);
// Whether a pass of p in storage multiplies bf16 pairs (vdpbf16ps) at c0: bf16 storage where
// fractal_bf16_pairs(c0, rule), except where the products' output (the forward's K/G, backward
// data's C/G) has narrow products: they take the fp32 narrow products of the bf16-rounded
// operands, the same exact products summed in fp32, because the pairs have no narrow form and
// their 16-wide tiles computed 13 padding columns of conv1's backward data.
bool fractal_multiplies_pairs(const Problem& p, Pass pass, DType storage, dim_t c0, Rule rule);
// The narrow B from column block 0 of pack_weight_transposed's layout (C0 x 16 fractals, row r's
// at bt + r * b_step): dst[(r * kn + j) * c0 + k] = bt[r * b_step + k * 16 + j], rows * kn * c0
// floats.
void narrow_b(dim_t rows, dim_t c0, dim_t kn, const float* bt, dim_t b_step, float* dst);
// The fractals of M block mb of image n's column matrix (plan's order, groups 1) that read an
// element of the source, listed for the products: al[i] the fractal of FRACTAL_Z row idx[i],
// in place in the source where its 16 positions read 16 consecutive source positions of whole C0
// blocks, else built in buf as im2col_fractal_block builds it. Returns how many; rows that read
// nothing are left out. buf: rows * 16 * c0 floats; al, idx and nz (scratch): rows each. Within
// one output line the taps are decided from plan's tables a (kd, kh) and a kw at a time, for all
// C0 blocks at once (no pass over every fractal); elsewhere it is im2col_fractal_block's.
// With lo (hi, cuts: rows each, and one), a fractal of one line whose positions [l, e) read
// consecutive source positions and the others nothing is listed cut instead of built: from the
// back, at rows - 1 - j for j < *cuts, al its position l in the source, lo l and hi e (the
// rows of fractal_product_narrow_cut).
dim_t im2col_fractal_list(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb, float* buf,
                          const float** al, dim_t* idx, unsigned char* nz, dim_t* lo = nullptr,
                          dim_t* hi = nullptr, dim_t* cuts = nullptr);
// The calling thread's scratch slot of the narrow B during conv_fractal_b (a GEMM slot, free
// while the DaVinci algorithms run).
inline constexpr int kFracNarrowSlot = 1;

}  // namespace convlab::davinci
