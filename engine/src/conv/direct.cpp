// The reference: direct loops over logical coordinates, accumulated in double. Forward and the
// two backward passes share one geometry and one tap test; nothing here is fast on purpose.
#include "algorithms.hpp"
#include "geom.hpp"

namespace convlab::detail {

// forward: dst(n, k, o) = bias(k) + sum_{ci, kk} src(n, g*Cg+ci, o*s - pb + kk*d) * wei(k, ci, kk)
// src: (N, C, in...)   wei: (K, C/G, k...)   dst: (N, K, out...)
void forward_direct(const Problem& p, const ConvArgs& a, Profiler* prof) {
    Span span(prof, "direct");
    const Geom3 g = geom3(p);
    const dim_t cg = p.icg(), kg = p.ocg(), is = g.in_size(), os = g.out_size(), ks = g.k_size();
#pragma omp parallel for collapse(2) schedule(static)
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t k = 0; k < p.oc; ++k) {
            const dim_t grp = k / kg;
            for (dim_t od = 0; od < g.out[0]; ++od)
                for (dim_t oh = 0; oh < g.out[1]; ++oh)
                    for (dim_t ow = 0; ow < g.out[2]; ++ow) {
                        double acc = a.bias ? a.bias[k] : 0.0;
                        for (dim_t ci = 0; ci < cg; ++ci) {
                            const float* x = a.src + (n * p.ic + grp * cg + ci) * is;
                            const float* w = a.wei + (k * cg + ci) * ks;
                            for (dim_t kd = 0; kd < g.k[0]; ++kd) {
                                const dim_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                                if (id < 0 || id >= g.in[0]) continue;
                                for (dim_t kh = 0; kh < g.k[1]; ++kh) {
                                    const dim_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                                    if (ih < 0 || ih >= g.in[1]) continue;
                                    for (dim_t kw = 0; kw < g.k[2]; ++kw) {
                                        const dim_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                                        if (iw < 0 || iw >= g.in[2]) continue;
                                        acc += double(x[(id * g.in[1] + ih) * g.in[2] + iw]) *
                                               double(w[(kd * g.k[1] + kh) * g.k[2] + kw]);
                                    }
                                }
                            }
                        }
                        a.dst[(n * p.oc + k) * os + (od * g.out[1] + oh) * g.out[2] + ow] =
                            static_cast<float>(acc);
                    }
        }
}

// Which output o of one axis reads input position i through tap kk: i = o*s - pb + kk*d, so
// o = (i + pb - kk*d) / s, valid only when s divides it exactly (the stride skips, which the
// backward pass must skip too) and 0 <= o < out.
static inline bool tap(dim_t i, dim_t kk, dim_t s, dim_t pb, dim_t d, dim_t out, dim_t& o) {
    const dim_t t = i + pb - kk * d;
    if (t < 0 || t % s != 0) return false;
    o = t / s;
    return o < out;
}

