// oneDNN as the peer of convlab_bench: the same convolution through oneDNN's fp32 primitives,
// the way practitioners use them (format_tag::any, so oneDNN picks its preferred blocked layouts;
// reorders from and to ConvLab's plain layouts happen outside the timed region), or on request on
// ConvLab's plain layouts themselves (`convlab bench --peer onednn-nchw`).
//
// Compiled with oneDNN only when CMake found it (CONVLAB_HAVE_DNNL); otherwise available() is
// false and constructing a PeerConv throws. This header never includes dnnl.hpp.
//
// It is the benchmark runner's peer interface (convlab::bench::PeerConv) made real: onednn_spec()
// hands it to the runner (convlab::bench::run) of `convlab bench` and the app's Timings panel.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convlab/bench.hpp"
#include "convlab/conv.hpp"
#include "convlab/problem.hpp"

namespace bench {

class PeerConv final : public convlab::bench::PeerConv {
  public:
    // True when the bench was built with oneDNN.
    static bool available();
    // "oneDNN 2.6.3 (CPU runtime OpenMP, ISA avx512_core)" or "not built with oneDNN".
    static std::string describe();

    // Creates the primitives of the given passes: forward (prop_kind::forward_training), backward
    // data and backward weights (both hinted by the forward one) by the algorithm `algo`:
    // "direct" (convolution_direct, what PyTorch asks oneDNN for), "auto" (convolution_auto:
    // oneDNN's own choice per problem) or "winograd" (convolution_winograd, F(4x4, 3x3), for
    // the problems it takes). A pass oneDNN cannot do is reported by error(pass), not thrown.
    // With plain, the primitives take the engine's plain layouts (NCHW, OIHW) instead of
    // choosing their own (format_tag::any): what oneDNN does on the engine's data as it is.
    // dtype bf16: the inputs (src, wei, diff_dst) are bf16, rounded to nearest even by the
    // reorders of set_inputs; the primitives accumulate in fp32 and give fp32 results (dst,
    // diff_src, diff_wei) where oneDNN has such an implementation, else bf16 ones.
    PeerConv(const convlab::Problem& p, const std::vector<convlab::Pass>& passes,
             const std::string& algo = "direct", bool plain = false,
             convlab::DType dtype = convlab::DType::f32);
    ~PeerConv();
    PeerConv(const PeerConv&) = delete;
    PeerConv& operator=(const PeerConv&) = delete;

    bool has(convlab::Pass pass) const override;           // a primitive exists for the pass
    std::string error(convlab::Pass pass) const override;  // why not, when !has(pass)
    // oneDNN's implementation name, e.g. "jit:avx2"
    std::string impl(convlab::Pass pass) const override;

    // Reorders ConvLab's plain inputs (src (N,C,..), wei (K,C/G,k..), diff_dst (N,K,out..)) into
    // the layouts each primitive chose. Not timed.
    void set_inputs(const float* src, const float* wei, const float* diff_dst) override;
    // Executes the primitive of the pass and waits for it (the timed region).
    void run(convlab::Pass pass) override;
    // Reorders the pass's output (dst, diff_src or diff_wei) into a plain buffer. Not timed.
    void output(convlab::Pass pass, float* plain) override;

    // The peer as the runner takes it: name ("oneDNN", "oneDNN-nchw" on plain layouts),
    // description, whether it reorders its weights, thread setting (OpenMP), and factories: fp32,
    // and bf16 (PeerSpec::dtypes) for runs with --dtype bf16.
    // nullopt when built without oneDNN.
    // The peer with the convolution algorithm `algo` and layouts (as the constructor's; in its
    // description).
    static std::optional<convlab::bench::PeerSpec> spec(const std::string& algo = "direct",
                                                        bool plain = false);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace bench
