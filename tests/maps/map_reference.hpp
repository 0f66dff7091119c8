// Shared by the index-map tests (tests/maps/): formulas written out independently of the engine
// (scatter loops over the source where the engine gathers over the destination), problems, and
// small helpers on buffers, pairs and dumps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/index_map.hpp"
#include "convlab/kernels.hpp"
#include "convlab/layout.hpp"
#include "convlab/maps.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"
#include "test_util.hpp"

using convlab::dim_t;
using convlab::DType;
using convlab::Error;
using convlab::Granularity;
using convlab::IndexMap;
using convlab::Layout;
using convlab::Problem;
using convlab::Shape;
using convlab::Tensor;
namespace maps = convlab::maps;

using convlab::test::for_each_coord;

namespace maps_test {

using Dims = std::vector<dim_t>;
using Buf = std::vector<float>;

inline dim_t prod(const Dims& v) {
    dim_t p = 1;
    for (dim_t x : v) p *= x;
    return p;
}

inline dim_t lin(const Dims& dims, const Dims& c) {
    dim_t l = 0;
    for (std::size_t i = 0; i < dims.size(); ++i) l = l * dims[i] + c[i];
    return l;
}

inline Dims cat(Dims a, const Dims& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

inline std::string text(const Dims& v) {
    std::string s = "(";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + ")";
}

inline Dims in_sizes(const Problem& p) {
    return Dims(p.in.begin(), p.in.begin() + p.ndims);
}
inline Dims k_sizes(const Problem& p) {
    return Dims(p.kernel.begin(), p.kernel.begin() + p.ndims);
}
inline Dims out_sizes(const Problem& p) {
    Dims o;
    for (int i = 0; i < p.ndims; ++i) o.push_back(p.out(i));
    return o;
}
inline Dims z_sizes(const Problem& p) {  // zero-inserted dY
    Dims z;
    for (int i = 0; i < p.ndims; ++i) z.push_back((p.out(i) - 1) * p.stride[i] + 1);
    return z;
}
inline Dims src_dims(const Problem& p) {
    return cat({p.mb, p.ic}, in_sizes(p));
}
inline Dims dst_dims(const Problem& p) {
    return cat({p.mb, p.oc}, out_sizes(p));
}
inline Dims wei_dims(const Problem& p) {
    return cat({p.oc, p.ic / p.groups}, k_sizes(p));
}

inline std::string describe(const Problem& p) {
    auto sp = [&](const convlab::SpatialDims& a) {
        return text(Dims(a.begin(), a.begin() + p.ndims));
    };
    std::ostringstream o;
    o << p.ndims << "-D mb" << p.mb << " ic" << p.ic << " oc" << p.oc << " g" << p.groups << " in"
      << sp(p.in) << " k" << sp(p.kernel) << " s" << sp(p.stride) << " d" << sp(p.dilation) << " pb"
      << sp(p.pad_begin) << " pe" << sp(p.pad_end);
    return o.str();
}

inline Buf iota(dim_t n, float start = 1.0f) {
    Buf v(static_cast<std::size_t>(n));
    for (dim_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
    return v;
}

// Dense small integers in [-3, 3], zero rarely.
inline Buf ints(dim_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(-3, 3);
    Buf v(static_cast<std::size_t>(n));
    for (auto& x : v) {
        int i = d(rng);
        if (i == 0 && (rng() & 1)) i = 2;
        x = static_cast<float>(i);
    }
    return v;
}

inline Buf run(const IndexMap& m, const Buf& src) {
    REQUIRE(static_cast<dim_t>(src.size()) == m.src().numel());
    Buf dst(static_cast<std::size_t>(m.dst().numel()), -999.0f);
    m.execute(src.data(), dst.data());
    return dst;
}

// Exact equality of every element; reports the first mismatch as a coordinate of dims.
inline void check_same(const Buf& got, const Buf& want, const Dims& dims, const std::string& what) {
    INFO(what);
    REQUIRE(got.size() == want.size());
    REQUIRE(static_cast<dim_t>(got.size()) == prod(dims));
    dim_t bad = -1, count = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i])) {
            if (bad < 0) bad = static_cast<dim_t>(i);
            ++count;
        }
    if (bad >= 0) {
        Dims c(dims.size());
        dim_t l = bad;
        for (int a = static_cast<int>(dims.size()) - 1; a >= 0; --a) {
            c[a] = l % dims[a];
            l /= dims[a];
        }
        INFO("first mismatch at " << text(c) << " of " << text(dims) << ": got " << got[bad]
                                  << ", want " << want[bad] << " (" << count << " of " << got.size()
                                  << " differ)");
        CHECK(bad < 0);
    } else {
        CHECK(bad < 0);
    }
}

