// The app's window-independent state (model.hpp). Index:
//   [SECTION] helpers: data, names, coordinates
//   [SECTION] panel geometry
//   [SECTION] links
//   [SECTION] view builders: im2col, col2im, stride, fliprot, fractal, tnc, weight_grad
//   [SECTION] playback
//   [SECTION] step state and hover linking
#include "ui/model.hpp"
#include "ui/view_generic.hpp"

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
#include "lesson/views.hpp"

namespace convlab::app {

// [SECTION] helpers

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

namespace {

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

std::string check_line(const std::string& what, double diff, double tol = 1e-4) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", diff);
    return what + (diff <= tol ? ": yes" : ": NO") + " (max |diff| " + buf + ")";
}

std::vector<dim_t> coords(const Shape& s, dim_t linear) {
    std::vector<dim_t> c(s.dims.size());
    s.coord_of(linear, c);
    return c;
}

std::vector<std::string> spatial(int nd, const std::string& prefix = "") {
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

}  // namespace

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

// [SECTION] panel geometry

std::vector<Role> default_roles(int rank) {
    std::vector<Role> r(static_cast<std::size_t>(rank));
    for (int i = rank - 1, k = 0; i >= 0; --i, ++k)
        r[static_cast<std::size_t>(i)] = k == 0         ? Role::Col
                                         : k == 1       ? Role::Row
                                         : (k % 2 == 0) ? Role::TileX
                                                        : Role::TileY;
    return r;
}

namespace {

// Mixed-radix index of the dims with role `role` (first dim outermost) and its extent.
dim_t role_index(const Panel& p, std::span<const dim_t> c, Role role, dim_t* extent = nullptr) {
    dim_t idx = 0, ext = 1;
    for (std::size_t i = 0; i < c.size(); ++i)
        if (p.roles[i] == role) {
            idx = idx * p.shape.dims[i] + c[i];
            ext *= p.shape.dims[i];
        }
    if (extent) *extent = ext;
    return idx;
}

double tile_w(const Panel& p) {
    return static_cast<double>(p.pad_left + p.cols + p.pad_right);
}
double tile_h(const Panel& p) {
    return static_cast<double>(p.pad_top + p.rows + p.pad_bottom);
}

}  // namespace

// Display grid position of tile (tx, ty), wrapping long rows of tiles.
void tile_slot(const Panel& p, dim_t tx, dim_t ty, dim_t& col, dim_t& row) {
    const dim_t per_row = p.tiles_per_row > 0 ? std::min(p.tiles_per_row, p.tiles_x) : p.tiles_x;
    const dim_t wraps = (p.tiles_x + per_row - 1) / per_row;
    col = tx % per_row;
    row = ty * wraps + tx / per_row;
}

dim_t linear_at(const Panel& p, dim_t tx, dim_t ty, dim_t row, dim_t col) {
    dim_t c[8];
    dim_t rest[4] = {row, col, tx, ty};
    for (std::size_t i = p.shape.dims.size(); i-- > 0;) {
        dim_t& r = rest[static_cast<int>(p.roles[i])];
        c[i] = r % p.shape.dims[i];
        r /= p.shape.dims[i];
    }
    return p.shape.linear_of(std::span<const dim_t>(c, p.shape.dims.size()));
}

void layout_panel(Panel& p) {
    if (p.roles.size() != p.shape.dims.size()) p.roles = default_roles(p.shape.rank());
    std::vector<dim_t> zero(p.shape.dims.size(), 0);
    role_index(p, zero, Role::Row, &p.rows);
    role_index(p, zero, Role::Col, &p.cols);
    role_index(p, zero, Role::TileX, &p.tiles_x);
    role_index(p, zero, Role::TileY, &p.tiles_y);
    dim_t last_col = 0, last_row = 0;
    tile_slot(p, p.tiles_x - 1, p.tiles_y - 1, last_col, last_row);
    const dim_t per_row = p.tiles_per_row > 0 ? std::min(p.tiles_per_row, p.tiles_x) : p.tiles_x;
    const double cols = static_cast<double>(per_row);
    const double rows = static_cast<double>(last_row + 1);
    p.width = cols * tile_w(p) + (cols - 1) * kTileGap;
    p.height = rows * tile_h(p) + (rows - 1) * kTileGap;
}

void cell_tile(const Panel& p, dim_t linear, dim_t& tx, dim_t& ty, dim_t& row, dim_t& col) {
    dim_t c[8];
    const std::span<dim_t> cs(c, p.shape.dims.size());
    p.shape.coord_of(linear, cs);
    tx = role_index(p, cs, Role::TileX);
    ty = role_index(p, cs, Role::TileY);
    row = role_index(p, cs, Role::Row);
    col = role_index(p, cs, Role::Col);
}

CellPos padded_pos(const Panel& p, dim_t tile_x, dim_t tile_y, dim_t prow, dim_t pcol) {
    dim_t sc = 0, sr = 0;
    tile_slot(p, tile_x, tile_y, sc, sr);
    return {p.x + static_cast<double>(sc) * (tile_w(p) + kTileGap) + static_cast<double>(pcol),
            p.y + static_cast<double>(sr) * (tile_h(p) + kTileGap) + static_cast<double>(prow)};
}

CellPos cell_pos(const Panel& p, dim_t linear) {
    dim_t tx = 0, ty = 0, row = 0, col = 0;
    cell_tile(p, linear, tx, ty, row, col);
    return padded_pos(p, tx, ty, row + p.pad_top, col + p.pad_left);
}

std::vector<std::uint32_t> cell_texels(const Panel& p, int width) {
    const dim_t n = p.numel();
    std::vector<std::uint32_t> out(static_cast<std::size_t>(n));
    if (n == 0) return out;
    const std::size_t rank = p.shape.dims.size();
    // Each dim's step in its role's mixed-radix index (the first dim of a role outermost).
    std::vector<dim_t> stride(rank, 1);
    dim_t role_ext[4] = {1, 1, 1, 1};
    for (std::size_t i = rank; i-- > 0;) {
        const auto r = static_cast<std::size_t>(p.roles[i]);
        stride[i] = role_ext[r];
        role_ext[r] *= p.shape.dims[i];
    }
    // The texel of every tile's first cell (its padding excluded), by tile_slot.
    const auto w = static_cast<dim_t>(width);
    const dim_t tw = static_cast<dim_t>(tile_w(p)) + static_cast<dim_t>(kTileGap),
                th = static_cast<dim_t>(tile_h(p)) + static_cast<dim_t>(kTileGap);
    const dim_t tx_n = role_ext[static_cast<std::size_t>(Role::TileX)],
                ty_n = role_ext[static_cast<std::size_t>(Role::TileY)];
    std::vector<dim_t> base(static_cast<std::size_t>(tx_n * ty_n));
    for (dim_t ty = 0; ty < ty_n; ++ty)
        for (dim_t tx = 0; tx < tx_n; ++tx) {
            dim_t sc = 0, sr = 0;
            tile_slot(p, tx, ty, sc, sr);
            base[static_cast<std::size_t>(ty * tx_n + tx)] =
                (sr * th + p.pad_top) * w + sc * tw + p.pad_left;
        }
    // An odometer over the coordinates, row-major, carrying each role's index along.
    std::vector<dim_t> c(rank, 0);
    dim_t idx[4] = {0, 0, 0, 0};  // Row, Col, TileX, TileY
    for (dim_t e = 0;;) {
        out[static_cast<std::size_t>(e)] = static_cast<std::uint32_t>(
            base[static_cast<std::size_t>(idx[3] * tx_n + idx[2])] + idx[0] * w + idx[1]);
        if (++e == n) break;
        for (std::size_t i = rank; i-- > 0;) {
            const auto r = static_cast<std::size_t>(p.roles[i]);
            if (++c[i] < p.shape.dims[i]) {
                idx[r] += stride[i];
                break;
            }
            c[i] = 0;
            idx[r] -= (p.shape.dims[i] - 1) * stride[i];
        }
    }
    return out;
}

dim_t hit_test(const Panel& p, double x, double y) {
    if (p.hidden) return -1;
    x -= p.x;
    y -= p.y;
    if (x < 0 || y < 0 || x >= p.width || y >= p.height) return -1;
    const double sw = tile_w(p) + kTileGap, sh = tile_h(p) + kTileGap;
    const auto sc = static_cast<dim_t>(x / sw), sr = static_cast<dim_t>(y / sh);
    const auto pc = static_cast<dim_t>(x - static_cast<double>(sc) * sw) - p.pad_left;
    const auto pr = static_cast<dim_t>(y - static_cast<double>(sr) * sh) - p.pad_top;
    if (pc < 0 || pr < 0 || pc >= p.cols || pr >= p.rows) return -1;
    const dim_t per_row = p.tiles_per_row > 0 ? std::min(p.tiles_per_row, p.tiles_x) : p.tiles_x;
    const dim_t wraps = (p.tiles_x + per_row - 1) / per_row;
    const dim_t ty = sr / wraps, tx = (sr % wraps) * per_row + sc;
    if (tx >= p.tiles_x || ty >= p.tiles_y) return -1;
    return linear_at(p, tx, ty, pr, pc);
}

std::vector<std::size_t> placement(const ViewModel& v) {
    if (v.order.size() == v.panels.size()) return v.order;
    std::vector<std::size_t> r(v.panels.size());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = i;
    return r;
}

void layout_view(ViewModel& v, double title_cells, double min_slot, double row_gap,
                 const std::vector<double>* titles) {
    const std::vector<std::size_t> order = placement(v);
    // The room above the row that starts at order[k]: the most of its panels' titles.
    const auto row_title = [&](std::size_t k) {
        if (!titles || titles->size() != v.panels.size()) return title_cells;
        double t = 0;
        for (std::size_t j = k; j < order.size() && (j == k || !v.panels[order[j]].new_row); ++j)
            t = std::max(t, (*titles)[order[j]]);
        return t;
    };
    double room = order.empty() ? title_cells : row_title(0);
    double x = 0, y = room, row_h = 0;
    v.width = v.height = 0;
    Panel* prev = nullptr;
    for (std::size_t k = 0; k < order.size(); ++k) {
        Panel& p = v.panels[order[k]];
        layout_panel(p);
        if (p.new_row && prev) {
            room = row_title(k);
            x = 0;
            y += row_h + row_gap + room;
            row_h = 0;
            prev = nullptr;
        }
        p.title_room = room;
        p.x = x;
        p.y = y;
        p.slot_width = std::max(p.width + kPanelGap, min_slot);
        x += p.slot_width;
        row_h = std::max(row_h, p.height);
        v.width = std::max(v.width, p.x + p.width);
        v.height = std::max(v.height, p.y + p.height);
        prev = &p;
    }
}

namespace {

// Pixels a row of panels takes at zoom z: every panel's slot, its cells and the gap or the least
// slot of its title (the app's fit makes the last panel's slot fit too: col2im mb1ic2ih5oc3kh3
// in one row, 54 cells of slots, fits 1180 px at 21.9 px a cell; the shot measured 21.1).
double row_pixels(const std::vector<const Panel*>& row, double z, const CanvasGuess& c) {
    double w = 0;
    for (const Panel* p : row) w += std::max((p->width + kPanelGap) * z, c.slot);
    return w;
}

// Width and height (cells) of a laid-out panel's grid of tiles at `per_row` tiles per row.
void grid_extent(const Panel& p, dim_t per_row, double& w, double& h) {
    const dim_t per = per_row > 0 ? std::min(per_row, p.tiles_x) : p.tiles_x;
    const auto cols = static_cast<double>(per);
    const auto rows = static_cast<double>(p.tiles_y * ((p.tiles_x + per - 1) / per));
    w = cols * tile_w(p) + (cols - 1) * kTileGap;
    h = rows * tile_h(p) + (rows - 1) * kTileGap;
}

// Tiles per row worth trying for a laid-out panel: no wrap, and every count whose grid is
// between 3 times taller and 4 times wider than it is wide/tall (0 stands for no wrap).
std::vector<dim_t> wrap_candidates(const Panel& p) {
    std::vector<dim_t> r;
    double w = 0, h = 0;
    grid_extent(p, 0, w, h);
    if (p.tiles_x <= 1 || w <= 4 * h) r.push_back(0);
    for (dim_t per = 1; per < p.tiles_x && p.tiles_x > 1; ++per) {
        grid_extent(p, per, w, h);
        if (w * 3 >= h && w <= 4 * h) r.push_back(per);
    }
    if (r.empty()) r.push_back(0);
    return r;
}

// The candidate whose grid is nearest a square, preferring a divisor of the tile count.
dim_t near_square(const Panel& p, const std::vector<dim_t>& cands) {
    dim_t best = cands.front();
    double best_cost = INFINITY;
    for (dim_t per : cands) {
        double w = 0, h = 0;
        grid_extent(p, per, w, h);
        const double cost = std::fabs(std::log(w / h)) + (per && p.tiles_x % per ? 0.3 : 0);
        if (cost < best_cost) {
            best_cost = cost;
            best = per;
        }
    }
    return best;
}

}  // namespace

double fit_zoom(ViewModel& v, const CanvasGuess& c) {
    std::vector<std::vector<const Panel*>> rows;
    for (std::size_t i : placement(v)) {
        Panel& p = v.panels[i];
        layout_panel(p);
        if (rows.empty() || p.new_row) rows.emplace_back();
        rows.back().push_back(&p);
    }
    if (rows.empty()) return 64;
    double cells_h = kPanelGap * 0.5 * static_cast<double>(rows.size() - 1);
    for (const auto& r : rows) {
        double h = 0;
        for (const Panel* p : r) h = std::max(h, p->height);
        cells_h += h;
    }
    const double room_h = c.height - c.title * static_cast<double>(rows.size());
    double z = std::clamp(room_h / std::max(cells_h, 1.0), 0.05, 64.0);
    if (room_h <= 0) z = 0.05;
    // The widest row at z: row_pixels grows with z, so bisect down to the largest z that fits.
    const auto fits = [&](double zz) {
        for (const auto& r : rows)
            if (row_pixels(r, zz, c) > c.width) return false;
        return true;
    };
    if (fits(z)) return z;
    double lo = 0.05, hi = z;
    for (int it = 0; it < 40; ++it) {
        const double mid = 0.5 * (lo + hi);
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

namespace {

// The best row breaks for the view's current panels (reading order kept, new_row flags in
// `forced` kept): the largest fit_zoom, and within 5% of it the fewest rows. Leaves the panels'
// new_row set to the choice and returns its zoom.
double choose_rows(ViewModel& v, const std::vector<bool>& forced, const CanvasGuess& c) {
    std::vector<std::size_t> free;
    for (std::size_t i = 1; i < v.panels.size(); ++i)
        if (!forced[i]) free.push_back(i);
    if (free.size() > 10) free.clear();  // (no view has that many panels)
    const std::size_t n = std::size_t{1} << free.size();
    std::vector<double> zoom(n), widest(n);
    double best_z = 0;
    for (std::size_t m = 0; m < n; ++m) {
        for (std::size_t k = 0; k < free.size(); ++k) v.panels[free[k]].new_row = (m >> k) & 1;
        zoom[m] = fit_zoom(v, c);
        best_z = std::max(best_z, zoom[m]);
        double row = 0;  // cells, slots included
        for (const Panel& p : v.panels) {
            row = p.new_row ? 0 : row;
            row += p.width + kPanelGap;
            widest[m] = std::max(widest[m], row);
        }
    }
    // Equal rows and zoom (within 2%): the rows nearest equal width (lesson 17's five forward
    // tensors on a 1024 x 768 projector in rows of two and three, not one and four).
    std::size_t pick = 0;
    for (std::size_t m = 1; m < n; ++m) {
        if (zoom[m] < best_z / 1.05) continue;
        const int rows = std::popcount(m), pick_rows = std::popcount(pick);
        const bool tied = std::fabs(zoom[m] - zoom[pick]) <= 0.02 * zoom[pick];
        if (zoom[pick] < best_z / 1.05 || rows < pick_rows ||
            (rows == pick_rows && (tied ? widest[m] < widest[pick] : zoom[m] > zoom[pick])))
            pick = m;
    }
    for (std::size_t k = 0; k < free.size(); ++k) v.panels[free[k]].new_row = (pick >> k) & 1;
    return zoom[pick];
}

// A fixed_rows view's rows (runs of panels from one own_row to the next) cut into bands of
// `cols` columns: band b holds columns [b cols, (b + 1) cols) of every row, its rows one below
// the other, and the next band below it. The largest fit_zoom; within 5% of it the fewest
// bands; equal bands and zoom (within 2%), the fewer columns (rows of three and three, not four
// and two). Lesson 11's six forward tensors and four gradients: on a 1024 x 768 projector in
// presenter mode one row drew 18.6 px cells with the titles run together and past the edge, two
// bands of four columns 15.4 px with the titles apart; at 1600 x 1000, 26.9 -> 44.2 px.
double choose_bands(ViewModel& v, const CanvasGuess& c) {
    std::vector<std::vector<std::size_t>> rows;
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        if (rows.empty() || v.panels[i].own_row) rows.emplace_back();
        rows.back().push_back(i);
    }
    std::size_t widest = 0;
    for (const auto& r : rows) widest = std::max(widest, r.size());
    const auto cut = [&](std::size_t cols) {
        v.order.clear();
        for (std::size_t b0 = 0; b0 < widest; b0 += cols)
            for (const auto& r : rows)
                for (std::size_t j = b0; j < std::min(b0 + cols, r.size()); ++j) {
                    v.order.push_back(r[j]);
                    v.panels[r[j]].new_row = j == b0;
                }
        return fit_zoom(v, c);
    };
    std::vector<double> zoom(widest + 1);
    double best_z = 0;
    for (std::size_t cols = 1; cols <= widest; ++cols)
        best_z = std::max(best_z, zoom[cols] = cut(cols));
    const auto bands = [&](std::size_t cols) { return (widest + cols - 1) / cols; };
    std::size_t pick = widest;
    for (std::size_t cols = widest; cols-- > 1;) {
        if (zoom[cols] < best_z / 1.05) continue;
        const bool tied = std::fabs(zoom[cols] - zoom[pick]) <= 0.02 * zoom[pick];
        if (zoom[pick] < best_z / 1.05 || bands(cols) < bands(pick) ||
            (bands(cols) == bands(pick) && (tied || zoom[cols] > zoom[pick])))
            pick = cols;
    }
    const double z = cut(pick);
    if (pick == widest) v.order.clear();
    return z;
}

}  // namespace

void arrange_view(ViewModel& v, const CanvasGuess& c) {
    std::vector<bool> forced(v.panels.size());
    std::vector<std::vector<dim_t>> cands(v.panels.size());
    const bool first = !v.arranged;
    v.arranged = true;
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        Panel& p = v.panels[i];
        if (first) p.own_row = p.new_row;
        const bool own = p.own_row && (c.keep_rows || v.fixed_rows);
        forced[i] = own;
        p.new_row = own;
        layout_panel(p);
        if (!p.auto_wrap) continue;
        cands[i] = wrap_candidates(p);
        p.tiles_per_row = near_square(p, cands[i]);
    }
    // A ragged last row of tiles costs 5% of zoom; a change must gain 2%.
    v.order.clear();
    const auto score = [&] {
        double z = v.fixed_rows ? choose_bands(v, c) : choose_rows(v, forced, c);
        for (const auto& p : v.panels)
            if (p.auto_wrap && p.tiles_per_row > 0 && p.tiles_x % p.tiles_per_row) z *= 0.95;
        return z;
    };
    // Coordinate descent over the panels' tiles per row, rows re-chosen for each.
    double best = score();
    for (int pass = 0; pass < 3; ++pass) {
        bool changed = false;
        for (std::size_t i = 0; i < v.panels.size(); ++i) {
            Panel& p = v.panels[i];
            for (dim_t per : cands[i]) {
                const dim_t keep = p.tiles_per_row;
                if (per == keep) continue;
                p.tiles_per_row = per;
                if (const double z = score(); z > best * 1.02) {
                    best = z;
                    changed = true;
                } else {
                    p.tiles_per_row = keep;
                }
            }
        }
        if (!changed) break;
    }
    score();  // the rows of the final choice
    layout_view(v);
}

// [SECTION] links

void* allocate_table(std::size_t bytes) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    if (bytes < 2 * kHuge) {
        if (void* p = std::malloc(std::max<std::size_t>(bytes, 1))) return p;
        throw std::bad_alloc();
    }
    const std::size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, size);
    if (!p) throw std::bad_alloc();
    ::madvise(p, size, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
    return p;
}

