// The lesson player's state, independent of any window (no imgui): the lesson list, the open
// lesson and its current step, the step's evaluation on a worker thread, and what the app shows
// for a step (view request, granularity, step range, highlighted cells). The ImGui drawing is
// gui_lesson.cpp; the tensors view (a step's named tensors as panels) is tensors_view.cpp.
// Index:
//   [SECTION] the lesson list
//   [SECTION] a step's plan: what the app shows for it
//   [SECTION] playback limited to a step range
//   [SECTION] the player: open, next / previous, evaluation off the frame loop
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lesson/lesson.hpp"
#include "model/model.hpp"

namespace convlab::app {

// [SECTION] the lesson list

struct LessonEntry {
    std::string file;   // path
    std::string title;  // "" when the file does not parse
    std::size_t steps = 0;
    std::string error;  // "file:line:column: what is wrong" ("" when it parses)
};

// Every *.toml of dir (sorted by name), parsed (not evaluated): title, step count or error.
std::vector<LessonEntry> list_lessons(const std::string& dir);

// How the app names a lesson file: "Lesson 17" for a numbered file (17_worked_problem.toml),
// else its name without the extension ("quiz" for quiz.toml).
std::string lesson_label(const std::string& file);

// [SECTION] a step's plan

// A highlight resolved to a tensor's elements: "src[0,0,1]" -> tensor src, linear [begin, end).
struct ResolvedHighlight {
    std::string text;       // as written: "src[0,0,1]"
    std::string tensor;     // "src"
    std::vector<dim_t> at;  // the index prefix as written ({0,0,1})
    dim_t numel = 0;        // of the whole tensor
    dim_t begin = 0, end = 0;
    std::string values;  // "= 2" or "= [1, -1, 0, 1]" (the step's values, for the narration)
};

struct StepPlan {
    ViewRequest request;  // view, problem, c0, the step's inputs / tensors
    Granularity granularity = Granularity::Element;
    dim_t range_begin = 0, range_end = -1;  // view steps played: [begin, end); -1 = to the end
    dim_t open = 0;                         // the step it opens on (in the range)
    std::string map;                        // the step's map ("" none)
    std::vector<std::string> panels;        // the tensors whose panels it draws (empty: all)
    std::vector<ResolvedHighlight> highlights;
    // The step's 'hide' entries: cells drawn "?" until revealed (predict, then reveal).
    std::vector<ResolvedHighlight> hidden;
};

// The plan of step k of lesson l, given its evaluation r (for the tensors and highlights).
// Steps without a problem (networks) use the tensors view's own content.
StepPlan plan_step(const lesson::Lesson& l, std::size_t k,
                   std::shared_ptr<const lesson::StepResult> r);

// The view panel that shows lesson tensor `tensor` (by the views' panel names: src -> X,
// diff_dst -> dY ...; map.src / map.dst -> the panels of the link of map `map`), or -1.
int panel_of_tensor(const ViewModel& v, const std::string& tensor, const std::string& map);

// Per panel of v, the cells the plan's highlights light (sorted). A highlight whose tensor no
// panel shows (or whose panel holds a different number of elements) lights nothing.
std::vector<std::vector<dim_t>> highlight_cells(const ViewModel& v, const StepPlan& plan);
// The same for the plan's hidden cells (its 'hide' entries).
std::vector<std::vector<dim_t>> hidden_cells(const ViewModel& v, const StepPlan& plan);

// True when resolved entry h covers element `index` (an index prefix, as written) of tensor
// `tensor`, or the whole of it when index is empty: e.g. whether a check's cell is hidden.
bool covers(const ResolvedHighlight& h, const std::string& tensor, const std::vector<dim_t>& index,
            const std::vector<dim_t>& dims);

// What a step's view draws and plays, read from the view itself (built as the player builds it).
struct StepView {
    std::string view;                  // the view shown (a network step: tensors)
    dim_t steps = 0;                   // its number of steps at the step's granularity
    std::vector<std::string> tensors;  // the step's tensors it draws, element for element
};

// Builds the view of step k (evaluated as r) and checks what only the view can tell: the step's
// range of steps lies within the view's steps, and every highlight names a tensor the view
// draws, and so does every 'hide' entry. Throws lesson::LessonError at the line of 'steps' or of
// the highlight or hide entry, naming the view
// and what it has. Builds the view (the engine enumerates its maps): keep it off the frame loop.
StepView check_step_view(const lesson::Lesson& l, std::size_t k,
                         std::shared_ptr<const lesson::StepResult> r);

// [SECTION] playback limited to a step range

// Keeps pb.step inside [begin, end) (end -1 or beyond n: n): below -> begin; beyond -> begin when
// playing with loop (the range repeats), else the range's last step (and paused). Returns true
// when it moved the step.
bool clamp_to_range(Playback& pb, dim_t begin, dim_t end, dim_t n);

// [SECTION] the player

class LessonPlayer {
  public:
    LessonPlayer() = default;
    ~LessonPlayer();
    LessonPlayer(const LessonPlayer&) = delete;
    LessonPlayer& operator=(const LessonPlayer&) = delete;

