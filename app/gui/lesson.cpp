// The lesson player's ImGui part (gui/lesson.hpp). Index:
//   [SECTION] opening and applying a step
//   [SECTION] keys and the sidebar section
//   [SECTION] the narration panel
//   [SECTION] highlights on the canvas
#include "gui/lesson.hpp"

#include "gui/timings.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

namespace convlab::ui {

ImU32 lesson_highlight_colour(int palette) {
    // Okabe-Ito reddish purple (CC79A7), darker on light grounds; magenta-pink on black.
    if (palette == 1) return IM_COL32(255, 120, 220, 255);
    if (palette == 2) return IM_COL32(204, 121, 167, 255);
    return IM_COL32(190, 40, 150, 255);
}

// [SECTION] opening and applying a step

void LessonUi::open(const std::string& file, std::size_t step) {
    if (player.entries.empty()) {
        const auto dir = std::filesystem::path(file).parent_path().string();
        player.scan(dir.empty() ? "." : dir);
    }
    plan_.reset();
    player.open(file, step);
}

void LessonUi::close() {
    player.close();
    plan_.reset();
    hl_.clear();
    hl_for_ = nullptr;
}

void LessonUi::update(app::AppState& s, const app::ViewModel* view, dim_t view_steps,
                      bool& step_dirty, const RequestFn& request, bool wait) {
    // The authoring loop: a lesson file saved in an editor shows on the step it was on.
    if (!wait) {
        const double now = ImGui::GetTime();
        if (now - last_reload_check_ >= 1.0) {
            last_reload_check_ = now;
            player.reload_if_changed();
        }
    }
    player.poll(wait);
    if (player.generation() != applied_) {
        applied_ = player.generation();
        plan_ = player.plan_ptr();
        hl_for_ = nullptr;
        hidden_for_ = nullptr;
        revealed_ = false;  // a class predicts first on every step
        if (plan_) {
            s.playback.granularity = plan_->granularity;
            s.playback.paused = true;
            s.playback.time_left = 0;
            s.playback.step = std::max<dim_t>(0, plan_->open);
            s.pinned = {};
            s.error.clear();
            step_dirty = true;
            fit_pending_ = true;
            request(plan_->request);
            start_timings(wait);
        }
    }
    if (!plan_ || !view) return;
    // The step's view (not one the user switched to): keep playback in the step's range.
    const bool own = view->name == plan_->request.view &&
                     (view->name == "tensors" || s.request.problem == plan_->request.problem);
    if (own && clamp_to_range(s.playback, plan_->range_begin, plan_->range_end, view_steps))
        step_dirty = true;
    if (view != hl_for_) {
        hl_for_ = view;
        hl_ = app::highlight_cells(*view, *plan_);
        if (fit_pending_ && own) {
            s.zoom = 0;
            fit_pending_ = false;
        }
    }
}

bool LessonUi::set_revealed(bool on) {
    if (on == revealed_ || !plan_ || plan_->hidden.empty()) return false;
    revealed_ = on;
    return true;
}

void LessonUi::hide(const app::ViewModel& v, app::StepState& st) {
    if (!hiding()) return;
    if (&v != hidden_for_) {
        hidden_for_ = &v;
        hidden_ = app::hidden_cells(v, *plan_);
    }
    app::hide_cells(st, hidden_);
}

void LessonUi::start_timings(bool wait) {
    timings_note_.clear();
    const std::shared_ptr<TimingsPanel> panel = current_timings_panel();
    if (!panel) return;
    if (plan_->request.view != "timings") {
        // Leaving a measuring step: its run stops after the measurement under way.
        if (timings_started_ && timings_busy(*panel)) cancel_timings(*panel);
        timings_started_ = false;
        return;
    }
    const lesson::Lesson* l = player.lesson();
    if (!l) return;
    const lesson::Step& s = l->steps[player.step()];
    app::TimingsLessonRun run;
    run.problem = s.problem;
    // The charts' label of the layer: where it comes from.
    run.problem.name = std::filesystem::path(player.file()).stem().string() + "_step" +
                       std::to_string(player.step() + 1);
    run.algos = s.compare;
    run.chart = s.chart;
    run.reference = app::lesson_reference_file(player.file());
    run.source = "lesson " + std::filesystem::path(player.file()).stem().string() + ", step " +
                 std::to_string(player.step() + 1);
    try {
        start_lesson_timings(*panel, run, wait);
        timings_started_ = true;
    } catch (const std::exception& e) {
        timings_note_ = std::string("the step's measurement could not start: ") + e.what();
    }
}

std::string LessonUi::range_text(dim_t view_steps) const {
    if (!plan_ || view_steps <= 0) return "";
    const dim_t lo = std::clamp<dim_t>(plan_->range_begin, 0, view_steps - 1);
    const dim_t hi = plan_->range_end < 0 || plan_->range_end > view_steps
                         ? view_steps
                         : std::max(plan_->range_end, lo + 1);
    return "plays steps " + std::to_string(lo) + " to " + std::to_string(hi - 1) + " of " +
           std::to_string(view_steps);
}

// [SECTION] keys and the sidebar section

bool LessonUi::keyboard(const std::function<bool(int)>& pressed) {
    if (!active()) return false;
    // R reveals the step's hidden cells and hides them again (a second class, a second try).
    if (pressed(GLFW_KEY_R)) set_revealed(!revealed_);
    // Presenter remotes send PgDn / PgUp.
    // At a lesson's end they go on to the next lesson (and back): the course in one sequence.
    if (pressed(GLFW_KEY_PAGE_DOWN) || pressed(GLFW_KEY_N)) player.forward();
    if (pressed(GLFW_KEY_PAGE_UP) || pressed(GLFW_KEY_B)) player.backward();
    return true;
}

void LessonUi::sidebar(float width) {
    ImGui::TextUnformatted("Lesson");
    if (player.entries.empty() && player.dir.empty()) player.scan(lesson::default_lesson_dir());
    const lesson::Lesson* l = player.lesson();
    std::string current = l ? std::filesystem::path(player.file()).stem().string()
                            : (player.error().empty() ? "choose a lesson ..." : "(error)");
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##lesson", current.c_str(), ImGuiComboFlags_HeightLarge)) {
        for (const auto& e : player.entries) {
            const std::string name = app::lesson_label(e.file);
            std::string label = (name.rfind("Lesson ", 0) == 0 ? name.substr(7) : name) + "  " +
                                (e.error.empty() ? e.title + "  (" + std::to_string(e.steps) +
                                                       (e.steps == 1 ? " step)" : " steps)")
                                                 : "malformed: " + e.error);
            if (!e.error.empty()) ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(200, 0, 0, 255));
            if (ImGui::Selectable(label.c_str(), e.file == player.file())) open(e.file, 0);
            if (!e.error.empty()) ImGui::PopStyleColor();
        }
        ImGui::EndCombo();
    }
    if (l) {
        const float rows = static_cast<float>(std::min<std::size_t>(l->steps.size(), 6));
        if (ImGui::BeginListBox("##steps",
                                ImVec2(-1, rows * ImGui::GetTextLineHeightWithSpacing() + 6))) {
            for (std::size_t k = 0; k < l->steps.size(); ++k) {
                const std::string label =
                    std::to_string(k + 1) + ". " +
                    (l->steps[k].title.empty() ? l->steps[k].view : l->steps[k].title);
                if (ImGui::Selectable(label.c_str(), k == player.step())) player.go(k);
                if (k == player.step() && player.busy()) ImGui::SetScrollHereY();
            }
            ImGui::EndListBox();
        }
        if (ImGui::Button("< previous (PgUp)")) player.backward();
        ImGui::SameLine();
        if (ImGui::Button("next (PgDn) >")) player.forward();
        ImGui::SameLine();
        if (ImGui::Button("close")) close();
        if (plan_ && !plan_->hidden.empty() &&
            ImGui::Button(revealed_ ? "hide the ? cells again (R)" : "reveal the ? cells (R)"))
            set_revealed(!revealed_);
    } else if (!player.error().empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(220, 30, 30, 255));
        ImGui::PushTextWrapPos(width - 8);
        ImGui::TextUnformatted(player.error().c_str());
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
        if (ImGui::Button("dismiss")) close();
    }
    ImGui::Separator();
}

