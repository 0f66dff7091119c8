// Convolution passes and the named algorithms that compute them.
//
// Tensors are dense row-major fp32: activations (N, C, spatial...), weights (K, C/G, kernel...),
// destination (N, K, out...), bias (K). Gradient outputs are written whole (not accumulated).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/kernels.hpp"
#include "convlab/problem.hpp"
#include "convlab/profiler.hpp"
#include "convlab/tensor.hpp"

namespace convlab {

enum class Pass { Forward, BackwardData, BackwardWeight, BackwardBias };
const char* pass_name(Pass p);        // fwd | bwd_data | bwd_weight | bwd_bias
Pass parse_pass(std::string_view s);  // throws Error listing the valid names

// Raw buffers of one call; which ones are read and written depends on the pass.
struct ConvArgs {
    const float* src = nullptr;       // (N, C, in...)      read by fwd, bwd_weight
    const float* wei = nullptr;       // (K, C/G, k...)     read by fwd, bwd_data
    const float* bias = nullptr;      // (K) or null        read by fwd
    const float* diff_dst = nullptr;  // (N, K, out...)     read by bwd_*
    float* dst = nullptr;             // (N, K, out...)     written by fwd
    float* diff_src = nullptr;        // (N, C, in...)      written by bwd_data
    float* diff_wei = nullptr;        // (K, C/G, k...)     written by bwd_weight
    float* diff_bias = nullptr;       // (K)                written by bwd_bias
};

using AlgoFn = void (*)(const Problem&, const ConvArgs&, Profiler*);

struct Algorithm {
    Pass pass;
    const char* name;
    const char* summary;
    AlgoFn run;
};

// Every algorithm of every pass, in listing order (direct first).
std::span<const Algorithm> algorithms();
std::vector<const Algorithm*> algorithms(Pass pass);
// Throws Error naming the pass and listing its algorithms when absent.
const Algorithm& find_algorithm(Pass pass, std::string_view name);

// Threads used by the fast algorithms (Eigen's GEMM and the parallel kernels). 0 = all cores.
void set_num_threads(int n);
int num_threads();

// Tensor-level entry points: check the problem and the tensor dims, allocate the result, run.
Tensor forward(const Problem& p, const Tensor& src, const Tensor& wei, const Tensor* bias,
               std::string_view algo, Profiler* prof = nullptr);
Tensor backward_data(const Problem& p, const Tensor& diff_dst, const Tensor& wei,
                     std::string_view algo, Profiler* prof = nullptr);
Tensor backward_weight(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                       std::string_view algo, Profiler* prof = nullptr);
Tensor backward_bias(const Problem& p, const Tensor& diff_dst, Profiler* prof = nullptr);

}  // namespace convlab
