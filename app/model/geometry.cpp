// Panel geometry (model.hpp): where every cell of a panel sits, hit tests, a view's rows.
#include "model/model.hpp"
#include "model/views/view_builder.hpp"

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

namespace convlab::app {

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

}  // namespace

double tile_w(const Panel& p) {
    return static_cast<double>(p.pad_left + p.cols + p.pad_right);
}
double tile_h(const Panel& p) {
    return static_cast<double>(p.pad_top + p.rows + p.pad_bottom);
}

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
    // The gap between panels: at least a character of the least title slot (kTitleSlotChars), so
    // that panels of thousands of cells, drawn at a fraction of a pixel a cell, do not touch (4
    // cells of gap were under a pixel in the stride view of res3a_branch1).
    const double gap = std::max(v.panel_gap, min_slot / kTitleSlotChars);
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
        p.slot_width = std::max(p.width + gap, min_slot);
        x += p.slot_width;
        row_h = std::max(row_h, p.height);
        v.width = std::max(v.width, p.x + p.width);
        v.height = std::max(v.height, p.y + p.height);
        prev = &p;
    }
}

}  // namespace convlab::app
