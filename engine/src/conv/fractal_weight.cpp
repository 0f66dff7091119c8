// The weight gradient in fractal form with the batch packed as the reduction's tail.
//
// The via-forward scheme (dW = TNC(conv(TNC(X), TNCf(dY)))) reduces over the batch in the C0
// lanes of TNC(X): at batch 1, 15 of 16 lanes are padding zeros, and the kernel taps become the
// output positions of 16-row fractals (9 of 16 rows used by a 3x3). Here the same products are
// ordered so that nothing is padded but the ends: the reduction runs over P = N x out positions,
// 16 consecutive (n, od, oh, ow) per fractal (only the last fractal holds padding), and each
// result fractal is a FRACTAL_Z fractal of dW itself (16 output channels x C0 input channels of
// one row (kd, c1, kh, kw)):
//   dW(row, nb) = sum over f of Yf(nb, f) (16 channels k x 16 positions)
//                             * Xf(row, f) (16 positions x C0 lanes of input block c1)
// Yf is dY (TNCf's fractals, positions along the reduction), Xf the input gathered at each
// position's tap (TNC(X) with the batch joined to the positions); both are built from dense runs
// (a position's C0 lanes of NC1HWC0, a channel's run of positions of NCHW), a block of reduction
// fractals at a time so that memory stays bounded.
//
// A group of at most 4 input channels (C0 16, the forward's forward_c0 condition) runs as
// FRACTAL_Z_C04, as the Ascend toolkits do for such layers, with the taps packed tighter: one
// 16-lane input fractal holds tr = 16 / cw consecutive taps of the kernel x the group's cw = C/G
// channels (lane t*cw + c for the t-th tap of the row's tr, zero past the last tap and in the
// lanes past tr*cw), from the input packed at C0 cw. Each result tile is then 16 output channels
// x (tr taps x cw channels): conv1 (3 channels, 7x7) makes 10 rows of tiles of 5 taps instead of
// 49 whose 16 lanes hold 3 channels (or 13 of 4 taps x 4 lanes, one of them padding), the same
// 16 x 16 products on 5x fewer of them. The tiles accumulate in a buffer of their own and are
// scattered to OIHW or FRACTAL_Z after the last reduction block.
#include "omp_compat.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../maps/davinci_internal.hpp"
#include "../maps/davinci_pack_simd.hpp"
#include "bf16.hpp"
#include "bit_cast.hpp"
#include "checked.hpp"
#include "convlab/davinci.hpp"
#include "fractal_kernel.hpp"
#include "fractal_weight_kernel.hpp"
#include "geom.hpp"
#include "microkernel.hpp"

