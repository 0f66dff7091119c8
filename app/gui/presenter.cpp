// The presenter window (gui/presenter.hpp).
#include "gui/presenter.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include "convlab/problem.hpp"
#include "imgui.h"
#include "imgui_impl_glfw.h"
#include "imgui_impl_opengl3.h"

namespace convlab::ui {

ImFont* setup_app_context(float font_px) {
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    ImGui::StyleColorsLight();
    ImGui::GetStyle().FrameRounding = 3;
    // DejaVu Sans with arrows, Greek and math symbols; ImGui's own font without it.
    static const ImWchar ranges[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x2190, 0x21FF,
                                     0x2200, 0x22FF, 0x25A0, 0x25FF, 0};
    const char* ttf = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    ImFont* f = std::filesystem::exists(ttf)
                    ? io.Fonts->AddFontFromFileTTF(ttf, font_px, nullptr, ranges)
                    : nullptr;
    return f ? f : io.Fonts->AddFontDefault();
}

GLFWmonitor* monitor_of(GLFWwindow* w) {
    if (GLFWmonitor* full = glfwGetWindowMonitor(w)) return full;
    int x = 0, y = 0, ww = 0, wh = 0;
    glfwGetWindowPos(w, &x, &y);
    glfwGetWindowSize(w, &ww, &wh);
    const int cx = x + ww / 2, cy = y + wh / 2;
    int count = 0;
    GLFWmonitor** mons = glfwGetMonitors(&count);
    for (int i = 0; i < count; ++i) {
        int mx = 0, my = 0;
        glfwGetMonitorPos(mons[i], &mx, &my);
        const GLFWvidmode* mode = glfwGetVideoMode(mons[i]);
        if (mode && cx >= mx && cx < mx + mode->width && cy >= my && cy < my + mode->height)
            return mons[i];
    }
    return glfwGetPrimaryMonitor();
}

std::string clock_line(std::time_t now, double elapsed_s) {
    std::tm t{};
    localtime_r(&now, &t);
    const long e = static_cast<long>(std::max(0.0, elapsed_s));
    char b[96];
    std::snprintf(b, sizeof b, "%02d:%02d   ·   %ld:%02ld:%02ld since the presenter window opened",
                  t.tm_hour, t.tm_min, e / 3600, e / 60 % 60, e % 60);
    return b;
}

namespace {

// GLFW calls these for the presenter window while the main window's ImGui context is current:
// each makes the presenter's context current for the backend and restores the other after.
PresenterWindow* owner(GLFWwindow* w) {
    return static_cast<PresenterWindow*>(glfwGetWindowUserPointer(w));
}

struct ContextSwitch {
    ImGuiContext* prev;
    explicit ContextSwitch(ImGuiContext* c) : prev(ImGui::GetCurrentContext()) {
        ImGui::SetCurrentContext(c);
    }
    ~ContextSwitch() { ImGui::SetCurrentContext(prev); }
};

}  // namespace

PresenterWindow::PresenterWindow(GLFWwindow* main, bool visible, int w, int h) : main_(main) {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);  // shown once placed
    win_ = glfwCreateWindow(w, h, "ConvLab presenter", nullptr, main);
    if (!win_) throw Error("cannot open the presenter window (a second OpenGL 3.3 window)");
    // Two monitors or more (a laptop and a projector): on a monitor the main window is not on,
    // filling its work area, so that the main window can go full screen on the other.
    int count = 0;
    GLFWmonitor** mons = glfwGetMonitors(&count);
    if (count >= 2) {
        GLFWmonitor* taken = monitor_of(main);
        for (int i = 0; i < count; ++i) {
            if (mons[i] == taken) continue;
            int x = 0, y = 0, ww = 0, wh = 0;
            glfwGetMonitorWorkarea(mons[i], &x, &y, &ww, &wh);
            if (ww <= 0 || wh <= 0) continue;
            glfwSetWindowPos(win_, x + 20, y + 40);
            glfwSetWindowSize(win_, std::max(320, ww - 40), std::max(240, wh - 80));
            break;
        }
    }
    glfwSetWindowUserPointer(win_, this);
    ImGuiContext* const prev = ImGui::GetCurrentContext();
    glfwMakeContextCurrent(win_);
    glfwSwapInterval(0);  // the main window's swap waits for the display; one wait a frame
    ctx_ = ImGui::CreateContext(nullptr);
    ImGui::SetCurrentContext(ctx_);
    setup_app_context(20.0f);
    // Callbacks of our own (below), not the backend's: they switch to this context first.
    ImGui_ImplGlfw_InitForOpenGL(win_, false);
    ImGui_ImplOpenGL3_Init("#version 330");
    ImGui::SetCurrentContext(prev);
    glfwSetMouseButtonCallback(win_, [](GLFWwindow* gw, int b, int a, int m) {
        ContextSwitch c(owner(gw)->ctx_);
        ImGui_ImplGlfw_MouseButtonCallback(gw, b, a, m);
    });
    glfwSetScrollCallback(win_, [](GLFWwindow* gw, double x, double y) {
        ContextSwitch c(owner(gw)->ctx_);
        ImGui_ImplGlfw_ScrollCallback(gw, x, y);
    });
    glfwSetCursorEnterCallback(win_, [](GLFWwindow* gw, int e) {
        ContextSwitch c(owner(gw)->ctx_);
        ImGui_ImplGlfw_CursorEnterCallback(gw, e);
    });
    glfwSetWindowFocusCallback(win_, [](GLFWwindow* gw, int f) {
        ContextSwitch c(owner(gw)->ctx_);
        ImGui_ImplGlfw_WindowFocusCallback(gw, f);
    });
    glfwSetKeyCallback(win_, [](GLFWwindow* gw, int key, int, int action, int) {
        owner(gw)->key_event(key, action);
    });
    if (visible) glfwShowWindow(win_);
    glfwMakeContextCurrent(main_);
}

