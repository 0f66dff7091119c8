#include "model/theme.hpp"

#include <algorithm>
#include <cstdio>

namespace convlab::ui {

namespace {

std::string_view trim(std::string_view t) {
    const auto a = t.find_first_not_of(" \t\r");
    if (a == std::string_view::npos) return {};
    const auto b = t.find_last_not_of(" \t\r");
    return t.substr(a, b - a + 1);
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// "#rrggbb" exactly: sscanf's %x would also take signs and blanks ("#-1-1-1").
std::optional<Rgb> parse_colour(std::string_view v) {
    if (v.size() != 7 || v[0] != '#') return std::nullopt;
    std::uint8_t c[3];
    for (int i = 0; i < 3; ++i) {
        const int hi = hex_digit(v[static_cast<std::size_t>(1 + 2 * i)]);
        const int lo = hex_digit(v[static_cast<std::size_t>(2 + 2 * i)]);
        if (hi < 0 || lo < 0) return std::nullopt;
        c[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return Rgb{c[0], c[1], c[2]};
}

// Shows a value in an error: at most 40 bytes, control bytes as '?', so that one error stays
// one readable line whatever the file holds.
std::string shown(std::string_view v) {
    std::string out;
    for (char ch : v.substr(0, 40))
        out += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f ? '?' : ch;
    if (v.size() > 40) out += "...";
    return out;
}

}  // namespace

Theme parse_theme(std::string_view text, std::string_view file) {
    Theme theme;
    std::size_t line_no = 0;
    auto fail = [&](std::string_view field, const std::string& why) {
        std::string e = std::string(file) + ":" + std::to_string(line_no) + ": ";
        if (!field.empty()) e += "field '" + shown(field) + "': ";
        theme.errors.push_back(e + why);
    };
    if (text.size() > kThemeFileMax) {
        line_no = 1;
        fail("", std::to_string(text.size()) + " bytes, more than a theme file may hold (" +
                     std::to_string(kThemeFileMax) + ")");
        return theme;
    }
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto end = text.find('\n', pos);
        const std::string_view raw =
            text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
        pos = end == std::string_view::npos ? text.size() : end + 1;
        ++line_no;
        const std::string_view line = trim(raw);
        if (line.empty() || line[0] == '#') continue;
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            fail("", "expected 'field = value', got '" + shown(line) + "'");
            continue;
        }
        const std::string_view key = trim(line.substr(0, eq)), val = trim(line.substr(eq + 1));
        if (key.empty()) {
            fail("", "a field name is needed before '='");
            continue;
        }
        if (key == "name") {
            if (val.empty())
                fail(key, "the name is empty");
            else if (val.size() > kThemeNameMax)
                fail(key, std::to_string(val.size()) + " bytes, more than a name may hold (" +
                              std::to_string(kThemeNameMax) + ")");
            else if (std::find_if(val.begin(), val.end(), [](char ch) {
                         return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
                     }) != val.end())
                fail(key, "the name holds a control character");
            else
                theme.name = std::string(val);
            continue;
        }
        std::size_t k = 0;
        while (k < kThemeFields.size() && key != kThemeFields[k]) ++k;
        if (k == kThemeFields.size()) {
            fail(key,
                 "not a theme field (name, background, panel_text, ... bad: see "
                 "assets/themes/default.theme)");
            continue;
        }
        if (const std::optional<Rgb> c = parse_colour(val))
            theme.colour[k] = c;
        else
            fail(key, "'" + shown(val) + "' is not a colour #rrggbb");
    }
    return theme;
}

std::string format_theme(const Theme& theme) {
    std::string out;
    if (theme.name) out += "name = " + *theme.name + "\n";
    for (std::size_t k = 0; k < kThemeFields.size(); ++k) {
        if (!theme.colour[k]) continue;
        char hex[8];
        std::snprintf(hex, sizeof hex, "#%02x%02x%02x", theme.colour[k]->r, theme.colour[k]->g,
                      theme.colour[k]->b);
        out += std::string(kThemeFields[k]) + " = " + hex + "\n";
    }
    return out;
}

}  // namespace convlab::ui
