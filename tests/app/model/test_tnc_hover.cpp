// The tnc view's hovers of T = TNC(X) and dYf = TNCf(dY) come from the converters' expressions
// renamed into the panels' vocabulary (engine/include/convlab/map_rename.hpp): every cell names
// the panel's dims, the arithmetic of n, k, c1 and c0 with the numbers filled in, the guard that
// makes a padding zero (batch lanes n >= N, channel lanes k >= K), and the source cell with its
// value, all checked against the convolution's own indexing written out here.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "convlab/davinci.hpp"
#include "convlab/map_rename.hpp"
#include "convlab/problem.hpp"
#include "model/model.hpp"
#include "view_test_util.hpp"

using namespace convlab;
using namespace convlab::app_test;

namespace {

int panel_of(const app::ViewModel& v, const std::string& name) {
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        if (v.panels[i].name == name) return static_cast<int>(i);
    FAIL("no panel " << name);
    return -1;
}

std::string num(dim_t v) {
    return std::to_string(v);
}

// "P(a=1,b=2)" from a panel's dim names and a coordinate.
std::string cell(const app::Panel& p, const std::vector<dim_t>& c) {
    std::string s = p.name + "(";
    for (std::size_t i = 0; i < c.size(); ++i)
        s += (i ? "," : "") + p.shape.names[i] + "=" + num(c[i]);
    return s + ")";
}

// An integer-data value as the hover writes it.
std::string value(const app::Panel& p, dim_t linear) {
    return num(static_cast<dim_t>(p.values[static_cast<std::size_t>(linear)]));
}

// A guard's line: "x < X: 5 < 6 holds" or "... fails: a padding zero".
std::string guard(const char* x, const char* bound, dim_t v, dim_t hi) {
    return std::string(x) + " < " + bound + ": " + num(v) + " < " + num(hi) +
           (v < hi ? " holds" : " fails: a padding zero");
}

// The NC1HWC0 coordinate (n, [d,] c1, [h,] w, c0) of (n, c, spatial...) at C0 = c0.
std::vector<dim_t> blocked(dim_t n, dim_t c, const std::vector<dim_t>& sp, dim_t c0) {
    std::vector<dim_t> out{n};
    if (sp.size() == 3) out.push_back(sp[0]);
    out.push_back(c / c0);
    for (std::size_t i = sp.size() == 3 ? 1 : 0; i < sp.size(); ++i) out.push_back(sp[i]);
    out.push_back(c % c0);
    return out;
}

// Linear index of (n, c, spatial...) in an NCHW tensor of these dims.
dim_t nchw(const std::vector<dim_t>& dims, dim_t n, dim_t c, const std::vector<dim_t>& sp) {
    dim_t l = n * dims[1] + c;
    for (std::size_t i = 0; i < sp.size(); ++i) l = l * dims[2 + i] + sp[i];
    return l;
}

// Every cell of T and dYf of the tnc view of `desc` at C0 = c0: the hover's dims, arithmetic,
// guards and source cell as TNC and TNCf define them. Adds the padding cells seen to batch_pad
// (n >= N) and chan_pad (k >= K).
void check_all_cells(const char* desc, dim_t c0, int& batch_pad, int& chan_pad) {
    INFO(std::string(desc) << " c0 " << c0);
    const Problem p = parse_descriptor(desc);
    const app::ViewModel v = build("tnc", desc, app::DataKind::Integer, c0);
    const int ti = panel_of(v, "T"), fi = panel_of(v, "dYf");
    const app::Panel &X = v.panels[static_cast<std::size_t>(panel_of(v, "X"))],
                     &X5 = v.panels[static_cast<std::size_t>(panel_of(v, "X5"))],
                     &dY = v.panels[static_cast<std::size_t>(panel_of(v, "dY"))],
                     &dY5 = v.panels[static_cast<std::size_t>(panel_of(v, "dY5"))];
    const app::Panel &T = v.panels[static_cast<std::size_t>(ti)],
                     &F = v.panels[static_cast<std::size_t>(fi)];
    const dim_t N = p.mb, K = p.oc, ns = p.ndims;
    const std::vector<dim_t> xd = X.shape.dims, yd = dY.shape.dims;

    // T (c, [d,] n1, [h,] w, n0) <- X5(n, [d,] c/C0, [h,] w, c % C0), n = n1*C0 + n0.
    static const std::vector<std::string> t_names[] = {
        {"c", "n1", "w", "n0"}, {"c", "n1", "h", "w", "n0"}, {"c", "d", "n1", "h", "w", "n0"}};
    CHECK(T.shape.names == t_names[ns - 1]);
    for (dim_t l = 0; l < T.numel(); ++l) {
        std::vector<dim_t> tc(static_cast<std::size_t>(T.shape.rank()));
        T.shape.coord_of(l, tc);
        const std::size_t n1_axis = ns == 3 ? 2 : 1;
        const dim_t ch = tc[0], n1 = tc[n1_axis], n0 = tc.back(), n = n1 * c0 + n0;
        std::vector<dim_t> sp;
        for (std::size_t i = 1; i + 1 < tc.size(); ++i)
            if (i != n1_axis) sp.push_back(tc[i]);
        std::string want = cell(T, tc) + " = " + value(T, l) + ": n = n1*C0 + n0 = " + num(n1) +
                           "*" + num(c0) + " + " + num(n0) + " = " + num(n) +
                           "; c1 = c/C0 = " + num(ch) + "/" + num(c0) + " = " + num(ch / c0) +
                           "; c0 = c % C0 = " + num(ch) + " % " + num(c0) + " = " + num(ch % c0) +
                           "; " + guard("n", "N", n, N) + " <- ";
        if (n < N) {
            const dim_t src = nchw(xd, n, ch, sp);
            CHECK(T.values[static_cast<std::size_t>(l)] == X.values[static_cast<std::size_t>(src)]);
            want += cell(X5, blocked(n, ch, sp, c0)) + " = " + value(X, src);
        } else {
            ++batch_pad;
            CHECK(T.values[static_cast<std::size_t>(l)] == 0.0f);
            want += "0 (padding)";
        }
        const std::string got = v.formula(v, ti, l);
        INFO(got);
        REQUIRE(got == want);
    }

    // dYf (row, k1, k0, n0), row = ((d*N1 + n1)*H + h)*W + w: the FRACTAL_Z of dY read as the
    // kernel (Cout = K, Cin = N, output positions), <- dY5(n, [d,] k/C0, [h,] w, k % C0).
    static const char* rows[] = {"n1w", "n1hw", "dn1hw"};
    CHECK(F.shape.names == std::vector<std::string>{rows[ns - 1], "k1", "k0", "n0"});
    const std::string row = rows[ns - 1];
    const dim_t N1 = (N + c0 - 1) / c0;
    for (dim_t l = 0; l < F.numel(); ++l) {
        std::vector<dim_t> fc(4);
        F.shape.coord_of(l, fc);
        // The row split into the batch block and the output position, as the hover writes it.
        std::vector<dim_t> sp(static_cast<std::size_t>(ns));
        std::string split;
        dim_t r = fc[0];
        std::string divs = row;  // "n1hw/W/H" as it grows
        std::string nums = num(fc[0]);
        static const char* sn[3][3] = {{"w"}, {"h", "w"}, {"d", "h", "w"}};
        static const char* sz[3][3] = {{"W"}, {"H", "W"}, {"D", "H", "W"}};
        for (dim_t i = ns - 1; i >= (ns == 3 ? 1 : 0); --i) {
            const dim_t o = yd[static_cast<std::size_t>(2 + i)];
            sp[static_cast<std::size_t>(i)] = r % o;
            split += std::string(sn[ns - 1][i]) + " = " + divs + " % " + sz[ns - 1][i] + " = " +
                     nums + " % " + num(o) + " = " + num(r % o) + "; ";
            divs += std::string("/") + sz[ns - 1][i];
            nums += "/" + num(o);
            r /= o;
        }
        dim_t n1 = r;
        if (ns == 3) {
            n1 = r % N1;
            sp[0] = r / N1;
            split += "n1 = " + divs + " % N1 = " + nums + " % " + num(N1) + " = " + num(n1) +
                     "; d = " + divs + "/N1 = " + nums + "/" + num(N1) + " = " + num(sp[0]) + "; ";
        } else {
            split += "n1 = " + divs + " = " + nums + " = " + num(n1) + "; ";
        }
        const dim_t k = fc[1] * 16 + fc[2], n = n1 * c0 + fc[3];
        std::string want =
            cell(F, fc) + " = " + value(F, l) + ": " + split + "k = k1*K0 + k0 = " + num(fc[1]) +
            "*16 + " + num(fc[2]) + " = " + num(k) + "; n = n1*C0 + n0 = " + num(n1) + "*" +
            num(c0) + " + " + num(fc[3]) + " = " + num(n) + "; c1 = k/C0 = " + num(k) + "/" +
            num(c0) + " = " + num(k / c0) + "; c0 = k % C0 = " + num(k) + " % " + num(c0) + " = " +
            num(k % c0) + "; " + guard("k", "K", k, K) + "; " + guard("n", "N", n, N) + " <- ";
        if (k < K && n < N) {
            const dim_t src = nchw(yd, n, k, sp);
            CHECK(F.values[static_cast<std::size_t>(l)] ==
                  dY.values[static_cast<std::size_t>(src)]);
            want += cell(dY5, blocked(n, k, sp, c0)) + " = " + value(dY, src);
        } else {
            batch_pad += k < K;
            chan_pad += k >= K;
            CHECK(F.values[static_cast<std::size_t>(l)] == 0.0f);
            want += "0 (padding)";
        }
        const std::string got = v.formula(v, fi, l);
        INFO(got);
        REQUIRE(got == want);
    }
}

}  // namespace