// [SECTION] the narration panel

namespace {

constexpr float kNarrationScale = 1.2f;

std::string heading(const app::LessonPlayer& p) {
    const lesson::Lesson* l = p.lesson();
    if (!l) return "";
    const lesson::Step& s = l->steps[p.step()];
    return app::lesson_label(p.file()) + ": " + l->title + "   ·   step " +
           std::to_string(p.step() + 1) + " of " + std::to_string(l->steps.size()) +
           (s.title.empty() ? "" : ": " + s.title);
}

// The panel's text blocks, in order: (text, font scale, colour role). One list for measuring
// and drawing, so that the panel is as high as its text.
enum class Tone { Text, Dim, Good, Bad, Highlight };
struct Block {
    std::string text;
    float scale = 1.0f;
    Tone tone = Tone::Text;
};

// hiding: the step's hidden cells are not revealed yet, so no text gives their values away
// (the highlighted values and the checks on them say "?").
std::vector<Block> blocks(const app::LessonPlayer& p, const app::StepPlan* plan,
                          const std::string& note, bool hiding) {
    std::vector<Block> b;
    if (const lesson::Lesson* l = p.lesson()) {
        b.push_back({heading(p), 1.1f, Tone::Text});
        // Before the reveal, the narration up to its "[reveal]" line (the answer comes after).
        b.push_back(
            {lesson::flow_narration(lesson::narration_part(l->steps[p.step()].narration, !hiding)),
             kNarrationScale, Tone::Text});
        // Whether a tensor block (name, index prefix) shows a hidden cell.
        const lesson::StepResult* res = p.result();
        const auto hidden = [&](const std::string& tensor, const std::vector<dim_t>& at) {
            if (!hiding || !plan || !res) return false;
            const lesson::NamedTensor* t = res->find(tensor);
            if (!t) return false;
            for (const auto& h : plan->hidden)
                if (app::covers(h, tensor, at, t->value.dims())) return true;
            return false;
        };
        if (hiding)
            b.push_back({"Predict the cells marked ?, then reveal them (R).", kNarrationScale,
                         Tone::Highlight});
        if (plan && !plan->highlights.empty()) {
            std::string h = "highlighted (outlined in the view):  ";
            for (std::size_t i = 0; i < plan->highlights.size(); ++i) {
                const auto& hl = plan->highlights[i];
                h += (i ? "   ·   " : "") + hl.text + " = " +
                     (hidden(hl.tensor, hl.at) ? "?" : hl.values);
            }
            b.push_back({h, 1.0f, Tone::Highlight});
        }
        if (const lesson::StepResult* r = res) {
            if (!r->checks.empty()) {
                const auto& cs = p.lesson()->steps[p.step()].checks;
                b.push_back({"checks against the engine: " + std::to_string(r->passed()) + " of " +
                                 std::to_string(r->checks.size()) + " pass",
                             1.0f, Tone::Dim});
                for (std::size_t i = 0; i < r->checks.size(); ++i) {
                    const auto& ch = r->checks[i];
                    const bool hid =
                        i < cs.size() && (hidden(cs[i].tensor, cs[i].at) ||
                                          hidden(cs[i].equals_tensor, cs[i].equals_at));
                    b.push_back({std::string(ch.passed ? "PASS  " : "FAIL  ") +
                                     (hid ? cs[i].tensor + ": its value shows when revealed (R)"
                                          : ch.message),
                                 1.0f, ch.passed ? Tone::Good : Tone::Bad});
                }
            }
        } else if (p.busy()) {
            b.push_back(
                {"evaluating the step with the engine (worker thread) ...", 1.0f, Tone::Dim});
        }
    }
    if (!note.empty()) b.push_back({note, 1.0f, Tone::Bad});
    if (!p.error().empty())
        b.push_back(
            {(p.lesson() ? "this step cannot be shown: " : "") + p.error(), 1.0f, Tone::Bad});
    b.push_back(
        {"PgDn / N next step (after the last: the next lesson)   PgUp / B previous   space plays "
         "the step   left / right one step",
         1.0f, Tone::Dim});
    return b;
}

}  // namespace

