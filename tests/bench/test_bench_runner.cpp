// The benchmark runner: statistics, verification travelling with every timing, a deliberately
// wrong algorithm caught (and a throwing one recorded), the reference fallback, the peer
// interface (a fake peer), progress and cancel, the machine record and the noise probes, traces.
// The results files are test_results_io.cpp's.
#include <chrono>
#include <random>

#include <doctest/doctest.h>

#include "bench_test_util.hpp"
#include "convlab/davinci.hpp"

using namespace bench_test;

TEST_CASE("bench: summarize gives median, min, max and quartiles") {
    // Odd count {1..5} s (shuffled): median 3, quartiles 2 and 4 (linear interpolation).
    Stats s = summarize({0.003, 0.001, 0.005, 0.002, 0.004});
    CHECK(s.runs == 5);
    CHECK(s.median_ms == doctest::Approx(3.0));
    CHECK(s.min_ms == doctest::Approx(1.0));
    CHECK(s.max_ms == doctest::Approx(5.0));
    CHECK(s.q1_ms == doctest::Approx(2.0));
    CHECK(s.q3_ms == doctest::Approx(4.0));
    CHECK(s.spread() == doctest::Approx(2.0 / 3.0));
    // Even count {1, 2, 3, 4}: median 2.5; quartiles at positions 0.75 and 2.25: 1.75 and 3.25.
    s = summarize({0.004, 0.001, 0.003, 0.002});
    CHECK(s.median_ms == doctest::Approx(2.5));
    CHECK(s.q1_ms == doctest::Approx(1.75));
    CHECK(s.q3_ms == doctest::Approx(3.25));
    CHECK(summarize({}).runs == 0);
    // measure() honours an exact repetition count and the warm-up runs.
    int calls = 0;
    TimingRule rule;
    rule.warmup = 2;
    rule.reps = 4;
    CHECK(measure(rule, [&] { ++calls; }).runs == 4);
    CHECK(calls == 6);
}

TEST_CASE("bench: measure_interleaved alternates the functions, rotating who goes first") {
    std::vector<int> order;
    TimingRule rule;
    rule.warmup = 1;
    rule.reps = 3;
    const std::vector<std::function<void()>> fns{
        [&] { order.push_back(0); }, [&] { order.push_back(1); }, [&] { order.push_back(2); }};
    const std::vector<Stats> s = measure_interleaved(rule, fns);
    REQUIRE(s.size() == 3);
    for (const Stats& x : s) CHECK(x.runs == 3);
    // Warm-ups first, then rounds 0 1 2 / 1 2 0 / 2 0 1.
    CHECK(order == std::vector<int>{0, 1, 2, 0, 1, 2, 1, 2, 0, 2, 0, 1});
    // By time, on a fake clock that each call advances by its cost (powers of two: exact sums),
    // so nothing depends on the machine's speed or load. Costs 1/1024 s and 11/1024 s, at least
    // 3 runs and 32/1024 s each: the slow one leaves after 3 rounds (33/1024 s), the fast one
    // goes on alone until it has 32 runs.
    double now = 0;
    std::vector<int> calls;
    Interleaved timed;
    timed.count = 2;
    timed.clock = [&] { return now; };
    timed.run = [&](std::size_t f, bool is_timed) {
        if (is_timed) calls.push_back(static_cast<int>(f));
        now += (f == 0 ? 1.0 : 11.0) / 1024;
    };
    std::vector<std::pair<std::size_t, double>> after;
    timed.after = [&](std::size_t f, double sec) { after.emplace_back(f, sec); };
    rule = TimingRule{};
    rule.warmup = 2;
    rule.min_reps = 3;
    rule.min_seconds = 32.0 / 1024;
    const std::vector<Stats> t = measure_interleaved(rule, timed);
    REQUIRE(t.size() == 2);
    CHECK(t[0].runs == 32);
    CHECK(t[1].runs == 3);
    CHECK(t[0].median_ms == doctest::Approx(1000.0 / 1024));
    CHECK(t[1].median_ms == doctest::Approx(11000.0 / 1024));
    // Rounds 0 1 / 1 0 / 0 1 while both run, then the fast one alone.
    std::vector<int> expected{0, 1, 1, 0, 0, 1};
    expected.resize(3 + 32, 0);
    CHECK(calls == expected);
    // after() follows every timed call, with its measured seconds; warm-ups are not timed.
    REQUIRE(after.size() == calls.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
        CHECK(after[i].first == static_cast<std::size_t>(calls[i]));
        CHECK(after[i].second == (calls[i] == 0 ? 1.0 : 11.0) / 1024);
    }
    // max_reps ends a function whose calls never fill min_seconds.
    rule.max_reps = 5;
    rule.min_seconds = 1e9;
    calls.clear();
    const std::vector<Stats> capped = measure_interleaved(rule, timed);
    CHECK(capped[0].runs == 5);
    CHECK(capped[1].runs == 5);
    CHECK(calls.size() == 10);
}

namespace {

// A clock as coarse as Chromium's (it rounds the page's clock to 100 us), over a simulated true
// time that each read advances by 50 ns and each call by its cost.
struct CoarseClock {
    double now = 0;  // true time, seconds
    double read() {
        now += 50e-9;
        return std::floor(now / 1e-4) * 1e-4;
    }
};

// The steady clock rounded down to 100 us: real calls timed as the browser times them.
double coarse_steady_seconds() {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    return static_cast<double>(ns / 100000) * 1e-4;
}

}  // namespace

