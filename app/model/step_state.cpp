// The step and hover state of a view model (model.hpp): what every panel shows at a
// step, which cells a hovered cell is linked to, following the step.
#include "model/model.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// Puts a panel's current cells (each once, each flagged kCurrent, and no other cell of the panel
// flagged) in ascending order: sorted where the list is short, else read back from the flags in
// one pass over them, a fraction of sorting tens of thousands of cells (a step of the stride
// view on a ResNet-50 layer: a line of dX reads 28672 cells of P).
void order_cells(std::vector<dim_t>& cells, const std::vector<std::uint8_t>& flags) {
    if (std::is_sorted(cells.begin(), cells.end())) return;
    const std::size_t want = cells.size(), n = flags.size();
    if (want * static_cast<std::size_t>(std::bit_width(want)) * 64 < n) {
        std::sort(cells.begin(), cells.end());
        return;
    }
    cells.clear();
    const std::uint8_t* f = flags.data();
    constexpr std::uint64_t kAny = 0x0101010101010101ull * kCurrent;
    std::size_t i = 0;
    for (; i + 8 <= n && cells.size() < want; i += 8) {
        std::uint64_t w = 0;
        std::memcpy(&w, f + i, 8);
        if ((w & kAny) == 0) continue;
        for (std::size_t k = i; k < i + 8; ++k)
            if (f[k] & kCurrent) cells.push_back(static_cast<dim_t>(k));
    }
    for (; i < n && cells.size() < want; ++i)
        if (f[i] & kCurrent) cells.push_back(static_cast<dim_t>(i));
}

// The cell lists propagate fills, each panel's cells once and ascending. With a step state
// (its current cells): a cell is added once by its kCurrent flag, set as it is added, and the
// list put in order by order_cells; without (a hover's linked cells): sorted and made unique.
struct CellSets {
    std::vector<std::vector<dim_t>>& cells;
    StepState* marked = nullptr;
    void add(std::size_t p, dim_t c) {
        if (marked) {
            std::uint8_t& f = marked->panels[p].flags[static_cast<std::size_t>(c)];
            if (f & kCurrent) return;
            f = static_cast<std::uint8_t>(f | kCurrent);
        }
        cells[p].push_back(c);
    }
    void finish(std::size_t p) {
        auto& c = cells[p];
        if (marked) {
            order_cells(c, marked->panels[p].flags);
        } else {
            std::sort(c.begin(), c.end());
            c.erase(std::unique(c.begin(), c.end()), c.end());
        }
    }
};

