// The fliprot view: W and FlipRot(W).
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

void build_fliprot(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::flip_rot(p);
    const Shape ws = wei_shape(p);
    b.plan({{"W", ws}, {"W'", m.dst()}});
    auto w = b.data(ws, 2);
    const int wi = b.add(make_panel("W", "weights: K x C grid of kernels", ws, wei_roles(ws), w));
    const int fi = b.add(make_panel("W'", "FlipRot(W): C x K grid, every kernel rotated 180 deg",
                                    m.dst(), wei_roles(m.dst()), run_map(m, w)));
    b.link(m, wi, fi, true);
    std::vector<float> fast(b.v.panels[1].values.size());
    flip_rot_kernel(p, w.data(), fast.data());
    b.v.check = check_line("W' equals the engine's fast flip_rot kernel",
                           max_abs_diff(fast, b.v.panels[1].values), 0);
    // The kernel size by its axes (kh x kw): K counts output channels everywhere else.
    static const char* at[] = {"i", "j", "l"};
    std::string lhs = "W'(c, k", rhs = "W(k, c", names, sizes;
    for (int i = 0; i < p.ndims; ++i) {
        const std::string k = "k" + std::string(p.axis_name(i));
        lhs += std::string(", ") + at[i];
        rhs += ", " + k + "-1-" + at[i];
        names += (i ? " x " : "") + k;
        sizes += (i ? " x " : "") + std::to_string(p.kernel[i]);
    }
    b.v.caption =
        "FlipRot: swap the output and input channel dims (per group) and reverse every "
        "spatial axis: " +
        lhs + ") = " + rhs + "), kernel size " + names + " = " + sizes;
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel != 1) return generic_formula(vm, panel, linear, d);
        const auto c = coords(vm.panels[1].shape, linear);
        std::string s = cell_name(vm.panels[1], linear) + " <- W(k=" + std::to_string(c[1]) +
                        ", c=" + std::to_string(c[0] % p.icg());
        for (int i = 0; i < p.ndims; ++i) {
            const dim_t k = c[static_cast<std::size_t>(2 + i)];
            s += ", k" + std::string(p.axis_name(i)) + "=" + std::to_string(p.kernel[i]) + "-1-" +
                 std::to_string(k) + "=" + std::to_string(p.kernel[i] - 1 - k);
        }
        const dim_t src = vm.links[0].image[static_cast<std::size_t>(linear)];
        return s + ") = " + format_value(vm.panels[0].values[static_cast<std::size_t>(src)], d);
    };
}

}  // namespace convlab::app
