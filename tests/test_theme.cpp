// Theme files (app/model/theme.hpp): the shipped themes parse clean, a malformed file gives one
// error per bad line naming the file, the line and the field, and never a crash.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model/theme.hpp"

using convlab::ui::format_theme;
using convlab::ui::kThemeFields;
using convlab::ui::parse_theme;
using convlab::ui::Rgb;
using convlab::ui::Theme;

namespace {

std::size_t field(const char* name) {
    for (std::size_t k = 0; k < kThemeFields.size(); ++k)
        if (std::string(kThemeFields[k]) == name) return k;
    FAIL("no field " << name);
    return 0;
}

}  // namespace

TEST_CASE("theme: the shipped themes set every field and have no errors") {
    const std::filesystem::path dir = std::filesystem::path(CONVLAB_SOURCE_DIR) / "assets/themes";
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".theme") continue;
        ++files;
        std::ifstream in(e.path());
        std::stringstream text;
        text << in.rdbuf();
        const Theme t = parse_theme(text.str(), e.path().string());
        CAPTURE(e.path().string());
        CHECK(t.errors.empty());
        REQUIRE(t.name.has_value());
        for (const auto& c : t.colour) CHECK(c.has_value());
    }
    CHECK(files == 3);
}

TEST_CASE("theme: colours, names, comments and blank lines") {
    const Theme t = parse_theme(
        "# a comment\n\n  name = my room  \r\nbackground=#FF00fe\r\n"
        "\tgrid =  #010203\t\n",
        "room.theme");
    CHECK(t.errors.empty());
    CHECK(t.name == "my room");
    CHECK(t.colour[field("background")] == Rgb{255, 0, 254});
    CHECK(t.colour[field("grid")] == Rgb{1, 2, 3});
    CHECK_FALSE(t.colour[field("cell")].has_value());  // unset: the built-in colour stays
}

TEST_CASE("theme: each bad line is one error naming file, line and field") {
    const std::string text =
        "name = ok\n"             // 1
        "background = #ff00ff\n"  // 2
        "not a line\n"            // 3
        "grid = #-1-1-1\n"        // 4: sscanf's %x took signs
        "cell = #12345\n"         // 5: too short
        "positve = #000000\n"     // 6: misspelt field
        "= #000000\n"             // 7
        "name =\n"                // 8
        "good = red\n"            // 9
        "name = " +
        std::string(65, 'x') +
        "\n"  // 10
        "name = a\x01"
        "b\n"             // 11
        "bad = #00ff00";  // 12, no newline: still read
    const Theme t = parse_theme(text, "t.theme");
    REQUIRE(t.errors.size() == 9);
    CHECK(t.errors[0] == "t.theme:3: expected 'field = value', got 'not a line'");
    CHECK(t.errors[1] == "t.theme:4: field 'grid': '#-1-1-1' is not a colour #rrggbb");
    CHECK(t.errors[2] == "t.theme:5: field 'cell': '#12345' is not a colour #rrggbb");
    CHECK(t.errors[3].rfind("t.theme:6: field 'positve': not a theme field", 0) == 0);
    CHECK(t.errors[4] == "t.theme:7: a field name is needed before '='");
    CHECK(t.errors[5] == "t.theme:8: field 'name': the name is empty");
    CHECK(t.errors[6] == "t.theme:9: field 'good': 'red' is not a colour #rrggbb");
    CHECK(t.errors[7] == "t.theme:10: field 'name': 65 bytes, more than a name may hold (64)");
    CHECK(t.errors[8] == "t.theme:11: field 'name': the name holds a control character");
    // The good lines still apply; the bad ones leave their fields unset.
    CHECK(t.name == "ok");
    CHECK(t.colour[field("background")] == Rgb{255, 0, 255});
    CHECK(t.colour[field("bad")] == Rgb{0, 255, 0});
    CHECK_FALSE(t.colour[field("grid")].has_value());
    CHECK_FALSE(t.colour[field("good")].has_value());
}

TEST_CASE("theme: garbage, NUL bytes and oversized files give errors, not crashes") {
    std::string garbage;
    for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 7919) % 256);
    const Theme g = parse_theme(garbage, "g.theme");
    for (const std::string& e : g.errors) {
        CHECK(e.rfind("g.theme:", 0) == 0);
        CHECK(e.find('\n') == std::string::npos);
    }
    const Theme nul = parse_theme(std::string("grid = #00\0"
                                              "000\n",
                                              15),
                                  "n.theme");
    REQUIRE(nul.errors.size() == 1);
    CHECK(nul.errors[0] == "n.theme:1: field 'grid': '#00?000' is not a colour #rrggbb");
    const Theme big = parse_theme(std::string((64 << 10) + 1, '#'), "b.theme");
    REQUIRE(big.errors.size() == 1);
    CHECK(big.errors[0] == "b.theme:1: 65537 bytes, more than a theme file may hold (65536)");
}

TEST_CASE("theme: what parses prints and parses back to the same theme") {
    const Theme t = parse_theme("name = x y\nhovered = #a0b1c2\nbad = #000001\n", "r.theme");
    const Theme back = parse_theme(format_theme(t), "r.theme");
    CHECK(back.errors.empty());
    CHECK(back.name == t.name);
    CHECK(back.colour == t.colour);
}
