#include "convlab/map_expr.hpp"

#include <algorithm>

namespace convlab {

namespace {

// Nodes of one expression: enough for the largest map (im2col_fractal of a 3-D problem uses about
// 60) with room to compose a few; evaluation keeps its values on the stack.
constexpr std::size_t kMaxNodes = 512;

dim_t floor_div(dim_t a, dim_t b) {
    const dim_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

dim_t floor_mod(dim_t a, dim_t b) {
    const dim_t r = a % b;
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

// Precedence for printing: sums bind loosest, products tighter, names and numbers tightest.
int precedence(MapExpr::Op op) {
    switch (op) {
        case MapExpr::Op::Add:
        case MapExpr::Op::Sub:
            return 1;
        case MapExpr::Op::Mul:
        case MapExpr::Op::Div:
        case MapExpr::Op::Mod:
            return 2;
        default:
            return 3;
    }
}

// One node's value from the coordinate and the values of the nodes before it.
inline dim_t apply(const MapExpr::Node& nd, const dim_t* coord, const dim_t* v) {
    switch (nd.op) {
        case MapExpr::Op::Var:
            return coord[nd.a];
        case MapExpr::Op::Const:
            return nd.value;
        case MapExpr::Op::Add:
            return v[nd.a] + v[nd.b];
        case MapExpr::Op::Sub:
            return v[nd.a] - v[nd.b];
        case MapExpr::Op::Mul:
            return v[nd.a] * v[nd.b];
        case MapExpr::Op::Div:
            return floor_div(v[nd.a], v[nd.b]);
        case MapExpr::Op::Mod:
            return floor_mod(v[nd.a], v[nd.b]);
    }
    return 0;
}

inline bool holds(const MapExpr::Guard& g, const dim_t* v) {
    const dim_t x = v[g.x];
    if (g.div >= 0 && floor_mod(x, v[g.div]) != 0) return false;
    if (g.lo >= 0 && x < v[g.lo]) return false;
    if (g.hi >= 0 && x >= v[g.hi]) return false;
    return true;
}

}  // namespace

MapExpr::MapExpr(std::vector<std::string> axis_names) : axis_names_(std::move(axis_names)) {
    // (Node::axes holds one bit an axis.)
    if (axis_names_.size() > 32)
        throw Error("index map expression: a domain of rank " + std::to_string(axis_names_.size()) +
                    ", more than 32 axes");
}

int MapExpr::add(Node n) {
    // Common sub-terms are shared: an identical node (same operation and operands; constants
    // also by symbol) is reused, so a term used twice is computed once.
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& o = nodes_[i];
        if (o.op == n.op && o.a == n.a && o.b == n.b && o.value == n.value &&
            (n.op != Op::Const || o.name == n.name))
            return static_cast<int>(i);
    }
    if (nodes_.size() >= kMaxNodes)
        throw Error("index map expression: more than " + std::to_string(kMaxNodes) + " terms");
    if (n.op == Op::Var)
        n.axes = std::uint32_t{1} << n.a;
    else if (n.op != Op::Const)
        n.axes =
            nodes_[static_cast<std::size_t>(n.a)].axes | nodes_[static_cast<std::size_t>(n.b)].axes;
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size()) - 1;
}

MapExpr::Term MapExpr::var(int axis) {
    if (axis < 0 || axis >= rank())
        throw Error("index map expression: axis " + std::to_string(axis) + " outside rank " +
                    std::to_string(rank()));
    return {this, add({Op::Var, axis, -1, 0, ""})};
}

MapExpr::Term MapExpr::num(dim_t v) {
    return {this, add({Op::Const, -1, -1, v, ""})};
}

MapExpr::Term MapExpr::sym(const std::string& name, dim_t v) {
    return {this, add({Op::Const, -1, -1, v, name})};
}

MapExpr::Term MapExpr::let(const std::string& name, Term t) {
    Node& n = nodes_[static_cast<std::size_t>(t.id)];
    if (n.op != Op::Var && n.op != Op::Const && n.name.empty()) n.name = name;
    return t;
}

int MapExpr::binary(Op op, int a, int b) {
    const Node &na = nodes_[static_cast<std::size_t>(a)], &nb = nodes_[static_cast<std::size_t>(b)];
    const bool ca = na.op == Op::Const, cb = nb.op == Op::Const;
    if ((op == Op::Div || op == Op::Mod) && (!cb || nb.value <= 0))
        throw Error("index map expression: division and modulo are by a positive constant");
    // Unnamed constants fold; a named one stays, so that the formula keeps its symbol.
    const bool plain_a = ca && na.name.empty(), plain_b = cb && nb.name.empty();
    if (plain_a && plain_b) {
        dim_t v = 0;
        switch (op) {
            case Op::Add:
                v = na.value + nb.value;
                break;
            case Op::Sub:
                v = na.value - nb.value;
                break;
            case Op::Mul:
                v = na.value * nb.value;
                break;
            case Op::Div:
                v = floor_div(na.value, nb.value);
                break;
            case Op::Mod:
                v = floor_mod(na.value, nb.value);
                break;
            default:
                break;
        }
        return num(v).id;
    }
    if ((op == Op::Add || op == Op::Sub) && plain_b && nb.value == 0) return a;
    if (op == Op::Add && plain_a && na.value == 0) return b;
    if ((op == Op::Mul || op == Op::Div) && plain_b && nb.value == 1) return a;
    if (op == Op::Mul && plain_a && na.value == 1) return b;
    if (op == Op::Mod && plain_b && nb.value == 1) return num(0).id;
    if (op == Op::Mul && ((plain_a && na.value == 0) || (plain_b && nb.value == 0)))
        return num(0).id;
    return add({op, a, b, 0, ""});
}

static void same_expr(const MapExpr::Term& a, const MapExpr::Term& b) {
    if (a.e != b.e || !a.e) throw Error("index map expression: terms of different expressions");
}

MapExpr::Term operator+(MapExpr::Term a, MapExpr::Term b) {
    same_expr(a, b);
    return {a.e, a.e->binary(MapExpr::Op::Add, a.id, b.id)};
}
MapExpr::Term operator-(MapExpr::Term a, MapExpr::Term b) {
    same_expr(a, b);
    return {a.e, a.e->binary(MapExpr::Op::Sub, a.id, b.id)};
}
MapExpr::Term operator*(MapExpr::Term a, MapExpr::Term b) {
    same_expr(a, b);
    return {a.e, a.e->binary(MapExpr::Op::Mul, a.id, b.id)};
}
MapExpr::Term operator/(MapExpr::Term a, MapExpr::Term b) {
    same_expr(a, b);
    return {a.e, a.e->binary(MapExpr::Op::Div, a.id, b.id)};
}
MapExpr::Term operator%(MapExpr::Term a, MapExpr::Term b) {
    same_expr(a, b);
    return {a.e, a.e->binary(MapExpr::Op::Mod, a.id, b.id)};
}
MapExpr::Term operator+(MapExpr::Term a, dim_t b) {
    return a + a.e->num(b);
}
MapExpr::Term operator-(MapExpr::Term a, dim_t b) {
    return a - a.e->num(b);
}
MapExpr::Term operator*(MapExpr::Term a, dim_t b) {
    return a * a.e->num(b);
}
MapExpr::Term operator/(MapExpr::Term a, dim_t b) {
    return a / a.e->num(b);
}
MapExpr::Term operator%(MapExpr::Term a, dim_t b) {
    return a % a.e->num(b);
}
MapExpr::Term operator*(dim_t a, MapExpr::Term b) {
    return b.e->num(a) * b;
}

void MapExpr::require_range(Term x, Term lo, Term hi) {
    guards_.push_back({x.id, lo.id, hi.id, -1});
}

void MapExpr::require_below(Term x, Term hi) {
    guards_.push_back({x.id, -1, hi.id, -1});
}

void MapExpr::require_divisible(Term x, Term k) {
    const Node& n = nodes_[static_cast<std::size_t>(k.id)];
    if (n.op != Op::Const || n.value <= 0)
        throw Error("index map expression: divisibility is by a positive constant");
    // Divisibility by 1 always holds: no guard (a stride of 1 inserts no zeros).
    if (n.value == 1) return;
    guards_.push_back({x.id, -1, -1, k.id});
}

void MapExpr::set_image(std::vector<Term> image) {
    image_.clear();
    for (const Term& t : image) image_.push_back(t.id);
}

bool MapExpr::eval(const dim_t* coord, dim_t* v) const {
    const std::size_t n = nodes_.size();
    for (std::size_t i = 0; i < n; ++i) v[i] = apply(nodes_[i], coord, v);
    for (const Guard& g : guards_)
        if (!holds(g, v)) return false;
    return true;
}

dim_t MapExpr::linear(const dim_t* coord, const std::vector<dim_t>& dims) const {
    dim_t v[kMaxNodes];
    if (!eval(coord, v)) return -1;
    dim_t lin = 0;
    for (std::size_t i = 0; i < image_.size(); ++i) {
        const dim_t x = v[image_[i]];
        // Never an index outside the other shape, whatever the expression: an execution reads and
        // writes memory by this index.
        if (x < 0 || x >= dims[i]) return -1;
        lin = lin * dims[i] + x;
    }
    return lin;
}

void MapExpr::line_images(const dim_t* coord, int axis, dim_t count, const std::vector<dim_t>& dims,
                          dim_t* out) const {
    if (count <= 0) return;
    if (axis < 0 || axis >= this->rank())
        throw Error("index map expression: line axis " + std::to_string(axis) + " outside rank " +
                    std::to_string(this->rank()));
    // Bounds of the per-line tables below; a larger expression is evaluated element by element.
    constexpr std::size_t kMaxGuards = 64, kMaxImage = 16;
    const std::size_t rank = image_.size();
    if (guards_.size() > kMaxGuards || rank > kMaxImage) {
        std::vector<dim_t> c(coord, coord + this->rank());
        for (dim_t j = 0; j < count; ++j, ++c[static_cast<std::size_t>(axis)])
            out[j] = linear(c.data(), dims);
        return;
    }
    const std::uint32_t bit = std::uint32_t{1} << axis;
    const auto varies = [&](int id) {
        return id >= 0 && (nodes_[static_cast<std::size_t>(id)].axes & bit) != 0;
    };
    // The nodes independent of the axis, once; the others listed for each element.
    dim_t v[kMaxNodes];
    int dep[kMaxNodes];
    std::size_t ndep = 0;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].axes & bit)
            dep[ndep++] = static_cast<int>(i);
        else
            v[i] = apply(nodes_[i], coord, v);
    }
    // The guards and image terms independent of the axis, once: one that fails (or falls outside
    // the other shape) makes the whole line padding.
    int dep_guard[kMaxGuards], dep_image[kMaxImage];
    dim_t stride[kMaxImage];
    std::size_t nguard = 0, nimage = 0;
    bool line_ok = true;
    for (std::size_t g = 0; g < guards_.size(); ++g) {
        const Guard& gd = guards_[g];
        if (varies(gd.x) || varies(gd.lo) || varies(gd.hi) || varies(gd.div))
            dep_guard[nguard++] = static_cast<int>(g);
        else
            line_ok = line_ok && holds(gd, v);
    }
    dim_t base = 0, s = 1;
    for (std::size_t i = rank; i-- > 0;) {
        stride[i] = s;
        if (varies(image_[i])) {
            dep_image[nimage++] = static_cast<int>(i);
        } else {
            const dim_t x = v[image_[i]];
            line_ok = line_ok && x >= 0 && x < dims[i];
            base += x * s;
        }
        s *= dims[i];
    }
    if (!line_ok) {
        std::fill(out, out + count, dim_t{-1});
        return;
    }
    const dim_t x0 = coord[axis];
    for (dim_t j = 0; j < count; ++j) {
        // The varying nodes: the axis's own coordinate, then the terms built on it.
        for (std::size_t k = 0; k < ndep; ++k) {
            const auto i = static_cast<std::size_t>(dep[k]);
            const Node& nd = nodes_[i];
            v[i] = nd.op == Op::Var ? x0 + j : apply(nd, coord, v);
        }
        dim_t lin = base;
        for (std::size_t k = 0; k < nguard && lin >= 0; ++k)
            if (!holds(guards_[static_cast<std::size_t>(dep_guard[k])], v)) lin = -1;
        for (std::size_t k = 0; k < nimage && lin >= 0; ++k) {
            const auto i = static_cast<std::size_t>(dep_image[k]);
            const dim_t x = v[image_[i]];
            lin = x < 0 || x >= dims[i] ? -1 : lin + x * stride[i];
        }
        out[j] = lin;
    }
}

