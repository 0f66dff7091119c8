#include "convlab/tuning_env.hpp"

#include <cstdlib>
#include <string_view>

namespace convlab {

Tuning tuning_from_environment() {
    Tuning t;
    const auto is = [](const char* name, std::string_view value) {
        const char* v = std::getenv(name);
        return v && std::string_view(v) == value;
    };
    if (is("CONVLAB_GEMM", "eigen")) t.gemm_core = GemmCore::eigen;
    if (is("CONVLAB_READ_A", "packed")) t.read_a = Rule::Never;
    if (is("CONVLAB_TRANSPOSED", "on")) t.transposed_products = Rule::Always;
    if (is("CONVLAB_TRANSPOSED", "off")) t.transposed_products = Rule::Never;
    const auto rule = [&](const char* name, Rule& r) {
        if (is(name, "on")) r = Rule::Always;
        if (is(name, "off")) r = Rule::Never;
    };
    rule("CONVLAB_SHIFTED", t.shifted);
    rule("CONVLAB_SWAP_FORWARD", t.swap_forward);
    rule("CONVLAB_STRIDED_ROWS", t.strided_rows);
    rule("CONVLAB_B_IN_PLACE", t.b_in_place);
    rule("CONVLAB_BF16_PAIRS", t.bf16_pairs);
    rule("CONVLAB_ROW_LANES", t.row_lanes);
    rule("CONVLAB_STREAM_OUTPUT", t.stream_output);
    return t;
}

}  // namespace convlab
