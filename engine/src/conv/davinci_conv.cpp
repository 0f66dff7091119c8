// Fractal convolution: the forward pass as the DaVinci cube unit computes it (16 x C0 fractal
// products over an im2col in fractal form), and the NCHW-level wrappers that pack and unpack.
#include "omp_compat.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "../maps/davinci_internal.hpp"
#include "algorithms.hpp"
#include "bf16.hpp"
#include "bit_cast.hpp"
#include "checked.hpp"
#include "convlab/davinci.hpp"
#include "convlab/maps.hpp"
#include "fractal_kernel.hpp"
#include "geom.hpp"
#include "microkernel.hpp"

namespace convlab::davinci {

namespace {

// B fractals turned C0 x 16: bt[(r*N1 + nb)][k][j] = wfz[(r*N1 + nb)][j][k].
void transpose_b(dim_t fractals, dim_t c0, const float* wfz, float* bt) {
#pragma omp parallel for schedule(static) if (fractals * kN0 * c0 > 65536)
    for (dim_t f = 0; f < fractals; ++f) {
        const float* w = wfz + f * kN0 * c0;
        float* b = bt + f * kN0 * c0;
        for (dim_t j = 0; j < kN0; ++j)
            for (dim_t k = 0; k < c0; ++k) b[k * kN0 + j] = w[j * c0 + k];
    }
}

// The problem of one group.
Problem one_group(const Problem& p) {
    Problem q = p;
    q.ic = p.icg();
    q.oc = p.ocg();
    q.groups = 1;
    return q;
}

// The via-forward problem q must give back `want` (the input size for backward data, the kernel
// for backward weight) on every axis; else the unpack / tncf after it would run out of bounds.
// Holds by construction (docs/design.md, "Problems and formulas", with r); checked so that a broken
// formula fails with a message instead of corrupting memory.
void check_gives_back(const Problem& q, const SpatialDims& want, int ndims, const char* what) {
    for (int i = 0; i < ndims; ++i)
        if (q.out(i) != want[i])
            throw Error(std::string(what) + ": the via-forward problem gives " +
                        std::to_string(q.out(i)) + " on axis " + std::to_string(i) + ", not " +
                        std::to_string(want[i]) + " (leftover r not accounted for?)");
}

// M blocks of conv_fractal's block column: its column matrix (rows x chunk fractals) and its
// tiles (chunk x tn) within 2^20 floats each.
dim_t conv_fractal_chunk(dim_t rows, dim_t tn, dim_t m1, dim_t c0) {
    const dim_t by_cols = (dim_t{1} << 20) / detail::sat_mul(rows, kN0 * c0);
    const dim_t by_tiles = (dim_t{1} << 20) / detail::sat_mul(tn, kN0 * kN0);
    return std::clamp<dim_t>(std::min(by_cols, by_tiles), 1, std::max<dim_t>(m1, 1));
}

// Floats that hold the narrow products' lists of rows of a column block: a row index and a
// range of positions (two) per fractal, two counts per M block (dim_t, two floats each).
dim_t narrow_list_floats(dim_t rows, dim_t chunk) {
    return detail::sat_mul({2, 3 * rows + 2, chunk});
}

// Floats that hold the column block's fractal addresses (fp32 products only): two a fractal.
static_assert(sizeof(const float*) <= 2 * sizeof(float));
dim_t fractal_at_floats(dim_t rows, dim_t chunk, bool pairs) {
    return pairs ? 0 : detail::sat_mul({2, rows, chunk});
}

// B of the fractal products as a.prepared holds it for this call (C0 16, the call's storage, bf16
// pairs exactly where the call multiplies pairs), or nothing: the call packs its own.
struct PreparedB {
    FractalB b;
    explicit operator bool() const { return b.f32 || b.bf16; }
    // Group g's B, the groups `size` elements apart.
    FractalB group(dim_t g, dim_t size) const {
        return {b.f32 ? b.f32 + g * size : nullptr, b.bf16 ? b.bf16 + g * size : nullptr};
    }
};
// prepare_weights packs B for C0 16, at the C0 that the pass computes with then (forward_c0).
PreparedB prepared_b(const ConvArgs& a, const Problem& p, Pass pass, const Options& o, bool pairs) {
    PreparedB r;
    if (o.c0 != kC0 || !a.prepared) return r;
    if (pairs)
        r.b.bf16 = a.prepared->fractal_pairs(p, pass);
    else
        r.b.f32 = a.prepared->fractal(p, pass, o.storage);
    return r;
}

// Whether fractal v (16 x c0) holds a value that is not zero (sign aside: -0 counts as zero),
// read a row at a time: a fractal of dense data shows one in its first row.
bool holds_value(const float* v, dim_t c0) {
    for (dim_t k0 = 0; k0 < kN0 * c0; k0 += c0) {
        std::uint32_t bits = 0;  // the values' bits but the sign
        for (dim_t k = k0; k < k0 + c0; ++k) bits |= detail::bit_cast<std::uint32_t>(v[k]) << 1;
        if (bits != 0) return true;
    }
    return false;
}

void check_one_group(const Problem& p) {
    if (p.groups != 1)
        throw Error("conv_fractal: groups = " + std::to_string(p.groups) +
                    ": the packed-level call is for one group");
}

}  // namespace

void conv_fractal(const Problem& p, dim_t c0, const float* x5d, const float* wfz, const float* bias,
                  float* y5d, Profiler* prof) {
    conv_fractal_bt(p, c0, x5d, wfz, nullptr, bias, y5d, prof);
}

void conv_fractal_bt(const Problem& p, dim_t c0, const float* x5d, const float* wfz,
                     const float* bt_in, const float* bias, float* y5d, Profiler* prof) {
    p.check(true);
    check_one_group(p);
    const float* bt = bt_in;
    if (!bt) {
        const WeiGeom wg = WeiGeom::of(p.wei_dims(), c0);
        Span s(prof, "transpose_b");
        float* t = kept(kFracBtSlot, wg.rows() * wg.n1 * kN0 * c0).get();
        transpose_b(wg.rows() * wg.n1, c0, wfz, t);
        bt = t;
    }
    conv_fractal_b(p, c0, x5d, FractalB{bt, nullptr}, bias, y5d, prof);
}

void conv_fractal_b(const Problem& p, dim_t c0, const float* x5d, FractalB b, const float* bias,
                    float* y5d, Profiler* prof) {
    conv_fractal_b(p, c0, plain_source(p, c0, x5d), b, bias, y5d, prof);
}

void conv_fractal_b(const Problem& p, dim_t c0, const ColSource& src, FractalB b, const float* bias,
                    float* y5d, Profiler* prof, const PlainOut* plain) {
    p.check(true);
    check_one_group(p);
    const ColPlan plan(p, src);
    const ActGeom yg = ActGeom::of(p.dst_dims(), c0);
    const WeiGeom wg = WeiGeom::of(p.wei_dims(), c0);
    const detail::Geom3 g = detail::geom3(p);
    const dim_t rows = wg.rows(), m = g.out_size(), m1 = blocks_of(m, kN0), n1 = wg.n1;
    const dim_t frac = kN0 * c0;       // elements of a fractal
    const dim_t k_lanes = yg.c1 * c0;  // output channels including padding lanes
    const dim_t tn = std::max(n1, blocks_of(k_lanes, kN0));  // tile columns
    // The column matrix is built a block column of M blocks at a time (about 4 MB; the cube
    // works from a bounded L1 buffer), so memory stays bounded for large images; the block's
    // tiles (at most 2^20 floats) are accumulated over row blocks of the reduction.
    const dim_t chunk = conv_fractal_chunk(rows, tn, m1, c0);
    // The tiles in the order that reads the larger operand once: with more M blocks than column
    // blocks (by_m: large images, few channels) M block outer, each run of A fractals used for
    // every column block while in L1, and a row block of all column blocks' B fractals kept in
    // L2 (about 512 KB); else column block outer, a row block of the block column's A fractals
    // and one column block's B fractals in L2: B, megabytes for wide layers, read once per block
    // column instead of once per M block. by_m only up to 8 column blocks: with 16 (a 1x1 from
    // 64 to 256 channels) the row block of all B fractals (64 KiB) left L1 at every M block,
    // and column block outer was faster (1 thread: res2a_branch1's forward 1.14 -> 0.92 ms,
    // res2b_branch2a's backward data 1.12 -> 0.92), while conv1 and res2a_branch2b (4 column
    // blocks) kept by_m's times or better.
    const bool by_m = chunk > n1 && n1 <= 8;
    const dim_t rb = std::clamp<dim_t>((dim_t{1} << 17) / (frac * ((by_m ? n1 : chunk) + 1)),
                                       std::min<dim_t>(8, rows), rows);
    // bf16 B: the column block is built in bf16 (its values are bf16 already: the caller rounded
    // the packed input), with no fp32 block.
    const bool pairs = b.bf16 != nullptr;
    if (pairs && !fractal_bf16_native(c0))
        throw Error("conv_fractal: bf16 operands without bf16 products for c0 = " +
                    std::to_string(c0));
    const float* bt = b.f32;
    // An output of at most kNarrowMax channels (fp32 products): narrow products, the columns
    // that exist only, with B's columns made contiguous once a call.
    const bool narrow = !pairs && fractal_narrow_runs(c0, p.oc);
    const float* bn = nullptr;
    // Rows cut at a line's edge read in place where a kernel masks their loads.
    const bool cut = narrow && fractal_narrow_cuts(c0, p.oc);
    if (narrow) {
        float* t = kept(kFracNarrowSlot, rows * p.oc * c0).get();
        narrow_b(rows, c0, p.oc, bt, n1 * frac, t);
        bn = t;
    }
    // A column block's buffer: its rows * chunk fractals in fp32, or (bf16 products) in bf16,
    // then (fp32 products) where each fractal is, then a byte per fractal saying whether it holds
    // a non-zero value; the narrow products' lists of rows then follow (their fractals' places
    // in the addresses' room, M block mb's from mb * rows on): the rows, and their counts.
    const dim_t col_elems = rows * chunk * frac;
    const dim_t col_f32 = pairs ? 0 : col_elems, col_b16 = pairs ? (col_elems + 1) / 2 : 0;
    const dim_t at_begin = (col_f32 + col_b16 + 1) / 2 * 2,
                at_floats = fractal_at_floats(rows, chunk, pairs);
    const dim_t list_begin = (at_begin + at_floats + (rows * chunk + 3) / 4 + 1) / 2 * 2;
    const dim_t col_floats = list_begin + (narrow ? narrow_list_floats(rows, chunk) : 0);
    const auto lists_of = [&](float* a) { return reinterpret_cast<dim_t*>(a + list_begin); };
    const auto a16_of = [&](const float* a) {
        return reinterpret_cast<const std::uint16_t*>(a + col_f32);
    };
    const auto at_of = [&](float* a) {
        return pairs ? nullptr : reinterpret_cast<const float**>(a + at_begin);
    };
    const auto nz_of = [&](const float* a) {
        return reinterpret_cast<const unsigned char*>(a + at_begin + at_floats);
    };
    // im2col of cm M blocks, which marks the fractals that read no element of the source (the
    // inserted zeros and the padding of backward data's input, the taps of padding rows) and
    // leaves them unwritten, and with fp32 products leaves those that are in the source as they
    // are (16 consecutive positions of a whole C0 block: most of a stride-1 layer's) where they
    // are; with bf16 products it writes the bf16 block (the values are bf16 already: the caller
    // rounded the packed input); then for the others whether they hold a value that is not zero
    // (sign aside: -0 counts as zero). Fractals of zeros are skipped by the products: their
    // products add nothing.
    // The narrow products instead take each M block's list of the rows that read the source
    // (im2col_fractal_list: no pass over every fractal, most of them in place).
    const auto build_block = [&](dim_t n, dim_t mb0, float* a, dim_t cm) {
        auto* a16 = reinterpret_cast<std::uint16_t*>(a + col_f32);
        auto* nz = reinterpret_cast<unsigned char*>(a + at_begin + at_floats);
        const float** at = at_of(a);
        if (narrow) {
            dim_t* idx = lists_of(a);
            dim_t *lo = idx + rows * cm, *hi = lo + rows * cm, *lens = hi + rows * cm;
            dim_t* cuts = lens + cm;
#pragma omp parallel for schedule(static) if (cm > 1 && rows * cm * frac > 65536 && \
                                              !omp_in_parallel())
            for (dim_t mb = 0; mb < cm; ++mb) {
                const dim_t o = mb * rows;
                lens[mb] = im2col_fractal_list(plan, c0, n, mb0 + mb, a + o * frac, at + o, idx + o,
                                               nz + o, cut ? lo + o : nullptr, hi + o, cuts + mb);
            }
            return;
        }
        if (pairs) {
            im2col_fractal_block_bf16(plan, c0, n, mb0, cm, a16, nz);
        } else {
            im2col_fractal_block(plan, c0, n, mb0, cm, a, nz, at);
        }
        // A fractal of dense data shows a non-zero value in its first row: only fractals of
        // zeros are read whole.
#pragma omp parallel for schedule(static) if (rows * cm * frac > 65536 && !omp_in_parallel())
        for (dim_t f = 0; f < rows * cm; ++f) {
            if (!nz[f]) continue;
            nz[f] = 0;
            if (pairs) {
                const std::uint16_t* v = a16 + f * frac;
                for (dim_t k0 = 0; k0 < frac && !nz[f]; k0 += c0) {
                    unsigned bits = 0;
                    for (dim_t k = k0; k < k0 + c0; ++k) bits |= v[k] & 0x7fffu;
                    nz[f] = bits != 0;
                }
                continue;
            }
            nz[f] = holds_value(at ? at[f] : a + f * frac, c0);
        }
    };
    // The products run on units of two tiles (column blocks nb0 and nb0 + 1 of one M block,
    // fractal_product2: one pass over their A); unit u of a block column of cm M blocks is
    // (nb0, mb), in the tiles' order.
    const dim_t tp = (tn + 1) / 2;  // units per M block
    const auto unit_of = [&](dim_t u, dim_t cm) {
        return by_m ? std::pair<dim_t, dim_t>{2 * (u % tp), u / tp}
                    : std::pair<dim_t, dim_t>{2 * (u / cm), u % cm};
    };
    const auto tile_index = [&](dim_t nb, dim_t mb, dim_t cm) {
        return by_m ? mb * tn + nb : nb * cm + mb;
    };
    // Unit u's tiles, their sums over rows [r0, r0 + rb) added to accs (set by the first row
    // block): the non-zero A fractals' products listed (fp32: A read wherever it is) or, bf16,
    // each run of consecutive non-zero A fractals in one call. Tiles of column blocks past N1
    // (padding lanes only) are zeros.
    // With own, the unit's tiles go to own and own + 256 instead.
    const auto product = [&](dim_t cm, float* a, float* accs, dim_t r0, dim_t u,
                             float* own = nullptr) {
        const auto [nb0, mb] = unit_of(u, cm);
        const dim_t nt = std::min<dim_t>(2, tn - nb0);        // tiles of the unit
        const dim_t nc = std::clamp<dim_t>(n1 - nb0, 0, nt);  // of them with B fractals
        float* c[2] = {
            own ? own : accs + tile_index(nb0, mb, cm) * kN0 * kN0,
            nt > 1 ? (own ? own + kN0 * kN0 : accs + tile_index(nb0 + 1, mb, cm) * kN0 * kN0)
                   : nullptr};
        const dim_t c_next = nt > 1 ? c[1] - c[0] : 0;
        if (narrow) {
            // The M block's whole list at the first row block. Its fractals' values are not
            // tested: a narrow product costs a fractal's K multiply-adds a row, about what the
            // test cost (conv1's backward data spent 0.75 of 3.1 ms of products in it), and dense
            // data has no fractal of zeros to gain from it.
            // The rows cut at a line's edge are listed from the back. Tiles past the first
            // column block hold padding lanes only.
            if (r0 > 0) return;
            if (nb0 > 0) {
                for (dim_t i = 0; i < nt; ++i) std::fill(c[i], c[i] + kN0 * kN0, 0.0f);
                return;
            }
            const dim_t o = mb * rows;
            const float* const* al = at_of(a) + o;
            const dim_t* idx = lists_of(a);
            const dim_t *lo = idx + rows * cm, *hi = lo + rows * cm;
            const dim_t len = hi[rows * cm + mb], cuts = hi[rows * cm + cm + mb];
            idx += o;
            lo += o;
            hi += o;
            if (len > 0) fractal_product_narrow(c0, p.oc, len, al, idx, bn, c[0], kN0, false);
            if (cuts > 0) {
                const dim_t f = rows - cuts;
                fractal_product_narrow_cut(c0, p.oc, cuts, al + f, lo + f, hi + f, idx + f, bn,
                                           c[0], kN0, len > 0);
            }
            if (len == 0 && cuts == 0) std::fill(c[0], c[0] + kN0 * kN0, 0.0f);
            if (nt > 1) std::fill(c[1], c[1] + kN0 * kN0, 0.0f);
            return;
        }
        bool acc = r0 > 0;
        const float* const* at = at_of(a);
        if (nc > 0 && at) {
            // fp32: the non-zero rows listed, their A fractals wherever they are, a list of up
            // to 64 rows a call.
            const unsigned char* nz = nz_of(a);
            const dim_t r1 = std::min(r0 + rb, rows);
            constexpr dim_t kList = 64;
            const float* al[kList];
            dim_t idx[kList];
            for (dim_t r = r0; r < r1;) {
                // Every row written, the count moved on by the row's mark: no branch on a
                // pattern of marks (at a stride, three of four rows of a tile read zeros only).
                dim_t len = 0;
                for (; r < r1 && len < kList; ++r) {
                    al[len] = at[r * cm + mb];
                    idx[len] = r;
                    len += nz[r * cm + mb] != 0;
                }
                if (len == 0) continue;
                const float* bb = bt + nb0 * frac;
                if (nc == 2)
                    fractal_product2_list(c0, len, al, idx, bb, n1 * frac, frac, c[0], c_next, acc);
                else
                    fractal_product_list(c0, len, al, idx, bb, n1 * frac, c[0], acc);
                acc = true;
            }
        } else if (nc > 0) {
            // bf16 pairs (no fractal addresses: the block holds them all).
            const unsigned char* nz = nz_of(a);
            const dim_t r1 = std::min(r0 + rb, rows);
            for (dim_t r = r0; r < r1;) {
                if (!nz[r * cm + mb]) {
                    ++r;
                    continue;
                }
                dim_t e = r + 1;
                while (e < r1 && nz[e * cm + mb]) ++e;
                const dim_t ao = (r * cm + mb) * frac, bo = (r * n1 + nb0) * frac;
                if (nc == 2)
                    fractal_product2_bf16(c0, e - r, a16_of(a) + ao, cm * frac, b.bf16 + bo,
                                          n1 * frac, frac, c[0], c_next, acc);
                else
                    fractal_product_bf16(c0, e - r, a16_of(a) + ao, cm * frac, b.bf16 + bo,
                                         n1 * frac, c[0], kN0, acc);
                acc = true;
                r = e;
            }
        }
        for (dim_t i = 0; i < nt; ++i)
            if (i < nc ? !acc : r0 == 0) std::fill(c[i], c[i] + kN0 * kN0, 0.0f);
    };
    // The rounding to the storage type, resolved once: the tiles' writes call it 16 values at a
    // time (round_storage, which picks its path and may open a parallel region, cost about 5 us
    // a call).
    const detail::StorageCopy round_copy = plain ? detail::storage_copy(plain->storage) : nullptr;
    // The write of tile t of the block column starting at M block mb0 of image n to NC1HWC0: row
    // i is the output position of row (mb0 + mb)*16 + i of the column matrix (plan.position),
    // column j output channel k = nb*16 + j (block k/C0, lane k%C0); lanes k >= K are zeros.
    // With plain, the tile goes to the plain (NCHW / NCDHW) result instead: column j, channel k,
    // is 16 positions of channel k's plane, mostly consecutive, each rounded to the storage type.
    // Non-temporal stores only with whole units per thread (one fence per thread after them).
    // Units (image, block column); with many, each thread takes whole ones (below).
    const dim_t nchunks = blocks_of(m1, chunk), units = p.mb * nchunks;
    const int threads = omp_get_max_threads();
    const bool whole_units = threads > 1 && units >= 2 * dim_t{threads};
    const bool stream = plain && plain->stream && whole_units;
    const auto write = [&](dim_t n, dim_t mb0, dim_t cm, dim_t t, const float* acc) {
        const dim_t nb = by_m ? t % tn : t / cm, mb = by_m ? t / tn : t % cm;
        // The rows' digits carried on from the tile's first row: its divisions once a tile, not
        // once a row of each of the tn tiles that share the rows.
        const dim_t m0 = (mb0 + mb) * kN0;
        dim_t d, h, w;
        plan.digits(m0, d, h, w);
        if (plain) {
            dim_t at[kN0];  // row i's position in a channel's plane
            dim_t n_rows = 0;
            for (; n_rows < kN0 && m0 + n_rows < m; ++n_rows, plan.step(d, h, w)) {
                dim_t od, oh, ow;
                plan.output(d, h, w, od, oh, ow);
                at[n_rows] = (od * g.out[1] + oh) * g.out[2] + ow;
            }
            const dim_t cols = std::clamp<dim_t>(p.oc - nb * kN0, 0, kN0);
            float* plane0 = plain->dst + (n * plain->channels + plain->c_begin + nb * kN0) * m;
            bool consecutive = n_rows == kN0;
            for (dim_t i = 1; i < n_rows && consecutive; ++i) consecutive = at[i] == at[0] + i;
            if (consecutive) {
                // 16 consecutive positions (most tiles): the tile transposed (and rounded to the
                // storage type) in registers.
                fractal_write_columns(acc, cols, bias ? bias + nb * kN0 : nullptr, plain->storage,
                                      plane0 + at[0], m, stream);
                return;
            }
            for (dim_t j = 0; j < cols; ++j) {
                const dim_t k = nb * kN0 + j;
                float v[kN0], r[kN0];
                const float bk = bias ? bias[k] : 0.0f;
                for (dim_t i = 0; i < n_rows; ++i) v[i] = acc[i * kN0 + j] + bk;
                const float* vr = v;
                if (plain->storage != DType::f32) {
                    round_copy(v, r, n_rows);
                    vr = r;
                }
                float* out = plane0 + j * m;
                for (dim_t i = 0; i < n_rows; ++i) out[at[i]] = vr[i];
            }
            return;
        }
        for (dim_t i = 0; i < kN0 && m0 + i < m; ++i, plan.step(d, h, w)) {
            dim_t od, oh, ow;  // row m0 + i's output position (plan's order of the rows)
            plan.output(d, h, w, od, oh, ow);
            if (kN0 % c0 == 0) {
                // The column block is 16 / C0 whole channel blocks (C0 16: the output's block
                // nb): runs of C0 contiguous lanes.
                const float* row = acc + i * kN0;
                for (dim_t cb = 0; cb < kN0 / c0 && (nb * kN0 + cb * c0) < k_lanes; ++cb) {
                    const dim_t k0 = nb * kN0 + cb * c0;
                    float* out = y5d + yg.offset(n, od, k0 / c0, oh, ow, 0);
                    for (dim_t j = 0; j < c0; ++j)
                        out[j] =
                            k0 + j < p.oc ? row[cb * c0 + j] + (bias ? bias[k0 + j] : 0.0f) : 0.0f;
                }
                continue;
            }
            for (dim_t j = 0; j < kN0; ++j) {
                const dim_t k = nb * kN0 + j;
                if (k >= k_lanes) break;
                float v = 0.0f;
                if (k < p.oc) v = acc[i * kN0 + j] + (bias ? bias[k] : 0.0f);
                y5d[yg.offset(n, od, k / c0, oh, ow, k % c0)] = v;
            }
        }
    };
    // One row block: each unit's two tiles written out as soon as they are made, from a pair of
    // tiles in L1, rather than all of a block column's tiles (up to 4 MiB) stored and read back.
    const bool fused = rows <= rb;
    const auto write_unit = [&](dim_t n, dim_t mb0, dim_t cm, dim_t v, const float* own) {
        const auto [nb0, mb] = unit_of(v, cm);
        for (dim_t i = 0; i < std::min<dim_t>(2, tn - nb0); ++i)
            write(n, mb0, cm, tile_index(nb0 + i, mb, cm), own + i * kN0 * kN0);
    };
    const dim_t acc_floats = chunk * tn * kN0 * kN0;
    if (whole_units) {
        // Many units (image, block column), e.g. a batch of small images. One parallel region,
        // each thread taking whole units with its own column and tile buffers: no fork/join per
        // image. The wall time is split between the im2col and fractal_gemm spans in proportion
        // to the threads' time in each.
        using Clock = std::chrono::steady_clock;
        const auto since = [](Clock::time_point t0) {
            return std::chrono::duration<double>(Clock::now() - t0).count();
        };
        const auto start = Clock::now();
        double t_im2col = 0, t_gemm = 0;
        // The threads' buffers allocated before the region: an allocation failing inside it
        // would end the program (an exception cannot leave a parallel region).
        reserve_thread_scratch(kFracColSlot, col_floats, threads);
        reserve_thread_scratch(kFracAccSlot, acc_floats, threads);
#pragma omp parallel num_threads(threads) reduction(+ : t_im2col, t_gemm)
        {
            const Kept a = kept(kFracColSlot, col_floats), accs = kept(kFracAccSlot, acc_floats);
#pragma omp for schedule(dynamic, 1)
            for (dim_t u = 0; u < units; ++u) {
                const dim_t n = u / nchunks, mb0 = (u % nchunks) * chunk;
                const dim_t cm = std::min(chunk, m1 - mb0);
                auto t0 = Clock::now();
                build_block(n, mb0, a.get(), cm);
                t_im2col += since(t0);
                t0 = Clock::now();
                if (fused) {
                    alignas(64) float own[2 * kN0 * kN0];
                    for (dim_t v = 0; v < cm * tp; ++v) {
                        product(cm, a.get(), nullptr, 0, v, own);
                        write_unit(n, mb0, cm, v, own);
                    }
                } else {
                    for (dim_t r0 = 0; r0 < rows; r0 += rb)
                        for (dim_t v = 0; v < cm * tp; ++v) product(cm, a.get(), accs.get(), r0, v);
                    for (dim_t t = 0; t < cm * tn; ++t)
                        write(n, mb0, cm, t, accs.get() + t * kN0 * kN0);
                }
                t_gemm += since(t0);
            }
            if (stream) detail::stream_fence();
        }
        if (prof) {
            const double wall = since(start), busy = t_im2col + t_gemm;
            const double f = busy > 0 ? t_im2col / busy : 0.5;
            prof->add("im2col", wall * f);
            prof->add("fractal_gemm", wall * (1 - f));
        }
        return;
    }
    // Few units (one large image): a unit at a time, its tiles in parallel (column blocks split
    // between the threads, so that each reads its own share of B).
    const Kept a = kept(kFracColSlot, col_floats), accs = kept(kFracAccSlot, acc_floats);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t mb0 = 0; mb0 < m1; mb0 += chunk) {
            const dim_t cm = std::min(chunk, m1 - mb0);
            {
                Span s(prof, "im2col");
                build_block(n, mb0, a.get(), cm);
            }
            Span s(prof, "fractal_gemm");
            const dim_t tiles = cm * tn;
#pragma omp parallel if (tiles > 1 && rows * tiles * frac > 32768)
            {
                if (fused) {
                    alignas(64) float own[2 * kN0 * kN0];
#pragma omp for schedule(static)
                    for (dim_t v = 0; v < cm * tp; ++v) {
                        product(cm, a.get(), nullptr, 0, v, own);
                        write_unit(n, mb0, cm, v, own);
                    }
                }
                for (dim_t r0 = 0; !fused && r0 < rows; r0 += rb) {
#pragma omp for schedule(static)
                    for (dim_t v = 0; v < cm * tp; ++v) product(cm, a.get(), accs.get(), r0, v);
                }
                if (!fused) {
#pragma omp for schedule(static)
                    for (dim_t t = 0; t < tiles; ++t)
                        write(n, mb0, cm, t, accs.get() + t * kN0 * kN0);
                }
            }
        }
}