// [SECTION] text

std::string MapExpr::text(int id, bool numbers, const dim_t* values, bool top) const {
    const Node& n = nodes_[static_cast<std::size_t>(id)];
    const auto number = [&](dim_t x) {
        const std::string s = std::to_string(x);
        return x < 0 && !top ? "(" + s + ")" : s;
    };
    if (n.op == Op::Var)
        return numbers ? number(values[id]) : axis_names_[static_cast<std::size_t>(n.a)];
    if (n.op == Op::Const) return numbers || n.name.empty() ? number(n.value) : n.name;
    if (!top && !n.name.empty()) return numbers ? number(values[id]) : n.name;
    const auto operand = [&](int o, bool right) {
        const Node& on = nodes_[static_cast<std::size_t>(o)];
        const int po =
            on.op == Op::Var || on.op == Op::Const || !on.name.empty() ? 3 : precedence(on.op);
        const int p = precedence(n.op);
        std::string s = text(o, numbers, values, false);
        const bool wrap = right ? (n.op == Op::Add ? po < p : po <= p) : po < p;
        return wrap ? "(" + s + ")" : s;
    };
    switch (n.op) {
        case Op::Add:
            return operand(n.a, false) + " + " + operand(n.b, true);
        case Op::Sub:
            return operand(n.a, false) + " - " + operand(n.b, true);
        case Op::Mul:
            return operand(n.a, false) + "*" + operand(n.b, true);
        case Op::Div:
            return operand(n.a, false) + "/" + operand(n.b, true);
        case Op::Mod:
            return operand(n.a, false) + " % " + operand(n.b, true);
        default:
            return "?";
    }
}

