// The Timings view (gui/timings.hpp). The chart is drawn from the chart model with ImGui draw
// lists, mark for mark as app::map_chart places it (the same order and shapes as the cairo export
// in charts/chart_export.cpp). Index:
//   [SECTION] the panel's state
//   [SECTION] drawing helpers (dashes, rotated text, colours)
//   [SECTION] controls: shape set, passes, algorithms, batch, threads, peer, Run / Cancel
//   [SECTION] the chart: card, axes, marks, legend, hover tooltip
//   [SECTION] footer and exports
//   [SECTION] the view, and headless shots
#include "gui/timings.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include "charts/chart.hpp"
#include "convlab/conv.hpp"
#include "data/data_dir.hpp"
#include "imgui_stdlib.h"
#include "model/timings_state.hpp"
#include "onednn_peer.hpp"
#ifdef __EMSCRIPTEN__
#include <emscripten.h>

#include <nlohmann/json.hpp>

#include "web/web_glue.hpp"
#endif

namespace convlab::ui {

// [SECTION] the panel's state

struct TimingsPanel {
    app::TimingsSettings settings;
    app::TimingsRun run;
    app::TimingsSnapshot snap;
    std::uint64_t built = ~std::uint64_t{0};  // snapshot version the charts were built from
    std::vector<charts::Chart> charts;
    std::string chart_id;       // the chart shown
    bool select_tab = false;    // make chart_id the selected tab on the next frame
    float footer_measured = 0;  // height of the footer and export rows, last frame
    std::string footer_for;     // the chart it was measured with
    bool picked = false;        // a tab was chosen (by a click or a shot's --chart)
    // Without a data folder the panel lists no shape sets (the GUI never fails over one).
    std::string shapes_dir = [] {
        try {
            return data::shapes_dir();
        } catch (const Error&) {
            return std::string();
        }
    }();
    std::vector<std::string> sets;  // shape set stems
    std::string set_name = "classroom";
    int set_layers = -1;  // layers of the chosen set (-1 unreadable)
    bool peer_available = ::bench::PeerConv::available();
    app::TimingsExport exp;
    app::TimingsExportJob export_job;
    std::string export_dir;  // the running export's folder
    std::string load_path = "out/timings/results.json";
    std::string message;  // last action's outcome
    bool message_error = false;
    bool was_running = false;
    int forced_series = -1;  // shots: the hovered mark
    long long forced_mark = -1;
    std::string wanted_chart;  // a lesson step's chart, shown as soon as it is built
    // The lesson step whose run the panel shows: the controls then describe that run (its layer
    // and algorithms, not the shape set's) until the user goes back to the shape set or runs it.
    std::optional<app::TimingsLessonRun> lesson;
    // The results shipped with that lesson (TimingsLessonRun::reference), drawn beside its run.
    std::optional<bench::Results> reference;
    // The view is short (a projector's 720 lines under a lesson's narration): a lesson run's
    // controls go on one row and the chart's subtitle on one line, so that the chart keeps
    // room for its bars ("window too small for the chart" before).
    bool compact = false;
    // Where the Run button and "Export this chart" were drawn last frame (pixels: x0, y0, x1,
    // y1), for the browser tests, which click them (convlab_timings_state).
    ImVec4 run_rect{}, export_rect{};

    TimingsPanel() {
        sets = app::shape_sets(shapes_dir);
        choose_set(set_name);
#ifdef __EMSCRIPTEN__
        // The browser build has one thread: the run is measured a slice a frame (update()), so
        // that the page repaints between slices, on that one thread; the charts have no PDF
        // (cairo's), their SVG and PNG come from charts/chart_export.cpp over the page's canvas.
        run.set_sliced(true);
        settings.threads = 1;
        exp.pdf = false;
#endif
    }

    // Shows results measured earlier; the controls take their shape set, batch, threads and
    // whether the weights were packed once (the runner's note says so; runs before it had no
    // such note and packed per call), so the panel does not describe another run than the one
    // on screen.
    void show_results(bench::Results r, const std::string& from) {
        const std::string stem = std::filesystem::path(r.shapes_file).stem().string();
        if (std::find(sets.begin(), sets.end(), stem) != sets.end()) choose_set(stem);
        if (r.batch > 0) settings.batch = r.batch;
        if (r.machine.threads > 0) settings.threads = r.machine.threads;
        settings.weights_once = std::any_of(r.notes.begin(), r.notes.end(), [](const auto& n) {
            return n.rfind("weights: packed once", 0) == 0;
        });
        // The peer it was measured beside, where the list has it (a results.json may name
        // another: the choice then stays as it was).
        if (const app::PeerChoice* c = app::find_peer_choice(app::peer_name_of(r)))
            settings.peer = c->name;
        lesson.reset();
        run.adopt(std::move(r));
        say("showing " + from + " (measured earlier, not re-run)", false);
    }

    void choose_set(const std::string& name) {
        set_name = name;
        settings.shapes_file = shapes_dir + "/" + name + ".txt";
        try {
            set_layers = static_cast<int>(bench::read_shape_file(settings.shapes_file).size());
        } catch (const std::exception&) {
            set_layers = -1;
        }
    }

    void say(std::string text, bool error) {
        message = std::move(text);
        message_error = error;
    }

    const charts::Chart* current() const {
        for (const auto& c : charts)
            if (c.id == chart_id) return &c;
        return charts.empty() ? nullptr : &charts.front();
    }

    // Takes the latest snapshot (a sliced run measures its next slice first); rebuilds the
    // charts when results changed.
    void update() {
        run.pump();
        snap = run.snapshot();
        if (snap.version != built) {
            built = snap.version;
            charts.clear();
            if (snap.results && !snap.results->layers.empty()) {
                try {
                    charts = charts::standard_charts(
                        lesson && reference
                            ? app::with_reference(*snap.results, *reference, lesson->algos)
                            : *snap.results);
                } catch (const std::exception& e) {
                    say(std::string("charts: ") + e.what(), true);
                }
            }
            // A lesson step's chart, once its results give it.
            for (const auto& c : charts)
                if (!wanted_chart.empty() && c.id == wanted_chart) {
                    chart_id = wanted_chart;
                    picked = true;
                    select_tab = true;
                    wanted_chart.clear();
                }
            // Until a tab is picked, the first chart (the paper's, once measured) is shown.
            const bool known =
                std::any_of(charts.begin(), charts.end(),
                            [&](const charts::Chart& c) { return c.id == chart_id; });
            if (!charts.empty() && (!picked || !known)) {
                chart_id = picked && known ? chart_id : charts.front().id;
                select_tab = true;
            }
        }
        if (was_running && !snap.running) {
            if (!snap.error.empty())
                say("run failed: " + snap.error, true);
            else if (snap.results)
                say(app::run_summary(
                        lesson && reference
                            ? app::with_reference(*snap.results, *reference, lesson->algos)
                            : *snap.results,
                        snap.seconds, snap.cancelled),
                    snap.results->failed() > 0 || snap.results->noisy() > 0);
        }
        was_running = snap.running;
    }

