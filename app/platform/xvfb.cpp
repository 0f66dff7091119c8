// A command that needs a display and has none reruns itself under xvfb-run.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "convlab/problem.hpp"
#include "gui/gui.hpp"
#include "platform/display.hpp"

namespace convlab::ui {

// [SECTION] xvfb-run

namespace {
std::vector<std::string> g_args;
}

void set_program_args(int argc, char** argv) {
    g_args.assign(argv, argv + argc);
}

int rerun_under_xvfb() {
    if (std::getenv("CONVLAB_UNDER_XVFB"))
        throw Error("no display even under xvfb-run (" + g_glfw_error + ")");
    if (g_args.empty()) throw Error("no display (DISPLAY unset or unreachable)");
    if (::access("/usr/bin/xvfb-run", X_OK) != 0)
        throw Error(
            "no display (DISPLAY unset or unreachable) and xvfb-run is not installed "
            "(apt-get install xvfb xauth), or run under a display");
    char self[4096];
    const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) throw Error("no display, and cannot find this program to re-run it");
    self[len] = 0;
    // The program's own status comes back in a file (report_status); xvfb-run's own messages go
    // to another, shown only when the program did not get as far as reporting its status (the
    // program's stderr is handed down as a descriptor number, see adopt_stderr).
    char status_file[] = "/tmp/convlab-status-XXXXXX";
    const int fd = ::mkstemp(status_file);
    if (fd >= 0) ::close(fd);
    char xvfb_err[] = "/tmp/convlab-xvfb-err-XXXXXX";
    const int efd = ::mkstemp(xvfb_err);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        if (fd >= 0) ::unlink(status_file);
        if (efd >= 0) ::unlink(xvfb_err);
        throw Error("no display, and cannot start xvfb-run");
    }
    if (pid == 0) {
        ::setenv("CONVLAB_UNDER_XVFB", "1", 1);
        if (fd >= 0) ::setenv("CONVLAB_XVFB_STATUS", status_file, 1);
        if (efd >= 0) {
            const int keep = ::dup(2);
            if (keep >= 0) {
                ::setenv("CONVLAB_STDERR_FD", std::to_string(keep).c_str(), 1);
                ::dup2(efd, 2);
            }
            ::close(efd);
        }
        std::vector<std::string> argv = {"xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", self};
        argv.insert(argv.end(), g_args.begin() + 1, g_args.end());
        std::vector<char*> cargv;
        for (auto& s : argv) cargv.push_back(s.data());
        cargv.push_back(nullptr);
        ::execv("/usr/bin/xvfb-run", cargv.data());
        std::_Exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int own = -1;  // the program's status, when it got as far as reporting it
    if (fd >= 0) {
        if (std::FILE* f = std::fopen(status_file, "r")) {
            if (std::fscanf(f, "%d", &own) != 1) own = -1;
            std::fclose(f);
        }
        ::unlink(status_file);
    }
    if (efd >= 0) {
        if (own < 0)
            if (std::FILE* f = std::fopen(xvfb_err, "r")) {
                char buf[4096];
                std::size_t n = 0;
                while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) std::fwrite(buf, 1, n, stderr);
                std::fclose(f);
            }
        ::close(efd);
        ::unlink(xvfb_err);
    }
    if (own >= 0) return own;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void adopt_stderr() {
    const char* s = std::getenv("CONVLAB_STDERR_FD");
    if (!s) return;
    char* end = nullptr;
    const long fd = std::strtol(s, &end, 10);
    if (end != s && *end == 0 && fd > 2 && ::fcntl(static_cast<int>(fd), F_GETFD) != -1) {
        ::dup2(static_cast<int>(fd), 2);
        ::close(static_cast<int>(fd));
    }
    ::unsetenv("CONVLAB_STDERR_FD");
}

int report_status(int status) {
    if (const char* path = std::getenv("CONVLAB_XVFB_STATUS"))
        if (std::FILE* f = std::fopen(path, "w")) {
            std::fprintf(f, "%d\n", status);
            std::fclose(f);
        }
    return status;
}

}  // namespace convlab::ui
