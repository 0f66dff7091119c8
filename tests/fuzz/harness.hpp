// The fuzz harnesses: one function per parser, fed arbitrary bytes. Each accepts or refuses the
// input the way the convlab command does (a convlab::Error is a refusal, and fine); anything
// else escaping (another exception, a sanitizer report, a hang, a broken property) is a defect.
// The libFuzzer targets (fuzz_*.cpp) call them, and so does the doctest suite on the checked-in
// regression inputs (tests/fuzz/regressions/TARGET/), so a fixed crash stays fixed in every build.
//
// Properties checked beyond "no crash": a valid descriptor prints and parses back to itself; a
// results file that reads writes a JSON that reads back with the same rows, and its charts have
// bounded axes; every theme error names the file and a line of it, and what a theme set prints
// and parses back to the same theme.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "charts/chart.hpp"
#include "convlab/bench.hpp"
#include "convlab/npy.hpp"
#include "convlab/problem.hpp"
#include "lesson/lesson.hpp"
#include "model/theme.hpp"

namespace convlab::fuzz {

// A broken property: not a convlab::Error, so nothing catches it and the fuzzer reports it.
struct PropertyBroken : std::logic_error {
    using std::logic_error::logic_error;
};

inline void require(bool ok, const std::string& what) {
    if (!ok) throw PropertyBroken(what);
}

// [SECTION] descriptor

inline void descriptor(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return;  // descriptors are short; longer inputs only slow the search
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    Problem p;
    try {
        p = parse_descriptor(text);
    } catch (const Error&) {
        return;
    }
    if (!p.validate().empty()) return;
    const std::string canonical = to_descriptor(p);
    Problem back;
    try {
        back = parse_descriptor(canonical);
    } catch (const Error& e) {
        throw PropertyBroken("'" + canonical + "' does not parse back: " + e.what());
    }
    require(back == p, "'" + std::string(text) + "' -> '" + canonical + "' parses differently");
    (void)p.flops();
    (void)p.flops_no_pad();
}

// [SECTION] .npy

// read_npy takes a path: the bytes go to a file of this process first (in /dev/shm when there
// is one, so that the fuzzer does not wear a disk).
inline void npy(const std::uint8_t* data, std::size_t size) {
    static const std::string path = [] {
        const char* dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        return std::string(dir) + "/convlab_fuzz_npy_" + std::to_string(::getpid()) + ".npy";
    }();
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        const bool ok = std::fwrite(data, 1, size, f) == size;
        std::fclose(f);
        if (!ok) return;
    } else {
        return;
    }
    try {
        const Tensor t = read_npy(path);
        dim_t n = 1;
        for (dim_t d : t.dims()) n *= d;
        require(n == t.numel(), "the tensor's dims do not give its size");
    } catch (const Error&) {
    }
    std::remove(path.c_str());
}

// [SECTION] lesson

// The work of evaluating a step, in multiply-adds and elements, so that the fuzzer refuses a
// large problem before the engine runs it: evaluation runs each pass by direct loops, the column
// matrices, the backward-data-via-forward pass, every compared algorithm and, for DaVinci
// steps, four fractal passes; the fuzzer must stay at thousands of executions a second, and a
// lesson's own problems are small (all but one of the shipped lessons' are under the budget).
inline double problem_work(const Problem& p) {
    double elements = 0;
    for (const std::vector<dim_t>& dims : {p.src_dims(), p.wei_dims(), p.dst_dims()}) {
        double n = 1;
        for (dim_t d : dims) n *= static_cast<double>(d);
        elements += n;
    }
    return p.flops() / 2 + elements;
}

inline double step_work(const lesson::Step& s) {
    double work = 0;
    if (s.has_problem) {
        const double passes = 5.0 + static_cast<double>(s.compare.size()) + 4.0;
        work += passes * problem_work(s.problem);
    }
    double n = 1;
    for (dim_t d : s.network.input.dims) n *= static_cast<double>(d);
    work += n;
    for (const lesson::LayerSpec& l : s.network.layers) {
        if (!l.problem_text.empty()) work += 3.0 * problem_work(l.problem);
        work += static_cast<double>(l.wei.values.size());
    }
    return work;
}

constexpr double kLessonWorkBudget = 1e5;  // multiply-adds and elements per step evaluated

