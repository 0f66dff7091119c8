// Internal: a problem's spatial geometry padded to three axes (d, h, w), unused leading axes of
// size 1, so that one loop nest serves 1-D, 2-D and 3-D. Row-major linear indices over the three
// axes equal those over the problem's own axes.
#pragma once

#include "convlab/problem.hpp"

namespace convlab::detail {

struct Geom3 {
    dim_t in[3], k[3], s[3], d[3], pb[3], out[3];
    dim_t in_size() const { return in[0] * in[1] * in[2]; }
    dim_t out_size() const { return out[0] * out[1] * out[2]; }
    dim_t k_size() const { return k[0] * k[1] * k[2]; }
};

inline Geom3 geom3(const Problem& p) {
    Geom3 g{};
    const int off = 3 - p.ndims;
    for (int a = 0; a < 3; ++a) {
        const int i = a - off;
        const bool used = i >= 0;
        g.in[a] = used ? p.in[i] : 1;
        g.k[a] = used ? p.kernel[i] : 1;
        g.s[a] = used ? p.stride[i] : 1;
        g.d[a] = used ? p.dilation[i] : 1;
        g.pb[a] = used ? p.pad_begin[i] : 0;
        g.out[a] = used ? p.out(i) : 1;
    }
    return g;
}

// Range [lo, hi) of outputs o in [0, out) with 0 <= o*s + off < in.
inline void valid_range(dim_t off, dim_t s, dim_t in, dim_t out, dim_t& lo, dim_t& hi) {
    lo = off >= 0 ? 0 : (-off + s - 1) / s;
    hi = in - off <= 0 ? 0 : (in - off + s - 1) / s;
    if (hi > out) hi = out;
    if (lo > hi) lo = hi;
}

}  // namespace convlab::detail
