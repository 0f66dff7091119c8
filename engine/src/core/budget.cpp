// The memory budget: each algorithm's work memory for a problem (the per-algorithm bounds of
// algorithms.hpp), the budget it is held against, and the sizes of --max-memory.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "algorithms.hpp"
#include "checked.hpp"

namespace convlab {

namespace {

std::atomic<std::int64_t> g_budget{0};  // 0: the default

// 80% of MemAvailable (kB in /proc/meminfo), else of the physical memory, else 4 GiB: the rest
// is left to the tensors of the call, the program and the machine's other work.
std::int64_t available_share() {
    std::int64_t avail = 0;
    std::ifstream in("/proc/meminfo");
    for (std::string line; avail == 0 && std::getline(in, line);) {
        long long kb = 0;
        if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kb) == 1 && kb > 0)
            avail = detail::sat_mul(static_cast<std::int64_t>(kb), 1024);
    }
    if (avail == 0) {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && page > 0) avail = detail::sat_mul(pages, page);
    }
    if (avail == 0) avail = std::int64_t{4} << 30;
    return avail / 5 * 4;
}

}  // namespace

std::int64_t work_bytes(const Algorithm& a, const Problem& p, std::int64_t c0,
                        const Tuning& tuning) {
    const std::string_view name = a.name;
    if (name == "auto")
        return work_bytes(detail::auto_choice(p, a.pass, tuning, nullptr), p, c0, tuning);
    if (name == "im2col_gemm") return detail::im2col_gemm_work(p, a.pass);
    if (name == "col2im") return detail::col2im_work(p, tuning);
    if (name == "via_forward") return detail::via_forward_work(p, a.pass);
    if (name == "implicit_gemm") return detail::implicit_gemm_work(p, a.pass);
    if (name == "winograd") return detail::winograd_work(p, a.pass, tuning);
    if (name == "fractal" || name == "fractal_via_forward")
        return detail::fractal_work(p, a.pass, c0);
    return 0;  // direct: loops over the tensors themselves
}

const Algorithm& auto_algorithm(const Problem& p, Pass pass, const Tuning& tuning) {
    return detail::auto_choice(p, pass, tuning, nullptr);
}

std::int64_t memory_budget() {
    const std::int64_t set = g_budget.load(std::memory_order_relaxed);
    if (set > 0) return set;
    // Read once: the checks run before every call (auto's among them, in the benchmark's loops).
    static const std::int64_t share = available_share();
    return share;
}

void set_memory_budget(std::int64_t bytes) {
    g_budget.store(bytes > 0 ? bytes : 0);
}

bool fits_memory_budget(const Algorithm& a, const Problem& p, std::int64_t c0,
                        const Tuning& tuning) {
    return work_bytes(a, p, c0, tuning) <= memory_budget();
}

void check_memory_budget(const Algorithm& a, const Problem& p, std::int64_t c0,
                         const Tuning& tuning) {
    const std::int64_t need = work_bytes(a, p, c0, tuning), budget = memory_budget();
    if (need <= budget) return;
    throw Error(std::string(a.name) + " (" + pass_name(a.pass) + ") needs " + format_bytes(need) +
                " of work memory: more than the memory budget of " + format_bytes(budget) +
                " (--max-memory)");
}

std::string format_bytes(std::int64_t bytes) {
    if (bytes >= detail::kHugeSize) return "more than 8 EiB";
    if (bytes < 1024) return std::to_string(bytes) + " B";
    static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes) / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
    return buf;
}

std::int64_t parse_memory_size(std::string_view flag, std::string_view text) {
    const std::string f(flag), t(text);
    const auto bad = [&](const std::string& why) {
        return Error(f + " '" + t.substr(0, 40) + "': " + why);
    };
    std::size_t i = 0;
    while (i < t.size() && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.')) ++i;
    if (i == 0 || t.find('.') != t.rfind('.'))
        throw bad("expected a size such as 512M, 4G or 1.5G (bytes, or K M G T: powers of 1024)");
    std::string unit = t.substr(i);
    int shift = 0;
    if (!unit.empty()) {
        const char c = static_cast<char>(unit[0] & ~0x20);  // upper case
        const std::string rest = unit.substr(1);
        if (c == 'K') shift = 10;
        if (c == 'M') shift = 20;
        if (c == 'G') shift = 30;
        if (c == 'T') shift = 40;
        const bool suffix_ok = rest.empty() || rest == "B" || rest == "b" || rest == "iB";
        if ((shift == 0 && !(unit == "B" || unit == "b")) || !suffix_ok)
            throw bad("unknown unit '" + unit.substr(0, 8) +
                      "' (K, M, G or T: powers of 1024; nothing for bytes)");
    }
    const double v = std::ldexp(std::strtod(t.substr(0, i).c_str(), nullptr), shift);
    if (!std::isfinite(v) || v >= 9.2e18) throw bad("a size must be below 2^63 bytes");
    if (v < 1048576) throw bad("a size must be at least 1M (1 MiB)");
    return static_cast<std::int64_t>(v);
}

}  // namespace convlab
