// The lesson handout (convlab lesson handout, handout/handout.hpp): the PDF's pages (a title
// page, a page a step, answers at the end), its text as pdftotext reads it back (narration,
// UTF-8 math, checks; a hidden value absent from its step's page and present on the answers
// page), the pictures embedded, and bad input (a missing or malformed lesson, a path that cannot
// be written) leaving no file. pdftotext and pdfinfo are poppler-utils ([test] group of
// third_party/packages.txt).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "handout/handout.hpp"
#include "lesson/lesson.hpp"
#include "model/lesson_player.hpp"
#include "test_files.hpp"
#include "test_lessons.hpp"

namespace fs = std::filesystem;
using convlab::test::can_render;
using convlab::test::Run;
using convlab::test::run_binary;
using convlab::test::TempDir;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

// Occurrences of `what` in `s`.
int count(const std::string& s, const std::string& what) {
    int n = 0;
    for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

// Page objects of a PDF ("/Type /Page", not the "/Type /Pages" tree), as cairo writes them.
int pdf_pages(const std::string& pdf) {
    return count(pdf, "/Type /Page") - count(pdf, "/Type /Pages");
}

bool have_poppler() {
    return std::system("pdftotext -v >/dev/null 2>&1") == 0 &&
           std::system("pdfinfo -v >/dev/null 2>&1") == 0;
}

// The text of page `page` (from 1; 0: every page) as pdftotext reads it; layout: in the page's
// lines (a right-aligned page number on its entry's line).
std::string pdf_text(const std::string& pdf, const TempDir& t, int page = 0, bool layout = false) {
    const std::string out = t / "text.txt";
    const std::string range =
        page > 0 ? " -f " + std::to_string(page) + " -l " + std::to_string(page) : "";
    REQUIRE(std::system(("pdftotext -enc UTF-8" + std::string(layout ? " -layout" : "") + range +
                         " '" + pdf + "' '" + out + "'")
                            .c_str()) == 0);
    return read_all(out);
}

int pdfinfo_pages(const std::string& pdf, const TempDir& t) {
    const std::string out = t / "info.txt";
    REQUIRE(std::system(("pdfinfo '" + pdf + "' > '" + out + "'").c_str()) == 0);
    const std::string info = read_all(out);
    const auto at = info.find("Pages:");
    REQUIRE(at != std::string::npos);
    return std::stoi(info.substr(at + 6));
}

// pdftotext breaks lines where the PDF does: compare with every run of whitespace as one space.
std::string squeeze(const std::string& s) {
    std::string r;
    for (char c : s) {
        const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\f';
        if (space && (r.empty() || r.back() == ' ')) continue;
        r += space ? ' ' : c;
    }
    return r;
}

// A picture of w x h pixels: white, with a dark block at (x, y) of size s.
convlab::handout::Picture picture(int w, int h, int x, int y, int s) {
    convlab::handout::Picture p;
    p.w = w;
    p.h = h;
    p.rgba.assign(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 4, 255);
    for (int j = y; j < y + s; ++j)
        for (int i = x; i < x + s; ++i) {
            unsigned char* px = &p.rgba[(static_cast<std::size_t>(j) * w + i) * 4];
            px[0] = 20;
            px[1] = 40;
            px[2] = 200;
        }
    return p;
}

// A lesson of two steps: the first with UTF-8 math in its narration, the second hiding dX.
const char* const kLesson = R"(title = "Handout test: ∂L/∂x"
audience = "the tests"
summary = "Two steps, one of them predicted."
problem = "mb1ic1iw5oc1kw3pw1"
[data]
src = [1, 2, -1, 3, 0]
wei = [1, 0, -1]
diff_dst = [1, 2, -1, 0, 1]

[[step]]
title = "Forward"
view = "im2col"
narration = """
The sum ∑ₖ p[o + k] w[k] ≤ 3 for every o; ∂L/∂w is next.
  q = [-2, 2, -1, -1, 3]"""
[[step.check]]
tensor = "dst"
equals = [-2, 2, -1, -1, 3]

[[step]]
title = "Backward data"
view = "stride"
narration = """
Predict dL/dp.
[reveal]
The answer: dL/dp = [2, -2, -2, 2, 0]."""
hide = ["diff_src"]
[[step.check]]
tensor = "diff_src"
equals = [2, -2, -2, 2, 0]
)";

}  // namespace

