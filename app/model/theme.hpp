// Theme files (assets/themes/KEY.theme): the palette colours of the app and of `convlab shot`,
// as text a teacher edits. No imgui here: the parser is tested and fuzzed without a window.
//
// Format, one entry a line: "field = #rrggbb" for a colour field (kThemeFields), "name = text"
// for the palette's name in the app, '#' starts a comment line, blank lines are skipped. A bad
// line is reported as "FILE:LINE: field 'F': why" and the rest of the file still applies: the
// app never fails over a theme, and the author learns which line to fix.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace convlab::ui {

// The colour fields, in the order of the app's Palette.
inline constexpr std::array<const char*, 15> kThemeFields = {
    "background", "panel_text", "dim_text", "cell", "pending",    "padding", "positive", "negative",
    "current",    "linked",     "hovered",  "grid", "value_text", "good",    "bad"};
inline constexpr std::size_t kThemeNameMax = 64;        // bytes of "name = ..."
inline constexpr std::size_t kThemeFileMax = 64 << 10;  // bytes of a theme file

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
    bool operator==(const Rgb&) const = default;
};

struct Theme {
    std::optional<std::string> name;                             // set by "name = ..."
    std::array<std::optional<Rgb>, kThemeFields.size()> colour;  // by kThemeFields index
    std::vector<std::string> errors;  // "FILE:LINE: field 'F': why", one per bad line
    bool operator==(const Theme&) const = default;
};

// Parses a theme's text; `file` names it in the errors. Never throws for any text.
Theme parse_theme(std::string_view text, std::string_view file);
// The text of a theme (its name and set colours, no errors): parse_theme reads it back equal.
std::string format_theme(const Theme& theme);

}  // namespace convlab::ui