void free_table(void* p) noexcept {
    std::free(p);
}

dim_t Link::num_steps(Granularity g) const {
    return walk_num_steps(g, static_cast<dim_t>(order.size()), line_len, mid_len);
}

void Link::step_range(Granularity g, dim_t step, dim_t& begin, dim_t& end) const {
    walk_step_span(g, step, static_cast<dim_t>(order.size()), line_len, mid_len, begin, end);
}

std::vector<dim_t> Link::sources_of(dim_t dst_linear) const {
    std::vector<dim_t> r;
    if (is_gather()) {
        if (image[static_cast<std::size_t>(dst_linear)] >= 0)
            r.push_back(image[static_cast<std::size_t>(dst_linear)]);
    } else {
        for (dim_t i = inv_start[static_cast<std::size_t>(dst_linear)];
             i < inv_start[static_cast<std::size_t>(dst_linear) + 1]; ++i)
            r.push_back(inv_items[static_cast<std::size_t>(i)]);
    }
    return r;
}

std::vector<dim_t> Link::destinations_of(dim_t src_linear) const {
    std::vector<dim_t> r;
    if (!is_gather()) {
        if (image[static_cast<std::size_t>(src_linear)] >= 0)
            r.push_back(image[static_cast<std::size_t>(src_linear)]);
    } else {
        for (dim_t i = inv_start[static_cast<std::size_t>(src_linear)];
             i < inv_start[static_cast<std::size_t>(src_linear) + 1]; ++i)
            r.push_back(inv_items[static_cast<std::size_t>(i)]);
    }
    return r;
}

