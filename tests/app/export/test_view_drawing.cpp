// A view's panels as drawing primitives (app/export/view_drawing.hpp), the one description the
// canvas and the SVG export replay: every cell filled once, padding cells filled and crossed out,
// digits where asked, a picture in place of cells too small to draw, only what meets the clip,
// and one SVG element per primitive. No window is opened.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "export/view_drawing.hpp"
#include "model/model.hpp"

using namespace convlab;

namespace {

constexpr app::Rgba kCell = 0xff808080u, kPad = 0xff303030u, kGrid = 0xff101010u;

app::PanelPaint paint(float z) {
    app::PanelPaint pp;
    pp.z = z;
    pp.value_size = z >= 20 ? 12.0f : 0.0f;
    pp.grid = kGrid;
    pp.padding = kPad;
    pp.dim_text = 0xff404040u;
    pp.current = 0xff0000ffu;
    pp.value_text = 0xff000000u;
    pp.current_pad = 0xff0000aau;
    pp.hovered = 0xff00ff00u;
    pp.cell_colour = [](dim_t) { return kCell; };
    pp.cell_text = [](dim_t c) { return std::to_string(c); };
    pp.text_width = [](const std::string& t, float size) {
        return 0.6f * size * static_cast<float>(t.size());
    };
    pp.group_colour = [](std::uint8_t) { return 0xffff0000u; };
    return pp;
}

long long count_of(const std::string& hay, const std::string& needle) {
    long long n = 0;
    for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
    return n;
}

struct Painted {
    app::ViewModel v;
    app::StepState st;
};

Painted view(const char* name, const char* desc, dim_t step) {
    app::ViewRequest r;
    r.view = name;
    r.problem = parse_descriptor(desc);
    Painted p{app::build_view(r), {}};
    app::layout_view(p.v, 2.5, 7.0);
    p.st = app::compute_step(p.v, Granularity::Line, step);
    return p;
}

}  // namespace

TEST_CASE("view drawing: every cell is filled once and padding cells filled and crossed out") {
    const Painted p = view("im2col", "mb1ic1ih4oc1kh3ph1", 0);
    for (std::size_t i = 0; i < p.v.panels.size(); ++i) {
        const app::Panel& pn = p.v.panels[i];
        std::vector<app::DrawPrim> list;
        app::paint_panel(pn, p.st.panels[i], paint(36), list);
        long long cells = 0, pads = 0, values = 0;
        for (const app::DrawPrim& d : list) {
            if (d.kind == app::DrawPrim::Kind::Rect && d.fill == kCell && d.stroke == 0) {
                ++cells;
                CHECK(d.x1 - d.x0 == doctest::Approx(36));
                CHECK(d.y1 - d.y0 == doctest::Approx(36));
            }
            pads += d.kind == app::DrawPrim::Kind::Rect && d.fill == kPad;
            values += d.kind == app::DrawPrim::Kind::Text && d.centred;
        }
        INFO("panel " << pn.name);
        CHECK(cells == pn.numel());
        CHECK(values == pn.numel());  // every cell's digits, centred in it
        // X, 4 x 4 padded by 1: 20 padding cells; B has none drawn (its zeros are values).
        CHECK(pads == (pn.name == "X" ? 20 : 0));
    }
}

