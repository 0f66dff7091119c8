// The desktop app (gui.hpp). Index:
//   [SECTION] palettes and colours
//   [SECTION] the App: state, worker thread, textures
//   [SECTION] keyboard
//   [SECTION] sidebar: view, parameters, playback, display, export
//   [SECTION] canvas: panels, cells, hover, zoom and pan
//   [SECTION] exports: PNG, SVG, PNG sequence
//   [SECTION] window: GLFW + ImGui setup, the frame loop, shots, xvfb-run
#include "ui/gui.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include "imgui.h"
#include "imgui_impl_glfw.h"
#include "imgui_impl_opengl3.h"
#include "imgui_stdlib.h"
#include "stb_image_write.h"

#include "convlab/output_file.hpp"
#include "convlab/problem.hpp"
#include "data/data_dir.hpp"
#include "lesson/lesson.hpp"
#include "ui/gif_writer.hpp"
#include "ui/gui_input.hpp"
#include "ui/gui_lesson.hpp"
#include "ui/gui_presenter.hpp"
#include "ui/gui_timings.hpp"
#include "ui/link.hpp"
#include "ui/settings.hpp"
#include "ui/theme.hpp"
#ifdef __EMSCRIPTEN__
#include "web/web_glue.hpp"
#endif

namespace convlab::ui {

namespace fs = std::filesystem;
using app::CellPos;
using app::Panel;
using app::ViewModel;

// [SECTION] palettes and colours

namespace {

// A file the user asked for: in the browser, where it was written into the page's memory file
// system, it is also handed to the user as a download.
void offer_download([[maybe_unused]] const std::string& path) {
#ifdef __EMSCRIPTEN__
    web::download(path);
#endif
}

struct Palette {
    const char* name;
    ImU32 background, panel_text, dim_text, cell, pending, padding, positive, negative, current,
        linked, hovered, grid, value_text, good, bad;
};

// Okabe-Ito colours (orange E69F00, sky blue 56B4E9, bluish green 009E73, vermillion D55E00,
// blue 0072B2) for the colour-blind-safe palette; the default uses them too on a light ground.
const Palette kBuiltinPalettes[] = {
    {"light (default)", IM_COL32(246, 246, 242, 255), IM_COL32(20, 20, 20, 255),
     IM_COL32(90, 90, 90, 255), IM_COL32(255, 255, 255, 255), IM_COL32(226, 226, 226, 255),
     IM_COL32(200, 200, 200, 255), IM_COL32(214, 96, 77, 255), IM_COL32(67, 147, 195, 255),
     IM_COL32(230, 159, 0, 255), IM_COL32(86, 180, 233, 255), IM_COL32(0, 114, 178, 255),
     IM_COL32(150, 150, 150, 255), IM_COL32(10, 10, 10, 255), IM_COL32(0, 130, 60, 255),
     IM_COL32(200, 0, 0, 255)},
    {"high contrast (projector)", IM_COL32(0, 0, 0, 255), IM_COL32(255, 255, 255, 255),
     IM_COL32(220, 220, 220, 255), IM_COL32(30, 30, 30, 255), IM_COL32(70, 70, 70, 255),
     IM_COL32(110, 110, 110, 255), IM_COL32(255, 90, 60, 255), IM_COL32(60, 160, 255, 255),
     IM_COL32(255, 220, 0, 255), IM_COL32(0, 230, 255, 255), IM_COL32(255, 0, 255, 255),
     IM_COL32(160, 160, 160, 255), IM_COL32(255, 255, 255, 255), IM_COL32(0, 255, 120, 255),
     IM_COL32(255, 60, 60, 255)},
    {"colour-blind safe", IM_COL32(250, 250, 250, 255), IM_COL32(0, 0, 0, 255),
     IM_COL32(80, 80, 80, 255), IM_COL32(255, 255, 255, 255), IM_COL32(222, 222, 222, 255),
     IM_COL32(190, 190, 190, 255), IM_COL32(213, 94, 0, 255), IM_COL32(0, 114, 178, 255),
     IM_COL32(230, 159, 0, 255), IM_COL32(86, 180, 233, 255), IM_COL32(0, 158, 115, 255),
     IM_COL32(140, 140, 140, 255), IM_COL32(0, 0, 0, 255), IM_COL32(0, 158, 115, 255),
     IM_COL32(213, 94, 0, 255)},
};
constexpr int kNumPalettes = 3;
const char* const kPaletteKeys[kNumPalettes] = {"default", "high-contrast", "colorblind"};

// Theme files assets/themes/KEY.theme override the built-in palettes (format: ui/theme.hpp). A
// missing file keeps the built-in palette; a bad line keeps that colour and is reported on
// standard error with its file and line (the app never fails over a theme).
std::vector<Palette> load_palettes() {
    std::vector<Palette> out(std::begin(kBuiltinPalettes), std::end(kBuiltinPalettes));
    // Keeps theme names alive for Palette::name: a deque never moves its strings (a vector's
    // growth left earlier names dangling).
    static std::deque<std::string> names;
    // The current directory's assets/themes first (a teacher's own themes), then the data
    // folder's; without either the built-in palettes stand.
    std::vector<std::string> dirs{"assets/themes"};
    try {
        dirs.push_back(data::themes_dir());
    } catch (const Error&) {
    }
    for (int i = 0; i < kNumPalettes; ++i) {
        // A theme is a few dozen lines: anything but a regular file of at most 64 KiB is passed
        // over like a missing one (a FIFO would block the app, /dev/zero fill it).
        std::string text, file;
        for (const std::string& dir : dirs) {
            try {
                file = dir + "/" + kPaletteKeys[i] + ".theme";
                text = read_input_file(file, kThemeFileMax, "a theme file");
                break;
            } catch (const Error&) {
                file.clear();
            }
        }
        if (file.empty()) continue;
        const Theme theme = parse_theme(text, file);
        constexpr std::size_t kShownErrors = 5;  // a garbled file must not flood the terminal
        for (std::size_t e = 0; e < theme.errors.size() && e < kShownErrors; ++e)
            std::fprintf(stderr, "convlab: %s (the built-in colour stays)\n",
                         theme.errors[e].c_str());
        if (theme.errors.size() > kShownErrors)
            std::fprintf(stderr, "convlab: %s: %zu more bad lines\n", file.c_str(),
                         theme.errors.size() - kShownErrors);
        Palette& p = out[static_cast<std::size_t>(i)];
        if (theme.name) {
            names.push_back(*theme.name);
            p.name = names.back().c_str();
        }
        ImU32* const fields[kThemeFields.size()] = {
            &p.background, &p.panel_text, &p.dim_text,   &p.cell,    &p.pending,
            &p.padding,    &p.positive,   &p.negative,   &p.current, &p.linked,
            &p.hovered,    &p.grid,       &p.value_text, &p.good,    &p.bad};
        for (std::size_t k = 0; k < kThemeFields.size(); ++k)
            if (const auto& c = theme.colour[k]) *fields[k] = IM_COL32(c->r, c->g, c->b, 255);
    }
    return out;
}

const std::vector<Palette>& palettes() {
    static const std::vector<Palette> p = load_palettes();
    return p;
}

ImU32 mix(ImU32 a, ImU32 b, float t) {
    const ImVec4 x = ImGui::ColorConvertU32ToFloat4(a), y = ImGui::ColorConvertU32ToFloat4(b);
    return ImGui::ColorConvertFloat4ToU32(
        ImVec4(x.x + (y.x - x.x) * t, x.y + (y.y - x.y) * t, x.z + (y.z - x.z) * t, 1.0f));
}

float luminance(ImU32 c) {
    const ImVec4 v = ImGui::ColorConvertU32ToFloat4(c);
    return 0.2126f * v.x + 0.7152f * v.y + 0.0722f * v.z;
}

// t as drawn in `width` pixels at font size `size`: whole, or cut with "..." where it is wider.
std::string cut_to_width(const ImFont* font, float size, const std::string& t, float width) {
    const auto w = [&](const char* x) { return font->CalcTextSizeA(size, FLT_MAX, 0.0f, x).x; };
    if (w(t.c_str()) <= width) return t;
    const char* end = t.c_str();  // where the characters that fit before "..." end
    font->CalcTextSizeA(size, std::max(0.0f, width - w("...")), 0.0f, t.c_str(), nullptr, &end);
    return std::string(t.c_str(), end) + "...";
}

// [SECTION] the App

struct Job {
    std::thread thread;
    std::atomic<float> progress{0};
    std::atomic<bool> done{false};
    app::ViewRequest request;
    std::shared_ptr<ViewModel> result;
    std::string error;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Outline colours of a panel's cell groups (the stride phases of dX), in every palette: hues
// apart from the value colours (red, blue), the current step (orange), the linked and hovered
// cells (sky blue, blue) and a lesson's highlights (magenta), dark enough on a light ground and
// light enough on a dark one.
constexpr ImU32 kGroupColours[app::kMaxPhases] = {
    IM_COL32(0, 158, 115, 255), IM_COL32(170, 90, 40, 255), IM_COL32(130, 110, 220, 255),
    IM_COL32(150, 140, 0, 255), IM_COL32(0, 130, 150, 255), IM_COL32(120, 120, 120, 255),
    IM_COL32(90, 170, 60, 255), IM_COL32(140, 20, 40, 255), IM_COL32(180, 140, 0, 255)};
ImU32 group_colour(std::uint8_t g) {
    return kGroupColours[g % app::kMaxPhases];
}
// A group outline's thickness in a cell of z px: inside the cell, clear of most of its digits.
float group_outline_px(float z) {
    return std::max(2.5f, z * 0.1f);
}

struct PanelTexture {
    GLuint id = 0;
    int w = 0, h = 0;
    dim_t per_row = 0;                 // the panel's tiles_per_row the texels were placed for
    std::vector<std::uint32_t> texel;  // texel index of every element
    // Level 0 (a texel per cell, transparent gaps) and its box-filtered halvings, as uploaded.
    std::vector<std::vector<std::uint32_t>> levels;
    std::vector<std::pair<int, int>> level_size;
    bool uploaded = false;       // every level has its storage (glTexImage2D done)
    bool dirty = true;           // every cell to be redrawn
    std::vector<dim_t> changed;  // else only these cells (a step's change)
};

struct Export {
    std::string png, svg;  // pending single exports
    bool sequence = false;
    dim_t seq_next = 0, seq_end = 0;
    std::string dir = "out/export";
    std::vector<std::string> written;
    std::string gif;  // the sequence as this one GIF instead ("" : numbered PNGs)
    double gif_fps = 2;
    std::unique_ptr<GifWriter> gif_out;  // open while the GIF is written
    // The canvas alone (no sidebar, header or narration) read into memory: a lesson handout.
    bool canvas_grab = false;
    int grab_w = 0, grab_h = 0;
    std::vector<unsigned char> grab;  // RGBA rows, top first
    // The app's exports are of the canvas alone (no sidebar, header, narration, tooltips or
    // hover), read back from a frame drawn without the mouse; a shot's are of the whole window.
    bool window = false;
};

// Files dropped on the window since the last frame (GLFW's drop callback): App::open_dropped.
std::vector<std::string> g_dropped;
void drop_callback(GLFWwindow*, int count, const char** paths) {
    for (int i = 0; i < count && g_dropped.size() < 64; ++i) g_dropped.emplace_back(paths[i]);
}

class App {
  public:
    app::AppState s;
    std::shared_ptr<ViewModel> view;
    app::StepState st;
    bool step_dirty = true;
    std::vector<std::vector<std::uint8_t>> linked_mask;
    app::Selection linked_for{-2, -2};
    Problem edit;
    std::unique_ptr<Job> job;
    std::optional<app::ViewRequest> queued;
    std::vector<PanelTexture> tex;
    std::vector<float> vmax;
    GLFWwindow* window = nullptr;
    ImFont* font = nullptr;
    bool fullscreen = false;
    bool show_sidebar = true;
    int styled_palette = -1;  // the palette ImGui's widget colours were last chosen for
    bool show_help = false;
    std::string status;
    // The monitor's content scale at start (glfwGetWindowContentScale, 1 on a standard screen,
    // 2 on most high-DPI laptops): the font is drawn at 18 px times it, and the sidebar's widths
    // grow with it.
    float content_scale = 1.0f;
    void open_dropped();
    // The settings file (ui/settings.hpp): applied at start, kept when the window closes.
    void apply_settings(const Settings& set);
    Settings current_settings() const;
    Export ex;
    int saved_x = 100, saved_y = 100, saved_w = 1600, saved_h = 1000;
    dim_t seq_from = 0, seq_to = 0;  // the step range of a PNG sequence export
    bool seq_to_last = true;         // "to" follows the view's last step until edited
    // Fit to the canvas: while nobody zooms or pans, the fit is redone when the canvas or the
    // font changes size (presenter mode, full screen, a lesson's narration panel).
    bool fit_auto = true;
    ImVec2 fit_size{0, 0};
    float fit_fs = 0;
    float fit_zoom = 0;  // the fit's cell size (pixels), which following the step zooms in from
    bool compact_titles = false;  // titles of one line (name, title): chosen by the fit
    // The canvas the fit arranged the view for, when that beat the view as built (a view rebuilt
    // with the same shape, e.g. other data or the next step, is arranged for it again).
    std::optional<app::CanvasGuess> arranged_for;
    // A window under 900 pixels high (a 1280x720 or 1366x768 projector): the header drops the
    // hover hint while nothing is hovered and the presenter's key line (H shows the keys), and a
    // lesson's narration takes at most 30% of the height (it scrolls), so that the view keeps
    // room for its cells.
    static bool short_window() { return ImGui::GetIO().DisplaySize.y < 900.0f; }
    // The canvas and the extent of what was drawn on it (panels and titles), last frame.
    ImVec2 canvas_size{0, 0}, drawn_size{0, 0};
    // The canvas's rectangle in the window (any view, timings too), last frame: what a
    // canvas-only picture crops.
    ImVec2 canvas_min{0, 0}, canvas_max{0, 0};
    // The readability rule at the last frame (FrameReport::must_read ...).
    struct Read {
        long long must = 0, ok = 0;
        float text_px = 0;
        // The zoom (px a cell) at which every one of those values is written whole in digits
        // of kReadableTextPx (at most 64 px a cell).
        float need_z = 0;
    } read;
    bool measure_read = false;   // measure `read` every frame, not only in a lesson (shots)
    bool auto_followed = false;  // following because a lesson step's fit was unreadable
    bool notes = false;          // presenter mode: the whole narration shown (T), not the strip
    // The presenter window (W): the narration, checks, next step, clock and keys on the
    // teacher's screen, and none of it under the canvas (gui_presenter.hpp).
    bool notes_window = false;
    std::unique_ptr<PresenterWindow> presenter;
    std::chrono::steady_clock::time_point notes_opened;
    bool headless = false;  // a shot: the presenter window is hidden, its clock fixed
    std::string notes_png;  // the presenter window's next frame as this PNG ("" none)
    // A text field to give the keyboard to in the next frame (the key scripts of shots):
    // "kernel" (its first axis) or "descriptor"; "" none.
    std::string focus_field;
    std::shared_ptr<TimingsPanel> timings = make_timings_panel();  // the timings view
    LessonUi lesson;  // the lesson player (gui_lesson.cpp)

