// The view as SVG (App::svg): the panels' and their titles' primitives (export/view_drawing.hpp)
// under a header.
#include "export/xml_escape.hpp"
#include "gui/app.hpp"

namespace convlab::ui {

// [SECTION] exports

using app::xml_escape;

// The view as SVG: the panels and their titles as the window draws them at 36 px cells (the same
// primitives, export/view_drawing.hpp), under the caption, the step line and the colour key.
std::string App::svg() const {
    if (!view) throw Error("nothing to export yet");
    dim_t total = 0;
    for (const auto& p : view->panels) total += p.numel();
    if (total > 200000)
        throw Error("SVG: " + std::to_string(total) +
                    " cells is too many for a vector picture (limit 200000): export a PNG");
    const Palette& P = pal();
    const auto hex = [](ImU32 c) {
        char b[8];
        std::snprintf(b, sizeof b, "#%02x%02x%02x", c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff);
        return std::string(b);
    };
    // 36 px cells: the size from which the window writes a cell's contribution count (x3).
    const double u = 36, left = 20, char_w = 0.58;
    // The panels under their titles as the canvas lays them out at u px a cell (its full titles,
    // a canvas without a right edge): export/view_drawing.hpp.
    ViewModel v = *view;
    const app::TitlePaint tp = title_paint(false, 1e30f);
    const auto uf = static_cast<float>(u);
    app::layout_titled(v, uf, tp, app::title_slot(v, tp.size, 1e30f));
    std::vector<app::TitleText> titles(v.panels.size());
    double titles_right = 0;
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        titles[i] = app::title_text(v.panels[i], uf, tp);
        titles_right = std::max(titles_right, v.panels[i].x * u + titles[i].w);
    }
    // Header: caption (wrapped), the step line, the colour key.
    const double page_w = std::max(900.0, std::max(v.width * u, titles_right) + 2 * left);
    const auto caption = lesson::wrap_words(
        view->caption, static_cast<std::size_t>((page_w - 2 * left) / (16 * char_w)));
    const double key_y = 24 + static_cast<double>(caption.size()) * 20 + 18;
    const double top = key_y + 30;
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << page_w << "\" height=\""
      << v.height * u + top + 20 << "\" font-family=\"DejaVu Sans\" xml:space=\"preserve\">\n";
    o << "<rect width=\"100%\" height=\"100%\" fill=\"" << hex(P.background) << "\"/>\n";
    for (std::size_t k = 0; k < caption.size(); ++k)
        o << "<text x=\"" << left << "\" y=\"" << 24 + 20 * static_cast<double>(k)
          << "\" font-size=\"16\" fill=\"" << hex(P.panel_text) << "\">" << xml_escape(caption[k])
          << "</text>\n";
    o << "<text x=\"" << left << "\" y=\"" << key_y - 12 << "\" font-size=\"14\" fill=\""
      << hex(P.panel_text) << "\">"
      << xml_escape(s.descriptor + "   view " + s.request.view + "   step " +
                    std::to_string(s.playback.step) + " (a step = one " +
                    granularity_name(s.playback.granularity) + ")")
      << "</text>\n";
    double kx = left;
    for (const LegendEntry& e : legend()) {
        if (e.outline)
            o << "<rect x=\"" << kx + 1.5 << "\" y=\"" << key_y + 1.5
              << "\" width=\"11\" height=\"11\" fill=\"" << hex(P.cell) << "\" stroke=\""
              << hex(e.colour) << "\" stroke-width=\"3\"/>";
        else
            o << "<rect x=\"" << kx << "\" y=\"" << key_y << "\" width=\"14\" height=\"14\" fill=\""
              << hex(e.colour) << "\" stroke=\"" << hex(P.grid) << "\"/>";
        if (e.hatch)
            o << "<line x1=\"" << kx << "\" y1=\"" << key_y << "\" x2=\"" << kx + 14 << "\" y2=\""
              << key_y + 14 << "\" stroke=\"" << hex(P.dim_text) << "\"/>";
        o << "<text x=\"" << kx + 19 << "\" y=\"" << key_y + 12 << "\" font-size=\"13\" fill=\""
          << hex(P.panel_text) << "\">" << xml_escape(e.label) << "</text>\n";
        kx += 19 + 13 * char_w * static_cast<double>(std::strlen(e.label)) + 22;
    }
    // Each panel's cells, padding, tile labels, values and outlines: the primitives the canvas
    // draws (export/view_drawing.hpp), at u px a cell.
    std::vector<app::DrawPrim> list;
    svg_prims = {};
    svg_titles.clear();
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        const Panel& pn = v.panels[i];
        if (pn.hidden) continue;  // a stage of the lesson not revealed yet, as in the window
        // Its title, then its cells, padding, tile labels, values and outlines: the primitives
        // the canvas draws (export/view_drawing.hpp), at u px a cell.
        const auto px = static_cast<float>(left + pn.x * u);
        const auto py = static_cast<float>(top + pn.y * u);
        list.clear();
        app::paint_title(titles[i], px, static_cast<float>(top + (pn.y - pn.title_room) * u), tp,
                         false, list);
        record_titles(svg_titles, i, list, px, py);
        app::write_svg(o, list);
        app::PanelPaint pp = panel_paint(i, uf);
        pp.ox = static_cast<float>(left);
        pp.oy = static_cast<float>(top);
        pp.min_x = 0;
        list.clear();
        app::paint_panel(pn, st.panels[i], pp, list);
        const app::PrimCounts c = app::count_prims(list);
        svg_prims.rects += c.rects;
        svg_prims.lines += c.lines;
        svg_prims.texts += c.texts;
        svg_prims.images += c.images;
        app::write_svg(o, list);
    }
    o << "</svg>\n";
    return o.str();
}

}  // namespace convlab::ui