Link make_link(std::shared_ptr<const IndexMap> map, int src, int dst,
               std::atomic<float>* progress) {
    Link l;
    l.name = map->name();
    l.src = src;
    l.dst = dst;
    const dim_t n = map->domain().numel();
    const dim_t m = map->codomain().numel();
    l.line_len = map->domain().dims[static_cast<std::size_t>(map->line_axis())];
    l.mid_len = map->mid_extent();
    l.order.resize(static_cast<std::size_t>(n));
    l.step_of.resize(static_cast<std::size_t>(n));
    l.image.resize(static_cast<std::size_t>(n));
    const bool gather = map->kind() == IndexMap::Kind::Gather;
    // The whole walk in one call (the map's own enumeration order, as its steps cut it),
    // reporting its progress every 64 Ki pairs.
    dim_t e = 0;
    if (n > 0)
        map->for_each_in_step(Granularity::Whole, 0, [&](dim_t sl, dim_t dl) {
            const dim_t d = gather ? dl : sl;
            const dim_t img = gather ? sl : dl;
            if (e < n && d >= 0 && d < n) {
                l.order[static_cast<std::size_t>(e)] = static_cast<LinkIndex>(d);
                l.step_of[static_cast<std::size_t>(d)] = static_cast<LinkIndex>(e);
                l.image[static_cast<std::size_t>(d)] = static_cast<LinkIndex>(img);
            }
            ++e;
            if (progress && (e & 0xffff) == 0)
                progress->store(static_cast<float>(e) / static_cast<float>(n));
        });
    if (e != n)
        throw Error("map " + l.name + ": enumeration gave " + std::to_string(e) + " pairs for " +
                    std::to_string(n) + " domain elements");
    // Inverse (counting sort): the domain elements of every codomain element, ascending.
    l.inv_start.assign(static_cast<std::size_t>(m) + 1, 0);
    for (dim_t d = 0; d < n; ++d)
        if (const dim_t img = l.image[static_cast<std::size_t>(d)]; img >= 0)
            ++l.inv_start[static_cast<std::size_t>(img) + 1];
    std::partial_sum(l.inv_start.begin(), l.inv_start.end(), l.inv_start.begin());
    l.inv_items.resize(static_cast<std::size_t>(l.inv_start.back()));
    // Filled with inv_start[img] as the cursor of img's list (it ends where img + 1's list
    // starts), then shifted up by one place, back to the starts.
    for (dim_t d = 0; d < n; ++d)
        if (const dim_t img = l.image[static_cast<std::size_t>(d)]; img >= 0)
            l.inv_items[static_cast<std::size_t>(l.inv_start[static_cast<std::size_t>(img)]++)] =
                static_cast<LinkIndex>(d);
    for (std::size_t k = l.inv_start.size() - 1; k > 0; --k) l.inv_start[k] = l.inv_start[k - 1];
    l.inv_start[0] = 0;
    l.map = std::move(map);
    if (progress) progress->store(1.0f);
    return l;
}

// [SECTION] view builders

namespace {

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

// At most this many terms of a sum are written out, then "+ ...".
constexpr std::size_t kMaxTerms = 8;

std::string join_terms(const std::vector<std::string>& t, const char* sep = " + ") {
    std::string s;
    for (std::size_t i = 0; i < t.size() && i < kMaxTerms; ++i) s += (i ? sep : "") + t[i];
    if (t.size() > kMaxTerms) s += std::string(sep) + "...";
    return s;
}

// "B*(4,0)": a panel's name and its coordinates from dim `first` on, without the dim names.
std::string short_name(const Panel& p, dim_t linear, std::size_t first = 0) {
    const auto c = coords(p.shape, linear);
    std::string r = p.name + "(";
    for (std::size_t i = first; i < c.size(); ++i)
        r += (i > first ? "," : "") + std::to_string(c[i]);
    return r + ")";
}

std::string value_of(const Panel& p, dim_t linear, DataKind d) {
    return format_value(p.values[static_cast<std::size_t>(linear)], d);
}

// A FRACTAL_Z(_3D) row split into its kernel position and block: row = ((kd*B + b)*KH + kh)*KW
// + kw for `ks` = the spatial sizes (1 to 3 axes, d outermost). k receives the position per
// axis, *block the block index; returns "row 5 = (c1=0, kh=1, kw=2)".
std::string split_fractal_row(dim_t row, dim_t blocks, const std::vector<dim_t>& ks,
                              const std::vector<std::string>& names, const char* block_name,
                              std::vector<dim_t>& k, dim_t* block) {
    const auto nd = static_cast<int>(ks.size());
    k.assign(ks.size(), 0);
    dim_t r = row;
    for (int i = nd - 1; i >= (nd == 3 ? 1 : 0); --i) {
        k[static_cast<std::size_t>(i)] = r % ks[static_cast<std::size_t>(i)];
        r /= ks[static_cast<std::size_t>(i)];
    }
    *block = r % blocks;
    if (nd == 3) k[0] = r / blocks;
    std::vector<std::string> parts;
    for (int i = 0; i < nd; ++i) {
        if (i == (nd == 3 ? 1 : 0)) parts.push_back(block_name + ("=" + std::to_string(*block)));
        parts.push_back(names[static_cast<std::size_t>(i)] + "=" +
                        std::to_string(k[static_cast<std::size_t>(i)]));
    }
    return "row " + std::to_string(row) + " = (" + join_terms(parts, ", ") + ")";
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
std::string im2col_arith(const Problem& p, const std::vector<dim_t>& c, dim_t* ci_out,
                         dim_t* padded) {
    dim_t row = c[2], col = c[3];
    dim_t kk[kMaxSpatial], oo[kMaxSpatial];
    for (int i = p.ndims - 1; i >= 0; --i) {
        kk[i] = row % p.kernel[i];
        row /= p.kernel[i];
        oo[i] = col % p.out(i);
        col /= p.out(i);
    }
    if (ci_out) *ci_out = row;
    std::string s = "row " + std::to_string(c[2]) + " = (c=" + std::to_string(row);
    for (int i = 0; i < p.ndims; ++i)
        s += ", k" + std::string(p.axis_name(i)) + "=" + std::to_string(kk[i]);
    s += "), col " + std::to_string(c[3]) + " = (";
    for (int i = 0; i < p.ndims; ++i)
        s += std::string(i ? ", " : "") + "o" + p.axis_name(i) + "=" + std::to_string(oo[i]);
    s += ");";
    for (int i = 0; i < p.ndims; ++i) {
        const dim_t pos = oo[i] * p.stride[i] - p.pad_begin[i] + kk[i] * p.dilation[i];
        if (padded) padded[i] = pos + p.pad_begin[i];
        const std::string a = p.axis_name(i);
        s += "  " + a + " = o" + a + "*s - p + k" + a + "*d = " + std::to_string(oo[i]) + "*" +
             std::to_string(p.stride[i]) + " - " + std::to_string(p.pad_begin[i]) + " + " +
             std::to_string(kk[i]) + "*" + std::to_string(p.dilation[i]) + " = " +
             std::to_string(pos);
    }
    return s;
}

void build_im2col(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::im2col(p);
    b.plan({{"X", m.src()}, {"B", m.dst()}});
    b.maps_total = 1;
    Panel x = make_panel("X", "input", m.src(), act_roles(m.src().rank()), b.data(m.src(), 1));
    // Zero padding drawn around every channel (h and w; 1-D: w).
    x.pad_left = p.pad_begin[p.ndims - 1];
    x.pad_right = p.pad_end[p.ndims - 1];
    if (p.ndims >= 2) {
        x.pad_top = p.pad_begin[p.ndims - 2];
        x.pad_bottom = p.pad_end[p.ndims - 2];
    }
    const int xi = b.add(std::move(x));
    Panel col = make_panel(
        "B", "column matrix B = im2col(X): rows (c, k...), cols = output position", m.dst(),
        {Role::TileY, Role::TileX, Role::Row, Role::Col}, run_map(m, b.v.panels[0].values));
    col.auto_wrap = false;  // one matrix per (n, g): never wrapped
    const int ci = b.add(std::move(col));
    b.link(m, xi, ci, true);
    b.v.caption =
        "im2col: every column of B is the receptive field of one output position; Y = W B "
        "turns the convolution into one matrix product";
    // Check: the engine's fast im2col kernel gives the same column matrix.
    std::vector<float> fast(b.v.panels[1].values.size());
    const dim_t per_image = p.groups * p.icg() * p.kernel_spatial() * p.out_spatial();
    const dim_t per_group = p.icg() * p.kernel_spatial() * p.out_spatial();
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g)
            im2col_kernel(p, b.v.panels[0].values.data(), n, g,
                          fast.data() + n * per_image + g * per_group);
    b.v.check = check_line("B equals the engine's fast im2col kernel",
                           max_abs_diff(fast, b.v.panels[1].values), 0);
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel != 1) return generic_formula(vm, panel, linear, d);
        const Panel& cp = vm.panels[1];
        const auto c = coords(cp.shape, linear);
        std::string s = cell_name(cp, linear) + ": " + im2col_arith(p, c, nullptr, nullptr);
        const dim_t src = vm.links[0].image[static_cast<std::size_t>(linear)];
        return s + (src < 0
                        ? "  -> padding zero"
                        : "  -> " + cell_name(vm.panels[0], src) + " = " +
                              format_value(vm.panels[0].values[static_cast<std::size_t>(src)], d));
    };
    b.v.zero_source = [p](const ViewModel& vm, int link, dim_t dst_linear, CellPos& pos) {
        if (link != 0) return false;
        const Panel& xp = vm.panels[0];
        const auto c = coords(vm.panels[1].shape, dst_linear);
        dim_t chan = 0, padded[kMaxSpatial] = {0, 0, 0};
        im2col_arith(p, c, &chan, padded);
        // Tile of (n, channel g*Cg + chan [, depth]); depth padding has no tile to draw in.
        const dim_t ch = c[1] * p.icg() + chan;
        dim_t tx = ch, prow = 0, pcol = padded[p.ndims - 1];
        if (p.ndims == 1) {
            tx = 0;
            prow = ch;
        } else {
            prow = padded[p.ndims - 2];
        }
        if (p.ndims == 3) {
            const dim_t dpos = padded[0] - p.pad_begin[0];
            if (dpos < 0 || dpos >= p.in[0]) return false;
            tx = ch * p.in[0] + dpos;
        }
        pos = padded_pos(xp, tx, c[0], prow, pcol);
        return true;
    };
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