TEST_CASE("handout: answer_part is the narration after its [reveal] line") {
    using convlab::handout::answer_part;
    CHECK(answer_part("Predict it.\n[reveal]\nIt is 2.\nYes.") == "It is 2.\nYes.");
    CHECK(answer_part("No reveal line here.") == "");
    CHECK(answer_part("Question\n[reveal]\n") == "");
}

TEST_CASE("handout: blank margins of a canvas picture are trimmed, what is drawn is kept") {
    using convlab::handout::trim_blank_margins;
    const auto p = picture(200, 100, 50, 30, 10);
    const auto t = trim_blank_margins(p, 4);
    CHECK(t.w == 10 + 8);
    CHECK(t.h == 10 + 8);
    REQUIRE(t.rgba.size() == static_cast<std::size_t>(t.w * t.h * 4));
    // The block's corner sits `keep` pixels in, its colour intact; the corner is background.
    CHECK(t.rgba[(4 * static_cast<std::size_t>(t.w) + 4) * 4 + 2] == 200);
    CHECK(t.rgba[0] == 255);
    // Near an edge the margin kept is what there is; an empty picture stays as it is.
    const auto e = trim_blank_margins(picture(50, 40, 0, 0, 5), 8);
    CHECK(e.w == 13);
    CHECK(e.h == 13);
    const auto blank = trim_blank_margins(picture(30, 20, 0, 0, 0), 4);
    CHECK(blank.w == 30);
    CHECK(blank.h == 20);
}

TEST_CASE("handout: write_pdf lays out the title, a page a step and the answers") {
    REQUIRE_MESSAGE(have_poppler(),
                    "pdftotext/pdfinfo (poppler-utils, [test] of third_party/packages.txt)");
    TempDir t;
    const auto l = convlab::lesson::parse_lesson(kLesson, t / "h.toml");
    std::vector<convlab::handout::StepPage> steps(l.steps.size());
    for (std::size_t k = 0; k < l.steps.size(); ++k) {
        const auto r =
            std::make_shared<const convlab::lesson::StepResult>(convlab::lesson::evaluate(l, k));
        steps[k].plan = convlab::app::plan_step(l, k, r);
        steps[k].result = *r;
        steps[k].canvas = picture(640, 360, 100, 100, 40);
    }
    REQUIRE(steps[1].plan.hidden.size() == 1);
    steps[1].revealed = picture(640, 360, 300, 100, 40);
    const std::string pdf = t / "h.pdf";
    const auto s = convlab::handout::write_pdf(pdf, l, steps, {"Pictures: test pictures"});
    CHECK(s.pages == 4);
    CHECK(s.title_pages == 1);
    CHECK(s.step_pages == 2);
    CHECK(s.answer_pages == 1);
    const std::string bytes = read_all(pdf);
    CHECK(bytes.rfind("%PDF-", 0) == 0);
    CHECK(pdf_pages(bytes) == 4);
    CHECK(pdfinfo_pages(pdf, t) == 4);
    CHECK(count(bytes, "/Subtype /Image") == 3);  // two steps and the revealed one
    // The title page: title (UTF-8), audience, summary, descriptor, the steps with their pages.
    const std::string title = squeeze(pdf_text(pdf, t, 1, true));
    CHECK(title.find("Handout test: ∂L/∂x") != std::string::npos);
    CHECK(title.find("For: the tests") != std::string::npos);
    CHECK(title.find("Two steps, one of them predicted.") != std::string::npos);
    CHECK(title.find("mb1ic1iw5oc1kw3pw1") != std::string::npos);
    CHECK(title.find("Step 2: Backward data page 3") != std::string::npos);
    CHECK(title.find("revealed (step 2) page 4") != std::string::npos);
    // Step 1: its narration with its math as written, the check and its numbers.
    const std::string one = squeeze(pdf_text(pdf, t, 2));
    CHECK(one.find("Step 1 of 2: Forward") != std::string::npos);
    CHECK(one.find("The sum ∑ₖ p[o + k] w[k] ≤ 3 for every o; ∂L/∂w is next.") !=
          std::string::npos);
    CHECK(one.find("q = [-2, 2, -1, -1, 3]") != std::string::npos);
    CHECK(one.find("Checks against the engine: 1 of 1 pass") != std::string::npos);
    CHECK(one.find("PASS dst") != std::string::npos);
    // Step 2 as the class first sees it: the question, not the answer or the values.
    const std::string two = squeeze(pdf_text(pdf, t, 3));
    CHECK(two.find("Predict dL/dp.") != std::string::npos);
    CHECK(two.find("The answer") == std::string::npos);
    CHECK(two.find("2, -2, -2, 2, 0") == std::string::npos);
    CHECK(two.find("diff_src: its value is on the answers pages") != std::string::npos);
    // The answers page: the text after [reveal], the hidden values and the full check.
    const std::string ans = squeeze(pdf_text(pdf, t, 4));
    CHECK(ans.find("Answers: Step 2 of 2: Backward data") != std::string::npos);
    CHECK(ans.find("The answer: dL/dp = [2, -2, -2, 2, 0].") != std::string::npos);
    CHECK(ans.find("diff_src = [2, -2, -2, 2, 0]") != std::string::npos);
    CHECK(ans.find("got 2, expected 2") != std::string::npos);
}

