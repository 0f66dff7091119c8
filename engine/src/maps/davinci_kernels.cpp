// The DaVinci converters' fast kernels: each computes exactly what the generic executor computes
// with the map of the same name (davinci_maps.cpp); tests/maps checks every element.
#include <algorithm>
#include <array>
#include <cstring>

#include "bf16.hpp"
#include "convlab/davinci.hpp"
#include "davinci_internal.hpp"
#include "davinci_pack_simd.hpp"
#include "geom.hpp"
#include "omp_compat.hpp"

namespace convlab::davinci {

using namespace internal;

// [SECTION] fast kernels

// pack / unpack of activations: a plane (n, d, c1) moves C0 channel rows of H*W positions to
// H*W position rows of C0 lanes, a block of kPosBlock positions at a time (the unit of the
// threads' split). Where the selected ISA has a vector run for C0 (davinci_pack_simd.hpp), the
// block is transposed in registers straight between the two sides; elsewhere it goes through a
// tile in L1, so that the NCHW side is read (written) in runs of kPosBlock floats and the
// NC1HWC0 side in whole rows of C0 lanes.
constexpr dim_t kPosBlock = 64;

namespace {

// pack_activation_kernel rounding to the storage type t as it writes: in registers where the
// vector run rounds to t, else by detail::storage_copy into the tile, which the fp32 vector run
// (or the scalar interleave) then reads. The padding lanes are zeros, which every storage type
// holds as they are.
void pack_activation_with(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                          dim_t src_channels, dim_t c_begin, DType t) {
    const ActGeom g = ActGeom::of(dims, c0);
    const dim_t ct = src_channels < 0 ? g.c : src_channels, hw = g.h * g.w;
    const dim_t planes = g.n * g.d * g.c1, blocks = blocks_of(hw, kPosBlock);
    const PositionPack pack(c0, t);
#pragma omp parallel for collapse(2) schedule(static) if (planes * hw * c0 > 65536)
    for (dim_t p = 0; p < planes; ++p)
        for (dim_t blk = 0; blk < blocks; ++blk) {
            const dim_t n = p / (g.d * g.c1), d = p / g.c1 % g.d, c1 = p % g.c1;
            const dim_t i0 = blk * kPosBlock, len = std::min(kPosBlock, hw - i0);
            const dim_t valid = std::min(c0, g.c - c1 * c0);
            const float* rows = src + ((n * ct + c_begin + c1 * c0) * g.d + d) * hw + i0;
            pack(rows, g.d * hw, valid, len, dst + (p * hw + i0) * c0);
        }
}

}  // namespace

internal::PositionPack::PositionPack(dim_t c0, DType storage)
    : c0_(c0),
      direct_(pack_run(c0, storage)),
      run_(direct_ ? nullptr : pack_run(c0, DType::f32)),
      copy_(storage == DType::f32 ? nullptr : detail::storage_copy(storage)) {}

void internal::PositionPack::operator()(const float* src, dim_t stride, dim_t valid, dim_t len,
                                        float* out) const {
    if (direct_) return direct_(src, stride, valid, len, out);
    // Through a tile in L1, so that the rows are read in runs of kPosBlock floats and out is
    // written in whole rows of C0 lanes.
    float tile[64 * kPosBlock];  // tile[ci*kPosBlock + i]; C0 is at most 64
    for (dim_t i0 = 0; i0 < len; i0 += kPosBlock) {
        const dim_t n = std::min(kPosBlock, len - i0);
        for (dim_t ci = 0; ci < valid; ++ci) {
            const float* row = src + ci * stride + i0;
            if (copy_)
                copy_(row, tile + ci * kPosBlock, n);
            else
                std::memcpy(tile + ci * kPosBlock, row,
                            static_cast<std::size_t>(n) * sizeof(float));
        }
        float* o = out + i0 * c0_;
        if (run_) {
            run_(tile, kPosBlock, valid, n, o);
            continue;
        }
        for (dim_t i = 0; i < n; ++i) {
            for (dim_t ci = 0; ci < valid; ++ci) o[i * c0_ + ci] = tile[ci * kPosBlock + i];
            std::fill(o + i * c0_ + valid, o + (i + 1) * c0_, 0.0f);
        }
    }
}

void pack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                            dim_t src_channels, dim_t c_begin) {
    pack_activation_with(dims, c0, src, dst, src_channels, c_begin, DType::f32);
}

