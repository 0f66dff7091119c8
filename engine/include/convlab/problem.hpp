// Problem: one N-D convolution (1, 2 or 3 spatial dims) and everything derived from its sizes.
//
// Spatial axes are indexed 0..ndims-1 in tensor order: (w) for 1-D, (h, w) for 2-D, (d, h, w)
// for 3-D. Per axis (docs/design.md, d = dilation with 1 = none):
//   k_eff = (k - 1) * d + 1
//   out   = floor((in + pad_begin + pad_end - k_eff) / stride) + 1
//   r     = (in + pad_begin + pad_end - k_eff) mod stride   (input rows no window reaches)
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace convlab {

using dim_t = std::int64_t;
inline constexpr int kMaxSpatial = 3;
using SpatialDims = std::array<dim_t, kMaxSpatial>;

// Thrown for bad input of any kind (descriptor, parameters, files). The message names the field
// and the rule it breaks, e.g. "stride[1] = 0: stride must be >= 1".
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Problem {
    int ndims = 2;                  // spatial dims: 1, 2 or 3
    dim_t mb = 1;                   // batch N
    dim_t ic = 1;                   // input channels C
    dim_t oc = 1;                   // output channels K
    dim_t groups = 1;               // depthwise when groups == ic
    SpatialDims in{1, 1, 1};        // input size per spatial axis
    SpatialDims kernel{1, 1, 1};    // kernel size
    SpatialDims stride{1, 1, 1};    // >= 1
    SpatialDims dilation{1, 1, 1};  // >= 1 (1 = none; benchdnn writes it 0-based)
    SpatialDims pad_begin{0, 0, 0};
    SpatialDims pad_end{0, 0, 0};  // negative only in internal problems (a crop)
    std::string name;              // optional label, printed as n"name"

    dim_t icg() const { return ic / groups; }  // input channels per group
    dim_t ocg() const { return oc / groups; }  // output channels per group
    dim_t kernel_extent(int i) const { return (kernel[i] - 1) * dilation[i] + 1; }
    dim_t padded_in(int i) const { return in[i] + pad_begin[i] + pad_end[i]; }
    dim_t out(int i) const { return (padded_in(i) - kernel_extent(i)) / stride[i] + 1; }
    dim_t leftover(int i) const { return (padded_in(i) - kernel_extent(i)) % stride[i]; }

    dim_t in_spatial() const;      // product of in[0..ndims)
    dim_t out_spatial() const;     // product of out(0..ndims)
    dim_t kernel_spatial() const;  // product of kernel[0..ndims)
    // 2 * N * K * (C/groups) * prod(out) * prod(kernel): every tap of every window, padding
    // taps included, as Composable Kernel counts them.
    double flops() const;
    // The same without the taps that land in the padding: only the multiply-adds that read an
    // input element, as oneDNN's benchdnn counts a convolution. Exact: per axis, the (out, tap)
    // pairs whose input index o*stride - pad_begin + k*dilation is inside [0, in); the count
    // factorises over the axes. Equal to flops() when there is no padding (and no crop).
    double flops_no_pad() const;

    // Logical tensor shapes: activations (N, C, spatial...), weights (K, C/groups, kernel...),
    // destination (N, K, out...), bias (K).
    std::vector<dim_t> src_dims() const;
    std::vector<dim_t> wei_dims() const;
    std::vector<dim_t> dst_dims() const;

    // The first broken rule as a message naming the field ("" when valid). Checks ndims, sizes
    // >= 1, groups dividing ic and oc, stride/dilation >= 1, padding >= 0 (negative pad_end is
    // allowed when allow_crop, for the internal problems of the via-forward schemes), and that the
    // dilated kernel fits the padded input ("kernel 7 with dilation 2 spans 13 > padded input 9"),
    // that src, wei and dst hold at most 2^34 elements each, and that the multiply-adds
    // N*K*(C/G)*prod(out)*prod(kernel) are at most 2^56 (so that no work size overflows).
    std::string validate(bool allow_crop = false) const;
    // Throws Error(validate()) when invalid.
    void check(bool allow_crop = false) const;

    // Axis name for messages and dumps: "w" / "h","w" / "d","h","w".
    const char* axis_name(int i) const;

    bool operator==(const Problem&) const = default;
};

// benchdnn-style descriptor, e.g. "mb2ic3ih7oc4oh4kh3sh2ph1" or
// "g2mb1ic4id5ih6iw7oc6kd3kh3kw3dd1n\"name\"". benchdnn's defaults (mb 2, g 1, stride 1, pad 0,
// square/cubic propagation of missing minor axes), its 0-based dilation, and the right padding
// implied by a given output size. Our extension: "pde"/"phe"/"pwe" give the end padding explicitly
// when the output size cannot imply it. Throws Error naming the key and the rule.
Problem parse_descriptor(std::string_view desc);
// Canonical descriptor; parse_descriptor(to_descriptor(p)) == p for every valid p.
std::string to_descriptor(const Problem& p);

}  // namespace convlab
