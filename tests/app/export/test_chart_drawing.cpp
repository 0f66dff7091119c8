// A benchmark chart as drawing primitives (app/charts/chart_paint.hpp), the one description the
// Timings panel (ImGui) and the chart files (cairo) replay: each bar a rectangle at its data's
// pixels, a cross per failed slot, hatching and a '~' on noisy marks, dots for points, dashed
// reference lines, the footer as text; the ImGui and the cairo replays draw the same list. No
// window is opened.
#include <doctest/doctest.h>

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "charts/chart_export.hpp"
#include "charts/chart_paint.hpp"
#include "export/view_drawing.hpp"
#include "gui/timings_chart.hpp"
#include "imgui.h"
#include "test_tempdir.hpp"

using namespace convlab;
using namespace convlab::charts;
using app::DrawPrim;

namespace {

constexpr app::Rgba rgba(unsigned r, unsigned g, unsigned b, unsigned a = 255) {
    return r | g << 8 | b << 16 | a << 24;
}
constexpr app::Rgba kBar = rgba(10, 20, 30), kPoint = rgba(200, 100, 0), kRef = rgba(0, 0, 255);
constexpr app::Rgba kCross = rgba(204, 26, 26), kHatch = rgba(0, 0, 0, 90);

Chart sample() {
    Chart c;
    c.id = "t";
    c.title = "Title";
    c.subtitle = "Subtitle";
    c.x.min = 0;
    c.x.max = 3;
    c.x.categories = {"a", "b", "c"};
    c.y.min = 0;
    c.y.max = 10;
    c.y.ticks = {{0, "0"}, {5, "5"}, {10, "10"}};
    Series bars;
    bars.name = "A";
    bars.color = {10, 20, 30, 255};
    Mark b0;
    b0.x0 = 0.1;
    b0.x1 = 0.5;
    b0.y1 = 4;
    b0.lo = 3;
    b0.hi = 5;
    Mark b1;
    b1.x0 = 1.1;
    b1.x1 = 1.5;
    b1.y1 = 8;
    b1.noisy = true;
    Mark f;
    f.kind = MarkKind::Failed;
    f.x0 = 2.1;
    f.x1 = 2.5;
    bars.marks = {b0, b1, f};
    Series pts;
    pts.name = "P";
    pts.color = {200, 100, 0, 255};
    pts.style = SeriesStyle::LinePoints;
    pts.dashed = true;
    for (int i = 0; i < 3; ++i) {
        Mark m;
        m.kind = MarkKind::Point;
        m.x0 = m.x1 = i + 0.5;
        m.y0 = m.y1 = i == 2 ? 2 : 6 + i;
        m.noisy = i == 2;
        pts.marks.push_back(m);
    }
    c.series = {bars, pts};
    c.ref_lines = {{"peak", 9, {0, 0, 255, 255}, true}};
    c.legend = {{"A", bars.color}, {"P", pts.color, SeriesStyle::LinePoints, true}};
    c.footer = {"Verified: all 5 measurements", "Reproduce: convlab bench --quick"};
    c.verified = true;
    return c;
}

std::vector<DrawPrim> of(const std::vector<DrawPrim>& v, DrawPrim::Kind k, app::Rgba colour) {
    std::vector<DrawPrim> out;
    for (const DrawPrim& p : v)
        if (p.kind == k &&
            (k == DrawPrim::Kind::Line || k == DrawPrim::Kind::Text ? p.stroke : p.fill) == colour)
            out.push_back(p);
    return out;
}

}  // namespace

