// The view registry: every view of the app in one table, read by the lesson parser (a step's
// 'view'), the app's view list, `convlab shot --view` and `convlab demo`. The hand-written views
// come first; then one generic view "map:NAME" per map of the map registry
// (convlab/map_registry.hpp), which animates that map with default panel roles, so a newly
// registered map is a view, a `convlab shot --view`, and a lesson step's view at once.
//
// The views' builders live in the app's model (app/model/views/, app/model/view_generic.cpp): this
// table holds what the lesson parser and the command line need without the model.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace convlab::lesson {

struct ViewDemo {
    std::string problem;      // a descriptor chosen so that the view shows its point
    std::string granularity;  // element | line | tile | whole
};

struct ViewSpec {
    std::string name;
    std::string summary;
    std::vector<ViewDemo> demos;       // the problems `convlab demo` renders it at
    std::vector<std::string> tensors;  // the lesson tensors its panels show (lesson vocabulary)
    std::string map;                   // a generic map view: the registered map; "" otherwise
};

// Prefix of the generic map views' names: "map:" + the map's registry name.
inline constexpr std::string_view kMapViewPrefix = "map:";

const std::vector<ViewSpec>& view_registry();
// The view called `name`; null when there is none.
const ViewSpec* find_view(std::string_view name);

}  // namespace convlab::lesson
