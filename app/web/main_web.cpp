// The browser build's entry: opens the app on the page's link (URL fragment, link.hpp), or on
// lesson 1 step 1, and keeps the fragment in step with the app as the user moves.
#include <emscripten.h>

#include <cstdio>
#include <exception>
#include <string>

#include "convlab/problem.hpp"
#include "lesson/lesson.hpp"
#include "gui/gui.hpp"
#include "model/link.hpp"
#include "web/web_glue.hpp"

using namespace convlab;

namespace {

// The options of a link; a bad link is reported on the console and the first lesson opens.
ui::GuiOptions options_of(const std::string& fragment) {
    ui::GuiOptions o;
    const std::string dir = lesson::default_lesson_dir();
    if (!fragment.empty() && fragment != "#") {
        try {
            const ui::Link l = ui::parse_link(fragment);
            if (l.lesson > 0) {
                o.lesson = ui::lesson_file_of(l.lesson, dir);
                o.lesson_step = l.lesson_step;
            } else {
                o.view = l.view;
                o.problem = l.problem;
                o.step = l.step;
                o.granularity = l.granularity;
            }
            return o;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "convlab: %s\n", e.what());
        }
    }
    const auto files = lesson::lesson_files(dir);
    if (!files.empty()) o.lesson = files.front();
    return o;
}

}  // namespace

int main() {
    try {
        ui::GuiOptions o = options_of(ui::web::location_hash());
        o.on_link = [](const std::string& link) { ui::web::set_location_hash(link); };
        ui::run_gui(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "convlab: %s\n", e.what());
        return 2;
    }
    return 0;
}