    // The spec of the chosen peer; nullopt for none, or when oneDNN is not built in.
    std::optional<convlab::bench::PeerSpec> peer_spec() const {
        if (!peer_available || settings.peer == "none") return std::nullopt;
        return ::bench::PeerConv::spec("direct", app::peer_choice(settings.peer).plain);
    }

    void start() {
        try {
            bench::Config cfg = app::make_config(settings, peer_spec());
            if (run.start(std::move(cfg))) {
                say("", false);
                was_running = true;
                lesson.reset();
            }
        } catch (const std::exception& e) {
            say(e.what(), true);
        }
    }
};

namespace {
std::weak_ptr<TimingsPanel>& latest_panel() {
    static std::weak_ptr<TimingsPanel> p;  // the UI thread's; windows are made one at a time
    return p;
}
}  // namespace

std::shared_ptr<TimingsPanel> make_timings_panel() {
    auto p = std::make_shared<TimingsPanel>();
    latest_panel() = p;
    return p;
}

void cancel_timings(TimingsPanel& P) {
    P.run.cancel();
}

std::shared_ptr<TimingsPanel> current_timings_panel() {
    return latest_panel().lock();
}

void start_lesson_timings(TimingsPanel& P, const app::TimingsLessonRun& l, bool wait) {
    bench::Config cfg =
        app::lesson_config(l, P.settings.threads, P.peer_spec(), P.settings.out_dir);
    if (P.run.running()) {
        P.run.cancel();
        P.run.wait();
    }
    if (!P.run.start(std::move(cfg))) throw Error("timings: a run is still under way");
    P.lesson = l;
    P.reference.reset();
    P.was_running = true;
    P.say("", false);
    if (!l.reference.empty()) {
        try {
            P.reference = app::load_results(l.reference);
        } catch (const std::exception& e) {
            P.say(std::string("reference not shown: ") + e.what(), true);
        }
    }
    P.wanted_chart = l.chart;
    P.picked = false;
    P.built = ~std::uint64_t{0};
    if (wait) P.run.wait();
    P.update();
}

std::string timings_status(const TimingsPanel& p) {
    return p.message;
}

bool timings_busy(const TimingsPanel& p) {
    return p.run.running();
}

namespace {

// [SECTION] drawing helpers

ImU32 col(charts::Color c) {
    return IM_COL32(c.r, c.g, c.b, c.a);
}

constexpr ImU32 kInk = IM_COL32(25, 25, 25, 255);
constexpr ImU32 kSoftInk = IM_COL32(80, 80, 80, 255);
constexpr ImU32 kGrid = IM_COL32(224, 224, 224, 255);
constexpr ImU32 kFail = IM_COL32(200, 30, 30, 255);

void dashed(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 c, float thick, float on = 6, float off = 4) {
    const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
    if (len <= 0) return;
    for (float t = 0; t < len; t += on + off) {
        const float t1 = std::min(len, t + on);
        dl->AddLine(ImVec2(a.x + dx * t / len, a.y + dy * t / len),
                    ImVec2(a.x + dx * t1 / len, a.y + dy * t1 / len), c, thick);
    }
}

// Text rotated by `angle` (radians, counter-clockwise on screen when negative... as cairo: the
// text's baseline turns by angle about `pivot`), drawn at `pos` before the turn.
void rotated_text(ImDrawList* dl, ImFont* f, float size, ImVec2 pos, ImU32 c, const std::string& t,
                  float angle, ImVec2 pivot) {
    const int first = dl->VtxBuffer.Size;
    dl->AddText(f, size, pos, c, t.c_str());
    const float cs = std::cos(angle), sn = std::sin(angle);
    for (int i = first; i < dl->VtxBuffer.Size; ++i) {
        ImVec2& p = dl->VtxBuffer[i].pos;
        const float x = p.x - pivot.x, y = p.y - pivot.y;
        p = ImVec2(pivot.x + x * cs - y * sn, pivot.y + x * sn + y * cs);
    }
}

float text_w(ImFont* f, float size, const std::string& t) {
    return f->CalcTextSizeA(size, FLT_MAX, 0, t.c_str()).x;
}

float text_h(ImFont* f, float size, const std::string& t, float wrap) {
    return f->CalcTextSizeA(size, FLT_MAX, wrap, t.c_str()).y;
}

// `t`, cut to at most `w` pixels with ".." at the end.
std::string fit_text(ImFont* f, float size, const std::string& t, float w) {
    if (text_w(f, size, t) <= w) return t;
    std::string cut = t;
    while (!cut.empty() && text_w(f, size, cut + "..") > w) cut.pop_back();
    return cut + "..";
}

// Widths of a checkbox and a button with these labels (pixels).
float checkbox_w(const char* label) {
    return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x +
           ImGui::CalcTextSize(label, nullptr, true).x;
}
float button_w(const char* label) {
    return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

// SameLine when the next `w` pixels still fit in the window, else the next item starts a line.
void same_line_or_wrap(float w, float spacing = -1) {
    const float sp = spacing < 0 ? ImGui::GetStyle().ItemSpacing.x : spacing;
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + sp + w <= right) ImGui::SameLine(0, sp);
}

void swatch(ImDrawList* dl, ImVec2 p, float s, const charts::LegendEntry& e) {
    if (e.failed) {
        dl->AddLine(p, ImVec2(p.x + s, p.y + s * 0.7f), kFail, 2);
        dl->AddLine(ImVec2(p.x, p.y + s * 0.7f), ImVec2(p.x + s, p.y), kFail, 2);
        return;
    }
    const ImU32 c = col(e.color);
    if (e.style == charts::SeriesStyle::LinePoints) {
        const float y = p.y + s * 0.35f;
        if (e.connect) {
            if (e.dashed)
                dashed(dl, ImVec2(p.x, y), ImVec2(p.x + s, y), c, 2, 4, 3);
            else
                dl->AddLine(ImVec2(p.x, y), ImVec2(p.x + s, y), c, 2);
        }
        dl->AddCircleFilled(ImVec2(p.x + s * 0.5f, y), s * 0.25f, c);
        return;
    }
    dl->AddRectFilled(p, ImVec2(p.x + s, p.y + s * 0.7f), c);
    dl->AddRect(p, ImVec2(p.x + s, p.y + s * 0.7f), IM_COL32(0, 0, 0, 90));
}

// [SECTION] controls

void run_row(TimingsPanel& P, const TimingsStyle& st);

// The threads a run uses and whether oneDNN runs beside it: the settings of a shape-set run and
// of a lesson step's alike.
void threads_and_peer(TimingsPanel& P) {
    app::TimingsSettings& s = P.settings;
    const float fs = ImGui::GetFontSize();
    ImGui::TextUnformatted("threads");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 5);
#ifdef __EMSCRIPTEN__
    ImGui::BeginDisabled();
    ImGui::InputInt("##threads", &s.threads);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("one thread in the browser (threads need a cross-origin isolated page)");
#else
    if (ImGui::InputInt("##threads", &s.threads)) s.threads = std::clamp(s.threads, 0, 1024);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("0 = all cores");
#endif
    // The peer: none, or oneDNN on its layouts or on the engine's. Choosing one sets the weights
    // as `convlab bench` defaults them beside it.
    const app::PeerChoice& now = app::peer_choice(P.peer_available ? s.peer : "none");
    const char* shown = P.peer_available ? now.label : "no peer (oneDNN not built in)";
    const float combo_w = ImGui::CalcTextSize(app::peer_choices().back().label).x + fs * 2.5f;
    same_line_or_wrap(ImGui::CalcTextSize("peer").x + combo_w + fs * 0.5f, fs * 1.2f);
    ImGui::TextUnformatted("peer");
    ImGui::SameLine();
    ImGui::BeginDisabled(!P.peer_available);
    ImGui::SetNextItemWidth(combo_w);
    if (ImGui::BeginCombo("##peer", shown)) {
        for (const app::PeerChoice& c : app::peer_choices()) {
            if (ImGui::Selectable(c.label, &c == &now) && &c != &now) app::choose_peer(s, c);
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", c.tooltip);
        }
        ImGui::EndCombo();
    }
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("%s",
                          P.peer_available ? now.tooltip : "this convlab was built without oneDNN");
}

// A lesson step's run in place of the shape-set controls: what it measures, and the threads
// and peer it runs with.
void lesson_controls(TimingsPanel& P, const TimingsStyle& st) {
    const app::TimingsLessonRun& l = *P.lesson;
    const bool busy = P.run.running();
    const float fs = ImGui::GetFontSize();
    std::string algos;
    for (const std::string& a : l.algos) algos += (algos.empty() ? "" : ", ") + a;
    Problem layer = l.problem;
    layer.name.clear();  // the charts' label of the layer; the descriptor alone here
    const std::string what =
        "This run is " + l.source + "'s: one layer, " + to_descriptor(layer) + ", by " +
        (algos.empty() ? std::string("every algorithm") : algos) +
        " (2 warm-ups, then runs filling 0.2 s, the passes in alternating rounds; each result "
        "verified first).";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(st.good));
    if (P.compact) {
        // One line, the whole on hover; the threads, the peer and the way back to the shape set
        // are in the full-size view.
        ImFont* f = ImGui::GetFont();
        ImGui::TextUnformatted(fit_text(f, fs, what, ImGui::GetContentRegionAvail().x).c_str());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", what.c_str());
        ImGui::PopStyleColor();
        return;
    }
    ImGui::TextWrapped("%s", what.c_str());
    ImGui::PopStyleColor();
    ImGui::BeginDisabled(busy);
    ImGui::AlignTextToFramePadding();
    threads_and_peer(P);
    const char* back = "Back to the shape set";
    same_line_or_wrap(button_w(back), fs * 1.2f);
    if (ImGui::Button(back)) P.lesson.reset();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the shape-set controls again; this chart stays until the next run");
    ImGui::EndDisabled();
}

