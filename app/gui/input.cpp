// The app's keyboard input (gui/input.hpp).
#include "gui/input.hpp"

#include <algorithm>
#include <cctype>
#include <deque>
#include <sstream>
#include <utility>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "convlab/problem.hpp"
#include "imgui.h"
#include "imgui_impl_glfw.h"
#include "imgui_internal.h"  // which item holds the keyboard (ImGuiContext::ActiveId)

namespace convlab::ui {

// Keys and characters from GLFW's callbacks, in order, handed to ImGui and to the app at the
// start of each frame (deliver_input). ImGui 1.86 sees a key as down or up at each frame: a press
// and its release between two frames (a presenter remote sends both at once, a fast typist too)
// was no key at all, so a release in the frame of its press waits one frame. The app's keys are
// its own queue, one press at a time, so that N presses in a frame are N steps. While a text
// field holds the keyboard, the keys are the field's, handed to ImGui a frame at a time and ending
// with Enter, Escape or Tab: what was typed after those reaches the app once the field is left,
// not the field (else the view keys typed after Enter, digits among them, land in the field).
namespace {

struct InputEvent {
    int key = 0;            // a GLFW key; 0: the character ch
    int action = 0;         // GLFW_PRESS, GLFW_REPEAT or GLFW_RELEASE
    unsigned int ch = 0;    // a typed character (key 0)
    bool app_only = false;  // from the presenter window: the app's key, never a field's
};
std::deque<InputEvent> g_events;
std::vector<KeyPress> g_key_presses;  // the app's presses of this frame
std::vector<int> g_deferred_release;

}  // namespace

void key_callback(GLFWwindow*, int key, int, int action, int) {
    g_events.push_back({key, action, 0, false});
}

void char_callback(GLFWwindow*, unsigned int c) {
    g_events.push_back({0, 0, c, false});
}

bool text_field_active() {
    const ImGuiContext& g = *ImGui::GetCurrentContext();
    return g.ActiveId != 0 && g.ActiveId == g.InputTextState.ID;
}

bool deliver_input(GLFWwindow* w) {
    std::vector<int> released;
    released.swap(g_deferred_release);
    for (int key : released) ImGui_ImplGlfw_KeyCallback(w, key, 0, GLFW_RELEASE, 0);
    const bool field = text_field_active();
    std::vector<int> pressed;  // in this frame
    while (!g_events.empty()) {
        const InputEvent e = g_events.front();
        if (e.app_only) {
            if (e.action != GLFW_RELEASE) g_key_presses.push_back({e.key, e.action == GLFW_REPEAT});
            g_events.pop_front();
            continue;
        }
        const bool again =
            e.key != 0 && std::find(pressed.begin(), pressed.end(), e.key) != pressed.end();
        if (again && field) break;  // the field sees the key down this frame, the rest next frame
        g_events.pop_front();
        if (e.key == 0) {
            ImGui_ImplGlfw_CharCallback(w, e.ch);
            continue;
        }
        if (e.action == GLFW_RELEASE) {
            if (again)
                g_deferred_release.push_back(e.key);
            else
                ImGui_ImplGlfw_KeyCallback(w, e.key, 0, GLFW_RELEASE, 0);
            continue;
        }
        ImGui_ImplGlfw_KeyCallback(w, e.key, 0, e.action, 0);
        if (e.action == GLFW_PRESS) pressed.push_back(e.key);
        if (!field) {
            g_key_presses.push_back({e.key, e.action == GLFW_REPEAT});
        } else if (e.key == GLFW_KEY_ENTER || e.key == GLFW_KEY_KP_ENTER ||
                   e.key == GLFW_KEY_ESCAPE || e.key == GLFW_KEY_TAB) {
            return true;
        }
    }
    return false;
}

void queue_app_key(int key, int action) {
    g_events.push_back({key, action, 0, true});
}

bool input_pending() {
    return !g_events.empty();
}

std::vector<KeyPress> take_key_presses() {
    std::vector<KeyPress> keys;
    keys.swap(g_key_presses);
    return keys;
}

// [SECTION] key scripts

std::vector<ScriptKey> parse_key_script(const std::string& keys) {
    static const std::pair<const char*, int> named[] = {
        {"Right", GLFW_KEY_RIGHT},   {"Left", GLFW_KEY_LEFT},      {"Up", GLFW_KEY_UP},
        {"Down", GLFW_KEY_DOWN},     {"PgDn", GLFW_KEY_PAGE_DOWN}, {"PgUp", GLFW_KEY_PAGE_UP},
        {"Home", GLFW_KEY_HOME},     {"End", GLFW_KEY_END},        {"Enter", GLFW_KEY_ENTER},
        {"Escape", GLFW_KEY_ESCAPE}, {"Tab", GLFW_KEY_TAB},        {"Space", GLFW_KEY_SPACE}};
    std::vector<ScriptKey> out;
    std::istringstream in(keys);
    std::string w;
    while (in >> w) {
        ScriptKey k;
        if (w.starts_with("focus:")) {
            k.focus = w.substr(6);
            if (k.focus != "kernel" && k.focus != "descriptor")
                throw Error("--keys '" + w + "': the fields are focus:kernel and focus:descriptor");
            out.push_back(k);
            continue;
        }
        if (w.starts_with("drop:")) {
            k.drop = w.substr(5);
            if (k.drop.empty()) throw Error("--keys 'drop:': a file to drop (drop:PATH)");
            out.push_back(k);
            continue;
        }
        if (w.starts_with("notes:")) {
            k.notes = true;
            w = w.substr(6);
        }
        if (w.size() == 1 && std::isalnum(static_cast<unsigned char>(w[0]))) {
            const char c = w[0];
            k.key = std::toupper(static_cast<unsigned char>(c));  // GLFW_KEY_A is 'A', _0 is '0'
            k.ch = static_cast<unsigned int>(std::tolower(static_cast<unsigned char>(c)));
        } else {
            for (const auto& [name, key] : named)
                if (w == name) k.key = key;
            if (k.key == GLFW_KEY_SPACE) k.ch = ' ';
        }
        if (k.key == 0)
            throw Error("--keys '" + w +
                        "': unknown key (a letter, a digit, Right, Left, Up, Down, PgDn, PgUp, "
                        "Home, End, Enter, Escape, Tab, Space; focus:kernel, focus:descriptor; "
                        "notes:KEY; drop:FILE)");
        out.push_back(k);
    }
    return out;
}

}  // namespace convlab::ui