PresenterWindow::~PresenterWindow() {
    ImGuiContext* const prev = ImGui::GetCurrentContext();
    glfwMakeContextCurrent(win_);
    ImGui::SetCurrentContext(ctx_);
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext(ctx_);
    ImGui::SetCurrentContext(prev);
    glfwDestroyWindow(win_);
    glfwMakeContextCurrent(main_);
}

void PresenterWindow::key_event(int key, int action) {
    if (on_key) on_key(key, action);
}

bool PresenterWindow::close_requested() const {
    return glfwWindowShouldClose(win_) == GLFW_TRUE;
}

void PresenterWindow::render(const std::function<void()>& draw, unsigned background,
                             std::vector<unsigned char>* pixels, int* w, int* h) {
    ImGuiContext* const prev = ImGui::GetCurrentContext();
    glfwMakeContextCurrent(win_);
    ImGui::SetCurrentContext(ctx_);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::PushStyleColor(ImGuiCol_WindowBg, background);
    ImGui::Begin("presenter", nullptr,
                 ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                     ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoBringToFrontOnFocus);
    draw();
    ImGui::End();
    ImGui::PopStyleColor();
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(win_, &fw, &fh);
    glViewport(0, 0, fw, fh);
    const ImVec4 bg = ImGui::ColorConvertU32ToFloat4(background);
    glClearColor(bg.x, bg.y, bg.z, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (pixels) {
        pixels->assign(static_cast<std::size_t>(fw) * static_cast<std::size_t>(fh) * 4, 0);
        glPixelStorei(GL_PACK_ALIGNMENT, 1);
        glReadBuffer(GL_BACK);
        glReadPixels(0, 0, fw, fh, GL_RGBA, GL_UNSIGNED_BYTE, pixels->data());
        const std::size_t row = static_cast<std::size_t>(fw) * 4;
        for (int y = 0; y < fh / 2; ++y)  // OpenGL rows are bottom first
            std::swap_ranges(pixels->begin() + static_cast<std::ptrdiff_t>(y * row),
                             pixels->begin() + static_cast<std::ptrdiff_t>((y + 1) * row),
                             pixels->begin() + static_cast<std::ptrdiff_t>((fh - 1 - y) * row));
        for (std::size_t i = 3; i < pixels->size(); i += 4) (*pixels)[i] = 255;
        if (w) *w = fw;
        if (h) *h = fh;
    }
    glfwSwapBuffers(win_);
    ImGui::SetCurrentContext(prev);
    glfwMakeContextCurrent(main_);
}

}  // namespace convlab::ui