std::string MapExpr::term_text(int node) const {
    return text(node, false, nullptr, false);
}

std::string MapExpr::guard_text(const Guard& g, bool numbers, const dim_t* values) const {
    const std::string x = text(g.x, numbers, values, false);
    if (g.div >= 0) {
        // A sum is parenthesized before the modulo: "(w - PW) % SW == 0".
        const Node& n = nodes_[static_cast<std::size_t>(g.x)];
        const bool sum = (n.op == Op::Add || n.op == Op::Sub) && n.name.empty();
        return (sum ? "(" + x + ")" : x) + " % " + text(g.div, numbers, values, false) + " == 0";
    }
    std::string s;
    if (g.lo >= 0) s = text(g.lo, numbers, values, false) + " <= ";
    s += x;
    if (g.hi >= 0) s += " < " + text(g.hi, numbers, values, false);
    return s;
}

void MapExpr::used_bindings(int id, std::vector<bool>& seen, std::vector<int>& order) const {
    if (seen[static_cast<std::size_t>(id)]) return;
    seen[static_cast<std::size_t>(id)] = true;
    const Node& n = nodes_[static_cast<std::size_t>(id)];
    if (n.op == Op::Var || n.op == Op::Const) return;
    used_bindings(n.a, seen, order);
    used_bindings(n.b, seen, order);
    if (!n.name.empty()) order.push_back(id);
}