void build_col2im(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::col2im(p);
    const Shape ws = wei_shape(p), ys = act_shape(p, true, "k");
    b.plan({{"W", ws}, {"dY", ys}, {"B*", m.src()}, {"dX", m.dst()}});
    auto w = b.data(ws, 2), dy = b.data(ys, 3);
    const int wi = b.add(make_panel("W", "weights (K x C grid of kernels)", ws, wei_roles(ws), w));
    Panel dyp = make_panel("dY", "output gradient", ys, act_roles(ys.rank()), dy);
    const int yi = b.add(std::move(dyp));
    auto bstar = wt_dy(p, w, dy);
    Panel bp = make_panel("B*", "B* = W^T dY (column matrix of dX)", m.src(),
                          {Role::TileY, Role::TileX, Role::Row, Role::Col}, bstar);
    bp.auto_wrap = false;  // one matrix per (n, g): never wrapped
    const int bi = b.add(std::move(bp));
    auto dx = run_map(m, bstar);
    Panel xp = make_panel("dX", "input gradient = col2im(B*): running sums", m.dst(),
                          act_roles(m.dst().rank()), dx);
    // The result on its own row below the product W^T dY: the fit can use the canvas height
    // (mb1ic2ih5oc3kh3: cells 25 px instead of 21 in a 1600x1000 shot).
    xp.new_row = true;
    const int xi = b.add(std::move(xp));
    b.link(m, bi, xi, true);
    Relation rel;
    rel.name = "B* = W^T dY";
    rel.result = bi;
    rel.operands = {wi, yi};
    rel.fn = [p](dim_t lin, std::vector<std::vector<dim_t>>& out) {
        const dim_t R = p.icg() * p.kernel_spatial(), M = p.out_spatial(), Kg = p.ocg();
        const dim_t col = lin % M, r = (lin / M) % R, g = (lin / (M * R)) % p.groups,
                    n = lin / (M * R * p.groups);
        for (dim_t kk = 0; kk < Kg; ++kk) {
            out[0].push_back((g * Kg + kk) * R + r);
            out[1].push_back((n * p.oc + g * Kg + kk) * M + col);
        }
    };
    b.v.relations.push_back(std::move(rel));
    const char* ref_algo = check_algorithm(p, Pass::BackwardData);
    const Tensor ref = backward_data(p, to_tensor(dy, ys.dims), to_tensor(w, ws.dims), ref_algo);
    b.v.check = check_line(
        "dX after the last step equals the engine's backward_data (" + std::string(ref_algo) + ")",
        max_abs_diff(dx, from_tensor(ref)));
    b.v.caption =
        "col2im (backward data): B* = W^T dY, then every column of B* is added back into dX; "
        "cells show running sums and, small, how many contributions they received";
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel == 2) {
            const auto c = coords(vm.panels[2].shape, linear);
            const dim_t dst = vm.links[0].image[static_cast<std::size_t>(linear)];
            return cell_name(vm.panels[2], linear) + " = sum_k W(k,c,k..) dY(n,k,o..) = " +
                   format_value(vm.panels[2].values[static_cast<std::size_t>(linear)], d) + ";  " +
                   im2col_arith(p, c, nullptr, nullptr) + "  -> " +
                   (dst < 0 ? std::string("padding (dropped)")
                            : "added into " + cell_name(vm.panels[3], dst));
        }
        if (panel == 3) {
            // dX(n, c, h, w) = the B* cells (one per kernel tap whose window covers it).
            const Panel& bs = vm.panels[2];
            const auto src = vm.links[0].sources_of(linear);
            const std::string s = cell_name(vm.panels[3], linear) + " = ";
            if (src.empty()) return s + "0: no kernel window covers it";
            std::vector<std::string> names, vals;
            for (dim_t c : src) {
                names.push_back(short_name(bs, c, 2));
                vals.push_back(value_of(bs, c, d));
            }
            return s + "sum of B*(row, col) over the " + std::to_string(src.size()) +
                   " kernel taps whose window covers it = " + join_terms(names) + " = " +
                   join_values(vals) + " = " + value_of(vm.panels[3], linear, d);
        }
        return generic_formula(vm, panel, linear, d);
    };
}

void build_stride(Builder& b) {
    const Problem& p = b.p;
    const IndexMap ms = maps::strided(p);
    const IndexMap mp = maps::pad_for_backward_data(p);
    const IndexMap mf = maps::flip_rot(p);
    b.maps_total = 3;
    const Shape ys = act_shape(p, true, "k"), ws = wei_shape(p);
    b.plan({{"dY", ys},
            {"Z", ms.dst()},
            {"P", mp.dst()},
            {"W", ws},
            {"W'", mf.dst()},
            {"dX", act_shape(p, false, "c")}});
    auto dy = b.data(ys, 3), w = b.data(ws, 2);
    const int yi = b.add(make_panel("dY", "output gradient", ys, act_roles(ys.rank()), dy));
    auto z = run_map(ms, dy);
    Shape zs = ms.dst();
    const int zi =
        b.add(make_panel("Z", "Strided(dY): s-1 zeros between taps", zs, act_roles(zs.rank()), z));
    auto pd = run_map(mp, z);
    const int pi = b.add(make_panel("P", "Z padded: (k-1)d - p before, (k-1)d - p + r after",
                                    mp.dst(), act_roles(mp.dst().rank()), pd));
    Panel wp = make_panel("W", "weights", ws, wei_roles(ws), w);
    wp.new_row = true;
    const int wi = b.add(std::move(wp));
    auto wf = run_map(mf, w);
    const int fi = b.add(make_panel("W'", "FlipRot(W): C x K, every kernel rotated", mf.dst(),
                                    wei_roles(mf.dst()), wf));
    const Shape xs = act_shape(p, false, "c");
    const Tensor dx =
        backward_data(p, to_tensor(dy, ys.dims), to_tensor(w, ws.dims), "via_forward");
    const char* ref_algo = check_algorithm(p, Pass::BackwardData);
    const Tensor ref = backward_data(p, to_tensor(dy, ys.dims), to_tensor(w, ws.dims), ref_algo);
    Panel xp =
        make_panel("dX", "dX = conv(P, W'), stride 1", xs, act_roles(xs.rank()), from_tensor(dx));
    // Outlined by stride phase: implicit GEMM's one GEMM per phase, each its own kernel taps.
    xp.group = stride_phases(p);
    xp.group_names = phase_names(p);
    const int xi = b.add(std::move(xp));
    b.link(ms, yi, zi, false);
    b.link(mp, zi, pi, false);
    b.link(mf, wi, fi, false);
    // Inserted zeros and padding drawn as zeros that carry no dY tap.
    auto& zl = b.v.panels[static_cast<std::size_t>(zi)].padding_lane;
    zl = zero_lanes(b.v.links[0]);
    auto& pl = b.v.panels[static_cast<std::size_t>(pi)].padding_lane;
    pl = zero_lanes(b.v.links[1]);
    for (std::size_t i = 0; i < pl.size(); ++i)
        if (const dim_t src = b.v.links[1].image[i]; src >= 0)
            pl[i] = zl[static_cast<std::size_t>(src)];
    // The FlipRot kernel sliding over P: dX(n, c, i) = sum_kk,k P(n, g*Kg+kk, i + k*d) W'(c, kk,
    // k).
    Relation rel;
    rel.name = "dX = conv(P, W')";
    rel.result = xi;
    rel.operands = {pi, fi};
    const Shape ps = mp.dst();
    rel.fn = [p, ps, xs](dim_t lin, std::vector<std::vector<dim_t>>& out) {
        const auto c = coords(xs, lin);
        const dim_t Kg = p.ocg(), g = c[1] / p.icg();
        std::vector<dim_t> pc(c.size());
        const dim_t taps = p.kernel_spatial();
        for (dim_t kk = 0; kk < Kg; ++kk)
            for (dim_t t = 0; t < taps; ++t) {
                dim_t rest = t;
                pc[0] = c[0];
                pc[1] = g * Kg + kk;
                for (int i = p.ndims - 1; i >= 0; --i) {
                    const dim_t k = rest % p.kernel[i];
                    rest /= p.kernel[i];
                    pc[static_cast<std::size_t>(2 + i)] =
                        c[static_cast<std::size_t>(2 + i)] + k * p.dilation[i];
                }
                out[0].push_back(ps.linear_of(pc));
                out[1].push_back((c[1] * Kg + kk) * taps + t);
            }
    };
    b.v.relations.push_back(std::move(rel));
    b.v.drivers.push_back({-1, 0});
    b.v.check = check_line("dX via forward (Strided, pad with r, FlipRot) equals backward_data (" +
                               std::string(ref_algo) + ")",
                           max_abs_diff(from_tensor(dx), from_tensor(ref)));
    std::string rs;
    for (int i = 0; i < p.ndims; ++i)
        rs += std::string(i ? ", " : "") + "r_" + p.axis_name(i) + " = " +
              std::to_string(p.leftover(i));
    b.v.caption = "backward data via forward: zero-insert dY, pad with the leftover r (" + rs +
                  "), slide the FlipRot kernel W' with stride 1; lit dY cells are the taps that "
                  "feed the current dX element";
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel == 5) {
            // dX = sum over the window of P x W'; P is a dY tap, an inserted zero or padding.
            std::vector<std::vector<dim_t>> ops(2);
            vm.relations[0].fn(linear, ops);
            const Panel &yp = vm.panels[0], &fp = vm.panels[4];
            std::vector<std::string> terms, nums;
            for (std::size_t i = 0; i < ops[0].size(); ++i) {
                const dim_t zc = vm.links[1].image[static_cast<std::size_t>(ops[0][i])];
                if (zc < 0) continue;
                const dim_t yc = vm.links[0].image[static_cast<std::size_t>(zc)];
                if (yc < 0) continue;
                terms.push_back(short_name(yp, yc) + "*" + short_name(fp, ops[1][i]));
                nums.push_back(factor(value_of(yp, yc, d)) + "*" +
                               factor(value_of(fp, ops[1][i], d)));
            }
            std::string s = cell_name(vm.panels[5], linear) + " = sum over the window of P x W' (" +
                            std::to_string(ops[0].size()) + " products; " +
                            std::to_string(terms.size()) +
                            " read a dY tap, the others a zero of P) = ";
            // Its stride phase: the kernel taps implicit GEMM's GEMM for it reads.
            const Panel& dxp = vm.panels[5];
            const std::string phase =
                dxp.group.empty()
                    ? ""
                    : "; phase " + dxp.group_names[dxp.group[static_cast<std::size_t>(linear)]];
            if (terms.empty()) return s + "0" + phase;
            return s + join_terms(terms) + " = " + join_terms(nums) + " = " +
                   value_of(vm.panels[5], linear, d) + phase;
        }
        if (panel == 1) {
            const auto c = coords(vm.panels[1].shape, linear);
            std::string s = cell_name(vm.panels[1], linear) + ": ";
            for (int i = 0; i < p.ndims; ++i) {
                const dim_t zc = c[static_cast<std::size_t>(2 + i)];
                s += std::string(p.axis_name(i)) + " = " + std::to_string(zc) +
                     (zc % p.stride[i] ? " not" : "") +
                     " divisible by s=" + std::to_string(p.stride[i]) + "; ";
            }
            return s + generic_formula(vm, panel, linear, d);
        }
        return generic_formula(vm, panel, linear, d);
    };
}

}  // namespace

std::vector<dim_t> phase_taps(const Problem& p, int axis, dim_t r) {
    std::vector<dim_t> taps;
    const dim_t st = p.stride[axis];
    for (dim_t a = 0; a < p.kernel[axis]; ++a) {
        const dim_t x = r + p.pad_begin[axis] - a * p.dilation[axis];
        if (((x % st) + st) % st == 0) taps.push_back(a);
    }
    return taps;
}

namespace {
// The number of phases of p (0: stride 1 everywhere or more than kMaxPhases).
int phase_count(const Problem& p) {
    dim_t n = 1;
    for (int i = 0; i < p.ndims; ++i) n *= p.stride[i];
    return n > 1 && n <= kMaxPhases ? static_cast<int>(n) : 0;
}
}  // namespace

std::vector<std::uint8_t> stride_phases(const Problem& p) {
    if (phase_count(p) == 0) return {};
    const Shape xs = act_shape(p, false, "c");
    std::vector<std::uint8_t> out(static_cast<std::size_t>(xs.numel()));
    // Row-major over (n, c, spatial...): the phase repeats with the spatial coordinates only.
    dim_t inner = 1;
    for (int i = 0; i < p.ndims; ++i) inner *= p.in[i];
    std::vector<std::uint8_t> one(static_cast<std::size_t>(inner));
    for (dim_t lin = 0; lin < inner; ++lin) {
        dim_t rest = lin, ph = 0, scale = 1;
        for (int i = p.ndims - 1; i >= 0; --i) {
            const dim_t x = rest % p.in[i];
            rest /= p.in[i];
            ph += (x % p.stride[i]) * scale;
            scale *= p.stride[i];
        }
        one[static_cast<std::size_t>(lin)] = static_cast<std::uint8_t>(ph);
    }
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = one[k % one.size()];
    return out;
}