TEST_CASE("chart drawing: bars at their pixels with crosses hatching points and dashed refs") {
    const Chart c = sample();
    std::vector<DrawPrim> v;
    const PaintedChart r = paint_chart(c, file_paint(1280, 720), v);
    REQUIRE(r.drawable);
    const PlotBox P = r.plot;
    CHECK(P.left > 0);
    CHECK(P.right < 1280 - 220);  // the legend column is right of the plot
    CHECK(P.top < P.bottom);
    const auto X = [&](double x) { return P.left + static_cast<float>(x / 3) * P.width(); };
    const auto Y = [&](double y) { return P.bottom - static_cast<float>(y / 10) * P.height(); };

    // One rectangle per bar, at its data's pixels (the legend's swatch is the third).
    const auto bars = of(v, DrawPrim::Kind::Rect, kBar);
    REQUIRE(bars.size() == 3);
    CHECK(bars[0].x0 == doctest::Approx(X(0.1)));
    CHECK(bars[0].x1 == doctest::Approx(X(0.5)));
    CHECK(bars[0].y0 == doctest::Approx(Y(4)));
    CHECK(bars[0].y1 == doctest::Approx(Y(0)));
    CHECK(bars[1].y0 == doctest::Approx(Y(8)));
    CHECK(bars[2].x0 > P.right);
    // The whisker of the first bar, from 3 to 5 at its centre.
    bool whisker = false;
    for (const DrawPrim& p : v)
        whisker |= p.kind == DrawPrim::Kind::Line && p.x0 == doctest::Approx(X(0.3)) &&
                   p.x1 == p.x0 && p.y0 == doctest::Approx(Y(3)) && p.y1 == doctest::Approx(Y(5));
    CHECK(whisker);
    // The failed slot: a cross (two red lines) on the axis in its slot, never a bar.
    const auto cross = of(v, DrawPrim::Kind::Line, kCross);
    REQUIRE(cross.size() == 2);
    for (const DrawPrim& p : cross) {
        CHECK(std::min(p.x0, p.x1) >= X(2.1) - 2);
        CHECK(std::max(p.x0, p.x1) <= X(2.5) + 2);
        CHECK(std::max(p.y0, p.y1) == doctest::Approx(P.bottom - 2));
    }
    // The noisy bar is hatched inside its rectangle; two '~' (the bar, the noisy point).
    const auto hatch = of(v, DrawPrim::Kind::Line, kHatch);
    CHECK(hatch.size() >= 5);
    for (const DrawPrim& p : hatch) {
        CHECK(std::min(p.x0, p.x1) >= bars[1].x0 - 0.01f);
        CHECK(std::max(p.x0, p.x1) <= bars[1].x1 + 0.01f);
        CHECK(std::min(p.y0, p.y1) >= bars[1].y0 - 0.01f);
        CHECK(std::max(p.y0, p.y1) <= bars[1].y1 + 0.01f);
    }
    CHECK(std::count_if(v.begin(), v.end(), [](const DrawPrim& p) { return p.text == "~"; }) == 2);
    // Points: a dot each (plus the legend's), a ring around the noisy one; dashed lines join
    // them.
    const auto dots = of(v, DrawPrim::Kind::Circle, kPoint);
    REQUIRE(dots.size() == 4);
    CHECK(dots[0].x0 == doctest::Approx(X(0.5)));
    CHECK(dots[0].y0 == doctest::Approx(Y(6)));
    CHECK(std::count_if(v.begin(), v.end(), [](const DrawPrim& p) {
              return p.kind == DrawPrim::Kind::Circle && p.fill == 0 && p.stroke == kPoint;
          }) == 1);
    const auto joins = of(v, DrawPrim::Kind::Line, kPoint);
    REQUIRE(joins.size() >= 2);
    CHECK(joins[0].dash > 0);
    CHECK(joins[0].x0 == doctest::Approx(X(0.5)));
    CHECK(joins[0].x1 == doctest::Approx(X(1.5)));
    // The reference line: dashed across the plot at 9; its legend swatch dashed too.
    const auto refs = of(v, DrawPrim::Kind::Line, kRef);
    REQUIRE(refs.size() == 2);
    CHECK(refs[0].dash > 0);
    CHECK(refs[0].x0 == doctest::Approx(P.left));
    CHECK(refs[0].x1 == doctest::Approx(P.right));
    CHECK(refs[0].y0 == doctest::Approx(Y(9)));
    CHECK(refs[1].dash > 0);
    CHECK(refs[1].x0 > P.right);
    // The footer's lines as texts under the plot; the title at the top.
    for (const std::string& f : c.footer) {
        const auto t = std::find_if(v.begin(), v.end(), [&](const DrawPrim& p) {
            return p.kind == DrawPrim::Kind::Text && p.text == f;
        });
        REQUIRE(t != v.end());
        CHECK(t->y0 > P.bottom);
    }
    const auto title = std::find_if(v.begin(), v.end(), [](const DrawPrim& p) {
        return p.kind == DrawPrim::Kind::Text && p.text == "Title";
    });
    REQUIRE(title != v.end());
    CHECK(title->y0 < P.top);
    CHECK(title->bold);
    // Nothing is outlined until a mark is hovered; then the hovered bar is, around its box.
    const auto outlines = [](const std::vector<DrawPrim>& l) {
        std::vector<DrawPrim> o;
        for (const DrawPrim& p : l)
            if (p.kind == DrawPrim::Kind::Rect && p.fill == 0 && p.stroke == rgba(0, 0, 0))
                o.push_back(p);
        return o;
    };
    CHECK(outlines(v).empty());
    ChartPaint hp = file_paint(1280, 720);
    hp.hovered = std::make_pair(std::size_t{0}, std::size_t{1});
    std::vector<DrawPrim> hv;
    paint_chart(c, hp, hv);
    const auto o = outlines(hv);
    REQUIRE(o.size() == 1);
    CHECK(o[0].x0 < bars[1].x0);
    CHECK(o[0].x1 > bars[1].x1);
    CHECK(o[0].y0 < bars[1].y0);
}

