// Index maps as expressions (engine/include/convlab/map_expr.hpp): every map written as an
// expression equals, on every element of random problems, the plain index function it replaced
// (kept here as the reference); composition equals running the two maps in sequence; the
// formula text and its numbers at given coordinates.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "convlab/davinci.hpp"
#include "convlab/index_map.hpp"
#include "convlab/map_expr.hpp"
#include "convlab/map_rename.hpp"
#include "convlab/maps.hpp"
#include "test_files.hpp"
#include "test_util.hpp"

using namespace convlab;
using convlab::test::random_problem;
using davinci::ActGeom;
using davinci::kN0;
using davinci::WeiGeom;

namespace {

using Ref = std::function<dim_t(const dim_t*)>;

// Every domain element of m maps where `ref` says.
void check_against(const IndexMap& m, const Ref& ref, const std::string& what) {
    INFO(what << " " << m.name() << " " << m.domain().str());
    REQUIRE(m.expr() != nullptr);
    std::vector<dim_t> c(static_cast<std::size_t>(m.domain().rank()));
    dim_t bad = -1, count = 0;
    for (dim_t i = 0; i < m.domain().numel(); ++i) {
        m.domain().coord_of(i, c);
        if (m.map(i) != ref(c.data())) {
            if (bad < 0) bad = i;
            ++count;
        }
    }
    INFO("first mismatch at domain element " << bad << " (" << count << " differ)");
    CHECK(bad < 0);
}

std::vector<float> run(const IndexMap& m, const std::vector<float>& src) {
    std::vector<float> dst(static_cast<std::size_t>(m.dst().numel()));
    m.execute(src.data(), dst.data());
    return dst;
}

std::vector<float> iota(dim_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (dim_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
    return v;
}

// The references: the index functions the maps were written as before they were expressions.

Ref im2col_ref(const Problem& p) {
    return [p](const dim_t* c) -> dim_t {
        dim_t row = c[2], col = c[3];
        dim_t kk[3], oo[3];
        for (int i = p.ndims - 1; i >= 0; --i) {
            kk[i] = row % p.kernel[i];
            row /= p.kernel[i];
            oo[i] = col % p.out(i);
            col /= p.out(i);
        }
        dim_t lin = c[0] * p.ic + c[1] * p.icg() + row;
        for (int i = 0; i < p.ndims; ++i) {
            const dim_t pos = oo[i] * p.stride[i] - p.pad_begin[i] + kk[i] * p.dilation[i];
            if (pos < 0 || pos >= p.in[i]) return IndexMap::kZero;
            lin = lin * p.in[i] + pos;
        }
        return lin;
    };
}

Ref fliprot_ref(const Problem& p) {
    return [p](const dim_t* c) -> dim_t {
        const dim_t g = c[0] / p.icg(), ci = c[0] % p.icg(), co = c[1];
        dim_t lin = (g * p.ocg() + co) * p.icg() + ci;
        for (int a = 0; a < p.ndims; ++a) lin = lin * p.kernel[a] + (p.kernel[a] - 1 - c[2 + a]);
        return lin;
    };
}

// (n, d, c1, h, w, ci) of a physical activation coordinate of rank 4, 5 or 6.
struct A6 {
    dim_t n, d, c1, h, w, ci;
};
A6 act_coord(int rank, const dim_t* c) {
    if (rank == 6) return {c[0], c[1], c[2], c[3], c[4], c[5]};
    if (rank == 5) return {c[0], 0, c[1], c[2], c[3], c[4]};
    return {c[0], 0, c[1], 0, c[2], c[3]};
}
struct Row4 {
    dim_t kd, c1, kh, kw;
};
Row4 unrow(const WeiGeom& g, dim_t r) {
    Row4 o;
    o.kw = r % g.w;
    r /= g.w;
    o.kh = r % g.h;
    r /= g.h;
    o.c1 = r % g.i1;
    o.kd = r / g.i1;
    return o;
}

std::vector<dim_t> swap01(std::vector<dim_t> d) {
    std::swap(d[0], d[1]);
    return d;
}

std::vector<dim_t> fliprot_dims(const Problem& p) {
    std::vector<dim_t> d{p.ic, p.ocg()};
    for (int i = 0; i < p.ndims; ++i) d.push_back(p.kernel[i]);
    return d;
}

}  // namespace

TEST_CASE("map expressions: the NCHW maps equal their index functions on every element") {
    std::mt19937 rng(5901);
    for (int t = 0; t < 40; ++t) {
        const Problem p = random_problem(rng);
        INFO(to_descriptor(p));
        check_against(maps::im2col(p), im2col_ref(p), "im2col");
        check_against(maps::flip_rot(p), fliprot_ref(p), "fliprot");
        // col2im is the transposed expression: the same images from the source side.
        const IndexMap c2i = maps::col2im(p);
        REQUIRE(c2i.expr() != nullptr);
        check_against(c2i, im2col_ref(p), "col2im");
        const IndexMap st = maps::strided(p);
        check_against(
            st,
            [&](const dim_t* c) -> dim_t {
                dim_t lin = c[0] * p.oc + c[1];
                for (int a = 0; a < p.ndims; ++a) {
                    if (c[2 + a] % p.stride[a]) return IndexMap::kZero;
                    lin = lin * p.out(a) + c[2 + a] / p.stride[a];
                }
                return lin;
            },
            "strided");
        const IndexMap pd = maps::pad_for_backward_data(p);
        check_against(
            pd,
            [&](const dim_t* c) -> dim_t {
                dim_t lin = c[0] * p.oc + c[1];
                for (int a = 0; a < p.ndims; ++a) {
                    const dim_t z = (p.out(a) - 1) * p.stride[a] + 1;
                    const dim_t x = c[2 + a] - ((p.kernel[a] - 1) * p.dilation[a] - p.pad_begin[a]);
                    if (x < 0 || x >= z) return IndexMap::kZero;
                    lin = lin * z + x;
                }
                return lin;
            },
            "pad");
        const IndexMap tn = maps::tnc_src(p);
        check_against(
            tn,
            [&](const dim_t* c) -> dim_t {
                dim_t lin = c[1] * p.ic + c[0];
                for (int a = 0; a < p.ndims; ++a) lin = lin * p.in[a] + c[2 + a];
                return lin;
            },
            "tnc");
        check_against(
            maps::tnc_diff_wei(p),
            [&](const dim_t* c) -> dim_t {
                const dim_t g = c[0] / p.ocg(), co = c[0] % p.ocg();
                dim_t lin = (g * p.icg() + c[1]) * p.ocg() + co;
                for (int a = 0; a < p.ndims; ++a) lin = lin * p.kernel[a] + c[2 + a];
                return lin;
            },
            "tnc_diff_wei");
    }
}

TEST_CASE("map expressions: the DaVinci maps equal their index functions on every element") {
    std::mt19937 rng(5902);
    for (int t = 0; t < 30; ++t) {
        const Problem p = random_problem(rng);
        const dim_t c0 = std::vector<dim_t>{1, 2, 3, 4, 8, 16}[rng() % 6];
        INFO(to_descriptor(p) << " c0 " << c0);
        // Packs and unpacks against the generic blocked pack of their Layout.
        for (const auto& dims : {p.src_dims(), p.dst_dims()}) {
            const Layout l = davinci::activation_layout(dims, c0);
            const IndexMap e = davinci::pack_activation(dims, c0);
            const IndexMap b = davinci::blocked_pack(l, e.src(), e.dst(), "ref");
            check_against(
                e, [&](const dim_t* c) { return b.map_coord(c); }, "pack act");
            const IndexMap u = davinci::unpack_activation(dims, c0);
            const IndexMap bu = davinci::blocked_unpack(l, u.dst(), u.src(), "ref");
            check_against(
                u, [&](const dim_t* c) { return bu.map_coord(c); }, "unpack act");
        }
        {
            const auto dims = p.wei_dims();
            const Layout l = davinci::weight_layout(dims, c0);
            const IndexMap e = davinci::pack_weight(dims, c0);
            const IndexMap b = davinci::blocked_pack(l, e.src(), e.dst(), "ref");
            check_against(
                e, [&](const dim_t* c) { return b.map_coord(c); }, "pack wei");
            const IndexMap u = davinci::unpack_weight(dims, c0);
            const IndexMap bu = davinci::blocked_unpack(l, u.dst(), u.src(), "ref");
            check_against(
                u, [&](const dim_t* c) { return bu.map_coord(c); }, "unpack wei");
        }
        {
            const auto dims = p.src_dims();
            const ActGeom sg = ActGeom::of(dims, c0);
            const IndexMap m = davinci::tnc5d(dims, c0);
            const int rank = m.dst().rank();
            check_against(
                m,
                [&](const dim_t* pc) -> dim_t {
                    const A6 a = act_coord(rank, pc);
                    const dim_t n = a.c1 * sg.c0 + a.ci, c = a.n;
                    if (n >= sg.n) return IndexMap::kZero;
                    return sg.offset(n, a.d, c / sg.c0, a.h, a.w, c % sg.c0);
                },
                "tnc5d");
        }
        {
            const auto dims = p.dst_dims();
            const ActGeom sg = ActGeom::of(dims, c0);
            const WeiGeom wg = WeiGeom::of(swap01(dims), c0);
            check_against(
                davinci::tncf(dims, c0),
                [&](const dim_t* pc) -> dim_t {
                    const Row4 r = unrow(wg, pc[0]);
                    const dim_t b = pc[1] * kN0 + pc[2], a = r.c1 * wg.c0 + pc[3];
                    if (b >= sg.c || a >= sg.n) return IndexMap::kZero;
                    return sg.offset(a, r.kd, b / sg.c0, r.kh, r.kw, b % sg.c0);
                },
                "tncf");
        }
        {
            const WeiGeom sg = WeiGeom::of(p.wei_dims(), c0), dg = WeiGeom::of(fliprot_dims(p), c0);
            const dim_t cg = p.icg(), kg = p.ocg();
            check_against(
                davinci::fliprot_fz(p, c0),
                [&](const dim_t* pc) -> dim_t {
                    const Row4 r = unrow(dg, pc[0]);
                    const dim_t c = pc[1] * kN0 + pc[2], kc = r.c1 * dg.c0 + pc[3];
                    if (c >= dg.o || kc >= kg) return IndexMap::kZero;
                    const dim_t g = c / cg, cc = c % cg, o = g * kg + kc;
                    const dim_t row =
                        sg.row(sg.d - 1 - r.kd, cc / sg.c0, sg.h - 1 - r.kh, sg.w - 1 - r.kw);
                    return sg.offset(row, o / kN0, o % kN0, cc % sg.c0);
                },
                "fliprot_fz");
        }
        {
            const ActGeom sg = ActGeom::of(p.dst_dims(), c0);
            const IndexMap m = davinci::strided5d(p, c0);
            const int rank = m.dst().rank();
            dim_t s[3] = {1, 1, 1};
            for (int i = 0; i < p.ndims; ++i) s[3 - p.ndims + i] = p.stride[i];
            check_against(
                m,
                [&](const dim_t* pc) -> dim_t {
                    const A6 a = act_coord(rank, pc);
                    if (a.c1 * sg.c0 + a.ci >= sg.c) return IndexMap::kZero;
                    if (a.d % s[0] || a.h % s[1] || a.w % s[2]) return IndexMap::kZero;
                    return sg.offset(a.n, a.d / s[0], a.c1, a.h / s[1], a.w / s[2], a.ci);
                },
                "strided5d");
        }
        {
            const davinci::BackwardDataPads bp = davinci::backward_data_pads(p);
            const ActGeom sg = ActGeom::of(bp.zdims, c0);
            const IndexMap m = davinci::pad5d(bp.zdims, bp.begin, bp.end, c0);
            const int rank = m.dst().rank();
            dim_t pb[3] = {0, 0, 0};
            for (int i = 0; i < p.ndims; ++i) pb[3 - p.ndims + i] = bp.begin[i];
            check_against(
                m,
                [&](const dim_t* pc) -> dim_t {
                    const A6 a = act_coord(rank, pc);
                    if (a.c1 * sg.c0 + a.ci >= sg.c) return IndexMap::kZero;
                    const dim_t d = a.d - pb[0], h = a.h - pb[1], w = a.w - pb[2];
                    if (d < 0 || d >= sg.d || h < 0 || h >= sg.h || w < 0 || w >= sg.w)
                        return IndexMap::kZero;
                    return sg.offset(a.n, d, a.c1, h, w, a.ci);
                },
                "pad5d");
        }
        {
            std::vector<dim_t> xdims{p.mb, p.icg()};
            for (int i = 0; i < p.ndims; ++i) xdims.push_back(p.in[i]);
            const ActGeom sg = ActGeom::of(xdims, c0);
            dim_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
                  pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
            for (int i = 0; i < p.ndims; ++i) {
                const int a = 3 - p.ndims + i;
                in[a] = p.in[i];
                k[a] = p.kernel[i];
                s[a] = p.stride[i];
                d[a] = p.dilation[i];
                pb[a] = p.pad_begin[i];
                out[a] = p.out(i);
            }
            const dim_t m = out[0] * out[1] * out[2];
            check_against(
                davinci::im2col_fractal(p, c0),
                [&](const dim_t* pc) -> dim_t {
                    dim_t mm = pc[2] * kN0 + pc[3];
                    if (mm >= m) return IndexMap::kZero;
                    dim_t r = pc[1];
                    const dim_t kw = r % k[2];
                    r /= k[2];
                    const dim_t kh = r % k[1];
                    r /= k[1];
                    const dim_t c1 = r % sg.c1, kd = r / sg.c1;
                    if (c1 * sg.c0 + pc[4] >= sg.c) return IndexMap::kZero;
                    const dim_t ow = mm % out[2];
                    mm /= out[2];
                    const dim_t oh = mm % out[1], od = mm / out[1];
                    const dim_t id = od * s[0] - pb[0] + kd * d[0];
                    const dim_t ih = oh * s[1] - pb[1] + kh * d[1];
                    const dim_t iw = ow * s[2] - pb[2] + kw * d[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2])
                        return IndexMap::kZero;
                    return sg.offset(pc[0], id, c1, ih, iw, pc[4]);
                },
                "im2col_fractal");
        }
    }
}