std::vector<std::string> phase_names(const Problem& p) {
    const int n = phase_count(p);
    std::vector<std::string> names;
    const auto axes = spatial(p.ndims);
    for (int ph = 0; ph < n; ++ph) {
        std::string res, taps;
        dim_t count = 1, below = 1;  // below: the phases of the axes after axis i
        for (int i = p.ndims - 1; i >= 0; --i) below *= p.stride[i];
        for (int i = 0; i < p.ndims; ++i) {
            below /= p.stride[i];
            const dim_t r = (ph / below) % p.stride[i];
            const auto t = phase_taps(p, i, r);
            count *= static_cast<dim_t>(t.size());
            const std::string& ax = axes[static_cast<std::size_t>(i)];
            res +=
                (i ? " " : "") + ax + "%" + std::to_string(p.stride[i]) + "=" + std::to_string(r);
            taps += (i ? " k" : "k") + ax + " {";
            for (std::size_t j = 0; j < t.size(); ++j)
                taps += (j ? "," : "") + std::to_string(t[j]);
            taps += "}";
        }
        names.push_back(res + ": " + taps + " (" + std::to_string(count) +
                        (count == 1 ? " tap)" : " taps)"));
    }
    return names;
}

namespace {

void build_fliprot(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::flip_rot(p);
    const Shape ws = wei_shape(p);
    b.plan({{"W", ws}, {"W'", m.dst()}});
    auto w = b.data(ws, 2);
    const int wi = b.add(make_panel("W", "weights: K x C grid of kernels", ws, wei_roles(ws), w));
    const int fi = b.add(make_panel("W'", "FlipRot(W): C x K grid, every kernel rotated 180 deg",
                                    m.dst(), wei_roles(m.dst()), run_map(m, w)));
    b.link(m, wi, fi, true);
    std::vector<float> fast(b.v.panels[1].values.size());
    flip_rot_kernel(p, w.data(), fast.data());
    b.v.check = check_line("W' equals the engine's fast flip_rot kernel",
                           max_abs_diff(fast, b.v.panels[1].values), 0);
    // The kernel size by its axes (kh x kw): K counts output channels everywhere else.
    static const char* at[] = {"i", "j", "l"};
    std::string lhs = "W'(c, k", rhs = "W(k, c", names, sizes;
    for (int i = 0; i < p.ndims; ++i) {
        const std::string k = "k" + std::string(p.axis_name(i));
        lhs += std::string(", ") + at[i];
        rhs += ", " + k + "-1-" + at[i];
        names += (i ? " x " : "") + k;
        sizes += (i ? " x " : "") + std::to_string(p.kernel[i]);
    }
    b.v.caption =
        "FlipRot: swap the output and input channel dims (per group) and reverse every "
        "spatial axis: " +
        lhs + ") = " + rhs + "), kernel size " + names + " = " + sizes;
    const DataKind d = b.r.data;
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) {
        return expression_formula(vm, panel, linear, d);
    };
}

void build_fractal(Builder& b) {
    const Problem& p = b.p;
    const dim_t c0 = b.r.c0;
    davinci::check_c0(c0);
    b.maps_total = 2;
    const Shape xs = act_shape(p, false, "c"), ws = wei_shape(p);
    const IndexMap ma = davinci::pack_activation(xs.dims, c0);
    const IndexMap mw = davinci::pack_weight(ws.dims, c0);
    b.plan({{"X", xs}, {"X5", ma.dst()}, {"W", ws}, {"Wz", mw.dst()}});
    auto x = b.data(xs, 1), w = b.data(ws, 2);
    const int xi = b.add(make_panel("X", "input NCHW", xs, act_roles(xs.rank()), x));
    const std::string fmt5 = p.ndims == 3 ? "NDC1HWC0" : p.ndims == 2 ? "NC1HWC0" : "NC1WC0";
    Panel x5 = make_panel("X5", fmt5 + ": C1 blocks of C0 lanes; rows = spatial position", ma.dst(),
                          blocked_act_roles(ma.dst()), run_map(ma, x));
    const int x5i = b.add(std::move(x5));
    Panel wp = make_panel("W", "weights OIHW", ws, wei_roles(ws), w);
    wp.new_row = true;
    const int wi = b.add(std::move(wp));
    Panel wz = make_panel("Wz", "FRACTAL_Z: (C1 k..) x N1 fractals of 16 x C0", mw.dst(),
                          fractal_roles(), run_map(mw, w));
    const int wzi = b.add(std::move(wz));
    const int la = b.link(ma, xi, x5i, true);
    const int lw = b.link(mw, wi, wzi, true);
    b.v.panels[static_cast<std::size_t>(x5i)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(la)]);
    b.v.panels[static_cast<std::size_t>(wzi)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(lw)]);
    std::vector<float> fa(b.v.panels[1].values.size()), fw(b.v.panels[3].values.size());
    davinci::pack_activation_kernel(xs.dims, c0, x.data(), fa.data());
    davinci::pack_weight_kernel(ws.dims, c0, w.data(), fw.data());
    b.v.check = check_line(
        "the engine's fast pack kernels give the same " + fmt5 + " and FRACTAL_Z",
        std::max(max_abs_diff(fa, b.v.panels[1].values), max_abs_diff(fw, b.v.panels[3].values)),
        0);
    b.v.caption = "DaVinci layouts, C0 = " + std::to_string(c0) + ": " + fmt5 +
                  " (channels in blocks of C0 lanes, lanes past C are zero) and FRACTAL_Z "
                  "(16 x C0 fractals: 16 output channels by C0 input channels)";
    const DataKind d = b.r.data;
    // Both packs are expressions: the hover shows their terms with the numbers filled in.
    b.v.formula = [d](const ViewModel& vm, int panel, dim_t linear) {
        return expression_formula(vm, panel, linear, d);
    };
}

void build_tnc(Builder& b) {
    const Problem& p = b.p;
    const dim_t c0 = b.r.c0;
    davinci::check_c0(c0);
    b.maps_total = 4;
    const Shape xs = act_shape(p, false, "c"), ys = act_shape(p, true, "k");
    const IndexMap pa = davinci::pack_activation(xs.dims, c0);
    const IndexMap py = davinci::pack_activation(ys.dims, c0);
    const IndexMap mt = davinci::tnc5d(xs.dims, c0);
    const IndexMap mf = davinci::tncf(ys.dims, c0);
    b.plan({{"X", xs},
            {"X5", pa.dst()},
            {"T", mt.dst()},
            {"dY", ys},
            {"dY5", py.dst()},
            {"dYf", mf.dst()}});
    auto x = b.data(xs, 1), dy = b.data(ys, 3);
    const int xi = b.add(make_panel("X", "input NCHW", xs, act_roles(xs.rank()), x));
    auto x5 = run_map(pa, x);
    const int x5i =
        b.add(make_panel("X5", "X in NC1HWC0", pa.dst(), blocked_act_roles(pa.dst()), x5));
    // T's tiles as X's: channels across (wrapped into a grid), batch blocks down.
    std::vector<Role> troles = blocked_act_roles(mt.dst());
    troles.front() = Role::TileX;
    for (std::size_t i = 0; i < troles.size(); ++i)
        if (mt.dst().names[i] == "n1") troles[i] = Role::TileY;
    const int ti =
        b.add(make_panel("T", "TNC(X): batch becomes the blocked channel dim (C, N1, H, W, N0)",
                         mt.dst(), troles, run_map(mt, x5)));
    Panel yp = make_panel("dY", "output gradient NCHW", ys, act_roles(ys.rank()), dy);
    yp.new_row = true;
    const int yi = b.add(std::move(yp));
    auto y5 = run_map(py, dy);
    const int y5i =
        b.add(make_panel("dY5", "dY in NC1HWC0", py.dst(), blocked_act_roles(py.dst()), y5));
    const int fi = b.add(make_panel("dYf", "TNCf(dY): FRACTAL_Z of the kernel (K, N, Ho, Wo)",
                                    mf.dst(), fractal_roles(), run_map(mf, y5)));
    // Name the dims by what they hold (T's come named so from tnc5d): the fractal rows of dYf
    // run over (batch block, position), a fractal is 16 k by C0 n.
    {
        b.v.panels[static_cast<std::size_t>(fi)].shape.names = {p.ndims == 3   ? "d,n1,h,w"
                                                                : p.ndims == 2 ? "n1,h,w"
                                                                               : "n1,w",
                                                                "k1", "k0", "n0"};
    }
    const int l0 = b.link(pa, xi, x5i, false);
    const int l1 = b.link(mt, x5i, ti, true);
    const int l2 = b.link(py, yi, y5i, false);
    const int l3 = b.link(mf, y5i, fi, true);
    auto& P = b.v.panels;
    P[static_cast<std::size_t>(x5i)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l0)]);
    P[static_cast<std::size_t>(ti)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l1)]);
    P[static_cast<std::size_t>(y5i)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l2)]);
    P[static_cast<std::size_t>(fi)].padding_lane =
        zero_lanes(b.v.links[static_cast<std::size_t>(l3)]);
    std::vector<float> ft(P[static_cast<std::size_t>(ti)].values.size()),
        ff(P[static_cast<std::size_t>(fi)].values.size());
    davinci::tnc5d_kernel(xs.dims, c0, x5.data(), ft.data());
    davinci::tncf_kernel(ys.dims, c0, y5.data(), ff.data());
    b.v.check = check_line("the engine's fast tnc5d and tncf kernels give the same tensors",
                           std::max(max_abs_diff(ft, P[static_cast<std::size_t>(ti)].values),
                                    max_abs_diff(ff, P[static_cast<std::size_t>(fi)].values)),
                           0);
    b.v.caption = "TNC and TNCf (backward weight in DaVinci formats, C0 = " + std::to_string(c0) +
                  "): swap N and C so the batch is reduced over; TNCf writes dY straight into "
                  "FRACTAL_Z as the kernel of the dW convolution";
    const DataKind d = b.r.data;
    const dim_t N = p.mb, K = p.oc, n1s = (p.mb + c0 - 1) / c0;
    std::vector<dim_t> outs;
    for (int i = 0; i < p.ndims; ++i) outs.push_back(p.out(i));
    b.v.formula = [p, c0, d, N, K, n1s, outs](const ViewModel& vm, int panel,
                                              dim_t linear) -> std::string {
        const auto num = [](dim_t v) { return std::to_string(v); };
        if (panel == 1 || panel == 4) return expression_formula(vm, panel, linear, d);
        if (panel == 2) {
            // T (C, [D,] N1, H, W, N0): the channel outermost, the batch blocked in N0 lanes.
            const Panel& t = vm.panels[2];
            const auto c = coords(t.shape, linear);
            const std::size_t n1_axis = t.shape.rank() == 6 ? 2 : 1;
            const dim_t n = c[n1_axis] * c0 + c.back(), ch = c[0];
            std::string s = cell_name(t, linear) + ": TNC swaps N and C: channel c = " + num(ch) +
                            " outermost, batch n = n1*C0 + n0 = " + num(c[n1_axis]) + "*" +
                            num(c0) + " + " + num(c.back()) + " = " + num(n);
            if (n >= N)
                return s + " >= N = " + num(N) +
                       ": batch padding (N padded to N1*C0 = " + num(n1s * c0) + "), zero";
            const dim_t src = vm.links[1].image[static_cast<std::size_t>(linear)];
            return s + "; c1 = c/C0 = " + num(ch) + "/" + num(c0) + " = " + num(ch / c0) +
                   ", c0 = c%C0 = " + num(ch % c0) + " <- " + cell_name(vm.panels[1], src) + " = " +
                   value_of(vm.panels[1], src, d);
        }
        if (panel == 5) {
            // TNCf: dY as the kernel (Cout = K, Cin = N, Ho, Wo) in FRACTAL_Z (N1*Ho*Wo, K1,
            // 16, C0).
            const Panel& f = vm.panels[5];
            const auto c = coords(f.shape, linear);
            std::vector<dim_t> pos;
            dim_t n1 = 0;
            const std::string row =
                split_fractal_row(c[0], n1s, outs, spatial(p.ndims), "n1", pos, &n1);
            const dim_t k0s = f.shape.dims[2], k = c[1] * k0s + c[2], n = n1 * c0 + c[3];
            std::string s = cell_name(f, linear) +
                            ": TNCf writes dY as the kernel of the dW convolution (Cout = K, Cin = "
                            "N): " +
                            row + "; k = k1*16 + k0 = " + num(c[1]) + "*" + num(k0s) + " + " +
                            num(c[2]) + " = " + num(k) + ", n = n1*C0 + n0 = " + num(n1) + "*" +
                            num(c0) + " + " + num(c[3]) + " = " + num(n);
            if (k >= K) return s + " (k >= K = " + num(K) + "): padding (K padded to K1*16), zero";
            if (n >= N)
                return s + " >= N = " + num(N) +
                       ": batch padding (N padded to N1*C0 = " + num(n1s * c0) + "), zero";
            const dim_t src = vm.links[3].image[static_cast<std::size_t>(linear)];
            return s + "; c1 = k/C0 = " + num(k / c0) + ", c0 = k%C0 = " + num(k % c0) + " <- " +
                   cell_name(vm.panels[4], src) + " = " + value_of(vm.panels[4], src, d);
        }
        return generic_formula(vm, panel, linear, d);
    };
}

