// Convolution passes and the named algorithms that compute them.
//
// Tensors are dense row-major fp32: activations (N, C, spatial...), weights (K, C/G, kernel...),
// destination (N, K, out...), bias (K). Gradient outputs are written whole (not accumulated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/kernels.hpp"
#include "convlab/problem.hpp"
#include "convlab/profiler.hpp"
#include "convlab/tensor.hpp"
#include "convlab/tuning.hpp"

namespace convlab {

enum class Pass { Forward, BackwardData, BackwardWeight, BackwardBias };
const char* pass_name(Pass p);        // fwd | bwd_data | bwd_weight | bwd_bias
Pass parse_pass(std::string_view s);  // throws Error listing the valid names

class PreparedWeights;
namespace davinci {
// Internal (engine/src/conv/fractal_pack.cpp): adds the DaVinci algorithms' layout to weights
// being prepared (prepare_weights).
void prepare_fractal(PreparedWeights& w, const float* wei, Profiler* prof);
// Declared with its description in convlab/davinci.hpp: the DaVinci layout alone, for a storage
// dtype.
PreparedWeights prepare_weights(const Problem& p, Pass pass, const float* wei, DType storage,
                                Profiler* prof, Rule bf16_pairs);
}  // namespace davinci

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
    // fwd, bwd_data: wei packed once by prepare_weights (see there), or null (packed per call).
    const PreparedWeights* prepared = nullptr;
    // The fast paths' rules for this call (convlab/tuning.hpp). Weights prepared under other
    // rules are used where their layout is the one this call reads; elsewhere it packs its own.
    Tuning tuning{};
};

using AlgoFn = void (*)(const Problem&, const ConvArgs&, Profiler*);

struct Algorithm {
    Pass pass;
    const char* name;
    const char* summary;
    AlgoFn run;
    // The problems it computes (null: every valid one); run throws Error naming the rule on
    // others. The benchmark skips it on layers where it does not apply.
    bool (*applies)(const Problem&) = nullptr;
    // Whether it equals direct exactly on small integer data (sums of products of integers in
    // another order). False for transforms with fractional constants (winograd).
    bool exact = true;
    const char* rule = "";  // the rule applies checks, for listings ("" when null)
};

// Whether a computes p (a.applies, or always).
inline bool algorithm_applies(const Algorithm& a, const Problem& p) {
    return !a.applies || a.applies(p);
}

// Every algorithm of every pass, in listing order (direct first).
std::span<const Algorithm> algorithms();
std::vector<const Algorithm*> algorithms(Pass pass);
// Throws Error naming the pass and listing its algorithms when absent.
const Algorithm& find_algorithm(Pass pass, std::string_view name);

// Weights packed once into the layout that implicit_gemm's tiles read (W^T in panels of 32
// output channels; for backward data FlipRot(W)), for calls that reuse them: inference, or a
// training step's forward and backward data between two updates of the weights. oneDNN does
// the same when it reorders weights into its blocked layout before its calls. Set as
// ConvArgs::prepared, it replaces implicit_gemm's per-call packing (the "pack_wei" and
// "fliprot" operations; auto where it takes implicit_gemm). For backward data whose W^T has
// columns 4 KiB and more apart (1024 or more rows: C/G times the kernel's taps) it also holds
// W^T row by row, which col2im's GEMM reads instead of W^T's columns (res5a_branch1 at batch 1:
// 1.21-1.28 -> 1.10-1.18 ms). Other algorithms that read the weights in place ignore it. The
// weights of a call must be those it was prepared from: the engine checks the problem (and throws
// Error naming "prepared" when it differs), not the values.
class PreparedWeights {
  public:
    PreparedWeights() = default;
    const Problem& problem() const { return problem_; }
    Pass pass() const { return pass_; }
    // True when implicit_gemm packs nothing for this problem (it reads the weights in place).
    bool empty() const { return size_ == 0; }
    // Every layout held: implicit_gemm's panels, winograd's transformed filters where winograd
    // applies, and col2im's rows of W^T where it reads them.
    std::size_t bytes() const {
        return (size_ + wino_size_ + rows_size_ + fractal_size_) * sizeof(float);
    }
    // Internal: the packed floats when they are in the given layout (an implicit_gemm code),
    // else null; throws Error when p or pass is not the problem they were prepared for.
    const float* packed(const Problem& p, Pass pass, int layout) const;
    // Internal: winograd's transformed filters (36 per filter, FlipRot(W)'s for bwd_data), or
    // null; throws as packed does.
    const float* winograd(const Problem& p, Pass pass) const;
    // Internal: W_g^T row by row for col2im's GEMM (C/G times the kernel's taps rows of K/G
    // floats, ld apart, the groups one after another), or null; throws as packed does.
    const float* transposed_rows(const Problem& p, Pass pass, dim_t& ld) const;
    // Internal: the fractal products' B operand (C0 = 16) of each group, groups one after
    // another: fwd FRACTAL_Z with each fractal turned C0 x 16, bwd_data FlipRot(W)'s (the B of
    // fractal_via_forward's forward), as fp32 floats holding values of the storage dtype, or null
    // where they were prepared for another storage or in bf16 pairs; throws as packed does.
    const float* fractal(const Problem& p, Pass pass, DType storage = DType::f32) const;
    // Internal: the same B in bf16 pairs (davinci::pack_weight_pairs's layout, the operand of
    // vdpbf16ps), or null where they were not prepared so; throws as packed does.
    const std::uint16_t* fractal_pairs(const Problem& p, Pass pass) const;