TEST_CASE("bench: on a coarse clock each timed run is a batch of calls, timed per call") {
    CoarseClock c;
    CHECK(clock_tick([&] { return c.read(); }) == doctest::Approx(1e-4));
    CHECK(clock_tick(coarse_steady_seconds) == doctest::Approx(1e-4));
    CHECK(clock_tick() < kCoarseTick);  // this machine's steady clock: runs of one call
    // Calls of 7 us and 130 us: alone, the first reads 0 in 93% of its runs (a median of 0,
    // which no chart can plot), the second one tick or two. In batches doubled until two in a
    // row span 100 ticks (10 ms): 2048 calls (14.3 ms) and 128 calls (16.6 ms). The first
    // call after the warm-up is stretched by 20 ms (the page busy elsewhere): one call is not
    // taken for a batch of 100 ticks for that.
    const double cost[2] = {7e-6, 130e-6};
    std::vector<int> timed_calls(2, 0), untimed_calls(2, 0);
    Interleaved fns;
    fns.count = 2;
    fns.clock = [&] { return c.read(); };
    fns.run = [&](std::size_t f, bool timed) {
        c.now += cost[f];
        if (timed) ++timed_calls[f];
        if (!timed && ++untimed_calls[f] == 2) c.now += 20e-3;
    };
    std::vector<std::pair<std::size_t, double>> after;
    fns.after = [&](std::size_t f, double sec) { after.emplace_back(f, sec); };
    TimingRule rule;
    rule.warmup = 1;
    rule.reps = 9;
    const std::vector<Stats> s = measure_interleaved(rule, fns);
    REQUIRE(s.size() == 2);
    CHECK(s[0].calls == 2048);
    CHECK(s[1].calls == 128);
    for (std::size_t f = 0; f < 2; ++f) {
        CAPTURE(f);
        CHECK(s[f].runs == 9);
        CHECK(timed_calls[f] == 9 * s[f].calls);
        CHECK(s[f].median_ms > 0);
        // One tick in a batch of >= 100 ticks: within 1%.
        CHECK(s[f].median_ms == doctest::Approx(cost[f] * 1e3).epsilon(0.01));
        CHECK(s[f].min_ms == doctest::Approx(cost[f] * 1e3).epsilon(0.01));
        CHECK(s[f].max_ms == doctest::Approx(cost[f] * 1e3).epsilon(0.01));
    }
    // after() follows every timed run with its time per call.
    REQUIRE(after.size() == 18);
    for (const auto& [f, sec] : after) CHECK(sec == doctest::Approx(cost[f]).epsilon(0.01));
    // A call that never fills the batch (no cost at all) stops at kMaxBatchCalls.
    fns.count = 1;
    fns.run = [&](std::size_t, bool) {};
    fns.after = nullptr;
    rule.reps = 2;
    CHECK(measure_interleaved(rule, fns).front().calls == kMaxBatchCalls);
}

TEST_CASE("bench: a run on a coarse clock times batches, and each operation its time per call") {
    Config cfg = tiny_config();
    cfg.layers.resize(1);
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.clock = coarse_steady_seconds;
    const Results r = run(cfg);
    CHECK(r.machine.clock_tick == doctest::Approx(1e-4));
    REQUIRE_FALSE(r.rows.empty());
    for (const Measurement& m : r.rows) {
        CAPTURE(m.algorithm);
        CAPTURE(pass_name(m.pass));
        CHECK(m.valid());
        CHECK(m.total.runs == 3);
        // A call of this tiny layer takes well under a tick: batches of many calls, so that the
        // median is a time and not 0.
        CHECK(m.total.calls > 1);
        CHECK(m.total.median_ms > 0);
        // The spans of a batch's calls, averaged per call: inside the call, as with one call a
        // run (summed over the batch they would exceed the call's time many times over).
        REQUIRE_FALSE(m.ops.empty());
        double ops = 0;
        for (const auto& op : m.ops) {
            CHECK(op.time.calls == m.total.calls);
            ops += op.time.min_ms;
        }
        CHECK(ops > 0);
        CHECK(ops <= m.total.max_ms * 1.05);  // within the clock's tick over the batch
    }
    // The results files keep the batch sizes and the tick.
    std::stringstream json;
    write_json(r, json);
    const Results back = read_json(json);
    CHECK(back.machine.clock_tick == doctest::Approx(1e-4));
    REQUIRE(back.rows.size() == r.rows.size());
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        CHECK(back.rows[i].total.calls == r.rows[i].total.calls);
        REQUIRE(back.rows[i].ops.size() == r.rows[i].ops.size());
        CHECK(back.rows[i].ops.front().time.calls == r.rows[i].total.calls);
    }
    // On the steady clock: one call a run.
    cfg.clock = nullptr;
    for (const Measurement& m : run(cfg).rows) CHECK(m.total.calls == 1);
}

