#include "convlab/profiler.hpp"

namespace convlab {

void Profiler::add(std::string_view name, double seconds) {
    for (auto& e : entries_)
        if (e.name == name) {
            e.seconds += seconds;
            ++e.count;
            return;
        }
    entries_.push_back({std::string(name), seconds, 1});
}

void Profiler::add(std::string_view name, std::chrono::steady_clock::time_point start,
                   std::chrono::steady_clock::time_point end) {
    add(name, std::chrono::duration<double>(end - start).count());
    if (keep_events_) events_.push_back({std::string(name), start, end});
}

double Profiler::total_seconds() const {
    double t = 0;
    for (const auto& e : entries_) t += e.seconds;
    return t;
}

double Profiler::seconds(std::string_view name) const {
    for (const auto& e : entries_)
        if (e.name == name) return e.seconds;
    return 0;
}

}  // namespace convlab