  private:
    friend PreparedWeights prepare_weights(const Problem&, Pass, const float*, Profiler*,
                                           const Tuning&);
    friend void davinci::prepare_fractal(PreparedWeights&, const float*, Profiler*);
    friend PreparedWeights davinci::prepare_weights(const Problem&, Pass, const float*, DType,
                                                    Profiler*, Rule);
    // Throws Error when p or pass is not the problem these were prepared for.
    void check(const Problem& p, Pass pass) const;
    Problem problem_{};
    Pass pass_ = Pass::Forward;
    int layout_ = 0;
    std::shared_ptr<const float[]> data_;
    std::size_t size_ = 0;
    std::shared_ptr<const float[]> wino_;
    std::size_t wino_size_ = 0;
    std::shared_ptr<const float[]> rows_;
    std::size_t rows_size_ = 0;
    dim_t rows_ld_ = 0;
    std::shared_ptr<const float[]> fractal_;
    std::size_t fractal_size_ = 0;  // floats (the bytes of bf16 pairs / 4)
    DType fractal_storage_ = DType::f32;
    bool fractal_pairs_ = false;
};

// Packs wei (K, C/G, kernel...) for pass fwd or bwd_data of p (recorded in prof as "pack_wei"
// or "fliprot"), and where winograd applies also transforms it for winograd ("wino_wei"), in the
// layouts that the calls with the same tuning read, and for the DaVinci algorithms (fractal,
// fractal_via_forward at C0 = 16, fp32; davinci::prepare_weights prepares them for fp16 / bf16
// storage). Throws Error for an invalid problem or another pass.
PreparedWeights prepare_weights(const Problem& p, Pass pass, const float* wei,
                                Profiler* prof = nullptr, const Tuning& tuning = {});

// Threads used by the fast algorithms (Eigen's GEMM and the parallel kernels). 0 = all cores;
// more than kMaxThreads are kMaxThreads.
inline constexpr int kMaxThreads = 4096;
void set_num_threads(int n);
int num_threads();
// Caps the thread count that OpenMP took from the environment (OMP_NUM_THREADS) at kMaxThreads,
// as set_num_threads does: a team of 100000 threads fails inside the OpenMP runtime. Call it
// before the first parallel region.
void cap_env_threads();

// Work memory: what an algorithm allocates beyond the tensors of the call (column matrices,
// packed operands, transformed tiles, intermediates). Every algorithm states it for a problem
// before allocating, and the entry points refuse work beyond the memory budget instead of
// failing late with an allocation error.
//
// work_bytes: the bytes algorithm a takes for its pass of p on the current threads, an upper
// bound computed from the sizes alone (nothing is allocated; products checked, saturating at
// 2^63 - 1). auto: that of the algorithm it picks for p. c0: the DaVinci algorithms' C0. tuning:
// the rules of the call (some paths take more memory than the ones they replace).
std::int64_t work_bytes(const Algorithm& a, const Problem& p, std::int64_t c0 = 16,
                        const Tuning& tuning = {});
// The budget in bytes: set_memory_budget's, or (0, the start) the default: 80% of the memory
// available now (MemAvailable in /proc/meminfo; without it, of the physical memory; 4 GiB where
// neither is known).
std::int64_t memory_budget();
void set_memory_budget(std::int64_t bytes);
// The algorithm auto takes for pass of p (its heuristic's choice, or the first other one that
// fits the budget: direct needs no work memory).
const Algorithm& auto_algorithm(const Problem& p, Pass pass, const Tuning& tuning = {});
// Whether a's work for p fits the budget.
bool fits_memory_budget(const Algorithm& a, const Problem& p, std::int64_t c0 = 16,
                        const Tuning& tuning = {});
// Throws Error naming the algorithm, the pass, its need and the budget when it does not fit:
// "im2col_gemm (fwd) needs 2.25 GiB of work memory: more than the memory budget of 1.00 GiB
// (--max-memory)".
void check_memory_budget(const Algorithm& a, const Problem& p, std::int64_t c0 = 16,
                         const Tuning& tuning = {});
// A size as the command line gives it: bytes, or a number (decimals allowed) with K, M, G or T
// (powers of 1024, an optional "B" or "iB" after them), e.g. 512M, 4G, 1.5G. Throws Error naming
// flag: a size must be at least 1 MiB and below 2^63 bytes.
std::int64_t parse_memory_size(std::string_view flag, std::string_view text);
// "512 B", "3.00 MiB", "2.25 GiB", "more than 8 EiB" (saturated).
std::string format_bytes(std::int64_t bytes);

// Tensor-level entry points: check the problem and the tensor dims, check the algorithm's work
// against the memory budget (check_memory_budget), allocate the result, run.
// prepared: wei packed once by prepare_weights for this problem, pass and tuning, or null.
// tuning: the fast paths' rules (the measured ones by default).
Tensor forward(const Problem& p, const Tensor& src, const Tensor& wei, const Tensor* bias,
               std::string_view algo, Profiler* prof = nullptr,
               const PreparedWeights* prepared = nullptr, const Tuning& tuning = {});
Tensor backward_data(const Problem& p, const Tensor& diff_dst, const Tensor& wei,
                     std::string_view algo, Profiler* prof = nullptr,
                     const PreparedWeights* prepared = nullptr, const Tuning& tuning = {});
Tensor backward_weight(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                       std::string_view algo, Profiler* prof = nullptr, const Tuning& tuning = {});
Tensor backward_bias(const Problem& p, const Tensor& diff_dst, Profiler* prof = nullptr);

}  // namespace convlab
