#include "convlab/index_map.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

namespace convlab {

// [SECTION] Shape

dim_t Shape::numel() const {
    return product(dims);
}

void Shape::coord_of(dim_t linear, std::span<dim_t> coord) const {
    for (int i = rank() - 1; i >= 0; --i) {
        coord[i] = linear % dims[i];
        linear /= dims[i];
    }
}

dim_t Shape::linear_of(std::span<const dim_t> coord) const {
    dim_t l = 0;
    for (int i = 0; i < rank(); ++i) l = l * dims[i] + coord[i];
    return l;
}

static std::string coord_str(const Shape& s, std::span<const dim_t> c) {
    std::ostringstream o;
    o << "(";
    for (int i = 0; i < s.rank(); ++i) o << (i ? "," : "") << s.names[i] << "=" << c[i];
    o << ")";
    return o.str();
}

std::string Shape::str() const {
    return coord_str(*this, dims);
}

const char* granularity_name(Granularity g) {
    switch (g) {
        case Granularity::Element:
            return "element";
        case Granularity::Line:
            return "line";
        case Granularity::Tile:
            return "tile";
        case Granularity::Whole:
            return "whole";
    }
    return "?";
}

Granularity parse_granularity(std::string_view s) {
    if (s == "element") return Granularity::Element;
    if (s == "line" || s == "row" || s == "column") return Granularity::Line;
    if (s == "tile") return Granularity::Tile;
    if (s == "whole") return Granularity::Whole;
    throw Error("step granularity '" + std::string(s) +
                "': expected element, line (row, column), tile or whole");
}

dim_t walk_num_steps(Granularity g, dim_t n, dim_t line, dim_t mid) {
    if (n <= 0 || line <= 0) return 0;
    switch (g) {
        case Granularity::Element:
            return n;
        case Granularity::Line:
            return (n + line - 1) / line;
        case Granularity::Tile: {
            const dim_t lines = (n + line - 1) / line;
            mid = std::max(mid, dim_t{1});
            const dim_t blocks = (mid + kTileLines - 1) / kTileLines;
            return (lines + mid - 1) / mid * blocks;
        }
        case Granularity::Whole:
            return 1;
    }
    return 0;
}

void walk_step_span(Granularity g, dim_t step, dim_t n, dim_t line, dim_t mid, dim_t& begin,
                    dim_t& end) {
    begin = end = 0;
    if (step < 0 || step >= walk_num_steps(g, n, line, mid)) return;
    switch (g) {
        case Granularity::Element:
            begin = step;
            end = step + 1;
            break;
        case Granularity::Line:
            begin = step * line;
            end = begin + line;
            break;
        case Granularity::Tile: {
            mid = std::max(mid, dim_t{1});
            const dim_t blocks = (mid + kTileLines - 1) / kTileLines;
            const dim_t outer = step / blocks, b = step % blocks;
            const dim_t first = b * kTileLines, last = std::min(mid, first + kTileLines);
            begin = (outer * mid + first) * line;
            end = (outer * mid + last) * line;
            break;
        }
        case Granularity::Whole:
            end = n;
            break;
    }
    end = std::min(end, n);
}

// [SECTION] IndexMap

IndexMap::IndexMap(std::string name, Kind kind, Shape src, Shape dst, Fn fn, int line_axis)
    : name_(std::move(name)),
      kind_(kind),
      src_(std::move(src)),
      dst_(std::move(dst)),
      fn_(std::move(fn)),
      line_axis_(line_axis) {
    if (src_.names.size() != src_.dims.size() || dst_.names.size() != dst_.dims.size())
        throw Error("index map " + name_ + ": one name per dim is required");
    if (line_axis_ < 0 || line_axis_ >= domain().rank())
        throw Error("index map " + name_ + ": line_axis out of range");
}

IndexMap::IndexMap(std::string name, Kind kind, Shape src, Shape dst, MapExpr expr, int line_axis)
    : IndexMap(std::move(name), kind, std::move(src), std::move(dst), Fn{}, line_axis) {
    const Shape& dom = domain();
    const Shape& img = codomain();
    if (expr.rank() != dom.rank() || expr.image_rank() != img.rank())
        throw Error("index map " + name_ + ": its expression maps rank " +
                    std::to_string(expr.rank()) + " to rank " + std::to_string(expr.image_rank()) +
                    ", the map " + dom.str() + " to " + img.str());
    expr_ = std::make_shared<const MapExpr>(std::move(expr));
    // The interpreter is the map's function: enumeration and execution read the expression.
    fn_ = [e = expr_, dims = img.dims](const dim_t* c) { return e->linear(c, dims); };
}

std::string IndexMap::formula() const {
    if (!expr_) return "";
    const bool gather = kind_ == Kind::Gather;
    return name_ + ": " + expr_->formula(gather ? "dst" : "src", gather ? "src" : "dst", !gather);
}

std::vector<std::string> IndexMap::explain_lines(dim_t domain_linear) const {
    if (!expr_) throw Error("map " + name_ + " is not written as an expression: no formula");
    const std::string pair = pair_text(domain_linear);  // checks the element is in the domain
    std::vector<dim_t> c(static_cast<std::size_t>(domain().rank()));
    domain().coord_of(domain_linear, c);
    std::vector<dim_t> values(expr_->nodes().size());
    expr_->eval(c.data(), values.data());
    std::vector<std::string> lines = expr_->explain_lines(c.data(), values.data());
    lines.push_back(pair);
    return lines;
}

std::string IndexMap::explain(dim_t domain_linear) const {
    const std::vector<std::string> lines = explain_lines(domain_linear);
    std::vector<dim_t> c(static_cast<std::size_t>(domain().rank()));
    domain().coord_of(domain_linear, c);
    std::string s = formula() + "\nat " + (kind_ == Kind::Gather ? "dst" : "src") +
                    coord_str(domain(), c) + ":\n";
    for (const auto& l : lines) s += "  " + l + "\n";
    return s;
}

dim_t IndexMap::map(dim_t domain_linear) const {
    std::vector<dim_t> c(static_cast<std::size_t>(domain().rank()));
    domain().coord_of(domain_linear, c);
    return fn_(c.data());
}

// Images of `count` domain elements from coordinate c along `axis` (c[axis] + j): an
// expression's line_images (what does not vary along the axis evaluated once), else the function
// element by element.
void IndexMap::line_images(const dim_t* c, int axis, dim_t count, dim_t* out) const {
    if (expr_) {
        expr_->line_images(c, axis, count, codomain().dims, out);
        return;
    }
    std::vector<dim_t> t(c, c + domain().rank());
    for (dim_t j = 0; j < count; ++j, ++t[static_cast<std::size_t>(axis)]) out[j] = fn_(t.data());
}

void IndexMap::images(dim_t begin, dim_t end, dim_t* out) const {
    const Shape& dom = domain();
    begin = std::max(begin, dim_t{0});
    end = std::min(end, dom.numel());
    if (begin >= end) return;
    // The first coordinate by division, then a line (the last axis) at a time, carried.
    std::vector<dim_t> c(static_cast<std::size_t>(dom.rank()));
    dom.coord_of(begin, c);
    const int last = dom.rank() - 1;
    for (dim_t i = begin; i < end;) {
        const dim_t count = std::min(end - i, dom.dims[last] - c[last]);
        line_images(c.data(), last, count, out + (i - begin));
        i += count;
        c[last] += count;
        for (int a = last; a >= 0 && c[a] == dom.dims[a]; --a) {
            c[a] = 0;
            if (a > 0) ++c[a - 1];
        }
    }
}

void IndexMap::execute(const float* src, float* dst) const {
    const dim_t n = domain().numel();
    if (kind_ == Kind::Reduce) std::fill(dst, dst + dst_.numel(), 0.0f);
    // The domain in row-major order, a block of images at a time (images walks it by lines).
    constexpr dim_t kBlock = 1024;
    dim_t img[kBlock];
    for (dim_t b = 0; b < n; b += kBlock) {
        const dim_t count = std::min(kBlock, n - b);
        images(b, b + count, img);
        for (dim_t k = 0; k < count; ++k) {
            const dim_t j = img[k], i = b + k;
            if (kind_ == Kind::Gather)
                dst[i] = j < 0 ? 0.0f : src[j];
            else if (j >= 0)
                dst[j] += src[i];
        }
    }
}

void IndexMap::execute(const Tensor& src, Tensor& dst) const {
    if (src.dims() != src_.dims)
        throw Error("map " + name_ + ": source " + src.shape_str() + " != " + dims_str(src_.dims));
    if (dst.dims() != dst_.dims)
        throw Error("map " + name_ + ": destination " + dst.shape_str() +
                    " != " + dims_str(dst_.dims));
    std::vector<dim_t> dc(static_cast<std::size_t>(dst_.rank()));
    std::vector<dim_t> sc(static_cast<std::size_t>(src_.rank()));
    if (kind_ == Kind::Reduce) {
        // Accumulate in fp32 and round into the destination's dtype once (fp16/bf16 storage).
        std::vector<float> acc(static_cast<std::size_t>(dst_.numel()), 0.0f);
        for (dim_t i = 0; i < src_.numel(); ++i) {
            src_.coord_of(i, sc);
            const dim_t j = fn_(sc.data());
            if (j >= 0) acc[j] += src.get(sc);
        }
        for (dim_t i = 0; i < dst_.numel(); ++i) {
            dst_.coord_of(i, dc);
            dst.set(dc, acc[i]);
        }
        return;
    }
    for (dim_t i = 0; i < dst_.numel(); ++i) {
        dst_.coord_of(i, dc);
        const dim_t j = fn_(dc.data());
        float v = 0.0f;
        if (j >= 0) {
            src_.coord_of(j, sc);
            v = src.get(sc);
        }
        dst.set(dc, v);
    }
}

std::vector<int> IndexMap::walk_order() const {
    std::vector<int> order;
    for (int a = 0; a < domain().rank(); ++a)
        if (a != line_axis_) order.push_back(a);
    order.push_back(line_axis_);
    return order;
}

dim_t IndexMap::mid_extent() const {
    const auto order = walk_order();
    return order.size() < 2 ? 1 : domain().dims[static_cast<std::size_t>(order[order.size() - 2])];
}

dim_t IndexMap::num_steps(Granularity g) const {
    return walk_num_steps(g, domain().numel(), domain().dims[line_axis_], mid_extent());
}

// The domain element at position `walk` of the walk order, as a linear domain index; fills coord.
dim_t IndexMap::domain_linear_at(dim_t walk, std::vector<dim_t>& coord) const {
    const Shape& dom = domain();
    const auto order = walk_order();
    for (int k = static_cast<int>(order.size()) - 1; k >= 0; --k) {
        const int a = order[k];
        coord[a] = walk % dom.dims[a];
        walk /= dom.dims[a];
    }
    return dom.linear_of(coord);
}

void IndexMap::for_each_in_step(Granularity g, dim_t step,
                                const std::function<void(dim_t, dim_t)>& f) const {
    const Shape& dom = domain();
    dim_t begin = 0, end = 0;
    walk_step_span(g, step, dom.numel(), dom.dims[line_axis_], mid_extent(), begin, end);
    if (begin >= end) return;
    // The first element's coordinate by division, then the walk carried as an odometer over the
    // walk order with the linear index kept by strides: no division or allocation per element
    // (a view of millions of cells enumerates every one), and the images a line at a time.
    std::vector<dim_t> c(static_cast<std::size_t>(dom.rank()));
    dim_t d = domain_linear_at(begin, c);
    const std::vector<int> order = walk_order();
    std::vector<dim_t> stride(static_cast<std::size_t>(dom.rank()), 1);
    for (int a = dom.rank() - 2; a >= 0; --a)
        stride[static_cast<std::size_t>(a)] =
            stride[static_cast<std::size_t>(a) + 1] * dom.dims[static_cast<std::size_t>(a) + 1];
    // A run along the line axis (at most kBlock elements) at a time: its images in one call.
    constexpr dim_t kBlock = 256;
    dim_t img[kBlock];
    const auto la = static_cast<std::size_t>(line_axis_);
    for (dim_t i = begin; i < end;) {
        const dim_t count = std::min({kBlock, end - i, dom.dims[la] - c[la]});
        line_images(c.data(), line_axis_, count, img);
        for (dim_t k = 0; k < count; ++k, d += stride[la]) {
            if (kind_ == Kind::Gather)
                f(img[k], d);
            else
                f(d, img[k]);
        }
        i += count;
        c[la] += count;
        if (c[la] < dom.dims[la]) continue;
        // The line is done: back to its start, then the odometer over the outer walk axes.
        c[la] = 0;
        d -= dom.dims[la] * stride[la];
        for (int k = static_cast<int>(order.size()) - 2; k >= 0; --k) {
            const auto a = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
            if (++c[a] < dom.dims[a]) {
                d += stride[a];
                break;
            }
            d -= (dom.dims[a] - 1) * stride[a];
            c[a] = 0;
        }
    }
}

void IndexMap::execute_steps(Granularity g, dim_t steps, const float* src, float* dst) const {
    steps = std::min(steps, num_steps(g));
    for (dim_t s = 0; s < steps; ++s)
        for_each_in_step(g, s, [&](dim_t si, dim_t di) {
            if (kind_ == Kind::Gather)
                dst[di] = si < 0 ? 0.0f : src[si];
            else if (di >= 0)
                dst[di] += src[si];
        });
}

std::vector<dim_t> IndexMap::sources_of(dim_t dst_linear) const {
    if (kind_ == Kind::Gather) {
        const dim_t s = map(dst_linear);
        return s < 0 ? std::vector<dim_t>{} : std::vector<dim_t>{s};
    }
    std::vector<dim_t> out;
    std::vector<dim_t> c(static_cast<std::size_t>(src_.rank()), 0);
    for (dim_t i = 0; i < src_.numel(); ++i) {
        if (fn_(c.data()) == dst_linear) out.push_back(i);
        for (int a = src_.rank() - 1; a >= 0; --a) {
            if (++c[a] < src_.dims[a]) break;
            c[a] = 0;
        }
    }
    return out;
}

std::vector<dim_t> IndexMap::destinations_of(dim_t src_linear) const {
    if (kind_ == Kind::Reduce) {
        const dim_t d = map(src_linear);
        return d < 0 ? std::vector<dim_t>{} : std::vector<dim_t>{d};
    }
    std::vector<dim_t> out;
    std::vector<dim_t> c(static_cast<std::size_t>(dst_.rank()), 0);
    for (dim_t i = 0; i < dst_.numel(); ++i) {
        if (fn_(c.data()) == src_linear) out.push_back(i);
        for (int a = dst_.rank() - 1; a >= 0; --a) {
            if (++c[a] < dst_.dims[a]) break;
            c[a] = 0;
        }
    }
    return out;
}

// One pair's line of dump (no newline); sc and dc are scratch coordinates of src_ and dst_.
static void write_pair(std::ostream& o, IndexMap::Kind kind, const Shape& src, const Shape& dst,
                       dim_t si, dim_t di, std::vector<dim_t>& sc, std::vector<dim_t>& dc) {
    if (kind == IndexMap::Kind::Gather) {
        dst.coord_of(di, dc);
        o << "dst" << coord_str(dst, dc) << " <- ";
        if (si < 0) {
            o << "0";
        } else {
            src.coord_of(si, sc);
            o << "src" << coord_str(src, sc);
        }
        return;
    }
    src.coord_of(si, sc);
    if (di < 0) {
        o << "(unused) src" << coord_str(src, sc);
    } else {
        dst.coord_of(di, dc);
        o << "dst" << coord_str(dst, dc) << " += src" << coord_str(src, sc);
    }
}

std::string IndexMap::pair_text(dim_t domain_linear) const {
    if (domain_linear < 0 || domain_linear >= domain().numel())
        throw Error("map " + name_ + ": element " + std::to_string(domain_linear) +
                    " is outside its " + (kind_ == Kind::Gather ? "destination " : "source ") +
                    domain().str() + " (" + std::to_string(domain().numel()) + " elements)");
    std::vector<dim_t> sc(static_cast<std::size_t>(src_.rank()));
    std::vector<dim_t> dc(static_cast<std::size_t>(dst_.rank()));
    const dim_t image = map(domain_linear);
    std::ostringstream o;
    if (kind_ == Kind::Gather)
        write_pair(o, kind_, src_, dst_, image, domain_linear, sc, dc);
    else
        write_pair(o, kind_, src_, dst_, domain_linear, image, sc, dc);
    return o.str();
}

// Pairs are written as they are enumerated (constant memory: a map may have billions of pairs),
// and the walk stops as soon as the stream fails (a closed pipe).
void IndexMap::dump(std::ostream& o, dim_t limit) const {
    o << "# map " << name_ << " (" << (kind_ == Kind::Gather ? "gather" : "reduce") << "): src "
      << src_.str() << " -> dst " << dst_.str() << "\n";
    std::vector<dim_t> sc(static_cast<std::size_t>(src_.rank()));
    std::vector<dim_t> dc(static_cast<std::size_t>(dst_.rank()));
    dim_t printed = 0;
    const dim_t steps = num_steps(Granularity::Element);
    for (dim_t s = 0; s < steps && (limit < 0 || printed < limit) && o; ++s, ++printed)
        for_each_in_step(Granularity::Element, s, [&](dim_t si, dim_t di) {
            write_pair(o, kind_, src_, dst_, si, di, sc, dc);
            o << "\n";
        });
    if (limit >= 0 && printed < steps) o << "# ... " << (steps - printed) << " more\n";
}

std::string IndexMap::dump(dim_t limit) const {
    std::ostringstream o;
    dump(o, limit);
    return o.str();
}

void IndexMap::dump_json(std::ostream& o, dim_t limit) const {
    using Json = nlohmann::ordered_json;  // members in the order written
    const auto shape = [](const Shape& s) {
        Json dims = Json::array(), names = Json::array();
        for (int i = 0; i < s.rank(); ++i) {
            dims.push_back(s.dims[i]);
            names.push_back(s.names[i]);
        }
        return Json{{"dims", std::move(dims)}, {"names", std::move(names)}};
    };
    const Json head{
        {"name", name_},           {"kind", kind_ == Kind::Gather ? "gather" : "reduce"},
        {"src", shape(src_)},      {"dst", shape(dst_)},
        {"line_axis", line_axis_}, {"pairs_total", domain().numel()}};
    // The pairs, integers only, are streamed after the rest: a large map has more of them than
    // fit in memory as one document (and the first ones come at once).
    std::string text = head.dump(-1, ' ', false, Json::error_handler_t::replace);
    text.pop_back();  // its closing brace
    o << text << ",\"pairs\":[";
    const dim_t steps = num_steps(Granularity::Element);
    dim_t n = 0;
    for (dim_t s = 0; s < steps && (limit < 0 || n < limit) && o; ++s, ++n)
        for_each_in_step(Granularity::Element, s, [&](dim_t si, dim_t di) {
            o << (n ? "," : "") << "[" << si << "," << di << "]";
        });
    o << "]}\n";
}

std::string IndexMap::dump_json(dim_t limit) const {
    std::ostringstream o;
    dump_json(o, limit);
    return o.str();
}

IndexMap IndexMap::transposed(std::string name) const {
    // The domain stays the same side; only the kind (and so which side is source) flips.
    const Kind k = kind_ == Kind::Gather ? Kind::Reduce : Kind::Gather;
    if (expr_) return IndexMap(std::move(name), k, dst_, src_, *expr_, line_axis_);
    return IndexMap(std::move(name), k, dst_, src_, fn_, line_axis_);
}

IndexMap compose(const IndexMap& second, const IndexMap& first, std::string name) {
    if (second.kind() != IndexMap::Kind::Gather || first.kind() != IndexMap::Kind::Gather)
        throw Error("compose: both maps must be gathers");
    if (second.src().dims != first.dst().dims)
        throw Error("compose: " + second.name() + " reads " + dims_str(second.src().dims) +
                    " but " + first.name() + " writes " + dims_str(first.dst().dims));
    if (second.expr() && first.expr())
        return IndexMap(std::move(name), IndexMap::Kind::Gather, first.src(), second.dst(),
                        first.expr()->after(*second.expr()), second.line_axis());
    const Shape mid = first.dst();
    auto fn = [second, first, mid](const dim_t* c) -> dim_t {
        const dim_t m = second.map_coord(c);
        if (m < 0) return IndexMap::kZero;
        std::vector<dim_t> mc(static_cast<std::size_t>(mid.rank()));
        mid.coord_of(m, mc);
        return first.map_coord(mc.data());
    };
    return IndexMap(std::move(name), IndexMap::Kind::Gather, first.src(), second.dst(), fn,
                    second.line_axis());
}

}  // namespace convlab
