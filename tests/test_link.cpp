// Links to a place in the app (model/link.hpp): the URL fragments of the browser build and
// `convlab gui --open`. Round trips, the canonical form, and each bad input refused with a
// message naming its field.
#include <doctest/doctest.h>

#include <string>

#include "model/link.hpp"
#include "test_files.hpp"

using namespace convlab;
using convlab::ui::Link;

namespace {

// The message of the Error that parse_link throws ("" when it accepts the fragment).
std::string refusal(const std::string& fragment) {
    try {
        ui::parse_link(fragment);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a lesson's link names its number and step (from 1), and reads back the same") {
    const Link l = ui::parse_link("#lesson=14&step=3");
    CHECK(l.lesson == 14);
    CHECK(l.lesson_step == 2);
    CHECK(l.view.empty());
    CHECK(ui::format_link(l) == "#lesson=14&step=3");
    // Without '#', fields in any order; no step is step 1.
    CHECK(ui::parse_link("step=3&lesson=14") == l);
    const Link first = ui::parse_link("lesson=1");
    CHECK(first.lesson_step == 0);
    CHECK(ui::format_link(first) == "#lesson=1&step=1");
}

TEST_CASE("a view's link names view, problem, step (from 0) and granularity, canonically") {
    const Link l = ui::parse_link("#view=stride&problem=mb1ic1ih6oc1kh3sh2ph1&step=7");
    CHECK(l.lesson == 0);
    CHECK(l.view == "stride");
    CHECK(l.step == 7);
    CHECK(l.granularity == Granularity::Line);
    CHECK(l.problem == to_descriptor(parse_descriptor("mb1ic1ih6oc1kh3sh2ph1")));
    CHECK(ui::parse_link(ui::format_link(l)) == l);
    const Link t = ui::parse_link("granularity=tile&problem=mb1ic16ih4oc16kh3ph1&view=fractal");
    CHECK(t.granularity == Granularity::Tile);
    CHECK(t.step == 0);
    CHECK(ui::format_link(t).find("&granularity=tile") != std::string::npos);
    CHECK(ui::parse_link(ui::format_link(t)) == t);
    // Every granularity and a large step survive the round trip.
    for (const char* g : {"element", "line", "tile", "whole"}) {
        Link v = l;
        v.granularity = parse_granularity(g);
        v.step = 123456789;
        CHECK(ui::parse_link(ui::format_link(v)) == v);
    }
}

TEST_CASE("a bad link is refused with a message naming its field and rule") {
    CHECK(refusal("") == "link: empty (expected lesson=N or view=NAME&problem=DESC)");
    CHECK(refusal("#lesson=0").find("link field 'lesson': '0' is not a whole number from 1") == 0);
    CHECK(refusal("#lesson=x1").find("link field 'lesson'") == 0);
    CHECK(refusal("#lesson=3&step=0").find("link field 'step': '0' is not a whole number") == 0);
    CHECK(refusal("#lesson=3&step=2x").find("link field 'step'") == 0);
    CHECK(refusal("#lesson=3&lesson=4") == "link field 'lesson': given twice");
    CHECK(refusal("#lesson=3&view=stride").find("link field 'lesson': a lesson's step sets") == 0);
    CHECK(refusal("#view=nosuch&problem=mb1ic1ih6oc1kh3")
              .find("link field 'view': 'nosuch' is not one of") == 0);
    CHECK(refusal("#view=stride").find("link field 'problem': missing") == 0);
    CHECK(refusal("#problem=mb1ic1ih6oc1kh3").find("link field 'view': missing") == 0);
    CHECK(refusal("#view=stride&problem=mb1ic1ih2oc1kh3").find("link field 'problem': ") == 0);
    CHECK(refusal("#view=stride&problem=mb1ic1ih6oc1kh3&step=-1").find("link field 'step'") == 0);
    CHECK(refusal("#view=stride&problem=mb1ic1ih6oc1kh3&granularity=row2")
              .find("link field 'granularity': step granularity 'row2'") == 0);
    CHECK(refusal("#view=stride&problem=mb1ic1ih6oc1kh3&zoom=2") ==
          "link: unknown field 'zoom' (fields: lesson, step, view, problem, granularity)");
    CHECK(refusal("#view").find("link: 'view' is not FIELD=VALUE") == 0);
}

TEST_CASE("a link's lesson number finds its file among the lessons") {
    convlab::test::TempDir dir;
    dir.write("01_first.toml", "");
    dir.write("14_backward.toml", "");
    dir.write("notes.toml", "");
    CHECK(ui::lesson_file_of(14, dir.path.string()) == dir / "14_backward.toml");
    CHECK(ui::lesson_file_of(1, dir.path.string()) == dir / "01_first.toml");
    CHECK_THROWS_WITH_AS(ui::lesson_file_of(2, dir.path.string()),
                         doctest::Contains("link field 'lesson': no lesson 2 in"), Error);
    CHECK(ui::lesson_number_of("lessons/14_backward.toml") == 14);
    CHECK(ui::lesson_number_of("notes.toml") == 0);
    CHECK(ui::lesson_number_of("/x/3x_odd.toml") == 0);
}

TEST_CASE("convlab gui --open refuses a bad link before any window opens") {
    const auto r = convlab::test::run_in_process({"gui", "--open", "#lesson=99"});
    CHECK(r.status == 2);
    CHECK(r.err.find("convlab: --open: link field 'lesson': no lesson 99 in") == 0);
    const auto v = convlab::test::run_in_process({"gui", "--open", "#view=stride&step=1"});
    CHECK(v.status == 2);
    CHECK(v.err ==
          "convlab: --open: link field 'problem': missing (a view's link names its "
          "problem)\n");
    const auto both =
        convlab::test::run_in_process({"gui", "--open", "#lesson=1", "--lesson", "2"});
    CHECK(both.status == 2);
    CHECK(both.err.find("convlab: --open: the link sets the lesson or view") == 0);
}
