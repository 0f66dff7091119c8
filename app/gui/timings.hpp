// The Timings view of the desktop app: controls of a benchmark run (shape set, passes,
// algorithms, batch, threads, peer), Run / Cancel with a progress bar (the runner on a worker
// thread, timings_state.hpp), the standard charts drawn with ImGui draw lists from the chart
// model as results arrive, hover tooltips with exact figures, the footer (verification, machine,
// reproduce command) and exports. gui.cpp owns one panel and calls draw_timings for the view.
#pragma once

#include <memory>
#include <string>

#include "imgui.h"
#include "model/timings_state.hpp"

namespace convlab::ui {

struct TimingsPanel;  // opaque: gui_timings.cpp
std::shared_ptr<TimingsPanel> make_timings_panel();

struct TimingsStyle {
    ImFont* font = nullptr;
    ImU32 text = IM_COL32(20, 20, 20, 255);
    ImU32 dim_text = IM_COL32(90, 90, 90, 255);
    ImU32 good = IM_COL32(0, 130, 60, 255);
    ImU32 bad = IM_COL32(200, 0, 0, 255);
};

// Draws the view into the current ImGui window's remaining region.
void draw_timings(TimingsPanel& p, const TimingsStyle& st);
// A run is under way (the window loop keeps drawing frames to show its progress).
bool timings_busy(const TimingsPanel& p);

// A lesson step's live measurement (the lesson player, gui_lesson.cpp; the configuration is
// app::lesson_config), with the panel's peer and threads. Cancels a run under way and starts this
// one on the worker thread; the charts fill in as results arrive, showing run.chart once it is
// one of them. wait: block until it ends (shots). Throws Error naming what is wrong.
void start_lesson_timings(TimingsPanel& p, const app::TimingsLessonRun& run, bool wait);
// The panel's status line: how the last run ended (run_summary: verified, ratios, noisy), or
// the last action's outcome; "" when there is none.
std::string timings_status(const TimingsPanel& p);
// Asks the run under way to stop after its current measurement (never blocks).
void cancel_timings(TimingsPanel& p);
// The panel of the app's window (the most recently made one that is still alive; null when
// none): the lesson player starts its runs there, so that the Timings view shows them.
std::shared_ptr<TimingsPanel> current_timings_panel();

// Headless shots of the view (convlab shot --view timings, the demo).
struct TimingsShot {
    std::string results;       // a results.json to show ("" none)
    bool bench_quick = false;  // else: run the quick benchmark (classroom set) first
    bool wait = true;          // for it to end (false: frames are drawn while it runs)
    std::string chart;         // chart id to show ("" the first: relative_bwd_data when measured)
    int hover_series = -1;     // show the tooltip of this mark of the chart (-1 none)
    long long hover_mark = -1;
    std::string peer;  // the peer of the quick run, by its --peer name ("" the panel's)
    // The name the panel gives `results` ("" the path itself): the file's final path where it is
    // read from a temporary that is renamed into place afterwards.
    std::string results_name;
};
// Loads / measures, selects the chart and the hover. Throws Error naming the option at fault.
void prepare_timings_shot(TimingsPanel& p, const TimingsShot& o);
// Shows a results.json (a file dropped on the window); a file that does not read is said on the
// panel's status line.
void show_results_file(TimingsPanel& p, const std::string& path);

}  // namespace convlab::ui