void controls(TimingsPanel& P, const TimingsStyle& st) {
    app::TimingsSettings& s = P.settings;
    const bool busy = P.run.running();
    const float fs = ImGui::GetFontSize();
    if (P.lesson) {
        lesson_controls(P, st);
        return run_row(P, st);
    }
    ImGui::BeginDisabled(busy);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Shape set");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 8);
    if (ImGui::BeginCombo("##set", P.set_name.c_str())) {
        for (const std::string& n : P.sets)
            if (ImGui::Selectable(n.c_str(), n == P.set_name)) P.choose_set(n);
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s.shapes_file.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("%s", P.set_layers >= 0
                                  ? ("(" + std::to_string(P.set_layers) + " layers)").c_str()
                                  : "(unreadable)");
    same_line_or_wrap(ImGui::CalcTextSize("batch").x + fs * 5.5f, fs * 1.2f);
    ImGui::TextUnformatted("batch");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 5);
    int batch = static_cast<int>(s.batch);
    if (ImGui::InputInt("##batch", &batch)) s.batch = std::clamp(batch, 1, 1 << 16);
    same_line_or_wrap(ImGui::CalcTextSize("threads").x + fs * 5.5f, fs * 1.2f);
    threads_and_peer(P);
    same_line_or_wrap(checkbox_w("quick timing"), fs * 1.2f);
    ImGui::Checkbox("quick timing", &s.quick);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "quick: 1 warm-up, >= 5 timed runs filling >= 10 ms per measurement\n"
            "off: 2 warm-ups, >= 3 runs filling >= 0.2 s (steadier, slower)");
    same_line_or_wrap(checkbox_w("weights packed once"), fs * 1.2f);
    ImGui::Checkbox("weights packed once", &s.weights_once);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "on: implicit_gemm's packed weights (W^T panels, FlipRot(W)) are prepared once per\n"
            "layer and pass, outside the timed calls, as oneDNN reorders its weights first\n"
            "off: packed in every call, so pack_wei and fliprot show in the operation charts\n"
            "(the default beside oneDNN-nchw, which reads its weights as given)");
    // One row per pass: the pass, then its algorithms.
    const auto pass_row = [&](Pass pass, bool& on) {
        ImGui::PushID(pass_name(pass));
        ImGui::Checkbox(pass_name(pass), &on);
        ImGui::SameLine(fs * 7.5f);
        ImGui::BeginDisabled(!on);
        const std::vector<std::string> algos = app::panel_algorithms(pass);
        for (const std::string& a : algos) {
            const std::string key = std::string(pass_name(pass)) + ":" + a;
            auto it = std::find(s.excluded.begin(), s.excluded.end(), key);
            bool sel = it == s.excluded.end();
            if (&a != &algos.front()) same_line_or_wrap(checkbox_w(a.c_str()), fs * 0.9f);
            if (ImGui::Checkbox(a.c_str(), &sel)) {
                if (sel)
                    s.excluded.erase(it);
                else
                    s.excluded.push_back(key);
            }
        }
        ImGui::EndDisabled();
        ImGui::PopID();
    };
    pass_row(Pass::Forward, s.fwd);
    pass_row(Pass::BackwardData, s.bwd_data);
    pass_row(Pass::BackwardWeight, s.bwd_weight);
    ImGui::EndDisabled();
    run_row(P, st);
}