// winograd: X, its overlapping 6x6 patches (one per 4x4 output tile; maps::winograd_tiles,
// animated), the weights and Y as engine's winograd computes it (checked against direct). The
// transforms are arithmetic, not data movement: the caption gives them.
void build_winograd(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::winograd_tiles(p);  // Error naming the rule for other problems
    const Shape xs = m.src(), ws = wei_shape(p), ys = act_shape(p, true, "k");
    b.plan({{"X", xs}, {"D", m.dst()}, {"W", ws}, {"Y", ys}});
    b.maps_total = 1;
    auto x = b.data(xs, 1), w = b.data(ws, 2);
    Panel xp = make_panel("X", "input", xs, act_roles(xs.rank()), x);
    xp.pad_left = p.pad_begin[1];
    xp.pad_right = p.pad_end[1];
    xp.pad_top = p.pad_begin[0];
    xp.pad_bottom = p.pad_end[0];
    const int xi = b.add(std::move(xp));
    // One row of tiles per (n, c, tile row), the tile columns side by side.
    Panel dp = make_panel(
        "D", "tiles: the 6x6 patch of every 4x4 output tile, 4 apart", m.dst(),
        {Role::TileY, Role::TileY, Role::TileY, Role::TileX, Role::Row, Role::Col}, run_map(m, x));
    dp.auto_wrap = false;
    const int di = b.add(std::move(dp));
    b.link(m, xi, di, true);
    Panel wp = make_panel("W", "weights", ws, wei_roles(ws), w);
    wp.new_row = true;
    b.add(std::move(wp));
    const Tensor xt = to_tensor(x, xs.dims), wt = to_tensor(w, ws.dims);
    std::vector<float> y = from_tensor(forward(p, xt, wt, nullptr, "winograd"));
    const std::vector<float> ref = from_tensor(forward(p, xt, wt, nullptr, "direct"));
    // Within 1e-5 of Y's largest magnitude: the transforms round (the benchmark's check).
    double big = 0;
    for (float v : ref) big = std::max(big, std::abs(double(v)));
    b.v.check = check_line("Y (winograd) equals direct within 1e-5 of its largest |value|",
                           max_abs_diff(y, ref), 1e-5 * big);
    b.add(make_panel("Y", "Y by winograd: 36 products per tile and channel pair", ys,
                     act_roles(ys.rank()), std::move(y)));
    b.v.caption =
        "Winograd F(4x4, 3x3): each 4x4 tile of Y reads a 6x6 patch d of X. V = B^T d B and "
        "U = G g G^T (6x6 each), M = sum over channels of U * V point by point (36 GEMMs over "
        "all tiles), Y tile = A^T M A: 36 multiplications per tile and channel pair instead of "
        "144";
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel != 1) return generic_formula(vm, panel, linear, d);
        const auto c = coords(vm.panels[1].shape, linear);
        const dim_t yy = 4 * c[2] + c[4] - p.pad_begin[0], xx = 4 * c[3] + c[5] - p.pad_begin[1];
        std::string s = cell_name(vm.panels[1], linear) + ": h = 4*" + std::to_string(c[2]) + "+" +
                        std::to_string(c[4]) + "-" + std::to_string(p.pad_begin[0]) + " = " +
                        std::to_string(yy) + ", w = 4*" + std::to_string(c[3]) + "+" +
                        std::to_string(c[5]) + "-" + std::to_string(p.pad_begin[1]) + " = " +
                        std::to_string(xx);
        const dim_t src = vm.links[0].image[static_cast<std::size_t>(linear)];
        return s + (src < 0
                        ? "  -> zero (outside X)"
                        : "  -> " + cell_name(vm.panels[0], src) + " = " +
                              format_value(vm.panels[0].values[static_cast<std::size_t>(src)], d));
    };
}

void build_weight_grad(Builder& b) {
    const Problem& p = b.p;
    const IndexMap m = maps::im2col(p);
    const Shape xs = m.src(), ys = act_shape(p, true, "k"), ws = wei_shape(p);
    b.plan({{"X", xs}, {"B", m.dst()}, {"dY", ys}, {"dW", ws}});
    auto x = b.data(xs, 1), dy = b.data(ys, 3);
    const int xi = b.add(make_panel("X", "input", xs, act_roles(xs.rank()), x));
    Panel bp = make_panel("B", "B = im2col(X): rows (c, k..), cols = output position", m.dst(),
                          {Role::TileY, Role::TileX, Role::Row, Role::Col}, run_map(m, x));
    bp.auto_wrap = false;  // one matrix per (n, g): never wrapped
    const int bi = b.add(std::move(bp));
    // dY as a K x prod(out) matrix per image: the left operand of dW = dY B^T.
    std::vector<Role> yr(ys.dims.size(), Role::Col);
    yr[0] = Role::TileY;
    yr[1] = Role::Row;
    Panel yp = make_panel("dY", "dY: rows k, cols = output position", ys, yr, dy);
    // dY beside the result dW (their rows k aligned), below X and B: the fit can use the height
    // (mb1ic3ih6oc4kh3: cells 18 px instead of 14 in a 1600x1000 shot).
    yp.new_row = true;
    const int yi = b.add(std::move(yp));
    const Tensor dw =
        backward_weight(p, to_tensor(x, xs.dims), to_tensor(dy, ys.dims), "im2col_gemm");
    const char* ref_algo = check_algorithm(p, Pass::BackwardWeight);
    const Tensor ref = backward_weight(p, to_tensor(x, xs.dims), to_tensor(dy, ys.dims), ref_algo);
    std::vector<Role> wr(ws.dims.size(), Role::Col);
    wr[0] = Role::Row;
    const int wi =
        b.add(make_panel("dW", "dW = dY B^T: rows k, cols (c, k..)", ws, wr, from_tensor(dw)));
    b.link(m, xi, bi, false);
    Relation rel;
    rel.name = "dW = dY B^T";
    rel.result = wi;
    rel.operands = {bi, yi};
    rel.fn = [p](dim_t lin, std::vector<std::vector<dim_t>>& out) {
        const dim_t R = p.icg() * p.kernel_spatial(), M = p.out_spatial(), Kg = p.ocg();
        const dim_t r = lin % R, k = lin / R, g = k / Kg;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t col = 0; col < M; ++col) {
                out[0].push_back(((n * p.groups + g) * R + r) * M + col);
                out[1].push_back((n * p.oc + k) * M + col);
            }
    };
    b.v.relations.push_back(std::move(rel));
    b.v.drivers.push_back({-1, 0});
    b.v.check = check_line(
        "dW (im2col_gemm) equals the engine's backward_weight (" + std::string(ref_algo) + ")",
        max_abs_diff(from_tensor(dw), from_tensor(ref)));
    b.v.caption =
        "weight gradient: dW = dY B^T, one row of dY against one row of B per "
        "element, summed over images and output positions";
    const DataKind d = b.r.data;
    b.v.formula = [p, d](const ViewModel& vm, int panel, dim_t linear) -> std::string {
        if (panel == 3) {
            const dim_t R = p.icg() * p.kernel_spatial();
            return cell_name(vm.panels[3], linear) +
                   " = sum over n, col of dY(n, k=" + std::to_string(linear / R) +
                   ", col) * B(n, g, row=" + std::to_string(linear % R) + ", col) = " +
                   format_value(vm.panels[3].values[static_cast<std::size_t>(linear)], d) + "  (" +
                   std::to_string(p.mb * p.out_spatial()) + " products)";
        }
        return generic_formula(vm, panel, linear, d);
    };
}

}  // namespace

namespace {

void build_timings_placeholder(Builder& b) {
    b.v.caption =
        "timings: the verified timing chart of the current problem comes here (not "
        "built yet: another part of ConvLab delivers it)";
}

// The builders of the hand-written views, by their name in the view registry (lesson/views.hpp);
// the generic map views ("map:NAME") are built by build_map_view.
const std::pair<const char*, void (*)(Builder&)> kBuilders[] = {
    {"im2col", build_im2col},
    {"col2im", build_col2im},
    {"stride", build_stride},
    {"fliprot", build_fliprot},
    {"fractal", build_fractal},
    {"tnc", build_tnc},
    {"weight_grad", build_weight_grad},
    {"winograd", build_winograd},
    {"timings", build_timings_placeholder}};

}  // namespace

bool has_view_builder(const std::string& name) {
    if (name == "tensors") return true;
    if (const lesson::ViewSpec* spec = lesson::find_view(name); spec && !spec->map.empty())
        return true;
    for (const auto& [n, f] : kBuilders)
        if (name == n) return true;
    return false;
}

ViewModel build_view(const ViewRequest& r, std::atomic<float>* progress) {
    if (r.view == "tensors") return build_tensors_view(r);
    const lesson::ViewSpec* spec = lesson::find_view(r.view);
    if (spec && !spec->map.empty()) return build_map_view(r, spec->map, progress);
    r.problem.check();
    Builder b{r, r.problem, progress, {}};
    b.v.name = r.view;
    void (*build)(Builder&) = nullptr;
    for (const auto& [n, f] : kBuilders)
        if (r.view == n) build = f;
    if (!spec || !build) {
        std::string known;
        for (auto& n : view_names()) known += (known.empty() ? "" : ", ") + n;
        throw Error("unknown view '" + r.view + "' (views: " + known + ")");
    }
    build(b);
    arrange_view(b.v);
    if (progress) progress->store(1.0f);
    return std::move(b.v);
}

// [SECTION] playback

