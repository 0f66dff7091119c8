// The browser build's entry: opens the app on the page's link (URL fragment, link.hpp), or on
// lesson 1 step 1, and keeps the fragment in step with the app as the user moves.
#include <emscripten.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "convlab/problem.hpp"
#include "gui/gui.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
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

// Every check of every step of the packed lessons, evaluated as the lesson player does (the
// engine, then the view's own checks): one line a check as `convlab lesson check --each` prints it
// ("PASS file:line:column: step K: message"), a step that cannot be evaluated as its error line.
// Called by the browser tests (Module.ccall), which compare the lines with the desktop's.
extern "C" EMSCRIPTEN_KEEPALIVE const char* convlab_lesson_checks() {
    static std::string out;
    out.clear();
    for (const std::string& f : lesson::lesson_files(lesson::default_lesson_dir())) {
        try {
            const lesson::Lesson l = lesson::load_lesson(f);
            for (std::size_t k = 0; k < l.steps.size(); ++k) {
                try {
                    const auto r =
                        std::make_shared<const lesson::StepResult>(lesson::evaluate(l, k));
                    for (std::size_t c = 0; c < r->checks.size(); ++c)
                        out += lesson::check_line(l, k, c, r->checks[c]) + "\n";
                    app::check_step_view(l, k, r);
                } catch (const lesson::LessonError& e) {
                    out += std::string(e.what()) + "\n";
                }
            }
        } catch (const std::exception& e) {
            out += std::string(e.what()) + "\n";
        }
    }
    return out.c_str();
}

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