TEST_CASE("map expressions: composition is one expression equal to the two maps in sequence") {
    std::mt19937 rng(5903);
    for (int t = 0; t < 30; ++t) {
        const Problem p = random_problem(rng);
        INFO(to_descriptor(p));
        // pad after strided: the backward-data input in one gather.
        const IndexMap st = maps::strided(p), pd = maps::pad_for_backward_data(p);
        const IndexMap c = compose(pd, st, "pad_strided");
        REQUIRE(c.expr() != nullptr);
        const std::vector<float> dy = iota(st.src().numel());
        CHECK(run(c, dy) == run(pd, run(st, dy)));
        // fliprot_fz after fractal_z: OIHW weights straight into the flipped FRACTAL_Z.
        const dim_t c0 = std::vector<dim_t>{2, 4, 8, 16}[rng() % 4];
        const IndexMap fz = davinci::pack_weight(p.wei_dims(), c0);
        const IndexMap ff = davinci::fliprot_fz(p, c0);
        const IndexMap cf = compose(ff, fz, "fliprot_fz_of_oihw");
        REQUIRE(cf.expr() != nullptr);
        const std::vector<float> w = iota(fz.src().numel());
        CHECK(run(cf, w) == run(ff, run(fz, w)));
        // The definition of fliprot_fz as unpack, flip_rot, pack: now composed expressions.
        const IndexMap composed = davinci::fliprot_fz_composed(p, c0);
        REQUIRE(composed.expr() != nullptr);
        const std::vector<float> wz = iota(ff.src().numel());
        CHECK(run(composed, wz) == run(ff, wz));
    }
}

