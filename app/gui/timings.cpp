// The Timings view (gui/timings.hpp). The chart card is gui/timings_chart.cpp's. Index:
//   [SECTION] the panel's state
//   [SECTION] widget sizes
//   [SECTION] controls: shape set, passes, algorithms, batch, threads, peer, Run / Cancel
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
#include "charts/chart_paint.hpp"
#include "convlab/conv.hpp"
#include "data/data_dir.hpp"
#include "gui/timings_chart.hpp"
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
    // y1), whether that button took clicks, and the frames the view has drawn, for the browser
    // tests, which click the buttons once they stay put from one frame to the next
    // (convlab_timings_state): the chart's height comes from the footer's of the frame before,
    // so a change of the footer moves the buttons on the next frame.
    ImVec4 run_rect{}, export_rect{};
    // The footer's "copy" button, its Reproduce line and the area the view was clipped to there:
    // the tests check that the button is in view and covers no text.
    ImVec4 copy_rect{}, reproduce_rect{}, footer_clip{};
    bool export_enabled = false;
    std::uint64_t frames = 0;

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

using namespace chart_draw;

namespace {

// [SECTION] widget sizes

// Widths of a checkbox and a button with these labels (pixels).
float checkbox_w(const char* label) {
    return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x +
           ImGui::CalcTextSize(label, nullptr, true).x;
}
float button_w(const char* label) {
    return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

// The last item's rectangle (pixels: x0, y0, x1, y1).
ImVec4 item_rect() {
    return ImVec4(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y, ImGui::GetItemRectMax().x,
                  ImGui::GetItemRectMax().y);
}

// Puts text on the clipboard: the system's through the page in the browser (whose GLFW keeps a
// clipboard of its own that no other program sees).
void copy_text(const std::string& text) {
#ifdef __EMSCRIPTEN__
    web::copy_text(text);
#else
    ImGui::SetClipboardText(text.c_str());
#endif
}

// SameLine when the next `w` pixels still fit in the window, else the next item starts a line.
void same_line_or_wrap(float w, float spacing = -1) {
    const float sp = spacing < 0 ? ImGui::GetStyle().ItemSpacing.x : spacing;
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + sp + w <= right) ImGui::SameLine(0, sp);
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
            if (reproduce) {
                // The button before the command, which wraps in the width right of it: after it,
                // a command as wide as the view put the button past the view's edge, under the
                // scrollbar.
                if (ImGui::SmallButton("copy")) copy_text(line.substr(11));
                if (ImGui::IsItemHovered()) ImGui::SetTooltip("copy the command");
                P.copy_rect = item_rect();
                ImGui::SameLine();
            }
            if (status)
                ImGui::PushStyleColor(ImGuiCol_Text, c->verified ? st.good : st.bad);
            else
                ImGui::PushStyleColor(ImGuiCol_Text, st.dim_text);
            ImGui::TextUnformatted(line.c_str());
            ImGui::PopStyleColor();
            if (reproduce) {
                P.reproduce_rect = item_rect();
                const ImDrawList* dl = ImGui::GetWindowDrawList();
                P.footer_clip = ImVec4(dl->GetClipRectMin().x, dl->GetClipRectMin().y,
                                       dl->GetClipRectMax().x, dl->GetClipRectMax().y);
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
    P.export_enabled = have && !exporting && ImGui::IsItemVisible();
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
    ++P.frames;
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
        // The Reproduce line wraps right of its copy button.
        const float copy_w = button_w("copy") + ImGui::GetStyle().ItemSpacing.x;
        for (const std::string& l : c->footer)
            footer_h +=
                ImGui::CalcTextSize(l.c_str(), nullptr, false,
                                    l.rfind("Reproduce:", 0) == 0 ? avail.x - copy_w : avail.x)
                    .y +
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
        // The chart's primitives (charts/chart_paint.hpp), measured with the window's font.
        charts::ChartPaint cp = charts::screen_paint(a.x, a.y, b.x, b.y, fs, P.compact);
        cp.text_width = [f](const std::string& s, float size, bool) {
            return f->CalcTextSizeA(size, FLT_MAX, 0, s.c_str()).x;
        };
        std::vector<app::DrawPrim> prims;
        const charts::PaintedChart pc = charts::paint_chart(*c, cp, prims);
        const app::PlotRect plot{pc.plot.left, pc.plot.top, pc.plot.right, pc.plot.bottom};
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
        else if (over && pc.drawable)
            hov = app::hit_at(*c, plot, mouse.x, mouse.y, 5);
        if (hov && pc.drawable) {  // painted again with the hovered mark outlined
            cp.hovered = hov;
            prims.clear();
            charts::paint_chart(*c, cp, prims);
        }
        dl->PushClipRect(a, b, true);
        replay(dl, f, prims);
        dl->PopClipRect();
        if (hov) {
            const ImVec2 at = forced ? mark_centre(*c, plot, hov->first, hov->second) : mouse;
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
        P.show_results(app::load_results(o.results),
                       o.results_name.empty() ? o.results : o.results_name);
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
// panel's message, where its Run and "Export this chart" buttons were drawn (CSS pixels) and
// whether the latter is enabled and in view, the footer's copy button, its Reproduce line and the
// area they were clipped to, the frames the view has drawn, the measurements
// timed 0 or in batches, and the shown chart's marks (plotted, FAIL) and footer.
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
                     {"export_button", rect(P->export_rect)},
                     {"export_enabled", P->export_enabled},
                     {"copy_button", rect(P->copy_rect)},
                     {"reproduce_text", rect(P->reproduce_rect)},
                     {"footer_clip", rect(P->footer_clip)},
                     {"exporting", P->export_job.running()},
                     {"frame", P->frames}};
    if (s.results) {
        j["rows"] = s.results->rows.size();
        j["verified"] = s.results->passed();
        j["failed"] = s.results->failed();
        j["machine"] = s.results->machine.summary();
        j["clock_tick"] = s.results->machine.clock_tick;
        // Verified measurements whose median is 0 (no bar can show them), and those timed as
        // batches of calls (Stats::calls) with the largest batch.
        std::size_t batched = 0;
        int most = 1;
        nlohmann::json zero = nlohmann::json::array();
        for (const convlab::bench::Measurement& m : s.results->rows) {
            if (m.valid() && !(m.total.median_ms > 0))
                zero.push_back(s.results->layers.at(m.layer).name + " " +
                               convlab::pass_name(m.pass) + " " + m.algorithm + ": " +
                               std::to_string(m.total.runs) + " runs of " +
                               std::to_string(m.total.calls) + " calls");
            batched += m.total.calls > 1 ? 1 : 0;
            most = std::max(most, m.total.calls);
        }
        j["zero_times"] = zero;
        j["batched"] = batched;
        j["most_calls"] = most;
    }
    if (const convlab::charts::Chart* c = P->current()) {
        j["plotted_marks"] = c->plotted;
        j["failed_marks"] = c->failed;
        j["footer"] = c->footer;
    }
    out = j.dump();
    return out.c_str();
}
#endif