// Run (a lesson step's: again) / Cancel and the progress of the run.
void run_row(TimingsPanel& P, const TimingsStyle& st) {
    const bool busy = P.run.running();
    const float fs = ImGui::GetFontSize();
    ImGui::BeginDisabled(busy);
    if (P.lesson) {
        if (ImGui::Button("Run again")) {
            try {
                start_lesson_timings(P, *P.lesson, false);
            } catch (const std::exception& e) {
                P.say(e.what(), true);
            }
        }
    } else if (ImGui::Button("  Run  ")) {
        P.start();
    }
    P.run_rect = ImVec4(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                        ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y);
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(!busy);
    if (ImGui::Button("Cancel")) P.run.cancel();
    ImGui::EndDisabled();
    ImGui::SameLine();
    const app::TimingsSnapshot& sn = P.snap;
    const float frac = sn.total > 0 ? static_cast<float>(sn.done) / static_cast<float>(sn.total)
                                    : (sn.finished && !sn.cancelled ? 1.0f : 0.0f);
    char overlay[64];
    std::snprintf(overlay, sizeof overlay, "%zu / %zu measurements", sn.done, sn.total);
    ImGui::ProgressBar(frac, ImVec2(fs * (P.compact ? 11 : 16), 0), sn.total > 0 ? overlay : "");
    // The outcome on a line of its own, wrapped: it names the ratios and, for a noisy run,
    // says so (cut at the window's edge, that was lost).
    if (!busy && !P.message.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text,
                              ImGui::ColorConvertU32ToFloat4(P.message_error ? st.bad : st.good));
        ImGui::TextWrapped("%s", P.message.c_str());
        ImGui::PopStyleColor();
        return;
    }
    ImGui::SameLine();
    if (busy)
        ImGui::Text("%s  (%.0f s, on a worker thread)",
                    sn.total == 0 ? "measuring the fp32 peak ..." : sn.what.c_str(), sn.seconds);
    else if (!sn.results)
        ImGui::TextDisabled("not run yet");
}

// [SECTION] the chart

// Sizes of a chart's parts in the card [a, b] (pixels), as the export lays them out.
struct ChartLayout {
    float pad = 0, title_fs = 0, sub_fs = 0, tick_fs = 0;
    float subtitle_y = 0, legend_w = 0, label_h = 0, label_w = 0;
    bool slot_labels = false;
    bool flat_labels = false;        // category labels level: each fits its slot's width
    bool one_line_subtitle = false;  // the subtitle cut to one line (a short view)
    app::PlotRect plot;
};

constexpr float kLabelAngle = -55.0f * 3.14159265f / 180.0f;

ChartLayout layout_chart(const charts::Chart& c, ImFont* f, ImVec2 a, ImVec2 b, float fs,
                         bool one_line_subtitle = false) {
    ChartLayout L;
    L.one_line_subtitle = one_line_subtitle;
    L.pad = fs * (one_line_subtitle ? 0.5f : 0.7f);
    L.title_fs = fs * (one_line_subtitle ? 1.0f : 1.15f);
    L.sub_fs = fs * 0.78f;
    L.tick_fs = fs * 0.72f;
    const float W = b.x - a.x;
    L.subtitle_y = a.y + L.pad + L.title_fs * 1.2f;
    const float top =
        L.subtitle_y +
        (one_line_subtitle ? L.sub_fs * 1.2f : text_h(f, L.sub_fs, c.subtitle, W - 2 * L.pad)) +
        fs * 0.6f;
    float tick_w = 0;
    for (const charts::Tick& t : c.y.ticks)
        tick_w = std::max(tick_w, text_w(f, L.tick_fs, t.label));
    L.legend_w = std::clamp(W * 0.24f, fs * 9, fs * 15);
    float longest = 0;
    for (const std::string& s : c.x.categories)
        longest = std::max(longest, text_w(f, L.tick_fs, s));
    L.plot.left = a.x + L.pad + fs * 1.3f + tick_w + 6;
    L.plot.right = b.x - L.pad - L.legend_w - fs;
    // Labels that fit their slots stay level (a lesson's one layer: the turned label took a
    // quarter of a small window's chart); turned ones take at most a quarter of the card's
    // height (longer ones are cut; the hover names the layer in full).
    const std::size_t slots = std::max<std::size_t>(1, c.x.categories.size());
    L.flat_labels = longest + fs <= L.plot.width() / static_cast<float>(slots);
    L.label_w =
        L.flat_labels
            ? longest
            : std::min(longest, std::max(fs * 3, 0.25f * (b.y - a.y) / std::sin(-kLabelAngle)));
    L.label_h = L.flat_labels ? L.tick_fs * 1.3f : L.label_w * std::sin(-kLabelAngle) + L.tick_fs;
    for (const auto& s : c.series)
        for (const auto& m : s.marks) L.slot_labels |= !m.label.empty();
    L.plot.top = top;
    L.plot.bottom = b.y - L.pad - fs * 1.1f - L.label_h - (L.slot_labels ? L.tick_fs * 1.1f : 0);
    return L;
}

// Room for the bars: four lines of the font high (three in a short view, where a lesson's one
// layer still reads), six wide.
bool drawable(const ChartLayout& L, float fs) {
    return L.plot.height() >= fs * (L.one_line_subtitle ? 3 : 4) && L.plot.width() >= fs * 6;
}

