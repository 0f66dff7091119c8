// The palettes (built in, and as theme files override them) and the colours of cell groups.
#include "gui/app.hpp"

namespace convlab::ui {

// Okabe-Ito colours (orange E69F00, sky blue 56B4E9, bluish green 009E73, vermillion D55E00,
// blue 0072B2) for the colour-blind-safe palette; the default uses them too on a light ground.
const Palette kBuiltinPalettes[] = {
    {"light (default)", IM_COL32(246, 246, 242, 255), IM_COL32(20, 20, 20, 255),
     IM_COL32(90, 90, 90, 255), IM_COL32(255, 255, 255, 255), IM_COL32(226, 226, 226, 255),
     IM_COL32(200, 200, 200, 255), IM_COL32(214, 96, 77, 255), IM_COL32(67, 147, 195, 255),
     IM_COL32(230, 159, 0, 255), IM_COL32(86, 180, 233, 255), IM_COL32(0, 114, 178, 255),
     IM_COL32(150, 150, 150, 255), IM_COL32(10, 10, 10, 255), IM_COL32(0, 130, 60, 255),
     IM_COL32(200, 0, 0, 255)},
    {"high contrast (projector)", IM_COL32(0, 0, 0, 255), IM_COL32(255, 255, 255, 255),
     IM_COL32(220, 220, 220, 255), IM_COL32(30, 30, 30, 255), IM_COL32(70, 70, 70, 255),
     IM_COL32(110, 110, 110, 255), IM_COL32(255, 90, 60, 255), IM_COL32(60, 160, 255, 255),
     IM_COL32(255, 220, 0, 255), IM_COL32(0, 230, 255, 255), IM_COL32(255, 0, 255, 255),
     IM_COL32(160, 160, 160, 255), IM_COL32(255, 255, 255, 255), IM_COL32(0, 255, 120, 255),
     IM_COL32(255, 60, 60, 255)},
    {"colour-blind safe", IM_COL32(250, 250, 250, 255), IM_COL32(0, 0, 0, 255),
     IM_COL32(80, 80, 80, 255), IM_COL32(255, 255, 255, 255), IM_COL32(222, 222, 222, 255),
     IM_COL32(190, 190, 190, 255), IM_COL32(213, 94, 0, 255), IM_COL32(0, 114, 178, 255),
     IM_COL32(230, 159, 0, 255), IM_COL32(86, 180, 233, 255), IM_COL32(0, 158, 115, 255),
     IM_COL32(140, 140, 140, 255), IM_COL32(0, 0, 0, 255), IM_COL32(0, 158, 115, 255),
     IM_COL32(213, 94, 0, 255)},
};
const char* const kPaletteKeys[kNumPalettes] = {"default", "high-contrast", "colorblind"};

// Theme files assets/themes/KEY.theme override the built-in palettes (format: model/theme.hpp). A
// missing file keeps the built-in palette; a bad line keeps that colour and is reported on
// standard error with its file and line (the app never fails over a theme).
std::vector<Palette> load_palettes() {
    std::vector<Palette> out(std::begin(kBuiltinPalettes), std::end(kBuiltinPalettes));
    // Keeps theme names alive for Palette::name: a deque never moves its strings (a vector's
    // growth left earlier names dangling).
    static std::deque<std::string> names;
    // The current directory's assets/themes first (a teacher's own themes), then the data
    // folder's; without either the built-in palettes stand.
    std::vector<std::string> dirs{"assets/themes"};
    try {
        dirs.push_back(data::themes_dir());
    } catch (const Error&) {
    }
    for (int i = 0; i < kNumPalettes; ++i) {
        // A theme is a few dozen lines: anything but a regular file of at most 64 KiB is passed
        // over like a missing one (a FIFO would block the app, /dev/zero fill it).
        std::string text, file;
        for (const std::string& dir : dirs) {
            try {
                file = dir + "/" + kPaletteKeys[i] + ".theme";
                text = read_input_file(file, kThemeFileMax, "a theme file");
                break;
            } catch (const Error&) {
                file.clear();
            }
        }
        if (file.empty()) continue;
        const Theme theme = parse_theme(text, file);
        constexpr std::size_t kShownErrors = 5;  // a garbled file must not flood the terminal
        for (std::size_t e = 0; e < theme.errors.size() && e < kShownErrors; ++e)
            std::fprintf(stderr, "convlab: %s (the built-in colour stays)\n",
                         theme.errors[e].c_str());
        if (theme.errors.size() > kShownErrors)
            std::fprintf(stderr, "convlab: %s: %zu more bad lines\n", file.c_str(),
                         theme.errors.size() - kShownErrors);
        Palette& p = out[static_cast<std::size_t>(i)];
        if (theme.name) {
            names.push_back(*theme.name);
            p.name = names.back().c_str();
        }
        ImU32* const fields[kThemeFields.size()] = {
            &p.background, &p.panel_text, &p.dim_text,   &p.cell,    &p.pending,
            &p.padding,    &p.positive,   &p.negative,   &p.current, &p.linked,
            &p.hovered,    &p.grid,       &p.value_text, &p.good,    &p.bad};
        for (std::size_t k = 0; k < kThemeFields.size(); ++k)
            if (const auto& c = theme.colour[k]) *fields[k] = IM_COL32(c->r, c->g, c->b, 255);
    }
    return out;
}

const std::vector<Palette>& palettes() {
    static const std::vector<Palette> p = load_palettes();
    return p;
}

ImU32 mix(ImU32 a, ImU32 b, float t) {
    const ImVec4 x = ImGui::ColorConvertU32ToFloat4(a), y = ImGui::ColorConvertU32ToFloat4(b);
    return ImGui::ColorConvertFloat4ToU32(
        ImVec4(x.x + (y.x - x.x) * t, x.y + (y.y - x.y) * t, x.z + (y.z - x.z) * t, 1.0f));
}

float luminance(ImU32 c) {
    const ImVec4 v = ImGui::ColorConvertU32ToFloat4(c);
    return 0.2126f * v.x + 0.7152f * v.y + 0.0722f * v.z;
}

// t as drawn in `width` pixels at font size `size`: whole, or cut with "..." where it is wider
// (the rule of the panels' titles, export/view_drawing.hpp).
std::string cut_to_width(const ImFont* font, float size, const std::string& t, float width) {
    return app::cut_to_width(t, width, size, [font](const std::string& x, float sz) {
        return font->CalcTextSizeA(sz, FLT_MAX, 0.0f, x.c_str()).x;
    });
}

// Outline colours of a panel's cell groups (the stride phases of dX), in every palette: hues
// apart from the value colours (red, blue), the current step (orange), the linked and hovered
// cells (sky blue, blue) and a lesson's highlights (magenta), dark enough on a light ground and
// light enough on a dark one.
constexpr ImU32 kGroupColours[app::kMaxPhases] = {
    IM_COL32(0, 158, 115, 255), IM_COL32(170, 90, 40, 255), IM_COL32(130, 110, 220, 255),
    IM_COL32(150, 140, 0, 255), IM_COL32(0, 130, 150, 255), IM_COL32(120, 120, 120, 255),
    IM_COL32(90, 170, 60, 255), IM_COL32(140, 20, 40, 255), IM_COL32(180, 140, 0, 255)};
ImU32 group_colour(std::uint8_t g) {
    return kGroupColours[g % app::kMaxPhases];
}
// A group outline's thickness in a cell of z px: inside the cell, clear of most of its digits.
float group_outline_px(float z) {
    return std::max(2.5f, z * 0.1f);
}

}  // namespace convlab::ui
