// The app's settings between runs: palette, font scale, presenter options, the last lesson and
// step, the window size. A small TOML file in the user's config folder (XDG), written atomically
// when the app closes; a missing file is the defaults, and a malformed one is the defaults with
// one warning naming the file, line and field (the app never refuses to start over it).
#pragma once

#include <cstddef>
#include <string>

namespace convlab::ui {

struct Settings {
    std::string palette = "default";  // a palette key: default | high-contrast | colorblind
    float font_scale = 1.0f;          // 0.6 .. 3
    bool presenter = false;
    bool notes = false;           // presenter mode: the whole narration shown (T)
    std::string lesson;           // the last lesson file ("" none)
    std::size_t lesson_step = 0;  // its step, from 0
    std::string view = "im2col";  // the last view and problem, without a lesson
    std::string problem;
    int window_width = 1600, window_height = 1000;  // 320 .. 16384

    bool operator==(const Settings&) const = default;
};

// $XDG_CONFIG_HOME/convlab/settings.toml, else $HOME/.config/convlab/settings.toml; "" when
// neither variable is set (nothing is then read or written).
std::string settings_path();

// The settings in `text` (the file's contents; `where` names it in a warning). Fields that are
// missing keep their defaults; a field of the wrong type or out of its range keeps its default
// and sets *warning ("FILE:LINE:COL: 'font_scale' is 9: from 0.6 to 3"), as does a file that is
// not TOML. Unknown fields are ignored (a newer version's file reads).
Settings parse_settings(const std::string& text, const std::string& where, std::string* warning);
// The file's text for `s` (parse_settings of it gives `s` back).
std::string settings_text(const Settings& s);

// Reads `path` (missing: the defaults, no warning; larger than 64 KiB, a special file or
// unreadable: the defaults and a warning).
Settings load_settings(const std::string& path, std::string* warning);
// Writes `path` atomically, creating its folder. Throws Error naming the path on failure.
void save_settings(const Settings& s, const std::string& path);

}  // namespace convlab::ui