// Draws chart c into the card [a, b], the hovered mark outlined.
void draw_chart(const charts::Chart& c, const ChartLayout& L, ImDrawList* dl, ImFont* f, ImVec2 a,
                ImVec2 b, float fs, std::optional<std::pair<std::size_t, std::size_t>> hovered) {
    const float pad = L.pad, sub_fs = L.sub_fs, tick_fs = L.tick_fs, legend_w = L.legend_w;
    const bool slot_labels = L.slot_labels;
    const float W = b.x - a.x;
    dl->AddRectFilled(a, b, IM_COL32(255, 255, 255, 255), 4);
    dl->AddRect(a, b, IM_COL32(200, 200, 200, 255), 4);
    // Title, the verification tag, the subtitle.
    dl->AddText(f, L.title_fs, ImVec2(a.x + pad, a.y + pad), kInk, c.title.c_str());
    if (!c.verified) {
        const std::string tag = "NOT ALL MEASUREMENTS VERIFIED (see under the chart)";
        dl->AddText(f, sub_fs, ImVec2(b.x - pad - text_w(f, sub_fs, tag), a.y + pad), kFail,
                    tag.c_str());
    }
    if (L.one_line_subtitle)
        dl->AddText(f, sub_fs, ImVec2(a.x + pad, L.subtitle_y), kSoftInk,
                    fit_text(f, sub_fs, c.subtitle, W - 2 * pad).c_str());
    else
        dl->AddText(f, sub_fs, ImVec2(a.x + pad, L.subtitle_y), kSoftInk, c.subtitle.c_str(),
                    nullptr, W - 2 * pad);
    const app::PlotRect& P = L.plot;
    if (!drawable(L, fs)) {
        dl->AddText(f, fs, ImVec2(a.x + pad, P.top), kSoftInk, "(window too small for the chart)");
        return;
    }
    const app::ScreenChart S = app::map_chart(c, P);
    // Grid and y tick labels; shading of every other category.
    for (const app::ScreenTick& t : S.y_ticks) {
        dl->AddLine(ImVec2(P.left, t.pos), ImVec2(P.right, t.pos), kGrid);
        dl->AddText(f, tick_fs,
                    ImVec2(P.left - 6 - text_w(f, tick_fs, t.label), t.pos - tick_fs * 0.5f), kInk,
                    t.label.c_str());
    }
    for (float x : S.shaded)
        dl->AddRectFilled(ImVec2(x, P.top), ImVec2(x + S.slot, P.bottom), IM_COL32(0, 0, 0, 7));
    // Y axis title, turned a quarter left, centred on the plot.
    {
        const std::string title = fit_text(f, sub_fs, c.y.title, P.height());
        const float tw = text_w(f, sub_fs, title);
        const ImVec2 pivot(a.x + pad, 0.5f * (P.top + P.bottom) + 0.5f * tw);
        rotated_text(dl, f, sub_fs, pivot, kInk, title, -3.14159265f / 2, pivot);
    }
    const auto noisy = [&](const app::ScreenMark& m) {
        return m.series < c.series.size() && m.mark < c.series[m.series].marks.size() &&
               c.series[m.series].marks[m.mark].noisy;
    };
    // Marks (clipped to the plot): bars and FAIL crosses, reference lines, then points.
    dl->PushClipRect(ImVec2(P.left, P.top - 1), ImVec2(P.right + 1, P.bottom + 1), true);
    for (const app::ScreenMark& m : S.bars) {
        if (m.kind == app::ScreenMark::Kind::FailCross) {
            dl->AddLine(ImVec2(m.x0, m.y1), ImVec2(m.x1, m.y0), kFail, 2);
            dl->AddLine(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), kFail, 2);
            continue;
        }
        dl->AddRectFilled(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), col(m.color));
        dl->AddRect(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), IM_COL32(255, 255, 255, 180));
        if (noisy(m)) {
            // Hatched as in the export: measured while other processes took over 5% of the CPU,
            // or while the machine itself ran slow (Measurement::noisy).
            dl->PushClipRect(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y1), true);
            for (float x = m.x0 - (m.y1 - m.y0); x < m.x1; x += 5)
                dl->AddLine(ImVec2(x, m.y1), ImVec2(x + (m.y1 - m.y0), m.y0),
                            IM_COL32(255, 255, 255, 150));
            dl->PopClipRect();
        }
        if (m.whisker) {
            const float cx = 0.5f * (m.x0 + m.x1), cap = std::min(3.0f, 0.3f * (m.x1 - m.x0));
            const ImU32 w = IM_COL32(40, 40, 40, 200);
            dl->AddLine(ImVec2(cx, m.wy0), ImVec2(cx, m.wy1), w);
            dl->AddLine(ImVec2(cx - cap, m.wy0), ImVec2(cx + cap, m.wy0), w);
            dl->AddLine(ImVec2(cx - cap, m.wy1), ImVec2(cx + cap, m.wy1), w);
        }
    }
    for (const app::ScreenLine& r : S.refs) {
        if (r.dashed)
            dashed(dl, ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1), col(r.color), 1.6f);
        else
            dl->AddLine(ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1), col(r.color), 1.6f);
    }
    for (const app::ScreenLine& l : S.links) {
        if (l.dashed)
            dashed(dl, ImVec2(l.x0, l.y0), ImVec2(l.x1, l.y1), col(l.color), 1.6f, 4, 3);
        else
            dl->AddLine(ImVec2(l.x0, l.y0), ImVec2(l.x1, l.y1), col(l.color), 1.6f);
    }
    for (const app::ScreenMark& m : S.points) {
        const float cx = 0.5f * (m.x0 + m.x1);
        if (m.kind == app::ScreenMark::Kind::Level)
            dl->AddLine(ImVec2(m.x0, m.y0), ImVec2(m.x1, m.y0), col(m.color), 2.4f);
        dl->AddCircleFilled(ImVec2(cx, m.y0), 4.2f, col(m.color));
        dl->AddCircle(ImVec2(cx, m.y0), 4.2f, IM_COL32(255, 255, 255, 255));
        if (noisy(m)) dl->AddCircle(ImVec2(cx, m.y0), 7.5f, col(m.color), 0, 1.5f);  // ringed
    }
    // The hovered mark: outlined.
    if (hovered) {
        for (const auto* list : {&S.bars, &S.points})
            for (const app::ScreenMark& m : *list)
                if (m.series == hovered->first && m.mark == hovered->second) {
                    const float grow = m.kind == app::ScreenMark::Kind::Bar ? 1.5f : 6;
                    dl->AddRect(ImVec2(std::min(m.x0, m.x1) - grow, m.y0 - grow),
                                ImVec2(std::max(m.x0, m.x1) + grow, m.y1 + grow),
                                IM_COL32(0, 0, 0, 255), 0, 0, 2.5f);
                }
    }
    dl->PopClipRect();
    // Axes frame.
    dl->AddLine(ImVec2(P.left, P.top), ImVec2(P.left, P.bottom), IM_COL32(50, 50, 50, 255));
    dl->AddLine(ImVec2(P.left, P.bottom), ImVec2(P.right, P.bottom), IM_COL32(50, 50, 50, 255));
    // Slot labels under the bars, then the category labels turned as in the export.
    float label_top = P.bottom + 4;
    if (slot_labels) {
        const float sfs = tick_fs * 0.85f;
        for (std::size_t s = 0; s < c.series.size(); ++s)
            for (const auto& m : c.series[s].marks)
                if (!m.label.empty()) {
                    const float cx =
                        P.left + static_cast<float>(c.x.frac(0.5 * (m.x0 + m.x1))) * P.width();
                    dl->AddText(f, sfs, ImVec2(cx - 0.5f * text_w(f, sfs, m.label), label_top),
                                kSoftInk, m.label.c_str());
                }
        label_top += tick_fs * 1.1f;
    }
    for (const app::ScreenTick& t : S.categories) {
        const std::string label = fit_text(f, tick_fs, t.label, L.label_w);
        const float tw = text_w(f, tick_fs, label);
        if (L.flat_labels) {
            dl->AddText(f, tick_fs, ImVec2(t.pos - 0.5f * tw, label_top + 2), kInk, label.c_str());
            continue;
        }
        const ImVec2 pivot(t.pos + 3, label_top + 2);
        // End of the text at the pivot (right-aligned), turned up to the left.
        rotated_text(dl, f, tick_fs, ImVec2(pivot.x - tw, pivot.y), kInk, label, kLabelAngle,
                     pivot);
    }
    const float xt = text_w(f, sub_fs, c.x.title);
    dl->AddText(f, sub_fs, ImVec2(0.5f * (P.left + P.right) - 0.5f * xt, b.y - pad - sub_fs), kInk,
                c.x.title.c_str());
    // Legend: series, reference lines, then the headline figures in a box (inside the card).
    dl->PushClipRect(a, b, true);
    const float lx = b.x - pad - legend_w, lfs = fs * 0.75f, sw = lfs;
    float ly = P.top;
    const auto legend_text = [&](const std::string& t) {
        dl->AddText(f, lfs, ImVec2(lx + sw + 6, ly), kInk, t.c_str(), nullptr, legend_w - sw - 6);
        ly += text_h(f, lfs, t, legend_w - sw - 6) + lfs * 0.4f;
    };
    for (const charts::LegendEntry& e : c.legend) {
        swatch(dl, ImVec2(lx, ly + lfs * 0.2f), sw, e);
        legend_text(e.label);
    }
    for (const charts::RefLine& r : c.ref_lines) {
        const float yy = ly + lfs * 0.5f;
        if (r.dashed)
            dashed(dl, ImVec2(lx, yy), ImVec2(lx + sw, yy), col(r.color), 1.6f, 4, 2.5f);
        else
            dl->AddLine(ImVec2(lx, yy), ImVec2(lx + sw, yy), col(r.color), 1.6f);
        legend_text(r.label);
    }
    if (!c.annotations.empty()) {
        ly += lfs * 0.6f;
        std::string text;
        for (const std::string& t : c.annotations) text += (text.empty() ? "" : "\n\n") + t;
        const float afs = fs * 0.8f;
        const float h = text_h(f, afs, text, legend_w - 12) + 10;
        dl->AddRectFilled(ImVec2(lx - 4, ly), ImVec2(lx + legend_w, ly + h),
                          IM_COL32(255, 255, 230, 255));
        dl->AddRect(ImVec2(lx - 4, ly), ImVec2(lx + legend_w, ly + h), IM_COL32(153, 140, 77, 255));
        dl->AddText(f, afs, ImVec2(lx + 3, ly + 5), kInk, text.c_str(), nullptr, legend_w - 12);
    }
    dl->PopClipRect();
}

