#include "convlab/conv.hpp"

#include "omp_compat.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <array>

#include "algorithms.hpp"
#include "convlab/davinci.hpp"

namespace convlab {

const char* pass_name(Pass p) {
    switch (p) {
        case Pass::Forward:
            return "fwd";
        case Pass::BackwardData:
            return "bwd_data";
        case Pass::BackwardWeight:
            return "bwd_weight";
        case Pass::BackwardBias:
            return "bwd_bias";
    }
    return "?";
}

Pass parse_pass(std::string_view s) {
    for (Pass p : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight, Pass::BackwardBias})
        if (s == pass_name(p)) return p;
    throw Error("pass '" + std::string(s) + "': expected fwd, bwd_data, bwd_weight or bwd_bias");
}

namespace {

const std::array kAlgorithms{
    Algorithm{Pass::Forward, "direct", "reference loops, accumulated in double",
              detail::forward_direct},
    Algorithm{Pass::Forward, "im2col_gemm", "im2col per image and group, then W B (blocked GEMM)",
              detail::forward_im2col_gemm},
    Algorithm{Pass::Forward, "implicit_gemm", "W B, B gathered tile by tile (no column matrix)",
              detail::forward_implicit_gemm},
    Algorithm{Pass::Forward, "winograd",
              "F(4x4, 3x3): 36 GEMMs over transformed 6x6 tiles (2-D 3x3, stride 1)",
              detail::forward_winograd, detail::winograd_applies, false, detail::kWinogradRule},
    Algorithm{Pass::Forward, "fractal",
              "DaVinci: NC1HWC0 x FRACTAL_Z as 16 x C0 fractal products (C0 16, fp32)",
              static_cast<AlgoFn>(davinci::forward_fractal)},
    Algorithm{Pass::Forward, "auto",
              "the fastest here by heuristic: winograd (3x3 stride 1, 32+ tiles, 16+ without "
              "AVX-512), else implicit_gemm",
              detail::forward_auto},
    Algorithm{Pass::BackwardData, "direct", "reference loops over the taps that reach each input",
              detail::backward_data_direct},
    Algorithm{Pass::BackwardData, "col2im", "B* = W^T dY (blocked GEMM), then col2im scatter-add",
              detail::backward_data_col2im},
    Algorithm{Pass::BackwardData, "via_forward",
              "Strided(dY), pad (with leftover r), FlipRot(W), forward im2col_gemm",
              detail::backward_data_via_forward},
    Algorithm{Pass::BackwardData, "implicit_gemm",
              "one GEMM per stride phase, dY gathered tile by tile (no column matrix)",
              detail::backward_data_implicit_gemm},
    Algorithm{Pass::BackwardData, "winograd",
              "forward F(4x4, 3x3) of FlipRot(W) over dY (2-D 3x3, stride 1)",
              detail::backward_data_winograd, detail::winograd_applies, false,
              detail::kWinogradRule},
    Algorithm{Pass::BackwardData, "fractal_via_forward",
              "DaVinci: Strided, pad (with r), FlipRot on FRACTAL_Z, fractal forward; NC1HWC0",
              static_cast<AlgoFn>(davinci::backward_data_fractal_via_forward)},
    Algorithm{Pass::BackwardData, "auto",
              "by heuristic: winograd (3x3 stride 1, 32+ tiles, 16+ without AVX-512), "
              "implicit_gemm (FlipRot tiles; "
              "stride 1, small outputs, batch 8+), else col2im",
              detail::backward_data_auto},
    Algorithm{Pass::BackwardWeight, "direct", "reference loops, accumulated in double",
              detail::backward_weight_direct},
    Algorithm{Pass::BackwardWeight, "im2col_gemm", "dW = dY B^T per image, summed (blocked GEMM)",
              detail::backward_weight_im2col_gemm},
    Algorithm{Pass::BackwardWeight, "via_forward",
              "forward conv of TNC(X) with TNC(dY): stride d, dilation s, pad end pe - r; TNC back",
              detail::backward_weight_via_forward},
    Algorithm{Pass::BackwardWeight, "implicit_gemm",
              "dY B^T, B^T gathered tile by tile (no column matrix)",
              detail::backward_weight_implicit_gemm},
    Algorithm{Pass::BackwardWeight, "winograd",
              "F(3x3, 4x4): tiles of dY and X transformed, summed as 36 GEMMs (2-D 3x3, stride 1)",
              detail::backward_weight_winograd, detail::winograd_applies, false,
              detail::kWinogradRule},
    Algorithm{
        Pass::BackwardWeight, "fractal_via_forward",
        "DaVinci: TNC(X), TNCf(dY), batch as the reduction's tail; fp32 FRACTAL_Z(_3D), unpacked",
        static_cast<AlgoFn>(davinci::backward_weight_fractal_via_forward)},
    Algorithm{Pass::BackwardWeight, "auto",
              "the fastest here by heuristic: winograd (3x3 stride 1, 32+ tiles or 8+ with many "
              "channels, sums <= 64 MiB), "
              "else implicit_gemm",
              detail::backward_weight_auto},
    Algorithm{Pass::BackwardBias, "direct", "sum of dY over batch and space",
              detail::backward_bias_direct},
};

void check_tensor(const char* what, const Tensor& t, const std::vector<dim_t>& want) {
    if (t.dtype() != DType::f32)
        throw Error(std::string(what) + " is " + dtype_name(t.dtype()) + ": expected fp32");
    if (t.dims() != want)
        throw Error(std::string(what) + " has shape " + t.shape_str() + ", problem needs " +
                    dims_str(want));
    if (!t.layout().is_row_major())
        throw Error(std::string(what) + " has layout " + t.layout().str() +
                    ": expected dense row-major");
}

}  // namespace

