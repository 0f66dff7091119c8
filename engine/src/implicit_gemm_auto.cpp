// auto: picks, per pass, the algorithm that a cheap heuristic expects to be fastest on this
// engine, and runs it (its operations are recorded under their own span names). It is the
// default algorithm of `convlab compute`.
//
// Heuristic, from convlab_bench on the 20 ResNet-50 layers (batch 1, 2 threads, AVX-512; sums of
// per-layer medians, ratio to oneDNN in the same run; two runs on 2026-11-22, after the GEMM
// began reading row-major operands from their rows):
//   fwd         implicit_gemm 1.52-1.56x, im2col_gemm 1.43-1.52x (implicit_gemm ahead on the
//               3x3 layers, im2col_gemm on some 1x1; implicit_gemm holds no column matrix)
//   bwd_data    col2im 1.06-1.09x, implicit_gemm 1.32-1.38x
//   bwd_weight  implicit_gemm 1.37-1.42x, im2col_gemm 1.39-1.42x
// conv1's backward data (C = 3, stride 2) once favoured implicit_gemm; now col2im is ahead there
// too (2 threads, --alloc steady, medians over 0.5 s: batch 1 col2im 1.73-2.06 ms, implicit_gemm
// 2.96-5.43 ms, oneDNN 5.5-10.8 ms; batch 32 col2im 72-79 ms, implicit_gemm 112-113 ms, oneDNN
// 188-208 ms). So backward data takes col2im. Batch 32 of the other layers was not measured for
// this choice.
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
