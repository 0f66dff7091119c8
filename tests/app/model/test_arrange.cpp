// The app model's canvas geometry and arrangement (app/model/geometry.cpp, arrange.cpp): every
// cell's position round-trips, texels sit where the cells do, views at realistic channel counts
// fill the canvas, rows of panels are balanced and kept as the view asks, following the step
// keeps its cells in the box, titles scrolled off are pinned. No window is opened.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "convlab/problem.hpp"
#include "model/model.hpp"
#include "model/views/view_builder.hpp"
#include "view_test_util.hpp"

using namespace convlab;
using namespace convlab::app_test;

namespace {

// Every cell's canvas position hits back to it, lies inside its panel, no two cells share a
// position, and panels do not overlap.
void check_geometry(const app::ViewModel& v, const std::string& what) {
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        const app::Panel& p = v.panels[i];
        std::set<std::pair<double, double>> seen;
        for (dim_t c = 0; c < p.numel(); ++c) {
            const app::CellPos cp = app::cell_pos(p, c);
            INFO(what << " panel " << p.name << " cell " << c);
            REQUIRE(app::hit_test(p, cp.x + 0.5, cp.y + 0.5) == c);
            CHECK(cp.x >= p.x);
            CHECK(cp.y >= p.y);
            CHECK(cp.x + 1 <= p.x + p.width + 1e-9);
            CHECK(cp.y + 1 <= p.y + p.height + 1e-9);
            seen.insert({cp.x, cp.y});
            dim_t tx = 0, ty = 0, row = 0, col = 0;
            app::cell_tile(p, c, tx, ty, row, col);
            CHECK(app::linear_at(p, tx, ty, row, col) == c);
        }
        CHECK(static_cast<dim_t>(seen.size()) == p.numel());
        // Points between tiles hit nothing.
        CHECK(app::hit_test(p, p.x - 0.5, p.y + 0.5) == -1);
    }
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        for (std::size_t j = i + 1; j < v.panels.size(); ++j) {
            const auto& a = v.panels[i];
            const auto& b = v.panels[j];
            INFO(what << " panels " << a.name << " and " << b.name);
            const bool apart = a.x + a.width <= b.x || b.x + b.width <= a.x ||
                               a.y + a.height <= b.y || b.y + b.height <= a.y;
            CHECK(apart);
        }
}

}  // namespace

// The texels of a panel's image (the GUI's texture of a large panel) are where cell_pos puts the
// cells, for every view's panels (padding, wrapped tiles, 1-D, 3-D and the DaVinci layouts).
TEST_CASE("app model: cell_texels agrees with cell_pos for every cell") {
    for (const char* desc : kProblems)
        for (const char* view : kViews) {
            app::ViewModel v = build(view, desc);
            app::arrange_view(v, app::CanvasGuess{300, 200});  // wraps rows of tiles
            for (const app::Panel& pn : v.panels) {
                const int w = static_cast<int>(std::ceil(pn.width));
                const auto tex = app::cell_texels(pn, w);
                REQUIRE(static_cast<dim_t>(tex.size()) == pn.numel());
                for (dim_t c = 0; c < pn.numel(); ++c) {
                    const app::CellPos cp = app::cell_pos(pn, c);
                    const auto want = static_cast<std::uint32_t>(static_cast<int>(cp.y - pn.y) * w +
                                                                 static_cast<int>(cp.x - pn.x));
                    INFO(view << " " << desc << " panel " << pn.name << " cell " << c);
                    REQUIRE(tex[static_cast<std::size_t>(c)] == want);
                }
            }
        }
}

TEST_CASE("app model: canvas geometry round-trips for every cell") {
    for (const char* desc : kProblems)
        for (const char* view : kViews) {
            app::ViewModel v = build(view, desc);
            app::layout_view(v, 2.5, 7.0);
            check_geometry(v, std::string(desc) + " view " + view);
        }
}

