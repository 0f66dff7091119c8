// The tensors view (model.hpp build_tensors_view): a lesson step's named tensors as panels, in
// the same cells, colours and titles as the other views. Forward tensors in the top row, their
// gradients right below them (diff_X under X), anything else the step names in a third row; a
// convolution step that names its tensors (show, highlights, checks) gets them in that order,
// gradients in the second row.
// Index:
//   [SECTION] which tensors, in which rows
//   [SECTION] a tensor as a panel
//   [SECTION] build_tensors_view
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>
#include <utility>

#include "lesson/lesson.hpp"
#include "model/model.hpp"

namespace convlab::app {

namespace {

// [SECTION] which tensors, in which rows

// The tensors of a convolution step every tensors view shows (when the step has them).
const std::vector<std::string>& conv_core() {
    static const std::vector<std::string> n = {"src",      "wei",      "bias",     "dst",
                                               "diff_dst", "diff_src", "diff_wei", "diff_bias"};
    return n;
}

bool is_diff(const std::string& n) {
    return n.rfind("diff_", 0) == 0 || n.find(".diff_") != std::string::npos;
}

// The gradient of a forward tensor: src -> diff_src, conv.wei -> conv.diff_wei, dst -> diff_dst.
std::string gradient_of(const std::string& n) {
    const auto dot = n.find('.');
    if (dot == std::string::npos) return "diff_" + n;
    return n.substr(0, dot + 1) + "diff_" + n.substr(dot + 1);
}

struct Rows {
    std::vector<std::string> forward, backward, more;
};

Rows arrange(const lesson::StepResult& r, const std::vector<std::string>& wanted) {
    const bool network = r.find("input") != nullptr && r.find("src") == nullptr;
    // A convolution step that names its tensors gets them in its order (W, B, Y left to right).
    const bool named = !network && !wanted.empty();
    std::vector<std::string> names;
    if (named) {
        for (const auto& w : wanted)
            if (r.find(w)) names.push_back(w);
    } else {
        for (const auto& t : r.tensors)
            if (std::find(wanted.begin(), wanted.end(), t.name) != wanted.end() || wanted.empty())
                names.push_back(t.name);
    }
    // Primary tensors: a network's every tensor, a convolution's core set (or all it names).
    const auto primary = [&](const std::string& n) {
        return network || named ||
               std::find(conv_core().begin(), conv_core().end(), n) != conv_core().end();
    };
    Rows rows;
    std::set<std::string> placed;
    // A network reads best in its own order: input, then per layer its weights and its output.
    std::vector<std::string> fwd;
    for (const auto& n : names)
        if (primary(n) && !is_diff(n)) fwd.push_back(n);
    if (network) {
        std::stable_partition(fwd.begin(), fwd.end(),
                              [](const std::string& n) { return n == "input"; });
        // Move every LAYER.wei / LAYER.bias right before LAYER.
        for (const auto& n : std::vector<std::string>(fwd)) {
            const auto dot = n.find('.');
            if (dot == std::string::npos) continue;
            const std::string layer = n.substr(0, dot);
            fwd.erase(std::find(fwd.begin(), fwd.end(), n));
            auto at = std::find(fwd.begin(), fwd.end(), layer);
            fwd.insert(at, n);
        }
        // probs and loss last.
        std::stable_partition(fwd.begin(), fwd.end(),
                              [](const std::string& n) { return n != "probs" && n != "loss"; });
    }
    for (const auto& n : fwd) {
        rows.forward.push_back(n);
        placed.insert(n);
    }
    // Gradients under their tensors; dst's gradient diff_dst is an input, but sits under dst too.
    for (const auto& n : rows.forward) {
        const std::string g = gradient_of(n);
        if (std::find(names.begin(), names.end(), g) != names.end()) {
            rows.backward.push_back(g);
            placed.insert(g);
        }
    }
    for (const auto& n : names)
        if (!placed.count(n)) (primary(n) && is_diff(n) ? rows.backward : rows.more).push_back(n);
    return rows;
}

// [SECTION] a tensor as a panel

// Whether a tensor's channel axis counts output channels (k): a convolution's result and its
// gradient (dst, diff_dst, dst.ALGO, diff_dst_tnc ...), and in a network every layer's output after
// the input.
bool output_channels(const std::string& name, bool network) {
    const auto is = [&](const std::string& base) {
        return name == base || name.rfind(base + ".", 0) == 0 || name.rfind(base + "_", 0) == 0;
    };
    if (is("dst") || is("diff_dst")) return true;
    return network && name != "input" && name != "diff_input" &&
           name.find('.') == std::string::npos;
}

// Dim names by what the tensor holds: weights (k, c, k...), activations (n, c, spatial...), a
// result's (n, k, spatial...): each axis named by what it indexes, k output channels, c input
// channels, n images.
std::vector<std::string> dim_names(const std::string& name, std::size_t rank, bool network) {
    static const char* sp[] = {"d", "h", "w"};
    const bool wei = name.find("wei") != std::string::npos;
    std::vector<std::string> n;
    if (rank == 1) return {"i"};
    // A column matrix per image and group: rows (c, k...), one column per output position.
    if (rank == 4 && (name == "col" || name == "diff_col")) return {"n", "g", "row", "col"};
    if (rank == 2)
        return wei ? std::vector<std::string>{"o", "i"} : std::vector<std::string>{"n", "j"};
    // TNC: channels outside the batch.
    const bool tnc = name.size() > 4 && name.compare(name.size() - 4, 4, "_tnc") == 0;
    // FlipRot(W) is (C, K/G, k...): the channel dims swapped.
    const bool flipped = name.find("fliprot") != std::string::npos;
    const char* ch = output_channels(name, network) ? "k" : "c";
    n.push_back(flipped ? "c" : wei ? "k" : tnc ? ch : "n");
    n.push_back(flipped ? "k" : tnc ? "n" : wei ? "c" : ch);
    const std::size_t s = rank - 2;
    for (std::size_t i = 0; i < s; ++i) {
        const std::size_t a = s <= 3 ? 3 - s + i : i;
        n.push_back(s <= 3 ? (wei ? std::string("k") : std::string()) + sp[a]
                           : "d" + std::to_string(i + 2));
    }
    return n;
}

std::vector<Role> roles_of(const std::string& name, const std::vector<dim_t>& dims) {
    const std::size_t rank = dims.size();
    if (rank == 1) return {Role::Col};
    if (rank == 2) return {Role::Row, Role::Col};
    // 1-D weights: a K x C grid of one-row kernels; 1-D activations: images down, channels rows.
    // (A locally connected layer's weights (P, 1, R): one row a position.)
    if (rank == 3)
        return name.find("wei") == std::string::npos
                   ? std::vector<Role>{Role::TileY, Role::Row, Role::Col}
               : dims[1] == 1 ? std::vector<Role>{Role::Row, Role::TileX, Role::Col}
                              : std::vector<Role>{Role::TileY, Role::TileX, Role::Col};
    // Tiles side by side (the canvas is wider than high); a grid when both outer dims are > 1.
    std::vector<Role> r(rank, Role::TileX);
    if (dims[0] > 1 && dims[1] > 1) r[0] = Role::TileY;
    r[rank - 2] = Role::Row;
    r[rank - 1] = Role::Col;
    return r;
}

// "0.0181" or "[0.982, 0.018]": three significant figures, for a small tensor whose cells (two
// decimals) would lose digits the narration quotes (a loss, probabilities).
std::string small_values(const Tensor& t) {
    const dim_t n = t.numel();
    if (n == 0 || n > 6) return "";
    bool lossy = false;
    for (dim_t i = 0; i < n; ++i) {
        const double v = t.f32()[i];
        lossy |= std::abs(v - std::round(v * 100) / 100) > 1e-6;
    }
    if (!lossy) return "";
    std::string s = n > 1 ? "[" : "";
    for (dim_t i = 0; i < n; ++i) {
        char b[32];
        std::snprintf(b, sizeof b, "%.3g", static_cast<double>(t.f32()[i]));
        s += (i ? ", " : "") + std::string(b);
    }
    return s + (n > 1 ? "]" : "");
}

Panel tensor_panel(const lesson::NamedTensor& t, bool network, bool hidden) {
    Panel p;
    p.name = t.name;
    p.title = t.description;
    if (const std::string v = hidden ? "" : small_values(t.value); !v.empty())
        p.title = "= " + v + "  " + p.title;
    std::vector<dim_t> dims = t.value.dims();
    if (dims.empty()) dims = {1};
    const dim_t n = product(dims);
    // A long flat tensor (packed storage) wraps into rows of 16 or 8 cells.
    if (dims.size() == 1 && n > 32) {
        for (dim_t w : {16, 8, 32})
            if (n % w == 0) {
                dims = {n / w, w};
                break;
            }
        p.shape.dims = dims;
        p.shape.names = dims.size() == 2 ? std::vector<std::string>{"i/" + std::to_string(dims[1]),
                                                                    "i%" + std::to_string(dims[1])}
                                         : std::vector<std::string>{"i"};
    } else {
        p.shape.dims = dims;
        p.shape.names = t.dim_names.size() == dims.size() ? t.dim_names
                                                          : dim_names(t.name, dims.size(), network);
    }
    p.roles = dims.size() == 2 && t.value.dims().size() == 1
                  ? std::vector<Role>{Role::Row, Role::Col}
                  : roles_of(t.name, dims);
    p.values.assign(t.value.f32(), t.value.f32() + t.value.numel());
    // 8 tiles a row; where that stacks a panel more than 3 times taller than wide, its tiles
    // are wrapped for the canvas by arrange_view, as in the other views: a 3x3 filter of 20
    // input and 18 output channels, three rows of tiles to an output channel, made a panel 31
    // cells wide and 215 tall. (Wrapping every panel for the canvas stacked lesson 17's small
    // tensors in presenter mode: cells of 39 pixels became 15.)
    p.tiles_per_row = 8;
    layout_panel(p);
    p.auto_wrap = p.height > 3 * p.width;
    return p;
}

// [SECTION] hover links of the convolutions

// Row-major linear index of coordinates c in dims d.
dim_t linear_of(const std::vector<dim_t>& d, const std::vector<dim_t>& c) {
    dim_t l = 0;
    for (std::size_t i = 0; i < d.size(); ++i) l = l * d[i] + c[i];
    return l;
}

// Calls f(o, t, i) for every output position o and kernel tap t of the problem's spatial axes
// whose input position i is inside the input (spatial coordinates, ndims each), restricted to
// o == fix_o when fix_o is given, t == fix_t, or i == fix_i.
template <class F>
void for_taps(const Problem& p, const std::vector<dim_t>* fix_o, const std::vector<dim_t>* fix_t,
              const std::vector<dim_t>* fix_i, F&& f) {
    const auto nd = static_cast<std::size_t>(p.ndims);
    std::vector<dim_t> o(nd, 0), t(nd, 0), i(nd, 0);
    std::vector<dim_t> out(nd), ker(nd);
    for (std::size_t a = 0; a < nd; ++a) {
        out[a] = p.out(static_cast<int>(a));
        ker[a] = p.kernel[a];
    }
    // Odometer over (o, t): o outer, t inner, the last axis fastest.
    std::vector<dim_t> idx(2 * nd, 0), ext(2 * nd);
    for (std::size_t a = 0; a < nd; ++a) {
        ext[a] = fix_o ? 1 : out[a];
        ext[nd + a] = fix_t ? 1 : ker[a];
    }
    for (;;) {
        bool inside = true;
        for (std::size_t a = 0; a < nd; ++a) {
            o[a] = fix_o ? (*fix_o)[a] : idx[a];
            t[a] = fix_t ? (*fix_t)[a] : idx[nd + a];
            i[a] = o[a] * p.stride[a] - p.pad_begin[a] + t[a] * p.dilation[a];
            inside &= i[a] >= 0 && i[a] < p.in[a] && (!fix_i || i[a] == (*fix_i)[a]);
        }
        if (inside) f(o, t, i);
        std::size_t a = 2 * nd;
        while (a > 0 && ++idx[a - 1] == ext[a - 1]) idx[--a] = 0;
        if (a == 0) return;
    }
}

}  // namespace

std::vector<std::pair<dim_t, dim_t>> conv_terms(const Problem& p, ConvResult kind, dim_t linear) {
    const std::vector<dim_t> xd = p.src_dims(), wd = p.wei_dims(), yd = p.dst_dims();
    std::vector<std::pair<dim_t, dim_t>> terms;
    const auto split = [](std::vector<dim_t> d, dim_t l) {
        std::vector<dim_t> c(d.size());
        for (std::size_t i = d.size(); i-- > 0;) {
            c[i] = l % d[i];
            l /= d[i];
        }
        return c;
    };
    const auto cat = [](dim_t a, dim_t b, const std::vector<dim_t>& sp) {
        std::vector<dim_t> c{a, b};
        c.insert(c.end(), sp.begin(), sp.end());
        return c;
    };
    const dim_t icg = p.icg(), ocg = p.ocg();
    if (kind == ConvResult::Dst) {
        const auto c = split(yd, linear);  // (n, k, o...)
        const std::vector<dim_t> o(c.begin() + 2, c.end());
        const dim_t n = c[0], k = c[1], g = k / ocg;
        for (dim_t cg = 0; cg < icg; ++cg)
            for_taps(p, &o, nullptr, nullptr, [&](const auto&, const auto& t, const auto& i) {
                terms.emplace_back(linear_of(xd, cat(n, g * icg + cg, i)),
                                   linear_of(wd, cat(k, cg, t)));
            });
    } else if (kind == ConvResult::DiffSrc) {
        const auto c = split(xd, linear);  // (n, c, i...)
        const std::vector<dim_t> i(c.begin() + 2, c.end());
        const dim_t n = c[0], ch = c[1], g = ch / icg;
        for (dim_t kg = 0; kg < ocg; ++kg)
            for_taps(p, nullptr, nullptr, &i, [&](const auto& o, const auto& t, const auto&) {
                const dim_t k = g * ocg + kg;
                terms.emplace_back(linear_of(yd, cat(n, k, o)),
                                   linear_of(wd, cat(k, ch - g * icg, t)));
            });
    } else {
        const auto c = split(wd, linear);  // (k, c, t...)
        const std::vector<dim_t> t(c.begin() + 2, c.end());
        const dim_t k = c[0], cg = c[1], g = k / ocg;
        for (dim_t n = 0; n < p.mb; ++n)
            for_taps(p, nullptr, &t, nullptr, [&](const auto& o, const auto&, const auto& i) {
                terms.emplace_back(linear_of(xd, cat(n, g * icg + cg, i)),
                                   linear_of(yd, cat(n, k, o)));
            });
    }
    return terms;
}

namespace {

// The convolutions among the view's panels: for each, its three results as relations (a cell ->
// the operand cells of its terms) and their formulas with the numbers. A convolution whose panels
// are not all drawn links what is drawn; one too large to scan on a hover is left out.
void link_convolutions(ViewModel& v, const std::vector<ViewRequest::Conv>& convs) {
    const auto find = [&](const std::string& name) {
        for (std::size_t i = 0; i < v.panels.size(); ++i)
            if (v.panels[i].name == name) return static_cast<int>(i);
        return -1;
    };
    struct Product {
        Problem p;
        ConvResult kind;
        int a, b;  // operand panels (-1: not drawn)
    };
    auto products = std::make_shared<std::vector<std::pair<int, Product>>>();
    for (const auto& c : convs) {
        if (c.problem.flops() > 4e6) continue;  // a hover scans every term of a result cell
        const int x = find(c.src), w = find(c.wei), y = find(c.dst), dx = find(c.diff_src),
                  dw = find(c.diff_wei), dy = find(c.diff_dst);
        const auto numel_is = [&](int panel, const std::vector<dim_t>& dims) {
            return panel < 0 || v.panels[static_cast<std::size_t>(panel)].numel() == product(dims);
        };
        if (!numel_is(x, c.problem.src_dims()) || !numel_is(dx, c.problem.src_dims()) ||
            !numel_is(w, c.problem.wei_dims()) || !numel_is(dw, c.problem.wei_dims()) ||
            !numel_is(y, c.problem.dst_dims()) || !numel_is(dy, c.problem.dst_dims()))
            continue;
        const std::tuple<int, ConvResult, int, int> rels[] = {
            {y, ConvResult::Dst, x, w},
            {dx, ConvResult::DiffSrc, dy, w},
            {dw, ConvResult::DiffWei, x, dy},
        };
        for (const auto& [res, kind, a, b] : rels) {
            if (res < 0 || (a < 0 && b < 0)) continue;
            Relation r;
            r.result = res;
            r.name = v.panels[static_cast<std::size_t>(res)].name + " = conv";
            if (a >= 0) r.operands.push_back(a);
            if (b >= 0) r.operands.push_back(b);
            const Problem p = c.problem;
            const bool ha = a >= 0, hb = b >= 0;
            // kind = kind: clang 14 (emscripten) cannot capture a structured binding itself.
            r.fn = [p, kind = kind, ha, hb](dim_t cell, std::vector<std::vector<dim_t>>& out) {
                for (const auto& [ia, ib] : conv_terms(p, kind, cell)) {
                    if (ha) out[0].push_back(ia);
                    if (hb) out[ha ? 1 : 0].push_back(ib);
                }
            };
            v.relations.push_back(std::move(r));
            products->emplace_back(res, Product{p, kind, a, b});
        }
    }
    if (products->empty()) return;
    const auto plain = std::move(v.formula);
    v.formula = [products, plain](const ViewModel& vm, int panel, dim_t linear) {
        for (const auto& [res, pr] : *products) {
            if (res != panel || pr.a < 0 || pr.b < 0) continue;
            const Panel& rp = vm.panels[static_cast<std::size_t>(res)];
            const Panel& ap = vm.panels[static_cast<std::size_t>(pr.a)];
            const Panel& bp = vm.panels[static_cast<std::size_t>(pr.b)];
            const auto terms = conv_terms(pr.p, pr.kind, linear);
            const auto num = [](double x) {
                char b[32];
                std::snprintf(b, sizeof b, x < 0 ? "(%.4g)" : "%.4g", x);
                return std::string(b);
            };
            std::string s = cell_name(rp, linear) + " = sum of " + std::to_string(terms.size()) +
                            " products " + ap.name + " x " + bp.name + " = ";
            double sum = 0;
            std::size_t shown = 0;
            for (const auto& [ia, ib] : terms) {
                const double x = ap.values[static_cast<std::size_t>(ia)];
                const double y = bp.values[static_cast<std::size_t>(ib)];
                sum += x * y;
                // The terms that add something, at most 12 (zeros are the rule in a lesson).
                if (x * y == 0 || shown == 12) continue;
                s += (shown++ ? " + " : "") + num(x) + "*" + num(y);
            }
            if (shown == 0) s += "0";
            char b[48];
            std::snprintf(b, sizeof b, " = %.6g", sum);
            const auto nonzero = static_cast<std::size_t>(
                std::count_if(terms.begin(), terms.end(), [&](const auto& t) {
                    return ap.values[static_cast<std::size_t>(t.first)] *
                               bp.values[static_cast<std::size_t>(t.second)] !=
                           0;
                }));
            if (nonzero > shown) s += " + ...";
            if (terms.size() > nonzero)
                s += "  (+ " + std::to_string(terms.size() - nonzero) + " zero products)";
            return s + b;
        }
        return plain(vm, panel, linear);
    };
}

}  // namespace

// [SECTION] build_tensors_view

ViewModel build_tensors_view(const ViewRequest& r) {
    std::shared_ptr<const lesson::StepResult> res = r.tensors;
    std::vector<std::string> wanted = r.tensor_names;
    if (!res) {
        // The problem's own tensors: a one-step lesson evaluated by the engine.
        r.problem.check();
        const std::string text =
            "title = \"tensors\"\naudience = \"app\"\n[[step]]\nview = "
            "\"tensors\"\nnarration = \"-\"\nproblem = '" +
            to_descriptor(r.problem) + "'\n";
        const lesson::Lesson l = lesson::parse_lesson(text, "tensors view");
        res = std::make_shared<lesson::StepResult>(lesson::evaluate(l, 0));
        if (wanted.empty()) wanted = conv_core();
    }
    const bool network = res->find("input") != nullptr && res->find("src") == nullptr;
    if (wanted.empty() && !network) wanted = conv_core();
    const Rows rows = arrange(*res, wanted);
    ViewModel v;
    v.name = "tensors";
    v.caption = network ? "the network's tensors: forward (top row), each gradient dL/d... right "
                          "below its tensor; every value computed by the engine's layers"
                        : "the step's tensors: forward (top row), each gradient right below its "
                          "tensor; every value computed by the engine (direct loops)";
    dim_t cells = 0;
    int groups = 0;  // rows of tensors with a panel
    for (const auto* row : {&rows.forward, &rows.backward, &rows.more}) {
        bool first = true;
        for (const auto& n : *row) {
            const lesson::NamedTensor* t = res->find(n);
            if (!t) continue;
            cells += t->value.numel();
            if (cells > (dim_t{4} << 20))
                throw Error("tensors view: more than " + std::to_string(dim_t{4} << 20) +
                            " cells; choose a smaller problem");
            const bool hidden = std::find(r.hidden_tensors.begin(), r.hidden_tensors.end(), n) !=
                                r.hidden_tensors.end();
            Panel p = tensor_panel(*t, network, hidden);
            p.new_row = first;
            groups += first ? 1 : 0;
            first = false;
            v.panels.push_back(std::move(p));
        }
    }
    if (v.panels.empty()) throw Error("tensors view: the step has no tensors to show");
    v.formula = [](const ViewModel& vm, int panel, dim_t linear) {
        const Panel& p = vm.panels[static_cast<std::size_t>(panel)];
        char b[48];
        std::snprintf(b, sizeof b, " = %.6g",
                      static_cast<double>(p.values[static_cast<std::size_t>(linear)]));
        return cell_name(p, linear) + b + "   (" + p.title + ")";
    };
    // The convolutions' hover links: the request's (a network's layers), or the step's own.
    std::vector<ViewRequest::Conv> convs = r.convs;
    if (convs.empty() && res->find("src") && res->find("wei"))
        convs.push_back({r.problem, "src", "wei", "dst", "diff_src", "diff_wei", "diff_dst"});
    link_convolutions(v, convs);
    // One row of tensors (a forward step of the network: nine panels) may wrap where the canvas
    // is narrow; with a gradient row, both rows are cut into bands of the same columns.
    v.fixed_rows = groups > 1;
    // Half the other views' gap between panels: a network's tensors are a few cells wide, and
    // 4 cells of gap each took a third of the row (lesson 17 at 1280x720: digits of 18 px with
    // the canvas's lower quarter empty).
    v.panel_gap = kPanelGap * 0.5;
    arrange_view(v);
    return v;
}

}  // namespace convlab::app
