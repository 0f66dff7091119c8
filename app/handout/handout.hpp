// A lesson handout for students as one PDF (cairo's PDF surface, A4 landscape): a title page
// (the lesson's title, audience, summary, problem descriptors and its steps with their pages),
// then a page a step (the step's canvas picture as the app draws it, its title, narration and
// checks with their results), then the answers of the steps that hide cells for the class to
// predict (the revealed picture, the answer part of the narration, the hidden values and the
// checks). No window code here: the pictures come in as pixels (the CLI renders them with the
// app's headless shots), so the layout is tested without a display.
#pragma once

#include <string>
#include <vector>

#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"

namespace convlab::handout {

// RGBA8 rows, top row first (ui::FrameReport::image); w == 0: no picture.
struct Picture {
    int w = 0, h = 0;
    std::vector<unsigned char> rgba;
};

struct StepPage {
    lesson::StepResult result;  // the step evaluated (its tensors and its checks)
    app::StepPlan plan;         // its highlights and hidden cells, resolved
    Picture canvas;             // as the class first sees it (hidden cells "?")
    Picture revealed;           // its hidden cells revealed (w == 0 when it hides none)
};

struct Settings {
    // How the pictures were made, for the title page: "1280x720 canvas, presenter mode, ...".
    std::string pictures;
};

// What write_pdf wrote: the number of pages of each part.
struct Summary {
    int pages = 0, title_pages = 0, step_pages = 0, answer_pages = 0;
};

// Writes the handout of lesson l (steps[k] is step k) to `path` through an OutputFile: nothing
// is left at `path` on failure, and special files are refused. Throws Error ("cannot write
// PATH: why", or cairo's reason).
Summary write_pdf(const std::string& path, const lesson::Lesson& l,
                  const std::vector<StepPage>& steps, const Settings& settings);

// The picture less its blank margins (rows and columns of the background colour, the colour of
// its bottom-right pixel), `keep` pixels of them left around what is drawn: a view drawn in the
// top left of a large canvas fills its place on the page. A picture that is all background is
// returned as it is.
Picture trim_blank_margins(const Picture& pic, int keep);

// The answer part of a narration: the text after its "[reveal]" line ("" when it has none).
std::string answer_part(std::string_view narration);

}  // namespace convlab::handout
