// Lessons as data: one TOML file a lesson (format: lessons/README.md), parsed into plain structs,
// validated against the engine, and evaluated step by step into named tensors and check results.
//
// No UI here (no imgui): the app's lesson player and the command line (`convlab lesson ...`)
// both use this library. Usage for a player:
//   Lesson l = load_lesson(path);          // throws LessonError "file:line: what is wrong"
//   validate(l);                           // every step; throws LessonError at the culprit line
//   StepResult r = evaluate(l, k);         // tensors of step k + its checks (pass/fail)
// load_lesson and validate are quick; evaluate runs the engine (small problems: milliseconds;
// call it off the frame loop anyway). A LessonError never leaves the library in a bad state:
// the caller keeps running and shows pos() and what().
//
// Index of sections:
//   [SECTION] Errors with a source position
//   [SECTION] The lesson model
//   [SECTION] Loading and validating
//   [SECTION] Evaluating a step
//   [SECTION] Finding lessons
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/index_map.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::lesson {

// [SECTION] Errors with a source position

struct SourcePos {
    std::string file;
    int line = 0;             // 1-based; 0 = unknown
    int column = 0;           // 1-based; 0 = unknown
    std::string str() const;  // "file:line:column" (or less when unknown)
};

// A malformed lesson. what() is "file:line:column: message"; message() is without the position.
struct LessonError : Error {
    LessonError(SourcePos p, const std::string& msg);
    const SourcePos& pos() const { return pos_; }
    const std::string& message() const { return msg_; }

  private:
    SourcePos pos_;
    std::string msg_;
};

// [SECTION] The lesson model

// The app's view names (BRIEF.md's shared vocabulary).
const std::vector<std::string>& view_names();
// The same for help texts: "im2col (default) | col2im | ... | winograd".
const std::string& view_choices();

// A small tensor written inline: nested arrays give its dims, values are row-major.
struct InlineTensor {
    std::vector<dim_t> dims;  // from the nesting; {n} for a flat list, {} for a scalar
    std::vector<float> values;
    SourcePos pos;
    bool present() const { return !values.empty(); }
};

// "this cell (or block) must equal that".
struct Check {
    std::string tensor;            // a named tensor of the step
    std::vector<dim_t> at;         // index prefix into it; empty = the whole tensor
    InlineTensor equals;           // a number, or nested arrays of the selected block's shape
    std::string equals_tensor;     // or: every element equals this other named tensor
    std::vector<dim_t> equals_at;  // index prefix into equals_tensor; empty = all of it
    double within = 1e-6;          // |got - expected| <= within
    SourcePos pos;
};

// A named tensor element (or a prefix block) the view lights up: "src[0,0,1,1]".
struct Highlight {
    std::string tensor;
    std::vector<dim_t> at;
    SourcePos pos;
};

// One layer of a step's network (the worked problem).
struct LayerSpec {
    std::string type;  // conv | conv_transposed | locally_connected | relu | max_pool |
                       // global_max_pool | fc
    std::string name;  // tensor names are derived from it ("conv.diff_wei")
    std::string problem_text;
    Problem problem;                    // conv, conv_transposed, locally_connected
    std::vector<dim_t> kernel, stride;  // max_pool
    InlineTensor wei, bias;             // conv*: wei required; fc: wei (O, F) required
    std::uint64_t seed = 0;             // wei/bias not given: integers in [-3, 3] from this seed
    SourcePos pos;
};

struct NetworkSpec {
    InlineTensor input;         // (N, C, spatial...)
    std::vector<dim_t> target;  // one class index per image
    std::vector<LayerSpec> layers;
    SourcePos pos;
    bool present() const { return !layers.empty(); }
};

struct Step {
    std::string title;
    std::string view;          // one of view_names()
    std::string problem_text;  // benchdnn descriptor as written
    Problem problem;           // parsed and checked
    bool has_problem = false;
    std::string map;       // maps::names() or davinci::map_names(); empty = none
    std::int64_t c0 = 16;  // C0 of the DaVinci maps
    Granularity granularity = Granularity::Element;
    // Range of the view's steps played, [step_begin, step_end); the step opens on step_begin.
    // Checked against the view (app::check_step_view), not here: a view's steps are those of
    // what drives it (the map it animates, or the result it computes element by element).
    std::int64_t step_begin = 0;
    std::int64_t step_end = -1;    // -1 = to the end of the view's steps
    std::int64_t step_start = -1;  // the step it opens on, inside the range; -1 = step_begin
    std::vector<Highlight> highlights;
    // Predict, then reveal: cells drawn "?" (no value, a neutral colour, no value on hover) until
    // the teacher reveals them (key R), so that a class predicts them first. Same syntax and
    // rules as highlights: "tensor[index prefix]" of a tensor the step's view draws.
    std::vector<Highlight> hide;
    SourcePos hide_pos;
    // The tensors view's panels, in order (empty: the view's choice). Each names a tensor of the
    // step (validated by evaluate); highlighted tensors not listed are drawn after them.
    std::vector<std::string> show;
    std::vector<SourcePos> show_pos;
    // The view's panels this step draws, by tensor name (empty: all): the others keep their
    // place on the canvas, blank, so that a pipeline is revealed a picture a step.
    std::vector<std::string> panels;
    std::vector<SourcePos> panels_pos;
    std::string narration;
    // Inline data by tensor name (src, wei, bias, diff_dst); the rest from `seed`.
    std::vector<std::pair<std::string, InlineTensor>> data;
    std::uint64_t seed = 1;
    std::vector<std::string> compare;  // "bwd_data:via_forward": extra tensors by algorithm
    std::string chart;  // view timings: the chart shown of the step's live measurement ("" any)
    NetworkSpec network;
    std::vector<Check> checks;
    SourcePos pos;  // the [[step]] header
    SourcePos view_pos, problem_pos, map_pos, steps_pos, start_pos;
};

struct Lesson {
    std::string file;
    std::string title;
    std::string audience;
    std::string summary;
    std::vector<Step> steps;
};

// [SECTION] Loading and validating

// Parses TOML text; `file` is used in positions. Throws LessonError (syntax error, missing or
// unknown key, wrong type, bad descriptor, unknown view ...).
Lesson parse_lesson(std::string_view text, const std::string& file);
// The largest lesson file read: a lesson is text, and the longest shipped is a few dozen KB; a
// larger file (or a device such as /dev/zero) is refused before it is read.
inline constexpr std::uintmax_t kMaxLessonBytes = std::uintmax_t{4} << 20;
// Reads and parses a file (a missing or unreadable file, a directory, FIFO or device, or one
// larger than kMaxLessonBytes is a LessonError at line 0).
Lesson load_lesson(const std::string& path);

// A narration as the lesson panel flows it: a line break inside a paragraph becomes a space, so
// that the text wraps at the panel's width, not at the file's; kept are blank lines (paragraphs)
// and the breaks around a line that starts with a space (an indented formula or worked sum) or
// with a list marker ("- ", "* ", "1. ").
std::string flow_narration(std::string_view text);

// The narration of a step that hides cells, before and after the reveal: a line that is exactly
// "[reveal]" (kReveal) splits it; the text after it (the answer) shows once revealed. revealed:
// the whole text less that line; not revealed: the text before it. No such line: the text.
inline constexpr std::string_view kReveal = "[reveal]";
std::string narration_part(std::string_view text, bool revealed);

// Greedy word wrap: text's words (split at whitespace) in lines of at most `chars` characters,
// a word longer than that alone on its line.
std::vector<std::string> wrap_words(std::string_view text, std::size_t chars);

// A narration as `convlab lesson show` prints it: each line longer than width broken between
// words (wrap_words), its continuation lines indented as the line itself; the author's line
// breaks and the shorter lines stay as they are (aligned columns too).
std::string wrap_narration(std::string_view text, std::size_t width);

// Checks what parse cannot: map names for the step's problem and (by evaluating the step) that
// every check and highlight names an existing tensor, with an index inside it and an expected
// value of the right shape. Throws LessonError at the offending line. What only the step's view
// can tell (its step range, the tensors it draws) is app::check_step_view (lesson_player.hpp);
// `convlab lesson check` runs both.
void validate_step(const Lesson& l, std::size_t step);
void validate(const Lesson& l);

// [SECTION] Evaluating a step

struct NamedTensor {
    std::string name;         // "diff_wei", "conv.diff_wei", "map.dst" ...
    std::string description;  // one line: what it is and how the engine computed it
    Tensor value;
    // Its dims' names when they are not the usual (n, c, spatial...) / (k, c, kernel...): a map's
    // shapes ("n", "c1", "h", "w", "c0"), packed storage ("c1hw", "n1", "n0", "c0"). Empty: usual.
    std::vector<std::string> dim_names = {};
};

struct CheckResult {
    bool passed = false;
    double worst = 0;     // largest |got - expected|
    std::string message;  // "diff_wei[0,0,1,1] = 0.5, expected 0.5 (within 1e-06): pass"
};

struct StepResult {
    std::vector<NamedTensor> tensors;  // in a stable, meaningful order
    std::vector<CheckResult> checks;   // one per Step::checks
    std::int64_t map_steps = 0;        // num_steps of the step's map at its granularity (0: none)
    double loss = 0;                   // network steps: the softmax cross-entropy
    const NamedTensor* find(std::string_view name) const;
    std::size_t passed() const;
};

// Check c of step k (0-based) and its result r as one line: "PASS file:line:column: step K:
// message" (FAIL for a failed check; K 1-based), what `convlab lesson check` prints and the
// browser build's test compares with it.
std::string check_line(const Lesson& l, std::size_t k, std::size_t c, const CheckResult& r);

// Computes the step's tensors with the engine and evaluates its checks. Throws LessonError when a
// check or highlight names a missing tensor or a bad index (what validate reports).
StepResult evaluate(const Lesson& l, std::size_t step);

// Text rendering of a tensor for the command line: dims, then rows of the last axis.
std::string format_tensor(const Tensor& t, int max_elements = 512);

// [SECTION] Finding lessons

// The lessons/ directory of the source tree this binary was built from.
std::string default_lesson_dir();
// The *.toml files of a directory, sorted by name (lessons are numbered: 01_..., 02_...).
std::vector<std::string> lesson_files(const std::string& dir);

}  // namespace convlab::lesson
