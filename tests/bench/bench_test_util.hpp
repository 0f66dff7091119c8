// Shared by the benchmark runner's tests (tests/bench/): tiny configurations, algorithms wrong
// or throwing on purpose, algorithms that log their calls, and a fake peer.
#pragma once

#include <unistd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convlab/bench.hpp"
#include "convlab/conv.hpp"

using namespace convlab;
using namespace convlab::bench;

namespace bench_test {

inline Layer layer(const std::string& desc) {
    Layer l;
    l.descriptor = desc;
    l.problem = parse_descriptor(desc);
    return l;
}

// Two tiny layers: one with a leftover row (stride 2), one grouped.
inline Config tiny_config() {
    Config cfg;
    cfg.layers = {layer("mb2ic3ih7oc4kh3sh2ph1n\"t:stride2\""),
                  layer("g2mb1ic4ih5oc4kh3ph1n\"t:grouped\"")};
    cfg.threads = 1;
    cfg.timing.warmup = 0;
    cfg.timing.reps = 3;
    cfg.measure_peak = false;
    return cfg;
}

// Records every progress report of a run; each one carries the rows measured so far (partial
// results with the progress, every combination's rows in a sweep).
inline void log_progress(Config& cfg, std::vector<std::size_t>& seen, std::size_t& total) {
    cfg.progress = [&seen, &total](const Config::Progress& p) {
        seen.push_back(p.done);
        total = p.total;
        REQUIRE(p.results);
        CHECK(p.results->rows.size() == p.done);
    };
}

// im2col_gemm's forward with one output element off by 1: a deliberately wrong algorithm.
inline void forward_off_by_one(const Problem& p, const ConvArgs& a, Profiler* prof) {
    find_algorithm(Pass::Forward, "im2col_gemm").run(p, a, prof);
    a.dst[p.mb * p.oc * p.out_spatial() / 2] += 1.0f;
}

inline void forward_throws(const Problem&, const ConvArgs&, Profiler*) {
    throw Error("deliberate failure");
}

// Two right algorithms that log their calls: 'A' / 'B' for a timed call (a profiler is given),
// 'a' / 'b' for an untimed one (the check, warm-ups).
inline std::string call_log;
inline void forward_logged_a(const Problem& p, const ConvArgs& a, Profiler* prof) {
    call_log += prof ? 'A' : 'a';
    find_algorithm(Pass::Forward, "direct").run(p, a, nullptr);
}
inline void forward_logged_b(const Problem& p, const ConvArgs& a, Profiler* prof) {
    call_log += prof ? 'B' : 'b';
    Span s(prof, "logged");
    find_algorithm(Pass::Forward, "direct").run(p, a, nullptr);
}

// A peer computed with the engine's direct loops (so its result is right), or wrong on purpose.
class FakePeer final : public PeerConv {
  public:
    FakePeer(const Problem& p, bool wrong) : p_(p), wrong_(wrong) {}
    bool has(Pass pass) const override { return pass != Pass::BackwardWeight; }
    std::string error(Pass) const override { return "fake peer has no bwd_weight"; }
    std::string impl(Pass) const override { return "fake:direct"; }
    void set_inputs(const float* src, const float* wei, const float* diff_dst) override {
        src_ = src;
        wei_ = wei;
        diff_dst_ = diff_dst;
    }
    void run(Pass pass) override {
        ConvArgs a;
        if (pass == Pass::Forward) {
            out_.assign(static_cast<std::size_t>(p_.mb * p_.oc * p_.out_spatial()), 0.f);
            a.src = src_;
            a.wei = wei_;
            a.dst = out_.data();
        } else {
            out_.assign(static_cast<std::size_t>(p_.mb * p_.ic * p_.in_spatial()), 0.f);
            a.diff_dst = diff_dst_;
            a.wei = wei_;
            a.diff_src = out_.data();
        }
        find_algorithm(pass, "direct").run(p_, a, nullptr);
        if (wrong_) out_[0] *= -2.0f;
    }
    void output(Pass, float* plain) override { std::copy(out_.begin(), out_.end(), plain); }

  private:
    Problem p_;
    bool wrong_;
    const float *src_ = nullptr, *wei_ = nullptr, *diff_dst_ = nullptr;
    std::vector<float> out_;
};

// The fake peer, also offered in bf16 (PeerSpec::dtypes): the same direct loops on the fp32
// inputs, so its bf16 rows are right (or wrong on purpose) like its fp32 ones.
inline PeerSpec fake_bf16_peer(bool wrong);

inline PeerSpec fake_peer(bool wrong) {
    PeerSpec s;
    s.name = "fake";
    s.description = "fake peer (engine direct loops)";
    s.create = [wrong](const Problem& p, const std::vector<Pass>&) -> std::unique_ptr<PeerConv> {
        return std::make_unique<FakePeer>(p, wrong);
    };
    return s;
}

inline PeerSpec fake_bf16_peer(bool wrong) {
    PeerSpec s = fake_peer(wrong);
    s.dtypes = {DType::bf16};
    s.create_dtype = [wrong](const Problem& p, const std::vector<Pass>&,
                             DType) -> std::unique_ptr<PeerConv> {
        return std::make_unique<FakePeer>(p, wrong);
    };
    return s;
}

}  // namespace bench_test