std::string MapExpr::formula(const std::string& domain, const std::string& image,
                             bool reduce) const {
    std::string axes = domain + "(";
    for (int a = 0; a < rank(); ++a)
        axes += (a ? ", " : "") + axis_names_[static_cast<std::size_t>(a)];
    axes += ")";
    std::string img = image + "(";
    for (std::size_t i = 0; i < image_.size(); ++i)
        img += (i ? ", " : "") + text(image_[i], false, nullptr, false);
    img += ")";
    std::string s = reduce ? img + " += " + axes : axes + " <- " + img;
    if (!guards_.empty()) {
        s += reduce ? "   nowhere unless " : "   zero unless ";
        for (std::size_t i = 0; i < guards_.size(); ++i)
            s += (i ? ", " : "") + guard_text(guards_[i], false, nullptr);
    }
    std::vector<bool> seen(nodes_.size(), false);
    std::vector<int> order;
    for (int i : image_) used_bindings(i, seen, order);
    for (const Guard& g : guards_)
        for (int i : {g.x, g.lo, g.hi, g.div})
            if (i >= 0) used_bindings(i, seen, order);
    std::sort(order.begin(), order.end());
    if (!order.empty()) {
        s += "   where ";
        for (std::size_t i = 0; i < order.size(); ++i) {
            const Node& n = nodes_[static_cast<std::size_t>(order[i])];
            s += (i ? ", " : "") + n.name + " = " + text(order[i], false, nullptr, true);
        }
    }
    return s;
}