void forward_fractal(const Problem& p, const ConvArgs& a, Profiler* prof) {
    forward_fractal(p, a, prof, Options{});
}

dim_t forward_c0(const Problem& p, dim_t c0) {
    check_c0(c0);
    return c0 == kC0 && p.icg() <= kC0Small ? kC0Small : c0;
}

bool tap_lanes(const Problem& p, dim_t c0, TapLanes* out) {
    const int wa = p.ndims - 1;  // the w axis
    const dim_t kw = p.kernel[wa];
    if (c0 != kC0 || p.icg() > kC0Small || kw < kTapLanesMinWidth) return false;
    for (dim_t t = kN0 / kC0Small; t >= 2; --t) {
        const dim_t groups = (kw + t - 1) / t;  // >= 2: kw > t
        if ((kw - t) % (groups - 1) != 0) continue;
        TapLanes tl;
        tl.t_lanes = t;
        tl.step = (kw - t) / (groups - 1);
        tl.groups = groups;
        tl.folded = p.stride[wa] > 1;
        Problem v = one_group(p);
        v.pad_begin[wa] = v.pad_end[wa] = 0;
        if (tl.folded) {
            v.ic = kC0 * groups;
            v.kernel[wa] = v.dilation[wa] = v.stride[wa] = 1;
            v.in[wa] = p.out(wa);
        } else {
            v.ic = kC0Small * t;
            v.kernel[wa] = groups;
            v.dilation[wa] = tl.step * p.dilation[wa];
            v.in[wa] = (p.out(wa) - 1) * p.stride[wa] + (groups - 1) * v.dilation[wa] + 1;
        }
        if (v.out(wa) != p.out(wa))
            throw Error("tap_lanes: the virtual problem gives " + std::to_string(v.out(wa)) +
                        " outputs along w, not " + std::to_string(p.out(wa)));
        tl.v = v;
        if (out) *out = tl;
        return true;
    }
    return false;
}