float LessonUi::panel_height(float width, float h, float max_share) const {
    if (!active()) return 0;
    const ImGuiStyle& st = ImGui::GetStyle();
    if (strip) return ImGui::GetTextLineHeight() + 2 * st.WindowPadding.y + 4.0f;
    const float wrap = std::max(100.0f, width - 2 * st.WindowPadding.x - st.ScrollbarSize);
    float need = 2 * st.WindowPadding.y;
    for (const Block& b : blocks(player, plan(), timings_note_, hiding())) {
        need += ImGui::CalcTextSize(b.text.c_str(), nullptr, false, wrap / b.scale).y * b.scale +
                st.ItemSpacing.y;
    }
    return std::clamp(need + 4.0f, h * 0.15f, h * max_share);
}

namespace {

// Text wrapped at `wrap` px, drawn a line at a time through a clipper: only the lines in view
// make vertices, so that a narration of any length draws (ImGui's TextWrapped reserves vertices
// for the whole text, and past 16k characters overflows a draw list's 16-bit indices).
void text_wrapped_clipped(const std::string& text, float wrap) {
    ImFont* f = ImGui::GetFont();
    const float scale = ImGui::GetFontSize() / f->FontSize;
    std::vector<std::pair<const char*, const char*>> lines;
    const char* s = text.data();
    const char* const e = s + text.size();
    while (s <= e) {
        const char* nl =
            static_cast<const char*>(std::memchr(s, '\n', static_cast<std::size_t>(e - s)));
        const char* le = nl ? nl : e;
        if (le == s) lines.emplace_back(s, s);
        while (s < le) {
            const char* w = f->CalcWordWrapPositionA(scale, s, le, wrap);
            if (w <= s) {  // one character wider than the line: take it (whole UTF-8 sequence)
                w = s + 1;
                while (w < le && (static_cast<unsigned char>(*w) & 0xC0) == 0x80) ++w;
            }
            lines.emplace_back(s, w);
            s = w;
            while (s < le && *s == ' ') ++s;
        }
        if (!nl) break;
        s = nl + 1;
    }
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0));
    ImGuiListClipper clip;
    clip.Begin(static_cast<int>(lines.size()), ImGui::GetTextLineHeight());
    while (clip.Step())
        for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
            const auto& [a, b] = lines[static_cast<std::size_t>(i)];
            ImGui::TextUnformatted(a, b);
        }
    clip.End();
    ImGui::PopStyleVar();
    ImGui::Dummy(ImVec2(0, ImGui::GetStyle().ItemSpacing.y * 0.5f));
}