    ~App() {
        if (job && job->thread.joinable()) job->thread.join();
        for (auto& t : tex)
            if (t.id) glDeleteTextures(1, &t.id);
    }

    const Palette& pal() const {
        return palettes()[static_cast<std::size_t>(std::clamp(s.palette, 0, kNumPalettes - 1))];
    }
    dim_t steps() const { return view ? app::num_steps(*view, s.playback.granularity) : 0; }

    // Where the app is, as a link (link.hpp): the lesson's step, else the view's; "" before the
    // first view, or for a lesson file without a number.
    std::string link() const {
        Link l;
        if (lesson.player.is_open()) {
            l.lesson = lesson_number_of(lesson.player.file());
            if (l.lesson == 0) return "";
            l.lesson_step = lesson.player.step();
        } else if (view) {
            l.view = s.request.view;
            l.problem = to_descriptor(s.request.problem);
            l.step = s.playback.step;
            l.granularity = s.playback.granularity;
        } else {
            return "";
        }
        return format_link(l);
    }

    struct LegendEntry {
        ImU32 colour;
        const char* label;
        bool hatch;
        bool outline = false;  // a cell group's outline (the colour), not a fill
    };
    // The colour key, the same in the window and in the SVG export: the fills, then the
    // outlines of the shown panels' cell groups (dX's stride phases, each with its taps).
    std::vector<LegendEntry> legend() const {
        const Palette& P = pal();
        std::vector<LegendEntry> e = {{c_current, "current step", false},
                                      {c_linked, "linked to hovered cell", false},
                                      {P.pending, "not written yet", false},
                                      {P.padding, "padding / zero lane", true},
                                      {mix(P.cell, P.positive, 0.55f), "value > 0", false},
                                      {mix(P.cell, P.negative, 0.55f), "value < 0", false}};
        if (view)
            for (const Panel& pn : view->panels) {
                if (pn.hidden || pn.group.empty()) continue;
                for (std::size_t g = 0; g < pn.group_names.size(); ++g)
                    e.push_back({group_colour(static_cast<std::uint8_t>(g)),
                                 pn.group_names[g].c_str(), false, true});
            }
        return e;
    }

    // Starts building a view on the worker thread (one at a time; the latest request waits).
    void request(const app::ViewRequest& r) {
        if (job && !job->done) {
            queued = r;
            return;
        }
        if (job && job->thread.joinable()) job->thread.join();
        job = std::make_unique<Job>();
        job->request = r;
        Job* j = job.get();
        j->thread = std::thread([j] {
            try {
                j->result = std::make_shared<ViewModel>(app::build_view(j->request, &j->progress));
            } catch (const std::exception& e) {
                j->error = e.what();
            }
            j->done = true;
        });
    }

    // Takes a finished build; wait: block until the current (and queued) builds end.
    void poll(bool wait) {
        while (job) {
            if (wait && job->thread.joinable()) job->thread.join();
            if (!job->done) return;
            if (job->thread.joinable()) job->thread.join();
            if (job->result) {
                adopt(job->result, job->request);
                s.error.clear();
            } else {
                s.error = job->error;
            }
            job.reset();
            if (queued) {
                request(*queued);
                queued.reset();
            } else {
                return;
            }
        }
    }

    void adopt(std::shared_ptr<ViewModel> v, const app::ViewRequest& r) {
        const bool same_shape = view && view->name == v->name && s.request.problem == r.problem;
        view = std::move(v);
        s.request = r;
        edit = r.problem;
        s.descriptor = to_descriptor(r.problem);
        for (auto& t : tex)
            if (t.id) glDeleteTextures(1, &t.id);
        tex.assign(view->panels.size(), {});
        st.model = nullptr;  // computed afresh for this view (advance_step)
        vmax.assign(view->panels.size(), 1.0f);
        for (std::size_t i = 0; i < view->panels.size(); ++i)
            vmax[i] = app::colour_scale(view->panels[i]);
        s.playback.scrub(s.playback.step, steps());
        s.hover = s.pinned = {};
        linked_for = {-2, -2};
        step_dirty = true;
        if (!same_shape)
            s.zoom = 0;
        else if (arranged_for)
            app::arrange_view(*view, *arranged_for);
    }

    void apply_problem(const Problem& p) {
        const std::string msg = p.validate();
        if (!msg.empty()) {
            s.error = msg;
            return;
        }
        s.error.clear();
        app::ViewRequest r = s.request;
        r.problem = p;
        request(r);
    }

    void set_view(const std::string& name) {
        app::ViewRequest r = s.request;
        r.view = name;
        s.playback.step = 0;
        request(r);
    }

    void update_lesson(bool wait = false) {
        lesson.update(
            s, view.get(), steps(), step_dirty, [this](const app::ViewRequest& r) { request(r); },
            wait);
        apply_stage();
    }

    // The panels a lesson step reveals (StepPlan::panels); the others are left blank.
    void apply_stage() {
        if (!view) return;
        const app::StepPlan* plan = lesson.active() ? lesson.plan() : nullptr;
        const bool staged = plan && !plan->panels.empty() && view->name == plan->request.view;
        for (auto& p : view->panels) p.hidden = staged;
        if (!staged) return;
        for (const auto& t : plan->panels)
            if (const int i = app::panel_of_tensor(*view, t, plan->map); i >= 0)
                view->panels[static_cast<std::size_t>(i)].hidden = false;
    }

    // The step state, brought to the playback's step in place (advance_step): a view of
    // millions of cells redraws only the cells the step changed, in its textures too. A lesson
    // step that hides cells (shown as NaN) or changed its reveal computes the state afresh.
    std::vector<std::vector<dim_t>> changed_cells;
    bool drawn_revealed = false;  // the lesson's reveal state st was computed with
    bool drawn_hiding = false;    // st holds hidden cells
    void update_step() {
        if (!view || (!step_dirty && drawn_revealed == lesson.revealed())) return;
        bool partial = false;
        if (drawn_hiding || lesson.hiding() || drawn_revealed != lesson.revealed()) {
            st = app::compute_step(*view, s.playback.granularity, s.playback.step);
        } else {
            partial = app::advance_step(*view, st, s.playback.granularity, s.playback.step,
                                        changed_cells);
        }
        lesson.hide(*view, st);  // a lesson step's cells to predict: "?" until revealed
        drawn_hiding = lesson.hiding();
        drawn_revealed = lesson.revealed();
        step_dirty = false;
        for (std::size_t i = 0; i < tex.size(); ++i) {
            PanelTexture& t = tex[i];
            if (!partial) {
                t.dirty = true;
                t.changed.clear();
                continue;
            }
            if (t.dirty || i >= changed_cells.size()) continue;
            t.changed.insert(t.changed.end(), changed_cells[i].begin(), changed_cells[i].end());
            // Past an eighth of the panel a full redraw is as cheap (and bounds the list while
            // the panel is drawn as cells, not as its texture).
            if (static_cast<dim_t>(t.changed.size()) * 8 > view->panels[i].numel()) {
                t.dirty = true;
                t.changed.clear();
            }
        }
        measure_values();
    }

    void update_linked() {
        const app::Selection sel = s.hover.valid() ? s.hover : s.pinned;
        if (!view || sel == linked_for) return;
        linked_for = sel;
        linked_mask.assign(view->panels.size(), {});
        if (!sel.valid()) return;
        const auto cells = app::linked_cells(*view, sel.panel, sel.cell);
        for (std::size_t i = 0; i < cells.size(); ++i) {
            if (cells[i].empty()) continue;
            linked_mask[i].assign(static_cast<std::size_t>(view->panels[i].numel()), 0);
            for (dim_t c : cells[i]) linked_mask[i][static_cast<std::size_t>(c)] = 1;
        }
    }

    // Colours of the cells, precomputed per palette so that a texture of millions of cells is
    // coloured with table look-ups: tint[256 + t*256] for a value t = v / max|v| in [-1, 1].
    std::vector<ImU32> tint;
    ImU32 c_current = 0, c_current_pad = 0, c_linked = 0;
    int lut_palette = -1;
    void update_lut() {
        if (lut_palette == s.palette) return;
        lut_palette = s.palette;
        const Palette& P = pal();
        tint.resize(513);
        for (int i = 0; i <= 512; ++i) {
            const float t = static_cast<float>(i - 256) / 256.0f;
            tint[static_cast<std::size_t>(i)] =
                mix(P.cell, t >= 0 ? P.positive : P.negative, std::fabs(t) * 0.55f);
        }
        c_current = mix(P.cell, P.current, 0.8f);
        c_current_pad = mix(P.padding, P.current, 0.7f);
        c_linked = mix(P.cell, P.linked, 0.85f);
        for (auto& t : tex) t.dirty = true;
        measure_values();
    }

    // Per panel of at most 4096 cells, the width of its widest value written whole at font
    // size 1 (0 for larger panels).
    std::vector<float> widest;
    void measure_values() {
        widest.assign(view->panels.size(), 0.0f);
        for (std::size_t i = 0; i < view->panels.size(); ++i) {
            const Panel& pn = view->panels[i];
            if (pn.numel() > 4096) continue;
            for (dim_t c = 0; c < pn.numel(); ++c) {
                const auto cu = static_cast<std::size_t>(c);
                const bool lane = !pn.padding_lane.empty() && pn.padding_lane[cu];
                const std::string v =
                    lane ? "0"
                    : (st.panels[i].flags[cu] & app::kHidden)
                        ? app::hidden_text(st.panels[i].flags[cu])
                        : app::format_value(st.panels[i].shown[cu], s.request.data);
                widest[i] = std::max(widest[i], font->CalcTextSizeA(1.0f, FLT_MAX, 0, v.c_str()).x);
            }
        }
    }

    // The digit size of panel i at z px a cell: app::value_text_px, smaller (down to
    // kReadableTextPx) where that lets the panel's widest value be written whole; 0: no text.
    float value_font(std::size_t i, float z) const {
        const float f0 = app::value_text_px(z);
        if (f0 <= 0.0f || i >= widest.size() || widest[i] <= 0.0f) return f0;
        // (0.89: a hair under the 0.9 of a cell that value_text allows, so that rounding never
        // leaves the widest value without text.)
        return std::clamp(z * 0.89f / widest[i], std::min(f0, app::kReadableTextPx), f0);
    }

    // The text of cell c of panel i at z px a cell: its value fitted to 0.9 of the cell at the
    // panel's digit size (value_font), written shorter where it must be; "" where none fits.
    std::string value_text(std::size_t i, dim_t c, float z) const {
        const float fsz = value_font(i, z);
        if (fsz <= 0.0f) return "";
        const auto cu = static_cast<std::size_t>(c);
        const Panel& pn = view->panels[i];
        if (!pn.padding_lane.empty() && pn.padding_lane[cu]) return "0";
        if (st.panels[i].flags[cu] & app::kHidden) return app::hidden_text(st.panels[i].flags[cu]);
        return app::format_value_fit(st.panels[i].shown[cu], s.request.data, z * 0.9f,
                                     [&](const std::string& t) {
                                         return font->CalcTextSizeA(fsz, FLT_MAX, 0, t.c_str()).x;
                                     });
    }

    ImU32 cell_colour(std::size_t panel, dim_t c) const {
        const Palette& P = pal();
        const auto cu = static_cast<std::size_t>(c);
        const std::uint8_t f = st.panels[panel].flags[cu];
        const Panel& pn = view->panels[panel];
        const bool lane = !pn.padding_lane.empty() && pn.padding_lane[cu];
        if (!linked_mask.empty() && !linked_mask[panel].empty() && linked_mask[panel][cu])
            return c_linked;
        // A panel that is current as a whole (the kernel that slides over every position: W,
        // W') keeps its value colours, the step shown by the outline alone, so that its signs
        // stay visible.
        const bool whole =
            panel < st.current.size() && static_cast<dim_t>(st.current[panel].size()) == pn.numel();
        if ((f & app::kCurrent) && !whole) return lane ? c_current_pad : c_current;
        if (lane) return P.padding;
        if (f & app::kPending) return P.pending;
        const float v = st.panels[panel].shown[cu] / vmax[panel];
        if (!std::isfinite(v)) return P.cell;
        const int i = static_cast<int>(std::lround(std::clamp(v, -1.0f, 1.0f) * 256.0f)) + 256;
        return tint[static_cast<std::size_t>(i)];
    }

    // The panels a lesson step is about: those its map's link reaches through the view's links
    // (the tnc view's X, X5 and T for tnc5d, not the dY pipeline that advances beside it); all
    // panels outside a lesson or where the step names no map of the view.
    std::vector<bool> step_panels() const {
        std::vector<bool> in(view->panels.size(), true);
        const app::StepPlan* plan = lesson.active() ? lesson.plan() : nullptr;
        if (!plan || plan->map.empty()) return in;
        const app::Link* own = nullptr;
        for (const auto& l : view->links)
            if (l.name == plan->map) own = &l;
        if (!own || own->src < 0 || own->dst < 0) return in;
        in.assign(view->panels.size(), false);
        in[static_cast<std::size_t>(own->src)] = in[static_cast<std::size_t>(own->dst)] = true;
        for (bool grew = true; grew;) {
            grew = false;
            for (const auto& l : view->links) {
                if (l.src < 0 || l.dst < 0) continue;
                const auto a = static_cast<std::size_t>(l.src), b = static_cast<std::size_t>(l.dst);
                if (in[a] != in[b]) {
                    in[a] = in[b] = true;
                    grew = true;
                }
            }
        }
        return in;
    }

    // The cells a class must read at this step, per panel (sorted): the current cells of the
    // panels the step is about and the lesson's highlights; `any` false when there are none.
    std::vector<std::vector<dim_t>> must_read(bool& any) const {
        std::vector<std::vector<dim_t>> must(view->panels.size());
        const auto* hl = lesson.highlights(*view);
        const std::vector<bool> in = step_panels();
        any = false;
        for (std::size_t i = 0; i < view->panels.size(); ++i) {
            if (view->panels[i].hidden) continue;
            if (i < st.current.size() && in[i]) must[i] = st.current[i];
            if (hl) must[i].insert(must[i].end(), (*hl)[i].begin(), (*hl)[i].end());
            std::sort(must[i].begin(), must[i].end());
            must[i].erase(std::unique(must[i].begin(), must[i].end()), must[i].end());
            any |= !must[i].empty();
        }
        return must;
    }

