// What the view builders and the formulas share (model/views/view_builder.hpp): generated
// data, tensors, shapes and roles of the panels, number formatting; and the cell names and
// value texts of model.hpp.
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
#include "model/views/view_builder.hpp"

namespace convlab::app {

// splitmix64: the same stream for the same (seed, salt).
std::vector<float> make_data(dim_t n, DataKind kind, std::uint64_t seed, std::uint64_t salt) {
    std::vector<float> v(static_cast<std::size_t>(n));
    std::uint64_t state = seed ^ (salt * 0xd1b54a32d192ed03ull);
    for (dim_t i = 0; i < n; ++i) {
        if (kind == DataKind::Integer) {
            // 1, 2, ... 99, 1, 2 ...: every element of a small tensor is its own label.
            v[static_cast<std::size_t>(i)] = static_cast<float>(i % 99 + 1);
            continue;
        }
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        v[static_cast<std::size_t>(i)] =
            static_cast<float>(static_cast<double>(z >> 11) * 0x1p-53 * 2.0 - 1.0);
    }
    return v;
}

Tensor to_tensor(const std::vector<float>& v, std::vector<dim_t> dims) {
    Tensor t(std::move(dims));
    std::copy(v.begin(), v.end(), t.f32());
    return t;
}

std::vector<float> from_tensor(const Tensor& t) {
    return std::vector<float>(t.f32(), t.f32() + t.numel());
}

std::vector<float> run_map(const IndexMap& m, const std::vector<float>& src) {
    std::vector<float> dst(static_cast<std::size_t>(m.dst().numel()), 0.0f);
    m.execute(src.data(), dst.data());
    return dst;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
    return m;
}

std::string check_line(const std::string& what, double diff, double tol) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", diff);
    return what + (diff <= tol ? ": yes" : ": NO") + " (max |diff| " + buf + ")";
}

std::vector<dim_t> coords(const Shape& s, dim_t linear) {
    std::vector<dim_t> c(s.dims.size());
    s.coord_of(linear, c);
    return c;
}

std::vector<std::string> spatial(int nd, const std::string& prefix) {
    static const char* n[3][3] = {{"w", "", ""}, {"h", "w", ""}, {"d", "h", "w"}};
    std::vector<std::string> r;
    for (int i = 0; i < nd; ++i) r.push_back(prefix + n[nd - 1][i]);
    return r;
}

Shape act_shape(const Problem& p, bool out, const char* c) {
    Shape s;
    s.dims = {p.mb, out ? p.oc : p.ic};
    s.names = {"n", c};
    for (int i = 0; i < p.ndims; ++i) s.dims.push_back(out ? p.out(i) : p.in[i]);
    for (auto& n : spatial(p.ndims)) s.names.push_back(n);
    return s;
}

Shape wei_shape(const Problem& p) {
    Shape s{p.wei_dims(), {"k", "c"}};
    for (auto& n : spatial(p.ndims, "k")) s.names.push_back(n);
    return s;
}

// Roles of an activation (n, c, spatial...): images down, channels (and depth) across, h rows,
// w columns; 1-D: channels are rows.
std::vector<Role> act_roles(int rank) {
    if (rank == 3) return {Role::TileY, Role::Row, Role::Col};
    if (rank == 4) return {Role::TileY, Role::TileX, Role::Row, Role::Col};
    return {Role::TileY, Role::TileX, Role::TileX, Role::Row, Role::Col};
}

// Roles of weights (k, c, kernel...): the K x C grid of kernels; 1x1 kernels: the K x C matrix
// (a grid of one-cell tiles would be half gaps).
std::vector<Role> wei_roles(const Shape& s) {
    const int rank = s.rank();
    if (std::all_of(s.dims.begin() + 2, s.dims.end(), [](dim_t d) { return d == 1; })) {
        std::vector<Role> r(static_cast<std::size_t>(rank), Role::Col);
        r[0] = Role::Row;
        return r;
    }
    if (rank == 3) return {Role::TileY, Role::TileX, Role::Col};
    if (rank == 4) return {Role::TileY, Role::TileX, Role::Row, Role::Col};
    return {Role::TileY, Role::TileX, Role::TileX, Role::Row, Role::Col};
}

// NC1HWC0-like physical shapes (n, [d,] c1, [h,] w, c0): one tile per (n, d, c1), the spatial
// positions as rows and the C0 lanes as columns.
// Beyond 4096 positions (64 x 64) the columns of w go across too, each w a group of C0 lanes: a
// ResNet-50 stem's 224 x 224 positions as one column of rows was 50176 cells tall, past what a
// texture holds and a canvas fits (conv1's fractal and tnc views drew nothing).
std::vector<Role> blocked_act_roles(const Shape& s) {
    std::vector<Role> r(s.dims.size(), Role::TileX);
    r[0] = Role::TileY;
    dim_t positions = 1;
    for (std::size_t i = 0; i < s.dims.size(); ++i)
        if (s.names[i] == "h" || s.names[i] == "w") {
            r[i] = Role::Row;
            positions *= s.dims[i];
        }
    if (positions > 4096)
        for (std::size_t i = 0; i < s.dims.size(); ++i)
            if (s.names[i] == "w") r[i] = Role::Col;
    r.back() = Role::Col;
    return r;
}

