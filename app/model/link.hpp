// A link to a place in the app, as a URL fragment: a lesson's step (`#lesson=14&step=3`, the
// step from 1 as the player counts) or a view's step (`#view=stride&problem=mb1ic1ih6oc1kh3sh2ph1
// &step=7&granularity=line`, the step from 0 as `convlab shot --step`). The browser build keeps
// the page's fragment in step with the app; `convlab gui --open` takes the same string. No imgui,
// no GLFW: parsed and formatted here, tested without a window.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "convlab/index_map.hpp"
#include "convlab/problem.hpp"

namespace convlab::ui {

struct Link {
    int lesson = 0;               // the lesson's number (its file name's prefix); 0: a view
    std::size_t lesson_step = 0;  // the lesson's step, from 0 (the fragment's step=K is K - 1)
    std::string view;             // one of lesson::view_names()
    std::string problem;          // its benchdnn descriptor, canonical (to_descriptor)
    dim_t step = 0;               // the view's step, from 0
    Granularity granularity = Granularity::Line;
    bool operator==(const Link&) const = default;
};

// Reads `#lesson=N[&step=K]` or `#view=NAME&problem=DESC[&step=K][&granularity=G]` (the '#' is
// optional; fields in any order, each at most once). Throws Error naming the field and its rule
// ("link field 'step': ..."), or the unknown field.
Link parse_link(std::string_view fragment);
// The fragment of a link, '#' first; parse_link(format_link(l)) == l for every valid link.
std::string format_link(const Link& l);

// The lesson file of number n in `dir` (the file whose name starts with "NN_"). Throws Error when
// there is none.
std::string lesson_file_of(int n, const std::string& dir);
// The number of a lesson file ("lessons/14_backward.toml" -> 14); 0 when its name has none.
int lesson_number_of(const std::string& file);

}  // namespace convlab::ui
