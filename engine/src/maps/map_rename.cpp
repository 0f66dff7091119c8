#include "convlab/map_rename.hpp"

#include <map>

namespace convlab {

namespace {

bool compound(const MapExpr::Node& n) {
    return n.op != MapExpr::Op::Var && n.op != MapExpr::Op::Const;
}

// Every name the expression's text can print must mean one thing: an axis, one binding or one
// symbol (a symbol of one name and value is one constant node). Throws otherwise.
void check_unambiguous(const MapExpr& r) {
    std::map<std::string, int> owner;  // name -> axis (-1 - a) or node id
    const auto claim = [&owner](const std::string& name, int who) {
        const auto [it, fresh] = owner.emplace(name, who);
        if (!fresh && it->second != who)
            throw Error("index map expression: renaming gives two different terms the name '" +
                        name + "'");
    };
    for (std::size_t a = 0; a < r.axis_names().size(); ++a)
        claim(r.axis_names()[a], -1 - static_cast<int>(a));
    for (std::size_t i = 0; i < r.nodes().size(); ++i) {
        const MapExpr::Node& n = r.nodes()[i];
        if (n.op != MapExpr::Op::Var && !n.name.empty()) claim(n.name, static_cast<int>(i));
    }
}

}  // namespace

MapExpr renamed(const MapExpr& e, const Renaming& names,
                const std::vector<std::string>& image_names) {
    for (const auto& [from, to] : names)
        if (to.empty())
            throw Error("index map expression: '" + from + "' renamed to an empty name");
    std::vector<bool> used(names.size(), false);
    const auto to = [&](const std::string& name) {
        for (std::size_t i = 0; i < names.size(); ++i)
            if (names[i].first == name) {
                used[i] = true;
                return names[i].second;
            }
        return name;
    };
    std::vector<std::string> axes;
    for (const auto& a : e.axis_names()) axes.push_back(to(a));
    // The program replayed through the same builders: folding and sharing act as they did when
    // `e` was built, so the result evaluates as `e` does at every coordinate.
    MapExpr r(std::move(axes));
    using Op = MapExpr::Op;
    std::vector<MapExpr::Term> t;
    t.reserve(e.nodes().size());
    for (const MapExpr::Node& n : e.nodes()) {
        const auto at = [&t](int id) { return t[static_cast<std::size_t>(id)]; };
        MapExpr::Term x;
        switch (n.op) {
            case Op::Var:
                x = r.var(n.a);
                break;
            case Op::Const:
                x = n.name.empty() ? r.num(n.value) : r.sym(to(n.name), n.value);
                break;
            case Op::Add:
                x = at(n.a) + at(n.b);
                break;
            case Op::Sub:
                x = at(n.a) - at(n.b);
                break;
            case Op::Mul:
                x = at(n.a) * at(n.b);
                break;
            case Op::Div:
                x = at(n.a) / at(n.b);
                break;
            case Op::Mod:
                x = at(n.a) % at(n.b);
                break;
        }
        if (compound(n) && !n.name.empty()) x = r.let(to(n.name), x);
        t.push_back(x);
    }
    for (const MapExpr::Guard& g : e.guards()) {
        const auto at = [&t](int id) { return t[static_cast<std::size_t>(id)]; };
        if (g.div >= 0) r.require_divisible(at(g.x), at(g.div));
        if (g.lo >= 0 && g.hi >= 0)
            r.require_range(at(g.x), at(g.lo), at(g.hi));
        else if (g.hi >= 0)
            r.require_below(at(g.x), at(g.hi));
        else if (g.lo >= 0)
            throw Error("index map expression: a guard with only a lower bound cannot be renamed");
    }
    std::vector<MapExpr::Term> image;
    for (std::size_t i = 0; i < e.image().size(); ++i) {
        MapExpr::Term x = t[static_cast<std::size_t>(e.image()[i])];
        const std::string name = i < image_names.size() ? image_names[i] : "";
        const MapExpr::Node& n = r.nodes()[static_cast<std::size_t>(x.id)];
        if (!name.empty() && compound(n) && n.name.empty()) x = r.let(name, x);
        image.push_back(x);
    }
    r.set_image(std::move(image));
    for (std::size_t i = 0; i < names.size(); ++i)
        if (!used[i])
            throw Error("index map expression: nothing named '" + names[i].first +
                        "' to rename (no axis, binding or symbol of that name)");
    check_unambiguous(r);
    return r;
}

IndexMap renamed(const IndexMap& m, const Renaming& names) {
    if (!m.expr())
        throw Error("map " + m.name() + " is not written as an expression: nothing to rename");
    Shape dom = m.domain();
    for (auto& n : dom.names)
        for (const auto& [from, to] : names)
            if (n == from) {
                n = to;
                break;
            }
    MapExpr e = renamed(*m.expr(), names, m.codomain().names);
    const bool gather = m.kind() == IndexMap::Kind::Gather;
    return IndexMap(m.name(), m.kind(), gather ? m.src() : dom, gather ? dom : m.dst(),
                    std::move(e), m.line_axis());
}

}  // namespace convlab
