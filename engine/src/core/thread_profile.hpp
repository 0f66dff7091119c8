// Internal: per-operation spans of the threads of one parallel region.
#pragma once

#include "omp_compat.hpp"

#include <vector>

#include "convlab/profiler.hpp"

namespace convlab::detail {

// Where whole products run side by side on the threads (an image or block of images per
// thread), each thread records its spans into a Profiler of its own (mine(), inside the region;
// a Profiler is not shared between threads). When the region is over, each operation's time is
// added to prof as its mean over the threads: the operations then add up to the region's time
// as one thread's would, less the time threads waited at its end, which lies in no operation
// ("other" in the charts). Nothing is recorded when prof is null.
class ThreadProfilers {
  public:
    explicit ThreadProfilers(Profiler* prof) : prof_(prof) {
        if (prof_) per_.resize(static_cast<std::size_t>(omp_get_max_threads()));
    }
    ~ThreadProfilers() {
        if (!prof_) return;
        const double n = static_cast<double>(per_.size());
        Profiler sum;  // names in order of first use by the lowest thread that used them
        for (const Profiler& t : per_)
            for (const Profiler::Entry& e : t.entries()) sum.add(e.name, e.seconds);
        for (const Profiler::Entry& e : sum.entries()) prof_->add(e.name, e.seconds / n);
    }
    ThreadProfilers(const ThreadProfilers&) = delete;
    ThreadProfilers& operator=(const ThreadProfilers&) = delete;
    // The calling thread's profiler (null when prof is).
    Profiler* mine() {
        const auto id = static_cast<std::size_t>(omp_get_thread_num());
        return prof_ && id < per_.size() ? &per_[id] : nullptr;
    }

  private:
    Profiler* prof_;
    std::vector<Profiler> per_;
};

}  // namespace convlab::detail