    // The readability rule over the canvas as drawn (origin, z px a cell, clip): fills `read`.
    void measure_readability(ImVec2 origin, float z, const ImVec4& clip) {
        read = {};
        read.text_px = 0;
        bool any = false;
        const std::vector<std::vector<dim_t>> must = must_read(any);
        const auto visit = [&](std::size_t i, dim_t c) {
            ++read.must;
            const float f = value_font(i, z);
            read.text_px = read.must == 1 ? f : std::min(read.text_px, f);
            const auto cu = static_cast<std::size_t>(c);
            const std::string whole = app::format_value(st.panels[i].shown[cu], s.request.data);
            const float w1 = font->CalcTextSizeA(1.0f, FLT_MAX, 0, whole.c_str()).x;
            read.need_z = std::max({read.need_z, app::kReadableTextPx / app::kValueTextShare,
                                    std::min(64.0f, app::kReadableTextPx * w1 / 0.89f)});
            const app::CellPos cp = app::cell_pos(view->panels[i], c);
            const float x = origin.x + static_cast<float>(cp.x) * z;
            const float y = origin.y + static_cast<float>(cp.y) * z;
            const bool inside = x >= clip.x - 0.5f && y >= clip.y - 0.5f &&
                                x + z <= clip.z + 0.5f && y + z <= clip.w + 0.5f;
            if (inside && f >= app::kReadableTextPx && !value_text(i, c, z).empty()) ++read.ok;
        };
        // Past this many cells to read the view is unreadable whatever the zoom (and measuring
        // each would cost a frame).
        constexpr long long kMaxMust = 20000;
        long long count = 0;
        for (std::size_t i = 0; i < view->panels.size(); ++i)
            count += any ? static_cast<long long>(must[i].size()) : view->panels[i].numel();
        if (count > kMaxMust) {
            read.must = count;
            read.need_z = 64.0f;
            return;
        }
        for (std::size_t i = 0; i < view->panels.size(); ++i) {
            if (any) {
                for (dim_t c : must[i]) visit(i, c);
            } else {
                for (dim_t c = 0; c < view->panels[i].numel(); ++c) visit(i, c);
            }
        }
    }

    void frame(double dt);
    // An export waits for a frame drawn without the mouse (no hover, no tooltip).
    bool export_pending() const { return !ex.window && (!ex.png.empty() || ex.sequence); }
    std::vector<unsigned char> export_pixels(int& w, int& h) const;
    void draw_notes();
    void present_notes();
    void keyboard();
    void key_press(int key, bool repeat);
    // Frames until the text field being edited loses the keyboard (Enter or Escape was pressed
    // in it: ImGui ends the edit in the next frame; where it did not, focus is taken away).
    int leave_field = 0;
    void sidebar(float width);
    void sidebar_problem(float width);
    void sidebar_playback(float width);
    void sidebar_export(float width, bool maps);
    void start_sequence(dim_t from, dim_t to, bool gif);
    void gif_key();
    void header();
    void one_line(const std::string& text);
    void canvas();
    void draw_panel(ImDrawList* dl, std::size_t i, ImVec2 origin, float z, const ImVec4& clip);
    void texture(std::size_t i);
    void after_render(bool clean);
    std::string svg() const;
    void toggle_fullscreen();
    // Following the step on or off; off is the fit (F).
    void set_follow(bool on) {
        s.follow = on;
        fit_auto = true;
        if (!on) s.zoom = 0;
    }
};

// [SECTION] keyboard

void App::keyboard() {
    for (const KeyPress& k : take_key_presses()) key_press(k.key, k.repeat);
}

void App::key_press(int key, bool is_repeat) {
    const dim_t n = steps();
    auto& pb = s.playback;
    const auto pressed = [&](int k, bool repeat = false) {
        return k == key && (repeat || !is_repeat);
    };
    if (pressed(GLFW_KEY_SPACE)) pb.paused = !pb.paused;
    if (pressed(GLFW_KEY_RIGHT, true)) {
        pb.paused = true;
        pb.step_forward(n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_LEFT, true)) {
        pb.paused = true;
        pb.step_back(n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_HOME)) {
        pb.scrub(0, n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_END)) {
        pb.scrub(n - 1, n);
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_UP, true)) pb.speed = std::min(120.0, pb.speed * 1.5);
    if (pressed(GLFW_KEY_DOWN, true)) pb.speed = std::max(0.25, pb.speed / 1.5);
    if (pressed(GLFW_KEY_G)) {
        pb.granularity = pb.granularity == Granularity::Element ? Granularity::Line
                         : pb.granularity == Granularity::Line  ? Granularity::Tile
                         : pb.granularity == Granularity::Tile  ? Granularity::Whole
                                                                : Granularity::Element;
        pb.step = 0;
        step_dirty = true;
    }
    if (pressed(GLFW_KEY_L)) pb.loop = !pb.loop;
    if (pressed(GLFW_KEY_C)) s.palette = (s.palette + 1) % kNumPalettes;
    if (pressed(GLFW_KEY_F)) set_follow(false);  // the fit
    if (pressed(GLFW_KEY_Z)) set_follow(!s.follow);
    if (pressed(GLFW_KEY_P)) s.presenter = !s.presenter;
    if (pressed(GLFW_KEY_T)) notes = !notes;
    if (pressed(GLFW_KEY_W)) notes_window = !notes_window;
    if (pressed(GLFW_KEY_TAB)) show_sidebar = !show_sidebar;
    if (pressed(GLFW_KEY_F11)) toggle_fullscreen();
    if (pressed(GLFW_KEY_H) || pressed(GLFW_KEY_F1)) show_help = !show_help;
    if (pressed(GLFW_KEY_S)) ex.png = ex.dir + "/" + s.request.view + ".png";
    if (pressed(GLFW_KEY_E) && s.request.view != "timings") gif_key();
    if (pressed(GLFW_KEY_EQUAL, true) || pressed(GLFW_KEY_KP_ADD, true))
        s.font_scale = std::min(3.0f, s.font_scale + 0.1f);
    if (pressed(GLFW_KEY_MINUS, true) || pressed(GLFW_KEY_KP_SUBTRACT, true))
        s.font_scale = std::max(0.6f, s.font_scale - 0.1f);
    if (pressed(GLFW_KEY_ESCAPE)) {
        if (s.pinned.valid())
            s.pinned = {};
        else if (s.presenter) {
            s.presenter = false;
            if (fullscreen) toggle_fullscreen();
        }
    }
    const auto& names = app::view_names();
    // 1-9 and 0 (the tenth, as on the keyboard's row).
    for (int k = 0; k < static_cast<int>(names.size()) && k < 10; ++k)
        if (pressed(k < 9 ? GLFW_KEY_1 + k : GLFW_KEY_0))
            set_view(names[static_cast<std::size_t>(k)]);
    if (lesson.keyboard(pressed)) return;  // a lesson: PgDn / PgUp (and N / B) step through it
    if (pressed(GLFW_KEY_PAGE_DOWN) || pressed(GLFW_KEY_PAGE_UP)) {
        const auto it = std::find(names.begin(), names.end(), s.request.view);
        const auto i = static_cast<int>(it - names.begin());
        const int m = static_cast<int>(names.size());
        set_view(
            names[static_cast<std::size_t>((i + (pressed(GLFW_KEY_PAGE_DOWN) ? 1 : m - 1)) % m)]);
    }
}

// [SECTION] sidebar

namespace {

bool input_dim(const char* label, dim_t& v, dim_t lo = 0) {
    const dim_t step = 1;
    bool changed = ImGui::InputScalar(label, ImGuiDataType_S64, &v, &step, nullptr, "%lld");
    if (changed && v < lo) v = lo;
    return changed;
}

struct Preset {
    const char* label;
    const char* desc;
};
const Preset kPresets[] = {
    {"lesson: 2x3x3 input, 2x2x2 filters", "mb1ic2ih3oc2kh2"},
    {"stride 2, padding 1", "mb1ic1ih5oc1kh3sh2ph1"},
    {"stride 2 with leftover r = 1", "mb1ic1ih6oc1kh3sh2ph1"},
    {"dilation 2", "mb1ic1ih7oc1kh3dh1"},
    {"groups 2", "g2mb1ic4ih4oc4kh2"},
    {"asymmetric padding", "mb1ic1ih4oc1kh3ph1phe0"},
    {"1-D", "mb1ic2iw8oc2kw3"},
    {"3-D", "mb1ic1id3ih3iw3oc1kd2kh2kw2"},
    {"fractal: C = 20 (C0 16)", "mb1ic20ih2oc18kh1"},
    {"ResNet-50 3x3, 64 ch, 56x56", "mb1ic64ih56oc64kh3ph1"},
};

}  // namespace

void App::sidebar(float width) {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(width, ImGui::GetIO().DisplaySize.y));
    ImGui::Begin("ConvLab", nullptr,
                 ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
    lesson.sidebar(width);
    // View
    ImGui::TextUnformatted("View");
    const auto& names = app::view_names();
    if (ImGui::BeginCombo("##view", s.request.view.c_str())) {
        for (std::size_t k = 0; k < names.size(); ++k) {
            std::string label = std::to_string(k + 1) + "  " + names[k];
            if (ImGui::Selectable(label.c_str(), names[k] == s.request.view)) set_view(names[k]);
        }
        ImGui::EndCombo();
    }
    // The timings view has its own controls (shape set, passes, its charts' export): the
    // problem, playback, following and step export of the index-map views are left out here.
    const bool maps = s.request.view != "timings";
    if (!maps)
        ImGui::TextWrapped(
            "Its controls are on the right. The problem, playback and step export belong to "
            "the index-map views: pick one of them to change those.");
    if (maps) {
        sidebar_problem(width);
        sidebar_playback(width);
    }
    if (!s.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(230, 40, 40, 255));
        ImGui::TextWrapped("%s", s.error.c_str());
        ImGui::PopStyleColor();
    }
    // Display
    ImGui::Separator();
    ImGui::TextUnformatted("Display");
    if (ImGui::BeginCombo("palette", pal().name)) {
        for (int i = 0; i < kNumPalettes; ++i)
            if (ImGui::Selectable(palettes()[static_cast<std::size_t>(i)].name, i == s.palette))
                s.palette = i;
        ImGui::EndCombo();
    }
    ImGui::SetNextItemWidth(width * 0.5f);
    ImGui::SliderFloat("font scale", &s.font_scale, 0.6f, 3.0f, "%.1f");
    ImGui::Checkbox("presenter mode (P)", &s.presenter);
    ImGui::SameLine();
#ifdef __EMSCRIPTEN__
    ImGui::BeginDisabled();  // a page has one canvas: PresenterWindow says so if asked (W)
#endif
    ImGui::Checkbox("presenter window (W)", &notes_window);
#ifdef __EMSCRIPTEN__
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("the presenter window is not available in the browser");
#else
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "a second window for your screen: the narration, checks, next step, clock and keys; "
            "the canvas here then shows no narration (for the projector)");
#endif
    if (ImGui::Button("reset settings")) {
        apply_settings(Settings{});
        const std::string path = settings_path();
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove(path, ec);
        status = path.empty() ? "settings reset" : "settings reset (" + path + " removed)";
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "palette, font scale and presenter options back to their defaults; "
            "the settings file (%s) is written again when the window closes",
            settings_path().c_str());
    if (maps) {
        ImGui::SameLine();
        if (ImGui::Button("fit (F)")) set_follow(false);
        bool follow = s.follow;
        if (ImGui::Checkbox("follow the step (Z)", &follow)) set_follow(follow);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("zoom in to readable cells and keep the current step in the middle");
    }
    sidebar_export(width, maps);
    if (!status.empty()) ImGui::TextWrapped("%s", status.c_str());
    ImGui::Separator();
    if (maps)
        ImGui::TextWrapped(
            "Keys: space play, left/right step, G granularity, P presenter; H or F1 lists them "
            "all. Mouse: wheel zoom, drag pan, hover links, click pins.");
    else
        ImGui::TextWrapped(
            "Keys: P presenter, S the canvas as PNG, F11 full screen; H or F1 lists them all. "
            "Mouse: hover a bar or a dot for its measurement.");
    ImGui::End();
}