namespace internal {

void pack_activation_rounded(DType t, std::span<const dim_t> dims, dim_t c0, const float* src,
                             float* dst, dim_t src_channels, dim_t c_begin) {
    pack_activation_with(dims, c0, src, dst, src_channels, c_begin, t);
}

}  // namespace internal

void unpack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                              dim_t dst_channels, dim_t c_begin) {
    const ActGeom g = ActGeom::of(dims, c0);
    const dim_t ct = dst_channels < 0 ? g.c : dst_channels, hw = g.h * g.w;
    const dim_t planes = g.n * g.d * g.c1, blocks = blocks_of(hw, kPosBlock);
    const UnpackRun run = unpack_run(c0);
#pragma omp parallel for collapse(2) schedule(static) if (planes * hw * c0 > 65536)
    for (dim_t t = 0; t < planes; ++t)
        for (dim_t blk = 0; blk < blocks; ++blk) {
            const dim_t n = t / (g.d * g.c1), d = t / g.c1 % g.d, c1 = t % g.c1;
            const dim_t i0 = blk * kPosBlock, len = std::min(kPosBlock, hw - i0);
            const dim_t valid = std::min(c0, g.c - c1 * c0);
            const float* in = src + (t * hw + i0) * c0;
            float* rows = dst + ((n * ct + c_begin + c1 * c0) * g.d + d) * hw + i0;
            if (run) {
                run(in, valid, len, rows, g.d * hw);
                continue;
            }
            float tile[64 * kPosBlock];  // tile[ci*kPosBlock + i]
            for (dim_t i = 0; i < len; ++i)
                for (dim_t ci = 0; ci < valid; ++ci) tile[ci * kPosBlock + i] = in[i * c0 + ci];
            for (dim_t ci = 0; ci < valid; ++ci)
                std::memcpy(rows + ci * g.d * hw, tile + ci * kPosBlock,
                            static_cast<std::size_t>(len) * sizeof(float));
        }
}

void pack_weight_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const WeiGeom g = WeiGeom::of(dims, c0);
    const dim_t taps = g.taps(), outs = g.n1 * kN0;
    // One output channel o and one input-channel block at a time: the source block (C0 channels
    // x taps) is contiguous; each tap writes C0 contiguous lanes of its fractal row.
#pragma omp parallel for schedule(static) if (g.size() > 65536)
    for (dim_t o = 0; o < outs; ++o)
        for (dim_t c1 = 0; c1 < g.i1; ++c1) {
            const dim_t valid = o < g.o ? std::min(c0, g.i - c1 * c0) : 0;
            const float* in = src + (o * g.i + c1 * c0) * taps;
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh)
                    for (dim_t kw = 0; kw < g.w; ++kw) {
                        const dim_t tap = (kd * g.h + kh) * g.w + kw;
                        float* out = dst + g.offset(g.row(kd, c1, kh, kw), o / kN0, o % kN0, 0);
                        for (dim_t ci = 0; ci < valid; ++ci) out[ci] = in[ci * taps + tap];
                        std::fill(out + valid, out + c0, 0.0f);
                    }
        }
}

void unpack_weight_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const WeiGeom g = WeiGeom::of(dims, c0);
    const dim_t taps = g.taps(), o1s = blocks_of(g.o, kN0);
    // One fractal column (input-channel block c1, output block o1) at a time: each tap's fractal
    // is 16 x C0 contiguous floats and the column's destination is 16 runs of C0 * taps floats,
    // so both sides move in cache-sized pieces. (Walking output channel by output channel read
    // one cache line per fractal row, rows 128 KB apart on ResNet-50's last stage: 2.7 ms for
    // res5a_branch1's weight gradient.)
#pragma omp parallel for collapse(2) schedule(static) if (g.o * g.i * taps > 65536)
    for (dim_t c1 = 0; c1 < g.i1; ++c1)
        for (dim_t o1 = 0; o1 < o1s; ++o1) {
            const dim_t valid = std::min(c0, g.i - c1 * c0), ov = std::min(kN0, g.o - o1 * kN0);
            float* out = dst + (o1 * kN0 * g.i + c1 * c0) * taps;
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh)
                    for (dim_t kw = 0; kw < g.w; ++kw) {
                        const dim_t tap = (kd * g.h + kh) * g.w + kw;
                        const float* in = src + g.offset(g.row(kd, c1, kh, kw), o1, 0, 0);
                        for (dim_t oi = 0; oi < ov; ++oi) {
                            float* o_row = out + oi * g.i * taps + tap;
                            const float* i_row = in + oi * c0;
                            for (dim_t ci = 0; ci < valid; ++ci) o_row[ci * taps] = i_row[ci];
                        }
                    }
        }
}