void tap_lanes_weights(const Problem& p1, const TapLanes& tl, const float* w, float* dst) {
    const Problem& v = tl.v;
    const int wa = p1.ndims - 1;
    const dim_t kw = p1.kernel[wa], kv = v.kernel[wa], outer = p1.kernel_spatial() / kw;
    const dim_t t_lanes = tl.t_lanes, step = tl.step;
    // Group j's lanes: channel block j (folded), or kernel column j.
    const dim_t j_lanes = tl.folded ? kC0 : 0, j_col = tl.folded ? 0 : 1;
    std::fill(dst, dst + v.oc * v.ic * outer * kv, 0.0f);
    for (dim_t k = 0; k < p1.oc; ++k)
        for (dim_t c = 0; c < p1.ic; ++c)
            for (dim_t r = 0; r < outer; ++r)
                for (dim_t j = 0; j < tl.groups; ++j)
                    // Lane t of group j is tap j*step + t; with t < t_lanes - step group j - 1
                    // has it too, and weighs it.
                    for (dim_t t = j > 0 ? t_lanes - step : 0; t < t_lanes; ++t)
                        dst[((k * v.ic + j * j_lanes + t * kC0Small + c) * outer + r) * kv +
                            j * j_col] = w[((k * p1.ic + c) * outer + r) * kw + j * step + t];
}

