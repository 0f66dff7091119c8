// The stride view (backward data via forward: Strided(dY), its padding, FlipRot(W),
// the stride-1 convolution) and the stride phases of dX (model.hpp).
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

void build_stride(Builder& b) {
    const Problem& p = b.p;
    const IndexMap ms = maps::strided(p);
    const IndexMap mp = maps::pad_for_backward_data(p);
    const IndexMap mf = maps::flip_rot(p);
    b.maps_total = 3;
    const Shape ys = act_shape(p, true, "k"), ws = wei_shape(p);
    b.plan({{"dY", ys},
            {"Z", ms.dst()},
            {"P", mp.dst()},
            {"W", ws},
            {"W'", mf.dst()},
            {"dX", act_shape(p, false, "c")}});
    auto dy = b.data(ys, 3), w = b.data(ws, 2);
    const int yi = b.add(make_panel("dY", "output gradient", ys, act_roles(ys.rank()), dy));
    auto z = run_map(ms, dy);
    Shape zs = ms.dst();
    const int zi =
        b.add(make_panel("Z", "Strided(dY): s-1 zeros between taps", zs, act_roles(zs.rank()), z));
    auto pd = run_map(mp, z);
    const int pi = b.add(make_panel("P", "Z padded: (k-1)d - p before, (k-1)d - p + r after",
                                    mp.dst(), act_roles(mp.dst().rank()), pd));
    Panel wp = make_panel("W", "weights", ws, wei_roles(ws), w);
    wp.new_row = true;
    const int wi = b.add(std::move(wp));
    auto wf = run_map(mf, w);
    const int fi = b.add(make_panel("W'", "FlipRot(W): C x K, every kernel rotated", mf.dst(),
                                    wei_roles(mf.dst()), wf));
    const Shape xs = act_shape(p, false, "c");
    const Tensor dx =
        backward_data(p, to_tensor(dy, ys.dims), to_tensor(w, ws.dims), "via_forward");
    const char* ref_algo = check_algorithm(p, Pass::BackwardData);
    const Tensor ref = backward_data(p, to_tensor(dy, ys.dims), to_tensor(w, ws.dims), ref_algo);
    Panel xp =
        make_panel("dX", "dX = conv(P, W'), stride 1", xs, act_roles(xs.rank()), from_tensor(dx));
    // Outlined by stride phase: implicit GEMM's one GEMM per phase, each its own kernel taps.
    xp.group = stride_phases(p);
    xp.group_names = phase_names(p);
    const int xi = b.add(std::move(xp));
    b.link(ms, yi, zi, false);
    b.link(mp, zi, pi, false);
    b.link(mf, wi, fi, false);
    // Inserted zeros and padding drawn as zeros that carry no dY tap.
    auto& zl = b.v.panels[static_cast<std::size_t>(zi)].padding_lane;
    zl = zero_lanes(b.v.links[0]);
    auto& pl = b.v.panels[static_cast<std::size_t>(pi)].padding_lane;
    pl = zero_lanes(b.v.links[1]);
    for (std::size_t i = 0; i < pl.size(); ++i)
        if (const dim_t src = b.v.links[1].image[i]; src >= 0)
            pl[i] = zl[static_cast<std::size_t>(src)];
    // The FlipRot kernel sliding over P: dX(n, c, i) = sum_kk,k P(n, g*Kg+kk, i + k*d) W'(c, kk,
    // k).
    Relation rel;
    rel.name = "dX = conv(P, W')";
    rel.result = xi;
    rel.operands = {pi, fi};
    const Shape ps = mp.dst();
    rel.fn = [p, ps, xs](dim_t lin, std::vector<std::vector<dim_t>>& out) {
        const auto c = coords(xs, lin);
        const dim_t Kg = p.ocg(), g = c[1] / p.icg();
        std::vector<dim_t> pc(c.size());
        const dim_t taps = p.kernel_spatial();
        for (dim_t kk = 0; kk < Kg; ++kk)
            for (dim_t t = 0; t < taps; ++t) {
                dim_t rest = t;
                pc[0] = c[0];
                pc[1] = g * Kg + kk;
                for (int i = p.ndims - 1; i >= 0; --i) {
                    const dim_t k = rest % p.kernel[i];
                    rest /= p.kernel[i];
                    pc[static_cast<std::size_t>(2 + i)] =
                        c[static_cast<std::size_t>(2 + i)] + k * p.dilation[i];
                }
                out[0].push_back(ps.linear_of(pc));
                out[1].push_back((c[1] * Kg + kk) * taps + t);
            }
    };
    b.v.relations.push_back(std::move(rel));
    b.v.drivers.push_back({-1, 0});
    b.v.check = check_line("dX via forward (Strided, pad with r, FlipRot) equals backward_data (" +
                               std::string(ref_algo) + ")",
                           max_abs_diff(from_tensor(dx), from_tensor(ref)));
    std::string rs;
    for (int i = 0; i < p.ndims; ++i)
        rs += std::string(i ? ", " : "") + "r_" + p.axis_name(i) + " = " +
              std::to_string(p.leftover(i));
    b.v.caption = "backward data via forward: zero-insert dY, pad with the leftover r (" + rs +
                  "), slide the FlipRot kernel W' with stride 1; lit dY cells are the taps that "
                  "feed the current dX element";
    const DataKind d = b.r.data;
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel == 5) {
            // dX = sum over the window of P x W'; P is a dY tap, an inserted zero or padding.
            std::vector<std::vector<dim_t>> ops(2);
            vm.relations[0].fn(linear, ops);
            const Panel &yp = vm.panels[0], &fp = vm.panels[4];
            std::vector<std::string> terms, nums;
            for (std::size_t i = 0; i < ops[0].size(); ++i) {
                const dim_t zc = vm.links[1].image[static_cast<std::size_t>(ops[0][i])];
                if (zc < 0) continue;
                const dim_t yc = vm.links[0].image[static_cast<std::size_t>(zc)];
                if (yc < 0) continue;
                terms.push_back(short_name(yp, yc) + "*" + short_name(fp, ops[1][i]));
                nums.push_back(factor(value_of(yp, yc, d)) + "*" +
                               factor(value_of(fp, ops[1][i], d)));
            }
            std::string s = cell_name(vm.panels[5], linear) + " = sum over the window of P x W' (" +
                            std::to_string(ops[0].size()) + " products; " +
                            std::to_string(terms.size()) +
                            " read a dY tap, the others a zero of P) = ";
            // Its stride phase: the kernel taps implicit GEMM's GEMM for it reads.
            const Panel& dxp = vm.panels[5];
            const std::string phase =
                dxp.group.empty()
                    ? ""
                    : "; phase " + dxp.group_names[dxp.group[static_cast<std::size_t>(linear)]];
            if (terms.empty()) return s + "0" + phase;
            return s + join_terms(terms) + " = " + join_terms(nums) + " = " +
                   value_of(vm.panels[5], linear, d) + phase;
        }
        // Strided, the padding and FlipRot are expressions: their terms with the numbers in.
        return map_formula(vm, panel, linear, d);
    };
}