TEST_CASE("bench: FLOPs with padding taps (CK) and without (benchdnn), against brute force") {
    // Every (output, tap) pair of every axis, kept when its input index is inside the input.
    const auto brute = [](const Problem& p) {
        double taps = 0;
        const int n = p.ndims;
        std::array<dim_t, 3> o{0, 0, 0}, k{0, 0, 0};
        const dim_t outs = p.out_spatial(), ks = p.kernel_spatial();
        for (dim_t oi = 0; oi < outs; ++oi) {
            dim_t div = 1;
            for (int i = n - 1; i >= 0; --i) {
                const auto u = static_cast<std::size_t>(i);
                o[u] = (oi / div) % p.out(i);
                div *= p.out(i);
            }
            for (dim_t ki = 0; ki < ks; ++ki) {
                bool inside = true;
                dim_t kdiv = 1;
                for (int i = n - 1; i >= 0; --i) {
                    const auto u = static_cast<std::size_t>(i);
                    k[u] = (ki / kdiv) % p.kernel[u];
                    kdiv *= p.kernel[u];
                    const dim_t x = o[u] * p.stride[u] - p.pad_begin[u] + k[u] * p.dilation[u];
                    inside &= x >= 0 && x < p.in[u];
                }
                taps += inside ? 1 : 0;
            }
        }
        return 2.0 * double(p.mb) * double(p.oc) * double(p.icg()) * taps;
    };
    for (const char* d : {"mb2ic3ih7oc4kh3ph1",                              // padded 2-D
                          "mb1ic3ih224oc64oh112kh7sh2ph3",                   // ResNet-50 conv1
                          "g2mb1ic4ih9iw8oc6kh3kw2sh2sw3dh1ph2pw1phe0pwe3",  // dilated, asymmetric
                          "mb1ic2id5ih4iw6oc3kd3kh2kw3pd1ph1pw2",            // 3-D
                          "mb2ic2iw9oc2kw4sw2pw3",                           // 1-D, pad > half
                          "mb1ic5ih6oc2kh3"}) {                              // no padding
        CAPTURE(d);
        const Problem p = parse_descriptor(d);
        REQUIRE(p.validate().empty());
        CHECK(p.flops_no_pad() == brute(p));
        CHECK(p.flops() ==
              2.0 * double(p.mb * p.oc * p.icg() * p.out_spatial() * p.kernel_spatial()));
        CHECK(p.flops_no_pad() <= p.flops());
    }
    // Random 1-D problems, negative padding and output sizes given explicitly among them.
    std::mt19937 rng(20261207);
    const auto pick = [&](int lo, int hi) {
        return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    int tried = 0;
    for (int t = 0; t < 3000; ++t) {
        Problem p = parse_descriptor("mb1ic1iw1oc1kw1");
        p.in[0] = pick(1, 12);
        p.kernel[0] = pick(1, 6);
        p.stride[0] = pick(1, 4);
        p.dilation[0] = pick(1, 4);
        p.pad_begin[0] = pick(-3, 8);
        p.pad_end[0] = pick(-3, 8);
        if (!p.validate().empty()) continue;
        ++tried;
        CAPTURE(to_descriptor(p));
        CHECK(p.flops_no_pad() == brute(p));
    }
    CHECK(tried > 500);
    // A kernel of a billion taps (a descriptor the fuzzer found took seconds when flops_no_pad
    // counted tap by tap). Counted here output by output: the taps of output o inside the input.
    const Problem huge = parse_descriptor("ic1iw7oc1kw1111111113ow11");
    REQUIRE(huge.validate().empty());
    double inside = 0;
    for (dim_t o = 0; o < huge.out(0); ++o) {
        const dim_t base = o * huge.stride[0] - huge.pad_begin[0];  // input of tap 0
        for (dim_t x = 0; x < huge.in[0]; ++x) {
            const dim_t k = x - base;  // dilation 1: tap k reads base + k
            inside += k >= 0 && k < huge.kernel[0] ? 1 : 0;
        }
    }
    CHECK(inside > 0);
    CHECK(huge.flops_no_pad() == 2.0 * double(huge.mb * huge.oc * huge.icg()) * inside);
    // By hand: 1-D, in 3, kernel 3, pad 1 each side: out 3; taps inside: 2 + 3 + 2 = 7 of 9.
    const Problem q = parse_descriptor("mb1ic1iw3oc1kw3pw1");
    CHECK(q.flops() == 18);
    CHECK(q.flops_no_pad() == 14);
    CHECK(parse_descriptor("mb1ic5ih6oc2kh3").flops_no_pad() ==
          parse_descriptor("mb1ic5ih6oc2kh3").flops());
    // The runner stores both, and the files carry both (gflops, gflops_benchdnn).
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward};
    cfg.algos = {"im2col_gemm"};
    const Results r = run(cfg);
    REQUIRE(r.rows.size() == 2);
    CHECK(r.rows[0].flops_no_pad == cfg.layers[0].problem.flops_no_pad());
    CHECK(r.rows[0].flops_no_pad < r.rows[0].flops);  // padded layer
    CHECK(r.rows[0].gflops_benchdnn() < r.rows[0].gflops());
    std::stringstream csv, json;
    write_csv(r, csv);
    write_json(r, json);
    CHECK(csv.str().find(",gflops,gflops_benchdnn,") != std::string::npos);
    CHECK(json.str().find("\"gflops_benchdnn\": ") != std::string::npos);
    for (Results b : {read_csv(csv), read_json(json)})
        CHECK(b.rows[0].flops_no_pad == r.rows[0].flops_no_pad);
}

TEST_CASE("bench: compare reports max abs and rel error, NaN and an all-zero reference") {
    const std::vector<float> ref{1, -2, 4, 0.5f};
    std::vector<float> got = ref;
    Check c = compare(got.data(), ref.data(), ref.size(), 1e-6);
    CHECK(c.pass);
    CHECK(c.max_abs == 0);
    got[2] = 4.5f;  // |err| 0.5; scale max(|4|, rms) = 4: rel 0.125
    c = compare(got.data(), ref.data(), ref.size(), 1e-3);
    CHECK_FALSE(c.pass);
    CHECK(c.bad == 1);
    CHECK(c.max_abs == doctest::Approx(0.5));
    CHECK(c.max_err == doctest::Approx(0.125));
    got = ref;
    got[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(compare(got.data(), ref.data(), ref.size(), 1e-3).pass);
    const std::vector<float> zeros(4, 0.f);
    c = compare(zeros.data(), zeros.data(), 4, 1e-3);
    CHECK_FALSE(c.pass);
    CHECK(c.note == "reference all zero");
}

TEST_CASE("bench: every measurement carries a passing check against direct, and its operations") {
    Config cfg = tiny_config();
    const Results r = run(cfg);
    // 2 layers x (fwd: im2col_gemm; bwd_data: col2im, via_forward; bwd_weight: im2col_gemm,
    // via_forward) at least; other helpers' algorithms may add more.
    CHECK(r.rows.size() >= 2 * 5);
    CHECK(r.layers.size() == 2);
    for (const Measurement& m : r.rows) {
        CAPTURE(m.algorithm);
        CAPTURE(pass_name(m.pass));
        CHECK(m.ran);
        CHECK(m.check.checked);
        CHECK(m.check.pass);
        CHECK(m.check.reference == "direct");
        CHECK(m.check.max_rel <= cfg.rtol);
        CHECK(m.total.runs == 3);
        CHECK(m.total.min_ms <= m.total.median_ms);
        CHECK(m.total.median_ms <= m.total.max_ms);
        CHECK(m.flops == doctest::Approx(cfg.layers[m.layer].problem.flops()));
        CHECK(m.gflops() > 0);
        CHECK_FALSE(m.ops.empty());
        double ops = 0;
        for (const auto& op : m.ops) ops += op.time.min_ms;
        CHECK(ops <= m.total.max_ms * 1.0001);  // spans lie inside the call
    }
    const Measurement* col2im = r.find(0, Pass::BackwardData, "col2im");
    REQUIRE(col2im);
    bool has_gemm = false, has_col2im = false;
    for (const auto& op : col2im->ops) {
        has_gemm |= op.name == "gemm";
        has_col2im |= op.name == "col2im";
    }
    CHECK(has_gemm);
    CHECK(has_col2im);
    CHECK(r.failed() == 0);
    CHECK(r.verification_summary().find("all ") == 0);
    CHECK(r.machine.threads == 1);
    CHECK(r.machine.commit.size() > 0);
}

TEST_CASE("bench: a deliberately wrong algorithm is caught, a throwing one is recorded") {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward};
    cfg.extra_algorithms = {{Pass::Forward, "off_by_one", "wrong on purpose", forward_off_by_one},
                            {Pass::Forward, "throws", "throws on purpose", forward_throws}};
    cfg.algos = {"im2col_gemm", "off_by_one", "throws"};
    const Results r = run(cfg);
    REQUIRE(r.rows.size() == 6);
    for (std::size_t li = 0; li < 2; ++li) {
        const Measurement* good = r.find(li, Pass::Forward, "im2col_gemm");
        const Measurement* bad = r.find(li, Pass::Forward, "off_by_one");
        const Measurement* err = r.find(li, Pass::Forward, "throws");
        REQUIRE(good);
        REQUIRE(bad);
        REQUIRE(err);
        CHECK(good->valid());
        CHECK(bad->ran);
        CHECK(bad->check.checked);
        CHECK_FALSE(bad->check.pass);
        CHECK_FALSE(bad->valid());
        CHECK(bad->check.status() == "FAIL");
        CHECK(bad->check.max_abs == doctest::Approx(1.0).epsilon(1e-3));
        CHECK_FALSE(err->ran);
        CHECK_FALSE(err->valid());
        CHECK(err->error.find("deliberate failure") != std::string::npos);
    }
    CHECK(r.failed() == 4);
    CHECK(r.verification_summary().find("FAILED") != std::string::npos);
}