void tap_lanes_input(const Problem& p1, const TapLanes& tl, const float* src, dim_t src_channels,
                     dim_t c_begin, DType storage, float* dst) {
    const Problem& v = tl.v;
    const int wa = p1.ndims - 1;
    const ActGeom xg = ActGeom::of(v.src_dims(), kC0);  // 16 lanes a block
    const dim_t iw = p1.in[wa], wv = v.in[wa], pl = p1.pad_begin[wa], dw = p1.dilation[wa];
    const dim_t rows = xg.d * xg.h, lines = p1.mb * rows;  // lines (n, d, h)
    // A line of X in 4 lanes a position with its padding (zeros), long enough for every lane of
    // X'': X''(u, j*16 + t*4 + c) = padded(u*su + j*sj + t*dw, c) (one block j = 0 unless
    // folded), so that each position of a block of X'' is t_lanes copies of 4 consecutive floats.
    // Each thread's line in its column slot (free until the products), sized before the region.
    const dim_t blocks = xg.c1, su = tl.folded ? p1.stride[wa] : 1,
                sj = tl.folded ? tl.step * dw : 0;
    const dim_t span = (wv - 1) * su + (blocks - 1) * sj + (tl.t_lanes - 1) * dw + 1;
    // A parallel region only for work that pays for it: on small problems opening one (here or
    // to size the threads' lines) cost a scheduler time slice whenever the other core was busy.
    const bool par = lines * wv * kC0 > 65536;
    const int threads = par ? omp_get_max_threads() : 1;
    if (par) reserve_thread_scratch(kFracColSlot, span * kC0Small, threads);
#pragma omp parallel num_threads(threads) if (par)
    {
        float* line = kept(kFracColSlot, span * kC0Small).get();
#pragma omp for schedule(static)
        for (dim_t l = 0; l < lines; ++l) {
            const dim_t n = l / rows, dh = l % rows;
            std::fill(line, line + span * kC0Small, 0.0f);
            for (dim_t c = 0; c < p1.ic; ++c) {
                const float* row = src + ((n * src_channels + c_begin + c) * rows + dh) * iw;
                // padded(u) = X(u - pl), inside for u in [pl, pl + iw).
                const dim_t u0 = std::clamp<dim_t>(pl, 0, span),
                            u1 = std::clamp<dim_t>(pl + iw, 0, span);
                for (dim_t u = u0; u < u1; ++u) line[u * kC0Small + c] = row[u - pl];
            }
            for (dim_t j = 0; j < blocks; ++j) {
                float* out = dst + ((n * blocks + j) * rows + dh) * wv * kC0;
                for (dim_t u = 0; u < wv; ++u)
                    for (dim_t t = 0; t < kN0 / kC0Small; ++t) {
                        float* o = out + u * kC0 + t * kC0Small;
                        if (t < tl.t_lanes)
                            std::memcpy(o, line + (u * su + j * sj + t * dw) * kC0Small,
                                        kC0Small * sizeof(float));
                        else
                            std::fill(o, o + kC0Small, 0.0f);
                    }
            }
        }
    }
    detail::round_storage(storage, dst, xg.size());
}

