// The app's keyboard input (internal to the app's ui library): GLFW's key and character events
// queued and handed to ImGui and to the app at the start of each frame, so that no key is lost
// between two frames and a text field keeps only its own keys; and the key scripts with which
// headless shots press keys (ShotOptions::keys).
#pragma once

#include <string>
#include <vector>

struct GLFWwindow;

namespace convlab::ui {

// GLFW callbacks of the main window: they only queue the event.
void key_callback(GLFWwindow* w, int key, int scancode, int action, int mods);
void char_callback(GLFWwindow* w, unsigned int c);
// A key event that is the app's whatever holds the keyboard (the presenter window's keys).
void queue_app_key(int key, int action);

// Whether an ImGui text field holds the keyboard (ImGui's own io.WantTextInput lags a frame).
bool text_field_active();
// Before ImGui::NewFrame: hands queued events to ImGui (window w's backend) and the app's key
// presses to take_key_presses(). Returns true when it handed a text field Enter, Escape or Tab.
bool deliver_input(GLFWwindow* w);
// Events still queued (a text field takes them a frame at a time).
bool input_pending();

struct KeyPress {
    int key = 0;
    bool repeat = false;  // GLFW_REPEAT (key held)
};
// The app's key presses handed out by deliver_input since the last call, in order.
std::vector<KeyPress> take_key_presses();

// One word of a key script (check_key_script in gui.hpp says the words).
struct ScriptKey {
    std::string focus;  // "kernel" or "descriptor": that field takes the keyboard
    int key = 0;
    unsigned int ch = 0;  // the character it types (0 none)
    bool notes = false;   // pressed in the presenter window
    std::string drop;     // a file dropped on the window ("drop:PATH"), as GLFW's drop callback
};
// Throws Error naming a word it does not know.
std::vector<ScriptKey> parse_key_script(const std::string& keys);

}  // namespace convlab::ui
