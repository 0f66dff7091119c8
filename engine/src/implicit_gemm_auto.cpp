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
#include "algorithms.hpp"

namespace convlab::detail {

void forward_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    if (winograd_pays(p, Pass::Forward)) return forward_winograd(p, a, prof);
    forward_implicit_gemm(p, a, prof);
}

void backward_data_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    if (winograd_pays(p, Pass::BackwardData)) return backward_data_winograd(p, a, prof);
    bool unit_stride = true;
    for (int x = 0; x < p.ndims; ++x) unit_stride = unit_stride && p.stride[x] == 1;
    if (shifted_applies(p, Pass::BackwardData, &a) ||
        (p.mb >= 8 && unit_stride && p.kernel_spatial() > 1 && p.out_spatial() <= 196))
        backward_data_implicit_gemm(p, a, prof);
    else
        backward_data_col2im(p, a, prof);
}

void backward_weight_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    if (winograd_pays(p, Pass::BackwardWeight)) return backward_weight_winograd(p, a, prof);
    backward_weight_implicit_gemm(p, a, prof);
}

}  // namespace convlab::detail
