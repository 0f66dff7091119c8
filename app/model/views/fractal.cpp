// The fractal view: W in FRACTAL_Z (DaVinci).
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

void build_fractal(Builder& b) {
    const Problem& p = b.p;
    const dim_t c0 = b.r.c0;
    davinci::check_c0(c0);
    b.maps_total = 2;
    const Shape xs = act_shape(p, false, "c"), ws = wei_shape(p);
    const IndexMap ma = davinci::pack_activation(xs.dims, c0);
    const IndexMap mw = davinci::pack_weight(ws.dims, c0);
    b.plan({{"X", xs}, {"X5", ma.dst()}, {"W", ws}, {"Wz", mw.dst()}});
    auto x = b.data(xs, 1), w = b.data(ws, 2);
    const int xi = b.add(make_panel("X", "input NCHW", xs, act_roles(xs.rank()), x));
    const std::string fmt5 = p.ndims == 3 ? "NDC1HWC0" : p.ndims == 2 ? "NC1HWC0" : "NC1WC0";
    Panel x5 = make_panel("X5", fmt5 + ": C1 blocks of C0 lanes; rows = spatial position", ma.dst(),
                          blocked_act_roles(ma.dst()), run_map(ma, x));
    const int x5i = b.add(std::move(x5));
    Panel wp = make_panel("W", "weights OIHW", ws, wei_roles(ws), w);
    wp.new_row = true;
    const int wi = b.add(std::move(wp));
    Panel wz = make_panel("Wz", "FRACTAL_Z: (C1 k..) x N1 fractals of 16 x C0", mw.dst(),
                          fractal_roles(), run_map(mw, w));
    const int wzi = b.add(std::move(wz));
    const int la = b.link(ma, xi, x5i, true);
    const int lw = b.link(mw, wi, wzi, true);
    b.v.panels[static_cast<std::size_t>(x5i)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(la)]);
    b.v.panels[static_cast<std::size_t>(wzi)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(lw)]);
    std::vector<float> fa(b.v.panels[1].values.size()), fw(b.v.panels[3].values.size());
    davinci::pack_activation_kernel(xs.dims, c0, x.data(), fa.data());
    davinci::pack_weight_kernel(ws.dims, c0, w.data(), fw.data());
    b.v.check = check_line(
        "the engine's fast pack kernels give the same " + fmt5 + " and FRACTAL_Z",
        std::max(max_abs_diff(fa, b.v.panels[1].values), max_abs_diff(fw, b.v.panels[3].values)),
        0);
    b.v.caption = "DaVinci layouts, C0 = " + std::to_string(c0) + ": " + fmt5 +
                  " (channels in blocks of C0 lanes, lanes past C are zero) and FRACTAL_Z "
                  "(16 x C0 fractals: 16 output channels by C0 input channels)";
    const DataKind d = b.r.data;
    b.v.formula = [p, c0, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel == 1) return pack_formula(vm, 1, vm.links[0], linear, c0, "c", d);
        if (panel != 3) return generic_formula(vm, panel, linear, d);
        // FRACTAL_Z (C1*KH*KW, N1, 16, C0): row = (c1, kernel position), k = n1*16 + n0.
        const Panel &fz = vm.panels[3], &wo = vm.panels[2];
        const auto c = coords(fz.shape, linear);
        const dim_t K = wo.shape.dims[0], C = wo.shape.dims[1], n0s = fz.shape.dims[2];
        std::vector<dim_t> ks(p.kernel.begin(), p.kernel.begin() + p.ndims), kk;
        dim_t c1 = 0;
        const std::string row =
            split_fractal_row(c[0], (C + c0 - 1) / c0, ks, spatial(p.ndims, "k"), "c1", kk, &c1);
        const dim_t cc = c1 * c0 + c[3], k = c[1] * n0s + c[2];
        std::string s = cell_name(fz, linear) + ": " + row +
                        "; c = c1*C0 + c0 = " + std::to_string(c1) + "*" + std::to_string(c0) +
                        " + " + std::to_string(c[3]) + " = " + std::to_string(cc) +
                        ", k = n1*16 + n0 = " + std::to_string(c[1]) + "*" + std::to_string(n0s) +
                        " + " + std::to_string(c[2]) + " = " + std::to_string(k);
        if (k >= K)
            return s + " >= K = " + std::to_string(K) + ": padding (K padded to N1*16), zero";
        if (cc >= C) return s + " (c >= C = " + std::to_string(C) + "): a padding lane, zero";
        const dim_t src = vm.links[1].image[static_cast<std::size_t>(linear)];
        return s + " <- " + cell_name(wo, src) + " = " + value_of(wo, src, d);
    };
}

}  // namespace convlab::app
