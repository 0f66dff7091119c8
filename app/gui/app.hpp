// Internal to the desktop app (gui/*.cpp, export/view_*.cpp): the App, its palettes and textures,
// the window. The public interface is gui/gui.hpp.
#pragma once

#include "gui/gui.hpp"

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
#include "export/gif_writer.hpp"
#include "export/view_drawing.hpp"
#include "gui/input.hpp"
#include "gui/lesson.hpp"
#include "gui/presenter.hpp"
#include "gui/timings.hpp"
#include "lesson/lesson.hpp"
#include "model/link.hpp"
#include "model/settings.hpp"
#include "model/theme.hpp"
#ifdef __EMSCRIPTEN__
#include "web/web_glue.hpp"
#endif
#include "platform/display.hpp"

namespace convlab::ui {

namespace fs = std::filesystem;

// A file the user asked for: in the browser, where it was written into the page's memory file
// system, it is also handed to the user as a download.
inline void offer_download([[maybe_unused]] const std::string& path) {
#ifdef __EMSCRIPTEN__
    web::download(path);
#endif
}

using app::CellPos;
using app::Panel;
using app::ViewModel;

// [SECTION] palettes and colours (palette.cpp)

struct Palette {
    const char* name;
    ImU32 background, panel_text, dim_text, cell, pending, padding, positive, negative, current,
        linked, hovered, grid, value_text, good, bad;
};

constexpr int kNumPalettes = 3;
extern const char* const kPaletteKeys[kNumPalettes];
// The palettes: the built-in ones as the theme files override them (load_palettes).
const std::vector<Palette>& palettes();
ImU32 mix(ImU32 a, ImU32 b, float t);
float luminance(ImU32 c);
// t as drawn in `width` pixels at font size `size`: whole, or cut with "..." where it is wider.
std::string cut_to_width(const ImFont* font, float size, const std::string& t, float width);
// The outline colour of cell group g (the stride phases of dX), in every palette.
ImU32 group_colour(std::uint8_t g);
// A group outline's thickness in a cell of z px: inside the cell, clear of most of its digits.
float group_outline_px(float z);

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
    // A step's redraw, kept from one step to the next (no allocation per step): a mark per
    // texel of level 0 (a texel listed once without sorting the list; all 0 between redraws),
    // the texels changed at a level and at the next, and each row's first and last changed
    // texel (lo ~0u: the row is untouched) with the list of rows touched.
    std::vector<std::uint8_t> mark;
    std::vector<std::uint32_t> at, next, row_lo, row_hi, rows;
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
extern std::vector<std::string> g_dropped;
void drop_callback(GLFWwindow*, int count, const char** paths);

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
    bool measure_read = false;  // measure `read` every frame, not only in a lesson (shots)
    // A box the page draws over the window's top right corner (the browser's "copy link" bar),
    // in pixels: the header's lines beside it end before it, so that it never covers their
    // text. 0 x 0: none (the desktop).
    ImVec2 corner{0, 0};
    // The width the header's current line leaves free at its right end: the corner's, while the
    // line starts above the corner's bottom.
    float corner_room() const {
        return corner.x > 0 && ImGui::GetCursorScreenPos().y < corner.y ? corner.x : 0.0f;
    }
    // Text wrapped at the window's right edge, or before the corner beside it.
    void wrapped(const std::string& text);
    bool auto_followed = false;  // following because a lesson step's fit was unreadable
    // F (or the sidebar's fit) pressed outside a lesson: presenter mode shows the fit even where
    // its digits are unreadable, until Z or presenter mode is turned on again.
    bool fit_chosen = false;
    bool notes = false;  // presenter mode: the whole narration shown (T), not the strip
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
        // Past this many cells to read the view is unreadable whatever the zoom (and measuring
        // each would cost a frame).
        constexpr long long kMaxMust = 20000;
        if (!lesson.highlights(*view)) {
            // Without highlights the cells to read are the step's current cells, counted where
            // they are (a large view's step lights tens of thousands: copying and sorting them
            // again at every frame cost more than the frame's drawing).
            const std::vector<bool> in = step_panels();
            long long count = 0;
            for (std::size_t i = 0; i < view->panels.size() && i < st.current.size(); ++i)
                if (!view->panels[i].hidden && in[i])
                    count += static_cast<long long>(st.current[i].size());
            if (count == 0)
                for (const Panel& pn : view->panels) count += pn.numel();
            if (count > kMaxMust) {
                read.must = count;
                read.need_z = 64.0f;
                return;
            }
        }
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
    // Panel i's painting at z px a cell (its colours, digits, font): the canvas's and the SVG's.
    app::PanelPaint panel_paint(std::size_t i, float z) const;
    app::TitlePaint title_paint(bool compact, float right) const;
    // The text primitives of prims (panel i's title), placed from (px, py), appended to `to`.
    static void record_titles(std::vector<TitleLine>& to, std::size_t i,
                              const std::vector<app::DrawPrim>& prims, float px, float py);
    void replay(ImDrawList* dl, std::size_t i, const std::vector<app::DrawPrim>& prims);
    std::vector<app::DrawPrim> painted;  // the panel being drawn (kept: no allocation per frame)
    // The panels' primitives the canvas drew in the last frame, and those of the last SVG.
    app::PrimCounts canvas_prims;
    mutable app::PrimCounts svg_prims;
    // The panels' title lines the canvas drew in the last frame, and those of the last SVG.
    std::vector<TitleLine> canvas_titles;
    mutable std::vector<TitleLine> svg_titles;
    void texture(std::size_t i);
    void after_render(bool clean);
    std::string svg() const;
    void toggle_fullscreen();
    // Following the step on or off; off is the fit (F), which presenter mode then keeps.
    void set_follow(bool on) {
        s.follow = on;
        fit_auto = true;
        fit_chosen = !on;
        if (!on) s.zoom = 0;
    }
};

using app::role_text;
using app::shape_text;

// [SECTION] window (window.cpp)

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
void render_frame(App& a, double dt, bool swap = true);
app::ViewRequest request_of(const std::string& view, const std::string& desc);
// Creates the folder a file is to be written in.
void make_parent(const std::string& path);

}  // namespace convlab::ui