// The tooltip of a mark: its exact figures, in a box beside (x, y), kept inside the window.
void mark_tooltip(ImDrawList* dl, ImFont* f, float fs, const charts::Chart& c, std::size_t s,
                  std::size_t k, ImVec2 at, ImVec2 lo, ImVec2 hi) {
    const charts::Series& se = c.series[s];
    const charts::Mark& m = se.marks[k];
    // The series' name first, unless the mark's own text already says it.
    const std::string text =
        m.hover.find(se.name) == std::string::npos ? se.name + "\n" + m.hover : m.hover;
    const float tfs = fs * 0.8f;
    const ImVec2 sz = f->CalcTextSizeA(tfs, FLT_MAX, 0, text.c_str());
    ImVec2 p(at.x + 16, at.y - sz.y - 16);
    if (p.x + sz.x + 16 > hi.x) p.x = at.x - sz.x - 28;
    p.x = std::max(p.x, lo.x);
    p.y = std::clamp(p.y, lo.y, std::max(lo.y, hi.y - sz.y - 12));
    dl->AddRectFilled(ImVec2(p.x - 6, p.y - 5), ImVec2(p.x + sz.x + 6, p.y + sz.y + 5),
                      IM_COL32(255, 255, 245, 250), 3);
    dl->AddRect(ImVec2(p.x - 6, p.y - 5), ImVec2(p.x + sz.x + 6, p.y + sz.y + 5),
                IM_COL32(60, 60, 60, 255), 3);
    dl->AddRectFilled(ImVec2(p.x - 6, p.y - 5), ImVec2(p.x - 2, p.y + sz.y + 5),
                      m.kind == charts::MarkKind::Failed ? kFail : col(se.color));
    dl->AddText(f, tfs, p, kInk, text.c_str());
}

// Centre of a mark on screen (for a forced tooltip).
ImVec2 mark_centre(const charts::Chart& c, const app::PlotRect& P, std::size_t s, std::size_t k) {
    const app::ScreenChart S = app::map_chart(c, P);
    for (const auto* list : {&S.bars, &S.points})
        for (const app::ScreenMark& m : *list)
            if (m.series == s && m.mark == k) return ImVec2(0.5f * (m.x0 + m.x1), m.y0);
    return ImVec2(P.left, P.top);
}

// [SECTION] footer and exports

