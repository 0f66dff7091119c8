// Tuning: the fast paths' rules travel with each call (no process-wide state), and the command
// line's and benchmark's Tuning comes from the environment.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "convlab/tuning_env.hpp"
#include "fast_paths.hpp"

TEST_CASE("Tuning: each call takes its own rules, whatever the call before took") {
    std::mt19937 rng(5);
    // A 3x3 forward that the shifted tiles take by default (they record "pack_wei"), and a 1x1
    // col2im backward data whose column matrix is blocked only when forced: alternating calls
    // with opposite rules each run their own path.
    const Problem p = parse_descriptor("mb2ic32ih30oc40oh30kh3ph1");
    const Tensor src = integer_tensor(p.src_dims(), rng), wei = integer_tensor(p.wei_dims(), rng);
    const Tensor want = forward(p, src, wei, nullptr, "direct");
    Tuning never;
    never.shifted = Rule::Never;
    const Tuning by_default;
    CHECK(by_default == Tuning{});
    CHECK(by_default.shifted == Rule::Auto);
    for (int round = 0; round < 2; ++round) {
        Profiler off, on;
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &off, nullptr, never), want,
                    "shifted Never");
        check_equal(forward(p, src, wei, nullptr, "implicit_gemm", &on, nullptr, by_default), want,
                    "shifted Auto");
        CHECK(off.seconds("pack_wei") == 0.0);
        CHECK((on.seconds("pack_wei") > 0.0) == shifted_kernels());
        CHECK_FALSE(detail::shifted_applies(p, Pass::Forward, never, nullptr));
        CHECK(detail::shifted_applies(p, Pass::Forward, by_default, nullptr) == shifted_kernels());
    }
    // The same problem's rule under two Tunings at once: nothing one sets leaks into the other.
    Tuning always;
    always.col2im_blocks = Rule::Always;
    const Problem small = parse_descriptor("mb1ic3ih30oc8oh15kh7sh2ph3");
    CHECK(detail::col2im_in_blocks(small, always));
    CHECK_FALSE(detail::col2im_in_blocks(small, by_default));
    CHECK(detail::col2im_in_blocks(small, always));
    // winograd Always: auto takes it wherever it applies (a 3x3 of 4 channels, far below the
    // channels where it pays), never where it does not (a 5x5).
    Tuning wino;
    wino.winograd = Rule::Always;
    const Problem tiny = parse_descriptor("mb1ic4ih8oc4oh8kh3ph1");
    CHECK(detail::winograd_pays(tiny, Pass::Forward, wino));
    CHECK_FALSE(detail::winograd_pays(tiny, Pass::Forward, by_default));
    CHECK_FALSE(
        detail::winograd_pays(parse_descriptor("mb1ic4ih8oc4oh8kh5ph2"), Pass::Forward, wino));
    CHECK(std::string(detail::auto_choice(tiny, Pass::Forward, wino, nullptr).name) == "winograd");
}

namespace {
// Sets (or with nullopt unsets) an environment variable for a scope, restoring it after.
struct EnvScope {
    std::string name;
    std::optional<std::string> old;
    EnvScope(const char* n, const std::optional<std::string>& value) : name(n) {
        if (const char* v = std::getenv(n)) old = v;
        if (value)
            ::setenv(n, value->c_str(), 1);
        else
            ::unsetenv(n);
    }
    ~EnvScope() {
        if (old)
            ::setenv(name.c_str(), old->c_str(), 1);
        else
            ::unsetenv(name.c_str());
    }
    EnvScope(const EnvScope&) = delete;
    EnvScope& operator=(const EnvScope&) = delete;
};
}  // namespace

TEST_CASE("tuning_from_environment: CONVLAB_GEMM=eigen selects Eigen's GEMM core") {
    {
        const EnvScope env("CONVLAB_GEMM", std::nullopt);
        CHECK(tuning_from_environment() == Tuning{});
    }
    {
        const EnvScope env("CONVLAB_GEMM", "eigen");
        const Tuning t = tuning_from_environment();
        CHECK(t.gemm_core == GemmCore::eigen);
        Tuning rest = t;
        rest.gemm_core = GemmCore::blocked;
        CHECK(rest == Tuning{});  // nothing else changes
    }
    {
        const EnvScope env("CONVLAB_GEMM", "blocked");
        CHECK(tuning_from_environment().gemm_core == GemmCore::blocked);
    }
}
