// auto: picks, per pass, the algorithm that a cheap heuristic expects to be fastest on this
// engine, and runs it (its operations are recorded under their own span names). It is the
// default algorithm of `convlab compute`.
//
// Heuristic, from `convlab bench` on the 20 ResNet-50 layers (2 threads, AVX-512, every layer's
// algorithms timed in alternating rounds with oneDNN; sums of per-layer medians, ratio to oneDNN
// in the same run; 2026-11-23, commit 58ded29):
//   batch 1    fwd         implicit_gemm 1.27x, im2col_gemm 1.38x
//              bwd_data    col2im 1.02x, implicit_gemm 1.33x (col2im ahead on 19 of 20 layers)
//              bwd_weight  implicit_gemm 1.16x, im2col_gemm 1.27x
//   batch 32   fwd         implicit_gemm 1.25x, im2col_gemm 1.45x
//              bwd_data    col2im 1.01x, implicit_gemm 1.22x; but implicit_gemm ahead on the
//                          3x3 stride-1 layers of 14x14 and 7x7 outputs in both runs made
//                          (res4a_branch2b 42.0 / 45.1 against 47.4 / 46.7 ms, res5a_branch2b
//                          41.1 / 42.9 against 50.2 / 47.5), not on their 1x1 neighbours
//                          (res5b_branch2a 22.6 / 19.9 against 21.2 / 18.2)
//              bwd_weight  implicit_gemm 1.18x, im2col_gemm 1.28x
// The choices held in the runs of 4b854d8 (after the shifted tiles): batch 1 fwd implicit_gemm
// 1.21x against im2col_gemm 1.38x, bwd_weight 1.07x against 1.20x, bwd_data col2im 0.98x
// against implicit_gemm 1.36x; batch 32 bwd_data res4a_branch2b 45.6 (implicit_gemm) against
// 50.2 ms (col2im), res5a_branch2b 42.8 against 51.7, res5b_branch2a 20.0 against 19.3.
// So forward and weight gradient take implicit_gemm; backward data takes col2im, except with
// batches of 8 images or more on stride-1 layers with a kernel larger than 1x1 and at most 196
// output positions: there the images merge into wide products, and implicit_gemm's phases need
// no col2im pass (col2im's adds of 9 taps per element cost 8.5-11.7 ms on those two layers).
// And implicit_gemm wherever its stride-1 backward data runs as the forward of FlipRot(W) from
// the padded planes (shifted_applies; the wide 3x3 layers), measured in alternating builds
// against col2im: res2a_branch2b 44.7 -> 37.9 ms at batch 32, 1.32 -> 1.28 at batch 1;
// res3a_branch2b 40.4 -> 38.0 and 1.39 -> 1.35. With the planes' row tiles (7e9b0e9) they serve
// 14x14 and 7x7 layers too; in the runs of 651d94a backward data auto gave 0.94x at batch 1
// and 0.92x at batch 32 against col2im's 0.97x and 1.02x. With FlipRot(W) prepared once
// (prepare_weights), the tiles serve one 7x7 image too (use_shifted). Unpadded 1x1 layers,
// strided too, take implicit_gemm where its backward data runs as the forward's pointwise tiles
// on the swapped problem (pointwise_bwd_data_problem, measured there against col2im).
// Every pass takes winograd first where winograd_pays (2-D 3x3 stride 1 with enough tiles and
// channels; measured there).
// auto never takes an algorithm whose work does not fit the memory budget: past its choice it
// tries the others in order of speed on such problems (implicit_gemm, whose buffers are bounded
// per thread, then the column-matrix algorithms), then direct, which needs no work memory.
#include <initializer_list>

#include "algorithms.hpp"

namespace convlab::detail {

namespace {

const char* heuristic_choice(const Problem& p, Pass pass, const ConvArgs* a) {
    if (pass != Pass::BackwardData) return winograd_pays(p, pass) ? "winograd" : "implicit_gemm";
    if (winograd_pays(p, Pass::BackwardData)) return "winograd";
    bool unit_stride = true;
    for (int x = 0; x < p.ndims; ++x) unit_stride = unit_stride && p.stride[x] == 1;
    if (shifted_applies(p, Pass::BackwardData, a) ||
        (p.mb >= 8 && unit_stride && p.kernel_spatial() > 1 && p.out_spatial() <= 196))
        return "implicit_gemm";
    return "col2im";
}

}  // namespace

const Algorithm& auto_choice(const Problem& p, Pass pass, const ConvArgs* a) {
    const Algorithm& first = find_algorithm(pass, heuristic_choice(p, pass, a));
    if (fits_memory_budget(first, p)) return first;
    const char* column = pass == Pass::BackwardData ? "col2im" : "im2col_gemm";
    for (const char* name : {"implicit_gemm", column}) {
        const Algorithm& other = find_algorithm(pass, name);
        if (algorithm_applies(other, p) && fits_memory_budget(other, p)) return other;
    }
    return find_algorithm(pass, "direct");
}

void forward_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    auto_choice(p, Pass::Forward, &a).run(p, a, prof);
}

void backward_data_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    auto_choice(p, Pass::BackwardData, &a).run(p, a, prof);
}

void backward_weight_auto(const Problem& p, const ConvArgs& a, Profiler* prof) {
    auto_choice(p, Pass::BackwardWeight, &a).run(p, a, prof);
}

}  // namespace convlab::detail
