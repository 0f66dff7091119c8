// Internal: exceptions carried out of OpenMP parallel regions.
//
// An exception that leaves a parallel region's structured block terminates the program
// (std::terminate, SIGABRT), whichever thread throws it. Code inside a region that can throw (an
// allocation, a GEMM's packing buffers, an Error) runs through a ParallelError's run(): the first
// exception of any thread is kept, later work of every thread is skipped, and rethrow() after
// the region throws it on the calling thread.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>

namespace convlab::detail {

class ParallelError {
  public:
    // Runs f() unless a thread already failed; keeps the first exception that f throws.
    template <class F>
    void run(F&& f) noexcept {
        if (failed()) return;
        try {
            f();
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
            failed_.store(true, std::memory_order_release);
        }
    }
    bool failed() const { return failed_.load(std::memory_order_acquire); }
    // After the region: throws the kept exception, if any.
    void rethrow() const {
        if (error_) std::rethrow_exception(error_);
    }

  private:
    std::atomic<bool> failed_{false};
    std::mutex mutex_;
    std::exception_ptr error_;
};

}  // namespace convlab::detail