namespace convlab::davinci {

namespace {

constexpr dim_t kFrac = kN0 * kN0;  // floats of a dY fractal (16 channels x 16 positions)

// The sizes of one group's product.
struct Plan {
    detail::Geom3 g;
    ActGeom xg;        // the group's input in NC1HWC0 / NDC1HWC0 (C0 4 with c04)
    WeiGeom wg;        // the group's weight gradient in FRACTAL_Z (K/G, C/G, k...)
    bool c04 = false;  // FRACTAL_Z_C04: input fractals of taps x at most 4 channels
    dim_t cw = 0;      // c04: lanes of a tap (the group's channels, 1 to 4)
    dim_t tr = 0;      // c04: taps of a row (16 / cw: 5 of 3 channels, 4 of 4)
    dim_t rows = 0;    // rows of input fractals (wg.rows(), or ceil(taps / tr) with c04)
    dim_t m = 0;       // output positions of an image
    dim_t p = 0;       // reduction length N * m
    dim_t p1 = 0;      // reduction fractals
    dim_t chunk = 0;   // reduction fractals per block
};

Plan plan_of(const Problem& p, dim_t c0) {
    Problem q = p;
    q.ic = p.icg();
    q.oc = p.ocg();
    q.groups = 1;
    Plan s;
    s.g = detail::geom3(q);
    // The forward's condition for 4-lane fractals: C0 16 (four taps of 4 lanes fill a fractal)
    // and at most 4 channels a group (forward_c0 also gives 4 for a C0 of 4 asked for).
    s.c04 = c0 == kC0 && forward_c0(p, c0) == kC0Small;
    // A tap's lanes are the group's channels, no padding lane between taps: conv1's 3 channels
    // make rows of 5 taps (15 lanes), 10 rows for its 49 taps rather than 13 of 4 taps x 4 lanes.
    s.cw = s.c04 ? q.ic : 0;
    s.tr = s.c04 ? kN0 / s.cw : 0;
    s.xg = ActGeom::of(q.src_dims(), s.c04 ? s.cw : c0);
    s.wg = WeiGeom::of(q.wei_dims(), c0);
    s.rows = s.c04 ? blocks_of(s.wg.taps(), s.tr) : s.wg.rows();
    s.m = s.g.out_size();
    s.p = detail::sat_mul(p.mb, s.m);
    s.p1 = blocks_of(s.p, kN0);
    // A block's dY fractals (all channel blocks) within about 256 KB, its input fractals within
    // about 4 MB, at least 4 fractals (the results are read and written once per block).
    const dim_t rows = s.rows;
    dim_t chunk = std::max<dim_t>(4, (dim_t{1} << 16) / (s.wg.n1 * kFrac));
    chunk = std::min(chunk, std::max<dim_t>(4, (dim_t{1} << 20) / detail::sat_mul(rows, kN0 * c0)));
    s.chunk = std::clamp<dim_t>(chunk, 1, std::max<dim_t>(s.p1, 1));
    return s;
}

// The dY fractals of reduction fractals [f0, f0 + cf) for dY's channels [k_begin, k_begin +
// n1*16) of (N, k_total, out...): yf[(nb*chunk + f - f0)*256 + i*16 + u] = dY(n, k_begin + nb*16
// + i, pos) for reduction index f*16 + u = n*m + pos; zero for channels past kg and indices past
// P. A block at a time, as the input's, so that the products read them from cache; a fractal at
// a time, so that each is written whole in one go (its 16 channels' runs read side by side). The
// runs are moved by copy, which rounds them to the storage type (detail::storage_copy; fp32:
// fixed-size copies, not calls, where a fractal's 16 positions lie in one image).
void pack_dy(const Plan& s, const float* dy, dim_t k_total, dim_t k_begin, dim_t kg, dim_t f0,
             dim_t cf, float* yf, DType storage) {
    const detail::StorageCopy copy =
        storage == DType::f32 ? nullptr : detail::storage_copy(storage);
    const dim_t units = s.wg.n1 * cf;
#pragma omp parallel for schedule(static) if (units * kFrac > 16384)
    for (dim_t u = 0; u < units; ++u) {
        const dim_t nb = u / cf, f = f0 + u % cf;
        float* frac = yf + (nb * s.chunk + u % cf) * kFrac;
        const dim_t idx0 = f * kN0, end = std::min(idx0 + kN0, s.p);
        const dim_t n0 = idx0 / s.m, pos0 = idx0 % s.m;
        const bool whole = copy == nullptr && end - idx0 == kN0 && pos0 + kN0 <= s.m;
        const dim_t next = idx0 + cf * kN0;
        const float* ahead =
            next < s.p ? dy + ((next / s.m) * k_total + k_begin) * s.m + next % s.m : nullptr;
        for (dim_t i = 0; i < kN0; ++i) {
            const dim_t k = nb * kN0 + i;
            float* row = frac + i * kN0;
            if (k >= kg) {
                std::fill(row, row + kN0, 0.0f);
                continue;
            }
            const float* src = dy + (n0 * k_total + k_begin + k) * s.m + pos0;
            // The same channel's first line of this fractal's place in the next block, which
            // this thread packs next (the same units each block): requested now, so that it is
            // in L2 by then. A block's runs are 16 fractals (1 KiB) of each of up to hundreds of
            // channels, too short for the hardware prefetcher to follow.
            if (ahead) __builtin_prefetch(ahead + k * s.m, 0, 2);
            if (whole) {
                std::memcpy(row, src, static_cast<std::size_t>(kN0) * sizeof(float));
                continue;
            }
            // The fractal's runs: from pos0 to its image's end, then from each next image's start.
            for (dim_t idx = idx0, n = n0, pos = pos0; idx < end; ++n, pos = 0) {
                const dim_t len = std::min(s.m - pos, end - idx);
                const float* run = dy + (n * k_total + k_begin + k) * s.m + pos;
                if (copy)
                    copy(run, row + (idx - idx0), len);
                else
                    std::memcpy(row + (idx - idx0), run,
                                static_cast<std::size_t>(len) * sizeof(float));
                idx += len;
            }
            std::fill(row + (end - idx0), row + kN0, 0.0f);
        }
    }
}

// The input fractals of reduction fractals [f0, f0 + cf): xf[(row*chunk + f - f0)*16*C0 + u*C0 +
// ci] = X(n, id, c1, ih, iw, ci) for reduction index f*16 + u = n*m + (od, oh, ow) and
// i* = o* * s - pb + k* * dil, zero outside the input and past P. A line (n, od, oh) of positions
// at a time: one copy of C0 lanes per position, one copy of the whole run at stride 1.
void gather_x(const Plan& s, dim_t c0, const float* x5, dim_t f0, dim_t cf, float* xf) {
    const detail::Geom3& g = s.g;
    const dim_t rows = s.wg.rows(), lanes = kN0 * c0;
    const dim_t m_begin = f0 * kN0, m_end = std::min((f0 + cf) * kN0, s.p);
#pragma omp for schedule(static)
    for (dim_t r = 0; r < rows; ++r) {
        const auto [kd, c1, kh, kw] = fractal_row(r, g, s.xg.c1);
        float* out = xf + r * s.chunk * lanes;
        const dim_t off_d = kd * g.d[0] - g.pb[0], off_h = kh * g.d[1] - g.pb[1],
                    off_w = kw * g.d[2] - g.pb[2];
        dim_t w_lo, w_hi;
        detail::valid_range(off_w, g.s[2], g.in[2], g.out[2], w_lo, w_hi);
        for (dim_t mm = m_begin; mm < m_end;) {
            const dim_t n = mm / s.m, pos = mm % s.m;
            const dim_t ow0 = pos % g.out[2], rest = pos / g.out[2];
            const dim_t oh = rest % g.out[1], od = rest / g.out[1];
            const dim_t len = std::min(g.out[2] - ow0, m_end - mm);
            float* seg = out + (mm - m_begin) * c0;  // position ow is seg[(ow - ow0) * c0]
            const dim_t id = od * g.s[0] + off_d, ih = oh * g.s[1] + off_h;
            const dim_t lo = std::clamp(w_lo, ow0, ow0 + len), hi = std::clamp(w_hi, lo, ow0 + len);
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                std::fill(seg, seg + len * c0, 0.0f);
            } else {
                const float* in = x5 + s.xg.offset(n, id, c1, ih, 0, 0) + off_w * c0;
                std::fill(seg, seg + (lo - ow0) * c0, 0.0f);
                if (g.s[2] == 1)
                    std::memcpy(seg + (lo - ow0) * c0, in + lo * c0,
                                static_cast<std::size_t>((hi - lo) * c0) * sizeof(float));
                else
                    for (dim_t ow = lo; ow < hi; ++ow)
                        std::memcpy(seg + (ow - ow0) * c0, in + ow * g.s[2] * c0,
                                    static_cast<std::size_t>(c0) * sizeof(float));
                std::fill(seg + (hi - ow0) * c0, seg + len * c0, 0.0f);
            }
            mm += len;
        }
        std::fill(out + (m_end - m_begin) * c0, out + cf * lanes, 0.0f);
    }
}

// Copies F floats to each of n positions, dst + i * 16 from src + i * step (a fixed size, so
// that each is a few vector moves rather than a call).
template <int F>
void copy_runs(float* dst, const float* src, dim_t step, dim_t n) {
    for (dim_t i = 0; i < n; ++i)
        std::memcpy(dst + i * kN0, src + i * step, static_cast<std::size_t>(F) * sizeof(float));
}
// Zeroes F floats at each of n positions dst + i * 16 (fixed sizes, as copy_runs).
template <int F>
void zero_runs(float* dst, dim_t n) {
    for (dim_t i = 0; i < n; ++i) std::fill_n(dst + i * kN0, F, 0.0f);
}

template <int... F>
constexpr auto copy_table(std::integer_sequence<int, F...>) {
    return std::array<void (*)(float*, const float*, dim_t, dim_t), sizeof...(F)>{
        copy_runs<F + 1>...};
}
template <int... F>
constexpr auto zero_table(std::integer_sequence<int, F...>) {
    return std::array<void (*)(float*, dim_t), sizeof...(F)>{zero_runs<F + 1>...};
}
// copy_runs and zero_runs of f floats, 1 to 16.
void copy_floats(dim_t f, float* dst, const float* src, dim_t step, dim_t n) {
    static constexpr auto table = copy_table(std::make_integer_sequence<int, kN0>{});
    table[static_cast<std::size_t>(f - 1)](dst, src, step, n);
}
void zero_floats(dim_t f, float* dst, dim_t n) {
    static constexpr auto table = zero_table(std::make_integer_sequence<int, kN0>{});
    table[static_cast<std::size_t>(f - 1)](dst, n);
}

// gather_x's block as FRACTAL_Z_C04 from the input packed at C0 cw (x5, cw = C/G): xf[(row*chunk
// + f - f0)*256 + u*16 + t*cw + ci] = X(n, id, ih, iw, ci) at tap row*tr + t (kd, kh, kw
// row-major) for reduction index f*16 + u, zero outside the input, past P, for taps past the last
// and for lanes past tr*cw. A line (n, od, oh) of positions at a time, all tr taps of the row on
// it while it is in cache; taps of one kernel line (consecutive kw, dilation 1) read consecutive
// cw-lane groups of x5, so such a run of taps is one copy of up to 16 floats per position.
void gather_x4(const Plan& s, const float* x5, dim_t f0, dim_t cf, float* xf) {
    const detail::Geom3& g = s.g;
    const dim_t taps = s.wg.taps(), cw = s.cw, tr = s.tr, sw = g.s[2] * cw;
    const dim_t m_begin = f0 * kN0, m_end = std::min((f0 + cf) * kN0, s.p);
    const auto zero = [](float* d, dim_t n) { std::fill(d, d + n, 0.0f); };
#pragma omp for schedule(static)
    for (dim_t r = 0; r < s.rows; ++r) {
        float* out = xf + r * s.chunk * kFrac;  // position u's lanes at out[u * 16]
        // The row's taps: offsets, the outputs [lo, hi) of a line that read inside the input
        // along w, and runs [run[j], run[j + 1]) of taps on one kernel line.
        const dim_t nt = std::min(tr, taps - r * tr);
        dim_t off_d[kN0], off_h[kN0], off_w[kN0], lo_t[kN0], hi_t[kN0];
        dim_t run[kN0 + 1], nr = 0;
        for (dim_t t = 0; t < nt; ++t) {
            const dim_t tap = r * tr + t;
            const dim_t kw = tap % g.k[2], kh = tap / g.k[2] % g.k[1], kd = tap / g.k[2] / g.k[1];
            off_d[t] = kd * g.d[0] - g.pb[0];
            off_h[t] = kh * g.d[1] - g.pb[1];
            off_w[t] = kw * g.d[2] - g.pb[2];
            detail::valid_range(off_w[t], g.s[2], g.in[2], g.out[2], lo_t[t], hi_t[t]);
            if (t == 0 || g.d[2] != 1 || off_d[t] != off_d[t - 1] || off_h[t] != off_h[t - 1])
                run[nr++] = t;
        }
        run[nr] = nt;
        for (dim_t mm = m_begin; mm < m_end;) {
            const dim_t n = mm / s.m, pos = mm % s.m;
            const dim_t ow0 = pos % g.out[2], rest = pos / g.out[2];
            const dim_t oh = rest % g.out[1], od = rest / g.out[1];
            const dim_t len = std::min(g.out[2] - ow0, m_end - mm), ow1 = ow0 + len;
            float* seg = out + (mm - m_begin) * kN0;  // position ow at seg[(ow - ow0) * 16]
            for (dim_t j = 0; j < nr; ++j) {
                const dim_t ta = run[j], tb = run[j + 1];
                float* dst = seg + ta * cw;
                const dim_t id = od * g.s[0] + off_d[ta], ih = oh * g.s[1] + off_h[ta];
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                    zero_floats((tb - ta) * cw, dst, len);
                    continue;
                }
                const float* line = x5 + s.xg.offset(n, id, 0, ih, 0, 0);
                // Where every tap of the run reads inside: one copy per position; elsewhere
                // (the line's ends) tap by tap.
                dim_t lo = ow0, hi = ow1;
                for (dim_t t = ta; t < tb; ++t) {
                    lo = std::max(lo, lo_t[t]);
                    hi = std::min(hi, hi_t[t]);
                }
                lo = std::min(lo, ow1);
                hi = std::max(lo, hi);
                const auto edge = [&](dim_t from, dim_t to) {
                    for (dim_t ow = from; ow < to; ++ow)
                        for (dim_t t = ta; t < tb; ++t) {
                            float* d = seg + (ow - ow0) * kN0 + t * cw;
                            if (ow >= lo_t[t] && ow < hi_t[t])
                                std::memcpy(d, line + (ow * g.s[2] + off_w[t]) * cw,
                                            static_cast<std::size_t>(cw) * sizeof(float));
                            else
                                zero(d, cw);
                        }
                };
                edge(ow0, lo);
                // Position ow's run starts at tap ta's element, ow * s + off_w[ta].
                float* d = dst + (lo - ow0) * kN0;
                const float* src = line + (lo * g.s[2] + off_w[ta]) * cw;
                if (hi > lo) copy_floats((tb - ta) * cw, d, src, sw, hi - lo);
                edge(hi, ow1);
            }
            // The lanes past the row's taps (and past 16 / cw taps' lanes: lane 15 with 3
            // channels).
            if (nt * cw < kN0) zero_floats(kN0 - nt * cw, seg + nt * cw, len);
            mm += len;
        }
        zero(out + (m_end - m_begin) * kN0, (cf * kN0 - (m_end - m_begin)) * kN0);
    }
}

