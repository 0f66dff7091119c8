// What the view builders share (view_builder.hpp): the engine algorithm a view is
// checked against and the pieces of the hover formulas.
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
#include "model/view_generic.hpp"
#include "model/views/view_builder.hpp"

namespace convlab::app {

// The engine algorithm a view's result is checked against: the direct loops on a lesson's
// layer, a GEMM-based one (not the view's own) past 50 MFLOP (the direct loops took seconds of a
// ResNet-50 layer's build, longer than the rest of it).
const char* check_algorithm(const Problem& p, Pass pass) {
    if (p.flops() <= 5e7) return "direct";
    // (Another algorithm than the views': dW is computed by im2col_gemm.)
    return pass == Pass::BackwardData ? "col2im" : "implicit_gemm";
}

// The generic formula: the hovered cell, its value, and for every link its partner(s).
std::string generic_formula(const ViewModel& v, int panel, dim_t linear, DataKind d) {
    const Panel& pn = v.panels[static_cast<std::size_t>(panel)];
    std::string s = cell_name(pn, linear) + " = " +
                    format_value(pn.values[static_cast<std::size_t>(linear)], d);
    for (const auto& l : v.links) {
        if (l.dst == panel) {
            const auto src = l.sources_of(linear);
            const Panel& sp = v.panels[static_cast<std::size_t>(l.src)];
            if (l.is_gather())
                s += "   " + l.name + ": <- " +
                     (src.empty() ? std::string("0 (padding)") : cell_name(sp, src[0]));
            else
                s += "   " + l.name + ": sum of " + std::to_string(src.size()) + " " + sp.name +
                     " cells";
        }
        if (l.src == panel) {
            const auto dst = l.destinations_of(linear);
            const Panel& dp = v.panels[static_cast<std::size_t>(l.dst)];
            if (dst.size() == 1)
                s += "   " + l.name + ": -> " + cell_name(dp, dst[0]);
            else
                s += "   " + l.name + ": -> " + std::to_string(dst.size()) + " " + dp.name +
                     " cells";
        }
    }
    return s;
}

std::string join_terms(const std::vector<std::string>& t, const char* sep) {
    std::string s;
    for (std::size_t i = 0; i < t.size() && i < kMaxTerms; ++i) s += (i ? sep : "") + t[i];
    if (t.size() > kMaxTerms) s += std::string(sep) + "...";
    return s;
}

// "B*(4,0)": a panel's name and its coordinates from dim `first` on, without the dim names.
std::string short_name(const Panel& p, dim_t linear, std::size_t first) {
    const auto c = coords(p.shape, linear);
    std::string r = p.name + "(";
    for (std::size_t i = first; i < c.size(); ++i)
        r += (i > first ? "," : "") + std::to_string(c[i]);
    return r + ")";
}

std::string value_of(const Panel& p, dim_t linear, DataKind d) {
    return format_value(p.values[static_cast<std::size_t>(linear)], d);
}

// Values of a sum's terms: "3 + 5 - 0.25" (a negative term subtracted), capped as join_terms.
std::string join_values(const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < kMaxTerms; ++i) {
        const bool neg = !v[i].empty() && v[i][0] == '-';
        s += i == 0 ? v[i] : (neg ? " - " + v[i].substr(1) : " + " + v[i]);
    }
    if (v.size() > kMaxTerms) s += " + ...";
    return s;
}

// A factor of a product: "-0.25" in parentheses.
std::string factor(const std::string& v) {
    return !v.empty() && v[0] == '-' ? "(" + v + ")" : v;
}

// im2col's arithmetic for one column-matrix cell (n, g, row, col): the kernel tap, the output
// position and the input position per axis, as text with the numbers filled in; pos receives the
// padded position (input position + pad_begin) per axis.
void im2col_position(const Problem& p, const std::vector<dim_t>& c, dim_t* ci_out, dim_t* padded) {
    dim_t row = c[2], col = c[3];
    dim_t kk[kMaxSpatial], oo[kMaxSpatial];
    for (int i = p.ndims - 1; i >= 0; --i) {
        kk[i] = row % p.kernel[i];
        row /= p.kernel[i];
        oo[i] = col % p.out(i);
        col /= p.out(i);
    }
    if (ci_out) *ci_out = row;
    for (int i = 0; i < p.ndims; ++i)
        if (padded) padded[i] = oo[i] * p.stride[i] + kk[i] * p.dilation[i];
}

std::string map_formula(const ViewModel& v, int panel, dim_t linear, DataKind d) {
    const std::string s = expression_formula(v, panel, linear, d);
    return s.empty() ? generic_formula(v, panel, linear, d) : s;
}

// B* = W^T dY per image and group: B*(n, g, (c, k...), col) = sum_kk W(g*Kg+kk, c, k...) *
// dY(n, g*Kg+kk, col).
std::vector<float> wt_dy(const Problem& p, const std::vector<float>& w,
                         const std::vector<float>& dy) {
    const dim_t R = p.icg() * p.kernel_spatial(), M = p.out_spatial(), Kg = p.ocg();
    std::vector<float> b(static_cast<std::size_t>(p.mb * p.groups * R * M), 0.0f);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g)
            for (dim_t r = 0; r < R; ++r)
                for (dim_t kk = 0; kk < Kg; ++kk) {
                    const float wv = w[static_cast<std::size_t>((g * Kg + kk) * R + r)];
                    const float* dyr = dy.data() + (n * p.oc + g * Kg + kk) * M;
                    float* br = b.data() + ((n * p.groups + g) * R + r) * M;
                    for (dim_t m = 0; m < M; ++m) br[m] += wv * dyr[m];
                }
    return b;
}

}  // namespace convlab::app
