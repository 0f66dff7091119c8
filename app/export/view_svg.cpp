// The view as SVG (App::svg): the panels, cells, values and the legend as vector shapes.
#include "gui/app.hpp"

namespace convlab::ui {

// [SECTION] exports

namespace {

std::string xml_escape(const std::string& t) {
    std::string r;
    for (char c : t) {
        if (c == '<')
            r += "&lt;";
        else if (c == '>')
            r += "&gt;";
        else if (c == '&')
            r += "&amp;";
        else if (c == '"')
            r += "&quot;";
        else
            r += c;
    }
    return r;
}

}  // namespace

// The view as SVG: the same cells, colours, values, padding, contribution counts, titles and
// colour key as the window (32 px cells; text wrapped to the panels' slots).
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
    const double u = 32, left = 20, title_px = 15, line_h = 18, char_w = 0.58;
    // Layout twice: the slots' widths decide how many lines the titles wrap into.
    ViewModel v = *view;
    app::layout_view(v, 1.6, 9.0);
    std::vector<std::vector<std::string>> titles(v.panels.size());
    std::size_t lines = 1;
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        const Panel& pn = v.panels[i];
        const auto chars = static_cast<std::size_t>(
            std::max(12.0, (pn.slot_width - 0.3) * u / (title_px * char_w)));
        titles[i] = lesson::wrap_words(pn.name + "  " + pn.title, chars);
        for (const auto& l : lesson::wrap_words(shape_text(pn.shape) + "  " + role_text(pn), chars))
            titles[i].push_back(l);
        lines = std::max(lines, titles[i].size());
    }
    const double title_cells = (static_cast<double>(lines) * line_h + 22) / u;
    app::layout_view(v, title_cells, 9.0);
    // Header: caption (wrapped), the step line, the colour key.
    const double page_w = std::max(900.0, v.width * u + 2 * left);
    const auto caption = lesson::wrap_words(
        view->caption, static_cast<std::size_t>((page_w - 2 * left) / (16 * char_w)));
    const double key_y = 24 + static_cast<double>(caption.size()) * 20 + 18;
    const double top = key_y + 30;
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << page_w << "\" height=\""
      << v.height * u + top + 20 << "\" font-family=\"DejaVu Sans\">\n";
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
    const auto cell = [&](double x, double y, ImU32 fill, ImU32 stroke, double width) {
        o << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << u << "\" height=\"" << u
          << "\" fill=\"" << hex(fill) << "\" stroke=\"" << hex(stroke) << "\" stroke-width=\""
          << width << "\"/>";
    };
    const auto text = [&](double x, double y, double size, const std::string& colour,
                          const std::string& t, const char* anchor = "middle") {
        o << "<text x=\"" << x << "\" y=\"" << y << "\" font-size=\"" << size << "\" text-anchor=\""
          << anchor << "\" fill=\"" << colour << "\">" << xml_escape(t) << "</text>";
    };
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        const Panel& pn = v.panels[i];
        if (pn.hidden) continue;  // a stage of the lesson not revealed yet, as in the window
        const app::PanelState& ps = st.panels[i];
        const double tx = left + pn.x * u, ty = top + (pn.y - title_cells) * u;
        for (std::size_t k = 0; k < titles[i].size(); ++k)
            o << "<text x=\"" << tx << "\" y=\"" << ty + 15 + line_h * static_cast<double>(k)
              << "\" font-size=\"" << (k == 0 ? title_px : 13) << "\" fill=\""
              << hex(k == 0 ? P.panel_text : P.dim_text) << "\">" << xml_escape(titles[i][k])
              << "</text>\n";
        // Padding borders of every tile (zeros), as the window draws them.
        const dim_t tw = pn.pad_left + pn.cols + pn.pad_right;
        const dim_t th = pn.pad_top + pn.rows + pn.pad_bottom;
        if (tw * th > pn.rows * pn.cols) {
            const dim_t per_row =
                pn.tiles_per_row > 0 ? std::min(pn.tiles_per_row, pn.tiles_x) : pn.tiles_x;
            const dim_t wraps = (pn.tiles_x + per_row - 1) / per_row;
            for (dim_t sr = 0; sr < wraps * pn.tiles_y; ++sr)
                for (dim_t sc = 0; sc < per_row; ++sc) {
                    if ((sr % wraps) * per_row + sc >= pn.tiles_x) continue;
                    const double ox = pn.x + static_cast<double>(sc * (tw + 1));
                    const double oy = pn.y + static_cast<double>(sr * (th + 1));
                    for (dim_t r = 0; r < th; ++r)
                        for (dim_t q = 0; q < tw; ++q) {
                            if (r >= pn.pad_top && r < pn.pad_top + pn.rows && q >= pn.pad_left &&
                                q < pn.pad_left + pn.cols)
                                continue;
                            const double x = left + (ox + static_cast<double>(q)) * u;
                            const double y = top + (oy + static_cast<double>(r)) * u;
                            cell(x, y, P.padding, P.grid, 1);
                            o << "<line x1=\"" << x << "\" y1=\"" << y << "\" x2=\"" << x + u
                              << "\" y2=\"" << y + u << "\" stroke=\"" << hex(P.grid) << "\"/>";
                            text(x + u / 2, y + u * 0.65, 12, hex(P.dim_text), "0");
                            o << "\n";
                        }
                }
        }
        for (const CellPos& cp : ps.current_pads) {
            const double x = left + (pn.x + cp.x) * u, y = top + (pn.y + cp.y) * u;
            cell(x, y, c_current_pad, P.current, 3);
            text(x + u / 2, y + u * 0.65, 12, hex(P.value_text), "0");
            o << "\n";
        }
        for (dim_t c = 0; c < pn.numel(); ++c) {
            const CellPos cp = app::cell_pos(pn, c);
            const double x = left + cp.x * u, y = top + cp.y * u;
            const ImU32 col = cell_colour(i, c);
            const auto cu = static_cast<std::size_t>(c);
            const bool current = (ps.flags[cu] & app::kCurrent) != 0;
            cell(x, y, col, current ? P.current : P.grid, current ? 3 : 1);
            if (!pn.group.empty())
                o << "<rect x=\"" << x + u * 0.1 << "\" y=\"" << y + u * 0.1 << "\" width=\""
                  << u * 0.8 << "\" height=\"" << u * 0.8 << "\" fill=\"none\" stroke=\""
                  << hex(group_colour(pn.group[cu])) << "\" stroke-width=\"" << u * 0.07 << "\"/>";
            const bool lane = !pn.padding_lane.empty() && pn.padding_lane[cu];
            if (lane)
                o << "<line x1=\"" << x << "\" y1=\"" << y << "\" x2=\"" << x + u << "\" y2=\""
                  << y + u << "\" stroke=\"" << hex(P.grid) << "\"/>";
            const std::string ink = luminance(col) > 0.5f ? "#000000" : "#ffffff";
            // Fitted to the cell as the window does, by DejaVu Sans's advance widths (digits
            // 0.64 em, '.' 0.32, '-' 0.36): a value is written shorter, never cut.
            const std::string val =
                lane ? "0"
                : (ps.flags[cu] & app::kHidden)
                    ? app::hidden_text(ps.flags[cu])
                    : app::format_value_fit(
                          ps.shown[cu], s.request.data, static_cast<float>(u * 0.9),
                          [](const std::string& t) {
                              float w = 0;
                              for (char ch : t) w += ch == '.' ? 0.32f : ch == '-' ? 0.36f : 0.64f;
                              return w * 12.0f;
                          });
            if (!val.empty())
                text(x + u / 2, y + u * (ps.count.empty() ? 0.65 : 0.55), 12, ink, val);
            if (!ps.count.empty() && !lane)
                text(x + 2, y + u - 3, 9, ink, "x" + std::to_string(ps.count[cu]), "start");
            o << "\n";
        }
    }
    o << "</svg>\n";
    return o.str();
}

}  // namespace convlab::ui
