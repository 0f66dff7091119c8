// The display: GLFW started once, the rendered frame read back.
#include "platform/display.hpp"

#include <algorithm>

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include "gui/gui.hpp"

namespace convlab::ui {

std::string g_glfw_error;
bool g_glfw_ready = false;

bool init_glfw() {
    if (g_glfw_ready) return true;
    glfwSetErrorCallback([](int, const char* msg) { g_glfw_error = msg; });
    g_glfw_ready = glfwInit() == GLFW_TRUE;
    return g_glfw_ready;
}

std::vector<unsigned char> read_back_buffer(int& w, int& h, GLFWwindow* win) {
    glfwGetFramebufferSize(win, &w, &h);
    std::vector<unsigned char> px(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    // OpenGL rows are bottom first.
    const std::size_t row = static_cast<std::size_t>(w) * 4;
    for (int y = 0; y < h / 2; ++y)
        std::swap_ranges(px.begin() + static_cast<std::ptrdiff_t>(y * row),
                         px.begin() + static_cast<std::ptrdiff_t>((y + 1) * row),
                         px.begin() + static_cast<std::ptrdiff_t>((h - 1 - y) * row));
    for (std::size_t i = 3; i < px.size(); i += 4) px[i] = 255;
    return px;
}

bool display_available() {
    return init_glfw();
}

}  // namespace convlab::ui