inline std::vector<Problem> random_problems(unsigned seed, int count) {
    std::mt19937 rng(seed);
    std::vector<Problem> ps;
    for (int i = 0; i < count; ++i) ps.push_back(convlab::test::random_problem(rng, 1 + i % 3));
    return ps;
}

// [SECTION] independent formulas (scatter loops over the source)

inline Buf ref_im2col(const Problem& p, const Buf& x) {
    const Dims in = in_sizes(p), k = k_sizes(p), o = out_sizes(p), sd = src_dims(p);
    const dim_t ks = prod(k), os = prod(o), cg = p.icg(), rows = cg * ks;
    Buf col(static_cast<std::size_t>(p.mb * p.groups * rows * os), -777.0f);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g)
            for (dim_t ci = 0; ci < cg; ++ci)
                for_each_coord(k, [&](const Dims& kc) {
                    for_each_coord(o, [&](const Dims& oc) {
                        Dims xc{n, g * cg + ci};
                        bool inside = true;
                        for (int i = 0; i < p.ndims; ++i) {
                            const dim_t pos =
                                oc[i] * p.stride[i] - p.pad_begin[i] + kc[i] * p.dilation[i];
                            inside = inside && pos >= 0 && pos < in[i];
                            xc.push_back(pos);
                        }
                        const dim_t row = ci * ks + lin(k, kc), col_i = lin(o, oc);
                        col[((n * p.groups + g) * rows + row) * os + col_i] =
                            inside ? x[lin(sd, xc)] : 0.0f;
                    });
                });
    return col;
}

inline Buf ref_col2im(const Problem& p, const Buf& col) {
    const Dims in = in_sizes(p), k = k_sizes(p), o = out_sizes(p), sd = src_dims(p);
    const dim_t ks = prod(k), os = prod(o), cg = p.icg(), rows = cg * ks;
    std::vector<double> img(static_cast<std::size_t>(prod(sd)), 0.0);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g)
            for (dim_t ci = 0; ci < cg; ++ci)
                for_each_coord(k, [&](const Dims& kc) {
                    for_each_coord(o, [&](const Dims& oc) {
                        Dims xc{n, g * cg + ci};
                        for (int i = 0; i < p.ndims; ++i) {
                            const dim_t pos =
                                oc[i] * p.stride[i] - p.pad_begin[i] + kc[i] * p.dilation[i];
                            if (pos < 0 || pos >= in[i]) return;
                            xc.push_back(pos);
                        }
                        const dim_t row = ci * ks + lin(k, kc);
                        img[lin(sd, xc)] +=
                            col[((n * p.groups + g) * rows + row) * os + lin(o, oc)];
                    });
                });
    return Buf(img.begin(), img.end());
}

inline Buf ref_strided(const Problem& p, const Buf& dy) {
    const Dims dd = dst_dims(p), zd = cat({p.mb, p.oc}, z_sizes(p));
    Buf z(static_cast<std::size_t>(prod(zd)), 0.0f);
    for_each_coord(dd, [&](const Dims& c) {
        Dims t = c;
        for (int i = 0; i < p.ndims; ++i) t[2 + i] = c[2 + i] * p.stride[i];
        z[lin(zd, t)] = dy[lin(dd, c)];
    });
    return z;
}

inline Dims padded_dims(const Dims& dims, const Dims& pb, const Dims& pe) {
    Dims d = dims;
    for (std::size_t i = 2; i < d.size(); ++i) d[i] += pb[i - 2] + pe[i - 2];
    return d;
}