// Realistic channel counts (the audit's fractal and tnc problems, the sidebar's C = 20 preset):
// the K x C grid of kernels, FRACTAL_Z and TNC(X) wrap into near-square grids instead of tall
// strips (before: W 31 x 215 cells, T 16 x 739; the views fit at about 2.4 and 0.7 px a cell).
TEST_CASE("app model: views at realistic channel counts are laid out to fill the canvas") {
    struct Case {
        const char* view;
        const char* desc;
        double min_zoom;  // fit_zoom on the default canvas guess, px per cell
    };
    const Case cases[] = {
        {"fractal", "mb1ic20ih4oc18kh3ph1", 4.0},      {"tnc", "mb1ic20ih6oc18kh3", 2.5},
        {"fractal", "mb1ic20ih2oc18kh1", 8.0},         {"fractal", "mb2ic40ih3oc36kh3", 2.0},
        {"tnc", "mb1ic20id3ih4iw4oc18kd2kh2kw2", 2.0},
    };
    for (const auto& cs : cases) {
        app::ViewModel v = build(cs.view, cs.desc, app::DataKind::Integer, 16);
        const std::string what = std::string(cs.view) + " " + cs.desc;
        INFO(what);
        for (const auto& p : v.panels) {
            INFO("panel " << p.name << ": " << p.width << " x " << p.height << " cells");
            CHECK(p.height <= 3.0 * p.width);  // no tall strip
            CHECK(p.width <= 6.0 * p.height);  // nor a long band
        }
        CHECK(v.width <= 3.0 * v.height);
        CHECK(v.height <= 1.5 * v.width);
        const double z = app::fit_zoom(v);
        MESSAGE(what << ": fit zoom " << z << " px, view " << v.width << " x " << v.height);
        CHECK(z >= cs.min_zoom);
        // Wrapping kept the cell <-> tensor coordinate mapping: geometry round-trips.
        app::layout_view(v, 2.5, 7.0);
        check_geometry(v, what);
    }
    // The arrangement keeps rows already chosen and the reading order.
    const app::ViewModel f = build("fractal", "mb1ic20ih4oc18kh3ph1", app::DataKind::Integer, 16);
    REQUIRE(f.panels.size() == 4);
    CHECK(f.panels[2].name == "W");
    CHECK(f.panels[2].new_row);
    CHECK(f.panels[2].y > f.panels[0].y);
    CHECK(f.panels[3].y == f.panels[2].y);
    CHECK(f.panels[3].x > f.panels[2].x);
}

namespace {

// A 4 x 4 panel of ones named `name`, starting a row of the view's own when new_row.
app::Panel square_panel(const std::string& name, bool new_row) {
    app::Panel p;
    p.name = name;
    p.shape.dims = {4, 4};
    p.values.assign(16, 1.0f);
    p.new_row = new_row;
    return p;
}

}  // namespace

// Five equal panels on a canvas too narrow for one row: two rows whatever the break, at the
// same zoom (the height decides), so the rows nearest equal width win: two and three panels, not
// one and four. Arranged again for a wide canvas, the extra break goes; the view's own stays.
TEST_CASE("app model: rows added for a narrow canvas are balanced and not kept for a wide one") {
    app::ViewModel v;
    for (int i = 0; i < 6; ++i)  // the view's own second row: one panel
        v.panels.push_back(square_panel("P" + std::to_string(i), i == 5));
    const auto rows = [&] {
        std::vector<int> r;
        for (const auto& p : v.panels) {
            if (r.empty() || p.new_row) r.push_back(0);
            ++r.back();
        }
        return r;
    };
    // 250 x 300 px, 60 px of titles a row: a panel and its gap are 8 cells wide, so five in a
    // row fit at 6.25 px a cell, four at 7.8, three at 10.4; three rows of 4-cell panels fit
    // 7.5 px high. One and four or two and three: 7.5 px either way (and one row is 17% less).
    app::arrange_view(v, app::CanvasGuess{250, 300, 60, 20});
    const std::vector<int> narrow = rows();
    REQUIRE(narrow.size() == 3);
    INFO(narrow[0] << " and " << narrow[1] << " panels");
    CHECK(narrow[0] + narrow[1] == 5);
    CHECK(std::max(narrow[0], narrow[1]) == 3);
    CHECK(narrow[2] == 1);
    app::arrange_view(v, app::CanvasGuess{2000, 600, 60, 20});
    CHECK(rows() == std::vector<int>{5, 1});
    CHECK(v.panels[5].new_row);
}

