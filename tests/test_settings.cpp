// The app's settings file: what is written reads back, a damaged file gives the defaults with one
// warning naming the line and the field, and the path follows XDG.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "model/settings.hpp"
#include "test_files.hpp"

using convlab::test::TempDir;
using namespace convlab::ui;
namespace fs = std::filesystem;

TEST_CASE("settings: what is saved loads back, through an atomic write into a new folder") {
    TempDir dir;
    Settings s;
    s.palette = "colorblind";
    s.font_scale = 1.7f;
    s.presenter = true;
    s.notes = true;
    s.lesson = "/home/t/lessons/14 \"via\" forward.toml";  // quotes and spaces survive
    s.lesson_step = 3;
    s.view = "stride";
    s.problem = "mb1ic1ih6oc1kh3sh2ph1";
    s.window_width = 1280;
    s.window_height = 720;
    REQUIRE_FALSE(s == Settings{});
    const std::string path = (dir.path / "config" / "convlab" / "settings.toml").string();
    save_settings(s, path);
    std::string warning;
    CHECK(load_settings(path, &warning) == s);
    CHECK(warning.empty());
    // Only the file is left in the folder (no temporary).
    CHECK(std::distance(fs::directory_iterator(fs::path(path).parent_path()),
                        fs::directory_iterator()) == 1);
    // A missing file: the defaults, silently.
    CHECK(load_settings((dir.path / "none.toml").string(), &warning) == Settings{});
    CHECK(warning.empty());
}

TEST_CASE("settings: a damaged file gives the defaults and one warning naming line and field") {
    std::string w;
    // Not TOML at all: every default, the warning at the line.
    CHECK(parse_settings("palette = \n", "s.toml", &w) == Settings{});
    CHECK(w.rfind("s.toml:1:", 0) == 0);
    // One bad field: that one keeps its default, the others are taken.
    w.clear();
    const Settings s = parse_settings(
        "palette = \"high-contrast\"\nfont_scale = 9\nlesson_step = 2\n", "s.toml", &w);
    CHECK(s.palette == "high-contrast");
    CHECK(s.font_scale == 1.0f);
    CHECK(s.lesson_step == 2);
    CHECK(w == "s.toml:2:14: 'font_scale' must be a number from 0.6 to 3 (default kept)");
    // Wrong types, unknown palettes, bad descriptors, absurd windows: defaults, never a throw.
    for (const char* text :
         {"presenter = \"yes\"\n", "palette = \"neon\"\n", "problem = \"mb0ic1\"\n",
          "window_width = 1e9\n", "lesson_step = -1\n", "font_scale = nan\n", "view = \"\"\n"}) {
        CAPTURE(text);
        w.clear();
        CHECK(parse_settings(text, "s.toml", &w) == Settings{});
        CHECK(w.find("s.toml:1:") == 0);
        CHECK(w.find("(default kept)") != std::string::npos);
    }
    // A newer version's field is ignored without a word.
    w.clear();
    CHECK(parse_settings("future_option = 3\n", "s.toml", &w) == Settings{});
    CHECK(w.empty());
    // A special file is not read.
    w.clear();
    CHECK(load_settings("/dev/zero", &w) == Settings{});
    CHECK(w.find("/dev/zero") == 0);
}

TEST_CASE("settings: the file lives in XDG_CONFIG_HOME, else ~/.config") {
    const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
    const std::string keep_xdg = old_xdg ? old_xdg : "";
    const char* old_home = std::getenv("HOME");
    const std::string keep_home = old_home ? old_home : "";
    ::setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
    CHECK(settings_path() == "/x/cfg/convlab/settings.toml");
    ::unsetenv("XDG_CONFIG_HOME");
    ::setenv("HOME", "/home/t", 1);
    CHECK(settings_path() == "/home/t/.config/convlab/settings.toml");
    ::unsetenv("HOME");
    CHECK(settings_path().empty());
    if (old_home) ::setenv("HOME", keep_home.c_str(), 1);
    if (old_xdg) ::setenv("XDG_CONFIG_HOME", keep_xdg.c_str(), 1);
}