namespace {

// Whether the products write a plain result of `floats` by non-temporal stores (PlainOut::stream,
// with whole images per thread): from 16 MiB, far beyond what the caches keep until the result
// is read (timings: docs/algorithms.md, "Large results streamed"); Tuning::stream_output
// applies.
bool streams_result(dim_t floats, const Tuning& t) {
    return detail::stream_mode_allows(
        static_cast<std::size_t>(detail::sat_mul(floats, dim_t{sizeof(float)})),
        std::size_t{16} << 20, t);
}

// Images of the batch packed and multiplied at a time (the whole batch where it is small): the
// packed operand of a slice (X forward, dY backward data) is written by the pack and read back by
// the products while it is in cache, rather than the whole batch's (100 MB for ResNet-50's 56x56
// layers at batch 32) through memory. At least 2 images a thread, so that the products take
// whole images per thread (conv_fractal_b's units); more while the slice's operand stays within
// 4 MiB a thread. o.slice_images, where set, instead.
dim_t slice_images(const Problem& p, Pass pass, dim_t c0, const Options& o) {
    const dim_t mb = std::max<dim_t>(p.mb, 1);
    if (o.slice_images > 0) return std::min(o.slice_images, mb);
    Problem one = one_group(p);
    one.mb = 1;
    std::vector<dim_t> dims = one.dst_dims();  // backward data: dY
    dim_t block = c0;
    if (pass == Pass::Forward) {
        TapLanes tl;
        if (tap_lanes(one, c0, &tl)) {
            dims = tl.v.src_dims();
            block = kC0;
        } else {
            dims = one.src_dims();
            block = forward_c0(p, c0);
        }
    }
    // An image's packed floats, saturated (the work estimates ask for any size).
    dim_t image = detail::sat_mul(blocks_of(dims[1], block), block);
    for (std::size_t i = 2; i < dims.size(); ++i) image = detail::sat_mul(image, dims[i]);
    image = std::max<dim_t>(image, 1);
    const dim_t threads = std::max(1, omp_get_max_threads());
    return std::min(std::max((dim_t{1} << 20) * threads / image, 2 * threads), mb);
}

}  // namespace

