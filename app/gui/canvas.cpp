// The canvas: its header line, the fit, zoom and pan, hover and following the step.
#include "gui/app.hpp"
#include "gui/timings_chart.hpp"

namespace convlab::ui {

// [SECTION] canvas

void App::header() {
    const Palette& P = pal();
    if (s.request.view == "timings") return;  // the Timings view draws its own (canvas)
    ImDrawList* dl = ImGui::GetWindowDrawList();
    (void)dl;
    ImGui::PushStyleColor(ImGuiCol_Text, P.panel_text);
    const dim_t n = steps();
    // Short of height (a 1280x720 projector, the lesson's narration below): the caption one
    // line, cut with "..." (the whole of it on hover), and the legend smaller, so that the
    // canvas keeps the lines. Lesson 17's network at 1280x720 in presenter mode had cells of
    // 17 px, too small for their digits, under a caption and a legend of two lines each.
    const bool compact = short_window();
    if (view) {
        ImGui::SetWindowFontScale(compact ? 1.0f : 1.15f);
        if (compact)
            one_line(view->caption);
        else
            wrapped(view->caption);
        ImGui::SetWindowFontScale(1.0f);
    }
    const char* gran = s.playback.granularity == Granularity::Element ? "one element"
                       : s.playback.granularity == Granularity::Line  ? "one line"
                       : s.playback.granularity == Granularity::Tile  ? "one tile (16 lines)"
                                                                      : "everything";
    std::string line = s.descriptor + "   view " + s.request.view + "   step " +
                       std::to_string(s.playback.step) + " (of 0 to " +
                       std::to_string(std::max<dim_t>(0, n - 1)) + "; a step = " + gran + ")   " +
                       (s.playback.paused ? "paused" : "playing") +
                       "   data: " + app::data_kind_name(s.request.data);
    // Short of height: one line, cut (the whole of it on hover); else it wraps.
    if (compact)
        one_line(line);
    else
        wrapped(line);
    // The formula of the hovered (else pinned) cell, with the numbers filled in.
    const app::Selection sel = s.hover.valid() ? s.hover : s.pinned;
    std::string f =
        "hover a cell: its sources and destinations light up in every panel and its "
        "index formula appears here; click pins it";
    const bool formula = view && sel.valid() && view->formula;
    if (formula)
        f = app::formula_hidden(*view, st, sel.panel, sel.cell)
                ? app::cell_name(view->panels[static_cast<std::size_t>(sel.panel)], sel.cell) +
                      ": its formula shows when the ? cells are revealed (R)"
                : view->formula(*view, sel.panel, sel.cell);
    if (formula || !short_window()) {
        ImGui::PushStyleColor(ImGuiCol_Text, P.hovered);
        wrapped((s.pinned.valid() && !s.hover.valid() ? "[pinned] " : "") + f);
        ImGui::PopStyleColor();
    }
    if (view && !view->check.empty()) {
        const bool ok = view->check.find(": yes") != std::string::npos;
        ImGui::PushStyleColor(ImGuiCol_Text, ok ? P.good : P.bad);
        if (compact)
            one_line("check: " + view->check);
        else
            wrapped("check: " + view->check);
        ImGui::PopStyleColor();
    }
    // Legend, wrapped where the next entry would not fit (a 1280-pixel projector).
    ImDrawList* d = ImGui::GetWindowDrawList();
    const float sz = ImGui::GetTextLineHeight();
    bool first = true;
    const auto swatch = [&](ImU32 c, const char* label, bool hatch, bool outline) {
        if (!first) {
            ImGui::SameLine(0, sz * 1.5f);
            const float w = sz + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(label).x;
            if (ImGui::GetContentRegionAvail().x - corner_room() < w) ImGui::NewLine();
        }
        first = false;
        const ImVec2 p0 = ImGui::GetCursorScreenPos();
        if (outline) {
            const float t = std::max(2.0f, sz * 0.18f);
            d->AddRectFilled(p0, ImVec2(p0.x + sz, p0.y + sz), P.cell);
            d->AddRect(ImVec2(p0.x + t * 0.5f, p0.y + t * 0.5f),
                       ImVec2(p0.x + sz - t * 0.5f, p0.y + sz - t * 0.5f), c, 0, 0, t);
        } else {
            d->AddRectFilled(p0, ImVec2(p0.x + sz, p0.y + sz), c);
        }
        d->AddRect(p0, ImVec2(p0.x + sz, p0.y + sz), P.grid);
        if (hatch) d->AddLine(p0, ImVec2(p0.x + sz, p0.y + sz), P.dim_text);
        ImGui::Dummy(ImVec2(sz, sz));
        ImGui::SameLine();
        ImGui::TextUnformatted(label);
    };
    if (compact) ImGui::SetWindowFontScale(0.85f);
    for (const LegendEntry& e : legend()) swatch(e.colour, e.label, e.hatch, e.outline);
    if (compact) ImGui::SetWindowFontScale(1.0f);
    ImGui::PopStyleColor();
}

void App::wrapped(const std::string& text) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPos().x +
                           std::max(1.0f, ImGui::GetContentRegionAvail().x - corner_room()));
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
}

