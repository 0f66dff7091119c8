// IndexMap: every data movement of the engine (im2col, col2im, zero insertion, pad/crop,
// FlipRot, TNC, layout packing ...) as a value, defined once. The engine executes it; the app
// enumerates the same value step by step to animate it, so a picture cannot disagree with the
// computation.
//
// A map relates elements of a source shape and a destination shape through one function defined
// on its *domain*:
//   Gather: domain = destination. fn(dst) = linear source index, or kZero: dst = src[fn(dst)] or 0.
//           Every destination element is written exactly once.
//   Reduce: domain = source.      fn(src) = linear destination index, or kNone: dst[fn(src)] +=
//   src.
//           Destinations start at zero and sum every source that maps to them (col2im).
// Linear indices are logical row-major indices of the shapes (not storage offsets); execution on
// tensors goes through their layouts.
//
// transpose(gather) is the reduce map with the same function: col2im == transpose(im2col).
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "convlab/map_expr.hpp"
#include "convlab/tensor.hpp"

namespace convlab {

struct Shape {
    std::vector<dim_t> dims;
    std::vector<std::string> names;  // one per dim, e.g. {"n","c","h","w"}
    dim_t numel() const;
    int rank() const { return static_cast<int>(dims.size()); }
    void coord_of(dim_t linear, std::span<dim_t> coord) const;
    dim_t linear_of(std::span<const dim_t> coord) const;
    std::string str() const;  // "(n=2,c=3,h=4,w=5)"
    bool operator==(const Shape&) const = default;
};

// Step granularity for animation and step-wise execution.
enum class Granularity {
    Element,  // one domain element a step
    Line,     // all domain elements that differ only along line_axis (a column of im2col's matrix)
    Tile,     // kTileLines consecutive lines along the next walked axis, never crossing an index
              // of the axes outside it: 16 columns of im2col's matrix (a GEMM panel), one
              // 16 x C0 fractal of FRACTAL_Z
    Whole,    // everything in one step
};
const char* granularity_name(Granularity g);
Granularity parse_granularity(std::string_view s);  // element|line|tile|whole; throws Error

// Lines per Tile step: the edge of a DaVinci fractal (N0 = 16).
inline constexpr dim_t kTileLines = 16;

// Steps of a walk over n elements (row-major over axes ..., mid, line: `line` elements per line,
// `mid` lines per index of the outer axes; n a multiple of line * mid) and the element positions
// [begin, end) of one step (clamped; an empty range outside the steps). Shared by IndexMap and
// the app's views, so both cut the same steps.
dim_t walk_num_steps(Granularity g, dim_t n, dim_t line, dim_t mid);
void walk_step_span(Granularity g, dim_t step, dim_t n, dim_t line, dim_t mid, dim_t& begin,
                    dim_t& end);

class IndexMap {
  public:
    enum class Kind { Gather, Reduce };
    static constexpr dim_t kZero = -1;  // gather: this destination is a padding zero
    static constexpr dim_t kNone = -1;  // reduce: this source contributes nowhere
    // fn receives a coordinate of the domain (rank = domain rank) and returns a linear index of
    // the other shape, or -1.
    using Fn = std::function<dim_t(const dim_t* domain_coord)>;

    IndexMap(std::string name, Kind kind, Shape src, Shape dst, Fn fn, int line_axis);
    // A map written as an expression (map_expr.hpp) over its domain, whose image is a coordinate
    // of the other shape: executed by the expression's interpreter, printable and composable.
    IndexMap(std::string name, Kind kind, Shape src, Shape dst, MapExpr expr, int line_axis);

    const std::string& name() const { return name_; }
    Kind kind() const { return kind_; }
    const Shape& src() const { return src_; }
    const Shape& dst() const { return dst_; }
    const Shape& domain() const { return kind_ == Kind::Gather ? dst_ : src_; }
    const Shape& codomain() const { return kind_ == Kind::Gather ? src_ : dst_; }
    int line_axis() const { return line_axis_; }
    // Extent of the axis walked just outside line_axis (1 for a rank-1 domain): lines per Tile
    // block.
    dim_t mid_extent() const;

    // The image of one domain element (linear index), or -1.
    dim_t map(dim_t domain_linear) const;
    dim_t map_coord(const dim_t* domain_coord) const { return fn_(domain_coord); }