void forward_fractal(const Problem& p, const ConvArgs& a, Profiler* prof, const Options& o) {
    const Problem q = one_group(p);
    // The products' problem: the group's, or with taps in the lanes the virtual one over X''
    // with W' (tap_lanes), at C0 16.
    TapLanes tl;
    const bool lanes = tap_lanes(p, o.c0, &tl);
    const Problem& v = lanes ? tl.v : q;
    const dim_t c0 = lanes ? kC0 : forward_c0(p, o.c0);
    const std::vector<dim_t> wd = v.wei_dims();
    const WeiGeom wg = WeiGeom::of(wd, c0);
    // B packed once (prepare_weights: asked for C0 16, this storage), else per call: bf16 pairs
    // where the CPU multiplies them, else fp32 (rounded to the storage type).
    const bool pairs = fractal_multiplies_pairs(p, Pass::Forward, o.storage, c0, o.bf16_pairs);
    const PreparedB prepared = prepared_b(a, p, Pass::Forward, o, pairs);
    const dim_t slice = slice_images(p, Pass::Forward, o.c0, o);
    const bool stream = streams_result(p.mb * p.oc * p.out_spatial(), a.tuning);
    Problem v1 = v;
    v1.mb = std::min(slice, p.mb);
    const Kept x5 = kept(kFracSlot[0], ActGeom::of(v1.src_dims(), c0).size());
    const Kept bt = prepared ? Kept{nullptr} : kept(kFracBtSlot, wg.size());
    const Kept wv =
        prepared || !lanes ? Kept{nullptr} : kept(kFracSlot[1], v.oc * v.ic * v.kernel_spatial());
    const dim_t wslice = q.oc * q.ic * q.kernel_spatial();
    for (dim_t g = 0; g < p.groups; ++g) {
        FractalB b;
        if (prepared) {
            b = prepared.group(g, wg.size());
        } else {
            Span s(prof, "pack_wei");
            const float* w = a.wei + g * wslice;
            if (lanes) {
                tap_lanes_weights(q, tl, w, wv.get());
                w = wv.get();
            }
            if (pairs) {
                auto* b16 = reinterpret_cast<std::uint16_t*>(bt.get());
                pack_weight_pairs(wd, c0, w, b16);
                b.bf16 = b16;
            } else {
                pack_weight_transposed(wd, c0, w, bt.get());
                detail::round_storage(o.storage, bt.get(), wg.size());
                b.f32 = bt.get();
            }
        }
        for (dim_t n0 = 0; n0 < p.mb; n0 += slice) {
            // Images [n0, n0 + ps.mb): their input at src, their output at dst.
            // The group's problems over the slice's images.
            Problem qs = q;
            qs.mb = std::min(slice, p.mb - n0);
            TapLanes ts = tl;
            ts.v.mb = qs.mb;
            const Problem& vs = lanes ? ts.v : qs;
            const float* src = a.src + n0 * p.ic * p.in_spatial();
            {
                Span s(prof, "pack_src");
                if (lanes)
                    tap_lanes_input(qs, ts, src, p.ic, g * q.ic, o.storage, x5.get());
                else
                    internal::pack_activation_rounded(o.storage, qs.src_dims(), c0, src, x5.get(),
                                                      p.ic, g * q.ic);
            }
            ColSource cs = plain_source(vs, c0, x5.get());
            cs.zero_padding = true;  // packed above
            // The products write dst itself (no NC1HWC0 result and unpack).
            const PlainOut out{a.dst + n0 * p.oc * p.out_spatial(), p.oc, g * q.oc, o.storage,
                               stream};
            conv_fractal_b(vs, c0, cs, b, a.bias ? a.bias + g * q.oc : nullptr, nullptr, prof,
                           &out);
        }
    }
}

namespace {

// A 1x1 kernel without padding at the start (the end's only decides which positions exist),
// strided: backward data's forward over the zero-inserted dY
// multiplies the inserted zeros (three quarters of its products at stride 2), and its results
// are those of the products over dY itself, each put at its input position s*o with zeros
// between. The problem of those products (q: backward data's forward, p: the problem): dY
// (N, K/G, out...) -> (N, C/G, out...), 1x1, stride 1.
bool inserts_after(const Problem& p) {
    bool strided = false;
    for (int i = 0; i < p.ndims; ++i) {
        if (p.kernel[i] != 1 || p.pad_begin[i] != 0) return false;
        strided |= p.stride[i] > 1;
    }
    return strided;
}
Problem products_on_dy(const Problem& q, const Problem& p) {
    Problem q1 = q;
    for (int i = 0; i < q.ndims; ++i) {
        q1.in[i] = p.out(i);
        q1.stride[i] = q1.dilation[i] = 1;
        q1.pad_begin[i] = q1.pad_end[i] = 0;
    }
    return q1;
}

// dX's channels [c_begin, c_begin + C/G) of (N, C, in...) from the products' NC1HWC0 result
// x5 (N, C/G, out...): dX(n, c, s*o) = x5(n, c, o) where s*o is inside, 0 elsewhere.
void unpack_inserted(const Problem& p, dim_t c0, const float* x5, float* dst, dim_t c_begin) {
    std::vector<dim_t> od{p.mb, p.icg()};
    for (int i = 0; i < p.ndims; ++i) od.push_back(p.out(i));
    const ActGeom xg = ActGeom::of(od, c0);
    dim_t in[3] = {1, 1, 1}, st[3] = {1, 1, 1};
    for (int i = 0; i < p.ndims; ++i) {
        in[3 - p.ndims + i] = p.in[i];
        st[3 - p.ndims + i] = p.stride[i];
    }
    const dim_t plane = in[0] * in[1] * in[2];
#pragma omp parallel for collapse(2) schedule(static) if (p.mb * xg.c * plane > 65536)
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t c = 0; c < xg.c; ++c) {
            float* out = dst + (n * p.ic + c_begin + c) * plane;
            std::fill(out, out + plane, 0.0f);
            for (dim_t d = 0; d < xg.d && d * st[0] < in[0]; ++d)
                for (dim_t h = 0; h < xg.h && h * st[1] < in[1]; ++h) {
                    const float* row = x5 + xg.offset(n, d, c / c0, h, 0, c % c0);
                    float* o = out + (d * st[0] * in[1] + h * st[1]) * in[2];
                    for (dim_t w = 0; w < xg.w && w * st[2] < in[2]; ++w)
                        o[w * st[2]] = row[w * c0];
                }
        }
}

}  // namespace