void App::sidebar_problem(float width) {
    ImGui::Separator();
    ImGui::TextUnformatted("Problem (benchdnn descriptor)");
    ImGui::SetNextItemWidth(-1);
    if (focus_field == "descriptor") {
        ImGui::SetKeyboardFocusHere();
        focus_field.clear();
    }
    if (ImGui::InputText("##desc", &s.descriptor, ImGuiInputTextFlags_EnterReturnsTrue)) {
        try {
            apply_problem(parse_descriptor(s.descriptor));
        } catch (const Error& e) {
            s.error = e.what();
        }
    }
    if (ImGui::BeginCombo("##presets", "presets ...")) {
        for (const auto& pr : kPresets)
            if (ImGui::Selectable(pr.label)) apply_problem(parse_descriptor(pr.desc));
        ImGui::EndCombo();
    }
    Problem p = edit;
    bool changed = false;
    int nd = p.ndims;
    ImGui::TextUnformatted("spatial dims");
    ImGui::SameLine();
    changed |= ImGui::RadioButton("1-D", &nd, 1);
    ImGui::SameLine();
    changed |= ImGui::RadioButton("2-D", &nd, 2);
    ImGui::SameLine();
    changed |= ImGui::RadioButton("3-D", &nd, 3);
    p.ndims = nd;
    ImGui::PushItemWidth(width * 0.45f);
    changed |= input_dim("N (batch)", p.mb);
    changed |= input_dim("C (in channels)", p.ic);
    changed |= input_dim("K (out channels)", p.oc);
    changed |= input_dim("groups", p.groups);
    ImGui::PopItemWidth();
    const float cw = (width - 130.0f * s.font_scale * content_scale) / static_cast<float>(p.ndims);
    // shift: the value shown is the problem's minus shift (dilation as the descriptor writes it).
    // prefix: before the axis name in the field ("d": "dh 1", as the descriptor's dh1).
    const auto axis_row = [&](const char* label, SpatialDims& a, dim_t lo, dim_t shift = 0,
                              const char* tip = nullptr, const char* prefix = "") {
        ImGui::PushID(label);
        for (int i = 0; i < p.ndims; ++i) {
            ImGui::PushID(i);
            ImGui::SetNextItemWidth(cw - 8);
            dim_t shown = a[static_cast<std::size_t>(i)] - shift;
            if (i == 0 && focus_field == label) {
                ImGui::SetKeyboardFocusHere();
                focus_field.clear();
            }
            if (ImGui::DragScalar("##a", ImGuiDataType_S64, &shown, 0.1f, nullptr, nullptr,
                                  (prefix + std::string(p.axis_name(i)) + " %lld").c_str())) {
                a[static_cast<std::size_t>(i)] = shown + shift;
                changed = true;
            }
            if (tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
            if (a[static_cast<std::size_t>(i)] < lo) a[static_cast<std::size_t>(i)] = lo;
            ImGui::PopID();
            ImGui::SameLine();
        }
        ImGui::TextUnformatted(label);
        if (tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
        ImGui::PopID();
    };
    axis_row("input", p.in, 0);
    axis_row("kernel", p.kernel, 0);
    axis_row("stride", p.stride, 0);
    // Dilation as the descriptor writes it (benchdnn's dh: 0 = none), so that the field and
    // the descriptor above say the same number.
    axis_row("dilation", p.dilation, 1, 1,
             "dilation as benchdnn's descriptor writes it (dh, dw): 0 = none, 1 = one gap "
             "between kernel taps",
             "d");
    axis_row("pad begin", p.pad_begin, 0);
    axis_row("pad end", p.pad_end, 0);
    if (changed) {
        edit = p;
        apply_problem(p);
    }
    ImGui::SetNextItemWidth(width * 0.3f);
    dim_t c0 = s.request.c0;
    if (input_dim("C0 (DaVinci lanes)", c0, 1)) {
        app::ViewRequest r = s.request;
        r.c0 = c0;
        request(r);
    }
    int data = static_cast<int>(s.request.data);
    ImGui::TextUnformatted("data");
    ImGui::SameLine();
    bool dchanged = ImGui::RadioButton("small integers", &data, 0);
    ImGui::SameLine();
    dchanged |= ImGui::RadioButton("random reals", &data, 1);
    if (dchanged) {
        app::ViewRequest r = s.request;
        r.data = static_cast<app::DataKind>(data);
        request(r);
    }
}

void App::sidebar_playback(float width) {
    ImGui::Separator();
    ImGui::TextUnformatted("Playback");
    const dim_t n = steps();
    auto& pb = s.playback;
    if (ImGui::Button("|<")) {
        pb.scrub(0, n);
        step_dirty = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("<")) {
        pb.paused = true;
        pb.step_back(n);
        step_dirty = true;
    }
    ImGui::SameLine();
    if (ImGui::Button(pb.paused ? "play" : "pause")) pb.paused = !pb.paused;
    ImGui::SameLine();
    if (ImGui::Button(">")) {
        pb.paused = true;
        pb.step_forward(n);
        step_dirty = true;
    }
    ImGui::SameLine();
    if (ImGui::Button(">|")) {
        pb.scrub(n - 1, n);
        step_dirty = true;
    }
    ImGui::SameLine();
    ImGui::Checkbox("loop", &pb.loop);
    dim_t k = pb.step;
    const dim_t lo = 0, hi = std::max<dim_t>(0, n - 1);
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderScalar("##step", ImGuiDataType_S64, &k, &lo, &hi, "step %lld")) {
        pb.scrub(k, n);
        step_dirty = true;
    }
    float speed = static_cast<float>(pb.speed);
    ImGui::SetNextItemWidth(width * 0.5f);
    if (ImGui::SliderFloat("steps / s", &speed, 0.25f, 120.0f, "%.2f",
                           ImGuiSliderFlags_Logarithmic))
        pb.speed = speed;
    int g = static_cast<int>(pb.granularity);
    ImGui::TextUnformatted("step =");
    ImGui::SameLine();
    bool gch = ImGui::RadioButton("element", &g, 0);
    ImGui::SameLine();
    gch |= ImGui::RadioButton("line", &g, 1);
    gch |= ImGui::RadioButton("tile", &g, 2);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "%lld lines at a time: 16 columns of the column matrix (a GEMM panel), "
            "one 16 x C0 fractal",
            static_cast<long long>(kTileLines));
    ImGui::SameLine();
    gch |= ImGui::RadioButton("whole", &g, 3);
    if (gch) {
        pb.granularity = static_cast<Granularity>(g);
        pb.step = 0;
        step_dirty = true;
    }
}

// The window as PNG (S) on every view; the SVG of the panels and the steps as PNGs or a GIF
// only on the index-map views (maps).
void App::sidebar_export(float width, bool maps) {
    ImGui::Separator();
    ImGui::TextUnformatted("Export to");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    ImGui::InputText("##dir", &ex.dir);
    if (ImGui::Button(maps ? "PNG (S)" : "the canvas as PNG (S)"))
        ex.png = ex.dir + "/" + s.request.view + ".png";
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the canvas alone, without the sidebar, the narration or the mouse");
    if (!maps) return;
    ImGui::SameLine();
    if (ImGui::Button("SVG")) ex.svg = ex.dir + "/" + s.request.view + ".svg";
    const dim_t n = steps();
    if (seq_to_last) seq_to = std::max<dim_t>(0, n - 1);
    ImGui::SetNextItemWidth(width * 0.36f);
    input_dim("from", seq_from);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(width * 0.36f);
    if (input_dim("to", seq_to)) seq_to_last = false;
    const bool pngs = ImGui::Button("steps from..to as numbered PNGs");
    ImGui::SameLine();
    const bool gif = ImGui::Button("GIF");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the same steps as one looping GIF of the canvas, at steps / s (key E)");
    if (pngs || gif) start_sequence(seq_from, seq_to, gif);
}

// Steps [from, to] (clamped to the view's) as numbered PNGs or one GIF, at the playback speed.
void App::start_sequence(dim_t from, dim_t to, bool gif) {
    const dim_t n = steps();
    if (n <= 0 || ex.sequence) return;
    ex.sequence = true;
    ex.seq_next = std::clamp<dim_t>(from, 0, n - 1);
    ex.seq_end = std::clamp(to, ex.seq_next, n - 1) + 1;
    ex.written.clear();
    ex.gif = gif ? ex.dir + "/" + s.request.view + ".gif" : "";
    ex.gif_fps = s.playback.speed;
}

// E: the GIF without the sidebar (a lesson, presenter mode): a lesson step's range of steps,
// else the sidebar's from..to.
void App::gif_key() {
    const app::StepPlan* plan = lesson.active() ? lesson.plan() : nullptr;
    if (plan && view && view->name == plan->request.view)
        start_sequence(plan->range_begin, plan->range_end < 0 ? steps() - 1 : plan->range_end - 1,
                       true);
    else
        start_sequence(seq_from, seq_to_last ? steps() - 1 : seq_to, true);
}

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
            ImGui::TextWrapped("%s", view->caption.c_str());
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
        ImGui::TextWrapped("%s", line.c_str());
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
        ImGui::TextWrapped("%s%s", s.pinned.valid() && !s.hover.valid() ? "[pinned] " : "",
                           f.c_str());
        ImGui::PopStyleColor();
    }
    if (view && !view->check.empty()) {
        const bool ok = view->check.find(": yes") != std::string::npos;
        ImGui::PushStyleColor(ImGuiCol_Text, ok ? P.good : P.bad);
        if (compact)
            one_line("check: " + view->check);
        else
            ImGui::TextWrapped("check: %s", view->check.c_str());
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
            if (ImGui::GetContentRegionAvail().x < w) ImGui::NewLine();
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

// text on one line, cut with "..." where the window is narrower; the whole text on hover.
void App::one_line(const std::string& text) {
    const std::string cut = cut_to_width(ImGui::GetFont(), ImGui::GetFontSize(), text,
                                         ImGui::GetContentRegionAvail().x);
    ImGui::TextUnformatted(cut.c_str());
    if (cut.size() != text.size() && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.0f);
        ImGui::TextUnformatted(text.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

namespace {

// Texel (x, y) of the level below `lower` (lw x lh): the alpha-weighted box filter of its 2 x 2
// texels there (the transparent gaps between tiles do not darken the cells next to them).
std::uint32_t halve_at(const std::vector<std::uint32_t>& lower, int lw, int lh, int x, int y) {
    unsigned sum[4] = {0, 0, 0, 0};
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
            const int sx = std::min(lw - 1, 2 * x + dx), sy = std::min(lh - 1, 2 * y + dy);
            const std::uint32_t c =
                lower[static_cast<std::size_t>(sy) * static_cast<std::size_t>(lw) +
                      static_cast<std::size_t>(sx)];
            const unsigned a = c >> 24;
            for (int k = 0; k < 3; ++k) sum[k] += ((c >> (8 * k)) & 0xffu) * a;
            sum[3] += a;
        }
    if (sum[3] == 0) return 0;
    std::uint32_t out = (sum[3] / 4) << 24;
    for (int k = 0; k < 3; ++k) out |= (sum[k] / sum[3]) << (8 * k);
    return out;
}

}  // namespace

void App::texture(std::size_t i) {
    PanelTexture& t = tex[i];
    const Panel& pn = view->panels[i];
    const int want_w = static_cast<int>(std::ceil(pn.width)),
              want_h = static_cast<int>(std::ceil(pn.height));
    if (t.texel.empty() || t.w != want_w || t.h != want_h || t.per_row != pn.tiles_per_row) {
        // (Re)placed: the panel's arrangement decides where each cell's texel is.
        if (t.id) glDeleteTextures(1, &t.id);
        t = PanelTexture{};
        t.w = want_w;
        t.h = want_h;
        t.per_row = pn.tiles_per_row;
        GLint max_size = 0;
        glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_size);
        if (t.w <= 0 || t.h <= 0 || t.w > max_size || t.h > max_size) return;
        t.texel = app::cell_texels(pn, t.w);
        glGenTextures(1, &t.id);
        glBindTexture(GL_TEXTURE_2D, t.id);
        // Minified through mipmaps (below): a plain linear filter samples 2 x 2 of many
        // texels per pixel and speckles.
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        t.dirty = true;
    }
    if (!t.id || (!t.dirty && t.changed.empty())) return;
    glBindTexture(GL_TEXTURE_2D, t.id);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    if (t.dirty) {
        // Gaps between tiles stay transparent (0); every cell's texel is rewritten, then every
        // level below it. The levels are kept from one redraw to the next (a step's redraw of a
        // panel of millions of cells took a fresh, zeroed allocation of each level before): the
        // gaps never change.
        const std::size_t texels = static_cast<std::size_t>(t.w) * static_cast<std::size_t>(t.h);
        if (t.levels.empty() || t.levels[0].size() != texels) {
            t.levels.assign(1, std::vector<std::uint32_t>(texels, 0));
            t.level_size.assign(1, {t.w, t.h});
        }
        const dim_t numel = pn.numel();
        for (dim_t c = 0; c < numel; ++c)
            t.levels[0][t.texel[static_cast<std::size_t>(c)]] = cell_colour(i, c);
        for (std::size_t lv = 1;; ++lv) {
            const auto [w, h] = t.level_size[lv - 1];
            if (w == 1 && h == 1) break;
            const int nw = std::max(1, w / 2), nh = std::max(1, h / 2);
            if (t.levels.size() <= lv) {
                t.levels.emplace_back(static_cast<std::size_t>(nw) * static_cast<std::size_t>(nh));
                t.level_size.emplace_back(nw, nh);
            }
            std::vector<std::uint32_t>& next = t.levels[lv];
            const std::vector<std::uint32_t>& lower = t.levels[lv - 1];
            for (int y = 0; y < nh; ++y)
                for (int x = 0; x < nw; ++x)
                    next[static_cast<std::size_t>(y) * static_cast<std::size_t>(nw) +
                         static_cast<std::size_t>(x)] = halve_at(lower, w, h, x, y);
        }
        // Into the storage of the first upload where there is one (no reallocation).
        for (std::size_t lv = 0; lv < t.levels.size(); ++lv)
            if (t.uploaded)
                glTexSubImage2D(GL_TEXTURE_2D, static_cast<GLint>(lv), 0, 0, t.level_size[lv].first,
                                t.level_size[lv].second, GL_RGBA, GL_UNSIGNED_BYTE,
                                t.levels[lv].data());
            else
                glTexImage2D(GL_TEXTURE_2D, static_cast<GLint>(lv), GL_RGBA, t.level_size[lv].first,
                             t.level_size[lv].second, 0, GL_RGBA, GL_UNSIGNED_BYTE,
                             t.levels[lv].data());
        t.uploaded = true;
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL,
                        static_cast<GLint>(t.levels.size()) - 1);
        t.dirty = false;
        t.changed.clear();
        return;
    }
    // A step's change: the changed cells' texels, then their parents level by level, each
    // row's changed span uploaded on its own (a step's cells lie in a few rows).
    std::vector<std::uint32_t> at;  // texel indices changed at the current level
    at.reserve(t.changed.size());
    for (const dim_t c : t.changed) {
        const std::uint32_t k = t.texel[static_cast<std::size_t>(c)];
        t.levels[0][k] = cell_colour(i, c);
        at.push_back(k);
    }
    t.changed.clear();
    for (std::size_t lv = 0;; ++lv) {
        const int w = t.level_size[lv].first;
        std::sort(at.begin(), at.end());
        at.erase(std::unique(at.begin(), at.end()), at.end());
        for (std::size_t a = 0; a < at.size();) {
            const std::uint32_t row = at[a] / static_cast<std::uint32_t>(w);
            std::size_t b = a;
            while (b + 1 < at.size() && at[b + 1] / static_cast<std::uint32_t>(w) == row) ++b;
            const std::uint32_t x0 = at[a] % static_cast<std::uint32_t>(w),
                                x1 = at[b] % static_cast<std::uint32_t>(w);
            glTexSubImage2D(GL_TEXTURE_2D, static_cast<GLint>(lv), static_cast<GLint>(x0),
                            static_cast<GLint>(row), static_cast<GLsizei>(x1 - x0 + 1), 1, GL_RGBA,
                            GL_UNSIGNED_BYTE, t.levels[lv].data() + at[a]);
            a = b + 1;
        }
        if (lv + 1 >= t.levels.size()) break;
        const auto [nw, nh] = t.level_size[lv + 1];
        const int h = t.level_size[lv].second;
        for (std::uint32_t& k : at) {
            const int x = std::min(nw - 1, static_cast<int>(k % static_cast<std::uint32_t>(w)) / 2),
                      y = std::min(nh - 1, static_cast<int>(k / static_cast<std::uint32_t>(w)) / 2);
            k = static_cast<std::uint32_t>(y * nw + x);
        }
        std::sort(at.begin(), at.end());
        at.erase(std::unique(at.begin(), at.end()), at.end());
        for (const std::uint32_t k : at)
            t.levels[lv + 1][k] =
                halve_at(t.levels[lv], w, h, static_cast<int>(k % static_cast<std::uint32_t>(nw)),
                         static_cast<int>(k / static_cast<std::uint32_t>(nw)));
    }
}

