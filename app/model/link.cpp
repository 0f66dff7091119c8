#include "model/link.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <vector>

#include "lesson/lesson.hpp"

namespace convlab::ui {

namespace {

constexpr std::string_view kFields = "lesson, step, view, problem, granularity";

[[noreturn]] void bad(std::string_view field, const std::string& rule) {
    throw Error("link field '" + std::string(field) + "': " + rule);
}

// A whole decimal number in [lo, hi], nothing else.
long long number(std::string_view field, std::string_view v, long long lo, long long hi) {
    long long n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi)
        bad(field, "'" + std::string(v) + "' is not a whole number from " + std::to_string(lo) +
                       " to " + std::to_string(hi));
    return n;
}

}  // namespace

Link parse_link(std::string_view f) {
    if (!f.empty() && f.front() == '#') f.remove_prefix(1);
    if (f.empty()) throw Error("link: empty (expected lesson=N or view=NAME&problem=DESC)");
    Link l;
    std::vector<std::string> seen;
    std::string_view step;
    bool has_step = false, has_granularity = false;
    while (!f.empty()) {
        const std::size_t amp = f.find('&');
        const std::string_view item = f.substr(0, amp);
        f = amp == std::string_view::npos ? std::string_view() : f.substr(amp + 1);
        const std::size_t eq = item.find('=');
        const std::string key(item.substr(0, eq));
        if (eq == std::string_view::npos)
            throw Error("link: '" + std::string(item) +
                        "' is not FIELD=VALUE (fields: " + std::string(kFields) + ")");
        const std::string_view v = item.substr(eq + 1);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) bad(key, "given twice");
        seen.push_back(key);
        if (key == "lesson") {
            l.lesson = static_cast<int>(number(key, v, 1, 99));
        } else if (key == "step") {
            step = v;
            has_step = true;
        } else if (key == "view") {
            const auto& names = lesson::view_names();
            if (std::find(names.begin(), names.end(), v) == names.end())
                bad(key, "'" + std::string(v) + "' is not one of " + lesson::view_choices());
            l.view = v;
        } else if (key == "problem") {
            try {
                Problem p = parse_descriptor(v);
                p.check();
                l.problem = to_descriptor(p);
            } catch (const Error& e) {
                bad(key, e.what());
            }
        } else if (key == "granularity") {
            try {
                l.granularity = parse_granularity(v);
            } catch (const Error& e) {
                bad(key, e.what());
            }
            has_granularity = true;
        } else {
            throw Error("link: unknown field '" + key + "' (fields: " + std::string(kFields) + ")");
        }
    }
    if (l.lesson > 0) {
        if (!l.view.empty() || !l.problem.empty() || has_granularity)
            bad("lesson", "a lesson's step sets the view, problem and granularity (drop them)");
        if (has_step) l.lesson_step = static_cast<std::size_t>(number("step", step, 1, 9999) - 1);
        return l;
    }
    if (l.view.empty()) bad("view", "missing (a link names a lesson or a view)");
    if (l.problem.empty()) bad("problem", "missing (a view's link names its problem)");
    if (has_step) l.step = static_cast<dim_t>(number("step", step, 0, (1LL << 40)));
    return l;
}

std::string format_link(const Link& l) {
    if (l.lesson > 0)
        return "#lesson=" + std::to_string(l.lesson) + "&step=" + std::to_string(l.lesson_step + 1);
    std::string s = "#view=" + l.view + "&problem=" + l.problem + "&step=" + std::to_string(l.step);
    if (l.granularity != Granularity::Line)
        s += "&granularity=" + std::string(granularity_name(l.granularity));
    return s;
}

std::string lesson_file_of(int n, const std::string& dir) {
    for (const auto& f : lesson::lesson_files(dir))
        if (lesson_number_of(f) == n) return f;
    throw Error("link field 'lesson': no lesson " + std::to_string(n) + " in " + dir);
}

int lesson_number_of(const std::string& file) {
    const std::string name = std::filesystem::path(file).filename().string();
    int n = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    return ec == std::errc() && end != name.data() && *end == '_' ? n : 0;
}

}  // namespace convlab::ui
