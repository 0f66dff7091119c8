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
// conv1's backward data (C = 3, stride 2), three runs of 40 repeats: implicit_gemm 0.62-0.71x
// oneDNN, col2im 1.00-1.14x (medians); at batch 32 implicit_gemm 1.14x, col2im 1.45x. So
// backward data takes implicit_gemm when C/G is below the microkernel's MR and a stride > 1
// (its phases merge into full tiles), col2im otherwise. Batch 32 of the other layers was not
// measured.
#include "algorithms.hpp"
#include "microkernel.hpp"

namespace convlab::detail {

void forward_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    forward_implicit_gemm(p, a, prof);
}

void backward_data_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    // Few input channels per group and a stride: implicit_gemm merges the stride phases into
    // one GEMM of full register tiles (conv1), where col2im's column matrix is widest.
    bool strided = false;
    for (int i = 0; i < p.ndims; ++i) strided |= p.stride[i] > 1;
    if (strided && p.icg() < microkernel().mr)
        backward_data_implicit_gemm(p, a, prof);
    else
        backward_data_col2im(p, a, prof);
}

void backward_weight_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    backward_weight_implicit_gemm(p, a, prof);
}

}  // namespace convlab::detail
