// The winograd view: X's overlapping patches and Y.
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

// winograd: X, its overlapping 6x6 patches (one per 4x4 output tile; maps::winograd_tiles,
// animated), the weights and Y as engine's winograd computes it (checked against direct). The
// transforms are arithmetic, not data movement: the caption gives them.
void build_winograd(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::winograd_tiles(p);  // Error naming the rule for other problems
    const Shape xs = m.src(), ws = wei_shape(p), ys = act_shape(p, true, "k");
    b.plan({{"X", xs}, {"D", m.dst()}, {"W", ws}, {"Y", ys}});
    b.maps_total = 1;
    auto x = b.data(xs, 1), w = b.data(ws, 2);
    Panel xp = make_panel("X", "input", xs, act_roles(xs.rank()), x);
    xp.pad_left = p.pad_begin[1];
    xp.pad_right = p.pad_end[1];
    xp.pad_top = p.pad_begin[0];
    xp.pad_bottom = p.pad_end[0];
    const int xi = b.add(std::move(xp));
    // One row of tiles per (n, c, tile row), the tile columns side by side.
    Panel dp = make_panel(
        "D", "tiles: the 6x6 patch of every 4x4 output tile, 4 apart", m.dst(),
        {Role::TileY, Role::TileY, Role::TileY, Role::TileX, Role::Row, Role::Col}, run_map(m, x));
    dp.auto_wrap = false;
    const int di = b.add(std::move(dp));
    b.link(m, xi, di, true);
    Panel wp = make_panel("W", "weights", ws, wei_roles(ws), w);
    wp.new_row = true;
    b.add(std::move(wp));
    const Tensor xt = to_tensor(x, xs.dims), wt = to_tensor(w, ws.dims);
    std::vector<float> y = from_tensor(forward(p, xt, wt, nullptr, "winograd"));
    const std::vector<float> ref = from_tensor(forward(p, xt, wt, nullptr, "direct"));
    // Within 1e-5 of Y's largest magnitude: the transforms round (the benchmark's check).
    double big = 0;
    for (float v : ref) big = std::max(big, std::abs(double(v)));
    b.v.check = check_line("Y (winograd) equals direct within 1e-5 of its largest |value|",
                           max_abs_diff(y, ref), 1e-5 * big);
    b.add(make_panel("Y", "Y by winograd: 36 products per tile and channel pair", ys,
                     act_roles(ys.rank()), std::move(y)));
    b.v.caption =
        "Winograd F(4x4, 3x3): each 4x4 tile of Y reads a 6x6 patch d of X. V = B^T d B and "
        "U = G g G^T (6x6 each), M = sum over channels of U * V point by point (36 GEMMs over "
        "all tiles), Y tile = A^T M A: 36 multiplications per tile and channel pair instead of "
        "144";
    const DataKind d = b.r.data;
    // The tiles are an expression (winograd_tiles): the hover shows its terms with the numbers
    // filled in. Y's transforms are arithmetic, not an index map: its cells show their values.
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) {
        return map_formula(vm, panel, linear, d);
    };
}

}  // namespace convlab::app
