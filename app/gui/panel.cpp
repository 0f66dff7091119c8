// A panel on the canvas: its painting and its title's (export/view_drawing.hpp) replayed with
// ImGui draw lists.
#include "gui/app.hpp"
#include "gui/timings_chart.hpp"

namespace convlab::ui {

// How panel i is painted at z px a cell in this palette, with the window's font and digits: the
// same for the canvas and the SVG export.
app::PanelPaint App::panel_paint(std::size_t i, float z) const {
    const Palette& P = pal();
    app::PanelPaint pp;
    pp.z = z;
    pp.label_size = ImGui::GetFontSize() * 0.85f;
    pp.min_label = 11.0f;
    pp.lift = highlight_thickness(z) + 1.0f;
    pp.value_size = value_font(i, z);
    pp.group_width = group_outline_px(z);
    pp.left_room = static_cast<float>(std::min(app::room_left_of(*view, i) * z, 1e30));
    pp.grid = P.grid;
    pp.padding = P.padding;
    pp.dim_text = P.dim_text;
    pp.current = P.current;
    pp.value_text = P.value_text;
    pp.current_pad = c_current_pad;
    pp.hovered = P.hovered;
    pp.cell_colour = [this, i](dim_t c) { return cell_colour(i, c); };
    pp.cell_text = [this, i, z](dim_t c) { return value_text(i, c, z); };
    ImFont* f = font;
    pp.text_width = [f](const std::string& t, float size) {
        return f->CalcTextSizeA(size, FLT_MAX, 0, t.c_str()).x;
    };
    pp.group_colour = [](std::uint8_t g) { return group_colour(g); };
    return pp;
}

// How the panels' titles are written in the window's font and colours: the same for the canvas
// and the SVG export. compact: one line each; right: the canvas's right edge from the view's left.
app::TitlePaint App::title_paint(bool compact, float right) const {
    const Palette& P = pal();
    app::TitlePaint tp;
    tp.size = ImGui::GetFontSize();
    tp.compact = compact;
    tp.right = right;
    tp.text = P.panel_text;
    tp.backdrop = (P.background & IM_COL32(255, 255, 255, 0)) | IM_COL32(0, 0, 0, 220);
    ImFont* f = font;
    tp.text_width = [f](const std::string& t, float size) {
        return f->CalcTextSizeA(size, FLT_MAX, 0, t.c_str()).x;
    };
    return tp;
}

void App::record_titles(std::vector<TitleLine>& to, std::size_t i,
                        const std::vector<app::DrawPrim>& prims, float px, float py) {
    for (app::DrawPrim p : prims) {
        if (p.kind != app::DrawPrim::Kind::Text) continue;
        p.x0 -= px;
        p.x1 -= px;
        p.y0 -= py;
        p.y1 -= py;
        to.push_back({i, std::move(p)});
    }
}

// Draws a primitive list with ImGui (Image: panel i's texture); counts what it drew.
void App::replay(ImDrawList* dl, std::size_t i, const std::vector<app::DrawPrim>& prims) {
    for (const app::DrawPrim& p : prims) {
        switch (p.kind) {
            case app::DrawPrim::Kind::Rect:
                ++canvas_prims.rects;
                break;
            case app::DrawPrim::Kind::Line:
                ++canvas_prims.lines;
                break;
            case app::DrawPrim::Kind::Text:
                ++canvas_prims.texts;
                break;
            case app::DrawPrim::Kind::Circle:
                ++canvas_prims.circles;
                break;
            case app::DrawPrim::Kind::Image:
                texture(i);
                if (tex[i].id)
                    dl->AddImage(
                        reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(tex[i].id)),
                        ImVec2(p.x0, p.y0), ImVec2(p.x1, p.y1));
                ++canvas_prims.images;
                continue;
        }
        chart_draw::draw_prim(dl, font, p);
    }
}

// Panel i on the canvas: its primitives (export/view_drawing.hpp) for the visible part, with the
// hovered and pinned cells outlined.
void App::draw_panel(ImDrawList* dl, std::size_t i, ImVec2 origin, float z, const ImVec4& clip) {
    app::PanelPaint pp = panel_paint(i, z);
    pp.ox = origin.x;
    pp.oy = origin.y;
    pp.clip_x0 = clip.x;
    pp.min_x = clip.x;
    pp.clip_y0 = clip.y;
    pp.clip_x1 = clip.z;
    pp.clip_y1 = clip.w;
    const Panel& pn = view->panels[i];
    for (const app::Selection* sel : {&s.hover, &s.pinned})
        if (sel->valid() && sel->panel == static_cast<int>(i))
            pp.outlined.push_back(app::cell_pos(pn, sel->cell));
    painted.clear();
    app::paint_panel(pn, st.panels[i], pp, painted);
    replay(dl, i, painted);
}

}  // namespace convlab::ui
