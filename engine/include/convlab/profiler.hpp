// Profiler: named per-operation spans (im2col, gemm, col2im, zero-insert, pad, fliprot, tnc,
// bias ...). Algorithms record only leaf operations, so the entries add up to the work done.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace convlab {

class Profiler {
  public:
    struct Entry {
        std::string name;
        double seconds = 0;
        long count = 0;
    };
    // One span as it happened (a trace's event), kept only while keep_events(true).
    struct Event {
        std::string name;
        std::chrono::steady_clock::time_point start, end;
    };
    void add(std::string_view name, double seconds);
    void add(std::string_view name, std::chrono::steady_clock::time_point start,
             std::chrono::steady_clock::time_point end);
    const std::vector<Entry>& entries() const { return entries_; }  // in order of first use
    double total_seconds() const;
    double seconds(std::string_view name) const;  // 0 when absent
    void keep_events(bool on) { keep_events_ = on; }
    const std::vector<Event>& events() const { return events_; }  // in order of their end
    void clear() {
        entries_.clear();
        events_.clear();
    }

  private:
    std::vector<Entry> entries_;
    std::vector<Event> events_;
    bool keep_events_ = false;
};

// RAII span; does nothing when the profiler is null. Name must outlive the span.
class Span {
  public:
    Span(Profiler* p, std::string_view name)
        : p_(p), name_(name), t0_(p ? std::chrono::steady_clock::now() : Clock::time_point{}) {}
    ~Span() {
        if (p_) p_->add(name_, t0_, Clock::now());
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

  private:
    using Clock = std::chrono::steady_clock;
    Profiler* p_;
    std::string_view name_;
    Clock::time_point t0_;
};

}  // namespace convlab