// A renamed expression (map_rename.hpp) is the same program: with no pairs its formula is the
// original's word for word and every element maps where the original maps it, over range and
// divisibility guards, flips, a composition and the DaVinci converters.
TEST_CASE("map expressions: renaming keeps the program and changes only the names") {
    std::mt19937 rng(6211);
    for (int t = 0; t < 20; ++t) {
        const Problem p = random_problem(rng);
        const dim_t c0 = std::vector<dim_t>{2, 4, 8, 16}[rng() % 4];
        INFO(to_descriptor(p) << " c0 " << c0);
        const IndexMap all[] = {maps::im2col(p),
                                maps::strided(p),
                                maps::flip_rot(p),
                                compose(maps::pad_for_backward_data(p), maps::strided(p), "ps"),
                                davinci::tnc5d(p.src_dims(), c0),
                                davinci::tncf(p.dst_dims(), c0),
                                davinci::fliprot_fz(p, c0)};
        for (const IndexMap& m : all) {
            INFO(m.name());
            REQUIRE(m.expr() != nullptr);
            const MapExpr same = renamed(*m.expr(), {});
            CHECK(same.formula("dst", "src", false) == m.expr()->formula("dst", "src", false));
            const IndexMap r(m.name(), m.kind(), m.src(), m.dst(), same, m.line_axis());
            const std::vector<float> x = iota(m.src().numel());
            CHECK(run(r, x) == run(m, x));
        }
    }
    // TNCf in the vocabulary of dY read as a kernel: the names swap roles at once (n1 -> k1 while
    // a1 -> n1), the image's c/C0 and c % C0 are named after dY5's dims, and it still maps every
    // element where tncf does.
    const IndexMap m = davinci::tncf({3, 6, 3, 3}, 4);
    const IndexMap r = renamed(m, {{"c1hw", "n1hw"},
                                   {"n1", "k1"},
                                   {"n0", "k0"},
                                   {"c0", "n0"},
                                   {"a1", "n1"},
                                   {"b", "k"},
                                   {"a", "n"},
                                   {"B", "K"},
                                   {"A", "N"},
                                   {"N0", "K0"}});
    CHECK(r.dst().names == std::vector<std::string>{"n1hw", "k1", "k0", "n0"});
    CHECK(r.src() == m.src());
    CHECK(r.formula() ==
          "tncf: dst(n1hw, k1, k0, n0) <- src(n, c1, h, w, c0)   zero unless k < K, n < N   "
          "where w = n1hw % W, h = n1hw/W % H, n1 = n1hw/W/H, k = k1*K0 + k0, n = n1*C0 + n0, "
          "c1 = k/C0, c0 = k % C0");
    const std::vector<float> x = iota(m.src().numel());
    CHECK(run(r, x) == run(m, x));
    // A pair that names nothing, a name given to two things, an empty name: refused.
    CHECK_THROWS_AS(renamed(*m.expr(), {{"zz", "y"}}), Error);
    CHECK_THROWS_AS(renamed(*m.expr(), {{"a1", "n1"}}), Error);  // the axis n1 too
    CHECK_THROWS_AS(renamed(*m.expr(), {{"a1", ""}}), Error);
}