TEST_CASE("handout: a narration longer than a page continues on the next, nothing lost") {
    REQUIRE_MESSAGE(have_poppler(), "pdftotext (poppler-utils)");
    TempDir t;
    std::string text =
        "title = \"Long\"\naudience = \"a\"\nproblem = \"mb1ic1iw5oc1kw3pw1\"\n"
        "[[step]]\nview = \"im2col\"\nnarration = \"\"\"\n";
    for (int i = 0; i < 120; ++i) text += "Line " + std::to_string(i) + " of the narration.\n\n";
    // A word wider than a line (cut between characters) and a formula line wider than the page.
    std::string word;
    for (int i = 0; i < 40; ++i) word += "∂w" + std::to_string(i) + "_";
    text += word + "\n  " + word + " = 1\n";
    text += "The last line.\"\"\"\n";
    const auto l = convlab::lesson::parse_lesson(text, t / "long.toml");
    std::vector<convlab::handout::StepPage> steps(1);
    const auto r =
        std::make_shared<const convlab::lesson::StepResult>(convlab::lesson::evaluate(l, 0));
    steps[0].plan = convlab::app::plan_step(l, 0, r);
    steps[0].result = *r;
    steps[0].canvas = picture(1280, 720, 10, 10, 600);
    const std::string pdf = t / "long.pdf";
    const auto s = convlab::handout::write_pdf(pdf, l, steps, {"x"});
    CHECK(s.step_pages >= 3);
    CHECK(pdfinfo_pages(pdf, t) == s.pages);
    const std::string all = squeeze(pdf_text(pdf, t));
    for (int i = 0; i < 120; ++i)
        CHECK(all.find("Line " + std::to_string(i) + " of the narration.") != std::string::npos);
    CHECK(all.find("The last line.") != std::string::npos);
    // Both copies of the long word, whole once the line breaks are taken out.
    std::string joined;
    for (char c : all)
        if (c != ' ') joined += c;
    CHECK(count(joined, word) == 2);
    CHECK(all.find("Step 1 of 1 (continued)") != std::string::npos);
}

TEST_CASE("handout: write_pdf refuses a special file and leaves an existing file on failure") {
    TempDir t;
    const auto l = convlab::lesson::parse_lesson(kLesson, t / "h.toml");
    std::vector<convlab::handout::StepPage> none;
    const std::string keep = t.write("keep.pdf", "old");
    // A step list that does not match the lesson: nothing written, the old file kept.
    CHECK_THROWS(convlab::handout::write_pdf(keep, l, none, {}));
    CHECK(read_all(keep) == "old");
    CHECK(t.listing() == std::vector<std::string>{"keep.pdf"});
    std::vector<convlab::handout::StepPage> steps(l.steps.size());
    CHECK_THROWS_WITH(convlab::handout::write_pdf(t.path.string(), l, steps, {}),
                      doctest::Contains("cannot write"));
}