inline Buf ref_pad(const Dims& dims, const Dims& pb, const Dims& pe, const Buf& x) {
    const Dims od = padded_dims(dims, pb, pe);
    Buf y(static_cast<std::size_t>(prod(od)), 0.0f);
    for_each_coord(dims, [&](const Dims& c) {
        Dims t = c;
        for (std::size_t i = 2; i < c.size(); ++i) {
            t[i] = c[i] + pb[i - 2];
            if (t[i] < 0 || t[i] >= od[i]) return;  // cropped away
        }
        y[lin(od, t)] = x[lin(dims, c)];
    });
    return y;
}

inline Buf ref_flip_rot(const Problem& p, const Buf& w) {
    const Dims wd = wei_dims(p), k = k_sizes(p), fd = cat({p.ic, p.ocg()}, k);
    Buf f(static_cast<std::size_t>(prod(fd)), -777.0f);
    for_each_coord(wd, [&](const Dims& c) {
        const dim_t g = c[0] / p.ocg(), co = c[0] % p.ocg(), ci = c[1];
        Dims t{g * p.icg() + ci, co};
        for (int i = 0; i < p.ndims; ++i) t.push_back(k[i] - 1 - c[2 + i]);
        f[lin(fd, t)] = w[lin(wd, c)];
    });
    return f;
}

inline Buf ref_tnc(const Dims& dims, const Buf& x) {
    Dims td = dims;
    std::swap(td[0], td[1]);
    Buf y(x.size(), -777.0f);
    for_each_coord(dims, [&](const Dims& c) {
        Dims t = c;
        std::swap(t[0], t[1]);
        y[lin(td, t)] = x[lin(dims, c)];
    });
    return y;
}

inline Buf ref_tnc_diff_wei(const Problem& p, const Buf& s) {
    const Dims k = k_sizes(p), sd = cat({p.ic, p.ocg()}, k), wd = wei_dims(p);
    Buf w(s.size(), -777.0f);
    for_each_coord(sd, [&](const Dims& c) {
        const dim_t g = c[0] / p.icg(), ci = c[0] % p.icg(), co = c[1];
        Dims t{g * p.ocg() + co, ci};
        for (int i = 0; i < p.ndims; ++i) t.push_back(c[2 + i]);
        w[lin(wd, t)] = s[lin(sd, c)];
    });
    return w;
}

// Direct convolution loops (double accumulation) for the via-forward checks. Only pad_begin
// enters the positions; pad_end (possibly negative: a crop) only sets the output size.
inline Buf conv_fwd(const Problem& q, const Buf& x, const Buf& w) {
    const Dims sd = src_dims(q), wd = wei_dims(q), dd = dst_dims(q), k = k_sizes(q);
    const dim_t kg = q.ocg(), cg = q.icg();
    Buf y(static_cast<std::size_t>(prod(dd)));
    for_each_coord(dd, [&](const Dims& c) {
        const dim_t n = c[0], ko = c[1], g = ko / kg;
        double acc = 0;
        for (dim_t ci = 0; ci < cg; ++ci)
            for_each_coord(k, [&](const Dims& kc) {
                Dims xc{n, g * cg + ci};
                for (int i = 0; i < q.ndims; ++i) {
                    const dim_t pos =
                        c[2 + i] * q.stride[i] - q.pad_begin[i] + kc[i] * q.dilation[i];
                    if (pos < 0 || pos >= q.in[i]) return;
                    xc.push_back(pos);
                }
                acc += double(x[lin(sd, xc)]) * double(w[lin(wd, cat({ko, ci}, kc))]);
            });
        y[lin(dd, c)] = static_cast<float>(acc);
    });
    return y;
}

