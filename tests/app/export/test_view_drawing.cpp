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

TEST_CASE("view drawing: a row of tiles without room above is labelled in the free room left") {
    // TNC's input stacks the images as rows of tiles (n=0, n=1, n=2); at 5 px a cell there is no
    // room above a row for its label, so it goes left of the row, where the canvas is free (the
    // first panel: up to the canvas's edge; the next: up to the panel beside it), not only in the
    // 4-cell panel gap, which is too narrow for "n=1" at 11 px.
    app::ViewRequest r;
    r.view = "tnc";
    r.problem = parse_descriptor("mb3ic5ih4oc6kh2");
    r.c0 = 4;
    app::ViewModel v = app::build_view(r);
    app::layout_view(v, 2.5, 7.0);
    app::StepState st = app::compute_step(v, Granularity::Line, 0);
    const float z = 5;
    const auto labels = [&](std::size_t i, float ox, float min_x) {
        app::PanelPaint pp = paint(z);
        pp.label_size = pp.min_label = 11;
        pp.ox = ox;
        pp.min_x = min_x;
        pp.left_room = static_cast<float>(std::min(app::room_left_of(v, i) * z, 1e30));
        std::vector<app::DrawPrim> out;
        app::paint_panel(v.panels[i], st.panels[i], pp, out);
        std::vector<app::DrawPrim> rows;  // the row labels left of the panel
        const float px = ox + static_cast<float>(v.panels[i].x) * z;
        for (const auto& d : out)
            if (d.kind == app::DrawPrim::Kind::Text && d.x0 < px &&
                (d.text == "n=1" || d.text == "n=2"))
                rows.push_back(d);
        return rows;
    };
    REQUIRE(v.panels.size() >= 2);
    REQUIRE(v.panels[0].tiles_y == 3);
    // The first panel with 60 px of canvas left of it: both rows labelled, inside the canvas.
    const float ox0 = 60 - static_cast<float>(v.panels[0].x) * z;
    const auto first = labels(0, ox0, 0);
    CHECK(first.size() == 2);
    for (const auto& d : first) CHECK(d.x0 >= 0);
    // Flush with the canvas's edge: no room, no label drawn outside it.
    CHECK(labels(0, -static_cast<float>(v.panels[0].x) * z, 0).empty());
    // A panel beside the first (a copy of it, its state too): the room up to the first's right
    // edge. The 4-cell panel gap is 18 px at 5 px a cell, too narrow for "n=1"; a wide title of
    // the first panel moves the next one further right, and that room is used.
    const app::Panel& a = v.panels[0];
    v.panels[1] = a;
    st.panels[1] = st.panels[0];
    v.panels[1].x = a.x + a.width + v.panel_gap;
    CHECK(app::room_left_of(v, 1) == doctest::Approx(v.panel_gap));
    CHECK(labels(1, ox0, 0).empty());
    for (app::Panel& o : v.panels)  // the first's title taking 20 more cells
        if (o.x > a.x) o.x += 20;
    CHECK(app::room_left_of(v, 1) == doctest::Approx(v.panel_gap + 20));
    const auto second = labels(1, ox0, 0);
    CHECK(second.size() == 2);
    for (const auto& d : second) CHECK(d.x0 >= ox0 + static_cast<float>(a.x + a.width) * z);
    // Nothing left of the first panel.
    CHECK(app::room_left_of(v, 0) >= 1e29);
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
    // ImGui's size is DejaVu Sans's line, 2384 / 2048 of the SVG's em: a 23.84 px line is 20.48.
    odd.text = "line";
    odd.size = 23.84f;
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
    CHECK(svg.find("font-size=\"20.48\"") != std::string::npos);
}

namespace {

// 0.6 em a character (UTF-8 characters, not bytes), the measure of the title tests.
float width_of(const std::string& t, float size) {
    float n = 0;
    for (const char c : t) n += (static_cast<unsigned char>(c) & 0xc0u) != 0x80u;
    return 0.6f * size * n;
}

// The words of t, without the spaces between them.
std::vector<std::string> words_of(const std::string& t) {
    std::vector<std::string> w;
    std::istringstream in(t);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
}

app::TitlePaint titling(bool compact) {
    app::TitlePaint tp;
    tp.size = 15;
    tp.compact = compact;
    tp.text = 0xff202020u;
    tp.backdrop = 0xdc000000u;
    tp.text_width = width_of;
    return tp;
}

}  // namespace