namespace {
// Forward by direct, counting the calls whose buffers do not start on a 64-byte line.
int g_misaligned = 0;
void forward_counting_alignment(const Problem& p, const ConvArgs& a, Profiler* prof) {
    for (const void* q : {static_cast<const void*>(a.src), static_cast<const void*>(a.wei),
                          static_cast<const void*>(a.dst)})
        g_misaligned += reinterpret_cast<std::uintptr_t>(q) % 64 != 0;
    find_algorithm(Pass::Forward, "direct").run(p, a, prof);
}
}  // namespace

TEST_CASE("bench: the layers' buffers start on a cache line, as the engine's tensors do") {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward};
    cfg.extra_algorithms = {
        {Pass::Forward, "aligned", "counts misaligned buffers", forward_counting_alignment}};
    cfg.algos = {"aligned"};
    g_misaligned = 0;
    const Results r = run(cfg);
    REQUIRE(r.rows.size() == 2);
    for (const Measurement& m : r.rows) CHECK(m.valid());
    CHECK(g_misaligned == 0);
    // The allocator itself, for sizes off whole lines.
    for (std::size_t n : {1, 5, 17, 1000, 300000}) {
        const bench::Floats v(n, 1.0f);
        CHECK(reinterpret_cast<std::uintptr_t>(v.data()) % 64 == 0);
    }
}

TEST_CASE("bench: a pass's algorithms are timed in alternating rounds, after every check") {
    Config cfg = tiny_config();
    cfg.layers.resize(1);
    cfg.passes = {Pass::Forward};
    cfg.extra_algorithms = {{Pass::Forward, "logged_a", "logs its calls", forward_logged_a},
                            {Pass::Forward, "logged_b", "logs its calls", forward_logged_b}};
    cfg.algos = {"logged_a", "logged_b"};
    cfg.timing.warmup = 1;
    cfg.timing.reps = 3;
    call_log.clear();
    const Results r = run(cfg);
    // Checks (one call each), warm-ups, then rounds A B / B A / A B.
    CHECK(call_log ==
          "ab"
          "ab"
          "ABBAAB");
    REQUIRE(r.rows.size() == 2);
    for (const Measurement& m : r.rows) {
        CHECK(m.valid());
        CHECK(m.total.runs == 3);
    }
    // Spans are kept per algorithm; both share the window's foreign CPU share.
    REQUIRE(r.rows[1].ops.size() == 1);
    CHECK(r.rows[1].ops[0].name == "logged");
    CHECK(r.rows[1].ops[0].time.runs == 3);
    CHECK(r.rows[0].ops.empty());
    CHECK(r.rows[0].foreign_cpu == r.rows[1].foreign_cpu);
}

TEST_CASE("bench: above the direct limit the reference is a named second algorithm, said so") {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.direct_max_flops = 0;  // every layer "too big" for direct; no peer
    const Results r = run(cfg);
    const Measurement* first = r.find(0, Pass::Forward, "im2col_gemm");
    REQUIRE(first);
    CHECK(first->check.status() == "REFERENCE");  // it is the reference itself
    const Measurement* via = r.find(0, Pass::BackwardData, "via_forward");
    REQUIRE(via);
    CHECK(via->check.reference == "algo:col2im");
    CHECK(via->check.note.find("direct loops skipped") != std::string::npos);
    CHECK(via->valid());
    // A named reference must exist in every selected pass.
    cfg.reference = "nonexistent";
    CHECK_THROWS_AS(run(cfg), Error);
}

TEST_CASE("bench: the peer is timed in the same run and checked like the engine") {
    Config cfg = tiny_config();
    cfg.peer = fake_peer(false);
    Results r = run(cfg);
    const Measurement* pf = r.find(0, Pass::Forward, "fake");
    REQUIRE(pf);
    CHECK(pf->peer);
    CHECK(pf->valid());
    CHECK(pf->impl == "fake:direct");
    const Measurement* pw = r.find(0, Pass::BackwardWeight, "fake");
    REQUIRE(pw);
    CHECK_FALSE(pw->ran);  // the fake peer has no bwd_weight: recorded, not plotted
    CHECK(pw->error == "fake peer has no bwd_weight");
    CHECK(r.machine.peer == "fake peer (engine direct loops)");
    // Reference "peer": the engine is checked against the peer's result.
    cfg.passes = {Pass::Forward};
    cfg.reference = "peer";
    r = run(cfg);
    const Measurement* e = r.find(1, Pass::Forward, "im2col_gemm");
    REQUIRE(e);
    CHECK(e->check.reference == "peer:fake");
    CHECK(e->valid());
    // A wrong peer fails its check against direct.
    cfg.reference = "auto";
    cfg.peer = fake_peer(true);
    r = run(cfg);
    const Measurement* wrong = r.find(0, Pass::Forward, "fake");
    REQUIRE(wrong);
    CHECK(wrong->ran);
    CHECK_FALSE(wrong->valid());
}