TEST_CASE("map expressions: the formula and its numbers at a coordinate") {
    // 1-D, stride 2: strided dst(n, k, w) <- src(n, k, w/SW) when SW divides w.
    Problem p;
    p.ndims = 1;
    p.mb = 1;
    p.ic = 1;
    p.oc = 1;
    p.in[0] = 5;
    p.kernel[0] = 3;
    p.stride[0] = 2;
    p.pad_begin[0] = p.pad_end[0] = 1;
    REQUIRE(p.validate().empty());
    const IndexMap st = maps::strided(p);
    CHECK(st.formula() == "strided: dst(n, k, w) <- src(n, k, w/SW)   zero unless w % SW == 0");
    // w = 4: 4 % 2 == 0 holds, src w = 2.
    CHECK(st.explain_lines(4) == std::vector<std::string>{"w % SW == 0: 4 % 2 == 0 holds",
                                                          "dst(n=0,k=0,w=4) <- src(n=0,k=0,w=2)"});
    CHECK(st.explain_lines(3) ==
          std::vector<std::string>{"w % SW == 0: 3 % 2 == 0 fails: a padding zero",
                                   "dst(n=0,k=0,w=3) <- 0"});
    // im2col: the column matrix (n, g, row, col) of 1-D; row = (c, kw), col = ow.
    const IndexMap im = maps::im2col(p);
    CHECK(im.formula() ==
          "im2col: dst(n, g, row, col) <- src(n, g*CG + c, iw)   zero unless 0 <= iw < IW   "
          "where kw = row % KW, c = row/KW, iw = col*SW - PW + kw*DW");
    // row 2 = (c 0, kw 2), col 1: iw = 1*2 - 1 + 2*1 = 3.
    const dim_t at = im.dst().linear_of(std::vector<dim_t>{0, 0, 2, 1});
    CHECK(im.explain_lines(at) ==
          std::vector<std::string>{"kw = row % KW = 2 % 3 = 2", "c = row/KW = 2/3 = 0",
                                   "iw = col*SW - PW + kw*DW = 1*2 - 1 + 2*1 = 3",
                                   "0 <= iw < IW: 0 <= 3 < 5 holds",
                                   "dst(n=0,g=0,row=2,col=1) <- src(n=0,c=0,w=3)"});
    // The composition prints as one formula over the padded tensor's coordinates.
    const IndexMap c = compose(maps::pad_for_backward_data(p), st, "strided_pad");
    CHECK(c.formula() ==
          "strided_pad: dst(n, k, w) <- src(n, k, (w - PW)/SW)   zero unless 0 <= w - PW < W, "
          "(w - PW) % SW == 0");
    // PW = (3-1)*1 - 1 = 1, W = (3-1)*2 + 1 = 5: w = 3 reads src w (3-1)/2 = 1; w = 2 is a zero.
    CHECK(c.explain_lines(3) ==
          std::vector<std::string>{"0 <= w - PW < W: 0 <= 3 - 1 < 5 holds",
                                   "(w - PW) % SW == 0: (3 - 1) % 2 == 0 holds",
                                   "dst(n=0,k=0,w=3) <- src(n=0,k=0,w=1)"});
}