TEST_CASE("chart drawing: the window leaves the footer out and too small a box draws no data") {
    const Chart c = sample();
    std::vector<DrawPrim> v;
    const PaintedChart r = paint_chart(c, screen_paint(0, 0, 1200, 600, 16, false), v);
    REQUIRE(r.drawable);
    CHECK(std::none_of(v.begin(), v.end(),
                       [&](const DrawPrim& p) { return p.text == c.footer.front(); }));
    CHECK(of(v, DrawPrim::Kind::Rect, kBar).size() == 3);
    std::vector<DrawPrim> small;
    CHECK_FALSE(paint_chart(c, screen_paint(0, 0, 200, 120, 16, false), small).drawable);
    CHECK(of(small, DrawPrim::Kind::Rect, kBar).empty());
    CHECK(std::any_of(small.begin(), small.end(), [](const DrawPrim& p) {
        return p.text == "(window too small for the chart)";
    }));
}

TEST_CASE("chart drawing: the window (ImGui) and the files (cairo) draw the same list") {
    const Chart c = sample();
    const std::vector<DrawPrim> prims = file_prims(c);
    const app::PrimCounts want = app::count_prims(prims);
    CHECK(want.rects > 3);
    CHECK(want.circles == 5);
    // ImGui, headless: a context with the default font, one frame's background draw list.
    ImGuiContext* ctx = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1280, 720);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    ImGui::NewFrame();
    ImDrawList* dl = ImGui::GetBackgroundDrawList();
    const int before = dl->VtxBuffer.Size;
    const app::PrimCounts screen = ui::chart_draw::replay(dl, io.Fonts->Fonts[0], prims);
    CHECK(dl->VtxBuffer.Size > before);
    ImGui::EndFrame();
    ImGui::DestroyContext(ctx);
    CHECK(screen == want);
    // cairo, on a page of the export's size.
    cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1280, 720);
    cairo_t* cr = cairo_create(s);
    const app::PrimCounts file = replay(cr, prims);
    CHECK(cairo_status(cr) == CAIRO_STATUS_SUCCESS);
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    CHECK(file == want);
    // The exported files draw that list, every format.
    test::TempDir dir;
    for (Format f : {Format::Svg, Format::Png, Format::Pdf}) {
        const std::string path = (dir.path / (std::string("t.") + format_extension(f))).string();
        CHECK(export_chart(c, path, f) == want);
    }
}