TEST_CASE("bench: fp16 / bf16 storage times the fractal algorithms alone, within 4e-3 / 3e-2") {
    Config cfg = tiny_config();
    cfg.peer = fake_peer(false);
    for (DType dt : {DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(dt));
        cfg.dtype = dt;
        const Results r = run(cfg);
        CHECK(r.dtype == dt);
        CHECK(r.rtol == (dt == DType::f16 ? 4e-3 : 3e-2));
        // fwd fractal, bwd_data and bwd_weight fractal_via_forward, on both layers; no peer.
        REQUIRE(r.rows.size() == 2 * 3);
        for (const Measurement& m : r.rows) {
            CAPTURE(m.algorithm);
            CHECK(supports_storage_dtype(m.pass, m.algorithm));
            CHECK_FALSE(m.peer);
            CHECK(m.dtype == dt);
            CHECK(m.valid());
            CHECK(m.check.reference == "direct");  // the fp32 reference, not itself
            CHECK(m.check.max_rel <= r.rtol);
            CHECK(m.check.max_rel > 1e-5);  // rounded storage: far from fp32's ~1e-7
            CHECK(m.total.runs == 3);
        }
        const bool bf16 = dt == DType::bf16;
        REQUIRE(r.notes.size() == (bf16 ? 4u : 3u));
        CHECK(r.notes[0].find("im2col_gemm") != std::string::npos);
        CHECK(r.notes[0].find("fp32 only: skipped") != std::string::npos);
        CHECK(r.notes[1] ==
              std::string("dtype ") + dtype_name(dt) + ": peer fake is fp32 only: skipped");
        // bf16: which products ran, as the rule chose them on this CPU.
        if (bf16)
            CHECK(r.notes[2].rfind(convlab::davinci::bf16_pairs(convlab::Rule::Auto)
                                       ? "bf16 products: bf16 pairs (vdpbf16ps)"
                                       : "bf16 products: fp32 multiply-adds",
                                   0) == 0);
        // The fractal algorithms' weights are prepared once for the dtype, as for fp32.
        CHECK(r.notes[bf16 ? 3 : 2].rfind("weights: packed once per layer and pass", 0) == 0);
        CHECK(r.machine.peer == "none");
        CHECK(r.verification_summary().find(std::string(dtype_name(dt)) + " storage") !=
              std::string::npos);
        // The files keep the dtype of the run and of each row, and the notes.
        std::stringstream csv, json;
        write_csv(r, csv);
        write_json(r, json);
        for (Results b : {read_csv(csv), read_json(json)}) {
            CHECK(b.dtype == dt);
            REQUIRE(b.rows.size() == r.rows.size());
            CHECK(b.rows[0].dtype == dt);
        }
        std::istringstream again(json.str());
        CHECK(read_json(again).notes == r.notes);  // the run's notes: in the JSON only
    }
    // fp32: the same algorithms agree with direct to fp32 rounding.
    cfg.dtype = DType::f32;
    cfg.algos = {"fractal", "fractal_via_forward"};
    const Results f = run(cfg);
    for (const Measurement& m : f.rows)
        if (!m.peer) CHECK(m.check.max_rel < 1e-5);
    // A named fp32-only algorithm is refused, naming the field and the rule.
    cfg.dtype = DType::f16;
    cfg.algos = {"fractal", "im2col_gemm"};
    CHECK_THROWS_WITH_AS(run(cfg), doctest::Contains("dtype: fp16 storage is supported by"), Error);
    CHECK_THROWS_WITH_AS(run(cfg), doctest::Contains("im2col_gemm (in algos) is fp32 only"), Error);
    cfg.algos.clear();
    cfg.reference = "peer";
    CHECK_THROWS_WITH_AS(run(cfg), doctest::Contains("fp32 only"), Error);
}

TEST_CASE("bench: a peer with bf16 is timed in it, checked against fp32 within bf16's tolerance") {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.dtype = DType::bf16;
    cfg.peer = fake_bf16_peer(false);
    const Results r = run(cfg);
    CHECK(r.machine.peer == "fake peer (engine direct loops), bf16 operands");
    int peer_rows = 0;
    for (const Measurement& m : r.rows) {
        CAPTURE(m.algorithm);
        CHECK(m.dtype == DType::bf16);
        CHECK(m.valid());
        // The reference stays the fp32 direct loops: the peer's bf16 result is checked, not used.
        CHECK(m.check.reference == "direct");
        if (m.peer) {
            ++peer_rows;
            CHECK(m.total.runs == 3);
        }
    }
    CHECK(peer_rows == 2 * 2);
    for (const std::string& n : r.notes) CHECK(n.find("peer fake") == std::string::npos);
    // A peer whose result is off fails its check (and only it).
    cfg.peer = fake_bf16_peer(true);
    const Results w = run(cfg);
    for (const Measurement& m : w.rows) {
        CAPTURE(m.algorithm);
        CHECK(m.valid() == !m.peer);
    }
    // fp16: the peer has none, skipped with a note; the peer's bf16 cannot be the reference.
    cfg.peer = fake_bf16_peer(false);
    cfg.dtype = DType::f16;
    const Results h = run(cfg);
    for (const Measurement& m : h.rows) CHECK_FALSE(m.peer);
    cfg.dtype = DType::bf16;
    cfg.reference = "peer";
    CHECK_THROWS_WITH_AS(run(cfg), doctest::Contains("result is checked, not the fp32 reference"),
                         Error);
}