TEST_CASE("convlab map --explain: a composed map's formula, and a bad coordinate gives one line") {
    const test::Run r = test::run_in_process({"map", "--map", "pad.strided", "--problem",
                                              "mb1ic1iw5oc1kw3sw2pw1", "--explain", "0,0,3"});
    CHECK(r.status == 0);
    CHECK(r.out ==
          "pad.strided: dst(n, k, w) <- src(n, k, (w - PW)/SW)   zero unless 0 <= w - PW < W, "
          "(w - PW) % SW == 0\nat dst(n=0,k=0,w=3):\n  0 <= w - PW < W: 0 <= 3 - 1 < 5 holds\n"
          "  (w - PW) % SW == 0: (3 - 1) % 2 == 0 holds\n  dst(n=0,k=0,w=3) <- src(n=0,k=0,w=1)\n");
    // The same composition through the UTF-8 operator, and a reduce explained at a source.
    CHECK(test::run_in_process({"map", "--map", "pad\u2218strided", "--problem",
                                "mb1ic1iw5oc1kw3sw2pw1", "--explain", "0,0,3"})
              .out.find("dst(n=0,k=0,w=3) <- src(n=0,k=0,w=1)") != std::string::npos);
    const test::Run c = test::run_in_process(
        {"map", "--map", "col2im", "--problem", "mb1ic1iw5oc1kw3pw1", "--explain", "0,0,2,1"});
    CHECK(c.out.find("at src(n=0,g=0,row=2,col=1):") != std::string::npos);
    CHECK(c.out.find("dst(n=0,c=0,w=2) += src(n=0,g=0,row=2,col=1)") != std::string::npos);
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
        {{"--explain", "0,0"}, "--explain '0,0': 2 indices; the destination (n=1,k=1,w=7)"},
        {{"--explain", "0,0,7"}, "--explain '0,0,7': w = 7 is outside the destination"},
        {{"--explain", "0,0,x"}, "--explain 'x'"},
        {{"--explain", "0,0,1", "--format", "json"}, "--format is not taken with --explain"},
    };
    for (const auto& [extra, want] : bad) {
        std::vector<std::string> args{"map", "--map", "pad.strided", "--problem",
                                      "mb1ic1iw5oc1kw3sw2pw1"};
        args.insert(args.end(), extra.begin(), extra.end());
        const test::Run e = test::run_in_process(args);
        INFO(e.err);
        CHECK(e.status == 2);
        CHECK(e.err.rfind("convlab: " + want, 0) == 0);
        CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
    }
    const test::Run u = test::run_in_process(
        {"map", "--map", "pad.im3col", "--problem", "mb1ic1iw5oc1kw3", "--explain", "0,0,0"});
    CHECK(u.status == 2);
    CHECK(u.err.find("map 'im3col': unknown") != std::string::npos);
}
