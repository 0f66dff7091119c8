// The im2col view: X and its column matrix B = im2col(X).
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

void build_im2col(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::im2col(p);
    b.plan({{"X", m.src()}, {"B", m.dst()}});
    b.maps_total = 1;
    Panel x = make_panel("X", "input", m.src(), act_roles(m.src().rank()), b.data(m.src(), 1));
    // Zero padding drawn around every channel (h and w; 1-D: w).
    x.pad_left = p.pad_begin[p.ndims - 1];
    x.pad_right = p.pad_end[p.ndims - 1];
    if (p.ndims >= 2) {
        x.pad_top = p.pad_begin[p.ndims - 2];
        x.pad_bottom = p.pad_end[p.ndims - 2];
    }
    const int xi = b.add(std::move(x));
    Panel col = make_panel(
        "B", "column matrix B = im2col(X): rows (c, k...), cols = output position", m.dst(),
        {Role::TileY, Role::TileX, Role::Row, Role::Col}, run_map(m, b.v.panels[0].values));
    col.auto_wrap = false;  // one matrix per (n, g): never wrapped
    const int ci = b.add(std::move(col));
    b.link(m, xi, ci, true);
    b.v.caption =
        "im2col: every column of B is the receptive field of one output position; Y = W B "
        "turns the convolution into one matrix product";
    // Check: the engine's fast im2col kernel gives the same column matrix.
    std::vector<float> fast(b.v.panels[1].values.size());
    const dim_t per_image = p.groups * p.icg() * p.kernel_spatial() * p.out_spatial();
    const dim_t per_group = p.icg() * p.kernel_spatial() * p.out_spatial();
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g)
            im2col_kernel(p, b.v.panels[0].values.data(), n, g,
                          fast.data() + n * per_image + g * per_group);
    b.v.check = check_line("B equals the engine's fast im2col kernel",
                           max_abs_diff(fast, b.v.panels[1].values), 0);
    const DataKind d = b.r.data;
    // im2col is an expression: the hover shows its terms with the numbers filled in.
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) {
        return map_formula(vm, panel, linear, d);
    };
    b.v.zero_source = [p](const ViewModel& vm, int link, dim_t dst_linear, CellPos& pos) {
        if (link != 0) return false;
        const Panel& xp = vm.panels[0];
        const auto c = coords(vm.panels[1].shape, dst_linear);
        dim_t chan = 0, padded[kMaxSpatial] = {0, 0, 0};
        im2col_position(p, c, &chan, padded);
        // Tile of (n, channel g*Cg + chan [, depth]); depth padding has no tile to draw in.
        const dim_t ch = c[1] * p.icg() + chan;
        dim_t tx = ch, prow = 0, pcol = padded[p.ndims - 1];
        if (p.ndims == 1) {
            tx = 0;
            prow = ch;
        } else {
            prow = padded[p.ndims - 2];
        }
        if (p.ndims == 3) {
            const dim_t dpos = padded[0] - p.pad_begin[0];
            if (dpos < 0 || dpos >= p.in[0]) return false;
            tx = ch * p.in[0] + dpos;
        }
        pos = padded_pos(xp, tx, c[0], prow, pcol);
        return true;
    };
}

}  // namespace convlab::app