// dX and dW by the definition: every (output, kernel tap) pair that reads an input element.
inline void conv_bwd(const Problem& p, const Buf& x, const Buf& w, const Buf& dy, Buf& dx,
                     Buf& dw) {
    const Dims sd = src_dims(p), wd = wei_dims(p), dd = dst_dims(p), k = k_sizes(p);
    const dim_t kg = p.ocg(), cg = p.icg();
    std::vector<double> ddx(static_cast<std::size_t>(prod(sd)), 0.0);
    std::vector<double> ddw(static_cast<std::size_t>(prod(wd)), 0.0);
    for_each_coord(dd, [&](const Dims& c) {
        const dim_t n = c[0], ko = c[1], g = ko / kg;
        const double gy = dy[lin(dd, c)];
        for (dim_t ci = 0; ci < cg; ++ci)
            for_each_coord(k, [&](const Dims& kc) {
                Dims xc{n, g * cg + ci};
                for (int i = 0; i < p.ndims; ++i) {
                    const dim_t pos =
                        c[2 + i] * p.stride[i] - p.pad_begin[i] + kc[i] * p.dilation[i];
                    if (pos < 0 || pos >= p.in[i]) return;
                    xc.push_back(pos);
                }
                const dim_t xi = lin(sd, xc), wi = lin(wd, cat({ko, ci}, kc));
                ddx[xi] += gy * w[wi];
                ddw[wi] += gy * x[xi];
            });
    });
    dx.assign(ddx.begin(), ddx.end());
    dw.assign(ddw.begin(), ddw.end());
}

// The pairs of a map in its documented enumeration order: the domain in row-major order with
// line_axis moved innermost; (source, destination) with -1 for a padding zero / no destination.
inline std::vector<std::pair<dim_t, dim_t>> expected_pairs(const IndexMap& m) {
    const Shape& dom = m.domain();
    std::vector<int> order;
    for (int a = 0; a < dom.rank(); ++a)
        if (a != m.line_axis()) order.push_back(a);
    order.push_back(m.line_axis());
    Dims pd;
    for (int a : order) pd.push_back(dom.dims[a]);
    std::vector<std::pair<dim_t, dim_t>> out;
    for_each_coord(pd, [&](const Dims& c) {
        Dims dc(c.size());
        for (std::size_t k = 0; k < order.size(); ++k) dc[order[k]] = c[k];
        const dim_t d = lin(dom.dims, dc), o = m.map(d);
        out.emplace_back(m.kind() == IndexMap::Kind::Gather ? std::pair{o, d} : std::pair{d, o});
    });
    return out;
}

inline std::vector<std::pair<dim_t, dim_t>> step_pairs(const IndexMap& m, Granularity g,
                                                       dim_t step) {
    std::vector<std::pair<dim_t, dim_t>> out;
    m.for_each_in_step(g, step, [&](dim_t s, dim_t d) { out.emplace_back(s, d); });
    return out;
}

// "(n=0,c=1,h=2)" for a linear index of a shape, written out here.
inline std::string coord_text(const Shape& s, dim_t linear) {
    Dims c(s.dims.size());
    for (int a = s.rank() - 1; a >= 0; --a) {
        c[a] = linear % s.dims[a];
        linear /= s.dims[a];
    }
    std::string t = "(";
    for (int a = 0; a < s.rank(); ++a)
        t += (a ? "," : "") + s.names[a] + "=" + std::to_string(c[a]);
    return t + ")";
}

inline std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// Every map of a problem, for the generic checks.
inline std::vector<IndexMap> all_maps(const Problem& p) {
    std::vector<IndexMap> ms = {
        maps::im2col(p),   maps::col2im(p),  maps::strided(p),      maps::pad_for_backward_data(p),
        maps::flip_rot(p), maps::tnc_src(p), maps::tnc_diff_dst(p), maps::tnc_diff_wei(p)};
    ms.push_back(convlab::compose(maps::pad_for_backward_data(p), maps::strided(p), "z_pad"));
    return ms;
}

inline Problem make_problem(int ndims, dim_t mb, dim_t ic, dim_t oc, dim_t groups, Dims in, Dims k,
                            Dims s = {}, Dims pb = {}, Dims pe = {}, Dims d = {}) {
    Problem p;
    p.ndims = ndims;
    p.mb = mb;
    p.ic = ic;
    p.oc = oc;
    p.groups = groups;
    for (int i = 0; i < ndims; ++i) {
        p.in[i] = in[i];
        p.kernel[i] = k[i];
        p.stride[i] = s.empty() ? 1 : s[i];
        p.pad_begin[i] = pb.empty() ? 0 : pb[i];
        p.pad_end[i] = pe.empty() ? 0 : pe[i];
        p.dilation[i] = d.empty() ? 1 : d[i];
    }
    return p;
}

// What a kernel's output buffer starts as: an element it does not write stays this.
inline constexpr float kSentinel = -12345.0f;

}  // namespace maps_test
