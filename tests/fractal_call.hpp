// fractal_call: one forward or backward-data call of the DaVinci algorithms on ConvArgs, shared by
// tests/test_fractal_fast.cpp and tests/test_fractal_slices.cpp.
#pragma once

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/tensor.hpp"

namespace convlab::test {

// One fwd or bwd_data call of the fractal algorithms with storage o.storage, on ConvArgs, with the
// weights prepared (prepared) or packed inside the call (null); the result and its profile.
inline Tensor fractal_call(const Problem& p, convlab::Pass pass, const Tensor& in, const Tensor& w,
                           const convlab::davinci::Options& o,
                           const convlab::PreparedWeights* prepared, convlab::Profiler& prof,
                           const convlab::Tuning& tuning = {}) {
    const bool fwd = pass == convlab::Pass::Forward;
    Tensor out(fwd ? p.dst_dims() : p.src_dims());
    convlab::ConvArgs a;
    a.wei = w.f32();
    a.prepared = prepared;
    a.tuning = tuning;
    if (fwd) {
        a.src = in.f32();
        a.dst = out.f32();
        convlab::davinci::forward_fractal(p, a, &prof, o);
    } else {
        a.diff_dst = in.f32();
        a.diff_src = out.f32();
        convlab::davinci::backward_data_fractal_via_forward(p, a, &prof, o);
    }
    return out;
}

}  // namespace convlab::test