// The tensors view's rows pair a tensor (top) with its gradient (below) by column: a narrow
// canvas cuts both rows into bands of the same columns, never a gradient away from its tensor.
TEST_CASE("app model: rows of paired columns are cut into bands, each gradient under its tensor") {
    app::ViewModel v;
    v.fixed_rows = true;
    for (int i = 0; i < 10; ++i)  // six tensors, four gradients
        v.panels.push_back(square_panel((i < 6 ? "T" : "dT") + std::to_string(i < 6 ? i : i - 6),
                                        i == 0 || i == 6));
    const auto check_pairs = [&] {
        for (std::size_t i = 0; i < 4; ++i) {
            const app::Panel &t = v.panels[i], &g = v.panels[6 + i];
            INFO(t.name << " at (" << t.x << ", " << t.y << "), " << g.name << " at (" << g.x
                        << ", " << g.y << ")");
            CHECK(g.x == t.x);
            CHECK(g.y > t.y + t.height);
            for (const auto& o : v.panels)  // nothing between them
                if (&o != &t && &o != &g && o.x == t.x) CHECK((o.y < t.y || o.y > g.y));
        }
    };
    // Wide: one band, the stored order.
    app::arrange_view(v, app::CanvasGuess{2000, 600, 60, 20});
    CHECK(v.order.empty());
    check_pairs();
    const app::CanvasGuess narrow{250, 600, 60, 20};
    const double one_band = app::fit_zoom(v, narrow);
    // 250 px wide, 600 high: six columns (8 cells each with the gap) fit 5.2 px a cell; three
    // columns in two bands (four rows of titles and cells) 10.4.
    app::arrange_view(v, narrow);
    REQUIRE(v.order.size() == v.panels.size());
    check_pairs();
    CHECK(v.panels[3].x == 0);             // T3 starts the second band
    CHECK(v.panels[3].y > v.panels[6].y);  // below dT0
    const double banded = app::fit_zoom(v, narrow);
    MESSAGE("one band " << one_band << " px a cell, bands " << banded);
    CHECK(banded > 1.5 * one_band);
}

// col2im and weight_grad: the results start a new row (4 panels in one row left the bottom half
// of a 1600 x 1000 canvas empty): dX below W, dY and B*; dY and dW below X and B, their rows k
// side by side. The fit then uses the height: bigger cells than the one-row layout.
TEST_CASE("app model: col2im and weight_grad put their results on a new row") {
    struct Case {
        const char* view;
        const char* desc;
        const char* first_of_row2;
        const char* result;
    };
    for (const Case& cs : {Case{"col2im", "mb1ic2ih5oc3kh3", "dX", "dX"},
                           Case{"weight_grad", "mb1ic3ih6oc4kh3", "dY", "dW"}}) {
        app::ViewModel v = build(cs.view, cs.desc);
        const std::string what = std::string(cs.view) + " " + cs.desc;
        INFO(what);
        const auto at = [&](const char* name) -> const app::Panel& {
            const auto it = std::find_if(v.panels.begin(), v.panels.end(),
                                         [&](const app::Panel& p) { return p.name == name; });
            REQUIRE(it != v.panels.end());
            return *it;
        };
        const app::Panel& first = at(cs.first_of_row2);
        const app::Panel& result = at(cs.result);
        CHECK(first.new_row);
        CHECK(first.x == 0);
        CHECK(result.y > v.panels[0].y + v.panels[0].height);  // below the first row
        CHECK(result.y == first.y);
        const double z = app::fit_zoom(v);
        // The layout before: every panel in one row, no tile row wrapped.
        for (auto& p : v.panels) {
            p.new_row = false;
            p.tiles_per_row = 0;
        }
        const double one_row = app::fit_zoom(v);
        MESSAGE(what << ": fit zoom " << z << " px, in one row " << one_row);
        CHECK(z > one_row);
    }
}