// One narration block in its tone's colour and at its scale (the panel and the presenter
// window draw the same blocks).
void draw_block(const Block& b, const LessonColours& c, float wrap) {
    const ImU32 col = b.tone == Tone::Dim         ? c.dim
                      : b.tone == Tone::Good      ? c.good
                      : b.tone == Tone::Bad       ? c.bad
                      : b.tone == Tone::Highlight ? c.highlight
                                                  : c.text;
    ImGui::PushStyleColor(ImGuiCol_Text, col);
    ImGui::SetWindowFontScale(b.scale);
    text_wrapped_clipped(b.text, wrap);
    ImGui::SetWindowFontScale(1.0f);
    ImGui::PopStyleColor();
}

}  // namespace

void LessonUi::panel(ImVec2 pos, ImVec2 size, const LessonColours& c) {
    if (!active()) return;
    ImGui::SetNextWindowPos(pos);
    ImGui::SetNextWindowSize(size);
    ImGui::PushStyleColor(ImGuiCol_WindowBg, c.background);
    ImGui::PushStyleColor(ImGuiCol_Border, c.dim);
    ImGui::Begin("lesson", nullptr,
                 ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                     ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoBringToFrontOnFocus |
                     (strip ? ImGuiWindowFlags_NoScrollbar : 0));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 wp = ImGui::GetWindowPos();
    dl->AddLine(wp, ImVec2(wp.x + size.x, wp.y), c.dim, 2.0f);
    if (strip) {
        // One line: the step, how its checks came out (green all pass, red else), and the keys
        // that open the narration and reveal.
        std::string checks;
        ImU32 col = c.good;
        if (const lesson::StepResult* r = player.result(); r && !r->checks.empty()) {
            checks = "   checks " + std::to_string(r->passed()) + " of " +
                     std::to_string(r->checks.size()) + " pass";
            if (r->passed() != r->checks.size()) col = c.bad;
        }
        const std::string hint = std::string(plan_ && !plan_->hidden.empty()
                                                 ? (revealed_ ? "   ·   R hide" : "   ·   R reveal")
                                                 : "") +
                                 "   ·   T narration   ·   W notes window";
        // The step first, then the lesson's title: a narrow strip cuts the title, not the step.
        std::string line;
        if (const lesson::Lesson* l = player.lesson()) {
            const lesson::Step& st = l->steps[player.step()];
            line = app::lesson_label(player.file()) + ", step " +
                   std::to_string(player.step() + 1) + " of " + std::to_string(l->steps.size()) +
                   (st.title.empty() ? "" : ": " + st.title) + "   ·   " + l->title;
        } else {  // a lesson that failed to load: its error
            const auto b = blocks(player, plan(), timings_note_, hiding());
            if (!b.empty()) line = b[0].text;
        }
        const float room = size.x - 2 * ImGui::GetStyle().WindowPadding.x -
                           ImGui::CalcTextSize(hint.c_str()).x -
                           ImGui::CalcTextSize(checks.c_str()).x;
        if (ImGui::CalcTextSize(line.c_str()).x > room) {
            const char* end = line.c_str();
            ImGui::GetFont()->CalcTextSizeA(ImGui::GetFontSize(),
                                            std::max(0.0f, room - ImGui::CalcTextSize("...").x),
                                            0.0f, line.c_str(), nullptr, &end);
            line = std::string(line.c_str(), end) + "...";
        }
        ImGui::PushStyleColor(ImGuiCol_Text, c.text);
        ImGui::TextUnformatted(line.c_str());
        ImGui::PopStyleColor();
        ImGui::SameLine(0, 0);
        ImGui::PushStyleColor(ImGuiCol_Text, col);
        ImGui::TextUnformatted(checks.c_str());
        ImGui::PopStyleColor();
        ImGui::SameLine(0, 0);
        ImGui::PushStyleColor(ImGuiCol_Text, c.dim);
        ImGui::TextUnformatted(hint.c_str());
        ImGui::PopStyleColor();
        ImGui::End();
        ImGui::PopStyleColor(2);
        return;
    }
    const float wrap = std::max(100.0f, ImGui::GetContentRegionAvail().x);
    // The reveal button where the presenter looks (the sidebar may be hidden).
    if (plan_ && !plan_->hidden.empty()) {
        if (ImGui::Button(revealed_ ? "hide again (R)" : "reveal (R)")) set_revealed(!revealed_);
    }
    for (const Block& b : blocks(player, plan(), timings_note_, hiding())) {
        draw_block(b, c, wrap);
    }
    ImGui::End();
    ImGui::PopStyleColor(2);
}

