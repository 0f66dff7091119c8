// MapExpr: an index map written as an expression over integer coordinates, so that one value
// gives the map's execution (an interpreter), its formula as text, that text with the numbers of
// one coordinate filled in, and its composition with another map.
//
// The language (in the spirit of CuTe's shape:stride layouts, plus what convolution needs):
//   - terms: the domain's coordinates (named by its axes), integer constants (optionally named by
//     a symbol such as "C0" or "s", printed by name and evaluated by value), +, -, *, and floor
//     division and modulo by a constant;
//   - bindings: any term may be given a name ("oh = col / OW"), printed once as a definition;
//   - guards: predicates that yield a padding zero when they fail: lo <= x < hi, x % k == 0;
//   - the image: one term per axis of the other shape.
// A gather reads src(image) into each destination, or 0 when a guard fails; a reduce (col2im, the
// transposed gather) adds each source into dst(image), or nowhere when a guard fails.
//
// Terms are kept in a program of nodes (each node reads earlier ones), so shared sub-terms are
// computed once and evaluation is one pass over an array, with no allocation per element.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convlab/tensor.hpp"

namespace convlab {

class MapExpr {
  public:
    enum class Op : std::uint8_t { Var, Const, Add, Sub, Mul, Div, Mod };
    struct Node {
        Op op;
        int a = -1, b = -1;  // operands (node ids); Var: a = axis
        dim_t value = 0;     // Const
        std::string name;    // Const: its symbol; other ops: the binding's name; "" for none
        // The domain axes the node's value depends on (bit a: axis a), so that an enumeration
        // along one axis evaluates the nodes that do not depend on it once per line.
        std::uint32_t axes = 0;
    };
    // lo <= x < hi (lo or hi -1: that side unchecked), or x % div == 0 when div > 0.
    struct Guard {
        int x = -1, lo = -1, hi = -1;
        int div = -1;
    };

    // A term: a node of an expression under construction. Arithmetic on terms (and integers)
    // adds nodes to the expression they belong to.
    struct Term {
        MapExpr* e = nullptr;
        int id = -1;
    };

    // An expression over a domain whose axes have these names (the map's domain shape).
    explicit MapExpr(std::vector<std::string> axis_names);

    Term var(int axis);
    Term num(dim_t v);                           // an unnamed constant
    Term sym(const std::string& name, dim_t v);  // a named constant, e.g. sym("C0", 16)
    Term let(const std::string& name, Term t);   // names a term (a binding)
    // Guards: the image is a padding zero unless they hold.
    void require_range(Term x, Term lo, Term hi);  // lo <= x < hi
    void require_below(Term x, Term hi);           // x < hi
    void require_divisible(Term x, Term k);        // x % k == 0
    void set_image(std::vector<Term> image);

    int rank() const { return static_cast<int>(axis_names_.size()); }
    int image_rank() const { return static_cast<int>(image_.size()); }
    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<Guard>& guards() const { return guards_; }
    const std::vector<int>& image() const { return image_; }
    const std::vector<std::string>& axis_names() const { return axis_names_; }

    // Evaluates every node for a domain coordinate into `values` (nodes().size() entries);
    // returns false when a guard fails (a padding zero). The image is values[image()[i]].
    bool eval(const dim_t* coord, dim_t* values) const;
    // The image as a linear index of a shape of these dims (row-major), or -1 when a guard fails
    // or the image falls outside the dims.
    dim_t linear(const dim_t* coord, const std::vector<dim_t>& dims) const;
    // linear() of `count` domain elements that differ only along `axis`: coord with coord[axis]
    // + j for j < count (each inside the domain), into out[j]. The nodes, guards and image terms
    // that do not depend on the axis are evaluated once for them all and the rest per element,
    // so that enumerating a map line by line costs a few operations an element rather than the
    // whole program (a ResNet-50 stem's views enumerate tens of millions).
    void line_images(const dim_t* coord, int axis, dim_t count, const std::vector<dim_t>& dims,
                     dim_t* out) const;

    // Text. term_text: a node as a formula, bindings by name, symbols by name.
    std::string term_text(int node) const;
    // The formula of a whole map, e.g. for a gather (domain "dst", image "src")
    //   "dst(n, k, h, w) <- src(n, k, h/s, w/s)   zero unless h % s == 0, w % s == 0"
    // and for a reduce (domain "src", image "dst") "dst(image...) += src(n, g, row, col)  ...",
    // followed by "   where name = term, ..." for the bindings it uses.
    std::string formula(const std::string& domain, const std::string& image, bool reduce) const;
    // The lines of the arithmetic at one coordinate: every binding, symbolic then with the numbers
    // filled in, then its value ("oh = col / OW = 5 / 3 = 1"), and every guard with its verdict
    // ("0 <= ih < IH: 0 <= -1 < 3 fails"). `values` from eval at that coordinate.
    std::vector<std::string> explain_lines(const dim_t* coord, const dim_t* values) const;

    // This expression with another one's image fed in as this one's domain: if `inner` maps a
    // coordinate x of ITS domain to y and this maps y to z, the result maps x to z (guards of both
    // must hold). Bindings and symbols of the two keep their names, primed where they clash.
    MapExpr after(const MapExpr& inner) const;

  private:
    int add(Node n);
    int binary(Op op, int a, int b);
    std::string text(int node, bool numbers, const dim_t* values, bool top) const;
    std::string guard_text(const Guard& g, bool numbers, const dim_t* values) const;
    void used_bindings(int node, std::vector<bool>& seen, std::vector<int>& order) const;

    std::vector<std::string> axis_names_;
    std::vector<Node> nodes_;
    std::vector<Guard> guards_;
    std::vector<int> image_;

    friend Term operator+(Term a, Term b);
    friend Term operator-(Term a, Term b);
    friend Term operator*(Term a, Term b);
    friend Term operator/(Term a, Term b);
    friend Term operator%(Term a, Term b);
};

MapExpr::Term operator+(MapExpr::Term a, MapExpr::Term b);
MapExpr::Term operator-(MapExpr::Term a, MapExpr::Term b);
MapExpr::Term operator*(MapExpr::Term a, MapExpr::Term b);
MapExpr::Term operator/(MapExpr::Term a, MapExpr::Term b);  // floor division by a constant
MapExpr::Term operator%(MapExpr::Term a, MapExpr::Term b);  // floor modulo by a constant
MapExpr::Term operator+(MapExpr::Term a, dim_t b);
MapExpr::Term operator-(MapExpr::Term a, dim_t b);
MapExpr::Term operator*(MapExpr::Term a, dim_t b);
MapExpr::Term operator/(MapExpr::Term a, dim_t b);
MapExpr::Term operator%(MapExpr::Term a, dim_t b);
MapExpr::Term operator*(dim_t a, MapExpr::Term b);

}  // namespace convlab
