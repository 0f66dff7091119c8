// auto: picks, per pass, the algorithm that a cheap heuristic expects to be fastest on this
// engine, and runs it (its operations are recorded under their own span names).
//
// Heuristic, from convlab_bench on the ResNet-50 layers (2 cores, AVX-512): the implicit GEMMs
// match or beat im2col + GEMM on every layer while never holding a column matrix; backward data
// has col2im (W^T dY, then col2im) as its fastest path, via_forward doing up to prod(s) times
// the multiplications on zero-inserted data.
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
