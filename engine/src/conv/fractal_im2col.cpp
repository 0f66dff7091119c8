// The fractal forward's column matrix, a block column at a time, straight from an activation in
// NC1HWC0: index tables per axis instead of per-element arithmetic, backward data's zero insertion
// and pad folded into the tables (no zero-inserted, padded copy of dY), and the fractals that read
// no element of the source (padding, inserted zeros) left unwritten and marked zero.
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "bit_cast.hpp"
#include "fractal_kernel.hpp"
#include "geom.hpp"

namespace convlab::davinci {

namespace {

// dst[0, c0) = src[0, c0): the usual C0s as copies of constant size.
inline void copy_lanes(float* dst, const float* src, dim_t c0) {
    switch (c0) {
        case 4:
            std::memcpy(dst, src, 4 * sizeof(float));
            break;
        case 8:
            std::memcpy(dst, src, 8 * sizeof(float));
            break;
        case 16:
            std::memcpy(dst, src, 16 * sizeof(float));
            break;
        default:
            std::memcpy(dst, src, static_cast<std::size_t>(c0) * sizeof(float));
    }
}

// Advances the output position (d, h, w) by len positions along a line (len <= out[2] - w).
inline void advance(const detail::Geom3& g, dim_t len, dim_t& d, dim_t& h, dim_t& w) {
    w += len;
    if (w == g.out[2]) {
        w = 0;
        if (++h == g.out[1]) {
            h = 0;
            ++d;
        }
    }
}

}  // namespace

ColSource plain_source(const Problem& q, dim_t c0, const float* x5d) {
    ColSource s;
    s.x5 = x5d;
    std::vector<dim_t> dims{q.mb, q.icg()};
    for (int i = 0; i < q.ndims; ++i) dims.push_back(q.in[i]);
    s.g = ActGeom::of(dims, c0);
    return s;
}

ColPlan::ColPlan(const Problem& q, const ColSource& s) : src(s) {
    g = detail::geom3(q);
    const dim_t len[3] = {s.g.d, s.g.h, s.g.w};
    for (int a = 0; a < 3; ++a) {
        // The outputs in phase order where the source is read through a zero insertion with
        // stride 1: o = ph + j*ins, phase by phase. Whether o reads an inserted zero at tap k
        // depends on its phase only, so at each tap a fractal of one phase reads either data
        // or zeros: the zeros are whole fractals, skipped, rather than every other position.
        const dim_t phases = s.ins[a] > 1 && g.s[a] == 1 ? std::min(s.ins[a], g.out[a]) : 1;
        std::vector<dim_t> order;
        for (dim_t ph = 0; ph < phases; ++ph)
            for (dim_t o = ph; o < g.out[a]; o += phases) order.push_back(o);
        pat[a] = static_cast<dim_t>(perm.size());
        perm.insert(perm.end(), order.begin(), order.end());
        permuted |= phases > 1;
        at[a] = static_cast<dim_t>(tab.size());
        // Output o at tap k reads q's input i = o*s + k*d - pb, which is the source's element
        // u / ins with u = i - off where 0 <= u <= (len - 1) * ins and ins divides u.
        const dim_t ins = s.ins[a], ulen = (len[a] - 1) * ins + 1;
        for (dim_t k = 0; k < g.k[a]; ++k)
            for (const dim_t o : order) {
                const dim_t u = o * g.s[a] + k * g.d[a] - g.pb[a] - s.off[a];
                tab.push_back(u >= 0 && u < ulen && u % ins == 0 ? u / ins : -1);
            }
    }
    run.assign(tab.size(), 0);
    gap.assign(tab.size(), 0);
    for (int a = 0; a < 3; ++a)
        for (dim_t k = 0; k < g.k[a]; ++k) {
            const dim_t b = at[a] + k * g.out[a];
            for (dim_t o = g.out[a] - 1; o >= 0; --o) {
                const dim_t i = b + o;
                const bool last = o + 1 == g.out[a];
                if (tab[i] >= 0)
                    run[i] = !last && tab[i + 1] == tab[i] + 1 ? run[i + 1] + 1 : 1;
                else
                    gap[i] = last ? 1 : gap[i + 1] + 1;
            }
        }
}

namespace {

// im2col_fractal_block writing Put::T (float or bf16 bits), the source's floats moved by Put;
// in_place with float only.
template <class Put>
void im2col_block(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb0, dim_t cm, typename Put::T* dst,
                  unsigned char* nz, const float** in_place) {
    using T = typename Put::T;
    const detail::Geom3& g = plan.g;
    const ActGeom& sg = plan.src.g;
    const dim_t rows = g.k[0] * sg.c1 * g.k[1] * g.k[2], m = g.out_size(), frac = kN0 * c0;
    const dim_t m_begin = mb0 * kN0, m_end = std::min((mb0 + cm) * kN0, m);
    // The output position of m_begin, (od, oh, ow): each row walks on from it by carries.
    const dim_t ow_b = m_begin % g.out[2], oh_b = m_begin / g.out[2] % g.out[1],
                od_b = m_begin / g.out[2] / g.out[1];
    const dim_t* tab = plan.tab.data();
#pragma omp parallel for schedule(static) if (rows * cm * frac > 65536 && !omp_in_parallel())
    for (dim_t r = 0; r < rows; ++r) {
        const auto [kd, c1, kh, kw] = fractal_row(r, g, sg.c1);
        // The lanes to copy: all C0 where the source's padding lanes are known to hold zeros,
        // else the block's channels (a caller's packed tensor may hold anything there).
        const dim_t valid = plan.src.zero_padding ? c0 : std::min(c0, sg.c - c1 * c0);
        const dim_t* td = tab + plan.at[0] + kd * g.out[0];
        const dim_t* th = tab + plan.at[1] + kh * g.out[1];
        const dim_t* tw = tab + plan.at[2] + kw * g.out[2];
        const dim_t* rw = plan.run.data() + plan.at[2] + kw * g.out[2];
        const dim_t* gw = plan.gap.data() + plan.at[2] + kw * g.out[2];
        const float* plane = plan.src.x5 + sg.offset(n, 0, c1, 0, 0, 0);
        // Source rows are sg.w * C0 floats apart, depths sg.c1 * sg.h * sg.w * C0.
        const dim_t row_floats = sg.w * c0, depth_floats = sg.c1 * sg.h * row_floats;
        dim_t od = od_b, oh = oh_b, ow = ow_b;
        for (dim_t mb = 0; mb < cm; ++mb) {
            T* f = dst + (r * cm + mb) * frac;
            const dim_t p0 = m_begin + mb * kN0, p1 = std::min(p0 + kN0, m_end);
            // Whole fractals inside one output line decided a run at a time from the tables:
            // those that read nothing (a depth or row that reads none, or a gap along the line:
            // along a zero-inserted axis in phase order, the phases that read inserted zeros) and,
            // with in_place, those whose positions read consecutive source positions. Most of
            // backward data's fractals at a stride are one or the other.
            if (const dim_t whole = std::min((m_end - p0) / kN0, cm - mb); whole > 0) {
                const bool line = td[od] >= 0 && th[oh] >= 0;
                const dim_t zeros = line ? gw[ow] : g.out[2] - ow;
                dim_t run = 0;
                if (zeros >= kN0) {
                    run = std::min(zeros / kN0, whole);
                    std::memset(nz + r * cm + mb, 0, static_cast<std::size_t>(run));
                    if constexpr (std::is_same_v<T, float>)
                        if (in_place)
                            for (dim_t i = 0; i < run; ++i)
                                in_place[r * cm + mb + i] = f + i * frac;
                } else if (line && in_place && valid == c0 && rw[ow] >= kN0) {
                    run = std::min(rw[ow] / kN0, whole);
                    std::memset(nz + r * cm + mb, 1, static_cast<std::size_t>(run));
                    if constexpr (std::is_same_v<T, float>) {
                        const float* s0 =
                            plane + td[od] * depth_floats + th[oh] * row_floats + tw[ow] * c0;
                        for (dim_t i = 0; i < run; ++i) in_place[r * cm + mb + i] = s0 + i * frac;
                    }
                }
                if (run > 0) {
                    advance(g, run * kN0, od, oh, ow);
                    mb += run - 1;
                    continue;
                }
            }
            // The fractal's lines: at most a few segments of one output line each. Pass 1 finds
            // whether any position reads the source and (with in_place) whether all 16 read 16
            // consecutive source positions, the fractal then being in the source as it is;
            // pass 2 writes the others.
            bool any = false;
            // With in_place: the source offset of the fractal's first row (-1: not in place).
            dim_t first = in_place && valid == c0 && p1 - p0 == kN0 ? 0 : -1;
            {
                dim_t d = od, h = oh, w = ow;
                for (dim_t p = p0; p < p1 && (!any || first >= 0);) {
                    const dim_t len = std::min(g.out[2] - w, p1 - p);
                    if (td[d] >= 0 && th[h] >= 0) {
                        any |= gw[w] < len;
                        if (first >= 0) {
                            const dim_t start =
                                td[d] * depth_floats + th[h] * row_floats + tw[w] * c0;
                            if (p == p0) first = start;
                            if (rw[w] < len || start != first + (p - p0) * c0) first = -1;
                        }
                    } else {
                        first = -1;
                    }
                    p += len;
                    advance(g, len, d, h, w);
                }
            }
            nz[r * cm + mb] = any;
            if constexpr (std::is_same_v<T, float>)
                if (in_place) in_place[r * cm + mb] = first >= 0 ? plane + first : f;
            if (any && first < 0) {
                // Every element written: runs of source positions copied, the rest zeros.
                const auto zero = [&](dim_t from, dim_t to) {
                    std::memset(f + from * c0, 0,
                                static_cast<std::size_t>((to - from) * c0) * sizeof(T));
                };
                dim_t d = od, h = oh, w = ow;
                for (dim_t p = p0; p < p1;) {
                    const dim_t len = std::min(g.out[2] - w, p1 - p), at = p - p0;
                    if (td[d] < 0 || th[h] < 0) {
                        zero(at, at + len);
                    } else {
                        const float* in = plane + td[d] * depth_floats + th[h] * row_floats;
                        T* out = f + at * c0;
                        if (valid < c0) {
                            // Fewer channels than lanes: the segment zeroed at once, then each
                            // position's channels copied.
                            zero(at, at + len);
                            for (dim_t i = 0; i < len; ++i)
                                if (const dim_t sw = tw[w + i]; sw >= 0)
                                    Put::run(out + i * c0, in + sw * c0, valid);
                        } else
                            for (dim_t i = 0; i < len;) {
                                const dim_t sw = tw[w + i];
                                dim_t e = i + 1;
                                if (sw < 0) {
                                    while (e < len && tw[w + e] < 0) ++e;
                                    zero(at + i, at + e);
                                } else if (e == len || tw[w + e] != sw + 1) {
                                    // A lone position (every one along a strided axis): for the
                                    // usual C0s a copy of constant size, which the compiler
                                    // inlines, not a library call.
                                    Put::lanes(out + i * c0, in + sw * c0, c0);
                                } else {
                                    // A run of consecutive source positions: one copy.
                                    while (e < len && tw[w + e] == sw + (e - i)) ++e;
                                    Put::run(out + i * c0, in + sw * c0, (e - i) * c0);
                                }
                                i = e;
                            }
                    }
                    p += len;
                    advance(g, len, d, h, w);
                }
                zero(p1 - p0, kN0);  // positions past the last output
            }
            // The next fractal starts 16 positions on.
            for (dim_t step = p1 - p0; step > 0;) {
                const dim_t len = std::min(g.out[2] - ow, step);
                step -= len;
                advance(g, len, od, oh, ow);
            }
        }
    }
}

// The moves of source floats into the column block: as they are, or as bf16 bits (the source
// holds bf16 values, whose lower halves are zero: the bits are the upper halves, which is what
// rounding them to bf16 gives, NaNs included). run moves n floats, lanes one position's c0.
struct PutF32 {
    using T = float;
    static void run(float* out, const float* in, dim_t n) {
        std::memcpy(out, in, static_cast<std::size_t>(n) * sizeof(float));
    }
    static void lanes(float* out, const float* in, dim_t c0) { copy_lanes(out, in, c0); }
};
struct PutBf16 {
    using T = std::uint16_t;
    static void run(std::uint16_t* out, const float* in, dim_t n) {
        for (dim_t i = 0; i < n; ++i)
            out[i] = static_cast<std::uint16_t>(detail::bit_cast<std::uint32_t>(in[i]) >> 16);
    }
    static void lanes(std::uint16_t* out, const float* in, dim_t c0) { run(out, in, c0); }
};

}  // namespace

void im2col_fractal_block(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb0, dim_t cm, float* dst,
                          unsigned char* nz, const float** in_place) {
    im2col_block<PutF32>(plan, c0, n, mb0, cm, dst, nz, in_place);
}

void im2col_fractal_block_bf16(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb0, dim_t cm,
                               std::uint16_t* dst, unsigned char* nz) {
    im2col_block<PutBf16>(plan, c0, n, mb0, cm, dst, nz, nullptr);
}

dim_t im2col_fractal_list(const ColPlan& plan, dim_t c0, dim_t n, dim_t mb, float* buf,
                          const float** al, dim_t* idx, unsigned char* nz, dim_t* lo, dim_t* hi,
                          dim_t* cuts) {
    if (cuts) *cuts = 0;
    const detail::Geom3& g = plan.g;
    const ActGeom& sg = plan.src.g;
    const dim_t rows = g.k[0] * sg.c1 * g.k[1] * g.k[2], p0 = mb * kN0, frac = kN0 * c0;
    dim_t d, h, w;
    plan.digits(p0, d, h, w);
    // Whole C0 blocks can be read in place where the padding lanes are zeros or there are none.
    const bool whole_lanes = plan.src.zero_padding || sg.c % c0 == 0;
    if (p0 + kN0 > g.out_size() || w + kN0 > g.out[2] || !whole_lanes) {
        // Across a line's end, the last M block or a source with lanes to leave out: the block
        // of one M block, its rows that read the source listed.
        im2col_fractal_block(plan, c0, n, mb, 1, buf, nz, al);
        dim_t len = 0;
        for (dim_t r = 0; r < rows; ++r) {
            al[len] = al[r];
            idx[len] = r;
            len += nz[r] != 0;
        }
        return len;
    }
    // One line: depth d and row h fixed for the 16 positions, w to w + 15 along it. A tap
    // (kd, kh) whose depth or row reads nothing is passed over whole; along the line each kw
    // reads nothing, 16 consecutive source positions (the fractal is in the source: every C0
    // block's at once) or some (copied into buf, zeros elsewhere).
    const dim_t* tab = plan.tab.data();
    const dim_t row_floats = sg.w * c0, block_floats = sg.h * row_floats,
                depth_floats = sg.c1 * block_floats;
    const dim_t c1_rows = g.k[1] * g.k[2];  // FRACTAL_Z rows from one C0 block to the next
    const float* image = plan.src.x5 + sg.offset(n, 0, 0, 0, 0, 0);
    dim_t len = 0;
    float* next = buf;
    for (dim_t kd = 0; kd < g.k[0]; ++kd) {
        const dim_t sd = tab[plan.at[0] + kd * g.out[0] + d];
        if (sd < 0) continue;
        for (dim_t kh = 0; kh < g.k[1]; ++kh) {
            const dim_t sh = tab[plan.at[1] + kh * g.out[1] + h];
            if (sh < 0) continue;
            const float* line = image + sd * depth_floats + sh * row_floats;
            for (dim_t kw = 0; kw < g.k[2]; ++kw) {
                const dim_t at = plan.at[2] + kw * g.out[2] + w;
                if (plan.gap[static_cast<std::size_t>(at)] >= kN0) continue;
                const dim_t r0 = ((kd * sg.c1) * g.k[1] + kh) * g.k[2] + kw;
                const dim_t* tw = tab + at;
                if (plan.run[static_cast<std::size_t>(at)] >= kN0) {
                    for (dim_t c1 = 0; c1 < sg.c1; ++c1) {
                        al[len] = line + c1 * block_floats + tw[0] * c0;
                        idx[len++] = r0 + c1 * c1_rows;
                    }
                    continue;
                }
                const dim_t* rw = plan.run.data() + at;
                const dim_t* gw = plan.gap.data() + at;
                // One run of consecutive source positions [cut_lo, cut_hi) and nothing read around
                // it (a line's edge): cut rows, read in place, where the caller takes them.
                const dim_t cut_lo = tw[0] < 0 ? gw[0] : 0,
                            cut_hi = std::min(kN0, cut_lo + rw[cut_lo]);
                if (lo && (cut_hi == kN0 || gw[cut_hi] >= kN0 - cut_hi)) {
                    for (dim_t c1 = 0; c1 < sg.c1; ++c1) {
                        const dim_t back = rows - 1 - (*cuts)++;
                        al[back] = line + c1 * block_floats + tw[cut_lo] * c0;
                        idx[back] = r0 + c1 * c1_rows;
                        lo[back] = cut_lo;
                        hi[back] = cut_hi;
                    }
                    continue;
                }
                for (dim_t c1 = 0; c1 < sg.c1; ++c1) {
                    const float* in = line + c1 * block_floats;
                    // Runs of consecutive source positions copied at once, the gaps zeroed.
                    for (dim_t i = 0; i < kN0;) {
                        if (tw[i] < 0) {
                            const dim_t e = std::min(kN0, i + gw[i]);
                            std::memset(next + i * c0, 0,
                                        static_cast<std::size_t>((e - i) * c0) * sizeof(float));
                            i = e;
                        } else if (rw[i] == 1) {
                            copy_lanes(next + i * c0, in + tw[i] * c0, c0);
                            ++i;
                        } else {
                            const dim_t e = std::min(kN0, i + rw[i]);
                            std::memcpy(next + i * c0, in + tw[i] * c0,
                                        static_cast<std::size_t>((e - i) * c0) * sizeof(float));
                            i = e;
                        }
                    }
                    al[len] = next;
                    idx[len++] = r0 + c1 * c1_rows;
                    next += frac;
                }
            }
        }
    }
    return len;
}

}  // namespace convlab::davinci