TEST_CASE("bench: a sweep over batch and threads: each combination a set of rows") {
    Config cfg = tiny_config();
    cfg.passes = {Pass::Forward};
    cfg.algos = {"im2col_gemm"};
    std::vector<std::size_t> seen;
    std::size_t total = 0;
    log_progress(cfg, seen, total);
    const Results r = run_sweep(cfg, {1, 3}, {1, 2});
    // 2 batches x 2 thread counts x 2 layers x 1 algorithm, batches outermost.
    REQUIRE(r.rows.size() == 8);
    CHECK(total == 8);
    CHECK(seen.size() == 8);
    CHECK(seen.back() == 8);
    REQUIRE(r.sweep.size() == 4);
    CHECK(r.sweep[0].batch == 1);
    CHECK(r.sweep[0].threads == 1);
    CHECK(r.sweep[1].threads == 2);
    CHECK(r.sweep[3].batch == 3);
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        CHECK(r.rows[i].valid());
        CHECK(r.rows[i].batch == (i < 4 ? 1 : 3));
        CHECK(r.rows[i].threads == (i % 4 < 2 ? 1 : 2));
    }
    // The layer's FLOPs follow the batch.
    CHECK(r.rows[4].flops == doctest::Approx(3 * r.rows[0].flops));
    const std::vector<Results> parts = split_sweep(r);
    REQUIRE(parts.size() == 4);
    CHECK(parts[3].batch == 3);
    CHECK(parts[3].machine.threads == 2);
    REQUIRE(parts[3].rows.size() == 2);
    CHECK(parts[3].rows[0].batch == 3);
    CHECK(parts[3].layers[0].descriptor.rfind("mb3", 0) == 0);
    CHECK(parts[0].layers[0].descriptor.rfind("mb1", 0) == 0);
    // The files keep each row's batch and threads and the sweep's record.
    std::stringstream csv, json;
    write_csv(r, csv);
    write_json(r, json);
    {
        std::istringstream in(json.str());
        const Results b = read_json(in);  // the sweep's record: in the JSON only
        REQUIRE(b.sweep.size() == 4);
        CHECK(b.sweep[3].batch == 3);
        CHECK(b.sweep[3].threads == 2);
        CHECK(b.sweep[2].foreign_cpu == r.sweep[2].foreign_cpu);
        CHECK(split_sweep(b)[2].rows.size() == 2);
    }
    for (Results b : {read_csv(csv), read_json(json)}) {
        REQUIRE(b.rows.size() == 8);
        CHECK(b.rows[5].batch == 3);
        CHECK(b.rows[5].threads == 1);
    }
    CHECK(csv.str().find("mb3ic3ih7") != std::string::npos);  // descriptor with the row's batch
    // One combination: a plain run, no sweep record.
    CHECK(run_sweep(cfg, {2}, {1}).sweep.empty());
    CHECK_THROWS_AS(run_sweep(cfg, {1, 1}, {1}), Error);
    CHECK_THROWS_AS(run_sweep(cfg, {std::nullopt, 2}, {1}), Error);
}

TEST_CASE("bench: progress reaches the total, cancel stops early") {
    Config cfg = tiny_config();
    std::vector<std::size_t> seen;
    std::size_t total = 0;
    log_progress(cfg, seen, total);
    Results r = run(cfg);
    REQUIRE_FALSE(seen.empty());
    CHECK(seen.back() == total);
    CHECK(total == r.rows.size());
    for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i] == seen[i - 1] + 1);
    CHECK_FALSE(r.cancelled);

    std::atomic<bool> stop{false};
    cfg.cancel = &stop;
    cfg.progress = [&](const Config::Progress& p) {
        if (p.done == 2) stop = true;
    };
    r = run(cfg);
    CHECK(r.cancelled);
    // The pass being measured ends (its algorithms are timed together), then the run stops.
    CHECK(r.rows.size() >= 2);
    CHECK(r.rows.size() < total);
    for (const Measurement& m : r.rows) CHECK((m.layer == 0 && m.pass == Pass::Forward));
    CHECK(r.verification_summary().find("CANCELLED") != std::string::npos);
}

TEST_CASE("bench: bad configurations are rejected before measuring") {
    Config cfg = tiny_config();
    cfg.algos = {"no_such_algo"};
    CHECK_THROWS_WITH_AS(run(cfg), doctest::Contains("algos: 'no_such_algo'"), Error);
    cfg = tiny_config();
    cfg.passes = {Pass::BackwardBias};
    CHECK_THROWS_AS(run(cfg), Error);
    cfg = tiny_config();
    cfg.layers.clear();
    CHECK_THROWS_AS(run(cfg), Error);
    cfg = tiny_config();
    cfg.reference = "peer";
    CHECK_THROWS_WITH_AS(run(cfg), doctest::Contains("peer"), Error);
}

TEST_CASE("bench: the foreign CPU share does not count the counters' tick as load") {
    // 2 CPUs, a 50 ms window, counters in 10 ms ticks: this process used 100 ms.
    CpuSample a, b;
    a.ok = b.ok = true;
    a.tick = b.tick = 0.01;
    a.wall = 10.0;
    b.wall = 10.05;
    b.self = 0.1;
    b.busy = 0.11;  // one tick more than ours: within the counters' error, not load
    CHECK(foreign_cpu_share(a, b, 2) == 0);
    b.busy = 0.12;  // two ticks: still within one tick per CPU
    CHECK(foreign_cpu_share(a, b, 2) == 0);
    b.busy = 0.16;  // 60 ms of others' time, 40 ms beyond the error, of 100 ms capacity
    CHECK(foreign_cpu_share(a, b, 2) == doctest::Approx(0.4));
    b.busy = 0.5;
    CHECK(foreign_cpu_share(a, b, 2) == 1.0);  // clamped
    b.ok = false;
    CHECK(foreign_cpu_share(a, b, 2) < 0);
    const CpuSample now = cpu_sample();
    if (now.ok) CHECK(now.tick > 0);
}

TEST_CASE("bench: the measured fp32 peak is positive and the machine record is filled") {
    const double peak = measure_fp32_peak(1, 0.02);
    CHECK(peak > 0.1);
    const Machine m = describe_machine();
    CHECK_FALSE(m.cpu.empty());
    CHECK(m.logical_cpus >= 1);
    CHECK_FALSE(m.compiler.empty());
    CHECK(m.date.size() == 20);  // 2025-01-31T13:05:09Z
    CHECK(m.summary().find(m.cpu) != std::string::npos);
}

// A browser's clock ticks every 100 us: rounds of seconds / 12 = 50 us would time as 0 (an
// infinite peak) or as one tick. Each round spans kBatchTicks ticks instead, so the peak is finite
// and about what the fine clock measures.
TEST_CASE("bench: the fp32 peak on a coarse clock is finite and near the fine clock's") {
    const auto coarse = [] {
        const double t =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
        return std::floor(t / 1e-4) * 1e-4;
    };
    const double on_coarse = measure_fp32_peak(1, 0.0006, coarse);
    const double on_fine = measure_fp32_peak(1, 0.02);
    CHECK(std::isfinite(on_coarse));
    CHECK(on_coarse > 0.1);
    // Loose: load lowers either figure; a round read as 0 or one tick is off by orders.
    CHECK(on_coarse < 20 * on_fine);
}

// The speed probe on a clock of 1 ms ticks: rounds of seconds / 4 = 100 us would mostly time as
// 0 (a rate of millions of GFLOP/s) or one tick; each spans kBatchTicks ticks instead.
TEST_CASE("bench: the speed probe on a coarse clock is near the fine clock's") {
    const auto coarse = [] {
        const double t =
            std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
        return std::floor(t / 1e-3) * 1e-3;
    };
    const double on_coarse = probe_fp32_rate(1, 0.0004, coarse);
    const double on_fine = probe_fp32_rate(1, 0.02);
    CHECK(std::isfinite(on_coarse));
    CHECK(on_fine > 0.1);
    // Loose: load lowers either figure; a round read as 0 or one tick is off by orders.
    CHECK(on_coarse < 20 * on_fine);
    CHECK(on_coarse > on_fine / 20);
}

