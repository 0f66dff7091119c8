// auto: picks, per pass, the algorithm that a cheap heuristic expects to be fastest on this
// engine, and runs it (its operations are recorded under their own span names). It is the
// default algorithm of `convlab compute`.
//
// Forward and weight gradient take implicit_gemm and backward data col2im, because those were
// fastest on ResNet-50's layers; backward data takes implicit_gemm where its planes or pointwise
// tiles serve it (no col2im pass; shifted_applies) and on batches of 8 or more of stride-1
// layers with a kernel larger than 1x1 and at most 196 output positions, where the images merge
// into wide products (timings: docs/algorithms.md, "auto's choice").
// Every pass takes winograd first where winograd_pays (2-D 3x3 stride 1 with enough tiles and
// channels).
// auto never takes an algorithm whose work does not fit the memory budget: past its choice it
// tries the others in order of speed on such problems (implicit_gemm, whose buffers are bounded
// per thread, then the column-matrix algorithms), then direct, which needs no work memory.
#include <initializer_list>

#include "algorithms.hpp"

namespace convlab::detail {

namespace {

const char* heuristic_choice(const Problem& p, Pass pass, const Tuning& t, const ConvArgs* a) {
    if (pass != Pass::BackwardData) return winograd_pays(p, pass, t) ? "winograd" : "implicit_gemm";
    if (winograd_pays(p, Pass::BackwardData, t)) return "winograd";
    bool unit_stride = true;
    for (int x = 0; x < p.ndims; ++x) unit_stride = unit_stride && p.stride[x] == 1;
    if (shifted_applies(p, Pass::BackwardData, t, a) ||
        (p.mb >= 8 && unit_stride && p.kernel_spatial() > 1 && p.out_spatial() <= 196))
        return "implicit_gemm";
    return "col2im";
}

}  // namespace

const Algorithm& auto_choice(const Problem& p, Pass pass, const Tuning& t, const ConvArgs* a) {
    const Algorithm& first = find_algorithm(pass, heuristic_choice(p, pass, t, a));
    if (fits_memory_budget(first, p, 16, t)) return first;
    const char* column = pass == Pass::BackwardData ? "col2im" : "im2col_gemm";
    for (const char* name : {"implicit_gemm", column}) {
        const Algorithm& other = find_algorithm(pass, name);
        if (algorithm_applies(other, p) && fits_memory_budget(other, p, 16, t)) return other;
    }
    return find_algorithm(pass, "direct");
}

void forward_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    auto_choice(p, Pass::Forward, a.tuning, &a).run(p, a, prof);
}

void backward_data_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    auto_choice(p, Pass::BackwardData, a.tuning, &a).run(p, a, prof);
}

void backward_weight_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    auto_choice(p, Pass::BackwardWeight, a.tuning, &a).run(p, a, prof);
}

}  // namespace convlab::detail