    // The images of domain elements [begin, end) in row-major domain order, written to out[0 ..
    // end - begin): a gather's source linear index per destination (kZero for a padding zero), a
    // reduce's destination per source (kNone). The whole range is the map's index array, shaped
    // like the domain (dst = src.ravel()[index] for a gather); a range at a time keeps memory
    // constant however large the map.
    void images(dim_t begin, dim_t end, dim_t* out) const;
    // One domain element's pair as dump writes its line (no newline): "dst(n=0,c=1,h=2) <-
    // src(n=0,c=1,h=1)", "dst(...) <- 0", "dst(...) += src(...)" or "(unused) src(...)".
    std::string pair_text(dim_t domain_linear) const;

    // Generic executor on dense row-major fp32 buffers of src().numel() and dst().numel().
    void execute(const float* src, float* dst) const;
    // Generic executor on tensors of any layout/dtype whose dims equal src()/dst() dims.
    void execute(const Tensor& src, Tensor& dst) const;

    // Deterministic enumeration. Steps follow the domain in row-major order with line_axis moved
    // innermost; Element steps walk that same order one element at a time.
    dim_t num_steps(Granularity g) const;
    // Calls f(src_linear, dst_linear) for every pair of step `step` (-1 for a padding zero on the
    // source side of a gather / no destination of a reduce).
    void for_each_in_step(Granularity g, dim_t step,
                          const std::function<void(dim_t src, dim_t dst)>& f) const;
    // Executes steps [0, steps) only (dst must be zeroed by the caller first): what the animation
    // shows after `steps` steps.
    void execute_steps(Granularity g, dim_t steps, const float* src, float* dst) const;

    // Every source a destination reads (gather: at most one; reduce: all that sum into it), and
    // every destination a source feeds. Linear indices; for hover linking and tests.
    std::vector<dim_t> sources_of(dim_t dst_linear) const;
    std::vector<dim_t> destinations_of(dim_t src_linear) const;

    // Text dump, one line a pair in enumeration order: "dst(n=0,c=1,h=2) <- src(n=0,c=1,h=1)",
    // "dst(...) <- 0" for padding zeros, "dst(...) += src(...)" for reductions. limit < 0: all.
    std::string dump(dim_t limit = -1) const;
    // JSON: {"name":..., "kind":..., "src":{dims,names}, "dst":{...}, "pairs":[[src,dst]...]}.
    std::string dump_json(dim_t limit = -1) const;
    // The same, written pair by pair as they are enumerated (constant memory); stops when `out`
    // fails.
    void dump(std::ostream& out, dim_t limit = -1) const;
    void dump_json(std::ostream& out, dim_t limit = -1) const;

    // Same function seen from the other side (gather <-> reduce), under a new name.
    IndexMap transposed(std::string name) const;

    // The expression the map was written as; null for a map given as a plain function.
    const MapExpr* expr() const { return expr_.get(); }
    // Its formula in one line: "im2col: dst(n, g, row, col) <- src(n, g*CG + c, ih, iw)   zero
    // unless 0 <= ih < IH ...   where c = row/KK, ..." ("" for a map without an expression).
    std::string formula() const;
    // The formula at one domain element, with the numbers filled in: the formula, then one line
    // per binding ("oh = col/OW = 5/3 = 1") and guard, then the pair as dump writes it. Throws
    // Error for an element outside the domain or a map without an expression.
    std::string explain(dim_t domain_linear) const;
    // The same as lines without the formula (for a hover): bindings, guards, then the pair.
    std::vector<std::string> explain_lines(dim_t domain_linear) const;

  private:
    std::string name_;
    Kind kind_;
    Shape src_, dst_;
    Fn fn_;
    int line_axis_;
    std::shared_ptr<const MapExpr> expr_;
    // Order in which domain axes are walked, outermost first (line_axis last).
    std::vector<int> walk_order() const;
    dim_t domain_linear_at(dim_t walk, std::vector<dim_t>& coord) const;
    void line_images(const dim_t* coord, int axis, dim_t count, dim_t* out) const;
};

// second(first(x)) for two gathers: first maps A -> B, second maps B -> C; the result maps A -> C
// (a destination of C reads the A element that its B source read, or zero). When both are
// expressions the result is one expression (second's image fed into first's terms), printable as
// one formula; otherwise a function calling both.
IndexMap compose(const IndexMap& second, const IndexMap& first, std::string name);

}  // namespace convlab