// gather_x's block for a 1x1 kernel without padding, packed from the source src (N,
// src_channels, spatial...), channels [c_begin, c_begin + C/G): xf[(r*chunk + f - f0)*16*C0 +
// u*C0 + ci] = X(n, c_begin + r*C0 + ci, od*sd, oh*sh, ow*sw) for reduction index f*16 + u = n*m
// + (od, oh, ow), rounded to the storage type t, zero for lanes past C/G and indices past P. At
// stride 1 an image's run of positions is one pack of consecutive positions; otherwise a line's
// input positions ow*sw, from the first to the last, are packed into a buffer of the thread and
// every sw-th copied (the rows the kernel skips are not read at all).
void pack_x(const Plan& s, dim_t c0, const float* src, dim_t src_channels, dim_t c_begin, dim_t f0,
            dim_t cf, float* xf, DType t) {
    const detail::Geom3& g = s.g;
    const dim_t rows = s.wg.rows(), lanes = kN0 * c0, cg = s.xg.c;
    const dim_t in_sp = g.in[0] * g.in[1] * g.in[2];
    const dim_t m_begin = f0 * kN0, m_end = std::min((f0 + cf) * kN0, s.p);
    const bool dense = s.m == in_sp;  // stride 1: output positions are the input's
    std::vector<float> line(dense ? 0 : static_cast<std::size_t>(g.in[2] * c0));
    const internal::PositionPack pack(c0, t);  // the activation pack's, rounding to t
    // Units of a row's 4 fractals, so that the threads share a block of few rows (64 channels
    // make 4).
    constexpr dim_t piece = 4 * kN0;
    const dim_t pieces = blocks_of(m_end - m_begin, piece);
#pragma omp for schedule(static)
    for (dim_t u = 0; u < rows * pieces; ++u) {
        const dim_t r = u / pieces, pc = u % pieces;
        float* out = xf + r * s.chunk * lanes;
        const dim_t valid = std::min(c0, cg - r * c0);
        const dim_t u_begin = m_begin + pc * piece, u_end = std::min(m_end, u_begin + piece);
        for (dim_t mm = u_begin; mm < u_end;) {
            const dim_t n = mm / s.m, pos = mm % s.m;
            const float* plane = src + (n * src_channels + c_begin + r * c0) * in_sp;
            float* seg = out + (mm - m_begin) * c0;
            if (dense) {
                const dim_t len = std::min(s.m - pos, u_end - mm);
                pack(plane + pos, in_sp, valid, len, seg);
                mm += len;
                continue;
            }
            const dim_t ow0 = pos % g.out[2], rest = pos / g.out[2];
            const dim_t oh = rest % g.out[1], od = rest / g.out[1];
            const dim_t len = std::min(g.out[2] - ow0, u_end - mm);
            const float* row =
                plane + ((od * g.s[0]) * g.in[1] + oh * g.s[1]) * g.in[2] + ow0 * g.s[2];
            if (g.s[2] == 1) {
                pack(row, in_sp, valid, len, seg);
            } else {
                pack(row, in_sp, valid, (len - 1) * g.s[2] + 1, line.data());
                for (dim_t i = 0; i < len; ++i)
                    std::memcpy(seg + i * c0, line.data() + i * g.s[2] * c0,
                                static_cast<std::size_t>(c0) * sizeof(float));
            }
            mm += len;
        }
        if (pc == pieces - 1) std::fill(out + (m_end - m_begin) * c0, out + cf * lanes, 0.0f);
    }
}