std::span<const Algorithm> algorithms() {
    return kAlgorithms;
}

std::vector<const Algorithm*> algorithms(Pass pass) {
    std::vector<const Algorithm*> out;
    for (const auto& a : kAlgorithms)
        if (a.pass == pass) out.push_back(&a);
    return out;
}

const Algorithm& find_algorithm(Pass pass, std::string_view name) {
    std::string known;
    for (const auto& a : kAlgorithms) {
        if (a.pass != pass) continue;
        if (name == a.name) return a;
        known += (known.empty() ? "" : ", ") + std::string(a.name);
    }
    throw Error("algorithm '" + std::string(name) + "' is not one of " + pass_name(pass) +
                "'s: " + known);
}

void set_num_threads(int n) {
    if (n <= 0) n = omp_get_num_procs();
    n = std::min(n, kMaxThreads);
    omp_set_num_threads(n);
    Eigen::setNbThreads(n);
}

void cap_env_threads() {
    if (omp_get_max_threads() > kMaxThreads) set_num_threads(kMaxThreads);
}

int num_threads() {
    return Eigen::nbThreads();
}

Tensor forward(const Problem& p, const Tensor& src, const Tensor& wei, const Tensor* bias,
               std::string_view algo, Profiler* prof, const PreparedWeights* prepared,
               const Tuning& tuning) {
    p.check();
    const Algorithm& a = find_algorithm(Pass::Forward, algo);
    check_tensor("src", src, p.src_dims());
    check_tensor("wei", wei, p.wei_dims());
    if (bias) check_tensor("bias", *bias, {p.oc});
    check_memory_budget(a, p, 16, tuning);
    Tensor dst(p.dst_dims());
    ConvArgs args;
    args.src = src.f32();
    args.wei = wei.f32();
    args.bias = bias ? bias->f32() : nullptr;
    args.dst = dst.f32();
    args.prepared = prepared;
    args.tuning = tuning;
    a.run(p, args, prof);
    return dst;
}

Tensor backward_data(const Problem& p, const Tensor& diff_dst, const Tensor& wei,
                     std::string_view algo, Profiler* prof, const PreparedWeights* prepared,
                     const Tuning& tuning) {
    p.check();
    const Algorithm& a = find_algorithm(Pass::BackwardData, algo);
    check_tensor("diff_dst", diff_dst, p.dst_dims());
    check_tensor("wei", wei, p.wei_dims());
    check_memory_budget(a, p, 16, tuning);
    Tensor diff_src(p.src_dims());
    ConvArgs args;
    args.diff_dst = diff_dst.f32();
    args.wei = wei.f32();
    args.diff_src = diff_src.f32();
    args.prepared = prepared;
    args.tuning = tuning;
    a.run(p, args, prof);
    return diff_src;
}

Tensor backward_weight(const Problem& p, const Tensor& src, const Tensor& diff_dst,
                       std::string_view algo, Profiler* prof, const Tuning& tuning) {
    p.check();
    const Algorithm& a = find_algorithm(Pass::BackwardWeight, algo);
    check_tensor("src", src, p.src_dims());
    check_tensor("diff_dst", diff_dst, p.dst_dims());
    check_memory_budget(a, p, 16, tuning);
    Tensor diff_wei(p.wei_dims());
    ConvArgs args;
    args.src = src.f32();
    args.diff_dst = diff_dst.f32();
    args.diff_wei = diff_wei.f32();
    args.tuning = tuning;
    a.run(p, args, prof);
    return diff_wei;
}

Tensor backward_bias(const Problem& p, const Tensor& diff_dst, Profiler* prof) {
    p.check();
    check_tensor("diff_dst", diff_dst, p.dst_dims());
    Tensor diff_bias(std::vector<dim_t>{p.oc});
    ConvArgs args;
    args.diff_dst = diff_dst.f32();
    args.diff_bias = diff_bias.f32();
    detail::backward_bias_direct(p, args, prof);
    return diff_bias;
}

}  // namespace convlab