void backward_data_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof) {
    backward_data_fractal_via_forward(p, a, prof, Options{});
}

void backward_data_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof,
                                       const Options& o) {
    check_c0(o.c0);
    const dim_t c0 = o.c0;
    const Problem p1 = one_group(p);
    const Problem q = maps::backward_data_as_forward(p1);
    check_gives_back(q, p.in, p.ndims, "backward_data_fractal_via_forward");
    const BackwardDataPads pads = backward_data_pads(p1);  // the same as by_name("pad5d")
    const WeiGeom fg = WeiGeom::of(q.wei_dims(), c0);
    const bool after = inserts_after(p);
    // B: FlipRot(W) with each fractal turned C0 x 16, prepared once (C0 16, this storage) or
    // packed here from OIHW in one pass (bf16 pairs where the CPU multiplies them).
    const bool pairs = fractal_multiplies_pairs(p, Pass::BackwardData, o.storage, c0, o.bf16_pairs);
    const PreparedB prepared = prepared_b(a, p, Pass::BackwardData, o, pairs);
    // The batch a slice of images at a time (slice_images: dY packed, then read back).
    const dim_t slice = slice_images(p, Pass::BackwardData, c0, o);
    const bool stream = streams_result(p.mb * p.ic * p.in_spatial(), a.tuning);
    Problem most = p1, most_q = q;  // the group's and its forward's, the largest slice's
    most.mb = most_q.mb = std::min(slice, p.mb);
    const Kept y5 = kept(kFracSlot[0], ActGeom::of(most.dst_dims(), c0).size());
    const dim_t x5_most = after ? ActGeom::of(products_on_dy(most_q, p).dst_dims(), c0).size() : 0;
    const Kept wf = prepared ? Kept{nullptr} : kept(kFracSlot[4], fg.size()),
               x5 = kept(kFracSlot[5], x5_most);
    const dim_t wslice = p1.oc * p1.ic * p.kernel_spatial();
    for (dim_t g = 0; g < p.groups; ++g) {
        FractalB b;
        if (prepared) {
            b = prepared.group(g, fg.size());
        } else {
            Span s(prof, "fliprot");
            if (pairs) {
                auto* b16 = reinterpret_cast<std::uint16_t*>(wf.get());
                pack_weight_fliprot_pairs(p1, c0, a.wei + g * wslice, b16);
                b.bf16 = b16;
            } else {
                pack_weight_fliprot_transposed(p1, c0, a.wei + g * wslice, wf.get());
                detail::round_storage(o.storage, wf.get(), fg.size());
                b.f32 = wf.get();
            }
        }
        for (dim_t n0 = 0; n0 < p.mb; n0 += slice) {
            // Images [n0, n0 + ps.mb): their dY at dy, their dX at dx.
            Problem ps = p, ps1 = p1, qs = q;  // p's, the group's and its forward's, the slice's
            ps.mb = ps1.mb = qs.mb = std::min(slice, p.mb - n0);
            const float* dy = a.diff_dst + n0 * p.oc * p.out_spatial();
            float* dx = a.diff_src + n0 * p.ic * p.in_spatial();
            // dY of one group (N, K/G, out...), read by the forward through its zero insertion
            // and the pads.
            const std::vector<dim_t> yd = ps1.dst_dims();
            {
                Span s(prof, "pack_dst");
                internal::pack_activation_rounded(o.storage, yd, c0, dy, y5.get(), p.oc, g * p1.oc);
            }
            if (after) {
                const Problem q1 = products_on_dy(qs, ps);
                const dim_t x5_floats = ActGeom::of(q1.dst_dims(), c0).size();
                ColSource src = plain_source(q1, c0, y5.get());
                src.zero_padding = true;  // packed above
                conv_fractal_b(q1, c0, src, b, nullptr, x5.get(), prof);
                Span s(prof, "zero-insert");
                detail::round_storage(o.storage, x5.get(), x5_floats);
                unpack_inserted(ps, c0, x5.get(), dx, g * p1.ic);
                continue;
            }
            // The products read dY through the zero insertion and the pad (ColSource): no
            // zero-inserted, padded copy of it is made, and write dX itself (no NC1HWC0 result
            // and unpack).
            ColSource dy_source;
            dy_source.x5 = y5.get();
            dy_source.g = ActGeom::of(yd, c0);
            dy_source.zero_padding = true;  // packed above
            for (int i = 0; i < p.ndims; ++i) {
                const int axis = 3 - p.ndims + i;
                dy_source.ins[axis] = p.stride[i];
                dy_source.off[axis] = pads.begin[static_cast<std::size_t>(i)];
            }
            const PlainOut out{dx, p.ic, g * p1.ic, o.storage, stream};
            conv_fractal_b(qs, c0, dy_source, b, nullptr, nullptr, prof, &out);
        }
    }
}

void backward_weight_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof) {
    backward_weight_fractal_via_forward(p, a, prof, Options{});
}

void backward_weight_fractal_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof,
                                         const Options& o) {
    backward_weight_fractal_oihw(p, a.src, a.diff_dst, a.diff_wei, prof, o);
}