// Following the step: the box holds every cell of the step where it fits the canvas, else the
// destination panel's cells (or its first one); the pan centres the box, clamped to the view.
TEST_CASE("app model: following the step keeps the step's cells in the box") {
    for (const char* view : {"tnc", "im2col", "col2im", "weight_grad"})
        for (const dim_t step : {dim_t{0}, dim_t{5}, dim_t{37}}) {
            app::ViewModel v = build(view, "mb2ic8ih10oc8kh3sh2ph1", app::DataKind::Integer, 16);
            app::layout_view(v, 2.5, 7.0);
            const app::StepState st = app::compute_step(v, Granularity::Line, step);
            INFO(view << " step " << step);
            // Room for everything: the box is exactly the cells' extent.
            app::CellBox box;
            REQUIRE(app::follow_box(v, st, 1e9, 1e9, box));
            double x0 = 1e18, y0 = 1e18, x1 = -1e18, y1 = -1e18;
            for (std::size_t i = 0; i < v.panels.size(); ++i) {
                for (const dim_t c : st.current[i]) {
                    const app::CellPos cp = app::cell_pos(v.panels[i], c);
                    x0 = std::min(x0, cp.x), y0 = std::min(y0, cp.y);
                    x1 = std::max(x1, cp.x + 1), y1 = std::max(y1, cp.y + 1);
                }
                for (const app::CellPos& cp : st.panels[i].current_pads) {
                    x0 = std::min(x0, v.panels[i].x + cp.x),
                    y0 = std::min(y0, v.panels[i].y + cp.y);
                    x1 = std::max(x1, v.panels[i].x + cp.x + 1);
                    y1 = std::max(y1, v.panels[i].y + cp.y + 1);
                }
            }
            // (With room, the whole tiles of those cells and their panels' titles.)
            CHECK(box.x0 <= x0);
            CHECK(box.y0 <= y0);
            CHECK(box.x1 >= x1);
            CHECK(box.y1 >= y1);
            // Room for the cells only: exactly their extent.
            app::CellBox tight;
            REQUIRE(app::follow_box(v, st, x1 - x0, y1 - y0, tight));
            CHECK(tight.x0 == x0);
            CHECK(tight.y0 == y0);
            CHECK(tight.x1 == x1);
            CHECK(tight.y1 == y1);
            // No room: within the destination panel, around cells of the step there.
            const app::Driver& d = v.drivers.front();
            const int dst = d.link >= 0 ? v.links[static_cast<std::size_t>(d.link)].dst
                                        : v.relations[static_cast<std::size_t>(d.relation)].result;
            const app::Panel& pd = v.panels[static_cast<std::size_t>(dst)];
            const auto& cur = st.current[static_cast<std::size_t>(dst)];
            REQUIRE(!cur.empty());
            app::CellBox small;
            REQUIRE(app::follow_box(v, st, 1.0, 1.0, small));
            CHECK(small.x0 >= pd.x);
            CHECK(small.y0 >= pd.y);
            CHECK(small.x1 <= pd.x + pd.width);
            CHECK(small.y1 <= pd.y + pd.height);
            const app::CellPos first = app::cell_pos(pd, cur.front());
            CHECK(small.x0 == first.x);
            CHECK(small.y0 == first.y);
            CHECK(small.width() == 1.0);
            CHECK(small.height() == 1.0);
        }
    // A step with no cells (an empty step state) has no box.
    app::ViewModel v = build("tnc", "mb1ic2ih3oc2kh2");
    app::layout_view(v);
    app::StepState none;
    none.current.resize(v.panels.size());
    none.panels.resize(v.panels.size());
    app::CellBox b;
    CHECK_FALSE(app::follow_box(v, none, 100, 100, b));

    // The pan: centred on the box inside a view larger than the canvas, clamped at its edges,
    // and the view centred along an axis where it is smaller than the canvas.
    float px = 0, py = 0;
    app::follow_pan({40, 50, 42, 51}, 100, 200, 10.0f, 300.0f, 400.0f, px, py);
    CHECK(px == doctest::Approx(150 - 410));  // the box's middle (41 cells) at 150 px
    CHECK(py == doctest::Approx(200 - 505));
    app::follow_pan({0, 0, 1, 1}, 100, 200, 10.0f, 300.0f, 400.0f, px, py);
    CHECK(px == 0.0f);  // at the view's top-left: no empty canvas before it
    CHECK(py == 0.0f);
    app::follow_pan({99, 199, 100, 200}, 100, 200, 10.0f, 300.0f, 400.0f, px, py);
    CHECK(px == doctest::Approx(300 - 1000));  // the view's right edge at the canvas's
    CHECK(py == doctest::Approx(400 - 2000));
    app::follow_pan({5, 5, 6, 6}, 20, 10, 10.0f, 300.0f, 400.0f, px, py);
    CHECK(px == doctest::Approx(50));  // 200 px of view in 300: centred
    CHECK(py == doctest::Approx(150));
}

