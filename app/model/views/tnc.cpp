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
#include "convlab/maps.hpp"
#include "convlab/tensor.hpp"
#include "lesson/lesson.hpp"
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

void build_tnc(Builder& b) {
    const Problem& p = b.p;
    const dim_t c0 = b.r.c0;
    davinci::check_c0(c0);
    b.maps_total = 4;
    const Shape xs = act_shape(p, false, "c"), ys = act_shape(p, true, "k");
    const IndexMap pa = davinci::pack_activation(xs.dims, c0);
    const IndexMap py = davinci::pack_activation(ys.dims, c0);
    const IndexMap mt = davinci::tnc5d(xs.dims, c0);
    const IndexMap mf = davinci::tncf(ys.dims, c0);
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
    // Name the dims by what they hold (T's come named so from tnc5d): the fractal rows of dYf
    // run over (batch block, position), a fractal is 16 k by C0 n.
    {
        b.v.panels[static_cast<std::size_t>(fi)].shape.names = {p.ndims == 3   ? "d,n1,h,w"
                                                                : p.ndims == 2 ? "n1,h,w"
                                                                               : "n1,w",
                                                                "k1", "k0", "n0"};
    }
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
    const dim_t N = p.mb, K = p.oc, n1s = (p.mb + c0 - 1) / c0;
    std::vector<dim_t> outs;
    for (int i = 0; i < p.ndims; ++i) outs.push_back(p.out(i));
    b.v.formula = [p, c0, d, N, K, n1s, outs](const ViewModel& vm, int panel,
                                              dim_t linear) -> std::string {
        const auto num = [](dim_t v) { return std::to_string(v); };
        if (panel == 1) return pack_formula(vm, 1, vm.links[0], linear, c0, "c", d);
        if (panel == 4) return pack_formula(vm, 4, vm.links[2], linear, c0, "k", d);
        if (panel == 2) {
            // T (C, [D,] N1, H, W, N0): the channel outermost, the batch blocked in N0 lanes.
            const Panel& t = vm.panels[2];
            const auto c = coords(t.shape, linear);
            const std::size_t n1_axis = t.shape.rank() == 6 ? 2 : 1;
            const dim_t n = c[n1_axis] * c0 + c.back(), ch = c[0];
            std::string s = cell_name(t, linear) + ": TNC swaps N and C: channel c = " + num(ch) +
                            " outermost, batch n = n1*C0 + n0 = " + num(c[n1_axis]) + "*" +
                            num(c0) + " + " + num(c.back()) + " = " + num(n);
            if (n >= N)
                return s + " >= N = " + num(N) +
                       ": batch padding (N padded to N1*C0 = " + num(n1s * c0) + "), zero";
            const dim_t src = vm.links[1].image[static_cast<std::size_t>(linear)];
            return s + "; c1 = c/C0 = " + num(ch) + "/" + num(c0) + " = " + num(ch / c0) +
                   ", c0 = c%C0 = " + num(ch % c0) + " <- " + cell_name(vm.panels[1], src) + " = " +
                   value_of(vm.panels[1], src, d);
        }
        if (panel == 5) {
            // TNCf: dY as the kernel (Cout = K, Cin = N, Ho, Wo) in FRACTAL_Z (N1*Ho*Wo, K1,
            // 16, C0).
            const Panel& f = vm.panels[5];
            const auto c = coords(f.shape, linear);
            std::vector<dim_t> pos;
            dim_t n1 = 0;
            const std::string row =
                split_fractal_row(c[0], n1s, outs, spatial(p.ndims), "n1", pos, &n1);
            const dim_t k0s = f.shape.dims[2], k = c[1] * k0s + c[2], n = n1 * c0 + c[3];
            std::string s = cell_name(f, linear) +
                            ": TNCf writes dY as the kernel of the dW convolution (Cout = K, Cin = "
                            "N): " +
                            row + "; k = k1*16 + k0 = " + num(c[1]) + "*" + num(k0s) + " + " +
                            num(c[2]) + " = " + num(k) + ", n = n1*C0 + n0 = " + num(n1) + "*" +
                            num(c0) + " + " + num(c[3]) + " = " + num(n);
            if (k >= K) return s + " (k >= K = " + num(K) + "): padding (K padded to K1*16), zero";
            if (n >= N)
                return s + " >= N = " + num(N) +
                       ": batch padding (N padded to N1*C0 = " + num(n1s * c0) + "), zero";
            const dim_t src = vm.links[3].image[static_cast<std::size_t>(linear)];
            return s + "; c1 = k/C0 = " + num(k / c0) + ", c0 = k%C0 = " + num(k % c0) + " <- " +
                   cell_name(vm.panels[4], src) + " = " + value_of(vm.panels[4], src, d);
        }
        return generic_formula(vm, panel, linear, d);
    };
}

}  // namespace convlab::app