// backward data: diff_src(n, c, i) = sum_{k in group, kk} diff_dst(n, k, o(i, kk)) * wei(k, ci, kk)
// diff_dst: (N, K, out...)   wei: (K, C/G, k...)   diff_src: (N, C, in...)
void backward_data_direct(const Problem& p, const ConvArgs& a, Profiler* prof) {
    Span span(prof, "direct");
    const Geom3 g = geom3(p);
    const dim_t cg = p.icg(), kg = p.ocg(), is = g.in_size(), os = g.out_size(), ks = g.k_size();
#pragma omp parallel for collapse(2) schedule(static)
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t c = 0; c < p.ic; ++c) {
            const dim_t grp = c / cg, ci = c % cg;
            for (dim_t id = 0; id < g.in[0]; ++id)
                for (dim_t ih = 0; ih < g.in[1]; ++ih)
                    for (dim_t iw = 0; iw < g.in[2]; ++iw) {
                        double acc = 0;
                        for (dim_t kk = 0; kk < kg; ++kk) {
                            const dim_t k = grp * kg + kk;
                            const float* dy = a.diff_dst + (n * p.oc + k) * os;
                            const float* w = a.wei + (k * cg + ci) * ks;
                            for (dim_t kd = 0; kd < g.k[0]; ++kd) {
                                dim_t od, oh, ow;
                                if (!tap(id, kd, g.s[0], g.pb[0], g.d[0], g.out[0], od)) continue;
                                for (dim_t kh = 0; kh < g.k[1]; ++kh) {
                                    if (!tap(ih, kh, g.s[1], g.pb[1], g.d[1], g.out[1], oh))
                                        continue;
                                    for (dim_t kw = 0; kw < g.k[2]; ++kw) {
                                        if (!tap(iw, kw, g.s[2], g.pb[2], g.d[2], g.out[2], ow))
                                            continue;
                                        acc += double(dy[(od * g.out[1] + oh) * g.out[2] + ow]) *
                                               double(w[(kd * g.k[1] + kh) * g.k[2] + kw]);
                                    }
                                }
                            }
                        }
                        a.diff_src[(n * p.ic + c) * is + (id * g.in[1] + ih) * g.in[2] + iw] =
                            static_cast<float>(acc);
                    }
        }
}

// backward weight: diff_wei(k, ci, kk) = sum_{n, o} diff_dst(n, k, o) * src(n, g*Cg+ci,
// o*s-pb+kk*d) src: (N, C, in...)   diff_dst: (N, K, out...)   diff_wei: (K, C/G, k...)
void backward_weight_direct(const Problem& p, const ConvArgs& a, Profiler* prof) {
    Span span(prof, "direct");
    const Geom3 g = geom3(p);
    const dim_t cg = p.icg(), kg = p.ocg(), is = g.in_size(), os = g.out_size(), ks = g.k_size();
#pragma omp parallel for collapse(2) schedule(static)
    for (dim_t k = 0; k < p.oc; ++k)
        for (dim_t ci = 0; ci < cg; ++ci) {
            const dim_t grp = k / kg;
            for (dim_t kd = 0; kd < g.k[0]; ++kd)
                for (dim_t kh = 0; kh < g.k[1]; ++kh)
                    for (dim_t kw = 0; kw < g.k[2]; ++kw) {
                        double acc = 0;
                        for (dim_t n = 0; n < p.mb; ++n) {
                            const float* x = a.src + (n * p.ic + grp * cg + ci) * is;
                            const float* dy = a.diff_dst + (n * p.oc + k) * os;
                            for (dim_t od = 0; od < g.out[0]; ++od) {
                                const dim_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                                if (id < 0 || id >= g.in[0]) continue;
                                for (dim_t oh = 0; oh < g.out[1]; ++oh) {
                                    const dim_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                                    if (ih < 0 || ih >= g.in[1]) continue;
                                    for (dim_t ow = 0; ow < g.out[2]; ++ow) {
                                        const dim_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                                        if (iw < 0 || iw >= g.in[2]) continue;
                                        acc += double(dy[(od * g.out[1] + oh) * g.out[2] + ow]) *
                                               double(x[(id * g.in[1] + ih) * g.in[2] + iw]);
                                    }
                                }
                            }
                        }
                        a.diff_wei[(k * cg + ci) * ks + (kd * g.k[1] + kh) * g.k[2] + kw] =
                            static_cast<float>(acc);
                    }
        }
}

// bias gradient: diff_bias(k) = sum_{n, o} diff_dst(n, k, o)
void backward_bias_direct(const Problem& p, const ConvArgs& a, Profiler* prof) {
    Span span(prof, "bias");
    const dim_t os = p.out_spatial();
    for (dim_t k = 0; k < p.oc; ++k) {
        double acc = 0;
        for (dim_t n = 0; n < p.mb; ++n) {
            const float* dy = a.diff_dst + (n * p.oc + k) * os;
            for (dim_t o = 0; o < os; ++o) acc += dy[o];
        }
        a.diff_bias[k] = static_cast<float>(acc);
    }
}

}  // namespace convlab::detail
