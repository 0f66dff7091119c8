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
#include "model/view_generic.hpp"
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
    // Both packs are expressions: the hover shows their terms with the numbers filled in.
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) {
        return expression_formula(vm, panel, linear, d);
    };
}

}  // namespace convlab::app