TEST_CASE("app model: following the step keeps the step's tiles whole where they fit") {
    // Lesson 12's FRACTAL_Z step: the current cell of W and of Wz, whose fractal is 16 rows
    // tall. The box holds the whole tiles of the step's cells and the titles of their panels
    // (the box of the cells alone left the fractal cut at the canvas's edges).
    app::ViewModel v = build("fractal", "mb1ic6ih2iw2oc5kh1kw1", app::DataKind::Integer, 4);
    app::layout_view(v, 2.5, 7.0);
    const app::StepState st = app::compute_step(v, Granularity::Element, 14);
    app::CellBox box;
    REQUIRE(app::follow_box(v, st, 60.0, 60.0, box));
    int tiles = 0;
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        const app::Panel& pn = v.panels[i];
        for (const dim_t c : st.current[i]) {
            dim_t tx = 0, ty = 0, row = 0, col = 0;
            app::cell_tile(pn, c, tx, ty, row, col);
            const app::CellPos tl = app::padded_pos(pn, tx, ty, 0, 0);
            INFO(pn.name << " cell " << c);
            CHECK(box.x0 <= tl.x);
            CHECK(box.y0 <= pn.y - pn.title_room);  // the panel's title too
            CHECK(box.x1 >= tl.x + app::tile_w(pn));
            CHECK(box.y1 >= tl.y + app::tile_h(pn));
            ++tiles;
        }
    }
    CHECK(tiles >= 2);
    CHECK(box.height() <= 60.0);
}

TEST_CASE("app model: a title scrolled off above or left of the canvas is pinned to its edge") {
    // The canvas shows pixels [100, 900) x [50, 650); a title of 200 x 60 px.
    const app::CellBox canvas{100, 50, 900, 650};
    // In view: drawn where it is.
    app::TitlePlace t = app::pin_title(300, 120, 200, 60, {300, 180, 700, 600}, canvas);
    CHECK_FALSE(t.pinned);
    CHECK(t.x == 300.0f);
    CHECK(t.y == 120.0f);
    // Scrolled up past the top while the panel fills the canvas: at the top edge.
    t = app::pin_title(300, -400, 200, 60, {300, -340, 700, 900}, canvas);
    CHECK(t.pinned);
    CHECK(t.x == 300.0f);
    CHECK(t.y == 50.0f);
    // Its panel's last rows leave less than the title's height: not pinned (left to scroll).
    t = app::pin_title(300, -400, 200, 60, {300, -340, 700, 90}, canvas);
    CHECK_FALSE(t.pinned);
    // Scrolled left past the edge: at the left edge; both at once: the top-left corner.
    t = app::pin_title(-500, 120, 200, 60, {-500, 180, 400, 600}, canvas);
    CHECK(t.pinned);
    CHECK(t.x == 100.0f);
    CHECK(t.y == 120.0f);
    t = app::pin_title(-500, -400, 200, 60, {-500, -340, 400, 900}, canvas);
    CHECK(t.x == 100.0f);
    CHECK(t.y == 50.0f);
    // Its panel ending within a quarter of the title's width past the left edge: not pinned.
    t = app::pin_title(-500, 120, 200, 60, {-500, 180, 140, 600}, canvas);
    CHECK_FALSE(t.pinned);
    t = app::pin_title(-500, 120, 200, 60, {-500, 180, 160, 600}, canvas);
    CHECK(t.pinned);
    // A panel outside the canvas (right of it, or wholly above) keeps its title where it is.
    t = app::pin_title(1000, -400, 200, 60, {1000, -340, 1400, 900}, canvas);
    CHECK_FALSE(t.pinned);
    t = app::pin_title(300, -900, 200, 60, {300, -840, 700, 0}, canvas);
    CHECK_FALSE(t.pinned);
}

TEST_CASE("app model: a title pinned to the top is never drawn over its panel's cells") {
    // The canvas [100, 900) x [50, 650), a title 200 x 30 px. Lesson 12's FRACTAL_Z step at
    // 1280x720 followed W and Wz: the row above (X) was cut to its last 1.5 rows of cells, and
    // its title was pinned over them.
    const app::CellBox canvas{100, 50, 900, 650};
    app::TitlePlace t = app::pin_title(300, -180, 200, 30, {300, -150, 700, 110}, canvas);
    CHECK_FALSE(t.shown);  // a sliver: neither cells nor title
    CHECK_FALSE(t.pinned);
    // Wholly above the canvas: not drawn either.
    t = app::pin_title(300, -400, 200, 30, {300, -370, 700, 40}, canvas);
    CHECK_FALSE(t.shown);
    // Cut, but more than half of it shows: the title pinned, the cells drawn from under it.
    t = app::pin_title(300, -100, 200, 30, {300, -70, 700, 400}, canvas);
    CHECK(t.shown);
    CHECK(t.pinned);
    CHECK(t.y == 50.0f);
    CHECK(t.cells_y0 >= t.y + 30.0f);
    // A tall panel scrolled through (following a large view's step): the same.
    t = app::pin_title(300, -4000, 200, 30, {300, -3970, 700, 3000}, canvas);
    CHECK(t.shown);
    CHECK(t.pinned);
    CHECK(t.cells_y0 >= t.y + 30.0f);
    // Its title scrolled off while its cells are all below the title's band: pinned above them,
    // every cell drawn.
    t = app::pin_title(300, 20, 200, 30, {300, 90, 700, 400}, canvas);
    CHECK(t.pinned);
    CHECK(t.cells_y0 == 50.0f);
    // Any cut: where the title is pinned at the top, no cell is drawn under it.
    for (double top = -600; top <= 200; top += 7)
        for (double h = 10; h <= 900; h += 23) {
            CAPTURE(top);
            CAPTURE(h);
            const app::TitlePlace p = app::pin_title(300, static_cast<float>(top - 30), 200, 30,
                                                     {300, top, 700, top + h}, canvas);
            if (!p.shown || !p.pinned || p.y != 50.0f) continue;
            CHECK(std::max(static_cast<double>(p.cells_y0), top) >= p.y + 30.0);
        }
}