TEST_CASE("bench: the machine's own speed is probed around every timed window") {
    // The probe measures FMAs really run: a rate far above the measured peak would be chains
    // computed outside its clock reads (millions of GFLOP/s). (No lower bound, and a loose upper
    // one: ctest runs another test beside this one, and load may lower the peak's short rounds
    // more than the probe's.) Without a peak there is nothing to compare with: -1, and
    // no probe.
    const double peak = measure_fp32_peak(2, 0.05);
    const double now = probe_fp32_rate(2);
    CHECK(now > 0);
    CHECK(now < 20 * peak);
    Config cfg = tiny_config();
    cfg.measure_peak = true;
    const Results r = run(cfg);
    REQUIRE(!r.rows.empty());
    for (const Measurement& m : r.rows) {
        CAPTURE(m.algorithm);
        CHECK(m.speed > 0);
        CHECK(m.speed < 4);
    }
    CHECK(r.speed_summary().find("% of its peak; ") != std::string::npos);
    cfg.measure_peak = false;
    const Results without = run(cfg);
    for (const Measurement& m : without.rows) CHECK(m.speed == -1);
    CHECK(without.speed_summary().empty());
    // The rule: below kSlowMachine of the peak, noisy; unknown or above it, not.
    Measurement m;
    m.foreign_cpu = 0;
    m.speed = kSlowMachine - 0.01;
    CHECK(m.noisy());
    m.speed = kSlowMachine + 0.01;
    CHECK_FALSE(m.noisy());
    m.speed = -1;
    CHECK_FALSE(m.noisy());
}

TEST_CASE("bench: a window timed on a slow machine is timed again, the fastest attempt kept") {
    // A fake probe (absolute GFLOP/s, against a peak of at least 0.1): every window's attempts
    // are probed twice each, before and after; calls counts them.
    Config cfg = tiny_config();
    cfg.measure_peak = true;
    int calls = 0;
    // Always slow: three attempts (retime_slow 2), the second the fastest (1e-3 against 1e-6
    // and 1e-9), so it is the one kept, still noisy.
    cfg.speed_probe = [&calls](int) {
        const double rate[3] = {1e-6, 1e-3, 1e-9};
        return rate[(calls++ % 6) / 2];
    };
    const Results slow = run(cfg);
    REQUIRE(!slow.rows.empty());
    CHECK(calls == 6 * 6);  // 2 layers x 3 passes, 3 attempts of 2 probes each
    for (const Measurement& m : slow.rows) {
        CAPTURE(m.algorithm);
        CHECK(m.ran);
        CHECK(m.retimed == 2);
        CHECK(m.noisy());
        const double rate = m.speed * slow.machine.peak_gflops;  // the kept attempt's probe
        CHECK(rate > 1e-4);
        CHECK(rate < 1e-2);
    }
    CHECK(slow.speed_summary().find("timed again after a slow probe") != std::string::npos);
    // Slow once, then at full speed: one more attempt, kept, not noisy.
    calls = 0;
    cfg.speed_probe = [&calls](int) { return calls++ % 4 < 2 ? 1e-6 : 1e12; };
    const Results recovered = run(cfg);
    CHECK(calls == 6 * 4);
    for (const Measurement& m : recovered.rows) {
        CHECK(m.retimed == 1);
        CHECK(m.speed > kSlowMachine);
        CHECK_FALSE(m.noisy());
    }
    // Never again with retime_slow 0; never at full speed.
    calls = 0;
    cfg.retime_slow = 0;
    cfg.speed_probe = [&calls](int) { return ++calls, 1e-6; };
    const Results once = run(cfg);
    CHECK(calls == 6 * 2);
    for (const Measurement& m : once.rows) {
        CHECK(m.retimed == 0);
        CHECK(m.noisy());
    }
    CHECK(once.speed_summary().find("timed again") == std::string::npos);
    calls = 0;
    cfg.retime_slow = 2;
    cfg.speed_probe = [&calls](int) { return ++calls, 1e12; };
    const Results fast = run(cfg);
    CHECK(calls == 6 * 2);
    for (const Measurement& m : fast.rows) CHECK(m.retimed == 0);
}

TEST_CASE("bench: interleave_passes times every pass of a layer in one window") {
    // The probe runs before and after each window: counted, it tells the windows apart.
    Config cfg = tiny_config();
    cfg.measure_peak = true;
    cfg.retime_slow = 0;
    int calls = 0;
    cfg.speed_probe = [&calls](int) { return ++calls, 1e12; };
    const Results apart = run(cfg);
    CHECK(calls == 6 * 2);  // 2 layers x 3 passes, a window each
    calls = 0;
    cfg.interleave_passes = true;
    std::vector<std::size_t> seen;
    std::size_t total = 0;
    log_progress(cfg, seen, total);
    const Results together = run(cfg);
    CHECK(calls == 2 * 2);  // a window per layer
    REQUIRE(together.rows.size() == apart.rows.size());
    CHECK(seen.size() == together.rows.size());
    CHECK(seen.back() == total);
    for (std::size_t i = 0; i < together.rows.size(); ++i) {
        const Measurement& m = together.rows[i];
        CAPTURE(m.algorithm);
        CAPTURE(pass_name(m.pass));
        // The same rows in the same order, every one timed and verified.
        CHECK(m.layer == apart.rows[i].layer);
        CHECK(m.pass == apart.rows[i].pass);
        CHECK(m.algorithm == apart.rows[i].algorithm);
        CHECK(m.ran);
        CHECK(m.check.pass);
        CHECK(m.total.runs == 3);
        // One window per layer: its rows share the window's load and speed figures.
        const Measurement& first =
            *std::find_if(together.rows.begin(), together.rows.end(),
                          [&](const Measurement& x) { return x.layer == m.layer; });
        CHECK(m.foreign_cpu == first.foreign_cpu);
        CHECK(m.speed == first.speed);
    }
}