namespace {

// Storage elements of the packed layouts, checked (sizes of via-forward problems can pass 2^63).
dim_t act_size(const std::vector<dim_t>& dims, dim_t c0) {
    dim_t n = detail::sat_mul(dims[0], blocks_of(dims[1], c0) * c0);
    for (std::size_t i = 2; i < dims.size(); ++i) n = detail::sat_mul(n, dims[i]);
    return n;
}
dim_t wei_size(const std::vector<dim_t>& dims, dim_t c0) {
    dim_t n = detail::sat_mul({blocks_of(dims[1], c0), blocks_of(dims[0], kN0), kN0, c0});
    for (std::size_t i = 2; i < dims.size(); ++i) n = detail::sat_mul(n, dims[i]);
    return n;
}
// conv_fractal's buffers for q: B transposed, and the column blocks (one, or each thread's).
dim_t conv_fractal_work(const Problem& q, dim_t c0) {
    const WeiGeom wg = WeiGeom::of(q.wei_dims(), c0);
    const dim_t frac = kN0 * c0, rows = wg.rows();
    const dim_t m1 = blocks_of(q.out_spatial(), kN0);
    const dim_t tn = std::max(wg.n1, blocks_of(blocks_of(q.oc, c0) * c0, kN0));
    const dim_t chunk = conv_fractal_chunk(rows, tn, m1, c0);
    // The column block, its bf16 copy (bf16 products) or its fractals' addresses, and the tiles.
    const dim_t col = detail::sat_mul({rows, chunk, frac});
    // ColPlan's tables: three dim_t (two floats each) per tap and output position of each axis,
    // and one per output position of each axis (the order).
    dim_t tables = 0;
    for (int i = 0; i < q.ndims; ++i)
        tables = detail::sat_add(tables, detail::sat_mul({2, 3 * q.kernel[i] + 1, q.out(i)}));
    // The narrow products' lists of rows in each column block.
    const dim_t lists = q.oc <= kNarrowMax ? narrow_list_floats(rows, chunk) + 2 : 0;
    const dim_t block = detail::sat_add(
        detail::sat_add(col, std::max(col / 2 + 1, fractal_at_floats(rows, chunk, false)) + 2 +
                                 rows * chunk / 4 + 1 + lists),
        detail::sat_mul({chunk, tn, kN0 * kN0}));
    // The narrow products' B (outputs of at most kNarrowMax channels).
    const dim_t narrow = q.oc <= kNarrowMax ? detail::sat_mul({rows, q.oc, c0}) : 0;
    tables = detail::sat_add(tables, narrow);
    return detail::sat_add(detail::sat_add(detail::sat_mul({rows, wg.n1, frac}), tables),
                           detail::sat_mul(block, omp_get_max_threads()));
}

}  // namespace

}  // namespace convlab::davinci

namespace convlab::detail {

// The buffers of the calls above for their pass, in bytes.
dim_t fractal_work(const Problem& p, Pass pass, dim_t c0) {
    using davinci::act_size;
    using davinci::conv_fractal_work;
    using davinci::wei_size;
    const Problem p1 = davinci::one_group(p);
    dim_t floats = 0;
    davinci::TapLanes tl;
    // The packed operands hold a slice of the batch's images at a time (slice_images).
    const auto sliced = [&] {
        Problem s = p1;
        s.mb = std::min(p.mb, davinci::slice_images(p, pass, c0, davinci::Options{}));
        return s;
    };
    if (pass == Pass::Forward && davinci::tap_lanes(p, c0, &tl)) {
        // X'' of a slice, W' and B of the virtual problem, and its products' buffers.
        Problem v = tl.v;
        v.mb = sliced().mb;
        floats = sat_add(
            sat_add(act_size(v.src_dims(), c0), sat_mul(dim_t{2}, wei_size(v.wei_dims(), c0))),
            conv_fractal_work(tl.v, c0));
    } else if (pass == Pass::Forward) {
        const dim_t fc = davinci::forward_c0(p, c0);
        floats = sat_add(sat_add(act_size(sliced().src_dims(), fc), wei_size(p1.wei_dims(), fc)),
                         conv_fractal_work(p1, fc));
    } else if (pass == Pass::BackwardData) {
        // dY of a slice packed (read through its zero insertion and pad, never copied), dX of
        // a slice packed (strided 1x1s), B.
        const Problem q = maps::backward_data_as_forward(p1);
        if (!q.validate(true).empty()) return kHugeSize;
        const Problem s1 = sliced();
        floats = sat_add(act_size(s1.dst_dims(), c0), act_size(s1.src_dims(), c0));
        floats = sat_add(floats, sat_add(wei_size(p1.wei_dims(), c0), wei_size(q.wei_dims(), c0)));
        floats = sat_add(floats, conv_fractal_work(q, c0));
    } else {
        floats = sat_add(davinci::fractal_weight_work(p, c0), wei_size(p.wei_dims(), c0));
    }
    return sat_mul(floats, dim_t{sizeof(float)});
}

}  // namespace convlab::detail

namespace convlab::davinci {

namespace {

// A dense row-major fp32 copy of t (any layout, any dtype), after checking its dims.
Tensor dense_f32(const char* what, const Tensor& t, const std::vector<dim_t>& want) {
    if (t.dims() != want)
        throw Error(std::string(what) + " has dims " + t.shape_str() + ", expected " +
                    dims_str(want));
    if (t.dtype() == DType::f32 && t.layout().is_row_major()) return t;
    Tensor out(want);
    std::vector<dim_t> c(want.size());
    for (dim_t i = 0; i < out.numel(); ++i) {
        t.coord_of(i, c);
        out.f32()[i] = t.get(c);
    }
    return out;
}

}  // namespace

Tensor forward(const Problem& p, const Tensor& src, const Tensor& wei, const Tensor* bias,
               const Options& o, Profiler* prof) {
    p.check();
    check_c0(o.c0);
    const Tensor x = dense_f32("src", src, p.src_dims());
    const Tensor w = dense_f32("wei", wei, p.wei_dims());
    Tensor b;
    if (bias) b = dense_f32("bias", *bias, {p.oc});
    check_memory_budget(find_algorithm(Pass::Forward, "fractal"), p, o.c0);
    Tensor dst(p.dst_dims());
    ConvArgs args;
    args.src = x.f32();
    args.wei = w.f32();
    args.bias = bias ? b.f32() : nullptr;
    args.dst = dst.f32();
    forward_fractal(p, args, prof, o);
    return dst;
}

Tensor backward_data(const Problem& p, const Tensor& diff_dst, const Tensor& wei, const Options& o,
                     Profiler* prof) {
    p.check();
    check_c0(o.c0);
    const Tensor dy = dense_f32("diff_dst", diff_dst, p.dst_dims());
    const Tensor w = dense_f32("wei", wei, p.wei_dims());
    check_memory_budget(find_algorithm(Pass::BackwardData, "fractal_via_forward"), p, o.c0);
    Tensor dx(p.src_dims());
    ConvArgs args;
    args.diff_dst = dy.f32();
    args.wei = w.f32();
    args.diff_src = dx.f32();
    backward_data_fractal_via_forward(p, args, prof, o);
    return dx;
}

Tensor backward_weight(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                       const Options& o, Profiler* prof) {
    p.check();
    check_c0(o.c0);
    const Tensor x = dense_f32("src", src, p.src_dims());
    const Tensor dy = dense_f32("diff_dst", diff_dst, p.dst_dims());
    check_memory_budget(find_algorithm(Pass::BackwardWeight, "fractal_via_forward"), p, o.c0);
    Tensor dw(p.wei_dims());
    ConvArgs args;
    args.src = x.f32();
    args.diff_dst = dy.f32();
    args.diff_wei = dw.f32();
    backward_weight_fractal_via_forward(p, args, prof, o);
    return dw;
}

Tensor backward_weight_fz(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                          const Options& o, Profiler* prof) {
    p.check();
    check_c0(o.c0);
    const Tensor x = dense_f32("src", src, p.src_dims());
    const Tensor dy = dense_f32("diff_dst", diff_dst, p.dst_dims());
    check_memory_budget(find_algorithm(Pass::BackwardWeight, "fractal_via_forward"), p, o.c0);
    Tensor dw(weight_layout(p.wei_dims(), o.c0), DType::f32);
    backward_weight_fractal_fz(p, x.f32(), dy.f32(), dw.f32(), prof, o);
    return dw;
}

}  // namespace convlab::davinci