    std::string dir;                   // where the list comes from
    std::vector<LessonEntry> entries;  // the list (scan())
    void scan(const std::string& directory);

    // Loads a lesson (parse only: quick) and starts evaluating `step` (0-based, clamped). On a
    // malformed file: returns false, error() says file:line what, and the previous lesson (if
    // any) stays closed. Never throws.
    bool open(const std::string& path, std::size_t step = 0);
    void close();
    bool is_open() const { return lesson_ != nullptr; }
    const lesson::Lesson* lesson() const { return lesson_.get(); }
    const std::string& file() const { return file_; }

    std::size_t step() const { return step_; }
    std::size_t num_steps() const { return lesson_ ? lesson_->steps.size() : 0; }
    // Moves to step k (clamped to the lesson) and starts its evaluation; next/prev: +-1. Return
    // true when the step changed.
    bool go(std::size_t k);
    bool next() { return step_ + 1 < num_steps() && go(step_ + 1); }
    bool prev() { return step_ > 0 && go(step_ - 1); }
    // What PgDn / PgUp do (a presenter goes through the course without the sidebar): the next
    // step, or from a lesson's last step the first step of the next lesson in `entries`; the
    // previous step, or from a first step the last step of the previous lesson. Lessons that do
    // not parse are skipped. Return true when the step or lesson changed.
    bool forward();
    bool backward();

    // Takes a finished evaluation (wait: block until it ends). Returns true when a new result
    // (or error) for the current step arrived: the app then applies plan().
    bool poll(bool wait = false);
    bool busy() const { return job_ != nullptr; }

    // The current step's evaluation (null while evaluating or after an error) and its plan.
    const lesson::StepResult* result() const { return result_.get(); }
    const StepPlan* plan() const { return plan_.get(); }
    std::shared_ptr<const StepPlan> plan_ptr() const { return plan_; }
    // A load error, or the current step's evaluation error ("file:line:column: ..."), or "".
    const std::string& error() const { return error_; }
    // Increments with every result or error taken by poll().
    std::uint64_t generation() const { return generation_; }

    // The authoring loop: when the open lesson's file changed on disk since it was read (its
    // modification time or size), reads it again and opens it on the same step (clamped) and
    // returns true. A file that no longer parses shows its error (error()) and is read again,
    // on that same step, once it changes again. Call it about once a second.
    bool reload_if_changed();

  private:
    struct Job {
        std::thread thread;
        std::atomic<bool> done{false};
        std::size_t step = 0;
        std::shared_ptr<const lesson::Lesson> lesson;
        std::shared_ptr<lesson::StepResult> result;
        std::shared_ptr<StepPlan> plan;
        std::string error;
    };
    void start(std::size_t k);
    void join();
    // The next (dir +1) or previous (-1) parsing lesson of `entries` from the open one, or "".
    std::string neighbour(int direction) const;

    // What the file was when read: its modification time and size (either changing: edited).
    struct Stamp {
        std::filesystem::file_time_type time{};
        std::uintmax_t size = 0;
        bool operator==(const Stamp&) const = default;
    };
    static Stamp stamp_of(const std::string& path);
    Stamp stamp_;
    std::size_t reload_step_ = 0;  // the step a reload opens on (kept across a failed reload)

    std::shared_ptr<const lesson::Lesson> lesson_;
    std::string file_;
    std::size_t step_ = 0;
    std::unique_ptr<Job> job_;
    bool queued_ = false;  // the step changed while a job ran: evaluate again when it ends
    std::shared_ptr<const lesson::StepResult> result_;
    std::shared_ptr<const StepPlan> plan_;
    std::string error_;
    std::uint64_t generation_ = 0;
};

}  // namespace convlab::app