// The input fractals' block (rows x chunk fractals of 16 positions x 16 lanes, the first cf of
// each row built) in bf16 pairs along the positions, the B of fractal_product_bf16:
// dst[f*256 + (u/2)*32 + 2*ci + u%2] = bf16 bits of src[f*256 + u*16 + ci] (values already
// rounded to bf16, so the bits are their upper halves).
void input_pairs(const float* src, std::uint16_t* dst, dim_t rows, dim_t chunk, dim_t cf) {
    const auto bits = [](float v) {
        return static_cast<std::uint16_t>(detail::bit_cast<std::uint32_t>(v) >> 16);
    };
#pragma omp parallel for collapse(2) schedule(static) if (rows * cf * kFrac > 65536)
    for (dim_t r = 0; r < rows; ++r)
        for (dim_t f = 0; f < cf; ++f) {
            const float* in = src + (r * chunk + f) * kFrac;
            std::uint16_t* out = dst + (r * chunk + f) * kFrac;
            for (dim_t u = 0; u < kN0; u += 2)
                for (dim_t ci = 0; ci < kN0; ++ci) {
                    out[u * kN0 + 2 * ci] = bits(in[u * kN0 + ci]);
                    out[u * kN0 + 2 * ci + 1] = bits(in[(u + 1) * kN0 + ci]);
                }
        }
}

}  // namespace