void footer(TimingsPanel& P, const charts::Chart* c, const TimingsStyle& st) {
    ImGui::PushTextWrapPos(0);
    if (c && P.snap.running)
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(st.dim_text),
                           "Run in progress: %zu of %zu measurements so far; the chart shows the "
                           "layers measured up to now.",
                           P.snap.done, P.snap.total);
    if (c) {
        for (std::size_t i = 0; i < c->footer.size(); ++i) {
            const std::string& line = c->footer[i];
            const bool status = i == 0;
            const bool reproduce = line.rfind("Reproduce:", 0) == 0;
            if (status)
                ImGui::PushStyleColor(ImGuiCol_Text, c->verified ? st.good : st.bad);
            else
                ImGui::PushStyleColor(ImGuiCol_Text, st.dim_text);
            ImGui::TextUnformatted(line.c_str());
            ImGui::PopStyleColor();
            if (reproduce) {
                ImGui::SameLine();
                if (ImGui::SmallButton("copy")) ImGui::SetClipboardText(line.substr(11).c_str());
            }
        }
    }
    ImGui::PopTextWrapPos();
    // Exports, then loading a results.json.
    const float fs = ImGui::GetFontSize();
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Export to");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 13);
    ImGui::InputText("##outdir", &P.settings.out_dir);
    same_line_or_wrap(checkbox_w("SVG"));
    ImGui::Checkbox("SVG", &P.exp.svg);
    same_line_or_wrap(checkbox_w("PNG"));
    ImGui::Checkbox("PNG", &P.exp.png);
    same_line_or_wrap(checkbox_w("PDF"));
#ifdef __EMSCRIPTEN__
    ImGui::BeginDisabled();
    ImGui::Checkbox("PDF", &P.exp.pdf);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("no PDF in the browser (cairo's): SVG and PNG are");
#else
    ImGui::Checkbox("PDF", &P.exp.pdf);
#endif
    same_line_or_wrap(checkbox_w("results.csv/json"));
    ImGui::Checkbox("results.csv/json", &P.exp.results_files);
    const bool have = P.snap.results && !P.charts.empty();
    const bool exporting = P.export_job.running();
    ImGui::BeginDisabled(!have || exporting);
    int which = 0;
    same_line_or_wrap(button_w("Export this chart"));
    if (ImGui::Button("Export this chart")) which = 1;
    P.export_rect = ImVec4(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                           ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y);
    same_line_or_wrap(button_w("Export all charts"));
    if (ImGui::Button("Export all charts")) which = 2;
    ImGui::EndDisabled();
    if (which && have && !exporting) {
        // On the export job's thread: the panel keeps drawing meanwhile.
        std::vector<charts::Chart> list;
        if (which == 1 && P.current())
            list.push_back(*P.current());
        else
            list = P.charts;
        if (P.export_job.start(P.snap.results, std::move(list), P.settings.out_dir, P.exp)) {
            P.export_dir = P.settings.out_dir;
            P.say("exporting to " + P.export_dir + " ...", false);
        }
    }
    std::vector<std::string> written;
    std::string export_error;
    if (P.export_job.take(written, export_error)) {
        if (export_error.empty()) {
            P.say("wrote " + std::to_string(written.size()) + " files to " + P.export_dir, false);
#ifdef __EMSCRIPTEN__
            for (const std::string& f : written) web::download(f);
#endif
        } else
            P.say(export_error, true);
    }
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Show a results.json");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 20);
    ImGui::InputText("##load", &P.load_path);
    ImGui::SameLine();
    ImGui::BeginDisabled(P.run.running());
    if (ImGui::Button("Load")) {
        try {
            P.show_results(app::load_results(P.load_path), P.load_path);
        } catch (const std::exception& e) {
            P.say(e.what(), true);
        }
    }
    ImGui::EndDisabled();
}

// Short tab label of a chart id: "relative_bwd_data" -> "bwd_data vs fwd".
std::string tab_label(const std::string& id) {
    if (id == "relative_bwd_data") return "bwd_data / fwd time";
    if (id.rfind("ops_", 0) == 0) return "operations " + id.substr(4);
    if (id.rfind("gflops_", 0) == 0) return "GFLOP/s " + id.substr(7);
    return id;
}

}  // namespace

// [SECTION] the view, and headless shots

void draw_timings(TimingsPanel& P, const TimingsStyle& st) {
    P.update();
    ImFont* f = st.font ? st.font : ImGui::GetFont();
    const float fs = ImGui::GetFontSize();
    // (A 1024x768 window under a lesson's narration leaves it 25 lines.)
    P.compact = ImGui::GetContentRegionAvail().y < fs * 30;
    if (!(P.compact && P.lesson)) {  // a lesson's run says what it is on its own line
        ImGui::PushStyleColor(ImGuiCol_Text, st.text);
        ImGui::SetWindowFontScale(1.15f);
        ImGui::TextUnformatted("Timings: measured time of every step, each measurement verified");
        ImGui::SetWindowFontScale(1.0f);
        ImGui::PopStyleColor();
    }
    controls(P, st);
    ImGui::Separator();
    // Tabs: one per chart. Where they do not fit (a 1024 x 768 window) they scroll, whole,
    // rather than shrink: shrunk, the three "operations ..." tabs all read "operatio...".
    const charts::Chart* c = nullptr;
    if (!P.charts.empty() && ImGui::BeginTabBar("charts", ImGuiTabBarFlags_FittingPolicyScroll)) {
        for (const charts::Chart& ch : P.charts) {
            ImGuiTabItemFlags fl = 0;
            if (P.select_tab && ch.id == P.chart_id) fl |= ImGuiTabItemFlags_SetSelected;
            if (ImGui::BeginTabItem(tab_label(ch.id).c_str(), nullptr, fl)) {
                if (!P.select_tab && P.chart_id != ch.id) {  // a click on another tab
                    P.chart_id = ch.id;
                    P.picked = true;
                }
                ImGui::EndTabItem();
            }
        }
        P.select_tab = false;
        ImGui::EndTabBar();
        c = P.current();
    }
    // The chart card, leaving room for the footer and the export rows below it. Where that
    // would leave the chart fewer than 24 lines (a 1280x720 projector), the chart keeps them
    // and the footer scrolls below it.
    const float line = ImGui::GetFrameHeightWithSpacing();
    const float min_chart = std::min(ImGui::GetContentRegionAvail().y, fs * 24);
    const bool scroll =
        P.footer_measured > 0 && ImGui::GetContentRegionAvail().y - P.footer_measured < min_chart;
    if (scroll) ImGui::BeginChild("timings_body", ImVec2(0, 0), false);
    const ImVec2 a = ImGui::GetCursorScreenPos();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    float footer_h = fs * 0.5f;  // the footer's lines as they wrap, and the copy button's slack
    if (c) {
        for (const std::string& l : c->footer)
            footer_h += ImGui::CalcTextSize(l.c_str(), nullptr, false, avail.x).y +
                        ImGui::GetStyle().ItemSpacing.y;
        footer_h += ImGui::GetFrameHeight();
        if (P.snap.running) footer_h += ImGui::GetTextLineHeightWithSpacing() * 2;
    }
    footer_h += 2 * line + fs * 0.5f;  // the export rows
    // Once drawn, the footer's measured height (of the last frame) replaces the estimate.
    if (P.footer_measured > 0 && P.footer_for == (c ? c->id : "") && !P.snap.running)
        footer_h = P.footer_measured + ImGui::GetStyle().ItemSpacing.y;
    const float h = scroll ? min_chart : std::max(fs * 8, avail.y - footer_h);
    const ImVec2 b(a.x + avail.x, a.y + h);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImGui::InvisibleButton("chart_area", ImVec2(avail.x, h));
    const bool over = ImGui::IsItemHovered();
    if (!c) {
        dl->AddRectFilled(a, b, IM_COL32(255, 255, 255, 255), 4);
        std::string t;
        if (P.run.running())
            t = "Measuring: the charts appear as soon as the first layer's measurements are in.";
        else {
            const auto peer = P.peer_spec();
            t = "No measurements yet. Press Run: the " + P.set_name +
                " shape set is timed per layer, pass, algorithm and operation" +
                (peer ? ", beside " + peer->name : std::string()) +
                ", every measurement verified against a reference before it is plotted (the "
                "classroom set is quick, ResNet-50 takes much longer). Or show a results.json "
                "written by `convlab bench` or an earlier export (below).";
        }
        dl->AddText(f, fs, ImVec2(a.x + fs, a.y + fs), kInk, t.c_str(), nullptr, avail.x - 2 * fs);
    } else {
        // Hover: the shot's forced mark, or the mark under the mouse.
        const ChartLayout L = layout_chart(*c, f, a, b, fs, P.compact);
        std::optional<std::pair<std::size_t, std::size_t>> hov;
        const ImVec2 mouse = ImGui::GetIO().MousePos;
        const bool forced = P.forced_series >= 0 &&
                            static_cast<std::size_t>(P.forced_series) < c->series.size() &&
                            P.forced_mark >= 0 &&
                            static_cast<std::size_t>(P.forced_mark) <
                                c->series[static_cast<std::size_t>(P.forced_series)].marks.size();
        if (forced)
            hov = std::make_pair(static_cast<std::size_t>(P.forced_series),
                                 static_cast<std::size_t>(P.forced_mark));
        else if (over && drawable(L, fs))
            hov = app::hit_at(*c, L.plot, mouse.x, mouse.y, 5);
        draw_chart(*c, L, dl, f, a, b, fs, hov);
        if (hov) {
            const ImVec2 at = forced ? mark_centre(*c, L.plot, hov->first, hov->second) : mouse;
            mark_tooltip(ImGui::GetForegroundDrawList(), f, fs, *c, hov->first, hov->second, at, a,
                         b);
        }
    }
    const float y0 = ImGui::GetCursorPosY();
    footer(P, c, st);
    P.footer_measured = ImGui::GetCursorPosY() - y0;
    P.footer_for = c ? c->id : "";
    if (scroll) ImGui::EndChild();
}