bool Playback::advance(double dt, dim_t n) {
    if (paused || n <= 0) return false;
    time_left += dt * speed;
    bool changed = false;
    while (time_left >= 1.0) {
        time_left -= 1.0;
        if (step + 1 < n) {
            ++step;
            changed = true;
        } else if (loop) {
            step = 0;
            changed = true;
        } else {
            paused = true;
            time_left = 0;
            break;
        }
    }
    return changed;
}

void Playback::step_forward(dim_t n) {
    if (n <= 0) return;
    step = step + 1 < n ? step + 1 : (loop ? 0 : n - 1);
}

void Playback::step_back(dim_t n) {
    if (n <= 0) return;
    step = step > 0 ? step - 1 : (loop ? n - 1 : 0);
}

void Playback::scrub(dim_t s, dim_t n) {
    step = n <= 0 ? 0 : std::clamp(s, dim_t{0}, n - 1);
}

namespace {

// A relation's result panel is walked row-major: its last axis is the line.
dim_t mid_extent(const Panel& p) {
    const auto& d = p.shape.dims;
    return d.size() < 2 ? 1 : d[d.size() - 2];
}

}  // namespace

dim_t num_steps(const ViewModel& v, Granularity g) {
    dim_t n = 0;
    for (const auto& d : v.drivers) {
        if (d.link >= 0) {
            n = std::max(n, v.links[static_cast<std::size_t>(d.link)].num_steps(g));
        } else {
            const Panel& r = v.panels[static_cast<std::size_t>(
                v.relations[static_cast<std::size_t>(d.relation)].result)];
            n = std::max(n, walk_num_steps(g, r.numel(), r.shape.dims.back(), mid_extent(r)));
        }
    }
    return n;
}

// [SECTION] step state and hover linking

namespace {

// Cells reached from `seeds` (per panel) through links and relations, each panel reached once.
// Seeded panels keep their seeds. At most `cap` cells are followed out of one panel.
void propagate(const ViewModel& v, std::vector<std::vector<dim_t>>& cells,
               std::vector<bool>& reached, std::size_t cap) {
    bool grew = true;
    while (grew) {
        grew = false;
        for (const auto& l : v.links) {
            const auto s = static_cast<std::size_t>(l.src), d = static_cast<std::size_t>(l.dst);
            if (reached[s] == reached[d]) continue;
            const bool forward = reached[s];
            const auto& from = cells[forward ? s : d];
            std::vector<dim_t> out;
            std::size_t n = 0;
            for (dim_t c : from) {
                if (++n > cap) break;
                for (dim_t t : forward ? l.destinations_of(c) : l.sources_of(c)) out.push_back(t);
            }
            std::sort(out.begin(), out.end());
            out.erase(std::unique(out.begin(), out.end()), out.end());
            cells[forward ? d : s] = std::move(out);
            reached[forward ? d : s] = true;
            grew = true;
        }
        for (const auto& rel : v.relations) {
            const auto res = static_cast<std::size_t>(rel.result);
            if (!reached[res]) continue;
            bool any = false;
            for (int o : rel.operands) any |= !reached[static_cast<std::size_t>(o)];
            if (!any) continue;
            std::vector<std::vector<dim_t>> out(rel.operands.size());
            std::vector<std::vector<dim_t>> tmp(rel.operands.size());
            std::size_t n = 0, looked = 0;
            for (dim_t c : cells[res]) {
                if (++n > cap || looked > cap) break;
                for (auto& t : tmp) t.clear();
                rel.fn(c, tmp);
                for (std::size_t i = 0; i < tmp.size(); ++i) {
                    out[i].insert(out[i].end(), tmp[i].begin(), tmp[i].end());
                    looked += tmp[i].size();
                }
            }
            for (std::size_t i = 0; i < rel.operands.size(); ++i) {
                const auto o = static_cast<std::size_t>(rel.operands[i]);
                if (reached[o]) continue;
                std::sort(out[i].begin(), out[i].end());
                out[i].erase(std::unique(out[i].begin(), out[i].end()), out[i].end());
                cells[o] = std::move(out[i]);
                reached[o] = true;
                grew = true;
            }
        }
    }
}

}  // namespace

bool follow_box(const ViewModel& v, const StepState& st, double max_w, double max_h, CellBox& box) {
    // The box of panel i's current cells (and padding cells read), grown into b.
    const auto grow = [&](std::size_t i, CellBox& b, bool& any, bool first_only) {
        if (i >= v.panels.size() || i >= st.current.size()) return;
        const Panel& pn = v.panels[i];
        const auto add = [&](double x, double y) {
            b = any ? CellBox{std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x + 1),
                              std::max(b.y1, y + 1)}
                    : CellBox{x, y, x + 1, y + 1};
            any = true;
        };
        for (const dim_t c : st.current[i]) {
            const CellPos cp = cell_pos(pn, c);
            add(cp.x, cp.y);
            if (first_only) return;
        }
        if (i < st.panels.size())
            for (const CellPos& cp : st.panels[i].current_pads) add(pn.x + cp.x, pn.y + cp.y);
    };
    bool any = false;
    for (std::size_t i = 0; i < v.panels.size(); ++i) grow(i, box, any, false);
    if (!any) return false;
    if (box.width() <= max_w && box.height() <= max_h) return true;
    // Too large to keep in view whole: the destination panel's cells, or its first one.
    int dst = -1;
    if (!v.drivers.empty()) {
        const Driver& d = v.drivers.front();
        if (d.link >= 0) dst = v.links[static_cast<std::size_t>(d.link)].dst;
        if (d.relation >= 0) dst = v.relations[static_cast<std::size_t>(d.relation)].result;
    }
    if (dst < 0) return true;
    CellBox b;
    bool found = false;
    grow(static_cast<std::size_t>(dst), b, found, false);
    if (!found) return true;
    if (b.width() > max_w || b.height() > max_h) {
        found = false;
        grow(static_cast<std::size_t>(dst), b, found, true);
    }
    box = b;
    return true;
}

void follow_pan(const CellBox& box, double view_w, double view_h, float zoom, float avail_w,
                float avail_h, float& pan_x, float& pan_y) {
    const auto axis = [zoom](double lo, double hi, double extent, float avail) {
        const double view_px = extent * zoom;
        if (view_px <= avail) return static_cast<float>((avail - view_px) * 0.5);
        const double centred = avail * 0.5 - (lo + hi) * 0.5 * zoom;
        return static_cast<float>(std::clamp(centred, static_cast<double>(avail) - view_px, 0.0));
    };
    pan_x = axis(box.x0, box.x1, view_w, avail_w);
    pan_y = axis(box.y0, box.y1, view_h, avail_h);
}

TitlePlace pin_title(float at_x, float at_y, float text_w, float text_h, const CellBox& panel,
                     const CellBox& visible) {
    TitlePlace t{at_x, at_y, false};
    const auto vx0 = static_cast<float>(visible.x0), vy0 = static_cast<float>(visible.y0);
    // Only while the panel shows below the top edge by more than the title's height (right of the
    // left edge by more than a quarter of its width), and overlaps the canvas along the other axis.
    if (at_y < vy0 && panel.y1 > vy0 + text_h && panel.x1 > visible.x0 && panel.x0 < visible.x1) {
        t.y = vy0;
        t.pinned = true;
    }
    if (at_x < vx0 && panel.x1 > vx0 + text_w * 0.25 && panel.y1 > visible.y0 &&
        panel.y0 < visible.y1) {
        t.x = vx0;
        t.pinned = true;
    }
    return t;
}