dim_t fractal_weight_work(const Problem& p, dim_t c0) {
    const Plan s = plan_of(p, c0);
    dim_t floats = detail::sat_mul(s.xg.n, detail::sat_mul(s.xg.c1 * s.xg.c0, s.xg.spatial()));
    floats = detail::sat_add(floats, detail::sat_mul({s.wg.n1, s.chunk, kFrac}));
    floats = detail::sat_add(floats, detail::sat_mul({s.rows, s.chunk, kN0, c0}));
    // bf16 products (C0 16): the dY fractals and a block of input fractals in bf16 too.
    floats = detail::sat_add(floats, detail::sat_mul({s.wg.n1, s.chunk, kFrac}) / 2 + 1);
    floats = detail::sat_add(floats, detail::sat_mul({s.rows, s.chunk, kN0, c0}) / 2 + 1);
    // The group's tiles: FRACTAL_Z_C04's own, or a group's FRACTAL_Z with groups.
    if (s.c04)
        floats = detail::sat_add(floats, detail::sat_mul({s.rows, s.wg.n1, kN0, c0}));
    else if (p.groups > 1)
        floats = detail::sat_add(floats, s.wg.size());
    return floats;
}

namespace {

// Taps of a tile group in backward_weight_fractal_oihw (pointers on the stack, and the per-thread
// buffer of one reduction block within 64 KB).
constexpr dim_t kMaxTaps = 64;

// The taps per unit (input block, output block, run of taps) of the OIHW write for a kernel of
// `taps` taps: all of them, unless the buffer or the pointer list would be too long or the
// units too few to share between the threads (then fewer, an even number: pairs of taps share
// their dY fractals, fractal_product2).
dim_t taps_per_unit(dim_t taps, dim_t lanes, dim_t blocks) {
    dim_t tb = std::clamp<dim_t>((dim_t{1} << 14) / lanes, 2, kMaxTaps);
    tb = std::min(tb, taps);
    const dim_t want = 4 * static_cast<dim_t>(omp_get_max_threads());
    while (tb > 2 && blocks * blocks_of(taps, tb) < want) tb = (tb - tb / 2 + 1) / 2 * 2;
    return tb;
}

// The weight gradient's products, with the result in FRACTAL_Z (dw_fz) or OIHW (dw_oihw): one of
// them is null.
void weight_gradient(const Problem& p, const float* src, const float* diff_dst, float* dw_fz,
                     float* dw_oihw, Profiler* prof, const Options& o) {
    p.check(true);
    check_c0(o.c0);
    const dim_t c0 = o.c0;
    const Plan s = plan_of(p, c0);
    const dim_t cg = p.icg(), kg = p.ocg(), rows = s.rows, n1 = s.wg.n1, c1s = s.wg.i1;
    const dim_t lanes = kN0 * c0, taps = s.wg.taps();
    [[maybe_unused]] const dim_t tiles = rows * n1;  // read by the OpenMP clauses only
    const bool to_oihw = dw_oihw != nullptr;
    // One block of reduction fractals: every tile is final when its product returns.
    const bool single = s.p1 <= s.chunk;
    const std::vector<dim_t> xd = [&] {
        std::vector<dim_t> d = p.src_dims();
        d[1] = cg;
        return d;
    }();
    const Kept x5 = kept(kFracSlot[0], s.xg.size()), yf = kept(kFracSlot[1], n1 * s.chunk * kFrac);
    const Kept xf = kept(kFracSlot[2], rows * s.chunk * lanes);
    // bf16 products where the CPU has them: C0 = 16, so that an input fractal is 16 x 16 and
    // its pairs along the positions make the kernel's B.
    const bool pairs =
        o.storage == DType::bf16 && c0 == kN0 && fractal_bf16_pairs(kN0, o.bf16_pairs);
    std::uint16_t* yf16 = pairs ? reinterpret_cast<std::uint16_t*>(
                                      kept(kFracSlot[4], n1 * s.chunk * kFrac / 2 + 1).get())
                                : nullptr;
    std::uint16_t* xf16 = pairs ? reinterpret_cast<std::uint16_t*>(
                                      kept(kFracSlot[5], rows * s.chunk * lanes / 2 + 1).get())
                                : nullptr;
    // A group's gradient in FRACTAL_Z: FRACTAL_Z output, in place with one group, else in its own
    // FRACTAL_Z, scattered after; OIHW output, the tiles that wait for later reduction blocks
    // (none with one block, which makes the others in per-thread buffers). FRACTAL_Z_C04: the
    // group's tiles in their own buffer, scattered after the last block to either output.
    Kept own{nullptr};
    if (s.c04)
        own = kept(kFracSlot[3], rows * n1 * lanes);
    else if (to_oihw ? !single : p.groups > 1)
        own = kept(kFracSlot[3], s.wg.size());
    if (!to_oihw && p.groups > 1) {
        Span z(prof, "zero");
        std::fill(dw_fz, dw_fz + WeiGeom::of(p.wei_dims(), c0).size(), 0.0f);
    }
    float* dw = own.get() ? own.get() : dw_fz;
    const dim_t tb = taps > 1 ? taps_per_unit(taps, lanes, c1s * n1) : 1;
    if (to_oihw && single && !s.c04)
        reserve_thread_scratch(kFracAccSlot, std::max<dim_t>(2, tb) * lanes, omp_get_max_threads());
    const dim_t n1_all = blocks_of(p.oc, kN0);
    const dim_t b_row = s.chunk * lanes;  // B: a row's block of input fractals
    // A 1x1 kernel without padding: input fractal (c1, f) is 16 positions of block c1 (at
    // stride 1 consecutive ones), each position's C0 channels. They are packed from the source a
    // block at a time, straight into the block of input fractals, instead of the whole input to
    // NC1HWC0 first and then copied again (at batch 32 two passes over 100 MB through memory; at
    // stride 2, 4 times the positions read).
    const detail::Geom3& g3 = s.g;
    bool from_src = !s.c04 && taps == 1;
    for (int a = 0; a < 3; ++a)
        from_src = from_src && g3.pb[a] == 0 && (g3.out[a] - 1) * g3.s[a] < g3.in[a];
    for (dim_t grp = 0; grp < p.groups; ++grp) {
        if (!from_src) {
            Span sp(prof, "pack_src");
            internal::pack_activation_rounded(o.storage, xd, s.xg.c0, src, x5.get(), p.ic,
                                              grp * cg);
        }
        // The group's K/G output channels: rows grp*K/G + k of OIHW.
        float* wo = to_oihw ? dw_oihw + grp * kg * cg * taps : nullptr;
        if (s.p1 == 0) {
            if (to_oihw && !s.c04)
                std::fill(wo, wo + kg * cg * taps, 0.0f);
            else
                std::fill(dw, dw + rows * n1 * lanes, 0.0f);
        }
        for (dim_t f0 = 0; f0 < s.p1; f0 += s.chunk) {
            const dim_t cf = std::min(s.chunk, s.p1 - f0);
            const bool acc = f0 > 0, last = f0 + cf == s.p1;
            {
                Span sp(prof, "tncf");
                pack_dy(s, diff_dst, p.oc, grp * kg, kg, f0, cf, yf.get(), o.storage);
                if (pairs)
                    for (dim_t nb = 0; nb < n1; ++nb)
                        bf16_bits(yf.get() + nb * s.chunk * kFrac, yf16 + nb * s.chunk * kFrac,
                                  cf * kFrac);
            }
            {
                Span sp(prof, "tnc");
#pragma omp parallel if (rows * cf * lanes > (from_src ? 8192 : 65536))
                {
                    if (from_src)
                        pack_x(s, c0, src, p.ic, grp * cg, f0, cf, xf.get(), o.storage);
                    else if (s.c04)
                        gather_x4(s, x5.get(), f0, cf, xf.get());
                    else
                        gather_x(s, c0, x5.get(), f0, cf, xf.get());
                }
                if (pairs) input_pairs(xf.get(), xf16, rows, s.chunk, cf);
            }
            // The block's valid positions: the reduction's last fractal may end early.
            const dim_t len = std::min(cf * kN0, s.p - f0 * kN0);
            // Tiles (r, nb) and, r2 >= 0 (C0 = 16), (r2, nb) of this block, at c and c + c_next
            // (rows ldc apart): with a second tile, one pass over their dY fractals A.
            const auto product = [&](dim_t r, dim_t r2, dim_t nb, float* c, dim_t c_next,
                                     dim_t ldc) {
                const dim_t ao = nb * s.chunk * kFrac, bo = r * b_row;
                if (r2 >= 0 && pairs)
                    fractal_product2_bf16(kN0, cf, yf16 + ao, kFrac, xf16 + bo, lanes,
                                          (r2 - r) * b_row, c, c_next, acc, ldc);
                else if (pairs)
                    fractal_product_bf16(kN0, cf, yf16 + ao, kFrac, xf16 + bo, lanes, c, ldc, acc);
                else if (c0 == kN0)
                    weight_product(len, yf.get() + ao, kFrac, xf.get() + bo, lanes,
                                   r2 >= 0 ? (r2 - r) * b_row : -1, c, c_next, ldc, acc);
                else
                    fractal_product(kN0, c0, cf, yf.get() + ao, kFrac, xf.get() + bo, lanes, c0, c,
                                    ldc, acc);
            };
            Span sp(prof, "fractal_gemm");
            [[maybe_unused]] const bool par = tiles * cf * lanes * kN0 > 65536;
            // Tiles row-major (row, nb): a thread's tiles share their rows' input fractals. With
            // C0 = 16 the tiles of rows r and r + 1 run as a pair.
            const dim_t rstep = c0 == kN0 ? 2 : 1, units = blocks_of(rows, rstep) * n1;
            if (s.c04 || !to_oihw || (taps > 1 && !last)) {
                // FRACTAL_Z (or FRACTAL_Z_C04): tile (r, nb) at dw + (r*N1 + nb)*16*C0.
#pragma omp parallel for schedule(static) if (units > 1 && par)
                for (dim_t u = 0; u < units; ++u) {
                    const dim_t r = u / n1 * rstep, nb = u % n1;
                    const bool two = rstep == 2 && r + 1 < rows;
                    product(r, two ? r + 1 : -1, nb, dw + (r * n1 + nb) * lanes, n1 * lanes, c0);
                }
            } else if (taps == 1) {
                // 1x1: row r is input block c1, so tile (r, nb) is OIHW's block of rows nb*16 +
                // [0, 16) and columns r*C0 + [0, C0), and the pair's second tile the next C0
                // columns. Whole tiles are written (and accumulated) there; those past K/G or C/G
                // are made in a per-thread buffer (one block) or FRACTAL_Z (several) and copied
                // clipped after the last block. Units run nb-major, so that a thread's tiles in
                // turn fill its 16 rows side by side; row-major, each tile wrote 16 lines a whole
                // OIHW row apart (4 KiB for 1024 channels), all in the same few cache sets.
#pragma omp parallel if (units > 1 && par)
                {
                    float* tile =
                        single ? detail::scratch(kFracAccSlot, std::size_t(2 * lanes)) : nullptr;
#pragma omp for schedule(static)
                    for (dim_t u = 0; u < units; ++u) {
                        const dim_t nrs = units / n1;
                        const dim_t r = u % nrs * rstep, nb = u / nrs;
                        const dim_t nr = rstep == 2 && r + 1 < rows ? 2 : 1;
                        const dim_t r2 = nr == 2 ? r + 1 : -1;
                        if ((nb + 1) * kN0 <= kg && (r + nr) * c0 <= cg) {
                            product(r, r2, nb, wo + nb * kN0 * cg + r * c0, c0, cg);
                            continue;
                        }
                        float* t = single ? tile : dw + (r * n1 + nb) * lanes;
                        const dim_t t_next = single ? lanes : n1 * lanes;
                        product(r, r2, nb, t, t_next, c0);
                        if (!last) continue;
                        const dim_t ov = std::min(kN0, kg - nb * kN0);
                        for (dim_t j = 0; j < nr; ++j) {
                            const dim_t valid = std::min(c0, cg - (r + j) * c0);
                            for (dim_t oi = 0; oi < ov; ++oi)
                                std::memcpy(wo + (nb * kN0 + oi) * cg + (r + j) * c0,
                                            t + j * t_next + oi * c0,
                                            static_cast<std::size_t>(valid) * sizeof(float));
                        }
                    }
                }
            } else {
                // Taps: unit (c1, nb, a run of tb taps), its tiles made (one block: in a
                // per-thread buffer; several: accumulated in FRACTAL_Z) and then scattered to
                // OIHW, where output channel o's input channel c holds the taps consecutively:
                // each (o, c) gets its run of taps in one go. Units run nb-major, as the 1x1's.
                const dim_t nt = blocks_of(taps, tb), tunits = c1s * n1 * nt;
                const dim_t hw = s.wg.h * s.wg.w;
#pragma omp parallel if (tunits > 1 && par)
                {
                    float* tile =
                        single ? detail::scratch(kFracAccSlot, std::size_t(tb * lanes)) : nullptr;
#pragma omp for schedule(static)
                    for (dim_t u = 0; u < tunits; ++u) {
                        const dim_t nb = u / (c1s * nt), c1 = u / nt % c1s, t0 = u % nt * tb;
                        const dim_t tn = std::min(tb, taps - t0);
                        const auto row = [&](dim_t t) {
                            return (t / hw * c1s + c1) * hw + t % hw;  // WeiGeom::row's order
                        };
                        float* tp[kMaxTaps];
                        for (dim_t t = 0; t < tn; ++t)
                            tp[t] =
                                single ? tile + t * lanes : dw + (row(t0 + t) * n1 + nb) * lanes;
                        for (dim_t t = 0; t < tn;) {
                            if (c0 == kN0 && t + 1 < tn) {
                                product(row(t0 + t), row(t0 + t + 1), nb, tp[t], tp[t + 1] - tp[t],
                                        c0);
                                t += 2;
                            } else {
                                product(row(t0 + t), -1, nb, tp[t], 0, c0);
                                ++t;
                            }
                        }
                        const dim_t ov = std::min(kN0, kg - nb * kN0);
                        const dim_t valid = std::min(c0, cg - c1 * c0);
                        weight_taps_to_oihw(tp, tn, c0, ov, valid,
                                            wo + (nb * kN0 * cg + c1 * c0) * taps + t0, cg * taps,
                                            taps);
                    }
                }
            }
        }
        if (s.c04) {
            // Tile (r, nb)'s lane t*cw + c is dW(nb*16 + i, c, tap r*tr + t) (C0 16: 16 lanes).
            Span sp(prof, "scatter");
            const auto at = [&](dim_t k, dim_t tap) {
                return dw + (tap / s.tr * n1 + k / kN0) * lanes + k % kN0 * c0 + tap % s.tr * s.cw;
            };
            if (to_oihw) {
                // Output channel k's input channel c holds its taps consecutively.
#pragma omp parallel for schedule(static) if (kg * cg * taps > 65536)
                for (dim_t k = 0; k < kg; ++k)
                    for (dim_t c = 0; c < cg; ++c) {
                        float* run = wo + (k * cg + c) * taps;
                        for (dim_t tap = 0; tap < taps; ++tap) run[tap] = at(k, tap)[c];
                    }
            } else {
                // FRACTAL_Z row tap (one input block), lanes past C/G zero; with one group the
                // padding output channels too (their tiles' rows are zero), with several only
                // this group's K/G channels (the rest was zeroed).
                const dim_t ks = p.groups > 1 ? kg : n1 * kN0;
#pragma omp parallel for schedule(static) if (taps * ks * c0 > 65536)
                for (dim_t tap = 0; tap < taps; ++tap)
                    for (dim_t k = 0; k < ks; ++k) {
                        const dim_t o_all = grp * kg + k;
                        float* d = dw_fz + ((tap * n1_all + o_all / kN0) * kN0 + o_all % kN0) * c0;
                        const float* v = at(k, tap);
                        for (dim_t c = 0; c < c0; ++c) d[c] = c < cg ? v[c] : 0.0f;
                    }
            }
        } else if (!to_oihw && p.groups > 1) {
            // This group's K/G output channels k into rows g*K/G + k of the whole FRACTAL_Z.
            Span sp(prof, "tncf_dw");
#pragma omp parallel for schedule(static) if (rows * kg * c0 > 65536)
            for (dim_t r = 0; r < rows; ++r)
                for (dim_t k = 0; k < kg; ++k) {
                    const dim_t o_all = grp * kg + k;
                    std::memcpy(dw_fz + ((r * n1_all + o_all / kN0) * kN0 + o_all % kN0) * c0,
                                dw + ((r * n1 + k / kN0) * kN0 + k % kN0) * c0,
                                static_cast<std::size_t>(c0) * sizeof(float));
                }
        }
    }
}

}  // namespace

dim_t fractal_weight_blocks(const Problem& p, dim_t c0) {
    const Plan s = plan_of(p, c0);
    return blocks_of(s.p1, s.chunk);
}

void backward_weight_fractal_fz(const Problem& p, const float* src, const float* diff_dst,
                                float* dw_fz, Profiler* prof, const Options& o) {
    weight_gradient(p, src, diff_dst, dw_fz, nullptr, prof, o);
}

void backward_weight_fractal_oihw(const Problem& p, const float* src, const float* diff_dst,
                                  float* dw, Profiler* prof, const Options& o) {
    weight_gradient(p, src, diff_dst, nullptr, dw, prof, o);
}

}  // namespace convlab::davinci