// tnc5d, tncf and fliprot_fz each move C0 x C0 blocks whose rows are contiguous on one side and
// columns on the other: a block is read a contiguous row at a time into a small tile (L1), then
// written a contiguous row at a time, so that neither side is walked one element per cache line.

void tnc5d_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const ActGeom sg = ActGeom::of(dims, c0);
    const std::vector<dim_t> tdims = swap01(dims);
    const ActGeom dg = ActGeom::of(tdims, c0);
    const dim_t hw = sg.h * sg.w;
    const dim_t n_stride = sg.d * sg.c1 * hw * c0;  // source: the next image
    const dim_t c_stride = dg.d * dg.c1 * hw * c0;  // destination: the next channel
    // A unit: batch block n1 and channel block cb at depth d, a C0 x C0 block per position.
#pragma omp parallel for collapse(3) schedule(static) if (dg.size() > 65536)
    for (dim_t d = 0; d < sg.d; ++d)
        for (dim_t n1 = 0; n1 < dg.c1; ++n1)
            for (dim_t cb = 0; cb < sg.c1; ++cb) {
                const dim_t nv = std::min(c0, sg.n - n1 * c0), cv = std::min(c0, sg.c - cb * c0);
                const float* in = src + sg.offset(n1 * c0, d, cb, 0, 0, 0);
                float* out = dst + dg.offset(cb * c0, d, n1, 0, 0, 0);
                float tile[64 * 64];  // tile[ci*C0 + ni]; lanes ni >= nv stay zero
                std::fill(tile, tile + c0 * c0, 0.0f);
                for (dim_t i = 0; i < hw; ++i) {
                    for (dim_t ni = 0; ni < nv; ++ni) {
                        const float* row = in + ni * n_stride + i * c0;
                        for (dim_t ci = 0; ci < cv; ++ci) tile[ci * c0 + ni] = row[ci];
                    }
                    for (dim_t ci = 0; ci < cv; ++ci)
                        std::memcpy(out + ci * c_stride + i * c0, tile + ci * c0,
                                    static_cast<std::size_t>(c0) * sizeof(float));
                }
            }
}

void tncf_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst, dim_t dst_b,
                 dim_t b_begin) {
    const ActGeom sg = ActGeom::of(dims, c0);
    std::vector<dim_t> wdims = swap01(dims);
    const bool slice = dst_b >= 0;
    if (slice) wdims[0] = dst_b;
    const WeiGeom wg = WeiGeom::of(wdims, c0);
    const dim_t rows = wg.rows();
    const dim_t b_lo = slice ? b_begin : 0, b_hi = slice ? b_begin + sg.c : wg.n1 * kN0;
    const dim_t a_stride = sg.d * sg.c1 * sg.h * sg.w * c0;  // source stride of the batch index
#pragma omp parallel for schedule(static) if (wg.size() > 65536)
    for (dim_t r = 0; r < rows; ++r) {
        const Row4 q = unrow(wg, r);
        float* out = dst + wg.offset(r, 0, 0, 0);
        const dim_t valid = std::min(c0, sg.n - q.c1 * c0);  // lanes a < A
        float tile[64 * 64];  // tile[bi*C0 + ai]; lanes ai >= valid stay zero
        std::fill(tile, tile + c0 * c0, 0.0f);
        // Source channel block bc: rows a (valid of them, a_stride apart) of bv contiguous
        // channels b, into the destination rows b_lo + b (C0 lanes a each).
        for (dim_t bc = 0; bc < sg.c1; ++bc) {
            const dim_t bv = std::min(c0, sg.c - bc * c0);
            const float* in = src + sg.offset(q.c1 * c0, q.kd, bc, q.kh, q.kw, 0);
            for (dim_t ai = 0; ai < valid; ++ai)
                for (dim_t bi = 0; bi < bv; ++bi) tile[bi * c0 + ai] = in[ai * a_stride + bi];
            std::memcpy(out + (b_lo + bc * c0) * c0, tile,
                        static_cast<std::size_t>(bv * c0) * sizeof(float));
        }
        std::fill(out + (b_lo + sg.c) * c0, out + b_hi * c0, 0.0f);  // channels b >= B
    }
}

