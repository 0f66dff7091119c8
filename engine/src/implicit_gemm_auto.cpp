// auto: picks, per pass, the algorithm that a cheap heuristic expects to be fastest on this
// engine, and runs it (its operations are recorded under their own span names). It is the
// default algorithm of `convlab compute`.
//
// Heuristic, from convlab_bench on the 20 ResNet-50 layers (batch 1, 2 threads, AVX-512; sums of
// per-layer medians, ratio to oneDNN in the same run; the machine was shared, so only ratios
// mean anything):
//   fwd         implicit_gemm 1.09x, im2col_gemm 1.21x
//   bwd_data    col2im 1.44x, implicit_gemm 1.55x (col2im ahead on most 3x3 and 1x1 layers;
//               implicit_gemm holds no column matrix)
//   bwd_weight  implicit_gemm 0.88x, im2col_gemm 1.55x
// At batch 32 on conv1 implicit_gemm was ahead in every pass (fwd 3.19x vs 6.97x, bwd_data
// 1.14x vs 1.45x, bwd_weight 2.97x vs 8.06x); batch 32 of the other layers was not measured,
// so backward data stays on col2im.
#include "algorithms.hpp"

namespace convlab::detail {

void forward_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    forward_implicit_gemm(p, a, prof);
}

void backward_data_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    backward_data_col2im(p, a, prof);
}

void backward_weight_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    backward_weight_implicit_gemm(p, a, prof);
}

}  // namespace convlab::detail
