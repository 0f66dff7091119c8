// The col2im view: B* = W^T dY and its reduction col2im(B*) = dX.
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

void build_col2im(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::col2im(p);
    const Shape ws = wei_shape(p), ys = act_shape(p, true, "k");
    b.plan({{"W", ws}, {"dY", ys}, {"B*", m.src()}, {"dX", m.dst()}});
    auto w = b.data(ws, 2), dy = b.data(ys, 3);
    const int wi = b.add(make_panel("W", "weights (K x C grid of kernels)", ws, wei_roles(ws), w));
    Panel dyp = make_panel("dY", "output gradient", ys, act_roles(ys.rank()), dy);
    const int yi = b.add(std::move(dyp));
    auto bstar = wt_dy(p, w, dy);
    Panel bp = make_panel("B*", "B* = W^T dY (column matrix of dX)", m.src(),
                          {Role::TileY, Role::TileX, Role::Row, Role::Col}, bstar);
    bp.auto_wrap = false;  // one matrix per (n, g): never wrapped
    const int bi = b.add(std::move(bp));
    auto dx = run_map(m, bstar);
    Panel xp = make_panel("dX", "input gradient = col2im(B*): running sums", m.dst(),
                          act_roles(m.dst().rank()), dx);
    // The result on its own row below the product W^T dY: the fit can use the canvas height
    // (mb1ic2ih5oc3kh3: cells 25 px instead of 21 in a 1600x1000 shot).
    xp.new_row = true;
    const int xi = b.add(std::move(xp));
    b.link(m, bi, xi, true);
    Relation rel;
    rel.name = "B* = W^T dY";
    rel.result = bi;
    rel.operands = {wi, yi};
    rel.fn = [p](dim_t lin, std::vector<std::vector<dim_t>>& out) {
        const dim_t R = p.icg() * p.kernel_spatial(), M = p.out_spatial(), Kg = p.ocg();
        const dim_t col = lin % M, r = (lin / M) % R, g = (lin / (M * R)) % p.groups,
                    n = lin / (M * R * p.groups);
        for (dim_t kk = 0; kk < Kg; ++kk) {
            out[0].push_back((g * Kg + kk) * R + r);
            out[1].push_back((n * p.oc + g * Kg + kk) * M + col);
        }
    };
    b.v.relations.push_back(std::move(rel));
    const char* ref_algo = check_algorithm(p, Pass::BackwardData);
    const Tensor ref = backward_data(p, to_tensor(dy, ys.dims), to_tensor(w, ws.dims), ref_algo);
    b.v.check = check_line(
        "dX after the last step equals the engine's backward_data (" + std::string(ref_algo) + ")",
        max_abs_diff(dx, from_tensor(ref)));
    b.v.caption =
        "col2im (backward data): B* = W^T dY, then every column of B* is added back into dX; "
        "cells show running sums and, small, how many contributions they received";
    const DataKind d = b.r.data;
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        // B* = W^T dY (a product, not an index map), then col2im, a reduce written as an
        // expression: its terms with the numbers filled in.
        if (panel == 2)
            return map_formula(vm, panel, linear, d) + "   (B* = sum_k W(k,c,k..) dY(n,k,o..))";
        if (panel == 3) {
            // dX(n, c, h, w) = the B* cells (one per kernel tap whose window covers it).
            const Panel& bs = vm.panels[2];
            const auto src = vm.links[0].sources_of(linear);
            const std::string s = cell_name(vm.panels[3], linear) + " = ";
            if (src.empty()) return s + "0: no kernel window covers it";
            std::vector<std::string> names, vals;
            for (dim_t c : src) {
                names.push_back(short_name(bs, c, 2));
                vals.push_back(value_of(bs, c, d));
            }
            return s + "sum of B*(row, col) over the " + std::to_string(src.size()) +
                   " kernel taps whose window covers it = " + join_terms(names) + " = " +
                   join_values(vals) + " = " + value_of(vm.panels[3], linear, d);
        }
        return map_formula(vm, panel, linear, d);
    };
}

}  // namespace convlab::app
