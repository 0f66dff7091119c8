// DaVinci blocked layouts as oneDNN-style blocking descriptors (Layout::blocked): no offset loops
// of their own, so Tensor, the generic executor and the app all see the same function.
#include <string>

#include "convlab/davinci.hpp"

namespace convlab::davinci {

dim_t c0_for(DType t) {
    return static_cast<dim_t>(32 / dtype_size(t));
}

void check_c0(dim_t c0) {
    if (c0 < 1 || c0 > 64) throw Error("c0 = " + std::to_string(c0) + ": C0 must be in [1, 64]");
}

Layout nc1hwc0(dim_t N, dim_t C, dim_t H, dim_t W, dim_t c0) {
    check_c0(c0);
    return Layout::blocked({N, C, H, W}, {0, 1, 2, 3}, {{1, c0}}, "NC1HWC0");
}

Layout ndc1hwc0(dim_t N, dim_t C, dim_t D, dim_t H, dim_t W, dim_t c0) {
    check_c0(c0);
    return Layout::blocked({N, C, D, H, W}, {0, 2, 1, 3, 4}, {{1, c0}}, "NDC1HWC0");
}

Layout fractal_z(dim_t O, dim_t I, dim_t H, dim_t W, dim_t c0) {
    check_c0(c0);
    return Layout::blocked({O, I, H, W}, {1, 2, 3, 0}, {{0, kN0}, {1, c0}}, "FRACTAL_Z");
}

Layout fractal_z_3d(dim_t O, dim_t I, dim_t D, dim_t H, dim_t W, dim_t c0) {
    check_c0(c0);
    return Layout::blocked({O, I, D, H, W}, {2, 1, 3, 4, 0}, {{0, kN0}, {1, c0}}, "FRACTAL_Z_3D");
}

Layout fractal_nz(dim_t M, dim_t K, dim_t c0) {
    check_c0(c0);
    return Layout::blocked({M, K}, {1, 0}, {{0, kN0}, {1, c0}}, "FRACTAL_NZ");
}

namespace {

void check_rank(const char* what, std::span<const dim_t> dims) {
    if (dims.size() < 3 || dims.size() > 5)
        throw Error(std::string(what) + " " + dims_str(dims) +
                    ": expected 3 to 5 dims (N, C, spatial...)");
}

}  // namespace

Layout activation_layout(std::span<const dim_t> dims, dim_t c0) {
    check_rank("activations", dims);
    if (dims.size() == 5) return ndc1hwc0(dims[0], dims[1], dims[2], dims[3], dims[4], c0);
    if (dims.size() == 4) return nc1hwc0(dims[0], dims[1], dims[2], dims[3], c0);
    check_c0(c0);
    return Layout::blocked({dims[0], dims[1], dims[2]}, {0, 1, 2}, {{1, c0}}, "NC1WC0");
}

Layout weight_layout(std::span<const dim_t> dims, dim_t c0) {
    check_rank("weights", dims);
    if (dims.size() == 5) return fractal_z_3d(dims[0], dims[1], dims[2], dims[3], dims[4], c0);
    if (dims.size() == 4) return fractal_z(dims[0], dims[1], dims[2], dims[3], c0);
    check_c0(c0);
    return Layout::blocked({dims[0], dims[1], dims[2]}, {1, 2, 0}, {{0, kN0}, {1, c0}},
                           "FRACTAL_Z");
}

Shape activation_physical(std::span<const dim_t> dims, dim_t c0) {
    check_rank("activations", dims);
    check_c0(c0);
    const dim_t c1 = blocks_of(dims[1], c0);
    if (dims.size() == 5)
        return Shape{{dims[0], dims[2], c1, dims[3], dims[4], c0},
                     {"n", "d", "c1", "h", "w", "c0"}};
    if (dims.size() == 4)
        return Shape{{dims[0], c1, dims[2], dims[3], c0}, {"n", "c1", "h", "w", "c0"}};
    return Shape{{dims[0], c1, dims[2], c0}, {"n", "c1", "w", "c0"}};
}

Shape weight_physical(std::span<const dim_t> dims, dim_t c0) {
    check_rank("weights", dims);
    check_c0(c0);
    dim_t rows = blocks_of(dims[1], c0);
    for (std::size_t i = 2; i < dims.size(); ++i) rows *= dims[i];
    static const char* names[] = {"c1w", "c1hw", "dc1hw"};
    return Shape{{rows, blocks_of(dims[0], kN0), kN0, c0},
                 {names[dims.size() - 3], "n1", "n0", "c0"}};
}

Shape fractal_nz_physical(dim_t M, dim_t K, dim_t c0) {
    check_c0(c0);
    return Shape{{blocks_of(K, c0), blocks_of(M, kN0), kN0, c0}, {"k1", "m1", "m0", "c0"}};
}

}  // namespace convlab::davinci