void fliprot_fz_kernel(const Problem& p, dim_t c0, const float* src, float* dst) {
    const std::vector<dim_t> sdims = p.wei_dims(), ddims = fliprot_dims(p);
    const WeiGeom sg = WeiGeom::of(sdims, c0), dg = WeiGeom::of(ddims, c0);
    const dim_t cg = p.icg(), kg = p.ocg(), rows = dg.rows();
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t r = 0; r < rows; ++r) {
        const Row4 q = unrow(dg, r);
        float* out = dst + dg.offset(r, 0, 0, 0);
        const dim_t valid = std::min(c0, kg - q.c1 * c0);  // lanes kc < K/G
        if (valid <= 0) {
            std::fill(out, out + dg.n1 * kN0 * c0, 0.0f);
            continue;
        }
        float tile[64 * 64];  // tile[t*C0 + ci]; lanes ci >= valid stay zero
        std::fill(tile, tile + c0 * c0, 0.0f);
        // A run of destination rows c = c_0 + t of one group g and one source lane block
        // cc/C0: the source rows o = g*K/G + kc1*C0 + ci (C0 apart, contiguous in the lanes
        // x = cc%C0 + t) of the flipped tap's fractal row.
        for (dim_t c = 0; c < dg.o;) {
            const dim_t g = c / cg, cc = c % cg, x0 = cc % c0;
            const dim_t len = std::min({c0 - x0, cg - cc, dg.o - c});
            const dim_t row = sg.row(sg.d - 1 - q.kd, cc / c0, sg.h - 1 - q.kh, sg.w - 1 - q.kw);
            const float* in = src + sg.offset(row, 0, 0, 0) + (g * kg + q.c1 * c0) * c0 + x0;
            for (dim_t ci = 0; ci < valid; ++ci)
                for (dim_t t = 0; t < len; ++t) tile[t * c0 + ci] = in[ci * c0 + t];
            std::memcpy(out + c * c0, tile, static_cast<std::size_t>(len * c0) * sizeof(float));
            c += len;
        }
        std::fill(out + dg.o * c0, out + dg.n1 * kN0 * c0, 0.0f);  // rows c >= C
    }
}

namespace {

// Copies the first `valid` lanes of a C0 vector and zeroes the rest.
inline void copy_lanes(const float* in, float* out, dim_t valid, dim_t c0) {
    std::memcpy(out, in, static_cast<std::size_t>(valid) * sizeof(float));
    std::fill(out + valid, out + c0, 0.0f);
}

}  // namespace

void strided5d_kernel(const Problem& p, dim_t c0, const float* src, float* dst) {
    const std::vector<dim_t> ydims = p.dst_dims();
    std::vector<dim_t> zdims{p.mb, p.oc};
    for (int i = 0; i < p.ndims; ++i) zdims.push_back((p.out(i) - 1) * p.stride[i] + 1);
    const ActGeom sg = ActGeom::of(ydims, c0), dg = ActGeom::of(zdims, c0);
    const auto s = axes3(p.stride, p.ndims, 1);
    const dim_t planes = dg.n * dg.d * dg.c1, line = dg.w * c0;
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t n = t / (dg.d * dg.c1), d = t / dg.c1 % dg.d, c1 = t % dg.c1;
        const dim_t valid = std::min(c0, sg.c - c1 * c0);
        for (dim_t h = 0; h < dg.h; ++h) {
            float* out = dst + dg.offset(n, d, c1, h, 0, 0);
            if (d % s[0] || h % s[1]) {
                std::fill(out, out + line, 0.0f);
                continue;
            }
            const float* in = src + sg.offset(n, d / s[0], c1, h / s[1], 0, 0);
            for (dim_t w = 0; w < dg.w; ++w) {
                if (w % s[2])
                    std::fill(out + w * c0, out + (w + 1) * c0, 0.0f);
                else
                    copy_lanes(in + w / s[2] * c0, out + w * c0, valid, c0);
            }
        }
    }
}