TEST_CASE("view drawing: a text cut to a width ends in ... and never splits a character") {
    CHECK(app::cut_to_width("abc", 27, 15, width_of) == "abc");  // 3 x 9 px: fits exactly
    const std::string cut = app::cut_to_width("abcdefgh", 50, 15, width_of);
    CHECK(cut == "ab...");  // 5 characters of 9 px: 45 <= 50, one more is 54
    CHECK(width_of(cut, 15) <= 50);
    // "·" is two bytes: cut before it or after it, never inside.
    const std::string dot = app::cut_to_width("a·bcdefgh", 45, 15, width_of);
    CHECK(dot == "a·...");
    CHECK(app::cut_to_width("abcdef", 10, 15, width_of) == "...");  // no room for a character
}

TEST_CASE("view drawing: wrapped lines stay inside the width and keep every word") {
    const std::string t = "column matrix B = im2col(X)  of the padded input";
    for (const float w : {60.0f, 100.0f, 200.0f, 1000.0f}) {
        INFO("width " << w);
        const auto lines = app::wrap_to_width(t, w, 10, width_of);
        std::string joined;
        for (const std::string& l : lines) {
            CHECK(width_of(l, 10) <= w);
            CHECK(!l.empty());
            CHECK(l.front() != ' ');
            CHECK(l.back() != ' ');
            joined += (joined.empty() ? "" : " ") + l;
        }
        CHECK(words_of(joined) == words_of(t));
        if (w >= 1000) CHECK(lines == std::vector<std::string>{t});  // its double space kept
    }
    // A word wider than a line is cut where the line ends, as ImGui wraps it.
    const auto cut = app::wrap_to_width("abcdefghij k", 30, 10, width_of);
    REQUIRE(cut.size() == 3);
    CHECK(cut[0] == "abcde");
    CHECK(cut[1] == "fghij");
    CHECK(cut[2] == "k");
}

TEST_CASE("view drawing: panel titles sit above their cells, one line each when compact") {
    for (const bool compact : {false, true}) {
        Painted p = view("stride", "mb1ic2ih5oc2kh3sh2", 0);
        const app::TitlePaint tp = titling(compact);
        const float z = 20;
        const float top = app::layout_titled(p.v, z, tp, app::title_slot(p.v, tp.size, 1e30f));
        CHECK(top > 0);
        for (std::size_t i = 0; i < p.v.panels.size(); ++i) {
            const app::Panel& pn = p.v.panels[i];
            INFO((compact ? "compact " : "full ") << pn.name);
            const app::TitleText t = app::title_text(pn, z, tp);
            REQUIRE(!t.lines.empty());
            CHECK(t.lines[0].rfind(pn.name + "  ", 0) == 0);
            if (compact) {
                CHECK(t.lines.size() == 1);
                CHECK(t.w <= app::title_wrap(pn, z, tp));
            } else {
                std::string all;
                for (const std::string& l : t.lines) all += l + " ";
                CHECK(all.find("(" + pn.shape.names[0] + "=") != std::string::npos);
                CHECK(all.find("cols ") != std::string::npos);
            }
            for (const std::string& l : t.lines)
                CHECK(width_of(l, tp.size) <= app::title_wrap(pn, z, tp));
            // The title and the tile labels' band under it fit above the panel's cells.
            CHECK(t.h + (pn.tiles_x * pn.tiles_y > 1 ? 1.3f : 0.3f) * tp.size <=
                  static_cast<float>(pn.title_room) * z + 0.01f);
            std::vector<app::DrawPrim> list;
            const float x = static_cast<float>(pn.x) * z,
                        y = static_cast<float>(pn.y - pn.title_room) * z;
            app::paint_title(t, x, y, tp, false, list);
            REQUIRE(list.size() == t.lines.size());
            for (std::size_t k = 0; k < list.size(); ++k) {
                CHECK(list[k].kind == app::DrawPrim::Kind::Text);
                CHECK(list[k].text == t.lines[k]);
                CHECK(list[k].stroke == tp.text);
                CHECK(list[k].size == tp.size);
                CHECK(list[k].x0 == x);
                CHECK(list[k].y0 + list[k].size <= static_cast<float>(pn.y) * z);
            }
            // Pinned over other cells: a backdrop first, under the whole title.
            list.clear();
            app::paint_title(t, x, y, tp, true, list);
            REQUIRE(list.size() == t.lines.size() + 1);
            CHECK(list[0].kind == app::DrawPrim::Kind::Rect);
            CHECK(list[0].fill == tp.backdrop);
            CHECK(list[0].x1 - list[0].x0 >= t.w);
            CHECK(list[0].y1 - list[0].y0 >= t.h);
        }
    }
}
