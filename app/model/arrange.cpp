// The arrangement of a built view for a canvas (model.hpp: fit_zoom, arrange_view).
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

namespace {

// Pixels a row of panels takes at zoom z: every panel's slot, its cells and the gap or the least
// slot of its title (the app's fit makes the last panel's slot fit too: col2im mb1ic2ih5oc3kh3
// in one row, 54 cells of slots, fits 1180 px at 21.9 px a cell; the shot measured 21.1).
double row_pixels(const std::vector<const Panel*>& row, double z, const CanvasGuess& c,
                  double gap) {
    double w = 0;
    for (const Panel* p : row) w += std::max((p->width + gap) * z, c.slot);
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
            if (row_pixels(r, zz, c, v.panel_gap) > c.width) return false;
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
            row += p.width + v.panel_gap;
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

}  // namespace convlab::app
