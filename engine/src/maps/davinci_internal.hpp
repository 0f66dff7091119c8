// Internal to the DaVinci maps, their fast kernels and the algorithms: the geometry helpers the
// maps and kernels use, and the packs that round to the storage type.
#pragma once

#include <array>
#include <span>
#include <utility>
#include <vector>

#include "convlab/davinci.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::davinci::internal {

// Per-axis problem values padded to (d, h, w) with `fill` in the unused leading axes.
inline std::array<dim_t, 3> axes3(const SpatialDims& v, int ndims, dim_t fill) {
    std::array<dim_t, 3> s{fill, fill, fill};
    for (int i = 0; i < ndims; ++i) s[3 - ndims + i] = v[i];
    return s;
}
inline std::array<dim_t, 3> axes3(std::span<const dim_t> v, std::size_t ns, dim_t fill) {
    std::array<dim_t, 3> s{fill, fill, fill};
    for (std::size_t i = 0; i < ns; ++i) s[3 - ns + i] = v[i];
    return s;
}

// (kd, c1, kh, kw) of a fractal row.
struct Row4 {
    dim_t kd, c1, kh, kw;
};
inline Row4 unrow(const WeiGeom& g, dim_t r) {
    Row4 o;
    o.kw = r % g.w;
    r /= g.w;
    o.kh = r % g.h;
    r /= g.h;
    o.c1 = r % g.i1;
    o.kd = r / g.i1;
    return o;
}

inline std::vector<dim_t> swap01(std::span<const dim_t> dims) {
    std::vector<dim_t> t(dims.begin(), dims.end());
    std::swap(t[0], t[1]);
    return t;
}

// (O, I) swapped for FlipRot: dims (C, K/G, kernel...).
inline std::vector<dim_t> fliprot_dims(const Problem& p) {
    std::vector<dim_t> d{p.ic, p.ocg()};
    for (int i = 0; i < p.ndims; ++i) d.push_back(p.kernel[i]);
    return d;
}

// The input dims of one group: (N, C/G, spatial...).
inline std::vector<dim_t> group_src_dims(const Problem& p) {
    std::vector<dim_t> d{p.mb, p.icg()};
    for (int i = 0; i < p.ndims; ++i) d.push_back(p.in[i]);
    return d;
}

// Activation dims with pad begin / end added to each spatial axis (pad5d's destination); Error
// when the rank is not 3 to 5, a pad is missing, or an axis is cropped to nothing.
std::vector<dim_t> padded_dims(std::span<const dim_t> dims, std::span<const dim_t> pb,
                               std::span<const dim_t> pe);

// pack_activation_kernel with every value rounded to the storage type t as it is written: the
// bits of pack_activation_kernel then detail::round_storage(t) over dst, in one pass (f32: as
// pack_activation_kernel). The DaVinci algorithms' packs of activations in fp16 / bf16 storage.
void pack_activation_rounded(DType t, std::span<const dim_t> dims, dim_t c0, const float* src,
                             float* dst, dim_t src_channels = -1, dim_t c_begin = 0);

}  // namespace convlab::davinci::internal
