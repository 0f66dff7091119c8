// The display: GLFW started once (its last error kept for the messages) and the rendered frame
// read back. No ImGui.
#pragma once

#include <string>
#include <vector>

struct GLFWwindow;

namespace convlab::ui {

// GLFW's last error message ("" none).
extern std::string g_glfw_error;
// Starts GLFW once; false without a display.
bool init_glfw();
// The back buffer of `win` as RGBA rows, top first (w, h: its size in pixels).
std::vector<unsigned char> read_back_buffer(int& w, int& h, GLFWwindow* win);

}  // namespace convlab::ui