// [SECTION] the presenter window's notes

namespace {

// What PgDn opens after the current step: the next step, else the next lesson's first step.
std::string next_text(const app::LessonPlayer& p) {
    const lesson::Lesson* l = p.lesson();
    if (!l) return "";
    const std::size_t k = p.step() + 1;
    if (k < l->steps.size())
        return "next: step " + std::to_string(k + 1) + ": " +
               (l->steps[k].title.empty() ? l->steps[k].view : l->steps[k].title);
    const auto it = std::find_if(p.entries.begin(), p.entries.end(),
                                 [&](const app::LessonEntry& e) { return e.file == p.file(); });
    for (auto e = it == p.entries.end() ? it : it + 1; e != p.entries.end(); ++e)
        if (e->error.empty())
            return "next: " + app::lesson_label(e->file) + ": " + e->title + " (its first step)";
    return "next: none, the last step of the course";
}

}  // namespace

void LessonUi::notes(const LessonColours& c, const std::string& clock) {
    ImGui::PushStyleColor(ImGuiCol_Text, c.dim);
    ImGui::TextUnformatted(clock.c_str());
    ImGui::PopStyleColor();
    if (!active()) return;
    const float wrap = std::max(100.0f, ImGui::GetContentRegionAvail().x);
    ImGui::PushStyleColor(ImGuiCol_Text, c.text);
    ImGui::SetWindowFontScale(1.3f);
    text_wrapped_clipped(heading(player), wrap);
    ImGui::SetWindowFontScale(1.0f);
    ImGui::PopStyleColor();
    ImGui::PushStyleColor(ImGuiCol_Text, c.dim);
    text_wrapped_clipped(next_text(player), wrap);
    ImGui::PopStyleColor();
    if (ImGui::Button("< previous (PgUp)")) player.backward();
    ImGui::SameLine();
    if (ImGui::Button("next (PgDn) >")) player.forward();
    if (plan_ && !plan_->hidden.empty()) {
        ImGui::SameLine();
        if (ImGui::Button(revealed_ ? "hide again (R)" : "reveal (R)")) set_revealed(!revealed_);
        ImGui::SameLine();
        ImGui::PushStyleColor(ImGuiCol_Text, c.highlight);
        ImGui::TextUnformatted(revealed_ ? "the class sees the values"
                                         : "the class sees ? in the cells to predict");
        ImGui::PopStyleColor();
    }
    ImGui::Separator();
    // The presenter reads the whole narration and every value: the class does not see this.
    const std::vector<Block> all = blocks(player, plan(), timings_note_, false);
    for (std::size_t i = 1; i < all.size(); ++i) {  // (0: the heading, above)
        const Block& b = all[i];
        draw_block(b, c, wrap);
    }
}

// [SECTION] highlights on the canvas

void LessonUi::draw_highlights(ImDrawList* dl, const app::ViewModel& v, ImVec2 origin, float z,
                               ImU32 colour) const {
    if (&v != hl_for_ || hl_.size() != v.panels.size()) return;
    const float t = highlight_thickness(z);
    for (std::size_t i = 0; i < hl_.size(); ++i)
        for (dim_t c : hl_[i]) {
            if (v.panels[i].hidden) break;
            const app::CellPos cp = app::cell_pos(v.panels[i], c);
            const ImVec2 a(origin.x + static_cast<float>(cp.x) * z - t * 0.5f,
                           origin.y + static_cast<float>(cp.y) * z - t * 0.5f);
            dl->AddRect(a, ImVec2(a.x + z + t, a.y + z + t), colour, 0, 0, t);
        }
}

}  // namespace convlab::ui