std::vector<dim_t> phase_taps(const Problem& p, int axis, dim_t r) {
    std::vector<dim_t> taps;
    const dim_t st = p.stride[axis];
    for (dim_t a = 0; a < p.kernel[axis]; ++a) {
        const dim_t x = r + p.pad_begin[axis] - a * p.dilation[axis];
        if (((x % st) + st) % st == 0) taps.push_back(a);
    }
    return taps;
}

namespace {
// The number of phases of p (0: stride 1 everywhere or more than kMaxPhases).
int phase_count(const Problem& p) {
    dim_t n = 1;
    for (int i = 0; i < p.ndims; ++i) n *= p.stride[i];
    return n > 1 && n <= kMaxPhases ? static_cast<int>(n) : 0;
}
}  // namespace

std::vector<std::uint8_t> stride_phases(const Problem& p) {
    if (phase_count(p) == 0) return {};
    const Shape xs = act_shape(p, false, "c");
    std::vector<std::uint8_t> out(static_cast<std::size_t>(xs.numel()));
    // Row-major over (n, c, spatial...): the phase repeats with the spatial coordinates only.
    dim_t inner = 1;
    for (int i = 0; i < p.ndims; ++i) inner *= p.in[i];
    std::vector<std::uint8_t> one(static_cast<std::size_t>(inner));
    for (dim_t lin = 0; lin < inner; ++lin) {
        dim_t rest = lin, ph = 0, scale = 1;
        for (int i = p.ndims - 1; i >= 0; --i) {
            const dim_t x = rest % p.in[i];
            rest /= p.in[i];
            ph += (x % p.stride[i]) * scale;
            scale *= p.stride[i];
        }
        one[static_cast<std::size_t>(lin)] = static_cast<std::uint8_t>(ph);
    }
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = one[k % one.size()];
    return out;
}

std::vector<std::string> phase_names(const Problem& p) {
    const int n = phase_count(p);
    std::vector<std::string> names;
    const auto axes = spatial(p.ndims);
    for (int ph = 0; ph < n; ++ph) {
        std::string res, taps;
        dim_t count = 1, below = 1;  // below: the phases of the axes after axis i
        for (int i = p.ndims - 1; i >= 0; --i) below *= p.stride[i];
        for (int i = 0; i < p.ndims; ++i) {
            below /= p.stride[i];
            const dim_t r = (ph / below) % p.stride[i];
            const auto t = phase_taps(p, i, r);
            count *= static_cast<dim_t>(t.size());
            const std::string& ax = axes[static_cast<std::size_t>(i)];
            res +=
                (i ? " " : "") + ax + "%" + std::to_string(p.stride[i]) + "=" + std::to_string(r);
            taps += (i ? " k" : "k") + ax + " {";
            for (std::size_t j = 0; j < t.size(); ++j)
                taps += (j ? "," : "") + std::to_string(t[j]);
            taps += "}";
        }
        names.push_back(res + ": " + taps + " (" + std::to_string(count) +
                        (count == 1 ? " tap)" : " taps)"));
    }
    return names;
}

}  // namespace convlab::app