TEST_CASE("bench: a sliced run measures what run() measures, one layer's pass a step") {
    Config cfg = tiny_config();
    cfg.extra_algorithms = {{Pass::Forward, "off_by_one", "wrong on purpose", forward_off_by_one}};
    const Results whole = run(cfg);
    SlicedRun sliced(cfg);
    CHECK(sliced.total() == whole.rows.size());
    CHECK(sliced.measured() == 0);
    std::size_t steps = 0;
    while (!sliced.done()) {
        const std::size_t before = sliced.measured();
        sliced.step();
        ++steps;
        CHECK(sliced.measured() > before);  // every slice measures something
        CHECK(sliced.results().rows.size() == sliced.measured());
        CHECK_FALSE(sliced.what().empty());
    }
    CHECK(steps == 2 * 3);  // 2 layers x 3 passes
    const Results& r = sliced.results();
    CHECK_FALSE(r.cancelled);
    REQUIRE(r.layers.size() == whole.layers.size());
    for (std::size_t i = 0; i < r.layers.size(); ++i) {
        CHECK(r.layers[i].name == whole.layers[i].name);
        CHECK(r.layers[i].descriptor == whole.layers[i].descriptor);
    }
    // The same rows in the same order, checked as run() checks them: the wrong algorithm fails
    // in both, everything else passes against the same references.
    REQUIRE(r.rows.size() == whole.rows.size());
    for (std::size_t i = 0; i < r.rows.size(); ++i) {
        const Measurement& m = r.rows[i];
        CAPTURE(m.algorithm);
        CHECK(m.layer == whole.rows[i].layer);
        CHECK(m.pass == whole.rows[i].pass);
        CHECK(m.algorithm == whole.rows[i].algorithm);
        CHECK(m.valid() == whole.rows[i].valid());
        CHECK(m.check.reference == whole.rows[i].check.reference);
        CHECK(m.total.runs == 3);
    }
    CHECK(r.failed() == whole.failed());
    CHECK(r.failed() == 2);  // off_by_one on both layers
    CHECK(r.machine.threads == 1);
    for (const std::string& n : whole.notes) {
        // run()'s notes, except those naming the passes an algorithm skipped, which a slice of
        // one pass names pass by pass.
        if (n.find("applies only to") == std::string::npos)
            CHECK(std::find(r.notes.begin(), r.notes.end(), n) != r.notes.end());
    }

    // All passes of a layer in one window: a layer a step.
    cfg.interleave_passes = true;
    SlicedRun together(cfg);
    steps = 0;
    while (!together.done()) {
        together.step();
        ++steps;
    }
    CHECK(steps == 2);
    CHECK(together.results().rows.size() == whole.rows.size());

    // A cancel ends the run before the next slice; what was measured stays.
    std::atomic<bool> stop{false};
    cfg.interleave_passes = false;
    cfg.cancel = &stop;
    SlicedRun cancelled(cfg);
    cancelled.step();
    const std::size_t first = cancelled.measured();
    stop = true;
    cancelled.step();
    CHECK(cancelled.done());
    CHECK(cancelled.results().cancelled);
    CHECK(cancelled.measured() == first);
    CHECK(cancelled.results().rows.size() == first);

    // Bad configurations are refused before anything is measured, as by run().
    cfg = tiny_config();
    cfg.algos = {"no_such_algo"};
    CHECK_THROWS_WITH_AS(SlicedRun{cfg}, doctest::Contains("algos: 'no_such_algo'"), Error);
    cfg = tiny_config();
    cfg.layers.clear();
    CHECK_THROWS_AS(SlicedRun{cfg}, Error);
}

TEST_CASE("bench: --trace keeps each timed call's span and its operations', as Trace Events") {
    Config cfg = tiny_config();
    cfg.layers.resize(1);
    cfg.passes = {Pass::Forward, Pass::BackwardData};
    cfg.algos = {"im2col_gemm", "col2im"};
    cfg.timing.reps = 4;
    cfg.trace = true;
    const Results r = run(cfg);
    REQUIRE(r.rows.size() == 2);
    for (const Measurement& m : r.rows) {
        CAPTURE(m.algorithm);
        REQUIRE(m.ran);
        // Every timed call, each holding its operations' spans, which add up to the operations'
        // times the row reports.
        REQUIRE(m.trace.size() == static_cast<std::size_t>(m.total.runs));
        REQUIRE_FALSE(m.ops.empty());
        for (const Measurement::TracedCall& c : m.trace) {
            CHECK(c.start <= c.end);
            REQUIRE(c.ops.size() >= m.ops.size());
            for (const Profiler::Event& e : c.ops) {
                CHECK(e.start >= c.start);
                CHECK(e.end <= c.end);
                CHECK(e.start <= e.end);
            }
        }
        // The calls follow one another.
        for (std::size_t k = 1; k < m.trace.size(); ++k)
            CHECK(m.trace[k - 1].end <= m.trace[k].start);
    }
    // Without --trace nothing is kept.
    cfg.trace = false;
    for (const Measurement& m : run(cfg).rows) CHECK(m.trace.empty());

    // The file: valid JSON in the Trace Event format (checked by Python's json module against
    // the format's rules), one call event per timed call, operations nested in their calls.
    std::ostringstream trace;
    write_trace(r, trace);
    const std::string file = (std::filesystem::temp_directory_path() /
                              ("convlab_trace_" + std::to_string(::getpid()) + ".json"))
                                 .string();
    std::ofstream(file) << trace.str();
    const std::string py = file + ".py";
    std::ofstream(py) << R"(import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
assert t["displayTimeUnit"] == "ms"
calls = [e for e in ev if e["ph"] == "X" and e["cat"] == "call"]
ops = [e for e in ev if e["ph"] == "X" and e["cat"] == "operation"]
assert len(calls) == int(sys.argv[2]), len(calls)
assert ops
for e in calls + ops:
    assert isinstance(e["name"], str) and e["name"]
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
    assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
for e in calls:
    assert e["args"]["pass"] in ("fwd", "bwd_data") and e["args"]["verified"] == "PASS"
for o in ops:
    assert any(c["tid"] == o["tid"] and c["ts"] <= o["ts"] + 1e-3 and
               o["ts"] + o["dur"] <= c["ts"] + c["dur"] + 1e-3 for c in calls), o
names = [e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
assert len(names) == 2, names
)";
    const std::string cmd = "/usr/bin/python3 " + py + " " + file + " " +
                            std::to_string(r.rows[0].trace.size() + r.rows[1].trace.size());
    CHECK(std::system(cmd.c_str()) == 0);
    std::remove(file.c_str());
    std::remove(py.c_str());
}