TEST_CASE("handout: convlab lesson handout renders every step as the app draws it" *
          doctest::skip(!can_render())) {
    REQUIRE_MESSAGE(have_poppler(), "pdftotext/pdfinfo (poppler-utils)");
    TempDir t;
    const std::string pdf = t / "lesson1.pdf";
    const Run r = run_binary("lesson handout " + convlab::test::lesson_file("01") + " --out " +
                                 pdf + " --size 1024x768 --presenter --palette colorblind",
                             t.path);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("wrote " + pdf +
                     " (6 pages: 1 title, 4 for 4 steps, 1 of answers; 5 of 5 "
                     "checks pass)") != std::string::npos);
    // Lesson 1: a title page, its 4 steps on a page each, and step 3's answers.
    const std::string bytes = read_all(pdf);
    CHECK(pdf_pages(bytes) == 6);
    CHECK(pdfinfo_pages(pdf, t) == 6);
    CHECK(count(bytes, "/Subtype /Image") == 5);  // 4 steps + step 3 revealed
    const std::string title = squeeze(pdf_text(pdf, t, 1));
    CHECK(title.find("Backprop through a 1-D convolution") != std::string::npos);
    CHECK(title.find("1024x768 window, presenter mode, palette colorblind") != std::string::npos);
    const std::string one = squeeze(pdf_text(pdf, t, 2));
    CHECK(one.find("Pad p with one zero on each side: p_pad = [0, 1, 2, -1, 3, 0, 0].") !=
          std::string::npos);
    const std::string three = squeeze(pdf_text(pdf, t, 4));
    CHECK(three.find("Predict dL/dp[0], then reveal it.") != std::string::npos);
    CHECK(three.find("dL/dp = [2, -2, -2, 2, 0]") == std::string::npos);
    const std::string answers = squeeze(pdf_text(pdf, t, 6));
    CHECK(answers.find("dL/dp = [2, -2, -2, 2, 0]") != std::string::npos);
    // The pictures are the app's canvas: pdftoppm's rendering of step 1 has the colours of cells
    // (the colorblind palette's current-step fill is not grey), not only text.
    REQUIRE(std::system(
                ("pdftoppm -r 40 -f 2 -l 2 -png '" + pdf + "' '" + (t / "p") + "'").c_str()) == 0);
    std::string png;
    for (const auto& e : fs::directory_iterator(t.path))
        if (e.path().extension() == ".png") png = e.path().string();
    REQUIRE(!png.empty());
    const auto im = convlab::test::load_png(png);
    CHECK(convlab::test::distinct_colours(im) > 50);
}

TEST_CASE("handout: bad input gives one line, status 2, and no PDF" *
          doctest::skip(!can_render())) {
    TempDir t;
    const std::string pdf = t / "out.pdf";
    const std::string bad = t.write("bad.toml",
                                    "title = \"Bad\"\naudience = \"a\"\n[[step]]\n"
                                    "view = \"no_such_view\"\nnarration = \"n\"\n");
    // A step that parses but whose check names a tensor the step does not have: found when the
    // steps are evaluated, after the window machinery started.
    const std::string bad_check =
        t.write("bad_check.toml",
                "title = \"Bad check\"\naudience = \"a\"\n"
                "problem = \"mb1ic1iw5oc1kw3pw1\"\n[[step]]\nview = \"im2col\"\n"
                "narration = \"n\"\n"
                "[[step.check]]\ntensor = \"no_such_tensor\"\nequals = 1\n");
    const std::string good = convlab::test::lesson_file("01");
    const std::string fifo = t / "fifo.pdf";  // a special file: refused, never opened
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    struct Case {
        std::string args, says;
    };
    const Case cases[] = {
        {"lesson handout " + bad + " --out " + pdf, "bad.toml:4:8: unknown view"},
        {"lesson handout " + bad_check + " --out " + pdf, "no_such_tensor"},
        {"lesson handout " + t / "missing.toml" + " --out " + pdf, "missing.toml"},
        {"lesson handout " + good, "needs --out"},
        {"lesson handout " + good + " --out " + t / "no_dir/out.pdf", "cannot write"},
        {"lesson handout " + good + " --out " + t.path.string(), "cannot write"},
        {"lesson handout " + good + " --out " + fifo, "is a FIFO"},
        {"lesson handout " + good + " --out " + pdf + " --size 10x10", "--size"},
        {"lesson handout " + good + " --out " + pdf + " --palette pink", "--palette"},
        {"lesson show " + good + " --step 1 --out " + pdf, "belongs to 'lesson handout'"},
    };
    for (const Case& c : cases) {
        INFO(c.args);
        const Run r = run_binary(c.args, t.path);
        INFO(r.out << r.err);
        CHECK(r.status == 2);
        CHECK(r.err.rfind("convlab: ", 0) == 0);
        CHECK(count(r.err, "\n") == 1);
        CHECK(r.err.find(c.says) != std::string::npos);
        CHECK(!fs::exists(pdf));
        for (const auto& e : fs::directory_iterator(t.path))  // no temporary left either
            CHECK(e.path().filename().string().rfind(".cl", 0) != 0);
    }
}