TEST_CASE("view drawing: cells under 3 px are one picture and only what meets the clip is drawn") {
    const Painted p = view("im2col", "mb1ic2ih5oc2kh3", 1);
    const app::Panel& b = p.v.panels[1];
    std::vector<app::DrawPrim> small;
    app::paint_panel(b, p.st.panels[1], paint(2), small);
    const app::PrimCounts c = app::count_prims(small);
    CHECK(c.images == 1);
    CHECK(c.rects == 1);  // its frame
    CHECK(c.texts == 0);
    CHECK(c.lines == 0);
    // A clip over the panel's first 3 x 3 cells: those cells (and the cut ones at its edge).
    app::PanelPaint pp = paint(10);
    pp.clip_x0 = static_cast<float>(b.x) * 10;
    pp.clip_y0 = static_cast<float>(b.y) * 10;
    pp.clip_x1 = pp.clip_x0 + 25;
    pp.clip_y1 = pp.clip_y0 + 25;
    std::vector<app::DrawPrim> clipped, whole;
    app::paint_panel(b, p.st.panels[1], pp, clipped);
    app::paint_panel(b, p.st.panels[1], paint(10), whole);
    long long in = 0, all = 0;
    for (const auto& d : clipped) in += d.kind == app::DrawPrim::Kind::Rect && d.fill == kCell;
    for (const auto& d : whole) all += d.kind == app::DrawPrim::Kind::Rect && d.fill == kCell;
    CHECK(all == b.numel());
    CHECK(in == 9);
    // Outside every clip: nothing.
    pp.clip_x0 = pp.clip_x1 = -1000;
    std::vector<app::DrawPrim> none;
    app::paint_panel(b, p.st.panels[1], pp, none);
    CHECK(none.empty());
}

TEST_CASE("view drawing: hovered cells are outlined and the step's cells too") {
    const Painted p = view("col2im", "mb1ic2ih3oc2kh2", 2);
    const std::size_t dx = 3;
    app::PanelPaint pp = paint(36);
    std::vector<app::DrawPrim> plain, hovered;
    app::paint_panel(p.v.panels[dx], p.st.panels[dx], pp, plain);
    pp.outlined.push_back(app::cell_pos(p.v.panels[dx], 4));
    app::paint_panel(p.v.panels[dx], p.st.panels[dx], pp, hovered);
    REQUIRE(hovered.size() == plain.size() + 1);
    CHECK(hovered.back().stroke == pp.hovered);
    CHECK(hovered.back().fill == 0);
    long long current = 0;
    for (const auto& d : plain)
        current += d.kind == app::DrawPrim::Kind::Rect && d.stroke == pp.current;
    CHECK(current == static_cast<long long>(p.st.current[dx].size()));
    // dX counts its contributions at 36 px cells ("x2"), not at 30.
    long long counts = 0;
    for (const auto& d : plain)
        counts += d.kind == app::DrawPrim::Kind::Text && d.text.rfind("x", 0) == 0;
    CHECK(counts == p.v.panels[dx].numel());
    std::vector<app::DrawPrim> smaller;
    app::paint_panel(p.v.panels[dx], p.st.panels[dx], paint(30), smaller);
    counts = 0;
    for (const auto& d : smaller)
        counts += d.kind == app::DrawPrim::Kind::Text && d.text.rfind("x", 0) == 0;
    CHECK(counts == 0);
}

TEST_CASE("view drawing: the SVG holds one element per primitive with its text escaped") {
    const Painted p = view("im2col", "mb1ic1ih4oc1kh3ph1", 0);
    std::vector<app::DrawPrim> list;
    for (std::size_t i = 0; i < p.v.panels.size(); ++i)
        app::paint_panel(p.v.panels[i], p.st.panels[i], paint(36), list);
    app::DrawPrim odd;
    odd.kind = app::DrawPrim::Kind::Text;
    odd.text = "a<b & \"c\"";
    odd.size = 12;
    odd.stroke = 0x80000000u;  // half transparent
    list.push_back(odd);
    std::ostringstream o;
    app::write_svg(o, list);
    const std::string svg = o.str();
    const app::PrimCounts c = app::count_prims(list);
    CHECK(count_of(svg, "<rect ") == c.rects + c.images);
    CHECK(count_of(svg, "<line ") == c.lines);
    CHECK(count_of(svg, "<text ") == c.texts);
    CHECK(count_of(svg, "\n") == static_cast<long long>(list.size()));
    CHECK(svg.find(">a&lt;b &amp; &quot;c&quot;</text>") != std::string::npos);
    CHECK(svg.find("fill-opacity=\"0.502\"") != std::string::npos);
}