TEST_CASE("app model: the tnc view's T and dYf hovers are TNC's and TNCf's terms in its names") {
    SUBCASE("a 2-D cell of each kind, written out") {
        // Batch 3 (C0 = 4: lane 3 pads), K = 6 (16 lanes: 10 pad), 3 x 3 outputs.
        const app::ViewModel v = build("tnc", "mb3ic5ih4oc6kh2", app::DataKind::Integer, 4);
        const int ti = panel_of(v, "T"), fi = panel_of(v, "dYf");
        const auto at = [&v](int panel, const std::vector<dim_t>& c) {
            return v.formula(v, panel,
                             v.panels[static_cast<std::size_t>(panel)].shape.linear_of(c));
        };
        // T's channels go across, its batch blocks (n1) down, as X's tiles.
        const app::Panel& T = v.panels[static_cast<std::size_t>(ti)];
        REQUIRE(T.shape.names.size() == 5);
        CHECK(T.shape.names[1] == "n1");
        CHECK(T.roles[0] == app::Role::TileX);
        CHECK(T.roles[1] == app::Role::TileY);
        // T(c=4, n1=0, h=1, w=2, n0=2) <- X5(n=2, c1=1, h=1, w=2, c0=0) = X(2, 4, 1, 2): element
        // ((2*5 + 4)*4 + 1)*4 + 2 = 230, 230 % 99 + 1 = 33.
        CHECK(at(ti, {4, 0, 1, 2, 2}) ==
              "T(c=4,n1=0,h=1,w=2,n0=2) = 33: n = n1*C0 + n0 = 0*4 + 2 = 2; c1 = c/C0 = 4/4 = 1; "
              "c0 = c % C0 = 4 % 4 = 0; n < N: 2 < 3 holds <- X5(n=2,c1=1,h=1,w=2,c0=0) = 33");
        CHECK(at(ti, {4, 0, 1, 2, 3}).find("n < N: 3 < 3 fails: a padding zero <- 0 (padding)") !=
              std::string::npos);
        // dYf row 5 = (n1=0, h=1, w=2), k = 0*16 + 5 = 5, n = 2: dY(2, 5, 1, 2) is element
        // ((2*6 + 5)*3 + 1)*3 + 2 = 158, 158 % 99 + 1 = 60.
        CHECK(at(fi, {5, 0, 5, 2}) ==
              "dYf(n1hw=5,k1=0,k0=5,n0=2) = 60: w = n1hw % W = 5 % 3 = 2; h = n1hw/W % H = 5/3 % "
              "3 = 1; n1 = n1hw/W/H = 5/3/3 = 0; k = k1*K0 + k0 = 0*16 + 5 = 5; n = n1*C0 + n0 = "
              "0*4 + 2 = 2; c1 = k/C0 = 5/4 = 1; c0 = k % C0 = 5 % 4 = 1; k < K: 5 < 6 holds; "
              "n < N: 2 < 3 holds <- dY5(n=2,c1=1,h=1,w=2,c0=1) = 60");
        CHECK(at(fi, {5, 0, 6, 2})
                  .find("k < K: 6 < 6 fails: a padding zero; n < N: 2 < 3 holds "
                        "<- 0 (padding)") != std::string::npos);
        CHECK(at(fi, {5, 0, 5, 3})
                  .find("k < K: 5 < 6 holds; n < N: 3 < 3 fails: a padding zero "
                        "<- 0 (padding)") != std::string::npos);
    }
    SUBCASE("every cell, 1-D to 3-D, batch and K not multiples of C0 and 16") {
        int batch_pad = 0, chan_pad = 0;
        check_all_cells("mb3ic5ih4oc6kh2", 4, batch_pad, chan_pad);
        check_all_cells("mb5ic3iw6oc18kw3sw2", 4, batch_pad, chan_pad);
        check_all_cells("mb3ic2id3ih3iw3oc5kd2kh2kw2", 4, batch_pad, chan_pad);
        check_all_cells("mb9ic17ih3oc3kh2", 8, batch_pad, chan_pad);
        CHECK(batch_pad > 0);
        CHECK(chan_pad > 0);
    }
}

// The renaming is checked: one that names nothing (a stale name after the engine's names
// change) or that leaves two meanings to one name (FRACTAL_Z's lane c0 beside dY5's c0) is
// refused, so that a hover cannot silently speak the wrong vocabulary.
TEST_CASE("app model: the tnc view's renaming of TNCf is complete and unambiguous") {
    const Problem p = parse_descriptor("mb3ic5ih4oc6kh2");
    const IndexMap m = davinci::tncf(p.dst_dims(), 4);
    CHECK_THROWS_WITH_AS(renamed(m, {{"c1hw", "n1hw"}, {"zz", "y"}}),
                         "index map expression: nothing named 'zz' to rename (no axis, binding "
                         "or symbol of that name)",
                         Error);
    // Without c0 -> n0 the image's term k % C0, named after dY5's c0, meets the lane axis c0.
    CHECK_THROWS_WITH_AS(renamed(m, {}),
                         "index map expression: renaming gives two different terms the name 'c0'",
                         Error);
}