namespace {

// The element steps [begin, end) driver `drv` runs at `step` over its `n` elements: a driver
// shorter than the view has finished (all run, nothing current).
void driver_range(const ViewModel& v, const Driver& drv, Granularity g, dim_t step, dim_t& begin,
                  dim_t& end, dim_t& n) {
    if (drv.link >= 0) {
        const Link& l = v.links[static_cast<std::size_t>(drv.link)];
        n = static_cast<dim_t>(l.order.size());
        l.step_range(g, step, begin, end);
        if (step >= l.num_steps(g)) begin = end = n;
        return;
    }
    const Panel& pr = v.panels[static_cast<std::size_t>(
        v.relations[static_cast<std::size_t>(drv.relation)].result)];
    n = pr.numel();
    walk_step_span(g, step, n, pr.shape.dims.back(), mid_extent(pr), begin, end);
    if (step >= walk_num_steps(g, n, pr.shape.dims.back(), mid_extent(pr))) begin = end = n;
}

// The current cells of st.step (and the padding cells they read), flagged kCurrent: the cells
// the drivers run at the step, and what they read or feed in the panels no driver touches.
void set_current(const ViewModel& v, StepState& st) {
    st.current.assign(v.panels.size(), {});
    for (PanelState& ps : st.panels) ps.current_pads.clear();
    std::vector<bool> reached(v.panels.size(), false);
    for (const auto& drv : v.drivers) {
        dim_t begin = 0, end = 0, n = 0;
        driver_range(v, drv, st.granularity, st.step, begin, end, n);
        if (drv.link >= 0) {
            const Link& l = v.links[static_cast<std::size_t>(drv.link)];
            const auto si = static_cast<std::size_t>(l.src), di = static_cast<std::size_t>(l.dst);
            PanelState& ps = st.panels[si];
            auto& cs = st.current[l.is_gather() ? di : si];
            auto& co = st.current[l.is_gather() ? si : di];
            for (dim_t e = begin; e < end; ++e) {
                const dim_t d = l.order[static_cast<std::size_t>(e)];
                cs.push_back(d);
                const dim_t img = l.image[static_cast<std::size_t>(d)];
                if (img >= 0) {
                    co.push_back(img);
                } else if (l.is_gather() && v.zero_source) {
                    CellPos pos;
                    if (v.zero_source(v, drv.link, d, pos))
                        ps.current_pads.push_back({pos.x - v.panels[si].x, pos.y - v.panels[si].y});
                }
            }
            reached[si] = reached[di] = true;
        } else {
            const Relation& rel = v.relations[static_cast<std::size_t>(drv.relation)];
            const auto ri = static_cast<std::size_t>(rel.result);
            for (dim_t d = begin; d < end; ++d) st.current[ri].push_back(d);
            reached[ri] = true;
            // Operands: what the current result cells read, bounded (the Whole of a big view; a
            // Line of a ResNet-50 stem's dX reads 224 x 3136 cells of each operand, a second
            // of set inserts a step): at most 4096 result cells and 64 Ki operand cells.
            std::vector<std::vector<dim_t>> tmp(rel.operands.size());
            std::size_t budget = std::size_t{1} << 16;
            dim_t k = 0;
            for (dim_t d = begin; d < end && k < 4096 && budget > 0; ++d, ++k) {
                for (auto& t : tmp) t.clear();
                rel.fn(d, tmp);
                for (std::size_t i = 0; i < tmp.size(); ++i) {
                    const auto o = static_cast<std::size_t>(rel.operands[i]);
                    st.current[o].insert(st.current[o].end(), tmp[i].begin(), tmp[i].end());
                    budget -= std::min(budget, tmp[i].size());
                }
            }
            for (const int o : rel.operands) reached[static_cast<std::size_t>(o)] = true;
        }
    }
    for (auto& c : st.current) {
        std::sort(c.begin(), c.end());
        c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    // Panels no driver touches light what the current cells read or feed.
    std::vector<bool> reach(v.panels.size());
    for (std::size_t i = 0; i < v.panels.size(); ++i) reach[i] = !st.current[i].empty();
    propagate(v, st.current, reach, 1 << 16);
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        for (dim_t c : st.current[i]) st.panels[i].flags[static_cast<std::size_t>(c)] |= kCurrent;
}

// A reduce link's destination cell `img` after element steps [0, end): the sum of its sources
// run so far, added in the order compute_step adds them (ascending source), and their count.
void reduce_cell(const ViewModel& v, const Link& l, dim_t img, dim_t end, PanelState& pd) {
    const auto& sv = v.panels[static_cast<std::size_t>(l.src)].values;
    float sum = 0.0f;
    std::int32_t count = 0;
    for (dim_t i = l.inv_start[static_cast<std::size_t>(img)];
         i < l.inv_start[static_cast<std::size_t>(img) + 1]; ++i) {
        const dim_t d = l.inv_items[static_cast<std::size_t>(i)];
        if (l.step_of[static_cast<std::size_t>(d)] >= end) continue;
        sum += sv[static_cast<std::size_t>(d)];
        ++count;
    }
    const auto iu = static_cast<std::size_t>(img);
    pd.shown[iu] = sum;
    pd.count[iu] = count;
    if (count == 0)
        pd.flags[iu] |= kPending;
    else
        pd.flags[iu] &= static_cast<std::uint8_t>(~kPending);
}

// No panel is written by two drivers (a gather's or a reduce's destination, a relation's
// result) or consumed by two reduces (their kDone): a step's change then reaches each cell's
// value and flag through one driver only, and advance_step may update it in place.
bool drivers_disjoint(const ViewModel& v) {
    std::vector<int> writes(v.panels.size(), 0), consumes(v.panels.size(), 0);
    for (const auto& drv : v.drivers) {
        if (drv.link >= 0) {
            const Link& l = v.links[static_cast<std::size_t>(drv.link)];
            ++writes[static_cast<std::size_t>(l.dst)];
            if (!l.is_gather()) ++consumes[static_cast<std::size_t>(l.src)];
        } else {
            ++writes[static_cast<std::size_t>(
                v.relations[static_cast<std::size_t>(drv.relation)].result)];
        }
    }
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        if (writes[i] > 1 || consumes[i] > 1) return false;
    return true;
}

}  // namespace

StepState compute_step(const ViewModel& v, Granularity g, dim_t step) {
    StepState st;
    st.step = step;
    st.granularity = g;
    st.model = &v;
    st.panels.resize(v.panels.size());
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        st.panels[i].shown = v.panels[i].values;
        st.panels[i].flags.assign(v.panels[i].values.size(), 0);
    }
    for (const auto& drv : v.drivers) {
        dim_t begin = 0, end = 0, n = 0;
        driver_range(v, drv, g, step, begin, end, n);
        if (drv.link >= 0) {
            const Link& l = v.links[static_cast<std::size_t>(drv.link)];
            const auto si = static_cast<std::size_t>(l.src), di = static_cast<std::size_t>(l.dst);
            PanelState& ps = st.panels[si];
            PanelState& pd = st.panels[di];
            if (l.is_gather()) {
                // Destinations appear once their step has run.
                for (dim_t d = 0; d < n; ++d)
                    if (l.step_of[static_cast<std::size_t>(d)] >= end) {
                        pd.flags[static_cast<std::size_t>(d)] |= kPending;
                        pd.shown[static_cast<std::size_t>(d)] = NAN;
                    }
            } else {
                // Running sums and contribution counts over the steps run so far.
                std::fill(pd.shown.begin(), pd.shown.end(), 0.0f);
                pd.count.assign(pd.shown.size(), 0);
                const auto& sv = v.panels[si].values;
                for (dim_t d = 0; d < n; ++d) {
                    const auto du = static_cast<std::size_t>(d);
                    const dim_t img = l.image[du];
                    if (l.step_of[du] < begin) ps.flags[du] |= kDone;
                    if (img < 0 || l.step_of[du] >= end) continue;
                    pd.shown[static_cast<std::size_t>(img)] += sv[du];
                    ++pd.count[static_cast<std::size_t>(img)];
                }
                for (std::size_t i = 0; i < pd.shown.size(); ++i)
                    if (pd.count[i] == 0) pd.flags[i] |= kPending;
            }
        } else {
            const Relation& rel = v.relations[static_cast<std::size_t>(drv.relation)];
            const auto ri = static_cast<std::size_t>(rel.result);
            for (dim_t d = end; d < n; ++d) {
                st.panels[ri].flags[static_cast<std::size_t>(d)] |= kPending;
                st.panels[ri].shown[static_cast<std::size_t>(d)] = NAN;
            }
        }
    }
    set_current(v, st);
    return st;
}

bool advance_step(const ViewModel& v, StepState& st, Granularity g, dim_t step,
                  std::vector<std::vector<dim_t>>& changed) {
    changed.assign(v.panels.size(), {});
    if (st.model != &v || st.granularity != g || st.panels.size() != v.panels.size() ||
        !drivers_disjoint(v)) {
        st = compute_step(v, g, step);
        return false;
    }
    if (step == st.step) return true;
    // The current cells of the old step lose their flag (and are redrawn).
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        for (const dim_t c : st.current[i]) {
            st.panels[i].flags[static_cast<std::size_t>(c)] &= static_cast<std::uint8_t>(~kCurrent);
            changed[i].push_back(c);
        }
    for (const auto& drv : v.drivers) {
        dim_t b0 = 0, e0 = 0, b1 = 0, e1 = 0, n = 0;
        driver_range(v, drv, g, st.step, b0, e0, n);
        driver_range(v, drv, g, step, b1, e1, n);
        const dim_t lo = std::min(e0, e1), hi = std::max(e0, e1);
        if (drv.link >= 0) {
            const Link& l = v.links[static_cast<std::size_t>(drv.link)];
            const auto si = static_cast<std::size_t>(l.src), di = static_cast<std::size_t>(l.dst);
            PanelState& ps = st.panels[si];
            PanelState& pd = st.panels[di];
            if (l.is_gather()) {
                // The destinations of element steps [lo, hi) appear (forward) or go (back).
                const auto& dv = v.panels[di].values;
                for (dim_t e = lo; e < hi; ++e) {
                    const auto d = static_cast<std::size_t>(l.order[static_cast<std::size_t>(e)]);
                    if (e1 > e0) {
                        pd.flags[d] &= static_cast<std::uint8_t>(~kPending);
                        pd.shown[d] = dv[d];
                    } else {
                        pd.flags[d] |= kPending;
                        pd.shown[d] = NAN;
                    }
                    changed[di].push_back(static_cast<dim_t>(d));
                }
            } else {
                // Sources consumed before the step's begin; each destination whose sources
                // changed is summed again from its own sources.
                for (dim_t e = std::min(b0, b1); e < std::max(b0, b1); ++e) {
                    const auto d = static_cast<std::size_t>(l.order[static_cast<std::size_t>(e)]);
                    if (b1 > b0)
                        ps.flags[d] |= kDone;
                    else
                        ps.flags[d] &= static_cast<std::uint8_t>(~kDone);
                    changed[si].push_back(static_cast<dim_t>(d));
                }
                std::vector<dim_t> imgs;
                for (dim_t e = lo; e < hi; ++e) {
                    const dim_t img =
                        l.image[static_cast<std::size_t>(l.order[static_cast<std::size_t>(e)])];
                    if (img >= 0) imgs.push_back(img);
                }
                std::sort(imgs.begin(), imgs.end());
                imgs.erase(std::unique(imgs.begin(), imgs.end()), imgs.end());
                for (const dim_t img : imgs) {
                    reduce_cell(v, l, img, e1, pd);
                    changed[di].push_back(img);
                }
            }
        } else {
            const auto ri = static_cast<std::size_t>(
                v.relations[static_cast<std::size_t>(drv.relation)].result);
            const auto& rv = v.panels[ri].values;
            PanelState& pr = st.panels[ri];
            for (dim_t d = lo; d < hi; ++d) {
                const auto du = static_cast<std::size_t>(d);
                if (e1 > e0) {
                    pr.flags[du] &= static_cast<std::uint8_t>(~kPending);
                    pr.shown[du] = rv[du];
                } else {
                    pr.flags[du] |= kPending;
                    pr.shown[du] = NAN;
                }
                changed[ri].push_back(d);
            }
        }
    }
    st.step = step;
    set_current(v, st);
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        changed[i].insert(changed[i].end(), st.current[i].begin(), st.current[i].end());
        std::sort(changed[i].begin(), changed[i].end());
        changed[i].erase(std::unique(changed[i].begin(), changed[i].end()), changed[i].end());
    }
    return true;
}

std::vector<std::vector<dim_t>> linked_cells(const ViewModel& v, int panel, dim_t linear) {
    std::vector<std::vector<dim_t>> cells(v.panels.size());
    std::vector<bool> reached(v.panels.size(), false);
    if (panel < 0 || panel >= static_cast<int>(v.panels.size()) || linear < 0 ||
        linear >= v.panels[static_cast<std::size_t>(panel)].numel())
        return cells;
    cells[static_cast<std::size_t>(panel)] = {linear};
    reached[static_cast<std::size_t>(panel)] = true;
    // Operands of a relation seen from the operand side: scan the result when it is small.
    for (const auto& rel : v.relations) {
        for (std::size_t i = 0; i < rel.operands.size(); ++i) {
            if (rel.operands[i] != panel) continue;
            const auto res = static_cast<std::size_t>(rel.result);
            if (reached[res] || v.panels[res].numel() > 50000) continue;
            std::vector<std::vector<dim_t>> tmp(rel.operands.size());
            for (dim_t c = 0; c < v.panels[res].numel(); ++c) {
                for (auto& t : tmp) t.clear();
                rel.fn(c, tmp);
                if (std::find(tmp[i].begin(), tmp[i].end(), linear) != tmp[i].end())
                    cells[res].push_back(c);
            }
            reached[res] = true;
        }
    }
    propagate(v, cells, reached, 1 << 16);
    for (auto& c : cells) {
        std::sort(c.begin(), c.end());
        c.erase(std::unique(c.begin(), c.end()), c.end());
    }
    return cells;
}

void hide_cells(StepState& st, const std::vector<std::vector<dim_t>>& cells) {
    for (std::size_t i = 0; i < cells.size() && i < st.panels.size(); ++i) {
        PanelState& ps = st.panels[i];
        for (dim_t c : cells[i]) {
            const auto cu = static_cast<std::size_t>(c);
            if (cu >= ps.shown.size()) continue;
            ps.shown[cu] = std::numeric_limits<float>::quiet_NaN();
            ps.flags[cu] = static_cast<std::uint8_t>(ps.flags[cu] | kHidden);
        }
    }
}

bool formula_hidden(const ViewModel& v, const StepState& st, int panel, dim_t linear) {
    const auto hidden = [&](std::size_t p, dim_t c) {
        return p < st.panels.size() && static_cast<std::size_t>(c) < st.panels[p].flags.size() &&
               (st.panels[p].flags[static_cast<std::size_t>(c)] & kHidden) != 0;
    };
    bool any = false;
    for (const auto& ps : st.panels)
        for (std::uint8_t f : ps.flags) any |= (f & kHidden) != 0;
    if (!any) return false;
    if (hidden(static_cast<std::size_t>(panel), linear)) return true;
    const auto cells = linked_cells(v, panel, linear);
    for (std::size_t p = 0; p < cells.size(); ++p)
        for (dim_t c : cells[p])
            if (hidden(p, c)) return true;
    return false;
}

}  // namespace convlab::app
