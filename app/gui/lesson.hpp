// The lesson player's ImGui part (internal to the app's ui library): the lesson section of the
// sidebar, the narration panel under the canvas (narration, highlighted values, checks passed or
// failed, errors), the highlight outlines on the canvas, and the step keys (PgDn / N next step,
// PgUp / B previous). The state lives in app::LessonPlayer (lesson_player.hpp, window-free);
// gui.cpp's App owns one LessonUi and calls it from a few hooks.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "imgui.h"
#include "model/lesson_player.hpp"

namespace convlab::ui {

struct LessonColours {
    ImU32 text = 0, dim = 0, good = 0, bad = 0, highlight = 0, background = 0;
};

// The highlight outline colour of a palette (0 default, 1 high contrast, 2 colour-blind safe).
ImU32 lesson_highlight_colour(int palette);

// Thickness (px) of a highlighted cell's outline at z px a cell; the outline reaches that far
// outside the cell, so a tile label above the cell sits clear of it.
inline float highlight_thickness(float z) {
    return std::clamp(z * 0.12f, 2.0f, 5.0f);
}

class LessonUi {
  public:
    app::LessonPlayer player;
    // Presenter mode: the narration panel shrinks to a one-line strip (the step, its checks and
    // "T notes") so that the projected canvas keeps the height for the cells; T opens the whole
    // narration again. Set by the App every frame.
    bool strip = false;

    // A lesson is open, or a lesson failed to load (its error is shown).
    bool active() const { return player.is_open() || !player.error().empty(); }
    // Opens a lesson at step `step` (0-based); lists its directory's lessons when none are listed.
    // A malformed lesson leaves active() with error() set; never throws.
    void open(const std::string& file, std::size_t step = 0);
    void close();

    using RequestFn = std::function<void(const app::ViewRequest&)>;
    // Once a frame (after the playback advanced): takes a finished step evaluation and applies
    // its plan (view request, granularity, the step it opens on, fit), keeps the playback
    // inside the step's range, and resolves the highlights for the view shown. wait: block
    // until the evaluation ends (shots).
    void update(app::AppState& s, const app::ViewModel* view, dim_t view_steps, bool& step_dirty,
                const RequestFn& request, bool wait = false);
    // One key press (pressed(key): is it that key): the step keys, and R reveals. Returns true
    // when a lesson is active (then PgUp / PgDn are the lesson's).
    bool keyboard(const std::function<bool(int)>& pressed);
    // The lesson section of the sidebar.
    void sidebar(float width);
    // Height of the narration panel for a window of height h, at most max_share of it (0 when
    // no lesson is active).
    float panel_height(float width, float h, float max_share) const;
    void panel(ImVec2 pos, ImVec2 size, const LessonColours& c);
    // The presenter window's notes, into the current ImGui window: the step (n of N), the next
    // step's title, the narration in full (with the answers the class is predicting), the
    // highlighted values, the checks passed or failed, buttons to step and reveal, `clock` and
    // the keys.
    void notes(const LessonColours& c, const std::string& clock);
    // Outlines of the highlighted cells on the canvas (origin and z as the canvas draws).
    void draw_highlights(ImDrawList* dl, const app::ViewModel& v, ImVec2 origin, float z,
                         ImU32 colour) const;
    // The highlighted cells of view v, per panel (nullptr: none resolved for v).
    const std::vector<std::vector<dim_t>>* highlights(const app::ViewModel& v) const {
        return &v == hl_for_ && hl_.size() == v.panels.size() ? &hl_ : nullptr;
    }
    // The step's range of map steps as text ("steps 0-4 of 5"; "" none).
    std::string range_text(dim_t view_steps) const;

    const app::StepPlan* plan() const { return plan_ ? plan_.get() : nullptr; }

    // Predict, then reveal: a step's 'hide' cells stay "?" until revealed (R, or the reveal
    // button); every step opens hidden again.
    bool hiding() const { return plan_ && !plan_->hidden.empty() && !revealed_; }
    bool revealed() const { return revealed_; }
    // Reveals (or hides again) the step's hidden cells; true when that changed what is drawn.
    bool set_revealed(bool on);
    // After compute_step: marks the step's hidden cells of the view shown (no-op when revealed).
    void hide(const app::ViewModel& v, app::StepState& st);

  private:
    // A timings step measures its problem live, in the app's Timings panel (gui_timings.hpp).
    void start_timings(bool wait);
    std::shared_ptr<const app::StepPlan> plan_;
    bool timings_started_ = false;  // a run this player started may be under way
    std::string timings_note_;      // why a timings step could not start its run ("" fine)
    std::uint64_t applied_ = 0;
    const app::ViewModel* hl_for_ = nullptr;
    std::vector<std::vector<dim_t>> hl_;
    const app::ViewModel* hidden_for_ = nullptr;
    std::vector<std::vector<dim_t>> hidden_;
    bool revealed_ = false;
    double last_reload_check_ = 0;  // ImGui time of the last look at the file's mtime
    bool fit_pending_ = false;
};

}  // namespace convlab::ui