// text on one line, cut with "..." where the window is narrower; the whole text on hover.
void App::one_line(const std::string& text) {
    const std::string cut = cut_to_width(ImGui::GetFont(), ImGui::GetFontSize(), text,
                                         ImGui::GetContentRegionAvail().x - corner_room());
    ImGui::TextUnformatted(cut.c_str());
    if (cut.size() != text.size() && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.0f);
        ImGui::TextUnformatted(text.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

// Cells smaller than this (pixels) are not read from a projector: the fit then also tries one
// row of panels with the view's own row breaks lifted.
constexpr float kReadableCellPx = 10.0f;

void App::canvas() {
    const Palette& P = pal();
    if (s.request.view == "timings") {  // gui/timings.cpp
        canvas_min = ImGui::GetCursorScreenPos();
        canvas_max = ImVec2(canvas_min.x + ImGui::GetContentRegionAvail().x,
                            canvas_min.y + ImGui::GetContentRegionAvail().y);
        draw_timings(*timings, {font, P.panel_text, P.dim_text, P.good, P.bad});
        return;
    }
    ImGui::BeginChild("canvas", ImVec2(0, 0), false,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse |
                          ImGuiWindowFlags_NoMove);
    const ImVec2 c0 = ImGui::GetCursorScreenPos();
    ImVec2 size = ImGui::GetContentRegionAvail();
    size.x = std::max(size.x, 50.0f);
    size.y = std::max(size.y, 50.0f);
    canvas_min = c0;
    canvas_max = ImVec2(c0.x + size.x, c0.y + size.y);
    ImGui::InvisibleButton("canvas_area", size,
                           ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec4 clip(c0.x, c0.y, c0.x + size.x, c0.y + size.y);
    dl->PushClipRect(ImVec2(clip.x, clip.y), ImVec2(clip.z, clip.w), true);
    if (job) {
        const float f = job->progress.load();
        ImGui::SetCursorScreenPos(ImVec2(c0.x + 20, c0.y + 10));
        const auto ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - job->start)
                .count();
        if (ms > 150) {
            ImGui::TextUnformatted("engine at work (worker thread) ...");
            ImGui::SetCursorScreenPos(
                ImVec2(c0.x + 20, c0.y + 10 + ImGui::GetTextLineHeight() * 1.3f));
            ImGui::ProgressBar(f, ImVec2(size.x * 0.4f, 0));
        }
    }
    if (!view) {
        dl->PopClipRect();
        ImGui::EndChild();
        return;
    }
    if (view->panels.empty()) {
        dl->AddText(font, ImGui::GetFontSize() * 1.4f, ImVec2(c0.x + 30, c0.y + 60), P.panel_text,
                    ("placeholder: " + view->caption).c_str());
        dl->PopClipRect();
        ImGui::EndChild();
        return;
    }
    // Titles above the panels (export/view_drawing.hpp, as the SVG writes them): "X  input",
    // then the shape and what rows, columns and tiles are. The room they take is in pixels, so
    // the panels are laid out again for the zoom.
    const float fs = ImGui::GetFontSize();
    const float margin = fs;
    const float avail_x = size.x - 2 * margin, avail_y = size.y - 2 * margin;
    // A title wraps at its panel's slot and at the canvas's right edge.
    app::TitlePaint titling = title_paint(compact_titles, avail_x);
    const auto make_titles = [&] { titling.compact = compact_titles; };
    // Right edge of the widest title line, from the view's left edge, at zoom z.
    const auto titles_right = [&](float z) {
        float r = 0;
        for (const Panel& pn : view->panels)
            r = std::max(r, static_cast<float>(pn.x) * z + app::title_text(pn, z, titling).w);
        return r;
    };
    float top = 0;
    // Least room per panel for its title: 13 characters, less when a row has many panels.
    float slot_px = 0;
    const auto update_slot = [&] { slot_px = app::title_slot(*view, fs, size.x - 2 * margin); };
    update_slot();
    // Each row's titles get the room of its tallest (and the tile labels, "c=1", where any of
    // its panels has tiles): one room for every row, the tallest of all, left a band as tall as
    // a 5-line title above a row of 1-line titles (the fractal view of 20 channels at C0 = 8).
    // top: the tallest row's.
    const auto relayout = [&](float z) { top = app::layout_titled(*view, z, titling, slot_px); };
    if (s.zoom > 0 && fit_auto &&
        (std::abs(size.x - fit_size.x) > 0.5f || std::abs(size.y - fit_size.y) > 0.5f ||
         fs != fit_fs))
        s.zoom = 0;
    // Fit: the whole view in the canvas (cells at most 64 px).
    if (s.zoom <= 0) {
        if (auto_followed) s.follow = false;
        auto_followed = false;
        fit_auto = true;
        fit_size = size;
        fit_fs = fs;
        // The largest zoom at which the view, as arranged now, fits the canvas, and whether its
        // titles fit too (false: the cells fit nowhere, the fixed-point estimate, or the titles
        // pass the canvas's right edge, its margin included).
        const auto search = [&]() -> std::pair<float, bool> {
            float z = 16.0f;
            for (int it = 0; it < 4; ++it) {
                relayout(z);
                z = std::min((size.x - 2 * margin) / static_cast<float>(view->width),
                             (size.y - 2 * margin) / static_cast<float>(view->height));
                z = std::clamp(z, 0.05f, 64.0f);
            }
            // The iteration need not converge (titles take pixels, not cells): shrink until
            // the cells of the view laid out at z fit, then a little more (at most to 85%) for
            // the titles of the last panels (they wrap at their slot's width).
            // (The estimate above converges slowly when titles dominate: search down from 64.)
            const float z_estimate = z;
            z = 64.0f;
            float z_cells = 0;
            for (int it = 0; it < 160 && z > 0.05f; ++it) {
                relayout(z);
                float cells = 0;
                for (const auto& pn : view->panels)
                    cells = std::max(cells, static_cast<float>(pn.x + pn.width) * z);
                const bool fit =
                    cells <= avail_x && static_cast<float>(view->height) * z <= avail_y;
                if (fit && z_cells == 0) z_cells = z;
                if (fit && (titles_right(z) <= avail_x || z < 0.85f * z_cells)) break;
                z *= 0.94f;
            }
            if (z_cells == 0) return {z_estimate, false};
            relayout(z);
            return {z, titles_right(z) <= avail_x + margin + 0.5f};  // as FrameReport::fits
        };
        // Three arrangements, the one whose cells come out largest kept (one that fits before
        // one that does not): the view as built (for 1600 x 1000), its rows of panels and wraps
        // of tiles chosen again for this canvas, and the fewest rows (a canvas without limit).
        // A 1024 x 768 projector breaks lesson 17's row of five tensors in two rather than
        // cutting every title to a few letters over cells a few pixels wide; at 1280 x 720
        // lesson 06's six tensors keep one row with their values readable. (The guess for this
        // canvas knows titles only roughly: planned at 9 characters a slot, a compact title is
        // cut with "..." there.) Each with full titles and with one-line titles (name and
        // title; the hover shows coordinates), those kept where their cells come out a tenth
        // larger and more: short of height (a lesson's narration, presenter fonts). (Decided
        // once by the height the full titles took, a canvas 8 px taller flipped lesson 07's
        // first step at 1024 x 768 to full titles over cells of 21 px instead of 28.6.)
        struct Pick {
            std::pair<float, bool> r{0.0f, false};
            app::CanvasGuess guess;
            std::size_t k = 0;  // 0: as built, 2: fewest rows, 3: one row (own breaks lifted)
            bool compact = false;
        };
        // Whether a's cells beat b's by the factor, one that fits before one that does not.
        const auto beats = [](const Pick& a, const Pick& b, float factor) {
            return (a.r.second && !b.r.second) ||
                   (a.r.second == b.r.second && a.r.first > b.r.first * factor);
        };
        // The best of the three arrangements with the titles as they are; the last one tried
        // is left in place.
        std::size_t last_tried = 2;  // the arrangement left in place by arrangements()
        const auto arrangements = [&] {
            relayout(16.0f);
            last_tried = 2;
            const app::CanvasGuess guesses[] = {
                app::CanvasGuess{}, app::CanvasGuess{avail_x, avail_y, top + 0.5 * fs, fs * 9.0},
                app::CanvasGuess{1e6, 1e6, 0, 0}};
            Pick best;
            for (std::size_t k = 0; k < std::size(guesses); ++k) {
                app::arrange_view(*view, guesses[k]);
                update_slot();
                const Pick tried{search(), guesses[k], k, compact_titles};
                if (k == 0 || beats(tried, best, 1.001f)) best = tried;
            }
            // Cells too small to read (below kReadableCellPx): also the fewest rows with the
            // view's own row breaks lifted (the tnc view's X and dY rows side by side), kept
            // where its cells come out half as large again. Lesson 13's TNCf step at 1280x720 in
            // presenter mode: two rows of titles left its cells 4.8 px.
            if (best.r.first < kReadableCellPx) {
                app::CanvasGuess one_row = guesses[2];
                one_row.keep_rows = false;
                app::arrange_view(*view, one_row);
                update_slot();
                const Pick tried{search(), one_row, 3, compact_titles};
                last_tried = 3;
                if (beats(tried, best, 1.5f)) best = tried;
            }
            return best;
        };
        // Presenter mode: one-line titles always (the class reads cells; the long form is in
        // the hover and the narration).
        Pick best;
        if (!s.presenter) {
            compact_titles = false;
            make_titles();
            best = arrangements();
        }
        compact_titles = true;
        make_titles();
        const Pick short_titles = arrangements();
        if (s.presenter || beats(short_titles, best, 1.1f)) best = short_titles;
        if (!best.compact || best.k != last_tried) {  // (else the last one tried is in place)
            compact_titles = best.compact;
            make_titles();
            app::arrange_view(*view, best.guess);
            update_slot();
        }
        arranged_for = best.guess;
        if (best.k == 0) arranged_for.reset();
        const float z = best.r.first;
        s.zoom = z;
        fit_zoom = z;
        relayout(z);
        // Centred, but never pushing a title past the right edge.
        s.pan_x = std::max(0.0f, std::min((avail_x - static_cast<float>(view->width) * z) * 0.5f,
                                          avail_x - titles_right(z)));
        s.pan_y = 0;
    }
    // Following the step (Z): cells of at least kFollowCellPx (the fit's, where larger), the
    // step's cells kept in the middle of the canvas. A large view then scrolls with the step, so
    // that a class reads its values where the fit would draw cells of a few pixels (the tnc view
    // of 8 channels at batch 2 on a 1024 x 768 projector: 1.7 px).
    bool laid_out = false;  // at s.zoom, by the follow below
    if (s.follow && st.current.size() == view->panels.size()) {
        // At least the zoom at which the step's own values are written whole (read.need_z),
        // kFollowCellPx where that keeps the step's cells in view together, else less.
        const float need = std::max(fit_zoom, read.need_z);
        float zf = std::max(need, app::kFollowCellPx);
        relayout(zf);
        app::CellBox box;
        // In a lesson: the cells the step is about (must_read: its map's panels and the
        // highlights; the tensors view has only highlights).
        bool any = false;
        app::StepState marked;
        if (lesson.active()) marked.current = must_read(any);
        const app::StepState& follow_st = any ? marked : st;
        // The box of the step's cells alone (and the padding cells they read), laid out now.
        const auto cells_box = [&] {
            app::CellBox b{1e300, 1e300, -1e300, -1e300};
            const auto add = [&b](double x, double y) {
                b = {std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x + 1),
                     std::max(b.y1, y + 1)};
            };
            for (std::size_t i = 0; i < follow_st.current.size(); ++i) {
                for (const dim_t c : follow_st.current[i]) {
                    const app::CellPos cp = app::cell_pos(view->panels[i], c);
                    add(cp.x, cp.y);
                }
                if (i < follow_st.panels.size())
                    for (const app::CellPos& cp : follow_st.panels[i].current_pads)
                        add(view->panels[i].x + cp.x, view->panels[i].y + cp.y);
            }
            return b;
        };
        const auto fit_of = [&](const app::CellBox& b) {
            return 0.97f * std::min(avail_x / static_cast<float>(b.width() + 0.5),
                                    avail_y / static_cast<float>(b.height() + 0.5));
        };
        app::CellBox whole;
        for (int it = 0; it < 3 && app::follow_box(*view, follow_st, 1e12, 1e12, whole); ++it) {
            // The step's whole tiles where they fit readably, else its cells alone.
            float zfit = fit_of(whole);
            if (zfit < need) zfit = fit_of(cells_box());
            if (zfit >= zf || zfit < need) break;
            zf = std::max(need, zfit);
            relayout(zf);
        }
        // A band at the canvas's top for the titles pinned there (pin_title), so that they
        // never cover the step's cells (the step's whole tiles are kept below it).
        const float band = compact_titles ? fs * 1.3f : top;
        const float follow_h = std::max(avail_y - band, avail_y * 0.5f);
        bool ok = app::follow_box(*view, follow_st, avail_x / zf, avail_y / zf, box);
        // Below the band where the step's cells (or their whole tiles) fit there: the box for
        // that height, when it holds every cell of the step.
        app::CellBox below;
        if (ok && app::follow_box(*view, follow_st, avail_x / zf, follow_h / zf, below)) {
            bool all = true;
            for (std::size_t i = 0; i < follow_st.current.size() && all; ++i)
                for (const dim_t c : follow_st.current[i]) {
                    const app::CellPos cp = app::cell_pos(view->panels[i], c);
                    if (cp.x < below.x0 || cp.y < below.y0 || cp.x + 1 > below.x1 ||
                        cp.y + 1 > below.y1) {
                        all = false;
                        break;
                    }
                }
            if (all) box = below;
        }
        if (ok) {
            s.zoom = zf;
            laid_out = true;
            app::follow_pan(box, std::max<double>(view->width, titles_right(zf) / zf), view->height,
                            zf, avail_x, follow_h, s.pan_x, s.pan_y);
            if (s.pan_y < 0) s.pan_y += std::min(band, avail_y * 0.5f);
        }
    }
    const float z = s.zoom;
    if (!laid_out) relayout(z);
    const ImVec2 origin(c0.x + margin + s.pan_x, c0.y + margin + s.pan_y);
    canvas_size = size;
    drawn_size =
        ImVec2(margin + s.pan_x + std::max(static_cast<float>(view->width) * z, titles_right(z)),
               margin + s.pan_y + static_cast<float>(view->height) * z);
    // Mouse: wheel zooms about the cursor, drag pans, hover links, click pins.
    ImGuiIO& io = ImGui::GetIO();
    const bool over = ImGui::IsItemHovered();
    if (over && io.MouseWheel != 0) {
        const float nz = std::clamp(z * std::pow(1.2f, io.MouseWheel), 0.05f, 96.0f);
        const float mx = io.MousePos.x - origin.x, my = io.MousePos.y - origin.y;
        s.pan_x -= mx * (nz / z - 1.0f);
        s.pan_y -= my * (nz / z - 1.0f);
        s.zoom = nz;
        fit_auto = false;
        s.follow = false;
    }
    if (ImGui::IsItemActive() && (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f) ||
                                  ImGui::IsMouseDragging(ImGuiMouseButton_Right, 1.0f))) {
        s.pan_x += io.MouseDelta.x;
        s.pan_y += io.MouseDelta.y;
        fit_auto = false;
        s.follow = false;
    }
    // Each panel's title: where it is drawn, pinned to an edge where it scrolled off, and
    // whether the panel shows at all (a sliver cut by the top edge does not) and from where down
    // its cells are drawn (under a title pinned over them).
    const app::CellBox visible{clip.x, clip.y, clip.z, clip.w};
    std::vector<app::TitleText> titles(view->panels.size());
    std::vector<app::TitlePlace> places(view->panels.size());
    for (std::size_t i = 0; i < view->panels.size(); ++i) {
        const Panel& pn = view->panels[i];
        const ImVec2 tp(origin.x + static_cast<float>(pn.x) * z,
                        origin.y + static_cast<float>(pn.y - pn.title_room) * z);
        titles[i] = app::title_text(pn, z, titling);
        const app::CellBox box{tp.x, origin.y + static_cast<float>(pn.y) * z,
                               tp.x + static_cast<float>(pn.width) * z,
                               origin.y + static_cast<float>(pn.y + pn.height) * z};
        places[i] = app::pin_title(tp.x, tp.y, titles[i].w, titles[i].h, box, visible);
    }
    app::Selection h;
    if (over) {
        const double cx = (io.MousePos.x - origin.x) / z, cy = (io.MousePos.y - origin.y) / z;
        for (std::size_t i = 0; i < view->panels.size(); ++i) {
            if (!places[i].shown || io.MousePos.y < places[i].cells_y0) continue;
            const dim_t c = app::hit_test(view->panels[i], cx, cy);
            if (c >= 0) h = {static_cast<int>(i), c};
        }
        if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
            ImGui::GetMouseDragDelta(ImGuiMouseButton_Left).x == 0 &&
            ImGui::GetMouseDragDelta(ImGuiMouseButton_Left).y == 0)
            s.pinned = h == s.pinned ? app::Selection{} : h;
    }
    if (!s.hover_forced) s.hover = h;
    update_linked();
    dl->AddRectFilled(ImVec2(clip.x, clip.y), ImVec2(clip.z, clip.w), P.background);
    canvas_prims = {};
    canvas_titles.clear();
    // Titles whose place scrolled off while their panel still shows (following the step, or
    // zoomed by hand) are pinned to the canvas's edge over a backdrop, after every panel's cells.
    std::vector<app::DrawPrim> pinned;
    for (std::size_t i = 0; i < view->panels.size(); ++i) {
        const Panel& pn = view->panels[i];
        if (pn.hidden) continue;  // a stage of the lesson not revealed yet
        const app::TitlePlace& at = places[i];
        if (!at.shown) continue;  // a sliver cut by the canvas's top edge
        const app::TitleText& t = titles[i];
        painted.clear();
        app::paint_title(t, at.x, at.y, titling, at.pinned, painted);
        record_titles(canvas_titles, i, painted, origin.x + static_cast<float>(pn.x) * z,
                      origin.y + static_cast<float>(pn.y) * z);
        if (at.pinned)
            pinned.insert(pinned.end(), painted.begin(), painted.end());
        else
            for (const app::DrawPrim& p : painted) chart_draw::draw_prim(dl, font, p);
        // A one-line title is the short form: the hover gives the whole of it, with the shape.
        const ImVec2 m = ImGui::GetIO().MousePos;
        if (compact_titles && ImGui::IsWindowHovered() && m.x >= at.x && m.x < at.x + t.w &&
            m.y >= at.y && m.y < at.y + t.h)
            ImGui::SetTooltip("%s  %s\n%s\n%s", pn.name.c_str(), pn.title.c_str(),
                              app::shape_text(pn.shape).c_str(), app::role_text(pn).c_str());
        // Its cells from under a title pinned over them (the canvas's top otherwise).
        const ImVec4 cells_clip(clip.x, std::max(clip.y, at.cells_y0), clip.z, clip.w);
        dl->PushClipRect(ImVec2(cells_clip.x, cells_clip.y), ImVec2(cells_clip.z, cells_clip.w),
                         true);
        draw_panel(dl, i, origin, z, cells_clip);
        dl->PopClipRect();
    }
    for (const app::DrawPrim& p : pinned) chart_draw::draw_prim(dl, font, p);
    lesson.draw_highlights(dl, *view, origin, z, lesson_highlight_colour(s.palette));
    if (lesson.active() || measure_read) measure_readability(origin, z, clip);
    // A lesson step whose fitted view leaves the cells it is about unreadable follows the step
    // (zoomed in to kFollowCellPx) from the next frame on: a class reads the step's digits. So
    // does any view in presenter mode, unless the fit was asked for (F).
    if ((lesson.active() || (s.presenter && !fit_chosen)) && fit_auto && !s.follow &&
        read.ok < read.must && fit_zoom < std::max(app::kFollowCellPx, read.need_z)) {
        s.follow = true;
        auto_followed = true;
    }
    dl->PopClipRect();
    ImGui::EndChild();
}

}  // namespace convlab::ui