// The tensors view wraps each tensor's tiles for the canvas (arrange_view), as the other views
// do: a 3x3 filter of 20 input and 18 output channels was stacked 8 tiles a row into a panel 31
// cells wide and 215 tall, which shrank the whole view to cells of 1.3 pixels at the default
// canvas.
TEST_CASE("app model: the tensors view arranges its panels' tiles near a square") {
    app::ViewModel v = build("tensors", "mb2ic20ih5oc18oh5kh3ph1", app::DataKind::Integer, 16);
    app::arrange_view(v, {});
    int checked = 0;
    for (const auto& p : v.panels) {
        if (p.tiles_x * p.tiles_y < 4) continue;
        INFO(p.name << ": " << p.width << " x " << p.height << " cells, " << p.tiles_per_row
                    << " tiles a row");
        CHECK(p.height <= 3 * p.width);
        CHECK(p.width <= 4 * p.height);
        ++checked;
    }
    CHECK(checked == 6);  // src, wei, dst and their gradients
    CHECK(app::fit_zoom(v, {}) >= 3.0);
}

// The view's own row breaks (the tnc view: X's row over dY's) hold in every arrangement unless
// the canvas guess lifts them (CanvasGuess::keep_rows, tried by the app's fit where cells come
// out too small): then a wide canvas takes all six panels in one row; kept again afterwards.
TEST_CASE("app model: arrange_view keeps the view's own rows unless told to lift them") {
    app::ViewModel v = build("tnc", "mb2ic2iw5oc3ow2kw2sw2", app::DataKind::Integer, 4);
    const auto breaks = [&] {
        int n = 0;
        for (std::size_t i = 1; i < v.panels.size(); ++i) n += v.panels[i].new_row ? 1 : 0;
        return n;
    };
    app::CanvasGuess wide{1e6, 1e6, 0, 0};
    app::arrange_view(v, wide);
    CHECK(breaks() == 1);
    CHECK(v.panels[3].new_row);  // dY starts the second row
    wide.keep_rows = false;
    app::arrange_view(v, wide);
    CHECK(breaks() == 0);
    CHECK(v.panels[3].y == v.panels[0].y);
    wide.keep_rows = true;
    app::arrange_view(v, wide);
    CHECK(breaks() == 1);
    CHECK(v.panels[3].new_row);
}

TEST_CASE("app model: panels far wider than their titles keep a gap of a character at any zoom") {
    // The stride view of res3a_branch1 is drawn at 0.2 px a cell at 1280 x 720: a gap of 4 cells
    // was under a pixel and Z touched P. The least title slot stands for 13 characters of the
    // zoom it was computed at; the gap is at least one of them.
    app::ViewModel v = build("stride", "mb1ic2ih60oc2kh1sh2ph0");
    double widest = 0;
    for (const app::Panel& p : v.panels) widest = std::max(widest, p.width);
    REQUIRE(widest > 26 * app::kPanelGap);  // a gap of a character is more than 4 cells below
    for (const double min_slot : {7.0, widest / 4, widest / 2}) {
        CAPTURE(min_slot);
        app::layout_view(v, 2.5, min_slot);
        int pairs = 0;
        for (std::size_t i = 1; i < v.panels.size(); ++i) {
            const app::Panel& a = v.panels[i - 1];
            const app::Panel& b = v.panels[i];
            if (b.new_row || b.y != a.y) continue;
            ++pairs;
            CHECK(b.x - (a.x + a.width) >= std::max(app::kPanelGap, min_slot / 13.0) - 1e-9);
        }
        CHECK(pairs > 0);
    }
}
