// Both backward passes computed by the forward convolution (the Huawei paper's scheme), with the
// leftover rows r that a published implementation of it omits (docs/design.md):
//   dX = conv(pad(Strided(dY), (k-1)d - pb, (k-1)d - pe + r), FlipRot(W)), stride 1, dilation d
//   dW = TNC(conv(TNC(X), TNC(dY))), stride d, dilation s, padding pb, pe - r, per group
// The intermediate tensors live in per-thread buffers kept between calls, the converters run on
// all threads, and the forward convolution is the fast one (implicit_gemm: no column matrix).
#include <vector>

#include "algorithms.hpp"
#include "checked.hpp"
#include "convlab/maps.hpp"
#include "microkernel.hpp"

namespace convlab::detail {

void backward_data_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const Problem q = maps::backward_data_as_forward(p);
    std::vector<dim_t> zdims{p.mb, p.oc};
    std::vector<dim_t> pb, pe;
    for (int i = 0; i < p.ndims; ++i) {
        zdims.push_back((p.out(i) - 1) * p.stride[i] + 1);
        const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
        pb.push_back(span - p.pad_begin[i]);
        pe.push_back(span - p.pad_end[i] + p.leftover(i));
    }
    float* z = scratch(4, static_cast<std::size_t>(product(zdims)));
    float* padded = scratch(5, static_cast<std::size_t>(p.mb * p.oc * q.in_spatial()));
    float* wt = scratch(6, static_cast<std::size_t>(p.ic * p.ocg() * p.kernel_spatial()));
    {
        Span s(prof, "zero-insert");
        strided_kernel(p, a.diff_dst, z);
    }
    {
        Span s(prof, "pad");
        pad_kernel(zdims, pb, pe, z, padded);
    }
    {
        Span s(prof, "fliprot");
        flip_rot_kernel(p, a.wei, wt);
    }
    ConvArgs f;
    f.src = padded;
    f.wei = wt;
    f.dst = a.diff_src;
    f.tuning = a.tuning;
    forward_implicit_gemm(q, f, prof);
}

void backward_weight_via_forward(const Problem& p, const ConvArgs& a, Profiler* prof) {
    const Problem q = maps::backward_weight_as_forward(p);
    const std::vector<dim_t> xdims = p.src_dims(), ydims = p.dst_dims();
    float* xt = scratch(4, static_cast<std::size_t>(product(xdims)));
    float* yt = scratch(5, static_cast<std::size_t>(product(ydims)));
    float* r = scratch(6, static_cast<std::size_t>(p.ic * p.ocg() * p.kernel_spatial()));
    {
        Span s(prof, "tnc");
        tnc_kernel(xdims, a.src, xt);
        tnc_kernel(ydims, a.diff_dst, yt);
    }
    // Group g: batch = its C/G channels of TNC(X), weights = its K/G channels of TNC(dY); both
    // are contiguous slices because the channel dim is outermost after TNC.
    const dim_t x_slice = p.icg() * p.mb * p.in_spatial();
    const dim_t y_slice = p.ocg() * p.mb * p.out_spatial();
    const dim_t r_slice = p.icg() * p.ocg() * p.kernel_spatial();
    for (dim_t g = 0; g < p.groups; ++g) {
        ConvArgs f;
        f.src = xt + g * x_slice;
        f.wei = yt + g * y_slice;
        f.dst = r + g * r_slice;
        f.tuning = a.tuning;
        forward_implicit_gemm(q, f, prof);
    }
    Span s(prof, "tnc");
    tnc_diff_wei_kernel(p, r, a.diff_wei);
}

// The intermediates above (zero-inserted and padded dY and FlipRot(W); TNC(X), TNC(dY) and the
// result) and implicit_gemm's work on the forward problem; kHugeSize where that problem breaks
// a size rule (its tensors past 2^34 elements: intermediates no memory holds).
dim_t via_forward_work(const Problem& p, Pass pass) {
    const dim_t w = sat_mul({p.ic, p.ocg(), p.kernel_spatial()});
    if (pass == Pass::BackwardData) {
        const Problem q = maps::backward_data_as_forward(p);
        if (!q.validate(true).empty()) return kHugeSize;
        dim_t z = sat_mul(p.mb, p.oc);
        for (int i = 0; i < p.ndims; ++i)
            z = sat_mul(z, sat_add(sat_mul(p.out(i) - 1, p.stride[i]), 1));
        const dim_t padded = sat_mul({p.mb, p.oc, q.in_spatial()});
        return sat_add(sat_mul(sat_add(sat_add(z, padded), w), dim_t{sizeof(float)}),
                       implicit_gemm_work(q, Pass::Forward));
    }
    const Problem q = maps::backward_weight_as_forward(p);
    if (!q.validate(true).empty()) return kHugeSize;
    const dim_t x = sat_mul({p.mb, p.ic, p.in_spatial()}),
                y = sat_mul({p.mb, p.oc, p.out_spatial()});
    return sat_add(sat_mul(sat_add(sat_add(x, y), w), dim_t{sizeof(float)}),
                   implicit_gemm_work(q, Pass::Forward));
}

}  // namespace convlab::detail