void prepare_timings_shot(TimingsPanel& P, const TimingsShot& o) {
    if (!o.results.empty()) {
        P.show_results(app::load_results(o.results), o.results);
    } else if (o.bench_quick) {
        if (!o.peer.empty())
            app::choose_peer(P.settings, app::peer_choice(o.peer));  // throws naming the names
        P.run.start(app::make_config(P.settings, P.peer_spec()));
        P.was_running = true;
        if (o.wait) P.run.wait();
    }
    P.update();
    if (!P.snap.error.empty()) throw Error("--bench-quick: " + P.snap.error);
    if (!o.wait) return;
    if (!o.chart.empty()) {
        bool found = false;
        std::string ids;
        for (const auto& c : P.charts) {
            found |= c.id == o.chart;
            ids += (ids.empty() ? "" : ", ") + c.id;
        }
        if (!found)
            throw Error("--chart '" + o.chart + "': not a chart of these results (" +
                        (ids.empty() ? std::string("none: no results; give --results FILE or "
                                                   "--bench-quick")
                                     : ids) +
                        ")");
        P.chart_id = o.chart;
        P.select_tab = true;
        P.picked = true;
    }
    if (o.hover_series >= 0) {
        const charts::Chart* c = P.current();
        if (!c || static_cast<std::size_t>(o.hover_series) >= c->series.size() ||
            o.hover_mark < 0 ||
            static_cast<std::size_t>(o.hover_mark) >=
                c->series[static_cast<std::size_t>(o.hover_series)].marks.size())
            throw Error("--hover: the chart " + (c ? c->id : std::string("(none)")) +
                        " has no mark " + std::to_string(o.hover_series) + ":" +
                        std::to_string(o.hover_mark) + " (SERIES:MARK, from 0)");
        P.forced_series = o.hover_series;
        P.forced_mark = o.hover_mark;
    }
}

void show_results_file(TimingsPanel& P, const std::string& path) {
    if (P.run.running()) {
        P.say("a run is in progress: " + path + " not shown (cancel the run first)", true);
        return;
    }
    P.load_path = path;
    try {
        P.show_results(app::load_results(path), path);
    } catch (const std::exception& e) {
        P.say(e.what(), true);
    }
}

}  // namespace convlab::ui

#ifdef __EMSCRIPTEN__
// The timings view's state as JSON, for the browser tests (Module.ccall): the run's progress, how
// many measurements passed their check against the reference, the machine record's line, the
// panel's message, and where its Run and "Export this chart" buttons were drawn (CSS pixels).
// "{}" before the view was first made.
extern "C" EMSCRIPTEN_KEEPALIVE const char* convlab_timings_state() {
    static std::string out;
    const auto P = convlab::ui::current_timings_panel();
    if (!P) return "{}";
    const float r = convlab::ui::web::device_pixel_ratio();
    auto rect = [r](const ImVec4& v) { return nlohmann::json{v.x / r, v.y / r, v.z / r, v.w / r}; };
    const convlab::app::TimingsSnapshot& s = P->snap;
    nlohmann::json j{{"running", s.running},
                     {"finished", s.finished},
                     {"done", s.done},
                     {"total", s.total},
                     {"error", s.error},
                     {"message", P->message},
                     {"chart", P->chart_id},
                     {"charts", P->charts.size()},
                     {"run_button", rect(P->run_rect)},
                     {"export_button", rect(P->export_rect)}};
    if (s.results) {
        j["rows"] = s.results->rows.size();
        j["verified"] = s.results->passed();
        j["failed"] = s.results->failed();
        j["machine"] = s.results->machine.summary();
    }
    out = j.dump();
    return out.c_str();
}
#endif