void pad5d_kernel(std::span<const dim_t> dims, std::span<const dim_t> pad_begin,
                  std::span<const dim_t> pad_end, dim_t c0, const float* src, float* dst) {
    const std::vector<dim_t> pdims = padded_dims(dims, pad_begin, pad_end);
    const ActGeom sg = ActGeom::of(dims, c0), dg = ActGeom::of(pdims, c0);
    const auto pb = axes3(pad_begin, dims.size() - 2, 0);
    const dim_t planes = dg.n * dg.d * dg.c1, line = dg.w * c0;
    dim_t w_lo, w_hi;  // destination w that read the source
    detail::valid_range(-pb[2], 1, sg.w, dg.w, w_lo, w_hi);
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t n = t / (dg.d * dg.c1), d = t / dg.c1 % dg.d, c1 = t % dg.c1;
        const dim_t valid = std::min(c0, sg.c - c1 * c0), sd = d - pb[0];
        for (dim_t h = 0; h < dg.h; ++h) {
            float* out = dst + dg.offset(n, d, c1, h, 0, 0);
            const dim_t sh = h - pb[1];
            if (sd < 0 || sd >= sg.d || sh < 0 || sh >= sg.h) {
                std::fill(out, out + line, 0.0f);
                continue;
            }
            const float* in = src + sg.offset(n, sd, c1, sh, 0, 0);
            std::fill(out, out + w_lo * c0, 0.0f);
            for (dim_t w = w_lo; w < w_hi; ++w)
                copy_lanes(in + (w - pb[2]) * c0, out + w * c0, valid, c0);
            std::fill(out + w_hi * c0, out + line, 0.0f);
        }
    }
}

void im2col_fractal_kernel(const Problem& p, dim_t c0, const float* src, dim_t n, float* dst,
                           dim_t m1_begin, dim_t m1_end) {
    const std::vector<dim_t> xdims = group_src_dims(p);
    const ActGeom sg = ActGeom::of(xdims, c0);
    const detail::Geom3 g = detail::geom3(p);
    const dim_t rows = g.k[0] * sg.c1 * g.k[1] * g.k[2], m = g.out_size();
    if (m1_end < 0) m1_end = blocks_of(m, kN0);
    const dim_t m_begin = m1_begin * kN0, m_end = std::min(m1_end * kN0, m);
    const dim_t chunk = (m1_end - m1_begin) * kN0;  // rows of the destination block column
#pragma omp parallel for schedule(static) if (rows * chunk * c0 > 65536)
    for (dim_t r = 0; r < rows; ++r) {
        dim_t q = r;
        const dim_t kw = q % g.k[2];
        q /= g.k[2];
        const dim_t kh = q % g.k[1];
        q /= g.k[1];
        const dim_t c1 = q % sg.c1, kd = q / sg.c1;
        const dim_t valid = std::min(c0, sg.c - c1 * c0);
        float* out = dst + r * chunk * c0;
        const dim_t off_d = kd * g.d[0] - g.pb[0], off_h = kh * g.d[1] - g.pb[1],
                    off_w = kw * g.d[2] - g.pb[2];
        dim_t w_lo, w_hi;
        detail::valid_range(off_w, g.s[2], g.in[2], g.out[2], w_lo, w_hi);
        // Walk the output positions of the range a line (fixed od, oh) at a time.
        for (dim_t mm = m_begin; mm < m_end;) {
            const dim_t ow0 = mm % g.out[2], t = mm / g.out[2];
            const dim_t oh = t % g.out[1], od = t / g.out[1];
            const dim_t len = std::min(g.out[2] - ow0, m_end - mm);
            float* seg = out + (mm - m_begin) * c0;  // position ow is seg[(ow - ow0) * c0]
            const dim_t id = od * g.s[0] + off_d, ih = oh * g.s[1] + off_h;
            const dim_t lo = std::clamp(w_lo, ow0, ow0 + len), hi = std::clamp(w_hi, lo, ow0 + len);
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                std::fill(seg, seg + len * c0, 0.0f);
            } else {
                const float* in = src + sg.offset(n, id, c1, ih, 0, 0);
                std::fill(seg, seg + (lo - ow0) * c0, 0.0f);
                for (dim_t ow = lo; ow < hi; ++ow)
                    copy_lanes(in + (ow * g.s[2] + off_w) * c0, seg + (ow - ow0) * c0, valid, c0);
                std::fill(seg + (hi - ow0) * c0, seg + len * c0, 0.0f);
            }
            mm += len;
        }
        std::fill(out + (m_end - m_begin) * c0, out + chunk * c0, 0.0f);
    }
}

}  // namespace convlab::davinci