// Cells reached from the seeds (per panel, ascending) through links and relations, each panel
// reached once. Seeded panels keep their seeds; a panel not reached starts with no cells. At
// most `cap` cells are followed out of one panel, the first ones in ascending order.
void propagate(const ViewModel& v, CellSets& sets, std::vector<bool>& reached, std::size_t cap) {
    auto& cells = sets.cells;
    std::vector<std::vector<dim_t>> tmp;
    bool grew = true;
    while (grew) {
        grew = false;
        for (const auto& l : v.links) {
            const auto s = static_cast<std::size_t>(l.src), d = static_cast<std::size_t>(l.dst);
            if (reached[s] == reached[d]) continue;
            const bool forward = reached[s];
            const std::size_t to = forward ? d : s;
            const auto& from = cells[forward ? s : d];
            cells[to].clear();
            const auto add = [&sets, to](dim_t t) { sets.add(to, t); };
            std::size_t n = 0;
            for (dim_t c : from) {
                if (++n > cap) break;
                if (forward)
                    l.for_destinations(c, add);
                else
                    l.for_sources(c, add);
            }
            sets.finish(to);
            reached[to] = true;
            grew = true;
        }
        for (const auto& rel : v.relations) {
            const auto res = static_cast<std::size_t>(rel.result);
            if (!reached[res]) continue;
            // The operands this relation reaches: not reached yet, each panel once.
            std::vector<bool> fills(rel.operands.size(), false);
            bool any = false;
            for (std::size_t i = 0; i < rel.operands.size(); ++i) {
                const auto o = static_cast<std::size_t>(rel.operands[i]);
                bool first = true;
                for (std::size_t j = 0; j < i; ++j) first &= rel.operands[j] != rel.operands[i];
                fills[i] = !reached[o] && first;
                if (fills[i]) cells[o].clear();
                any |= fills[i];
            }
            if (!any) continue;
            tmp.resize(rel.operands.size());
            std::size_t n = 0, looked = 0;
            for (dim_t c : cells[res]) {
                if (++n > cap || looked > cap) break;
                for (auto& t : tmp) t.clear();
                rel.fn(c, tmp);
                for (std::size_t i = 0; i < tmp.size(); ++i) {
                    looked += tmp[i].size();
                    if (!fills[i]) continue;
                    const auto o = static_cast<std::size_t>(rel.operands[i]);
                    for (const dim_t t : tmp[i]) sets.add(o, t);
                }
            }
            for (std::size_t i = 0; i < rel.operands.size(); ++i) {
                if (!fills[i]) continue;
                const auto o = static_cast<std::size_t>(rel.operands[i]);
                sets.finish(o);
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
    // Where they fit: the whole tiles (their padding included) that hold the step's cells, and
    // the titles above their panels, so that a class sees the step's tiles whole and named, not
    // cut at the canvas's edge around the few cells of the step (lesson 12's 16-row fractal).
    CellBox tiles = box, titled = box;
    for (std::size_t i = 0; i < v.panels.size() && i < st.current.size(); ++i) {
        const Panel& pn = v.panels[i];
        dim_t last_tx = -1, last_ty = -1;
        for (const dim_t c : st.current[i]) {
            dim_t tx = 0, ty = 0, row = 0, col = 0;
            cell_tile(pn, c, tx, ty, row, col);
            if (tx == last_tx && ty == last_ty) continue;
            last_tx = tx;
            last_ty = ty;
            const CellPos tl = padded_pos(pn, tx, ty, 0, 0);
            const CellBox t{tl.x, tl.y, tl.x + tile_w(pn), tl.y + tile_h(pn)};
            tiles = {std::min(tiles.x0, t.x0), std::min(tiles.y0, t.y0), std::max(tiles.x1, t.x1),
                     std::max(tiles.y1, t.y1)};
            titled = {std::min(titled.x0, t.x0), std::min(titled.y0, pn.y - pn.title_room),
                      std::max(titled.x1, t.x1), std::max(titled.y1, t.y1)};
        }
    }
    titled = {std::min(titled.x0, tiles.x0), std::min(titled.y0, tiles.y0),
              std::max(titled.x1, tiles.x1), std::max(titled.y1, tiles.y1)};
    for (const CellBox& b : {titled, tiles})
        if (b.width() <= max_w && b.height() <= max_h) {
            box = b;
            return true;
        }
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
    TitlePlace t{at_x, at_y, false, true, static_cast<float>(visible.y0)};
    const auto vx0 = static_cast<float>(visible.x0), vy0 = static_cast<float>(visible.y0);
    const bool across = panel.x1 > visible.x0 && panel.x0 < visible.x1;
    if (at_y < vy0 && across) {
        // The title's band at the top (its backdrop 2 px taller than the text).
        const double band = vy0 + text_h + 2.0;
        if (panel.y0 < band) {
            // The top edge cuts into the panel: what shows under the band is read under the
            // title, or is a sliver that is not drawn.
            const double below = panel.y1 - band;
            if (below < std::min(0.5 * panel.height(), 0.25 * (visible.y1 - band))) {
                t.shown = false;
                return t;
            }
            t.cells_y0 = static_cast<float>(band);
        }
        t.y = vy0;
        t.pinned = true;
    }
    // Right of the left edge by more than a quarter of its width, overlapping the canvas's height.
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
        n = l.elements;
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
// the drivers run at the step, and what they read or feed in the panels no driver touches. No
// cell of st may be flagged kCurrent on entry. The lists keep their memory from the last step,
// and a cell is listed once by its flag, set as it is listed (no sorting of duplicates).
void set_current(const ViewModel& v, StepState& st) {
    st.current.resize(v.panels.size());
    for (auto& c : st.current) c.clear();
    for (PanelState& ps : st.panels) ps.current_pads.clear();
    CellSets sets{st.current, &st};
    for (const auto& drv : v.drivers) {
        dim_t begin = 0, end = 0, n = 0;
        driver_range(v, drv, st.granularity, st.step, begin, end, n);
        if (drv.link >= 0) {
            const Link& l = v.links[static_cast<std::size_t>(drv.link)];
            const auto si = static_cast<std::size_t>(l.src), di = static_cast<std::size_t>(l.dst);
            PanelState& ps = st.panels[si];
            const std::size_t cs = l.is_gather() ? di : si, co = l.is_gather() ? si : di;
            for (dim_t e = begin; e < end; ++e) {
                const dim_t d = l.element_at(e);
                sets.add(cs, d);
                const dim_t img = l.image[static_cast<std::size_t>(d)];
                if (img >= 0) {
                    sets.add(co, img);
                } else if (l.is_gather() && v.zero_source) {
                    CellPos pos;
                    if (v.zero_source(v, drv.link, d, pos))
                        ps.current_pads.push_back({pos.x - v.panels[si].x, pos.y - v.panels[si].y});
                }
            }
        } else {
            const Relation& rel = v.relations[static_cast<std::size_t>(drv.relation)];
            const auto ri = static_cast<std::size_t>(rel.result);
            for (dim_t d = begin; d < end; ++d) sets.add(ri, d);
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
                    for (const dim_t c : tmp[i]) sets.add(o, c);
                    budget -= std::min(budget, tmp[i].size());
                }
            }
        }
    }
    for (std::size_t i = 0; i < v.panels.size(); ++i) sets.finish(i);
    // Panels no driver touches light what the current cells read or feed.
    std::vector<bool> reach(v.panels.size());
    for (std::size_t i = 0; i < v.panels.size(); ++i) reach[i] = !st.current[i].empty();
    propagate(v, sets, reach, 1 << 16);
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
        if (l.step_at(d) >= end) continue;
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
                    if (l.step_at(d) >= end) {
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
                    const dim_t at = l.step_at(d);
                    if (at < begin) ps.flags[du] |= kDone;
                    if (img < 0 || at >= end) continue;
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
    // The lists keep their memory from one step to the next (a step of a large view lists tens
    // of thousands of cells; fresh lists were fresh pages to fault in at every step).
    changed.resize(v.panels.size());
    for (auto& c : changed) c.clear();
    if (st.model != &v || st.granularity != g || st.panels.size() != v.panels.size() ||
        !drivers_disjoint(v)) {
        st = compute_step(v, g, step);
        return false;
    }
    if (step == st.step) return true;
    // Each changed cell listed once, by its kListed mark (cleared before returning).
    const auto list = [&](std::size_t i, dim_t c) {
        std::uint8_t& f = st.panels[i].flags[static_cast<std::size_t>(c)];
        if (f & kListed) return;
        f = static_cast<std::uint8_t>(f | kListed);
        changed[i].push_back(c);
    };
    // The current cells of the old step lose their flag (and are redrawn).
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        for (const dim_t c : st.current[i]) {
            st.panels[i].flags[static_cast<std::size_t>(c)] &= static_cast<std::uint8_t>(~kCurrent);
            list(i, c);
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
                    const auto d = static_cast<std::size_t>(l.element_at(e));
                    if (e1 > e0) {
                        pd.flags[d] &= static_cast<std::uint8_t>(~kPending);
                        pd.shown[d] = dv[d];
                    } else {
                        pd.flags[d] |= kPending;
                        pd.shown[d] = NAN;
                    }
                    list(di, static_cast<dim_t>(d));
                }
            } else {
                // Sources consumed before the step's begin; each destination whose sources
                // changed is summed again from its own sources, once (its kSummed mark).
                for (dim_t e = std::min(b0, b1); e < std::max(b0, b1); ++e) {
                    const auto d = static_cast<std::size_t>(l.element_at(e));
                    if (b1 > b0)
                        ps.flags[d] |= kDone;
                    else
                        ps.flags[d] &= static_cast<std::uint8_t>(~kDone);
                    list(si, static_cast<dim_t>(d));
                }
                std::vector<dim_t> summed;
                for (dim_t e = lo; e < hi; ++e) {
                    const dim_t img = l.image[static_cast<std::size_t>(l.element_at(e))];
                    if (img < 0) continue;
                    std::uint8_t& f = pd.flags[static_cast<std::size_t>(img)];
                    if (f & kSummed) continue;
                    f = static_cast<std::uint8_t>(f | kSummed);
                    summed.push_back(img);
                    reduce_cell(v, l, img, e1, pd);
                    list(di, img);
                }
                for (const dim_t img : summed)
                    pd.flags[static_cast<std::size_t>(img)] &= static_cast<std::uint8_t>(~kSummed);
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
                list(ri, d);
            }
        }
    }
    st.step = step;
    set_current(v, st);
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        for (const dim_t c : st.current[i]) list(i, c);
        for (const dim_t c : changed[i])
            st.panels[i].flags[static_cast<std::size_t>(c)] &= static_cast<std::uint8_t>(~kListed);
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
    CellSets sets{cells};
    propagate(v, sets, reached, 1 << 16);
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
