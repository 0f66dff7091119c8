// Internal to the view builders (model/views/*.cpp) and the model: generated data, panel
// shapes and roles, the pieces of the hover formulas and the Builder a view is built with.
#pragma once

#include <atomic>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/tensor.hpp"
#include "model/model.hpp"

namespace convlab::app {

// Largest number of cells a view may hold (all panels): the ResNet-50 layers fit.
constexpr dim_t kMaxViewCells = dim_t{24} << 20;

// A panel's tile extent in cells, its padding included (geometry.cpp).
double tile_w(const Panel& p);
double tile_h(const Panel& p);

// splitmix64: the same stream for the same (seed, salt).
std::vector<float> make_data(dim_t n, DataKind kind, std::uint64_t seed, std::uint64_t salt);

Tensor to_tensor(const std::vector<float>& v, std::vector<dim_t> dims);

std::vector<float> from_tensor(const Tensor& t);

std::vector<float> run_map(const IndexMap& m, const std::vector<float>& src);

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

std::string check_line(const std::string& what, double diff, double tol = 1e-4);

std::vector<dim_t> coords(const Shape& s, dim_t linear);

std::vector<std::string> spatial(int nd, const std::string& prefix = "");

Shape act_shape(const Problem& p, bool out, const char* c);

Shape wei_shape(const Problem& p);

// Roles of an activation (n, c, spatial...): images down, channels (and depth) across, h rows,
// w columns; 1-D: channels are rows.
std::vector<Role> act_roles(int rank);

// Roles of weights (k, c, kernel...): the K x C grid of kernels; 1x1 kernels: the K x C matrix
// (a grid of one-cell tiles would be half gaps).
std::vector<Role> wei_roles(const Shape& s);

// NC1HWC0-like physical shapes (n, [d,] c1, [h,] w, c0): one tile per (n, d, c1), the spatial
// positions as rows and the C0 lanes as columns.
// Beyond 4096 positions (64 x 64) the columns of w go across too, each w a group of C0 lanes: a
// ResNet-50 stem's 224 x 224 positions as one column of rows was 50176 cells tall, past what a
// texture holds and a canvas fits (conv1's fractal and tnc views drew nothing).
std::vector<Role> blocked_act_roles(const Shape& s);

// FRACTAL_Z (rows, n1, 16, c0): one 16 x C0 fractal per (row, n1), the rows across.
std::vector<Role> fractal_roles();

Panel make_panel(std::string name, std::string title, Shape s, std::vector<Role> roles,
                 std::vector<float> values);

// Padding lanes of a gather destination: the cells the map fills with zero.
std::vector<std::uint8_t> zero_lanes(const Link& l);

std::string fmt(const char* f, double a);

// 102400000 -> "102,400,000" (beyond 2^53, "1.2e+20").
std::string grouped(double v);

// The engine algorithm a view's result is checked against: the direct loops on a lesson's
// layer, a GEMM-based one (not the view's own) past 50 MFLOP (the direct loops took seconds of a
// ResNet-50 layer's build, longer than the rest of it).
const char* check_algorithm(const Problem& p, Pass pass);

// The generic formula: the hovered cell, its value, and for every link its partner(s).
std::string generic_formula(const ViewModel& v, int panel, dim_t linear, DataKind d);
// At most this many terms of a sum are written out, then "+ ...".
constexpr std::size_t kMaxTerms = 8;
std::string join_terms(const std::vector<std::string>& t, const char* sep = " + ");

// "B*(4,0)": a panel's name and its coordinates from dim `first` on, without the dim names.
std::string short_name(const Panel& p, dim_t linear, std::size_t first = 0);

std::string value_of(const Panel& p, dim_t linear, DataKind d);

// Values of a sum's terms: "3 + 5 - 0.25" (a negative term subtracted), capped as join_terms.
std::string join_values(const std::vector<std::string>& v);

// A factor of a product: "-0.25" in parentheses.
std::string factor(const std::string& v);

// Where im2col's column-matrix cell (n, g, row, col) reads: *ci_out receives its channel within
// the group, padded[i] its padded position (input position + pad_begin) per axis.
void im2col_position(const Problem& p, const std::vector<dim_t>& c, dim_t* ci_out, dim_t* padded);

// A cell's hover from its links' map expressions (expression_formula), or the generic formula
// for a cell no link touches.
std::string map_formula(const ViewModel& v, int panel, dim_t linear, DataKind d);

// B* = W^T dY per image and group: B*(n, g, (c, k...), col) = sum_kk W(g*Kg+kk, c, k...) *
// dY(n, g*Kg+kk, col).
std::vector<float> wt_dy(const Problem& p, const std::vector<float>& w,
                         const std::vector<float>& dy);

struct Builder {
    const ViewRequest& r;
    const Problem& p;
    std::atomic<float>* progress;
    ViewModel v;
    dim_t cells = 0;
    int maps_total = 1, maps_done = 0;

    // Refuses a view too large to show from its panels' shapes (name, shape), before anything
    // is allocated: counted in double, so absurd sizes cannot overflow.
    void plan(std::initializer_list<std::pair<const char*, Shape>> panels) const {
        double total = 0;
        std::string parts;
        for (const auto& [name, shape] : panels) {
            double n = 1;
            for (dim_t d : shape.dims) n *= static_cast<double>(d);
            total += n;
            parts += (parts.empty() ? "" : " + ") + std::string(name) + " " + grouped(n);
        }
        if (total > static_cast<double>(kMaxViewCells))
            throw Error("too large to show: " + grouped(total) + " cells (" + parts +
                        "), more than the " + grouped(static_cast<double>(kMaxViewCells)) +
                        " the app draws; choose a smaller problem");
    }
    int add(Panel panel) {
        cells += panel.shape.numel();
        if (cells > kMaxViewCells)  // (plan() refused it already unless a panel was not planned)
            throw Error("too large to show: " + grouped(static_cast<double>(cells)) +
                        " cells, more than the " + grouped(static_cast<double>(kMaxViewCells)) +
                        " the app draws; choose a smaller problem");
        v.panels.push_back(std::move(panel));
        return static_cast<int>(v.panels.size()) - 1;
    }
    int link(IndexMap m, int src, int dst, bool driver) {
        std::atomic<float> sub{0};
        Link l = make_link(std::make_shared<const IndexMap>(std::move(m)), src, dst,
                           progress ? &sub : nullptr);
        ++maps_done;
        if (progress)
            progress->store(static_cast<float>(maps_done) / static_cast<float>(maps_total));
        v.links.push_back(std::move(l));
        const int id = static_cast<int>(v.links.size()) - 1;
        if (driver) v.drivers.push_back({id, -1});
        return id;
    }
    std::vector<float> data(const Shape& s, std::uint64_t salt) const {
        // A lesson's own inputs when they fit (salt 1 src, 2 wei, 3 diff_dst).
        const std::vector<float>* given = salt == 1 ? &r.src : salt == 2 ? &r.wei : &r.diff_dst;
        if (salt <= 3 && static_cast<dim_t>(given->size()) == s.numel()) return *given;
        return make_data(s.numel(), r.data, r.seed, salt);
    }
};

// A relation's result panel is walked row-major: its last axis is the line.
dim_t mid_extent(const Panel& p);

// The view builders (model/views/NAME.cpp), by build_view.
void build_im2col(Builder& b);
void build_col2im(Builder& b);
void build_stride(Builder& b);
void build_fliprot(Builder& b);
void build_fractal(Builder& b);
void build_tnc(Builder& b);
void build_winograd(Builder& b);
void build_weight_grad(Builder& b);

}  // namespace convlab::app
