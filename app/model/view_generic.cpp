#include "model/view_generic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "convlab/map_registry.hpp"
#include "model/views/view_builder.hpp"

namespace convlab::app {

namespace {

std::string cell_value(const Panel& p, dim_t linear, DataKind d) {
    return format_value(p.values[static_cast<std::size_t>(linear)], d);
}

// The arithmetic of one domain element as one line: its bindings and guards, "; " apart.
std::string arithmetic(const IndexMap& m, dim_t domain_linear) {
    std::vector<std::string> lines = m.explain_lines(domain_linear);
    lines.pop_back();  // the pair: the caller names it with the panels' names
    std::string s;
    for (const auto& l : lines) s += (s.empty() ? "" : "; ") + l;
    return s;
}

}  // namespace

std::string expression_formula(const ViewModel& v, int panel, dim_t linear, DataKind d) {
    const Panel& pn = v.panels[static_cast<std::size_t>(panel)];
    std::string s = cell_name(pn, linear) + " = " + cell_value(pn, linear, d);
    bool any = false;
    for (const Link& l : v.links) {
        const Panel& sp = v.panels[static_cast<std::size_t>(l.src)];
        const Panel& dp = v.panels[static_cast<std::size_t>(l.dst)];
        const bool expr = l.map && l.map->expr();
        if (l.dst == panel) {
            any = true;
            if (l.is_gather()) {
                const dim_t from = l.image[static_cast<std::size_t>(linear)];
                const std::string terms = expr ? arithmetic(*l.map, linear) : "";
                s += (terms.empty() ? "" : ": " + terms) + " <- " +
                     (from < 0 ? std::string("0 (padding)")
                               : cell_name(sp, from) + " = " + cell_value(sp, from, d));
            } else {
                s += "   " + l.name + ": sum of " + std::to_string(l.sources_of(linear).size()) +
                     " " + sp.name + " cells";
            }
        }
        if (l.src == panel) {
            any = true;
            if (!l.is_gather()) {
                const dim_t to = l.image[static_cast<std::size_t>(linear)];
                const std::string terms = expr ? arithmetic(*l.map, linear) : "";
                s += (terms.empty() ? "" : ": " + terms) + " -> " +
                     (to < 0 ? std::string("nowhere") : "+= " + cell_name(dp, to));
            } else {
                const auto to = l.destinations_of(linear);
                s += "   " + l.name + ": -> " +
                     (to.size() == 1 ? cell_name(dp, to[0])
                                     : std::to_string(to.size()) + " " + dp.name + " cells");
            }
        }
    }
    return any ? s : "";
}

ViewModel build_map_view(const ViewRequest& r, const std::string& name,
                         std::atomic<float>* progress) {
    const MapEntry& e = map_entry(name);
    r.problem.check();
    const IndexMap m = e.build(r.problem, r.c0);
    const double cells =
        static_cast<double>(m.src().numel()) + static_cast<double>(m.dst().numel());
    if (cells > static_cast<double>(kMaxViewCells))
        throw Error("too large to show: " + grouped(cells) + " cells, more than the " +
                    grouped(static_cast<double>(kMaxViewCells)) +
                    " the app draws; choose a smaller problem");
    // The source: a lesson's own tensor of the map's source role when it fits (salts as the
    // hand-written views: 1 src, 2 wei, 3 diff_dst), else generated data.
    const std::vector<float>* given = e.src_role == "src"        ? &r.src
                                      : e.src_role == "wei"      ? &r.wei
                                      : e.src_role == "diff_dst" ? &r.diff_dst
                                                                 : nullptr;
    const std::uint64_t salt = e.src_role == "src"        ? 1
                               : e.src_role == "wei"      ? 2
                               : e.src_role == "diff_dst" ? 3
                                                          : 4;
    std::vector<float> src = given && static_cast<dim_t>(given->size()) == m.src().numel()
                                 ? *given
                                 : make_data(m.src().numel(), r.data, r.seed, salt);
    std::vector<float> dst(static_cast<std::size_t>(m.dst().numel()), 0.0f);
    m.execute(src.data(), dst.data());

    ViewModel v;
    v.name = r.view;
    const auto panel = [](std::string pname, std::string title, const Shape& s,
                          std::vector<float> values) {
        Panel p;
        p.name = std::move(pname);
        p.title = std::move(title);
        p.shape = s;
        p.roles = default_roles(s.rank());
        p.values = std::move(values);
        p.auto_wrap = true;
        return p;
    };
    const std::string sname = e.src_role.empty() ? "src" : e.src_role;
    const std::string dname = e.dst_role.empty() ? "dst" : e.dst_role;
    v.panels.push_back(panel(sname, "source " + m.src().str(), m.src(), std::move(src)));
    v.panels.push_back(panel(dname, name + " " + m.dst().str(), m.dst(), dst));
    std::atomic<float> sub{0};
    v.links.push_back(
        make_link(std::make_shared<const IndexMap>(m), 0, 1, progress ? &sub : nullptr));
    v.links.back().name = name;  // lessons name the map's panels "map.src" and "map.dst" by it
    v.drivers.push_back({0, -1});
    if (m.kind() == IndexMap::Kind::Gather) {
        const Link& l = v.links.back();
        Panel& dp = v.panels[1];
        dp.padding_lane.assign(l.image.size(), 0);
        for (std::size_t i = 0; i < l.image.size(); ++i) dp.padding_lane[i] = l.image[i] < 0;
    }
    if (e.kernel) {
        std::vector<float> fast(dst.size(), -1.0f);
        e.kernel(r.problem, r.c0, v.panels[0].values.data(), fast.data());
        double diff = 0;
        for (std::size_t i = 0; i < dst.size(); ++i)
            diff = std::max(diff, std::fabs(static_cast<double>(fast[i]) - dst[i]));
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3g", diff);
        v.check = dname + " equals the registered fast kernel of " + name +
                  (diff == 0 ? ": yes" : ": NO") + " (max |diff| " + buf + ")";
    }
    v.caption = m.formula();
    const DataKind d = r.data;
    v.formula = [d](const ViewModel& vm, int p, dim_t linear) {
        return expression_formula(vm, p, linear, d);
    };
    arrange_view(v);
    if (progress) progress->store(1.0f);
    return v;
}

}  // namespace convlab::app
