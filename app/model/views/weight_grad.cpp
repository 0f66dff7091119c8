// The weight_grad view: dW = dY B^T over im2col's B.
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

void build_weight_grad(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::im2col(p);
    const Shape xs = m.src(), ys = act_shape(p, true, "k"), ws = wei_shape(p);
    b.plan({{"X", xs}, {"B", m.dst()}, {"dY", ys}, {"dW", ws}});
    auto x = b.data(xs, 1), dy = b.data(ys, 3);
    const int xi = b.add(make_panel("X", "input", xs, act_roles(xs.rank()), x));
    Panel bp = make_panel("B", "B = im2col(X): rows (c, k..), cols = output position", m.dst(),
                          {Role::TileY, Role::TileX, Role::Row, Role::Col}, run_map(m, x));
    bp.auto_wrap = false;  // one matrix per (n, g): never wrapped
    const int bi = b.add(std::move(bp));
    // dY as a K x prod(out) matrix per image: the left operand of dW = dY B^T.
    std::vector<Role> yr(ys.dims.size(), Role::Col);
    yr[0] = Role::TileY;
    yr[1] = Role::Row;
    Panel yp = make_panel("dY", "dY: rows k, cols = output position", ys, yr, dy);
    // dY beside the result dW (their rows k aligned), below X and B: the fit can use the height
    // (mb1ic3ih6oc4kh3: cells 18 px instead of 14 in a 1600x1000 shot).
    yp.new_row = true;
    const int yi = b.add(std::move(yp));
    const Tensor dw =
        backward_weight(p, to_tensor(x, xs.dims), to_tensor(dy, ys.dims), "im2col_gemm");
    const char* ref_algo = check_algorithm(p, Pass::BackwardWeight);
    const Tensor ref = backward_weight(p, to_tensor(x, xs.dims), to_tensor(dy, ys.dims), ref_algo);
    std::vector<Role> wr(ws.dims.size(), Role::Col);
    wr[0] = Role::Row;
    const int wi =
        b.add(make_panel("dW", "dW = dY B^T: rows k, cols (c, k..)", ws, wr, from_tensor(dw)));
    b.link(m, xi, bi, false);
    Relation rel;
    rel.name = "dW = dY B^T";
    rel.result = wi;
    rel.operands = {bi, yi};
    rel.fn = [p](dim_t lin, std::vector<std::vector<dim_t>>& out) {
        const dim_t R = p.icg() * p.kernel_spatial(), M = p.out_spatial(), Kg = p.ocg();
        const dim_t r = lin % R, k = lin / R, g = k / Kg;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t col = 0; col < M; ++col) {
                out[0].push_back(((n * p.groups + g) * R + r) * M + col);
                out[1].push_back((n * p.oc + k) * M + col);
            }
    };
    b.v.relations.push_back(std::move(rel));
    b.v.drivers.push_back({-1, 0});
    b.v.check = check_line(
        "dW (im2col_gemm) equals the engine's backward_weight (" + std::string(ref_algo) + ")",
        max_abs_diff(from_tensor(dw), from_tensor(ref)));
    b.v.caption =
        "weight gradient: dW = dY B^T, one row of dY against one row of B per "
        "element, summed over images and output positions";
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        // dW is a reduction over products (dY B^T), not an index map: its sum is written out.
        if (panel == 3) {
            const dim_t R = p.icg() * p.kernel_spatial();
            return cell_name(vm.panels[3], linear) +
                   " = sum over n, col of dY(n, k=" + std::to_string(linear / R) +
                   ", col) * B(n, g, row=" + std::to_string(linear % R) + ", col) = " +
                   format_value(vm.panels[3].values[static_cast<std::size_t>(linear)], d) + "  (" +
                   std::to_string(p.mb * p.out_spatial()) + " products)";
        }
        // B = im2col(X), an expression: its terms with the numbers filled in.
        return map_formula(vm, panel, linear, d);
    };
}

}  // namespace convlab::app