namespace {

// "tiles: c ->, n v; rows h; cols w" for a panel.
std::string role_text(const Panel& p) {
    std::string rows, cols, tx, ty;
    for (std::size_t i = 0; i < p.roles.size(); ++i) {
        std::string* t = p.roles[i] == app::Role::Row     ? &rows
                         : p.roles[i] == app::Role::Col   ? &cols
                         : p.roles[i] == app::Role::TileX ? &tx
                                                          : &ty;
        *t += (t->empty() ? "" : ",") + p.shape.names[i];
    }
    std::string s;
    if (!rows.empty()) s += "rows " + rows + " · ";
    if (!cols.empty()) s += "cols " + cols;
    if (!tx.empty() && p.tiles_x > 1) s += " · tiles " + tx + " →";
    if (!ty.empty() && p.tiles_y > 1) s += " · " + ty + " ↓";
    return s;
}

std::string shape_text(const Shape& s) {
    std::string r = "(";
    for (std::size_t i = 0; i < s.dims.size(); ++i)
        r += (i ? ", " : "") + s.names[i] + "=" + std::to_string(s.dims[i]);
    return r + ")";
}

}  // namespace

// The least size (px) a tile label is shrunk to so that every tile of a row gets its label ("k=1"
// over each kernel, not over every other one); below it, every other tile is labelled.
constexpr float kMinLabelPx = 11.0f;

void App::draw_panel(ImDrawList* dl, std::size_t i, ImVec2 origin, float z, const ImVec4& clip) {
    const Palette& P = pal();
    const Panel& pn = view->panels[i];
    const app::PanelState& ps = st.panels[i];
    const float px = origin.x + static_cast<float>(pn.x) * z;
    const float py = origin.y + static_cast<float>(pn.y) * z;
    const float pw = static_cast<float>(pn.width) * z, ph = static_cast<float>(pn.height) * z;
    if (px > clip.z || py > clip.w || px + pw < clip.x || py + ph < clip.y) return;
    const float tw = static_cast<float>(pn.pad_left + pn.cols + pn.pad_right);
    const float th = static_cast<float>(pn.pad_top + pn.rows + pn.pad_bottom);
    const dim_t per_row =
        pn.tiles_per_row > 0 ? std::min(pn.tiles_per_row, pn.tiles_x) : pn.tiles_x;
    const dim_t wraps = (pn.tiles_x + per_row - 1) / per_row;
    // Tile labels: shrunk (to kMinLabelPx at the least) where that labels every tile of a row.
    float label_size = ImGui::GetFontSize() * 0.85f;
    if (z < 3.0f) {
        texture(i);
        if (tex[i].id) {
            dl->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(tex[i].id)),
                         ImVec2(px, py),
                         ImVec2(px + static_cast<float>(tex[i].w) * z,
                                py + static_cast<float>(tex[i].h) * z));
        }
        dl->AddRect(ImVec2(px - 1, py - 1), ImVec2(px + pw + 1, py + ph + 1), P.grid);
    } else {
        // One digit size for every cell (app::value_text_px): a value too wide for its cell is
        // written shorter (fewer digits, then the scientific form) or not at all, never cut.
        const float fsz = value_font(i, z);
        const bool text = fsz > 0.0f;
        // Tile label: the tile dims of its first element ("c=1", "n=0 g=1").
        // With across_only, only the dims that change along a row of tiles (TileX: "c=1" where
        // the first tile of the row says "k=0 c=0"), where the panel has any.
        bool any_across = false;
        for (std::size_t d = 0; d < pn.roles.size(); ++d)
            any_across |= pn.roles[d] == app::Role::TileX && pn.shape.dims[d] > 1;
        const auto tile_label = [&](dim_t txi, dim_t tyi, bool across_only) {
            const auto first = app::linear_at(pn, txi, tyi, 0, 0);
            std::vector<dim_t> c(pn.shape.dims.size());
            pn.shape.coord_of(first, c);
            std::string lab;
            for (std::size_t d = 0; d < c.size(); ++d)
                if ((pn.roles[d] == app::Role::TileX ||
                     (pn.roles[d] == app::Role::TileY && !(across_only && any_across))) &&
                    pn.shape.dims[d] > 1)
                    lab +=
                        (lab.empty() ? "" : " ") + pn.shape.names[d] + "=" + std::to_string(c[d]);
            return lab;
        };
        const auto label_w = [&](const std::string& lab) {
            return font->CalcTextSizeA(label_size, FLT_MAX, 0, lab.c_str()).x + label_size * 0.5f;
        };
        // Every label_every-th tile of a row is labelled, the row's first with all of its tile
        // dims where that fits before the next label, the others with the dims along the row:
        // labels wider than a tile (with a gap of half a character) ran into each other
        // ("c=0c=1c=2" over 5-pixel cells). Sized by the last tile's labels, the widest.
        dim_t label_every = 1;
        bool full_first = true;
        const float pitch = (tw + 1.0f) * z;
        if (pn.tiles_x * pn.tiles_y > 1) {
            float across = label_w(tile_label(pn.tiles_x - 1, pn.tiles_y - 1, true));
            if (across > pitch && label_size > kMinLabelPx) {
                label_size = std::max(kMinLabelPx, label_size * pitch / across);
                across = label_w(tile_label(pn.tiles_x - 1, pn.tiles_y - 1, true));
            }
            label_every = std::max<dim_t>(1, static_cast<dim_t>(std::ceil(across / pitch)));
            full_first = label_w(tile_label(pn.tiles_x - 1, pn.tiles_y - 1, false)) <=
                             static_cast<float>(label_every) * pitch ||
                         per_row == 1;
        }
        const dim_t slots_y = wraps * pn.tiles_y;
        for (dim_t sr = 0; sr < slots_y; ++sr) {
            const float ty0 = py + static_cast<float>(sr) * (th + 1.0f) * z;
            if (ty0 > clip.w || ty0 + th * z < clip.y) continue;
            for (dim_t sc = 0; sc < per_row; ++sc) {
                const float tx0 = px + static_cast<float>(sc) * (tw + 1.0f) * z;
                if (tx0 > clip.z || tx0 + tw * z < clip.x) continue;
                const dim_t tyi = sr / wraps, txi = (sr % wraps) * per_row + sc;
                if (txi >= pn.tiles_x) continue;
                // Above the tile, clear of a lesson's outline of its first row (lesson 17's
                // "c=0" was crossed by it).
                const float lift = highlight_thickness(z) + 1.0f;
                if (pn.tiles_x * pn.tiles_y > 1 && (z >= label_size + lift || sr == 0) &&
                    sc % label_every == 0) {
                    const std::string lab = tile_label(txi, tyi, sc > 0 || !full_first);
                    dl->AddText(font, label_size, ImVec2(tx0, ty0 - label_size - lift), P.dim_text,
                                lab.c_str());
                }
                // A row of tiles whose label (its TileY dims: "k=1") has no room above it goes
                // left of its first tile, in the gap between panels, where it fits there.
                if (sc == 0 && sr % wraps == 0 && pn.tiles_y > 1 &&
                    (sr > 0 ? z < label_size + lift : !full_first)) {
                    std::vector<dim_t> c(pn.shape.dims.size());
                    pn.shape.coord_of(app::linear_at(pn, txi, tyi, 0, 0), c);
                    std::string rl;
                    for (std::size_t d = 0; d < c.size(); ++d)
                        if (pn.roles[d] == app::Role::TileY && pn.shape.dims[d] > 1)
                            rl += (rl.empty() ? "" : " ") + pn.shape.names[d] + "=" +
                                  std::to_string(c[d]);
                    const float room = static_cast<float>(app::kPanelGap) * z * 0.9f;
                    float rs = label_size;
                    float w = font->CalcTextSizeA(rs, FLT_MAX, 0, rl.c_str()).x;
                    if (w * 1.15f > room && rs > kMinLabelPx) {
                        rs = std::max(kMinLabelPx, rs * room / (w * 1.15f));
                        w = font->CalcTextSizeA(rs, FLT_MAX, 0, rl.c_str()).x;
                    }
                    if (!rl.empty() && w * 1.15f <= room)
                        dl->AddText(font, rs, ImVec2(tx0 - w * 1.15f, ty0 + (th * z - rs) * 0.5f),
                                    P.dim_text, rl.c_str());
                }
                // Padding border (zeros).
                if (pn.pad_top + pn.pad_bottom + pn.pad_left + pn.pad_right > 0) {
                    for (dim_t r = 0; r < static_cast<dim_t>(th); ++r)
                        for (dim_t q = 0; q < static_cast<dim_t>(tw); ++q) {
                            if (r >= pn.pad_top && r < pn.pad_top + pn.rows && q >= pn.pad_left &&
                                q < pn.pad_left + pn.cols)
                                continue;
                            const ImVec2 a(tx0 + static_cast<float>(q) * z,
                                           ty0 + static_cast<float>(r) * z);
                            const ImVec2 b(a.x + z, a.y + z);
                            dl->AddRectFilled(a, b, P.padding);
                            dl->AddLine(a, b, P.grid);
                            if (z >= 6) dl->AddRect(a, b, P.grid);
                            if (text)
                                dl->AddText(font, fsz * 0.8f,
                                            ImVec2(a.x + z * 0.35f, a.y + z * 0.3f), P.dim_text,
                                            "0");
                        }
                }
                // Visible data cells of the tile.
                const float dx0 = tx0 + static_cast<float>(pn.pad_left) * z;
                const float dy0 = ty0 + static_cast<float>(pn.pad_top) * z;
                const dim_t r0 = std::max<dim_t>(0, static_cast<dim_t>((clip.y - dy0) / z));
                const dim_t r1 =
                    std::min<dim_t>(pn.rows, static_cast<dim_t>((clip.w - dy0) / z) + 1);
                const dim_t q0 = std::max<dim_t>(0, static_cast<dim_t>((clip.x - dx0) / z));
                const dim_t q1 =
                    std::min<dim_t>(pn.cols, static_cast<dim_t>((clip.z - dx0) / z) + 1);
                // Fills first, then the tile's grid as one line per row and column boundary (a
                // rectangle per cell made a 64 x 64 kernel panel at 6 px cells cost 100 ms a
                // frame of vertex work in a software rasterizer), then what goes over them:
                // phase outlines, the current step's outline, the digits.
                for (dim_t r = r0; r < r1; ++r)
                    for (dim_t q = q0; q < q1; ++q) {
                        const dim_t c = app::linear_at(pn, txi, tyi, r, q);
                        const auto cu = static_cast<std::size_t>(c);
                        const ImVec2 a(dx0 + static_cast<float>(q) * z,
                                       dy0 + static_cast<float>(r) * z);
                        const ImVec2 b(a.x + z, a.y + z);
                        dl->AddRectFilled(a, b, cell_colour(i, c));
                        if (!pn.padding_lane.empty() && pn.padding_lane[cu])
                            dl->AddLine(a, b, P.grid);
                    }
                if (z >= 6 && r1 > r0 && q1 > q0) {
                    const float gx0 = dx0 + static_cast<float>(q0) * z,
                                gx1 = dx0 + static_cast<float>(q1) * z,
                                gy0 = dy0 + static_cast<float>(r0) * z,
                                gy1 = dy0 + static_cast<float>(r1) * z;
                    for (dim_t r = r0; r <= r1; ++r) {
                        const float y = dy0 + static_cast<float>(r) * z + 0.5f;
                        dl->AddLine(ImVec2(gx0, y), ImVec2(gx1, y), P.grid);
                    }
                    for (dim_t q = q0; q <= q1; ++q) {
                        const float x = dx0 + static_cast<float>(q) * z + 0.5f;
                        dl->AddLine(ImVec2(x, gy0), ImVec2(x, gy1), P.grid);
                    }
                }
                for (dim_t r = r0; r < r1; ++r)
                    for (dim_t q = q0; q < q1; ++q) {
                        const dim_t c = app::linear_at(pn, txi, tyi, r, q);
                        const auto cu = static_cast<std::size_t>(c);
                        const bool current = (ps.flags[cu] & app::kCurrent) != 0;
                        const bool grouped = !pn.group.empty() && z >= 6;
                        if (!current && !grouped && !text) continue;
                        const ImVec2 a(dx0 + static_cast<float>(q) * z,
                                       dy0 + static_cast<float>(r) * z);
                        const ImVec2 b(a.x + z, a.y + z);
                        if (grouped) {
                            // Inside the cell, under its digits: the value stays readable.
                            const float g = group_outline_px(z), h = g * 0.5f + 1.0f;
                            dl->AddRect(ImVec2(a.x + h, a.y + h), ImVec2(b.x - h, b.y - h),
                                        group_colour(pn.group[cu]), 0, 0, g);
                        }
                        if (current) dl->AddRect(a, b, P.current, 0, 0, std::max(1.5f, z * 0.08f));
                        if (!text) continue;
                        const ImU32 col = cell_colour(i, c);
                        const ImU32 tc = luminance(col) > 0.5f ? IM_COL32(0, 0, 0, 255)
                                                               : IM_COL32(255, 255, 255, 255);
                        const std::string v = value_text(i, c, z);
                        if (!v.empty()) {
                            const ImVec2 ts = font->CalcTextSizeA(fsz, FLT_MAX, 0, v.c_str());
                            dl->AddText(font, fsz,
                                        ImVec2(a.x + (z - ts.x) * 0.5f, a.y + (z - ts.y) * 0.5f),
                                        tc, v.c_str());
                        }
                        if (!ps.count.empty() && z >= 34.0f) {
                            const std::string cnt = "x" + std::to_string(ps.count[cu]);
                            const float cs = std::max(9.0f, z * 0.26f);
                            dl->AddText(font, cs, ImVec2(a.x + 2, b.y - cs - 1), tc, cnt.c_str());
                        }
                    }
            }
        }
        // Padding cells read by the current step (im2col's zeros).
        for (const CellPos& cp : ps.current_pads) {
            const ImVec2 a(px + static_cast<float>(cp.x) * z, py + static_cast<float>(cp.y) * z);
            dl->AddRectFilled(a, ImVec2(a.x + z, a.y + z), c_current_pad);
            dl->AddRect(a, ImVec2(a.x + z, a.y + z), P.current, 0, 0, std::max(1.5f, z * 0.08f));
            if (text)
                dl->AddText(font, fsz * 0.8f, ImVec2(a.x + z * 0.35f, a.y + z * 0.3f), P.value_text,
                            "0");
        }
    }
    // Hovered / pinned cell outline.
    for (const app::Selection* sel : {&s.hover, &s.pinned}) {
        if (!sel->valid() || sel->panel != static_cast<int>(i)) continue;
        const CellPos cp = app::cell_pos(pn, sel->cell);
        const ImVec2 a(origin.x + static_cast<float>(cp.x) * z,
                       origin.y + static_cast<float>(cp.y) * z);
        dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(a.x + z + 1, a.y + z + 1), P.hovered, 0, 0,
                    3.0f);
    }
}

// Cells smaller than this (pixels) are not read from a projector: the fit then also tries one
// row of panels with the view's own row breaks lifted.
constexpr float kReadableCellPx = 10.0f;