std::vector<std::string> MapExpr::explain_lines(const dim_t* coord, const dim_t* values) const {
    (void)coord;
    std::vector<bool> seen(nodes_.size(), false);
    std::vector<int> order;
    for (int i : image_) used_bindings(i, seen, order);
    for (const Guard& g : guards_)
        for (int i : {g.x, g.lo, g.hi, g.div})
            if (i >= 0) used_bindings(i, seen, order);
    std::sort(order.begin(), order.end());
    std::vector<std::string> lines;
    for (int id : order) {
        const std::string sym = text(id, false, nullptr, true);
        const std::string num = text(id, true, values, true);
        std::string l = nodes_[static_cast<std::size_t>(id)].name + " = " + sym;
        if (num != sym) l += " = " + num;
        const std::string val = std::to_string(values[id]);
        if (val != num) l += " = " + val;
        lines.push_back(l);
    }
    for (const Guard& g : guards_) {
        const dim_t x = values[g.x];
        const bool ok = (g.div < 0 || floor_mod(x, values[g.div]) == 0) &&
                        (g.lo < 0 || x >= values[g.lo]) && (g.hi < 0 || x < values[g.hi]);
        lines.push_back(guard_text(g, false, nullptr) + ": " + guard_text(g, true, values) +
                        (ok ? " holds" : " fails: a padding zero"));
    }
    return lines;
}

// [SECTION] composition

MapExpr MapExpr::after(const MapExpr& inner) const {
    if (inner.image_rank() != rank())
        throw Error("index map expression: composing a map of rank " + std::to_string(rank()) +
                    " after one whose image has rank " + std::to_string(inner.image_rank()));
    MapExpr r = inner;
    // Names already taken by the inner expression: its axes, bindings and symbols (a symbol of
    // the same name and value is the same constant and stays shared).
    const auto taken = [&r](const std::string& name, const Node* as_const) {
        for (const auto& a : r.axis_names_)
            if (a == name) return true;
        for (const Node& n : r.nodes_) {
            if (n.name != name) continue;
            if (as_const && n.op == Op::Const && n.value == as_const->value) continue;
            return true;
        }
        return false;
    };
    std::vector<int> map(nodes_.size(), -1);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Node& n = nodes_[i];
        if (n.op == Op::Var) {
            map[i] = inner.image_[static_cast<std::size_t>(n.a)];
            continue;
        }
        std::string name = n.name;
        while (!name.empty() && taken(name, n.op == Op::Const ? &n : nullptr)) name += "'";
        if (n.op == Op::Const) {
            map[i] = name.empty() ? r.num(n.value).id : r.sym(name, n.value).id;
            continue;
        }
        map[i] =
            r.binary(n.op, map[static_cast<std::size_t>(n.a)], map[static_cast<std::size_t>(n.b)]);
        if (!name.empty()) r.let(name, {&r, map[i]});
    }
    for (const Guard& g : guards_) {
        const auto m = [&map](int x) { return x < 0 ? -1 : map[static_cast<std::size_t>(x)]; };
        const Guard ng{m(g.x), m(g.lo), m(g.hi), m(g.div)};
        // A divisibility by 1 (after folding) always holds.
        if (ng.div >= 0 && r.nodes_[static_cast<std::size_t>(ng.div)].value == 1) continue;
        r.guards_.push_back(ng);
    }
    r.image_.clear();
    for (int i : image_) r.image_.push_back(map[static_cast<std::size_t>(i)]);
    return r;
}

}  // namespace convlab
