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

TEST_CASE("Tuning: the blocked GEMM's rules are each call's, alternating calls keep their own") {
    std::mt19937 rng(6);
    const auto mismatches = [](const std::vector<float>& c, const std::vector<float>& want) {
        dim_t bad = 0;
        for (std::size_t e = 0; e < c.size(); ++e) bad += c[e] != want[e];
        return bad;
    };
    // W^T of a backward data: A column-contiguous, 1100 x 500 (2.1 MiB), against 49 columns.
    // Computed transposed (transposed_products Always, on any machine), its C^T (1100 x 49
    // floats) is the largest scratch request; the plain blocked GEMM's (Never) are its packed
    // blocks, under half of that. Alternating calls each take their own path and both equal the
    // naive product.
    {
        const dim_t m = 1100, n = 49, k = 500;
        const auto a = integers(static_cast<std::size_t>(m * k), rng);
        const auto b = integers(static_cast<std::size_t>(k * n), rng);
        const auto c0 = integers(static_cast<std::size_t>(m * n), rng);
        const auto want = naive_product(m, n, k, a, b, true, false, true, c0);
        Tuning transposed, plain;
        transposed.transposed_products = Rule::Always;
        plain.transposed_products = Rule::Never;
        const std::size_t ct_bytes = static_cast<std::size_t>(m * n) * sizeof(float);
        for (int round = 0; round < 2; ++round)
            for (const Tuning* tn : {&transposed, &plain}) {
                const bool t = tn == &transposed;
                INFO("round " << round << (t ? " transposed" : " plain"));
                CHECK(detail::sgemm_transposes(m, n, k, detail::StridedA{a.data(), 1, m}, *tn) ==
                      t);
                auto c = c0;
                detail::reset_scratch_high_water();
                detail::sgemm(*tn, m, n, k, detail::StridedA{a.data(), 1, m},
                              detail::StridedB{b.data(), n, 1}, c.data(), n, true);
                CHECK((detail::scratch_high_water() >= ct_bytes) == t);
                CHECK(mismatches(c, want) == 0);
            }
    }
    // A and B row-major, 64 x 3072 x 64 (whole 48- and 32-column panels): with B's rows read in
    // place (b_in_place Always, where the microkernel has the kernels) nothing of B is packed, so
    // its largest scratch request is smaller than with B packed (Never); A read from its rows
    // (read_a Auto, where the microkernel can) or packed (Never) alternately as well.
    {
        const dim_t m = 64, n = 3072, k = 64;
        const auto a = integers(static_cast<std::size_t>(m * k), rng);
        const auto b = integers(static_cast<std::size_t>(k * n), rng);
        const auto c0 = integers(static_cast<std::size_t>(m * n), rng);
        const auto want = naive_product(m, n, k, a, b, false, false, false, c0);
        const detail::StridedA sa{a.data(), k, 1};
        const detail::MicroKernel& uk = detail::microkernel_for(m, n, true);
        const bool in_place_kernels = uk.in_place_fn[0] != nullptr;
        Tuning in_place, packed;
        in_place.b_in_place = Rule::Always;
        packed.b_in_place = Rule::Never;
        packed.read_a = Rule::Never;
        CHECK(detail::read_a_in_place(uk, sa, in_place) == (uk.rowa_fn != nullptr));
        CHECK_FALSE(detail::read_a_in_place(uk, sa, packed));
        CHECK(detail::b_in_place_applies(uk, detail::GemmBlocking{}, sa,
                                         detail::StridedB{b.data(), n, 1}, m, k,
                                         in_place) == in_place_kernels);
        CHECK_FALSE(detail::b_in_place_applies(uk, detail::GemmBlocking{}, sa,
                                               detail::StridedB{b.data(), n, 1}, m, k, packed));
        for (int round = 0; round < 2; ++round) {
            std::size_t high[2] = {};
            for (const Tuning* tn : {&in_place, &packed}) {
                const int i = tn == &packed ? 1 : 0;
                INFO("round " << round << (i ? " packed" : " in place"));
                auto c = c0;
                detail::reset_scratch_high_water();
                detail::gemm(*tn, m, n, k, sa, detail::StridedB{b.data(), n, 1}, c.data(), n,
                             false);
                high[i] = detail::scratch_high_water();
                CHECK(mismatches(c, want) == 0);
            }
            INFO("largest scratch request in place " << high[0] << ", packed " << high[1]);
            CHECK((high[0] < high[1]) == in_place_kernels);
        }
    }
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
    const EnvScope no_read_a("CONVLAB_READ_A", std::nullopt);
    const EnvScope no_transposed("CONVLAB_TRANSPOSED", std::nullopt);
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

TEST_CASE(
    "tuning_from_environment: CONVLAB_READ_A and CONVLAB_TRANSPOSED set the blocked GEMM's "
    "rules") {
    const EnvScope no_gemm("CONVLAB_GEMM", std::nullopt);
    {
        const EnvScope read_a("CONVLAB_READ_A", "packed");
        const EnvScope transposed("CONVLAB_TRANSPOSED", "on");
        const Tuning t = tuning_from_environment();
        CHECK(t.read_a == Rule::Never);
        CHECK(t.transposed_products == Rule::Always);
        Tuning rest = t;
        rest.read_a = Rule::Auto;
        rest.transposed_products = Rule::Auto;
        CHECK(rest == Tuning{});  // nothing else changes
    }
    {
        const EnvScope read_a("CONVLAB_READ_A", "rows");  // not a choice: the default
        const EnvScope transposed("CONVLAB_TRANSPOSED", "off");
        const Tuning t = tuning_from_environment();
        CHECK(t.read_a == Rule::Auto);
        CHECK(t.transposed_products == Rule::Never);
    }
    {
        const EnvScope read_a("CONVLAB_READ_A", std::nullopt);
        const EnvScope transposed("CONVLAB_TRANSPOSED", "auto");
        CHECK(tuning_from_environment() == Tuning{});
    }
}

TEST_CASE("tuning_from_environment: the implicit GEMM's switches set one rule each") {
    const EnvScope no_gemm("CONVLAB_GEMM", std::nullopt);
    const EnvScope no_read_a("CONVLAB_READ_A", std::nullopt);
    const EnvScope no_transposed("CONVLAB_TRANSPOSED", std::nullopt);
    struct Switch {
        const char* name;
        Rule Tuning::*rule;
    };
    const Switch switches[] = {{"CONVLAB_SHIFTED", &Tuning::shifted},
                               {"CONVLAB_SWAP_FORWARD", &Tuning::swap_forward},
                               {"CONVLAB_STRIDED_ROWS", &Tuning::strided_rows},
                               {"CONVLAB_B_IN_PLACE", &Tuning::b_in_place},
                               {"CONVLAB_BF16_PAIRS", &Tuning::bf16_pairs},
                               {"CONVLAB_ROW_LANES", &Tuning::row_lanes},
                               {"CONVLAB_STREAM_OUTPUT", &Tuning::stream_output}};
    for (const Switch& s : switches) {
        CAPTURE(s.name);
        for (const auto& [value, want] :
             {std::pair{"on", Rule::Always}, std::pair{"off", Rule::Never},
              std::pair{"auto", Rule::Auto}}) {
            const EnvScope env(s.name, value);
            Tuning t = tuning_from_environment();
            CHECK(t.*s.rule == want);
            t.*s.rule = Rule::Auto;
            CHECK(t == Tuning{});  // nothing else changes
        }
    }
}
