#include "bench_util.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>

#include <sys/resource.h>
#include <unistd.h>

namespace bench {

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

// Drops a '#' comment that starts outside a double-quoted name.
std::string strip_comment(const std::string& s) {
    bool quoted = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '"') quoted = !quoted;
        if (s[i] == '#' && !quoted) return s.substr(0, i);
    }
    return s;
}

}  // namespace

std::vector<Layer> read_shape_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw convlab::Error("cannot open shape file '" + path + "'");
    std::vector<Layer> layers;
    std::string raw;
    int line = 0;
    while (std::getline(in, raw)) {
        ++line;
        const std::string text = trim(strip_comment(raw));
        if (text.empty()) continue;
        Layer layer;
        layer.line = line;
        layer.descriptor = text;
        try {
            layer.problem = convlab::parse_descriptor(text);
        } catch (const convlab::Error& e) {
            throw convlab::Error(path + ":" + std::to_string(line) + ": " + e.what());
        }
        if (layer.problem.name.empty()) layer.problem.name = "line" + std::to_string(line);
        layers.push_back(std::move(layer));
    }
    if (layers.empty()) throw convlab::Error("shape file '" + path + "' holds no layer");
    return layers;
}

Timing summarize(std::vector<double> seconds) {
    Timing t;
    if (seconds.empty()) return t;
    std::sort(seconds.begin(), seconds.end());
    const std::size_t n = seconds.size();
    const double med = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
    t.median_ms = med * 1e3;
    t.min_ms = seconds.front() * 1e3;
    t.max_ms = seconds.back() * 1e3;
    t.runs = static_cast<int>(n);
    return t;
}

Check compare(const float* got, const float* ref, std::size_t n, double rtol) {
    Check c;
    c.count = n;
    double sumsq = 0;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double r = ref[i];
        sumsq += r * r;
        if (r != 0) ++nonzero;
    }
    const double rms = n ? std::sqrt(sumsq / static_cast<double>(n)) : 0;
    c.nonzero = n ? static_cast<double>(nonzero) / static_cast<double>(n) : 0;
    std::size_t nonfinite = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double g = got[i];
        const double r = ref[i];
        if (!std::isfinite(g) || !std::isfinite(r)) {
            ++nonfinite;
            ++c.bad;
            continue;
        }
        const double scale = std::max(std::fabs(r), rms);
        const double err = scale > 0 ? std::fabs(g - r) / scale : std::fabs(g - r);
        c.max_err = std::max(c.max_err, err);
        if (err > rtol) ++c.bad;
    }
    c.pass = c.bad == 0 && n > 0;
    if (nonfinite) c.note = std::to_string(nonfinite) + " non-finite";
    if (n == 0) c.note = "empty";
    if (c.pass && nonzero == 0) {
        c.pass = false;  // an all-zero reference proves nothing
        c.note = "reference all zero";
    }
    return c;
}

std::string Check::str() const {
    char buf[96];
    if (pass) {
        std::snprintf(buf, sizeof buf, "PASS %.1e", max_err);
    } else {
        std::snprintf(buf, sizeof buf, "FAIL %zu/%zu %.1e", bad, count, max_err);
    }
    std::string s = buf;
    if (!note.empty()) s += " (" + note + ")";
    return s;
}

void fill_random(std::vector<float>& v, std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& x : v) x = dist(gen);
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return trim(line.substr(colon + 1));
        }
    }
    return "unknown";
}

double load_average() {
    std::ifstream in("/proc/loadavg");
    double load = -1;
    if (!(in >> load)) return -1;
    return load;
}

CpuSample cpu_sample() {
    CpuSample s;
    s.wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    std::ifstream in("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
        cpu != "cpu") {
        return s;
    }
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    if (tick <= 0) return s;
    s.busy = (user + nice + system + irq + softirq) / tick;
    s.steal = steal / tick;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return s;
    auto sec = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + 1e-6 * static_cast<double>(tv.tv_usec);
    };
    s.self = sec(ru.ru_utime) + sec(ru.ru_stime);
    s.ok = true;
    return s;
}

double foreign_cpu_share(const CpuSample& a, const CpuSample& b, int cpus) {
    if (!a.ok || !b.ok || cpus <= 0) return -1;
    const double wall = b.wall - a.wall;
    if (wall <= 0) return -1;
    const double foreign = (b.busy - a.busy) - (b.self - a.self) + (b.steal - a.steal);
    return std::max(0.0, foreign) / (wall * cpus);
}

std::string local_date() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
    return buf;
}

}  // namespace bench
