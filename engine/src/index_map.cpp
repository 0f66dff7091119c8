#include "convlab/index_map.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

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
        case Granularity::Whole:
            return "whole";
    }
    return "?";
}

Granularity parse_granularity(std::string_view s) {
    if (s == "element") return Granularity::Element;
    if (s == "line" || s == "row" || s == "column") return Granularity::Line;
    if (s == "whole") return Granularity::Whole;
    throw Error("step granularity '" + std::string(s) + "': expected element, line or whole");
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

dim_t IndexMap::map(dim_t domain_linear) const {
    std::vector<dim_t> c(static_cast<std::size_t>(domain().rank()));
    domain().coord_of(domain_linear, c);
    return fn_(c.data());
}

void IndexMap::execute(const float* src, float* dst) const {
    const Shape& dom = domain();
    std::vector<dim_t> c(static_cast<std::size_t>(dom.rank()), 0);
    const dim_t n = dom.numel();
    if (kind_ == Kind::Reduce) std::fill(dst, dst + dst_.numel(), 0.0f);
    // Walk the domain in row-major order, carrying the coordinate instead of dividing.
    for (dim_t i = 0; i < n; ++i) {
        const dim_t j = fn_(c.data());
        if (kind_ == Kind::Gather)
            dst[i] = j < 0 ? 0.0f : src[j];
        else if (j >= 0)
            dst[j] += src[i];
        for (int a = dom.rank() - 1; a >= 0; --a) {
            if (++c[a] < dom.dims[a]) break;
            c[a] = 0;
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

dim_t IndexMap::num_steps(Granularity g) const {
    const dim_t n = domain().numel();
    switch (g) {
        case Granularity::Element:
            return n;
        case Granularity::Line: {
            const dim_t line = domain().dims[line_axis_];
            return line ? n / line : 0;
        }
        case Granularity::Whole:
            return n ? 1 : 0;
    }
    return 0;
}

// The i-th domain element (in walk order) of step `step`, as a linear domain index; fills coord.
dim_t IndexMap::domain_linear_at(Granularity g, dim_t step, dim_t i,
                                 std::vector<dim_t>& coord) const {
    const Shape& dom = domain();
    dim_t per_step = 1;
    if (g == Granularity::Line) per_step = dom.dims[line_axis_];
    if (g == Granularity::Whole) per_step = dom.numel();
    dim_t walk = step * per_step + i;  // position in walk order
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
    if (step < 0 || step >= num_steps(g)) return;
    const Shape& dom = domain();
    dim_t per_step = 1;
    if (g == Granularity::Line) per_step = dom.dims[line_axis_];
    if (g == Granularity::Whole) per_step = dom.numel();
    std::vector<dim_t> c(static_cast<std::size_t>(dom.rank()));
    for (dim_t i = 0; i < per_step; ++i) {
        const dim_t d = domain_linear_at(g, step, i, c);
        const dim_t o = fn_(c.data());
        if (kind_ == Kind::Gather)
            f(o, d);
        else
            f(d, o);
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

std::string IndexMap::dump(dim_t limit) const {
    std::ostringstream o;
    o << "# map " << name_ << " (" << (kind_ == Kind::Gather ? "gather" : "reduce") << "): src "
      << src_.str() << " -> dst " << dst_.str() << "\n";
    std::vector<dim_t> sc(static_cast<std::size_t>(src_.rank()));
    std::vector<dim_t> dc(static_cast<std::size_t>(dst_.rank()));
    dim_t printed = 0;
    const dim_t steps = num_steps(Granularity::Element);
    for (dim_t s = 0; s < steps && (limit < 0 || printed < limit); ++s, ++printed)
        for_each_in_step(Granularity::Element, s, [&](dim_t si, dim_t di) {
            if (kind_ == Kind::Gather) {
                dst_.coord_of(di, dc);
                o << "dst" << coord_str(dst_, dc) << " <- ";
                if (si < 0) {
                    o << "0\n";
                } else {
                    src_.coord_of(si, sc);
                    o << "src" << coord_str(src_, sc) << "\n";
                }
            } else {
                src_.coord_of(si, sc);
                if (di < 0) {
                    o << "(unused) src" << coord_str(src_, sc) << "\n";
                } else {
                    dst_.coord_of(di, dc);
                    o << "dst" << coord_str(dst_, dc) << " += src" << coord_str(src_, sc) << "\n";
                }
            }
        });
    if (limit >= 0 && printed < steps) o << "# ... " << (steps - printed) << " more\n";
    return o.str();
}

static std::string shape_json(const Shape& s) {
    std::ostringstream o;
    o << "{\"dims\":[";
    for (int i = 0; i < s.rank(); ++i) o << (i ? "," : "") << s.dims[i];
    o << "],\"names\":[";
    for (int i = 0; i < s.rank(); ++i) o << (i ? "," : "") << "\"" << s.names[i] << "\"";
    o << "]}";
    return o.str();
}

std::string IndexMap::dump_json(dim_t limit) const {
    std::ostringstream o;
    o << "{\"name\":\"" << name_ << "\",\"kind\":\""
      << (kind_ == Kind::Gather ? "gather" : "reduce") << "\",\"src\":" << shape_json(src_)
      << ",\"dst\":" << shape_json(dst_) << ",\"line_axis\":" << line_axis_
      << ",\"pairs_total\":" << domain().numel() << ",\"pairs\":[";
    const dim_t steps = num_steps(Granularity::Element);
    dim_t n = 0;
    for (dim_t s = 0; s < steps && (limit < 0 || n < limit); ++s, ++n)
        for_each_in_step(Granularity::Element, s, [&](dim_t si, dim_t di) {
            o << (n ? "," : "") << "[" << si << "," << di << "]";
        });
    o << "]}\n";
    return o.str();
}

IndexMap IndexMap::transposed(std::string name) const {
    // The domain stays the same side; only the kind (and so which side is source) flips.
    const Kind k = kind_ == Kind::Gather ? Kind::Reduce : Kind::Gather;
    return IndexMap(std::move(name), k, dst_, src_, fn_, line_axis_);
}

IndexMap compose(const IndexMap& second, const IndexMap& first, std::string name) {
    if (second.kind() != IndexMap::Kind::Gather || first.kind() != IndexMap::Kind::Gather)
        throw Error("compose: both maps must be gathers");
    if (second.src().dims != first.dst().dims)
        throw Error("compose: " + second.name() + " reads " + dims_str(second.src().dims) +
                    " but " + first.name() + " writes " + dims_str(first.dst().dims));
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