inline void evaluate_step(const lesson::Lesson& l, std::size_t k) {
    const lesson::Step& s = l.steps[k];
    if (s.view == "timings" || step_work(s) > kLessonWorkBudget) return;
    // evaluate() is what validate_step() runs: one call checks the step and gives its result.
    try {
        const lesson::StepResult r = lesson::evaluate(l, k);
        require(r.checks.size() == s.checks.size(), "a check result per check");
        for (const lesson::NamedTensor& t : r.tensors) (void)lesson::format_tensor(t.value, 64);
    } catch (const Error&) {
    }
}

// The fuzz target: every step parsed and its narration laid out, one step evaluated (or all,
// for the regression inputs replayed by the suite).
inline void lesson_text(const std::uint8_t* data, std::size_t size, bool all_steps = false) {
    if (size > (1u << 20)) return;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    lesson::Lesson l;
    try {
        l = lesson::parse_lesson(text, "fuzz.toml");
    } catch (const Error&) {
        return;
    }
    for (const lesson::Step& s : l.steps) {
        (void)lesson::flow_narration(s.narration);
        (void)lesson::wrap_narration(s.narration, 40);
    }
    if (l.steps.empty()) return;
    // One step evaluated per input, chosen by a hash of its bytes: an input costs one step's
    // evaluation, not the whole lesson's, and the mutations of an input reach all its steps.
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
    if (all_steps) {
        for (std::size_t k = 0; k < l.steps.size(); ++k) evaluate_step(l, k);
        return;
    }
    evaluate_step(l, static_cast<std::size_t>(h % l.steps.size()));
}

inline void lesson_text_all_steps(const std::uint8_t* data, std::size_t size) {
    lesson_text(data, size, true);
}

// [SECTION] results files

inline void results(const std::uint8_t* data, std::size_t size) {
    if (size > (1u << 20)) return;
    const std::string text(reinterpret_cast<const char*>(data), size);
    bench::Results r;
    try {
        std::istringstream in(text);
        // A JSON object opens with '{' (after blanks); anything else is read as CSV.
        const auto first = text.find_first_not_of(" \t\r\n");
        r = first != std::string::npos && text[first] != '{' ? bench::read_csv(in)
                                                             : bench::read_json(in);
    } catch (const Error&) {
        return;
    }
    // What reads writes, and what is written reads back (a replot re-exports the file).
    std::ostringstream out;
    bench::write_json(r, out);
    bench::Results back;
    try {
        std::istringstream again(out.str());
        back = bench::read_json(again);
    } catch (const Error& e) {
        throw PropertyBroken(std::string("the re-exported JSON does not read: ") + e.what());
    }
    require(back.rows.size() == r.rows.size(), "the re-exported JSON has other rows");
    std::ostringstream csv;
    bench::write_csv(r, csv);
    // Charts of what was read: every axis bounded (the replot draws them).
    for (const charts::Chart& c : charts::standard_charts(r)) {
        require(c.y.ticks.size() <= static_cast<std::size_t>(charts::kMaxTicks) + 1,
                c.id + ": too many ticks");
        require(std::isfinite(c.y.min) && std::isfinite(c.y.max), c.id + ": axis not finite");
    }
}

// [SECTION] theme files

inline void theme(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const ui::Theme t = ui::parse_theme(text, "fuzz.theme");
    std::size_t lines = 1;
    for (char c : text) lines += c == '\n';
    for (const std::string& e : t.errors) {
        require(e.rfind("fuzz.theme:", 0) == 0, "a theme error without its file: " + e);
        const std::size_t line = std::strtoull(e.c_str() + 11, nullptr, 10);
        require(line >= 1 && line <= lines, "a theme error names no line of the file: " + e);
        require(e.find('\n') == std::string::npos, "a theme error of several lines: " + e);
    }
    if (t.name) require(!t.name->empty() && t.name->size() <= ui::kThemeNameMax, "a bad name");
    const ui::Theme back = ui::parse_theme(ui::format_theme(t), "fuzz.theme");
    require(back.errors.empty(), "a formatted theme has errors: " +
                                     (back.errors.empty() ? std::string() : back.errors[0]));
    require(back.name == t.name && back.colour == t.colour, "a theme does not print back");
}

}  // namespace convlab::fuzz
