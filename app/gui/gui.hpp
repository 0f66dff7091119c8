// The desktop app: Dear ImGui drawing over the state of model.hpp, the GLFW window loop,
// headless screenshots and exports. Only this part of ConvLab includes imgui or GLFW.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "convlab/index_map.hpp"
#include "export/view_drawing.hpp"
#include "model/model.hpp"

namespace convlab::ui {

// A line of a panel's title as drawn (export/view_drawing.hpp's paint_title): the panel's index
// and the line's text primitive, placed from the panel's top-left cell corner.
struct TitleLine {
    std::size_t panel = 0;
    app::DrawPrim prim;
};

struct GuiOptions {
    std::string view = "im2col";
    std::string problem = "mb1ic2ih3oc2kh2";  // 2x3x3 input, 2 filters of 2x2x2
    bool presenter = false;
    bool follow = false;          // the canvas follows the step (AppState::follow)
    std::string lesson;           // a lesson file to open ("" none)
    std::size_t lesson_step = 0;  // its step, from 0
    // Nothing named on the command line: reopen the last lesson and step of the settings file
    // (ui/settings.hpp) instead of `lesson`.
    bool restore_last = false;
    dim_t step = 0;  // without a lesson: the view's first step
    Granularity granularity = Granularity::Line;
    // Called with the app's link (link.hpp) whenever it changes: the browser puts it in the URL.
    std::function<void(const std::string&)> on_link;
};

// True when GLFW can open the display (DISPLAY set and reachable).
bool display_available();

// Opens the window and runs until it is closed. Throws Error when no window can be opened or
// the options are bad.
void run_gui(const GuiOptions& o);

struct ShotOptions {
    std::string view = "im2col";
    std::string problem = "mb1ic2ih3oc2kh2";
    dim_t step = 0;
    int width = 1600, height = 1000;
    // A box over the window's top right corner that the header's text keeps clear of (the
    // browser page's "copy link" bar); 0 x 0: none.
    int corner_w = 0, corner_h = 0;
    Granularity granularity = Granularity::Line;
    app::DataKind data = app::DataKind::Integer;
    dim_t c0 = 16;
    int palette = 0;
    bool presenter = false;
    bool follow = false;  // the canvas follows the step (AppState::follow)
    float zoom = 0;   // cells of this many pixels, the view's left edge at the canvas's (0: fit)
    std::string out;  // PNG path ("" with frames > 0: no picture)
    std::string svg;  // also the view as SVG ("" : none)
    // Also steps [seq_from, seq_to] as DIR/VIEW_NNNN.png ("" : none).
    std::string sequence_dir;
    dim_t seq_from = 0, seq_to = -1;
    // Or the same steps as one looping GIF ("" : none), at this many steps a second.
    std::string gif;
    double gif_fps = 2;
    int frames = 0;  // > 0: render this many frames (playing) and report frame times
    // Hover (panel, cell) to show the linking in the picture; -1: none.
    int hover_panel = -1;
    dim_t hover_cell = -1;
    // The timings view: a results.json to show, or run the quick benchmark first (synchronously);
    // the chart id shown. There --hover is SERIES:MARK of that chart (its tooltip).
    std::string results;
    std::string results_name;  // what the panel calls `results` ("" its path)
    bool bench_quick = false;
    std::string chart;
    std::string peer;  // the quick run's peer (--peer; "" the panel's default)
    // A lesson step as the player shows it (view, problem, granularity, range, narration): the
    // view options above are then the step's.
    std::string lesson;
    std::size_t lesson_step = 0;  // from 0
    bool reveal = false;          // the step's hidden cells revealed (as after key R)
    bool canvas_image = false;    // also the canvas alone in FrameReport::image
    // out, gif and sequence_dir of the canvas alone, as the app's own exports write them (no
    // sidebar, header, narration, tooltip or hover); false: the whole window.
    bool canvas_only = false;
    // Keys pressed before the picture, as a script (check_key_script); "" none.
    std::string keys;
    // The presenter window open (key W), its picture written here ("" : closed).
    std::string notes_out;
};

// A key script for ShotOptions::keys: words separated by spaces, each a key pressed and released
// ("Right", "PgDn", "Enter", "Escape", "Space", "Home", "End", "Tab", a letter or a digit, which
// also types its character), "focus:kernel" or "focus:descriptor" (that sidebar field takes the
// keyboard, as a click in it), or "notes:" before a key (pressed in the presenter window, once it
// is open). The keys between two focus words arrive at once, between two frames, as from a fast
// typist or a presenter remote. Throws Error naming a word it does not know.
void check_key_script(const std::string& keys);

struct FrameReport {
    int frames = 0;
    double median_ms = 0, max_ms = 0;              // a new step every frame
    double still_median_ms = 0, still_max_ms = 0;  // no step change
    double build_ms = 0;                           // building the view (worker thread)
    // The same in CPU time of the whole process (every thread, the software rasterizer's
    // too): on a machine shared with other work the wall-clock figures above include the
    // time spent waiting for a core, these do not.
    double cpu_median_ms = 0, still_cpu_median_ms = 0, build_cpu_ms = 0;
    // The first frame of the built view (its fit, every texture made), wall clock and CPU.
    double first_frame_ms = 0, first_frame_cpu_ms = 0;
    // Where the view's panels and titles end against the canvas, in pixels, at the last frame
    // (fitted: nothing cut off at the right or the bottom).
    float canvas_w = 0, canvas_h = 0, drawn_w = 0, drawn_h = 0;
    float cell_px = 0;  // a cell's side at the view's zoom
    // The readability rule (app::kReadableTextPx): the cells that must be read (the step's
    // current cells and the lesson's highlights; every cell where the step has neither), how
    // many of them show their value inside the canvas with digits of at least that size, and
    // the digits' size. followed: the canvas follows the step (asked, or a lesson step whose
    // fit was unreadable).
    long long must_read = 0, readable = 0;
    float text_px = 0;
    bool followed = false;
    bool readable_ok() const { return readable == must_read; }
    // ShotOptions::canvas_image: the canvas as drawn (no sidebar, header or narration panel),
    // RGBA rows, top row first.
    int image_w = 0, image_h = 0;
    std::vector<unsigned char> image;
    std::string timings_status;        // the Timings panel's status line, for a timings view
    float canvas_x = 0, canvas_y = 0;  // the canvas's top left corner in the window
    // After a key script: "view V, problem DESC, step K" (", lesson step N of M", ", presenter
    // window open") as the app is left.
    std::string state;
    // The panels' drawing primitives (export/view_drawing.hpp) the canvas replayed in the last
    // frame, and those the SVG (ShotOptions::svg) replayed: one list, so they agree where both
    // show every cell whole.
    app::PrimCounts canvas_prims, svg_prims;
    // The panels' title lines the canvas drew in the last frame, and those of the SVG: one
    // painter (export/view_drawing.hpp), so they agree where the canvas's cells are the SVG's
    // 36 px (ShotOptions::zoom) and its canvas wide enough for the view.
    std::vector<TitleLine> canvas_titles, svg_titles;
    bool fits() const { return drawn_w <= canvas_w + 0.5f && drawn_h <= canvas_h + 0.5f; }
};

// Renders what the window shows for these options into a PNG (written atomically: nothing is
// left at `out` on failure) and/or measures frame times. Needs a display (see
// display_available). Throws Error.
FrameReport shot(const ShotOptions& o);
// Several shots in one window (the demo): one PNG per entry ("" out: only the report).
std::vector<FrameReport> shots(const std::vector<ShotOptions>& list);

// The process's own argv, kept by main() so that a headless command can re-run itself under
// xvfb-run.
void set_program_args(int argc, char** argv);
// Re-runs the current process's command line under `xvfb-run -a -s "-screen 0 1920x1200x24"`
// and returns its exit status. Throws Error (status 2) saying why when that is impossible
// (xvfb-run missing, already under it, program args unknown).
int rerun_under_xvfb();
// Ends a command: in the process that rerun_under_xvfb started (CONVLAB_XVFB_STATUS names a file
// in its environment), writes `status` to that file, so that the parent ends with the program's
// own status and not with xvfb-run's (xvfb-run exits 5, whatever the program did, when it cannot
// remove its temporary directory). Returns status.
int report_status(int status);
// First thing in main: in the process that rerun_under_xvfb started, takes back the stderr of
// the command that was run (xvfb-run's own stderr goes to a file its parent shows only when the
// program did not report its status).
void adopt_stderr();

// Throws Error ("cannot write PATH: why") when `path` clearly cannot be written.
void check_writable(const std::string& path);
// PNG of RGBA8 rows, top row first; atomic (temporary file, then rename). Throws Error.
void write_png(const std::string& path, int w, int h, const std::vector<unsigned char>& rgba);

}  // namespace convlab::ui
