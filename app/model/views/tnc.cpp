// The tnc view: TNC(X) and TNCf(dY) (backward weight in DaVinci formats).
#include "model/model.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <numeric>
#include <set>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/kernels.hpp"
#include "convlab/map_rename.hpp"
#include "convlab/maps.hpp"
#include "convlab/tensor.hpp"
#include "lesson/lesson.hpp"
#include "model/view_generic.hpp"
#include "model/views/view_builder.hpp"

namespace convlab::app {

// A gather's destination as its map gives it, from the link's image (src[image], 0 for none):
// written over `values`, which held a fast kernel's output; returns the largest |difference|
// between the two.
double kernel_vs_link(const Link& l, const std::vector<float>& src, std::vector<float>& values) {
    double diff = 0;
    for (std::size_t d = 0; d < values.size(); ++d) {
        const LinkIndex i = l.image[d];
        const float want = i < 0 ? 0.0f : src[static_cast<std::size_t>(i)];
        diff = std::max(diff, static_cast<double>(std::fabs(values[d] - want)));
        values[d] = want;
    }
    return diff;
}

namespace {

// TNCf's destination is the FRACTAL_Z of dY read as the kernel of the dW convolution (Cout = K,
// Cin = N, output positions as taps). Its expression names the dims as FRACTAL_Z does (rows c1hw
// of input-channel blocks and taps, n1 x n0 output channels, c0 input lanes) and its terms as TNCf
// does (A the batch, B the channels); the panel names them by what they hold, so that the hover
// reads in dY's terms: rows n1hw of batch blocks and positions, k1 x k0 channels of dY, n0 batch
// lanes, k = k1*K0 + k0 < K and n = n1*C0 + n0 < N.
Renaming tncf_names(const IndexMap& m) {
    std::string row = m.dst().names.front();
    const std::size_t c1 = row.find("c1");
    if (c1 != std::string::npos) row.replace(c1, 2, "n1");
    Renaming r{{m.dst().names.front(), row},
               {"n1", "k1"},
               {"n0", "k0"},
               {"c0", "n0"},
               {"a1", "n1"},
               {"b", "k"},
               {"a", "n"},
               {"B", "K"},
               {"A", "N"},
               {"N0", "K0"}};
    // The number of batch blocks is a symbol only where the depth sits outside it (3-D).
    if (m.dst().names.front().front() == 'd') r.push_back({"A1", "N1"});
    return r;
}

}  // namespace

void build_tnc(Builder& b) {
    const Problem& p = b.p;
    const dim_t c0 = b.r.c0;
    davinci::check_c0(c0);
    b.maps_total = 4;
    const Shape xs = act_shape(p, false, "c"), ys = act_shape(p, true, "k");
    const IndexMap pa = davinci::pack_activation(xs.dims, c0);
    const IndexMap py = davinci::pack_activation(ys.dims, c0);
    // Both converters in the panels' vocabulary (T's dims come named so from tnc5d), their image
    // terms named as X5's and dY5's dims (c1 = c/C0, c0 = c % C0): the hover is their
    // expressions' arithmetic, padding zeros included (the guard n < N or k < K that fails).
    const IndexMap mt = renamed(davinci::tnc5d(xs.dims, c0), {});
    const IndexMap fz = davinci::tncf(ys.dims, c0);
    const IndexMap mf = renamed(fz, tncf_names(fz));
    b.plan({{"X", xs},
            {"X5", pa.dst()},
            {"T", mt.dst()},
            {"dY", ys},
            {"dY5", py.dst()},
            {"dYf", mf.dst()}});
    auto x = b.data(xs, 1), dy = b.data(ys, 3);
    const int xi = b.add(make_panel("X", "input NCHW", xs, act_roles(xs.rank()), x));
    auto x5 = run_map(pa, x);
    const int x5i =
        b.add(make_panel("X5", "X in NC1HWC0", pa.dst(), blocked_act_roles(pa.dst()), x5));
    // T's tiles as X's: channels across (wrapped into a grid), batch blocks down.
    std::vector<Role> troles = blocked_act_roles(mt.dst());
    troles.front() = Role::TileX;
    for (std::size_t i = 0; i < troles.size(); ++i)
        if (mt.dst().names[i] == "n1") troles[i] = Role::TileY;
    // T and dYf hold the engine's fast kernels' output at first, then the maps' values from
    // their links (kernel_vs_link): no second evaluation of the maps and no second tensor of
    // dYf's 12.8 Mi cells on a ResNet-50 stem.
    std::vector<float> ft(static_cast<std::size_t>(mt.dst().numel()));
    davinci::tnc5d_kernel(xs.dims, c0, x5.data(), ft.data());
    const int ti =
        b.add(make_panel("T", "TNC(X): batch becomes the blocked channel dim (C, N1, H, W, N0)",
                         mt.dst(), troles, std::move(ft)));
    Panel yp = make_panel("dY", "output gradient NCHW", ys, act_roles(ys.rank()), dy);
    yp.new_row = true;
    const int yi = b.add(std::move(yp));
    auto y5 = run_map(py, dy);
    const int y5i =
        b.add(make_panel("dY5", "dY in NC1HWC0", py.dst(), blocked_act_roles(py.dst()), y5));
    std::vector<float> ff(static_cast<std::size_t>(mf.dst().numel()));
    davinci::tncf_kernel(ys.dims, c0, y5.data(), ff.data());
    const int fi = b.add(make_panel("dYf", "TNCf(dY): FRACTAL_Z of the kernel (K, N, Ho, Wo)",
                                    mf.dst(), fractal_roles(), std::move(ff)));
    const int l0 = b.link(pa, xi, x5i, false);
    const int l1 = b.link(mt, x5i, ti, true);
    const int l2 = b.link(py, yi, y5i, false);
    const int l3 = b.link(mf, y5i, fi, true);
    auto& P = b.v.panels;
    P[static_cast<std::size_t>(x5i)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l0)]);
    P[static_cast<std::size_t>(ti)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l1)]);
    P[static_cast<std::size_t>(y5i)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l2)]);
    P[static_cast<std::size_t>(fi)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l3)]);
    const double diff = std::max(kernel_vs_link(b.v.links[static_cast<std::size_t>(l1)], x5,
                                                P[static_cast<std::size_t>(ti)].values),
                                 kernel_vs_link(b.v.links[static_cast<std::size_t>(l3)], y5,
                                                P[static_cast<std::size_t>(fi)].values));
    b.v.check =
        check_line("the engine's fast tnc5d and tncf kernels give the same tensors", diff, 0);
    b.v.caption = "TNC and TNCf (backward weight in DaVinci formats, C0 = " + std::to_string(c0) +
                  "): swap N and C so the batch is reduced over; TNCf writes dY straight into "
                  "FRACTAL_Z as the kernel of the dW convolution";
    const DataKind d = b.r.data;
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) {
        return expression_formula(vm, panel, linear, d);
    };
}

}  // namespace convlab::app
