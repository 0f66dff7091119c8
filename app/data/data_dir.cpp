#include "data/data_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "convlab/problem.hpp"

namespace convlab::data {

namespace fs = std::filesystem;

bool is_data_root(const std::string& dir) {
    std::error_code ec;
    return !dir.empty() && fs::is_regular_file(fs::path(dir) / kMarker, ec);
}

namespace {

// The executable's folder through /proc/self/exe; empty where the system has no /proc (the
// search then goes on with the current directory).
fs::path exe_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

std::string find_root() {
    if (const char* env = std::getenv("CONVLAB_DATA"); env && *env) {
        if (!is_data_root(env))
            throw Error("CONVLAB_DATA '" + std::string(env) + "': not a ConvLab data folder (" +
                        kMarker + " is missing)");
        return env;
    }
    std::error_code ec;
    if (const fs::path dir = exe_dir(); !dir.empty()) {
        const fs::path installed = (dir / ".." / "share" / "convlab").lexically_normal();
        if (is_data_root(installed.string())) return installed.string();
        // A build tree's pointer file: one line, the source folder.
        if (std::ifstream f(dir / "convlab-data-dir"); f) {
            std::string line;
            std::getline(f, line);
            if (is_data_root(line)) return line;
        }
        for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
            if (is_data_root(p.string())) return p.string();
            if (p == p.parent_path()) break;
        }
    }
    const fs::path cwd = fs::current_path(ec);
    if (!ec && is_data_root(cwd.string())) return cwd.string();
    throw Error(std::string("no ConvLab data folder (with ") + kMarker +
                ") beside the executable: set CONVLAB_DATA to one");
}

}  // namespace

std::string root() {
    // The executable and the environment do not change while the program runs: search once.
    static const std::string found = find_root();
    return found;
}

std::string lessons_dir() {
    return root() + "/lessons";
}
std::string themes_dir() {
    return root() + "/assets/themes";
}
std::string shapes_dir() {
    return root() + "/assets/shapes";
}

}  // namespace convlab::data
