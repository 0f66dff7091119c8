// The fuzz harnesses: one function per parser, fed arbitrary bytes. Each accepts or refuses the
// input the way the convlab command does (a convlab::Error is a refusal, and fine); anything
// else escaping (another exception, a sanitizer report, a hang, a broken property) is a defect.
// The libFuzzer targets (fuzz_*.cpp) call them, and so does the doctest suite on the checked-in
// regression inputs (tests/fuzz/regressions/TARGET/), so a fixed crash stays fixed in every build.
//
// Properties checked beyond "no crash": a valid descriptor prints and parses back to itself; a
// results file that reads writes a JSON that reads back with the same rows, and its charts have
// bounded axes.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "charts/chart.hpp"
#include "convlab/bench.hpp"
#include "convlab/npy.hpp"
#include "convlab/problem.hpp"
#include "lesson/lesson.hpp"

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

// Elements of a step's tensors (source, weights, destination), capped: evaluation runs the
// engine, and the fuzzer must stay at thousands of executions a second.
inline double step_work(const lesson::Step& s) {
    double work = 0;
    auto add = [&](const std::vector<dim_t>& dims) {
        double n = 1;
        for (dim_t d : dims) n *= static_cast<double>(d);
        work += n;
    };
    if (s.has_problem) {
        add(s.problem.src_dims());
        add(s.problem.wei_dims());
        add(s.problem.dst_dims());
        // Each compared algorithm computes the pass again.
        work *= 1.0 + static_cast<double>(s.compare.size());
    }
    add(s.network.input.dims);
    for (const lesson::LayerSpec& l : s.network.layers) {
        if (!l.problem_text.empty()) {
            add(l.problem.src_dims());
            add(l.problem.wei_dims());
            add(l.problem.dst_dims());
        }
        work += static_cast<double>(l.wei.values.size());
    }
    return work;
}

constexpr double kLessonWorkBudget = 1e5;  // elements per step evaluated

inline void lesson_text(const std::uint8_t* data, std::size_t size) {
    if (size > (1u << 20)) return;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    lesson::Lesson l;
    try {
        l = lesson::parse_lesson(text, "fuzz.toml");
    } catch (const Error&) {
        return;
    }
    for (std::size_t k = 0; k < l.steps.size(); ++k) {
        const lesson::Step& s = l.steps[k];
        (void)lesson::flow_narration(s.narration);
        (void)lesson::wrap_narration(s.narration, 40);
        if (s.view == "timings" || step_work(s) > kLessonWorkBudget) continue;
        try {
            lesson::validate_step(l, k);
            const lesson::StepResult r = lesson::evaluate(l, k);
            require(r.checks.size() == s.checks.size(), "a check result per check");
            for (const lesson::NamedTensor& t : r.tensors) (void)lesson::format_tensor(t.value, 64);
        } catch (const Error&) {
        }
    }
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

}  // namespace convlab::fuzz