void App::canvas() {
    const Palette& P = pal();
    if (s.request.view == "timings") {  // gui_timings.cpp
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
    // Titles above the panels: "X  input", then the shape and what rows, columns and tiles are.
    // The room they take is in pixels, so the panels are laid out again for the zoom.
    const float fs = ImGui::GetFontSize();
    const float margin = fs;
    std::vector<std::string> titles(view->panels.size());
    const auto make_titles = [&] {
        for (std::size_t i = 0; i < view->panels.size(); ++i) {
            const Panel& pn = view->panels[i];
            if (compact_titles)
                titles[i] = pn.name + "  " + app::short_title(pn.title);
            else
                titles[i] =
                    pn.name + "  " + pn.title + "\n" + shape_text(pn.shape) + "\n" + role_text(pn);
        }
    };
    make_titles();
    // A title wraps at its panel's slot and at the canvas's right edge.
    const float avail_x = size.x - 2 * margin, avail_y = size.y - 2 * margin;
    const auto wrap_of = [&](std::size_t i, float z) {
        const Panel& pn = view->panels[i];
        return std::max(std::min(static_cast<float>(pn.slot_width) * z - fs * 0.6f,
                                 avail_x - static_cast<float>(pn.x) * z),
                        fs * 8);
    };
    // The title as drawn at zoom z: compact titles are one line, cut with "..." at the slot.
    const auto shown = [&](std::size_t i, float z) {
        return compact_titles ? cut_to_width(font, fs, titles[i], wrap_of(i, z)) : titles[i];
    };
    // Right edge of the widest title line, from the view's left edge, at zoom z.
    const auto titles_right = [&](float z) {
        float r = 0;
        for (std::size_t i = 0; i < titles.size(); ++i)
            r = std::max(
                r, static_cast<float>(view->panels[i].x) * z +
                       font->CalcTextSizeA(fs, FLT_MAX, wrap_of(i, z), shown(i, z).c_str()).x);
        return r;
    };
    float top = 0;
    // Least room per panel for its title: 13 characters, less when a row has many panels.
    float slot_px = 0;
    const auto update_slot = [&] {
        int per_row = 0, in_row = 0;
        for (std::size_t i : app::placement(*view)) {
            in_row = view->panels[i].new_row ? 1 : in_row + 1;
            per_row = std::max(per_row, in_row);
        }
        slot_px = std::min(fs * 13.0f, (size.x - 2 * margin) / static_cast<float>(per_row));
    };
    update_slot();
    // Each row's titles get the room of its tallest (and the tile labels, "c=1", where any of
    // its panels has tiles): one room for every row, the tallest of all, left a band as tall as
    // a 5-line title above a row of 1-line titles (the fractal view of 20 channels at C0 = 8).
    // top: the tallest row's.
    std::vector<double> room(titles.size());
    const auto relayout = [&](float z) {
        const double min_slot = slot_px / z;
        app::layout_view(*view, 0, min_slot);
        top = 0;
        for (std::size_t i = 0; i < titles.size(); ++i) {
            const app::Panel& pn = view->panels[i];
            const float h = font->CalcTextSizeA(fs, FLT_MAX, wrap_of(i, z), shown(i, z).c_str()).y +
                            (pn.tiles_x * pn.tiles_y > 1 ? fs * 1.3f : fs * 0.3f);
            room[i] = h / z;
            top = std::max(top, h);
        }
        // Short of height (compact titles), rows apart by half a line of text, not 2 cells
        // (54 px of lesson 17's 332 at 1280x720 in presenter mode).
        app::layout_view(
            *view, top / z, min_slot,
            compact_titles ? std::min(app::kPanelGap * 0.5, 0.5 * fs / z) : app::kPanelGap * 0.5,
            &room);
    };
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
        app::CellBox whole;
        for (int it = 0; it < 3 && app::follow_box(*view, follow_st, 1e12, 1e12, whole); ++it) {
            const float zfit = 0.97f * std::min(avail_x / static_cast<float>(whole.width() + 0.5),
                                                avail_y / static_cast<float>(whole.height() + 0.5));
            if (zfit >= zf || zfit < need) break;
            zf = std::max(need, zfit);
            relayout(zf);
        }
        if (app::follow_box(*view, follow_st, avail_x / zf, avail_y / zf, box)) {
            s.zoom = zf;
            laid_out = true;
            // A band at the canvas's top for the titles pinned there (pin_title), so that they
            // never cover the step's cells.
            const float band = compact_titles ? fs * 1.3f : top;
            app::follow_pan(box, std::max<double>(view->width, titles_right(zf) / zf), view->height,
                            zf, avail_x, std::max(avail_y - band, avail_y * 0.5f), s.pan_x,
                            s.pan_y);
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
    app::Selection h;
    if (over) {
        const double cx = (io.MousePos.x - origin.x) / z, cy = (io.MousePos.y - origin.y) / z;
        for (std::size_t i = 0; i < view->panels.size(); ++i) {
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
    // Titles whose place scrolled off while their panel still shows (following the step, or
    // zoomed by hand) are pinned to the canvas's edge over a backdrop, after every panel's cells.
    struct Pinned {
        std::size_t panel;
        app::TitlePlace at;
        std::string text;
        ImVec2 size;
    };
    std::vector<Pinned> pinned;
    const app::CellBox visible{clip.x, clip.y, clip.z, clip.w};
    for (std::size_t i = 0; i < view->panels.size(); ++i) {
        const Panel& pn = view->panels[i];
        const ImVec2 tp(origin.x + static_cast<float>(pn.x) * z,
                        origin.y + static_cast<float>(pn.y - pn.title_room) * z);
        if (pn.hidden) continue;  // a stage of the lesson not revealed yet
        const std::string t = shown(i, z);
        const ImVec2 ts = font->CalcTextSizeA(fs, FLT_MAX, wrap_of(i, z), t.c_str());
        const app::CellBox box{tp.x, origin.y + static_cast<float>(pn.y) * z,
                               tp.x + static_cast<float>(pn.width) * z,
                               origin.y + static_cast<float>(pn.y + pn.height) * z};
        const app::TitlePlace at = app::pin_title(tp.x, tp.y, ts.x, ts.y, box, visible);
        if (at.pinned)
            pinned.push_back({i, at, t, ts});
        else
            dl->AddText(font, fs, tp, P.panel_text, t.c_str(), nullptr, wrap_of(i, z));
        // A one-line title is the short form: the hover gives the whole of it, with the shape.
        const ImVec2 m = ImGui::GetIO().MousePos;
        if (compact_titles && ImGui::IsWindowHovered() && m.x >= at.x && m.x < at.x + ts.x &&
            m.y >= at.y && m.y < at.y + ts.y)
            ImGui::SetTooltip("%s  %s\n%s\n%s", pn.name.c_str(), pn.title.c_str(),
                              shape_text(pn.shape).c_str(), role_text(pn).c_str());
        draw_panel(dl, i, origin, z, clip);
    }
    const ImU32 backdrop = (P.background & IM_COL32(255, 255, 255, 0)) | IM_COL32(0, 0, 0, 220);
    for (const Pinned& p : pinned) {
        dl->AddRectFilled(ImVec2(p.at.x - 2, p.at.y),
                          ImVec2(p.at.x + p.size.x + 4, p.at.y + p.size.y + 2), backdrop);
        dl->AddText(font, fs, ImVec2(p.at.x, p.at.y), P.panel_text, p.text.c_str(), nullptr,
                    wrap_of(p.panel, z));
    }
    lesson.draw_highlights(dl, *view, origin, z, lesson_highlight_colour(s.palette));
    if (lesson.active() || measure_read) measure_readability(origin, z, clip);
    // A lesson step whose fitted view leaves the cells it is about unreadable follows the step
    // (zoomed in to kFollowCellPx) from the next frame on: a class reads the step's digits.
    if (lesson.active() && fit_auto && !s.follow && read.ok < read.must &&
        fit_zoom < std::max(app::kFollowCellPx, read.need_z)) {
        s.follow = true;
        auto_followed = true;
    }
    dl->PopClipRect();
    ImGui::EndChild();
}

void App::open_dropped() {
    std::vector<std::string> files;
    files.swap(g_dropped);
    for (const std::string& f : files) {
        const std::string ext = std::filesystem::path(f).extension().string();
        if (ext == ".toml") {
            lesson.open(f, 0);  // a malformed lesson says so in the narration panel
            status = "opened " + f;
        } else if (ext == ".json") {
            if (lesson.active()) lesson.close();
            set_view("timings");
            show_results_file(*timings, f);
            status = "showing " + f;
        } else {
            status = f + ": not opened (a lesson is a .toml file, benchmark results a .json)";
        }
    }
}

void App::apply_settings(const Settings& set) {
    s.palette = 0;
    for (int i = 0; i < kNumPalettes; ++i)
        if (set.palette == kPaletteKeys[i]) s.palette = i;
    s.font_scale = set.font_scale;
    s.presenter = set.presenter;
    notes = set.notes;
}

Settings App::current_settings() const {
    Settings out;
    out.palette = kPaletteKeys[std::clamp(s.palette, 0, kNumPalettes - 1)];
    out.font_scale = std::clamp(s.font_scale, 0.6f, 3.0f);
    out.presenter = s.presenter;
    out.notes = notes;
    if (lesson.player.is_open()) {
        out.lesson = lesson.player.file();
        out.lesson_step = lesson.player.step();
    }
    out.view = s.request.view;
    out.problem = to_descriptor(s.request.problem);
    int w = 0, h = 0;
    glfwGetWindowSize(window, &w, &h);
    if (!glfwGetWindowMonitor(window) && w >= 320 && h >= 240) {  // not full screen
        out.window_width = std::min(w, 16384);
        out.window_height = std::min(h, 16384);
    }
    return out;
}

void App::frame(double dt) {
    ImGuiIO& io = ImGui::GetIO();
    io.FontGlobalScale = s.font_scale * (s.presenter ? 1.35f : 1.0f);
    poll(false);
    open_dropped();
    keyboard();
    if (view && s.playback.advance(dt, steps())) step_dirty = true;
    update_lesson();
    if (ex.sequence) {
        s.playback.paused = true;
        s.playback.scrub(ex.seq_next, steps());
        step_dirty = true;
    }
    update_step();
    update_lut();
    const Palette& P = pal();
    if (styled_palette != s.palette) {
        // Widgets (input fields, buttons, sliders) follow the palette's brightness: a dark
        // palette (high contrast) gets ImGui's dark widgets, so its light text never lands on a
        // light field.
        const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(P.background);
        const float luma = 0.2126f * bg.x + 0.7152f * bg.y + 0.0722f * bg.z;
        if (luma < 0.5f)
            ImGui::StyleColorsDark();
        else
            ImGui::StyleColorsLight();
        styled_palette = s.palette;
    }
    ImGui::GetStyle().Colors[ImGuiCol_WindowBg] = ImGui::ColorConvertU32ToFloat4(P.background);
    ImGui::GetStyle().Colors[ImGuiCol_Text] = ImGui::ColorConvertU32ToFloat4(P.panel_text);
    const bool side = show_sidebar && !s.presenter;
    // The timings view keeps only the lesson, view, display and window export in the sidebar
    // (sidebar): narrower, its charts get the width, unless a lesson's step list is shown.
    // A window under 1200 px wide (a 1024x768 projector) gets the narrow sidebar too: its
    // canvas keeps 720 of the 1024 px for the cells.
    const bool narrow =
        (s.request.view == "timings" && !lesson.active()) || io.DisplaySize.x < 1200.0f;
    const float sw = side ? (narrow ? 300.0f : 380.0f) * s.font_scale * content_scale : 0.0f;
    if (side) sidebar(sw);
    lesson.strip = s.presenter && !notes;
    // With the presenter window open the narration is there, and the canvas here keeps the
    // whole height (the projector shows no notes).
    const float lesson_h = notes_window
                               ? 0.0f
                               : lesson.panel_height(io.DisplaySize.x - sw, io.DisplaySize.y,
                                                     short_window() ? 0.3f : 0.5f);
    ImGui::SetNextWindowPos(ImVec2(sw, 0));
    ImGui::SetNextWindowSize(ImVec2(io.DisplaySize.x - sw, io.DisplaySize.y - lesson_h));
    ImGui::Begin("view", nullptr,
                 ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                     ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoBringToFrontOnFocus);
    header();
    if (s.presenter && !short_window())
        ImGui::TextDisabled(
            "presenter: space play  ←/→ step  G granularity  1-9,0 view  C palette  +/- font  "
            "F fit  Z follow  T narration  W notes window  F11 full screen  Esc leave");
    // The canvas fills the rest of the view window (canvas(), or the timings view's charts); it
    // records its rectangle (canvas_min, canvas_max).
    canvas();
    ImGui::End();
    if (!notes_window)
        lesson.panel(ImVec2(sw, io.DisplaySize.y - lesson_h),
                     ImVec2(io.DisplaySize.x - sw, lesson_h),
                     {P.panel_text, P.dim_text, P.good, P.bad, lesson_highlight_colour(s.palette),
                      P.background});
    // Enter or Escape in a text field: ImGui ends the edit in that frame; where the field still
    // holds the keyboard a frame later, it is taken away, so the view keys reach the view.
    if (leave_field > 0 && --leave_field == 0 && text_field_active())
        ImGui::SetWindowFocus(nullptr);
    if (show_help) {
        ImGui::Begin("keys", &show_help, ImGuiWindowFlags_AlwaysAutoResize);
        ImGui::TextUnformatted(
            "space      play / pause\n"
            "left/right step back / forward\n"
            "Home/End   first / last step\n"
            "up/down    speed\n"
            "G          granularity element / line / tile / whole\n"
            "L          loop\n"
            "1-9, 0     views; PgUp/PgDn previous / next\n"
            "F          fit to window\n"
            "Z          follow the step (zoomed in)\n"
            "C          palette\n"
            "P          presenter mode\n"
            "T          presenter: narration / strip\n"
            "W          presenter window (your screen)\n"
            "R          lesson: reveal the ? cells\n"
            "Tab        sidebar\n"
            "F11        full screen\n"
            "+/-        font size\n"
            "S          the canvas as PNG\n"
            "E          the canvas as GIF (a lesson step's steps)\n"
            "Esc        unpin / leave presenter\n"
            "PgDn/N     lesson: next step\n"
            "PgUp/B     lesson: previous step");
        ImGui::End();
    }
}

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

std::vector<unsigned char> read_back_buffer(int& w, int& h, GLFWwindow* win) {
    glfwGetFramebufferSize(win, &w, &h);
    std::vector<unsigned char> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    // OpenGL rows are bottom first.
    const std::size_t row = static_cast<std::size_t>(w) * 4;
    for (int y = 0; y < h / 2; ++y)
        std::swap_ranges(px.begin() + static_cast<std::ptrdiff_t>(y * row),
                         px.begin() + static_cast<std::ptrdiff_t>((y + 1) * row),
                         px.begin() + static_cast<std::ptrdiff_t>((h - 1 - y) * row));
    for (std::size_t i = 3; i < px.size(); i += 4) px[i] = 255;
    return px;
}

void make_parent(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
}

// The pixels an export writes: the whole window for a shot, else the canvas's rectangle alone,
// at the framebuffer's resolution.
std::vector<unsigned char> App::export_pixels(int& w, int& h) const {
    std::vector<unsigned char> px = read_back_buffer(w, h, window);
    if (ex.window) return px;
    const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
    const auto at = [](float v, float sc, int hi) {
        return std::clamp(static_cast<int>(std::lround(v * sc)), 0, hi);
    };
    const int x0 = at(canvas_min.x, scale.x, w), x1 = at(canvas_max.x, scale.x, w);
    const int y0 = at(canvas_min.y, scale.y, h), y1 = at(canvas_max.y, scale.y, h);
    if (x1 <= x0 || y1 <= y0) throw Error("export: the canvas has no pixels");
    std::vector<unsigned char> out(static_cast<std::size_t>(x1 - x0) *
                                   static_cast<std::size_t>(y1 - y0) * 4);
    const std::size_t row = static_cast<std::size_t>(x1 - x0) * 4;
    for (int y = y0; y < y1; ++y)
        std::memcpy(out.data() + static_cast<std::size_t>(y - y0) * row,
                    px.data() + (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) +
                                 static_cast<std::size_t>(x0)) *
                                    4,
                    row);
    w = x1 - x0;
    h = y1 - y0;
    return out;
}

// clean: this frame was drawn without the mouse (export_pending() when it began); the app's
// PNG and GIF exports wait for such a frame.
void App::after_render(bool clean) {
    if (!ex.window && !clean && (!ex.png.empty() || ex.sequence)) return;
    try {
        if (ex.canvas_grab) {
            int w = 0, h = 0;
            const auto px = read_back_buffer(w, h, window);
            // The canvas in framebuffer pixels (more than window units on a HiDPI screen).
            const ImVec2 fb = ImGui::GetIO().DisplayFramebufferScale;
            const auto at = [](float v, float scale, int lo, int hi) {
                return std::clamp(static_cast<int>(std::lround(v * scale)), lo, hi);
            };
            const int x0 = at(canvas_min.x, fb.x, 0, w), y0 = at(canvas_min.y, fb.y, 0, h);
            const int x1 = at(canvas_max.x, fb.x, x0, w), y1 = at(canvas_max.y, fb.y, y0, h);
            ex.grab_w = x1 - x0;
            ex.grab_h = y1 - y0;
            ex.grab.resize(static_cast<std::size_t>(ex.grab_w) *
                           static_cast<std::size_t>(ex.grab_h) * 4);
            for (int y = y0; y < y1; ++y)
                std::copy_n(px.begin() + (static_cast<std::ptrdiff_t>(y) * w + x0) * 4,
                            ex.grab_w * 4,
                            ex.grab.begin() + static_cast<std::ptrdiff_t>(y - y0) * ex.grab_w * 4);
            ex.canvas_grab = false;
        }
        if (!ex.png.empty()) {
            int w = 0, h = 0;
            auto px = export_pixels(w, h);
            make_parent(ex.png);
            write_png(ex.png, w, h, px);
            status = "wrote " + ex.png;
            offer_download(ex.png);
            ex.png.clear();
        }
        if (!ex.svg.empty()) {
            make_parent(ex.svg);
            write_file(ex.svg, svg());
            status = "wrote " + ex.svg;
            offer_download(ex.svg);
            ex.svg.clear();
        }
        if (ex.sequence && !ex.gif.empty()) {  // one GIF frame a step (gif_writer.hpp)
            int w = 0, h = 0;
            auto px = export_pixels(w, h);
            if (!ex.gif_out) {
                make_parent(ex.gif);
                ex.gif_out = std::make_unique<GifWriter>(ex.gif, gif_delay_cs(ex.gif_fps));
            }
            ex.gif_out->add(w, h, px);
            if (++ex.seq_next >= ex.seq_end) {
                ex.sequence = false;
                ex.gif_out->finish();
                status =
                    "wrote " + ex.gif + " (" + std::to_string(ex.gif_out->frames()) + " frames)";
                ex.gif_out.reset();
            }
        }
        if (ex.sequence && ex.gif.empty()) {
            int w = 0, h = 0;
            auto px = export_pixels(w, h);
            char name[64];
            std::snprintf(name, sizeof name, "/%s_%04lld.png", s.request.view.c_str(),
                          static_cast<long long>(ex.seq_next));
            const std::string path = ex.dir + name;
            make_parent(path);
            write_png(path, w, h, px);
            offer_download(path);
            ex.written.push_back(path);
            if (++ex.seq_next >= ex.seq_end) {
                ex.sequence = false;
                status = "wrote " + std::to_string(ex.written.size()) + " PNGs to " + ex.dir;
            }
        }
    } catch (const std::exception& e) {
        status = e.what();
        ex.png.clear();
        ex.svg.clear();
        ex.sequence = false;
        ex.gif_out.reset();  // removes the unfinished GIF's temporary file
    }
}

// [SECTION] the presenter window

// Its content: the lesson's notes (gui_lesson.cpp), or without a lesson the view's step and
// check; then the keys.
void App::draw_notes() {
    const Palette& P = pal();
    const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(P.background);
    if (0.2126f * bg.x + 0.7152f * bg.y + 0.0722f * bg.z < 0.5f)
        ImGui::StyleColorsDark();
    else
        ImGui::StyleColorsLight();
    ImGui::GetStyle().Colors[ImGuiCol_Text] = ImGui::ColorConvertU32ToFloat4(P.panel_text);
    // A shot's clock is fixed, so that its picture depends on the step alone.
    const double elapsed =
        headless ? 0.0
                 : std::chrono::duration<double>(std::chrono::steady_clock::now() - notes_opened)
                       .count();
    const std::string clock = headless ? "12:00   ·   0:00:00 since the presenter window opened"
                                       : clock_line(std::time(nullptr), elapsed);
    const LessonColours c{
        P.panel_text, P.dim_text, P.good, P.bad, lesson_highlight_colour(s.palette), P.background};
    lesson.notes(c, clock);
    if (!lesson.active() && view) {
        ImGui::TextWrapped("No lesson open: the %s view, step %lld of %lld.", view->name.c_str(),
                           static_cast<long long>(s.playback.step + 1),
                           static_cast<long long>(steps()));
        ImGui::TextWrapped("%s", view->caption.c_str());
        if (!view->check.empty()) ImGui::TextWrapped("check: %s", view->check.c_str());
    }
    ImGui::Separator();
    ImGui::PushStyleColor(ImGuiCol_Text, P.dim_text);
    ImGui::TextWrapped(
        "Keys here act as in the main window: PgDn / N next step, PgUp / B previous, R reveal, "
        "space play, left / right one step, Z follow, F fit, S the canvas as PNG, F11 full "
        "screen (the main window, on its monitor), W closes this window.");
    ImGui::PopStyleColor();
    if (ImGui::Button("close (W)")) notes_window = false;
}

// Opens or closes the presenter window as notes_window says, and draws its frame (after the
// main window's, outside its ImGui frame).
void App::present_notes() {
    if (presenter && (!notes_window || presenter->close_requested())) {
        presenter.reset();
        notes_window = false;
    }
    if (!notes_window) return;
    if (!presenter) {
        try {
            presenter = std::make_unique<PresenterWindow>(window, !headless, 1280, 800);
        } catch (const std::exception& e) {
            status = e.what();
            notes_window = false;
            return;
        }
        // Its keys are the app's, as if pressed in the main window (never a text field's).
        presenter->on_key = queue_app_key;
        notes_opened = std::chrono::steady_clock::now();
    }
    std::vector<unsigned char> px;
    int w = 0, h = 0;
    presenter->render([this] { draw_notes(); }, pal().background, notes_png.empty() ? nullptr : &px,
                      &w, &h);
    if (!notes_png.empty()) {
        try {
            make_parent(notes_png);
            write_png(notes_png, w, h, px);
            status = "wrote " + notes_png;
        } catch (const std::exception& e) {
            status = e.what();
        }
        notes_png.clear();
    }
}

void App::toggle_fullscreen() {
#ifdef __EMSCRIPTEN__
    fullscreen = web::toggle_fullscreen();  // the page's, through the browser (no monitors)
#else
    // Full screen on the monitor the window is on (the projector, where it was moved there).
    GLFWmonitor* mon = monitor_of(window);
    if (!mon) return;
    if (!fullscreen) {
        glfwGetWindowPos(window, &saved_x, &saved_y);
        glfwGetWindowSize(window, &saved_w, &saved_h);
        const GLFWvidmode* mode = glfwGetVideoMode(mon);
        glfwSetWindowMonitor(window, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
    } else {
        glfwSetWindowMonitor(window, nullptr, saved_x, saved_y, saved_w, saved_h, 0);
    }
    fullscreen = !fullscreen;
#endif
}

// [SECTION] window

std::string g_glfw_error;
bool g_glfw_ready = false;

bool init_glfw() {
    if (g_glfw_ready) return true;
    glfwSetErrorCallback([](int, const char* msg) { g_glfw_error = msg; });
    g_glfw_ready = glfwInit() == GLFW_TRUE;
    return g_glfw_ready;
}

// A window with an ImGui context and its backends; torn down in reverse.
class Window {
  public:
    Window(int w, int h, bool visible, const char* title) {
        if (!init_glfw()) throw Error("no display (DISPLAY unset or unreachable): " + g_glfw_error);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
        glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
        glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
        glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
        win_ = glfwCreateWindow(w, h, title, nullptr, nullptr);
        if (!win_) throw Error("cannot open an OpenGL 3.3 window: " + g_glfw_error);
        glfwMakeContextCurrent(win_);
        glfwSwapInterval(visible ? 1 : 0);
        // The monitor's content scale (2 on most high-DPI screens): fonts and widgets grow by it,
        // so text keeps its physical size. Bounded: a driver's odd value must not make it absurd.
#ifdef __EMSCRIPTEN__
        scale_ = web::device_pixel_ratio();  // (emscripten's GLFW 3.2 has no content scale)
#else
        float ys = 1.0f;
        glfwGetWindowContentScale(win_, &scale_, &ys);
#endif
        if (!(scale_ >= 1.0f)) scale_ = 1.0f;
        scale_ = std::min(scale_, 4.0f);
        IMGUI_CHECKVERSION();
        ImGui::CreateContext();
        font_ = setup_app_context(18.0f * scale_);
        ImGui::GetStyle().ScaleAllSizes(scale_);
        ImGui_ImplGlfw_InitForOpenGL(win_, true);
        glfwSetKeyCallback(win_, key_callback);    // ImGui's, through the input queue
        glfwSetCharCallback(win_, char_callback);  // (deliver_input)
        glfwSetDropCallback(win_, drop_callback);  // a lesson or results file dropped on it
#ifdef __EMSCRIPTEN__
        ImGui_ImplOpenGL3_Init("#version 300 es");  // WebGL 2
#else
        ImGui_ImplOpenGL3_Init("#version 330");
#endif
    }
    ~Window() {
        ImGui_ImplOpenGL3_Shutdown();
        ImGui_ImplGlfw_Shutdown();
        ImGui::DestroyContext();
        glfwDestroyWindow(win_);
    }
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;
    GLFWwindow* get() const {
        return win_;
    }
    ImFont* font() const {
        return font_;
    }
    float content_scale() const {
        return scale_;
    }

  private:
    GLFWwindow* win_ = nullptr;
    ImFont* font_ = nullptr;
    float scale_ = 1.0f;
};

// One frame: UI, render, exports (before the swap, from the back buffer), swap.
void render_frame(App& a, double dt, bool swap = true) {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // An export of the canvas is read from a frame without the mouse: nothing hovered, no
    // tooltip, no linked cells.
    const bool clean = a.export_pending();
    if (clean) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    if (deliver_input(a.window)) a.leave_field = 2;
    ImGui::NewFrame();
    a.frame(dt);
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(a.window, &w, &h);
    glViewport(0, 0, w, h);
    const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(a.pal().background);
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    a.after_render(clean);
    if (swap) glfwSwapBuffers(a.window);
    a.present_notes();
}

app::ViewRequest request_of(const std::string& view, const std::string& desc) {
    app::ViewRequest r;
    r.view = view;
    r.problem = parse_descriptor(desc);
    r.problem.check();
    return r;
}

}  // namespace

bool display_available() {
    return init_glfw();
}

void run_gui(const GuiOptions& o) {
    app::ViewRequest r = request_of(o.view, o.problem);
    // The settings of the last run (a damaged file: the defaults, said on the status line).
    const std::string settings_file = settings_path();
    std::string warning;
    const Settings st = load_settings(settings_file, &warning);
    // On the heap, owned by the frame function: in the browser run_frames unwinds this stack
    // frame while the frames go on.
    const auto w = std::make_shared<Window>(st.window_width, st.window_height, true, "ConvLab");
    const auto ap = std::make_shared<App>();
    App& a = *ap;
    a.window = w->get();
    a.font = w->font();
    a.content_scale = w->content_scale();
    a.measure_read = true;
    a.apply_settings(st);
    if (!warning.empty()) a.status = "settings: " + warning;
    a.s.presenter = a.s.presenter || o.presenter;
    a.s.follow = o.follow;
    if (o.presenter) a.toggle_fullscreen();
    std::string lesson_file = o.lesson;
    std::size_t lesson_step = o.lesson_step;
    if (o.restore_last && !st.lesson.empty() && std::filesystem::is_regular_file(st.lesson)) {
        lesson_file = st.lesson;
        lesson_step = st.lesson_step;
    }
    a.s.request = r;
    a.edit = r.problem;
    a.s.playback.step = o.step;  // kept (clamped) when the view arrives
    a.s.playback.granularity = o.granularity;
    if (!lesson_file.empty()) a.lesson.open(lesson_file, lesson_step);
    if (!a.lesson.player.is_open()) a.request(r);  // no lesson (or a malformed one): the view
    // (Captures destroyed in reverse: the App before its window.)
    auto frame = [w, ap, on_link = o.on_link, last = std::chrono::steady_clock::now(),
                  link = std::string()]() mutable {
        App& fa = *ap;
#ifdef __EMSCRIPTEN__
        web::fit_canvas();  // the canvas follows the browser window's size
        glfwPollEvents();   // the browser calls each frame: no waiting here
#else
        // Idle (paused, nothing building): wait for events instead of spinning.
        if (fa.s.playback.paused && !fa.job && !fa.ex.sequence)
            glfwWaitEventsTimeout(0.1);
        else
            glfwPollEvents();
#endif
        const auto now = std::chrono::steady_clock::now();
        const double dt = std::chrono::duration<double>(now - last).count();
        last = now;
        render_frame(fa, dt);
        if (on_link)
            if (std::string now_link = fa.link(); now_link != link) on_link(link = now_link);
    };
#ifdef __EMSCRIPTEN__
    web::run_frames(std::move(frame));  // never returns: the browser calls frame() from now on
#else
    while (!glfwWindowShouldClose(a.window)) frame();
    // Kept for the next start; a failure is said, never lost silently, and never fails the run.
    try {
        save_settings(a.current_settings(), settings_file);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "convlab: settings not saved: %s\n", e.what());
    }
#endif
}

namespace {

// CPU time of the whole process (all its threads) in milliseconds.
double process_cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// The median of v (sorted in place).
double median_of(std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// [SECTION] key scripts (ShotOptions::keys)

// Runs a key script in the app: the keys between two focus words arrive at once (GLFW's
// callbacks called as a fast typist's keys would call them), then frames until every key has
// been handed out and the view and the lesson step they asked for are built.
void run_key_script(App& a, const std::vector<ScriptKey>& script) {
    const auto settle = [&] {
        // (and the exports they started: S, E)
        for (int i = 0; i < 100000 && (input_pending() || a.ex.sequence || !a.ex.png.empty()); ++i)
            render_frame(a, 0.0);
        for (int i = 0; i < 3; ++i) {
            a.update_lesson(true);
            a.poll(true);
            render_frame(a, 0.0);
        }
    };
    for (const ScriptKey& k : script) {
        if (!k.focus.empty()) {
            settle();
            a.focus_field = k.focus;
            for (int i = 0; i < 4 && !text_field_active(); ++i) render_frame(a, 0.0);
            if (!text_field_active())
                throw Error("--keys focus:" + k.focus +
                            ": the field did not take the keyboard (the sidebar's fields are "
                            "hidden in presenter mode)");
            continue;
        }
        if (!k.drop.empty()) {
            settle();
            const char* paths[] = {k.drop.c_str()};
            drop_callback(a.window, 1, paths);
            continue;
        }
        if (k.notes) {
            if (!a.presenter) settle();  // (a W before it opens the window at the frame's end)
            if (!a.presenter)
                throw Error("--keys notes:...: the presenter window is not open (W opens it)");
            a.presenter->key_event(k.key, GLFW_PRESS);
            a.presenter->key_event(k.key, GLFW_RELEASE);
            continue;
        }
        key_callback(a.window, k.key, 0, GLFW_PRESS, 0);
        if (k.ch) char_callback(a.window, k.ch);
        key_callback(a.window, k.key, 0, GLFW_RELEASE, 0);
    }
    settle();
}

FrameReport shot_in(Window& w, const ShotOptions& o) {
    App a;
    a.window = w.get();
    a.font = w.font();
    a.measure_read = true;
    a.headless = true;
    a.ex.window = !o.canvas_only;
    a.notes_window = !o.notes_out.empty();
    a.s.presenter = o.presenter;
    a.s.palette = o.palette;
    a.s.follow = o.follow;
    a.s.playback.granularity = o.granularity;
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_ms();
    if (!o.lesson.empty()) {
        // The lesson step exactly as the player shows it (gui_lesson.cpp).
        a.lesson.open(o.lesson, o.lesson_step);
        a.update_lesson(true);  // evaluates the step and requests its view
        if (!a.lesson.plan()) throw Error(a.lesson.player.error());
        a.poll(true);
        a.update_lesson(true);  // its step range and highlights on the built view
        if (o.reveal && !a.lesson.set_revealed(true))
            throw Error("--reveal: step " + std::to_string(o.lesson_step + 1) + " of " + o.lesson +
                        " hides no cells");
    } else {
        app::ViewRequest r = request_of(o.view, o.problem);
        r.data = o.data;
        r.c0 = o.c0;
        a.request(r);
        a.poll(true);
    }
    FrameReport rep;
    rep.build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rep.build_cpu_ms = process_cpu_ms() - cpu0;
    if (!a.view) throw Error("view " + o.view + ": " + a.s.error);
    const dim_t n = a.steps();
    if (o.lesson.empty() && (n > 0 || o.step != 0) && (o.step < 0 || o.step >= n))
        throw Error("--step " + std::to_string(o.step) + ": the " + o.view + " view has " +
                    std::to_string(n) + " steps at granularity " + granularity_name(o.granularity) +
                    " (0 to " + std::to_string(n - 1) + ")");
    if (o.lesson.empty()) a.s.playback.step = o.step;
    a.step_dirty = true;
    if (o.view == "timings")
        prepare_timings_shot(*a.timings, {o.results, o.bench_quick, o.frames == 0, o.chart,
                                          o.hover_panel, o.hover_cell, o.peer});
    if (o.hover_panel >= 0 && o.view != "timings") {
        if (o.hover_panel >= static_cast<int>(a.view->panels.size()) || o.hover_cell < 0 ||
            o.hover_cell >= a.view->panels[static_cast<std::size_t>(o.hover_panel)].numel())
            throw Error("--hover: no such cell in the " + o.view + " view");
        a.s.hover = {o.hover_panel, o.hover_cell};
        a.s.hover_forced = true;
    }
    // Every option is checked before the first file is written: a command that fails writes
    // nothing.
    const dim_t to = o.seq_to < 0 ? n - 1 : o.seq_to;
    if ((!o.sequence_dir.empty() || !o.gif.empty()) &&
        (o.seq_from < 0 || o.seq_from > to || to >= n))
        throw Error("steps " + std::to_string(o.seq_from) + " to " + std::to_string(to) + ": the " +
                    o.view + " view has steps 0 to " + std::to_string(n - 1));
    // A few frames settle ImGui's layout (auto-sized items measure themselves on frame 1; a
    // lesson step that is unreadable fitted follows the step from the next frame on).
    for (int i = 0; i < 4; ++i) {
        const auto f0 = std::chrono::steady_clock::now();
        const double c0 = process_cpu_ms();
        render_frame(a, 0.0);
        glFinish();
        if (i == 0) {  // the fit and every panel's texture: what a new view costs before it shows
            rep.first_frame_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0)
                    .count();
            rep.first_frame_cpu_ms = process_cpu_ms() - c0;
        }
    }
    if (!o.keys.empty()) {
        run_key_script(a, parse_key_script(o.keys));
        rep.state = "view " + a.s.request.view + ", problem " + to_descriptor(a.s.request.problem) +
                    ", step " + std::to_string(a.s.playback.step);
        if (a.lesson.player.is_open())
            rep.state += ", lesson step " + std::to_string(a.lesson.player.step() + 1) + " of " +
                         std::to_string(a.lesson.player.num_steps());
        rep.state += a.notes_window ? ", presenter window open" : ", presenter window closed";
        if (!a.s.error.empty()) rep.state += ", error: " + a.s.error;
    }
    rep.canvas_x = a.canvas_min.x;
    rep.canvas_y = a.canvas_min.y;
    rep.canvas_w = a.canvas_size.x;
    rep.canvas_h = a.canvas_size.y;
    rep.drawn_w = a.drawn_size.x;
    rep.drawn_h = a.drawn_size.y;
    rep.cell_px = a.s.zoom;
    rep.must_read = a.read.must;
    rep.readable = a.read.ok;
    rep.text_px = a.read.text_px;
    rep.followed = a.s.follow;
    if (a.s.request.view == "timings") rep.timings_status = timings_status(*a.timings);
    if (!o.out.empty()) {
        a.ex.png = o.out;
        render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (o.canvas_image) {
        a.ex.canvas_grab = true;
        render_frame(a, 0.0);
        rep.image_w = a.ex.grab_w;
        rep.image_h = a.ex.grab_h;
        rep.image = std::move(a.ex.grab);
    }
    if (!o.svg.empty()) {
        a.ex.svg = o.svg;
        render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (!o.sequence_dir.empty() || !o.gif.empty()) {
        if (!o.sequence_dir.empty()) a.ex.dir = o.sequence_dir;
        a.ex.gif = o.gif;
        a.ex.gif_fps = o.gif_fps;
        a.ex.sequence = true;
        a.ex.seq_next = o.seq_from;
        a.ex.seq_end = to + 1;
        while (a.ex.sequence) render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (!o.notes_out.empty()) {
        if (!a.presenter)
            throw Error("--notes-out: the presenter window did not open: " + a.status);
        a.status.clear();
        a.notes_png = o.notes_out;
        render_frame(a, 0.0);
        if (!a.status.starts_with("wrote")) throw Error(a.status);
    }
    if (o.frames > 0) {
        // Frames with a new step each (step_change) or none, timed by the wall clock and by the
        // process's CPU time: the medians and the wall clock's max.
        const auto run = [&](bool step_change, double& median, double& max, double& cpu) {
            std::vector<double> ms, cpu_ms;
            for (int i = 0; i < o.frames; ++i) {
                const auto f0 = std::chrono::steady_clock::now();
                const double c0 = process_cpu_ms();
                if (step_change) {
                    a.s.playback.step_forward(n);  // the worst case: a new step every frame
                    a.step_dirty = true;
                }
                render_frame(a, 0.0);
                glFinish();
                ms.push_back(
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f0)
                        .count());
                cpu_ms.push_back(process_cpu_ms() - c0);
            }
            median = median_of(ms);
            max = ms.back();
            cpu = median_of(cpu_ms);
        };
        rep.frames = o.frames;
        run(true, rep.median_ms, rep.max_ms, rep.cpu_median_ms);
        // The same number of frames without a step change (hovering, panning, idle playback).
        run(false, rep.still_median_ms, rep.still_max_ms, rep.still_cpu_median_ms);
    }
    return rep;
}

}  // namespace

void check_key_script(const std::string& keys) {
    (void)parse_key_script(keys);
}

FrameReport shot(const ShotOptions& o) {
    if (!o.out.empty()) check_writable(o.out);
    if (!o.notes_out.empty()) check_writable(o.notes_out);
    Window w(o.width, o.height, false, "ConvLab shot");
    return shot_in(w, o);
}

std::vector<FrameReport> shots(const std::vector<ShotOptions>& list) {
    std::vector<FrameReport> r;
    if (list.empty()) return r;
    for (const auto& o : list)
        if (!o.out.empty()) check_writable(o.out);
    Window w(list[0].width, list[0].height, false, "ConvLab demo");
    for (const auto& o : list) {
        throw_if_cancelled();  // an interrupt ends a series between two pictures
        glfwSetWindowSize(w.get(), o.width, o.height);
        r.push_back(shot_in(w, o));
    }
    return r;
}

void check_writable(const std::string& path) {
    check_output_path(path);
}

void write_png(const std::string& path, int w, int h, const std::vector<unsigned char>& rgba) {
    OutputFile file(path);  // stb writes by name: into the temporary, renamed at commit
    if (!stbi_write_png(file.temp_path().c_str(), w, h, 4, rgba.data(), w * 4))
        file.fail("the PNG encoder failed");
    file.commit();
}

// [SECTION] xvfb-run

namespace {
std::vector<std::string> g_args;
}

void set_program_args(int argc, char** argv) {
    g_args.assign(argv, argv + argc);
}

int rerun_under_xvfb() {
    if (std::getenv("CONVLAB_UNDER_XVFB"))
        throw Error("no display even under xvfb-run (" + g_glfw_error + ")");
    if (g_args.empty()) throw Error("no display (DISPLAY unset or unreachable)");
    if (::access("/usr/bin/xvfb-run", X_OK) != 0)
        throw Error(
            "no display (DISPLAY unset or unreachable) and xvfb-run is not installed "
            "(apt-get install xvfb xauth), or run under a display");
    char self[4096];
    const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) throw Error("no display, and cannot find this program to re-run it");
    self[len] = 0;
    // The program's own status comes back in a file (report_status); xvfb-run's own messages go
    // to another, shown only when the program did not get as far as reporting its status (the
    // program's stderr is handed down as a descriptor number, see adopt_stderr).
    char status_file[] = "/tmp/convlab-status-XXXXXX";
    const int fd = ::mkstemp(status_file);
    if (fd >= 0) ::close(fd);
    char xvfb_err[] = "/tmp/convlab-xvfb-err-XXXXXX";
    const int efd = ::mkstemp(xvfb_err);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        if (fd >= 0) ::unlink(status_file);
        if (efd >= 0) ::unlink(xvfb_err);
        throw Error("no display, and cannot start xvfb-run");
    }
    if (pid == 0) {
        ::setenv("CONVLAB_UNDER_XVFB", "1", 1);
        if (fd >= 0) ::setenv("CONVLAB_XVFB_STATUS", status_file, 1);
        if (efd >= 0) {
            const int keep = ::dup(2);
            if (keep >= 0) {
                ::setenv("CONVLAB_STDERR_FD", std::to_string(keep).c_str(), 1);
                ::dup2(efd, 2);
            }
            ::close(efd);
        }
        std::vector<std::string> argv = {"xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", self};
        argv.insert(argv.end(), g_args.begin() + 1, g_args.end());
        std::vector<char*> cargv;
        for (auto& s : argv) cargv.push_back(s.data());
        cargv.push_back(nullptr);
        ::execv("/usr/bin/xvfb-run", cargv.data());
        std::_Exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int own = -1;  // the program's status, when it got as far as reporting it
    if (fd >= 0) {
        if (std::FILE* f = std::fopen(status_file, "r")) {
            if (std::fscanf(f, "%d", &own) != 1) own = -1;
            std::fclose(f);
        }
        ::unlink(status_file);
    }
    if (efd >= 0) {
        if (own < 0)
            if (std::FILE* f = std::fopen(xvfb_err, "r")) {
                char buf[4096];
                std::size_t n = 0;
                while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) std::fwrite(buf, 1, n, stderr);
                std::fclose(f);
            }
        ::close(efd);
        ::unlink(xvfb_err);
    }
    if (own >= 0) return own;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void adopt_stderr() {
    const char* s = std::getenv("CONVLAB_STDERR_FD");
    if (!s) return;
    char* end = nullptr;
    const long fd = std::strtol(s, &end, 10);
    if (end != s && *end == 0 && fd > 2 && ::fcntl(static_cast<int>(fd), F_GETFD) != -1) {
        ::dup2(static_cast<int>(fd), 2);
        ::close(static_cast<int>(fd));
    }
    ::unsetenv("CONVLAB_STDERR_FD");
}

int report_status(int status) {
    if (const char* path = std::getenv("CONVLAB_XVFB_STATUS"))
        if (std::FILE* f = std::fopen(path, "w")) {
            std::fprintf(f, "%d\n", status);
            std::fclose(f);
        }
    return status;
}

}  // namespace convlab::ui
