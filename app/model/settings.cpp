#include "model/settings.hpp"

#include <toml++/toml.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "convlab/output_file.hpp"
#include "convlab/problem.hpp"  // Error

namespace convlab::ui {

namespace {

constexpr std::uintmax_t kMaxSettingsBytes = 64 * 1024;
constexpr std::size_t kMaxText = 4096;  // a path or a descriptor

// One warning is enough to tell the user their file was not taken whole; the first one found.
void warn(std::string* warning, const std::string& text) {
    if (warning && warning->empty()) *warning = text;
}

std::string at(const std::string& where, const toml::node& n) {
    const auto& b = n.source().begin;
    return where + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": ";
}

}  // namespace

std::string settings_path() {
    namespace fs = std::filesystem;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x == '/')
        return (fs::path(x) / "convlab" / "settings.toml").string();
    if (const char* h = std::getenv("HOME"); h && *h)
        return (fs::path(h) / ".config" / "convlab" / "settings.toml").string();
    return "";
}

Settings parse_settings(const std::string& text, const std::string& where, std::string* warning) {
    Settings s;
    toml::table t;
    try {
        t = toml::parse(text, where);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        warn(warning, where + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                          std::string(e.description()) + " (settings not read)");
        return s;
    }
    const auto text_field = [&](const char* key, std::string& out, bool (*ok)(const std::string&),
                                const char* rule) {
        const toml::node* n = t.get(key);
        if (!n) return;
        const auto v = n->value<std::string>();
        if (!v || v->size() > kMaxText || (ok && !ok(*v))) {
            warn(warning, at(where, *n) + "'" + key + "' " + rule + " (default kept)");
            return;
        }
        out = *v;
    };
    const auto number = [&](const char* key, double lo, double hi, auto& out) {
        const toml::node* n = t.get(key);
        if (!n) return;
        const auto v = n->value<double>();  // integers too
        if (!v || !(*v >= lo && *v <= hi)) {
            std::ostringstream rule;
            rule << "'" << key << "' must be a number from " << lo << " to " << hi;
            warn(warning, at(where, *n) + rule.str() + " (default kept)");
            return;
        }
        out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    };
    const auto flag = [&](const char* key, bool& out) {
        const toml::node* n = t.get(key);
        if (!n) return;
        if (const auto v = n->value<bool>()) {
            out = *v;
        } else {
            warn(warning, at(where, *n) + "'" + key + "' must be true or false (default kept)");
        }
    };
    text_field(
        "palette", s.palette,
        [](const std::string& v) {
            return v == "default" || v == "high-contrast" || v == "colorblind";
        },
        "must be default, high-contrast or colorblind");
    number("font_scale", 0.6, 3.0, s.font_scale);
    flag("presenter", s.presenter);
    flag("notes", s.notes);
    text_field("lesson", s.lesson, nullptr, "must be a path of at most 4096 bytes");
    number("lesson_step", 0, 9999, s.lesson_step);
    text_field(
        "view", s.view, [](const std::string& v) { return !v.empty() && v.size() < 32; },
        "must be a view name");
    text_field(
        "problem", s.problem,
        [](const std::string& v) {
            if (v.empty()) return true;
            try {
                return parse_descriptor(v).validate().empty();
            } catch (const Error&) {
                return false;
            }
        },
        "must be a valid problem descriptor");
    number("window_width", 320, 16384, s.window_width);
    number("window_height", 240, 16384, s.window_height);
    return s;
}

std::string settings_text(const Settings& s) {
    toml::table t{{"palette", s.palette},
                  {"font_scale", static_cast<double>(s.font_scale)},
                  {"presenter", s.presenter},
                  {"notes", s.notes},
                  {"lesson", s.lesson},
                  {"lesson_step", static_cast<std::int64_t>(s.lesson_step)},
                  {"view", s.view},
                  {"problem", s.problem},
                  {"window_width", s.window_width},
                  {"window_height", s.window_height}};
    std::ostringstream out;
    out << "# ConvLab's settings, written when the app closes (the sidebar's \"reset settings\""
           " deletes this file)\n"
        << t << "\n";
    return out.str();
}

Settings load_settings(const std::string& path, std::string* warning) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (path.empty() || !fs::exists(fs::symlink_status(path, ec))) return {};
    std::string text;
    try {
        text = read_input_file(path, kMaxSettingsBytes, "settings file");
    } catch (const Error& e) {
        warn(warning, std::string(e.what()) + " (settings not read)");
        return {};
    }
    return parse_settings(text, path, warning);
}

void save_settings(const Settings& s, const std::string& path) {
    namespace fs = std::filesystem;
    if (path.empty()) return;
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) throw Error(fs::path(path).parent_path().string() + ": cannot create: " + ec.message());
    write_file(path, settings_text(s));
}

}  // namespace convlab::ui