// FRACTAL_Z (rows, n1, 16, c0): one 16 x C0 fractal per (row, n1), the rows across.
std::vector<Role> fractal_roles() {
    return {Role::TileX, Role::TileY, Role::Row, Role::Col};
}

Panel make_panel(std::string name, std::string title, Shape s, std::vector<Role> roles,
                 std::vector<float> values) {
    Panel p;
    p.name = std::move(name);
    p.title = std::move(title);
    p.shape = std::move(s);
    p.roles = std::move(roles);
    p.values = std::move(values);
    if (static_cast<dim_t>(p.values.size()) != p.shape.numel())
        throw Error("panel " + p.name + ": " + std::to_string(p.values.size()) +
                    " values for shape " + p.shape.str());
    p.auto_wrap = true;  // arrange_view wraps long rows of tiles
    return p;
}

// Padding lanes of a gather destination: the cells the map fills with zero.
std::vector<std::uint8_t> zero_lanes(const Link& l) {
    std::vector<std::uint8_t> z(l.image.size(), 0);
    for (std::size_t i = 0; i < l.image.size(); ++i) z[i] = l.image[i] < 0;
    return z;
}

std::string fmt(const char* f, double a) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, a);
    return buf;
}

// 102400000 -> "102,400,000" (beyond 2^53, "1.2e+20").
std::string grouped(double v) {
    if (!(v < 0x1p53)) return fmt("%.3g", v);
    std::string d = fmt("%.0f", v), r;
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (i > 0 && (d.size() - i) % 3 == 0) r += ',';
        r += d[i];
    }
    return r;
}

std::string format_value(float v, DataKind d) {
    if (!std::isfinite(v)) return "";
    if (v == 0.0f) v = 0.0f;  // no "-0" (a negative gradient times zero)
    if (d == DataKind::Integer && v == std::floor(v) && std::fabs(v) < 1e7f)
        return fmt("%.0f", static_cast<double>(v));
    // Three significant figures (0.0181, 0.5, 12.3), whole numbers from 1000 on (no exponent).
    if (std::fabs(v) >= 1000.0f) return fmt("%.0f", static_cast<double>(v));
    return fmt("%.3g", static_cast<double>(v));
}

std::string format_value_fit(float v, DataKind d, float max_width,
                             const std::function<float(const std::string&)>& width) {
    std::string t = format_value(v, d);
    if (t.empty() || width(t) <= max_width) return t;
    if (v == 0.0f) return "";  // "0" did not fit
    // Fewer significant digits, fixed where %g keeps it fixed ("-0.95", "-1"); from 1e3 on (or
    // below 1e-4) the scientific form with a short exponent ("1.2e3", "-2e-5").
    const auto sci = [&](int digits) {
        char b[48];
        std::snprintf(b, sizeof b, "%.*e", digits - 1, static_cast<double>(v));
        std::string m(b);
        const auto e = m.find('e');
        std::string mant = m.substr(0, e), ex = m.substr(e + 1);
        const bool neg = ex[0] == '-';
        ex = ex.substr(1);
        while (ex.size() > 1 && ex[0] == '0') ex.erase(0, 1);
        return mant + "e" + (neg ? "-" : "") + ex;
    };
    const double a = std::fabs(static_cast<double>(v));
    for (int digits = 2; digits >= 1; --digits) {
        std::vector<std::string> cands;
        if (a >= 1e-4 && a < (digits == 2 ? 99.5 : 9.5)) {  // where %g stays fixed
            char b[48];
            std::snprintf(b, sizeof b, "%.*g", digits, static_cast<double>(v));
            cands.push_back(b);
        }
        cands.push_back(sci(digits));
        for (const auto& c : cands)
            if (width(c) <= max_width) return c;
    }
    return "";
}

float colour_scale(const Panel& p) {
    float m = 0.0f;
    for (float x : p.values)
        if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    return m > 0.0f ? m : 1.0f;
}

std::string short_title(const std::string& title) {
    int depth = 0;
    for (std::size_t i = 0; i + 1 < title.size(); ++i) {
        const char c = title[i];
        if (c == '(' || c == '[') ++depth;
        if ((c == ')' || c == ']') && depth > 0) --depth;
        if (depth == 0 && i > 0 && title[i + 1] == ' ' && (c == ':' || c == ',' || c == ';'))
            return title.substr(0, i);
        if (depth == 0 && i > 0 && c == ' ' && title[i + 1] == '(') return title.substr(0, i);
    }
    return title;
}

std::string cell_name(const Panel& p, dim_t linear) {
    const auto c = coords(p.shape, linear);
    std::string r = p.name + "(";
    for (std::size_t i = 0; i < c.size(); ++i)
        r += (i ? "," : "") + p.shape.names[i] + "=" + std::to_string(c[i]);
    return r + ")";
}

const char* data_kind_name(DataKind d) {
    return d == DataKind::Integer ? "integers" : "random reals";
}

const std::vector<std::string>& view_names() {
    return lesson::view_names();  // one list: lessons name views by it
}

bool is_placeholder_view(const std::string& name) {
    return name == "timings";
}

}  // namespace convlab::app
