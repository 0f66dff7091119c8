// Index maps: every map exhaustively against formulas written out independently here (scatter
// loops over the source where the engine gathers over the destination), the fast kernels against
// the generic executor element by element, the via-forward schemes end to end against direct
// loops, the lecture's 8x4 column matrix by hand, step enumeration, dumps, and execution through
// non-row-major layouts.
#include <doctest/doctest.h>

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

namespace {

using Dims = std::vector<dim_t>;
using Buf = std::vector<float>;

dim_t prod(const Dims& v) {
    dim_t p = 1;
    for (dim_t x : v) p *= x;
    return p;
}

dim_t lin(const Dims& dims, const Dims& c) {
    dim_t l = 0;
    for (std::size_t i = 0; i < dims.size(); ++i) l = l * dims[i] + c[i];
    return l;
}

Dims cat(Dims a, const Dims& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::string text(const Dims& v) {
    std::string s = "(";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + ")";
}

Dims in_sizes(const Problem& p) {
    return Dims(p.in.begin(), p.in.begin() + p.ndims);
}
Dims k_sizes(const Problem& p) {
    return Dims(p.kernel.begin(), p.kernel.begin() + p.ndims);
}
Dims out_sizes(const Problem& p) {
    Dims o;
    for (int i = 0; i < p.ndims; ++i) o.push_back(p.out(i));
    return o;
}
Dims z_sizes(const Problem& p) {  // zero-inserted dY
    Dims z;
    for (int i = 0; i < p.ndims; ++i) z.push_back((p.out(i) - 1) * p.stride[i] + 1);
    return z;
}
Dims src_dims(const Problem& p) {
    return cat({p.mb, p.ic}, in_sizes(p));
}
Dims dst_dims(const Problem& p) {
    return cat({p.mb, p.oc}, out_sizes(p));
}
Dims wei_dims(const Problem& p) {
    return cat({p.oc, p.ic / p.groups}, k_sizes(p));
}

std::string describe(const Problem& p) {
    auto sp = [&](const convlab::SpatialDims& a) {
        return text(Dims(a.begin(), a.begin() + p.ndims));
    };
    std::ostringstream o;
    o << p.ndims << "-D mb" << p.mb << " ic" << p.ic << " oc" << p.oc << " g" << p.groups << " in"
      << sp(p.in) << " k" << sp(p.kernel) << " s" << sp(p.stride) << " d" << sp(p.dilation) << " pb"
      << sp(p.pad_begin) << " pe" << sp(p.pad_end);
    return o.str();
}

Buf iota(dim_t n, float start = 1.0f) {
    Buf v(static_cast<std::size_t>(n));
    for (dim_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
    return v;
}

// Dense small integers in [-3, 3], zero rarely.
Buf ints(dim_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> d(-3, 3);
    Buf v(static_cast<std::size_t>(n));
    for (auto& x : v) {
        int i = d(rng);
        if (i == 0 && (rng() & 1)) i = 2;
        x = static_cast<float>(i);
    }
    return v;
}

Buf run(const IndexMap& m, const Buf& src) {
    REQUIRE(static_cast<dim_t>(src.size()) == m.src().numel());
    Buf dst(static_cast<std::size_t>(m.dst().numel()), -999.0f);
    m.execute(src.data(), dst.data());
    return dst;
}

// Exact equality of every element; reports the first mismatch as a coordinate of dims.
void check_same(const Buf& got, const Buf& want, const Dims& dims, const std::string& what) {
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

std::vector<Problem> random_problems(unsigned seed, int count) {
    std::mt19937 rng(seed);
    std::vector<Problem> ps;
    for (int i = 0; i < count; ++i) ps.push_back(convlab::test::random_problem(rng, 1 + i % 3));
    return ps;
}

// [SECTION] independent formulas (scatter loops over the source)

Buf ref_im2col(const Problem& p, const Buf& x) {
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

Buf ref_col2im(const Problem& p, const Buf& col) {
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

Buf ref_strided(const Problem& p, const Buf& dy) {
    const Dims dd = dst_dims(p), zd = cat({p.mb, p.oc}, z_sizes(p));
    Buf z(static_cast<std::size_t>(prod(zd)), 0.0f);
    for_each_coord(dd, [&](const Dims& c) {
        Dims t = c;
        for (int i = 0; i < p.ndims; ++i) t[2 + i] = c[2 + i] * p.stride[i];
        z[lin(zd, t)] = dy[lin(dd, c)];
    });
    return z;
}

Dims padded_dims(const Dims& dims, const Dims& pb, const Dims& pe) {
    Dims d = dims;
    for (std::size_t i = 2; i < d.size(); ++i) d[i] += pb[i - 2] + pe[i - 2];
    return d;
}

Buf ref_pad(const Dims& dims, const Dims& pb, const Dims& pe, const Buf& x) {
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

Buf ref_flip_rot(const Problem& p, const Buf& w) {
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

Buf ref_tnc(const Dims& dims, const Buf& x) {
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

Buf ref_tnc_diff_wei(const Problem& p, const Buf& s) {
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
Buf conv_fwd(const Problem& q, const Buf& x, const Buf& w) {
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
void conv_bwd(const Problem& p, const Buf& x, const Buf& w, const Buf& dy, Buf& dx, Buf& dw) {
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
std::vector<std::pair<dim_t, dim_t>> expected_pairs(const IndexMap& m) {
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

std::vector<std::pair<dim_t, dim_t>> step_pairs(const IndexMap& m, Granularity g, dim_t step) {
    std::vector<std::pair<dim_t, dim_t>> out;
    m.for_each_in_step(g, step, [&](dim_t s, dim_t d) { out.emplace_back(s, d); });
    return out;
}

// "(n=0,c=1,h=2)" for a linear index of a shape, written out here.
std::string coord_text(const Shape& s, dim_t linear) {
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

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// Every map of a problem, for the generic checks.
std::vector<IndexMap> all_maps(const Problem& p) {
    std::vector<IndexMap> ms = {
        maps::im2col(p),   maps::col2im(p),  maps::strided(p),      maps::pad_for_backward_data(p),
        maps::flip_rot(p), maps::tnc_src(p), maps::tnc_diff_dst(p), maps::tnc_diff_wei(p)};
    ms.push_back(convlab::compose(maps::pad_for_backward_data(p), maps::strided(p), "z_pad"));
    return ms;
}

Problem make_problem(int ndims, dim_t mb, dim_t ic, dim_t oc, dim_t groups, Dims in, Dims k,
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

}  // namespace

// [SECTION] every map against its formula

TEST_CASE("maps: im2col and col2im equal the formula on every element") {
    for (const Problem& p : random_problems(101, 54)) {
        INFO(describe(p));
        const IndexMap m = maps::im2col(p);
        const Dims cd{p.mb, p.groups, p.icg() * p.kernel_spatial(), p.out_spatial()};
        CHECK(m.kind() == IndexMap::Kind::Gather);
        CHECK(m.src().dims == src_dims(p));
        CHECK(m.dst().dims == cd);
        CHECK(m.dst().names == std::vector<std::string>{"n", "g", "row", "col"});
        CHECK(m.line_axis() == 2);
        const Buf x = iota(prod(src_dims(p)));
        check_same(run(m, x), ref_im2col(p, x), cd, "im2col");

        const IndexMap r = maps::col2im(p);
        CHECK(r.kind() == IndexMap::Kind::Reduce);
        CHECK(r.src().dims == cd);
        CHECK(r.dst().dims == src_dims(p));
        CHECK(r.name() == "col2im");
        // col2im is im2col's function seen from the other side.
        dim_t differ = 0;
        for (dim_t i = 0; i < prod(cd); ++i) differ += r.map(i) != m.map(i);
        CHECK(differ == 0);
        Buf col = iota(prod(cd));
        for (auto& v : col) v = static_cast<float>(std::fmod(v, 97.0f));
        const Buf img = run(r, col);
        check_same(img, ref_col2im(p, col), src_dims(p), "col2im");
        // Adjoint: <im2col(x), col> == <x, col2im(col)>.
        const Buf xc = run(m, x);
        double lhs = 0, rhs = 0;
        for (std::size_t i = 0; i < col.size(); ++i) lhs += double(xc[i]) * col[i];
        for (std::size_t i = 0; i < x.size(); ++i) rhs += double(x[i]) * img[i];
        CHECK(lhs == rhs);
    }
}

TEST_CASE("maps: strided (zero insertion) equals the formula") {
    for (const Problem& p : random_problems(202, 54)) {
        INFO(describe(p));
        const IndexMap m = maps::strided(p);
        const Dims zd = cat({p.mb, p.oc}, z_sizes(p));
        CHECK(m.src().dims == dst_dims(p));
        CHECK(m.dst().dims == zd);
        CHECK(m.src().names[1] == "k");
        const Buf dy = iota(prod(dst_dims(p)));
        check_same(run(m, dy), ref_strided(p, dy), zd, "strided");
    }
}

TEST_CASE("maps: pad, with negative pads cropping") {
    std::mt19937 rng(303);
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    int tested = 0, crops = 0, refused = 0;
    for (int t = 0; t < 150; ++t) {
        const int ns = static_cast<int>(pick(1, 3));
        Dims dims{pick(1, 2), pick(1, 3)}, pb, pe;
        bool empty = false;
        for (int i = 0; i < ns; ++i) {
            dims.push_back(pick(1, 6));
            pb.push_back(pick(-3, 3));
            pe.push_back(pick(-3, 3));
            empty = empty || dims.back() + pb.back() + pe.back() < 1;
        }
        INFO("dims " << text(dims) << " pb " << text(pb) << " pe " << text(pe));
        if (empty) {
            CHECK_THROWS_AS(maps::pad(dims, pb, pe), Error);
            ++refused;
            continue;
        }
        const IndexMap m = maps::pad(dims, pb, pe);
        const Dims od = padded_dims(dims, pb, pe);
        CHECK(m.src().dims == dims);
        CHECK(m.dst().dims == od);
        const Buf x = iota(prod(dims));
        check_same(run(m, x), ref_pad(dims, pb, pe, x), od, "pad");
        ++tested;
        crops += std::any_of(pb.begin(), pb.end(), [](dim_t v) { return v < 0; }) ||
                 std::any_of(pe.begin(), pe.end(), [](dim_t v) { return v < 0; });
    }
    CHECK(tested > 50);
    CHECK(crops > 30);
    CHECK(refused > 0);

    // The pad of the via-forward backward data: begin (k-1)d - pb, end (k-1)d - pe + r.
    for (const Problem& p : random_problems(304, 54)) {
        INFO(describe(p));
        Dims pb, pe;
        for (int i = 0; i < p.ndims; ++i) {
            const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
            const dim_t r = (p.in[i] + p.pad_begin[i] + p.pad_end[i] - span - 1) % p.stride[i];
            pb.push_back(span - p.pad_begin[i]);
            pe.push_back(span - p.pad_end[i] + r);
        }
        const Dims zd = cat({p.mb, p.oc}, z_sizes(p));
        const IndexMap m = maps::pad_for_backward_data(p);
        CHECK(m.src().dims == zd);
        CHECK(m.dst().dims == padded_dims(zd, pb, pe));
        const Buf z = iota(prod(zd));
        check_same(run(m, z), ref_pad(zd, pb, pe, z), padded_dims(zd, pb, pe), "pad bwd data");
    }
}

TEST_CASE("maps: flip_rot, tnc and tnc_diff_wei equal their formulas") {
    for (const Problem& p : random_problems(404, 54)) {
        INFO(describe(p));
        {
            const IndexMap m = maps::flip_rot(p);
            const Dims fd = cat({p.ic, p.ocg()}, k_sizes(p));
            CHECK(m.src().dims == wei_dims(p));
            CHECK(m.dst().dims == fd);
            const Buf w = iota(prod(wei_dims(p)));
            check_same(run(m, w), ref_flip_rot(p, w), fd, "flip_rot");
        }
        {
            const IndexMap m = maps::tnc_src(p);
            Dims td = src_dims(p);
            std::swap(td[0], td[1]);
            CHECK(m.src().dims == src_dims(p));
            CHECK(m.dst().dims == td);
            CHECK(m.dst().names[0] == "c");
            CHECK(m.dst().names[1] == "n");
            const Buf x = iota(prod(src_dims(p)));
            check_same(run(m, x), ref_tnc(src_dims(p), x), td, "tnc_src");
        }
        {
            const IndexMap m = maps::tnc_diff_dst(p);
            Dims td = dst_dims(p);
            std::swap(td[0], td[1]);
            CHECK(m.src().dims == dst_dims(p));
            CHECK(m.dst().dims == td);
            const Buf y = iota(prod(dst_dims(p)));
            check_same(run(m, y), ref_tnc(dst_dims(p), y), td, "tnc_diff_dst");
        }
        {
            const IndexMap m = maps::tnc_diff_wei(p);
            const Dims sd = cat({p.ic, p.ocg()}, k_sizes(p));
            CHECK(m.src().dims == sd);
            CHECK(m.dst().dims == wei_dims(p));
            const Buf s = iota(prod(sd));
            check_same(run(m, s), ref_tnc_diff_wei(p, s), wei_dims(p), "tnc_diff_wei");
            // tnc_diff_wei undoes flip_rot's per-group channel swap: together they only
            // reverse the kernel.
            const IndexMap both = convlab::compose(m, maps::flip_rot(p), "fliprot_tnc");
            const Buf w = iota(prod(wei_dims(p)));
            Buf want(w.size());
            const Dims wd = wei_dims(p);
            for_each_coord(wd, [&](const Dims& c) {
                Dims r = c;
                for (int i = 0; i < p.ndims; ++i) r[2 + i] = p.kernel[i] - 1 - c[2 + i];
                want[lin(wd, c)] = w[lin(wd, r)];
            });
            check_same(run(both, w), want, wd, "tnc_diff_wei . flip_rot");
        }
    }
    // tnc on arbitrary ranks.
    std::mt19937 rng(405);
    for (int t = 0; t < 40; ++t) {
        Dims dims;
        std::vector<std::string> names;
        const int rank = 2 + t % 4;
        for (int i = 0; i < rank; ++i) {
            dims.push_back(std::uniform_int_distribution<dim_t>(1, 5)(rng));
            names.push_back("a" + std::to_string(i));
        }
        const IndexMap m = maps::tnc(dims, names);
        Dims td = dims;
        std::swap(td[0], td[1]);
        CHECK(m.dst().dims == td);
        CHECK(m.dst().names[0] == "a1");
        const Buf x = iota(prod(dims));
        check_same(run(m, x), ref_tnc(dims, x), td, "tnc " + text(dims));
    }
    CHECK_THROWS_AS(maps::tnc({3}, {"a"}), Error);
    CHECK_THROWS_AS(maps::tnc({3, 4}, {"a"}), Error);
}

TEST_CASE("maps: compose equals running the two maps one after the other") {
    for (const Problem& p : random_problems(505, 54)) {
        INFO(describe(p));
        const IndexMap st = maps::strided(p), pd = maps::pad_for_backward_data(p);
        const IndexMap c = convlab::compose(pd, st, "strided_pad");
        CHECK(c.name() == "strided_pad");
        CHECK(c.kind() == IndexMap::Kind::Gather);
        CHECK(c.src() == st.src());
        CHECK(c.dst() == pd.dst());
        CHECK(c.line_axis() == pd.line_axis());
        const Buf dy = iota(prod(dst_dims(p)));
        const Buf two = run(pd, run(st, dy));
        check_same(run(c, dy), two, pd.dst().dims, "compose vs sequence");
        // ... and the formula: dY(n,k,o) lands at o*s + ((k-1)d - pb) when inside.
        Buf want(two.size(), 0.0f);
        const Dims dd = dst_dims(p), od = pd.dst().dims;
        for_each_coord(dd, [&](const Dims& cc) {
            Dims t = cc;
            for (int i = 0; i < p.ndims; ++i) {
                t[2 + i] =
                    cc[2 + i] * p.stride[i] + (p.kernel[i] - 1) * p.dilation[i] - p.pad_begin[i];
                if (t[2 + i] < 0 || t[2 + i] >= od[2 + i]) return;
            }
            want[lin(od, t)] = dy[lin(dd, cc)];
        });
        check_same(run(c, dy), want, od, "compose vs formula");
        // TNC twice is the identity.
        const IndexMap t1 = maps::tnc_diff_dst(p);
        const IndexMap t2 = maps::tnc(t1.dst().dims, t1.dst().names);
        const IndexMap id = convlab::compose(t2, t1, "tnc_tnc");
        CHECK(id.dst().dims == dst_dims(p));
        dim_t not_id = 0;
        for (dim_t i = 0; i < id.dst().numel(); ++i) not_id += id.map(i) != i;
        CHECK(not_id == 0);
    }
    // Errors: a reduce, and mismatched middle shapes.
    const Problem p = make_problem(2, 2, 3, 4, 1, {5, 5}, {3, 3});
    CHECK_THROWS_AS(convlab::compose(maps::col2im(p), maps::im2col(p), "x"), Error);
    CHECK_THROWS_AS(convlab::compose(maps::im2col(p), maps::strided(p), "x"), Error);
}

// [SECTION] the via-forward schemes

TEST_CASE("maps: the via-forward problems reproduce the input and kernel sizes") {
    std::vector<Problem> ps = random_problems(606, 60);
    ps.push_back(make_problem(2, 1, 3, 64, 1, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {3, 3}));
    ps.push_back(make_problem(2, 1, 8, 8, 1, {56, 56}, {1, 1}, {2, 2}));
    for (const Problem& p : ps) {
        INFO(describe(p));
        const Problem q = maps::backward_data_as_forward(p);
        CHECK(q.validate(true) == "");
        CHECK(q.ndims == p.ndims);
        CHECK(q.mb == p.mb);
        CHECK(q.ic == p.oc);
        CHECK(q.oc == p.ic);
        CHECK(q.groups == p.groups);
        const Problem w = maps::backward_weight_as_forward(p);
        CHECK(w.validate(true) == "");
        CHECK(w.mb == p.icg());
        CHECK(w.ic == p.mb);
        CHECK(w.oc == p.ocg());
        CHECK(w.groups == 1);
        const IndexMap pd = maps::pad_for_backward_data(p);
        for (int i = 0; i < p.ndims; ++i) {
            CHECK(q.out(i) == p.in[i]);
            CHECK(q.stride[i] == 1);
            CHECK(q.dilation[i] == p.dilation[i]);
            CHECK(q.kernel[i] == p.kernel[i]);
            CHECK(q.in[i] == pd.dst().dims[2 + i]);
            CHECK(w.out(i) == p.kernel[i]);
            CHECK(w.in[i] == p.in[i]);
            CHECK(w.kernel[i] == p.out(i));
            CHECK(w.stride[i] == p.dilation[i]);
            CHECK(w.dilation[i] == p.stride[i]);
        }
    }
    // ResNet-50 conv1: r = 1, so the pad end of dY is (7-1) - 3 + 1 = 4.
    const Problem conv1 = make_problem(2, 1, 3, 64, 1, {224, 224}, {7, 7}, {2, 2}, {3, 3}, {3, 3});
    REQUIRE(conv1.out(0) == 112);
    const IndexMap pd = maps::pad_for_backward_data(conv1);
    CHECK(pd.src().dims == Dims{1, 64, 223, 223});
    CHECK(pd.dst().dims == Dims{1, 64, 230, 230});
}

TEST_CASE("maps: via-forward backward data and weight equal direct loops") {
    std::vector<Problem> ps = random_problems(707, 45);
    // Leftover rows (r = 1) like ResNet conv1 and the 1x1 stride-2 layers, small.
    ps.push_back(make_problem(2, 2, 3, 4, 1, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}));
    ps.push_back(make_problem(2, 2, 4, 6, 2, {8, 7}, {1, 1}, {2, 2}));
    ps.push_back(make_problem(1, 1, 2, 2, 1, {9}, {3}, {3}, {0}, {2}, {2}));
    std::mt19937 rng(708);
    for (const Problem& p : ps) {
        INFO(describe(p));
        const Buf x = ints(prod(src_dims(p)), rng), w = ints(prod(wei_dims(p)), rng),
                  dy = ints(prod(dst_dims(p)), rng);
        Buf dx_ref, dw_ref;
        conv_bwd(p, x, w, dy, dx_ref, dw_ref);

        // dX: Strided(dY), pad, FlipRot(W), forward conv with stride 1.
        const Problem q = maps::backward_data_as_forward(p);
        const IndexMap st = maps::strided(p), pd = maps::pad_for_backward_data(p),
                       fr = maps::flip_rot(p);
        REQUIRE(pd.src().dims == st.dst().dims);
        REQUIRE(pd.dst().dims == src_dims(q));
        REQUIRE(fr.dst().dims == wei_dims(q));
        const Buf dx = conv_fwd(q, run(pd, run(st, dy)), run(fr, w));
        check_same(dx, dx_ref, src_dims(p), "dX via forward");

        // dW: per group, forward conv of TNC(X) with TNC(dY) as the kernel, then TNC back.
        const Problem r = maps::backward_weight_as_forward(p);
        const Buf xt = run(maps::tnc_src(p), x), yt = run(maps::tnc_diff_dst(p), dy);
        const dim_t cg = p.icg(), kg = p.ocg(), ks = p.kernel_spatial();
        const dim_t xs = cg * p.mb * p.in_spatial(), ys = kg * p.mb * p.out_spatial();
        REQUIRE(prod(src_dims(r)) == xs);
        REQUIRE(prod(wei_dims(r)) == ys);
        REQUIRE(prod(dst_dims(r)) == cg * kg * ks);
        Buf stacked;
        for (dim_t g = 0; g < p.groups; ++g) {
            const Buf xg(xt.begin() + g * xs, xt.begin() + (g + 1) * xs);
            const Buf yg(yt.begin() + g * ys, yt.begin() + (g + 1) * ys);
            const Buf part = conv_fwd(r, xg, yg);
            stacked.insert(stacked.end(), part.begin(), part.end());
        }
        check_same(run(maps::tnc_diff_wei(p), stacked), dw_ref, wei_dims(p), "dW via forward");
    }
}

// [SECTION] fast kernels against the generic executor

namespace {

std::vector<Problem> kernel_problems() {
    std::vector<Problem> ps = random_problems(808, 100);
    // Identity im2col (1x1, stride 1, no padding), small and large, with dilation too.
    ps.push_back(make_problem(2, 2, 3, 5, 1, {4, 5}, {1, 1}));
    ps.push_back(make_problem(1, 1, 4, 4, 2, {7}, {1}, {1}, {0}, {0}, {3}));
    ps.push_back(make_problem(2, 2, 64, 64, 1, {20, 20}, {1, 1}));
    // Larger than the kernels' parallel thresholds.
    ps.push_back(make_problem(2, 2, 64, 64, 1, {24, 24}, {3, 3}, {1, 1}, {1, 1}, {1, 1}));
    ps.push_back(make_problem(2, 2, 64, 32, 2, {21, 20}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {2, 1}));
    ps.push_back(
        make_problem(3, 1, 16, 16, 1, {10, 10, 10}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}));
    ps.push_back(make_problem(1, 2, 64, 64, 1, {600}, {5}, {2}, {2}, {1}));
    ps.push_back(make_problem(2, 2, 8, 64, 1, {40, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 1}));
    ps.push_back(make_problem(2, 1, 128, 16, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}));
    return ps;
}

constexpr float kSentinel = -12345.0f;

}  // namespace

TEST_CASE("kernels: im2col_kernel and col2im_kernel equal the generic maps for every (n, g)") {
    std::mt19937 rng(809);
    int identities = 0;
    for (const Problem& p : kernel_problems()) {
        INFO(describe(p));
        REQUIRE(p.validate() == "");
        const dim_t rows = p.icg() * p.kernel_spatial(), os = p.out_spatial();
        const dim_t per = rows * os;
        const Dims cd{p.mb, p.groups, rows, os};
        const Buf x = iota(prod(src_dims(p)));
        const Buf gen = run(maps::im2col(p), x);
        bool identity = true;
        for (int i = 0; i < p.ndims; ++i)
            identity = identity && p.kernel[i] == 1 && p.stride[i] == 1 && p.pad_begin[i] == 0 &&
                       p.pad_end[i] == 0;
        CHECK(convlab::im2col_is_identity(p) == identity);
        identities += identity;
        Buf fast(gen.size(), kSentinel);
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                Buf col(static_cast<std::size_t>(per), kSentinel);  // must be overwritten
                convlab::im2col_kernel(p, x.data(), n, g, col.data());
                std::copy(col.begin(), col.end(), fast.begin() + (n * p.groups + g) * per);
                if (identity) {
                    // The column matrix is the group's channels of image n.
                    const auto first = x.begin() + (n * p.ic + g * p.icg()) * p.in_spatial();
                    CHECK(std::equal(col.begin(), col.end(), first));
                }
            }
        check_same(fast, gen, cd, "im2col_kernel");

        // col2im accumulates into what the caller put there.
        const Buf col = ints(prod(cd), rng);
        const Buf back = run(maps::col2im(p), col);
        Buf base(back.size());
        for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i % 5) - 2.0f;
        Buf dx = base;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g)
                convlab::col2im_kernel(p, col.data() + (n * p.groups + g) * per, n, g, dx.data());
        Buf want(back.size());
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = base[i] + back[i];
        check_same(dx, want, src_dims(p), "col2im_kernel");
    }
    CHECK(identities >= 3);
}

TEST_CASE("kernels: col2im_kernel with zero_first overwrites every element of the group") {
    // zero_first: the group's channels of image n hold exactly the generic map's result, whatever
    // they held before (sentinels here), and the other channels and images are untouched. A 1x1
    // kernel without padding writes each input row once (a row an output row lands on, its
    // elements every s floats, zeros between; 8 at a time with AVX2 at stride 2, then 1 to 8
    // left); the others go through the general nest. col_ld wider than the row reads one image
    // of a product holding several side by side.
    std::mt19937 rng(813);
    std::vector<Problem> ps = kernel_problems();
    ps.push_back(make_problem(2, 2, 5, 3, 1, {12, 42}, {1, 1}, {2, 2}));  // 21 a row
    ps.push_back(make_problem(2, 1, 4, 6, 2, {9, 32}, {1, 1}, {2, 2}));   // 5 rows of 16
    ps.push_back(make_problem(2, 1, 3, 2, 1, {7, 35}, {1, 1}, {3, 2}));   // leftover row, 18
    ps.push_back(make_problem(1, 2, 3, 4, 1, {40}, {1}, {3}));
    ps.push_back(make_problem(3, 1, 2, 3, 1, {5, 6, 19}, {1, 1, 1}, {2, 3, 2}));
    ps.push_back(make_problem(2, 1, 70, 8, 1, {6, 34}, {1, 1}, {2, 2}));  // channels in parallel
    ps.push_back(make_problem(2, 1, 3, 8, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3}, {2, 2}));
    int once = 0;
    for (const Problem& p : ps) {
        INFO(describe(p));
        REQUIRE(p.validate() == "");
        const dim_t rows = p.icg() * p.kernel_spatial(), os = p.out_spatial(), is = p.in_spatial();
        bool unpadded_1x1 = true;
        for (int i = 0; i < p.ndims; ++i)
            unpadded_1x1 = unpadded_1x1 && p.kernel[i] == 1 && p.pad_begin[i] == 0;
        once += unpadded_1x1 && !convlab::im2col_is_identity(p);
        const Dims cd{p.mb, p.groups, rows, os};
        const Buf col = ints(prod(cd), rng);
        const Buf want = run(maps::col2im(p), col);
        for (const dim_t ld : {os, os + 3}) {
            // The column matrix of (n, g) at col_ld = ld: its rows ld floats apart.
            Buf dx(want.size(), kSentinel);
            for (dim_t n = 0; n < p.mb; ++n)
                for (dim_t g = 0; g < p.groups; ++g) {
                    Buf wide(static_cast<std::size_t>(rows * ld), kSentinel);
                    for (dim_t r = 0; r < rows; ++r)
                        std::copy_n(col.begin() + ((n * p.groups + g) * rows + r) * os, os,
                                    wide.begin() + r * ld);
                    Buf before = dx;
                    convlab::col2im_kernel(p, wide.data(), n, g, dx.data(), true, ld);
                    // Only image n's channels of group g changed.
                    std::size_t outside = 0;
                    for (std::size_t i = 0; i < dx.size(); ++i) {
                        const dim_t img = static_cast<dim_t>(i) / (p.ic * is);
                        const dim_t grp = static_cast<dim_t>(i) / is % p.ic / p.icg();
                        outside += (img != n || grp != g) && dx[i] != before[i];
                    }
                    CHECK(outside == 0);
                }
            check_same(dx, want, src_dims(p), "col2im_kernel zero_first");
        }
    }
    CHECK(once >= 6);
}

TEST_CASE("kernels: col2im_rows_kernel by bands of input rows and blocks of output rows") {
    // backward_data_col2im in blocks: each band of dX's input rows (id * IH + ih) adds the taps
    // that land in it from the output rows that reach it (col2im_row_touches), a block of up to
    // 2 output rows at a time, the columns of a block rows os apart. The bands together add what
    // col2im_kernel adds, exactly (integer values); stride 2 along w sums each input row's
    // halves first (conv1-like problems below, with dilation and uneven padding too).
    std::mt19937 rng(811);
    std::vector<Problem> ps = kernel_problems();
    ps.push_back(make_problem(2, 1, 3, 8, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3}, {2, 2}));
    ps.push_back(make_problem(2, 2, 4, 6, 2, {17, 19}, {3, 5}, {1, 2}, {0, 3}, {2, 1}, {2, 2}));
    ps.push_back(make_problem(1, 1, 2, 3, 1, {40}, {4}, {2}, {5}, {4}));
    ps.push_back(
        make_problem(3, 1, 2, 3, 1, {5, 6, 9}, {2, 3, 3}, {2, 1, 2}, {1, 1, 1}, {1, 0, 2}));
    int stride2 = 0;
    for (const Problem& p : ps) {
        INFO(describe(p));
        REQUIRE(p.validate() == "");
        const dim_t rows = p.icg() * p.kernel_spatial(), os = p.out_spatial();
        const dim_t ow = p.out(p.ndims - 1), rows_out = os / ow;
        const dim_t rows_in = p.in_spatial() / p.in[p.ndims - 1];
        stride2 += p.stride[p.ndims - 1] == 2 && p.kernel[p.ndims - 1] > 1;
        const Buf col = ints(rows * os, rng);
        Buf base(static_cast<std::size_t>(prod(src_dims(p))));
        for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i % 7) - 3.0f;
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g) {
                Buf want = base, got = base;
                convlab::col2im_kernel(p, col.data(), n, g, want.data());
                for (dim_t b = 0; b < 3; ++b) {
                    const dim_t r0 = rows_in * b / 3, r1 = rows_in * (b + 1) / 3;
                    for (dim_t q = 0; q < rows_out;) {
                        if (!convlab::col2im_row_touches(p, q, r0, r1)) {
                            ++q;
                            continue;
                        }
                        const dim_t q1 = std::min(q + 2, rows_out);
                        convlab::col2im_rows_kernel(p, col.data() + q * ow, os, q, q1, r0, r1, n, g,
                                                    got.data());
                        q = q1;
                    }
                }
                check_same(got, want, src_dims(p), "col2im_rows_kernel");
            }
    }
    CHECK(stride2 >= 3);
}

TEST_CASE("kernels: strided, pad, flip_rot, tnc and tnc_diff_wei kernels equal the maps") {
    for (const Problem& p : kernel_problems()) {
        INFO(describe(p));
        const Dims zd = cat({p.mb, p.oc}, z_sizes(p));
        {
            const Buf dy = iota(prod(dst_dims(p)));
            Buf z(static_cast<std::size_t>(prod(zd)), kSentinel);
            convlab::strided_kernel(p, dy.data(), z.data());
            check_same(z, run(maps::strided(p), dy), zd, "strided_kernel");
        }
        {
            Dims pb, pe;
            for (int i = 0; i < p.ndims; ++i) {
                const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
                pb.push_back(span - p.pad_begin[i]);
                pe.push_back(span - p.pad_end[i] + p.leftover(i));
            }
            const Buf z = iota(prod(zd));
            const IndexMap m = maps::pad_for_backward_data(p);
            Buf y(static_cast<std::size_t>(m.dst().numel()), kSentinel);
            convlab::pad_kernel(zd, pb, pe, z.data(), y.data());
            check_same(y, run(m, z), m.dst().dims, "pad_kernel (backward data)");
        }
        {
            const Buf w = iota(prod(wei_dims(p)));
            Buf f(w.size(), kSentinel);
            convlab::flip_rot_kernel(p, w.data(), f.data());
            check_same(f, run(maps::flip_rot(p), w), maps::flip_rot(p).dst().dims,
                       "flip_rot_kernel");
            Buf back(w.size(), kSentinel);
            convlab::tnc_diff_wei_kernel(p, w.data(), back.data());  // w as (C, K/G, k) data
            check_same(back, run(maps::tnc_diff_wei(p), w), wei_dims(p), "tnc_diff_wei_kernel");
        }
        for (const Dims& dims : {src_dims(p), dst_dims(p)}) {
            const Buf x = iota(prod(dims));
            Buf t(x.size(), kSentinel);
            convlab::tnc_kernel(dims, x.data(), t.data());
            std::vector<std::string> names;
            for (std::size_t i = 0; i < dims.size(); ++i) names.push_back("a" + std::to_string(i));
            const IndexMap m = maps::tnc(dims, names);
            check_same(t, run(m, x), m.dst().dims, "tnc_kernel " + text(dims));
        }
    }
}

TEST_CASE("kernels: pad_kernel with random pads, negative ones cropping") {
    std::mt19937 rng(909);
    auto pick = [&](dim_t lo, dim_t hi) {
        return std::uniform_int_distribution<dim_t>(lo, hi)(rng);
    };
    int tested = 0;
    for (int t = 0; t < 200; ++t) {
        const int ns = 1 + t % 3;
        Dims dims{pick(1, 3), pick(1, 4)}, pb, pe;
        bool empty = false;
        for (int i = 0; i < ns; ++i) {
            dims.push_back(pick(1, 7));
            pb.push_back(pick(-4, 3));
            pe.push_back(pick(-4, 3));
            empty = empty || dims.back() + pb.back() + pe.back() < 1;
        }
        if (empty) continue;
        INFO("dims " << text(dims) << " pb " << text(pb) << " pe " << text(pe));
        const IndexMap m = maps::pad(dims, pb, pe);
        const Buf x = iota(prod(dims));
        Buf y(static_cast<std::size_t>(m.dst().numel()), kSentinel);
        convlab::pad_kernel(dims, pb, pe, x.data(), y.data());
        check_same(y, run(m, x), m.dst().dims, "pad_kernel");
        ++tested;
    }
    // Large enough for the parallel path: 2*64 planes of 30x30.
    const Dims dims{2, 64, 28, 28}, pb{2, -1}, pe{0, 3};
    const IndexMap m = maps::pad(dims, pb, pe);
    const Buf x = iota(prod(dims));
    Buf y(static_cast<std::size_t>(m.dst().numel()), kSentinel);
    convlab::pad_kernel(dims, pb, pe, x.data(), y.data());
    check_same(y, run(m, x), m.dst().dims, "pad_kernel large");
    CHECK(tested > 100);
}

// [SECTION] the lecture's worked example

TEST_CASE("maps: the matrix-implementation example (2x3x3 input, 2x2x2 filter) by hand") {
    // C = 2, H = W = 3, kernel 2x2, stride 1, no padding, batch 1: x[c][h][w] = 1 + c*9 + h*3 + w.
    const Problem p = make_problem(2, 1, 2, 1, 1, {3, 3}, {2, 2});
    REQUIRE(p.validate() == "");
    const Buf x = iota(18);  // exactly 1 + c*9 + h*3 + w in row-major order
    // Rows (c, kh, kw), columns (oh, ow) = (0,0) (0,1) (1,0) (1,1): x[c][oh+kh][ow+kw].
    const float want[8][4] = {
        {1, 2, 4, 5},      // c0 kh0 kw0
        {2, 3, 5, 6},      // c0 kh0 kw1
        {4, 5, 7, 8},      // c0 kh1 kw0
        {5, 6, 8, 9},      // c0 kh1 kw1
        {10, 11, 13, 14},  // c1 kh0 kw0
        {11, 12, 14, 15},  // c1 kh0 kw1
        {13, 14, 16, 17},  // c1 kh1 kw0
        {14, 15, 17, 18},  // c1 kh1 kw1
    };
    const IndexMap m = maps::im2col(p);
    REQUIRE(m.dst().dims == Dims{1, 1, 8, 4});
    const Buf gen = run(m, x);
    Buf fast(32, kSentinel);
    convlab::im2col_kernel(p, x.data(), 0, 0, fast.data());
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 4; ++c) {
            INFO("row " << r << " col " << c);
            CHECK(gen[r * 4 + c] == want[r][c]);
            CHECK(fast[r * 4 + c] == want[r][c]);
        }
    // col2im of an all-ones matrix counts how many windows cover each pixel.
    const Buf ones(32, 1.0f);
    const Buf cover = run(maps::col2im(p), ones);
    const Buf want_cover = {1, 2, 1, 2, 4, 2, 1, 2, 1, 1, 2, 1, 2, 4, 2, 1, 2, 1};
    check_same(cover, want_cover, {1, 2, 3, 3}, "coverage");
    Buf fast_cover(18, 0.0f);
    convlab::col2im_kernel(p, ones.data(), 0, 0, fast_cover.data());
    check_same(fast_cover, want_cover, {1, 2, 3, 3}, "coverage (kernel)");
}

// [SECTION] step enumeration

TEST_CASE("maps: step enumeration of every map") {
    for (const Problem& p : random_problems(1001, 12)) {
        for (const IndexMap& m : all_maps(p)) {
            INFO(describe(p) << " map " << m.name());
            const Shape& dom = m.domain();
            const dim_t n = dom.numel(), line = dom.dims[m.line_axis()];
            CHECK(m.num_steps(Granularity::Element) == n);
            CHECK(m.num_steps(Granularity::Line) == n / line);
            CHECK(m.num_steps(Granularity::Whole) == 1);
            const auto want = expected_pairs(m);
            REQUIRE(static_cast<dim_t>(want.size()) == n);

            std::vector<std::pair<dim_t, dim_t>> elem, lines;
            bool one_each = true, line_sizes = true;
            for (dim_t s = 0; s < n; ++s) {
                const auto e = step_pairs(m, Granularity::Element, s);
                one_each = one_each && e.size() == 1;
                elem.insert(elem.end(), e.begin(), e.end());
            }
            for (dim_t s = 0; s < n / line; ++s) {
                const auto l = step_pairs(m, Granularity::Line, s);
                line_sizes = line_sizes && static_cast<dim_t>(l.size()) == line;
                lines.insert(lines.end(), l.begin(), l.end());
            }
            CHECK(one_each);
            CHECK(line_sizes);
            CHECK(elem == want);
            CHECK(lines == want);

            // Tile: at most kTileLines whole lines along the axis walked outside the line axis
            // (the highest other axis), all within one index of the remaining axes.
            int mid_axis = -1;
            for (int a = 0; a < dom.rank(); ++a)
                if (a != m.line_axis()) mid_axis = a;
            const dim_t mid = mid_axis < 0 ? 1 : dom.dims[static_cast<std::size_t>(mid_axis)];
            CHECK(m.mid_extent() == mid);
            CHECK(m.num_steps(Granularity::Tile) ==
                  n / (line * mid) * ((mid + convlab::kTileLines - 1) / convlab::kTileLines));
            std::vector<std::pair<dim_t, dim_t>> tiles;
            bool tile_sizes = true, one_block = true;
            std::vector<dim_t> c0(static_cast<std::size_t>(dom.rank())), c(c0.size());
            for (dim_t s = 0; s < m.num_steps(Granularity::Tile); ++s) {
                const auto t = step_pairs(m, Granularity::Tile, s);
                const auto sz = static_cast<dim_t>(t.size());
                tile_sizes =
                    tile_sizes && sz % line == 0 && sz >= line && sz <= convlab::kTileLines * line;
                for (std::size_t i = 0; i < t.size(); ++i) {
                    const dim_t d = m.kind() == IndexMap::Kind::Gather ? t[i].second : t[i].first;
                    dom.coord_of(d, i == 0 ? std::span<dim_t>(c0) : std::span<dim_t>(c));
                    if (i == 0) continue;
                    for (int a = 0; a < dom.rank(); ++a)
                        if (a != m.line_axis() && a != mid_axis)
                            one_block = one_block && c[static_cast<std::size_t>(a)] ==
                                                         c0[static_cast<std::size_t>(a)];
                    if (mid_axis >= 0)
                        one_block =
                            one_block &&
                            c[static_cast<std::size_t>(mid_axis)] / convlab::kTileLines ==
                                c0[static_cast<std::size_t>(mid_axis)] / convlab::kTileLines;
                }
                tiles.insert(tiles.end(), t.begin(), t.end());
            }
            CHECK(tile_sizes);
            CHECK(one_block);
            CHECK(tiles == want);
            CHECK(step_pairs(m, Granularity::Whole, 0) == want);
            for (Granularity g :
                 {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole}) {
                CHECK(step_pairs(m, g, -1).empty());
                CHECK(step_pairs(m, g, m.num_steps(g)).empty());
            }

            // Executing every step (any granularity) is executing the map.
            const Buf src = iota(m.src().numel());
            const Buf full = run(m, src);
            const bool gather = m.kind() == IndexMap::Kind::Gather;
            for (Granularity g :
                 {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole}) {
                Buf dst(full.size(), 0.0f);
                m.execute_steps(g, m.num_steps(g), src.data(), dst.data());
                check_same(dst, full, m.dst().dims,
                           std::string("all steps, ") + convlab::granularity_name(g));
                Buf clamp(full.size(), 0.0f);
                m.execute_steps(g, m.num_steps(g) + 5, src.data(), clamp.data());
                CHECK(clamp == full);
            }
            // After k steps exactly the first k pairs have been applied.
            for (Granularity g : {Granularity::Element, Granularity::Line}) {
                const dim_t k = m.num_steps(g) / 2, per = g == Granularity::Line ? line : 1;
                const float untouched = gather ? kSentinel : 0.0f;
                Buf dst(full.size(), untouched), expect(full.size(), untouched);
                m.execute_steps(g, k, src.data(), dst.data());
                for (dim_t i = 0; i < k * per; ++i) {
                    const auto [s, d] = want[i];
                    if (gather)
                        expect[d] = s < 0 ? 0.0f : src[s];
                    else if (d >= 0)
                        expect[d] += src[s];
                }
                check_same(dst, expect, m.dst().dims,
                           std::string("partial, ") + convlab::granularity_name(g));
            }
        }
    }
}

TEST_CASE("maps: im2col Line steps each fill exactly one column") {
    for (const Problem& p : random_problems(1101, 15)) {
        INFO(describe(p));
        const IndexMap m = maps::im2col(p);
        const dim_t rows = p.icg() * p.kernel_spatial(), cols = p.out_spatial();
        REQUIRE(m.num_steps(Granularity::Line) == p.mb * p.groups * cols);
        dim_t bad = 0;
        for (dim_t s = 0; s < m.num_steps(Granularity::Line); ++s) {
            // Walk order (n, g, col, row): step s is column s % cols of (n, g) = s / cols.
            const dim_t col = s % cols, g = s / cols % p.groups, n = s / cols / p.groups;
            const auto pairs = step_pairs(m, Granularity::Line, s);
            if (static_cast<dim_t>(pairs.size()) != rows) {
                ++bad;
                continue;
            }
            for (dim_t r = 0; r < rows; ++r) {
                const dim_t want_dst = ((n * p.groups + g) * rows + r) * cols + col;
                if (pairs[r].second != want_dst || pairs[r].first != m.map(want_dst)) ++bad;
            }
        }
        CHECK(bad == 0);
    }
}

TEST_CASE("maps: sources_of and destinations_of agree with map()") {
    int tested = 0;
    for (const Problem& p : random_problems(1201, 30)) {
        for (const IndexMap& m : all_maps(p)) {
            if (m.src().numel() * m.dst().numel() > 3000000) continue;
            INFO(describe(p) << " map " << m.name());
            ++tested;
            std::vector<std::vector<dim_t>> to_dst(m.src().numel()), to_src(m.dst().numel());
            for (dim_t d = 0; d < m.domain().numel(); ++d) {
                const dim_t o = m.map(d);
                if (o < 0) continue;
                if (m.kind() == IndexMap::Kind::Gather) {
                    to_src[d].push_back(o);
                    to_dst[o].push_back(d);
                } else {
                    to_dst[d].push_back(o);
                    to_src[o].push_back(d);
                }
            }
            dim_t bad_src = 0, bad_dst = 0;
            for (dim_t d = 0; d < m.dst().numel(); ++d) bad_src += m.sources_of(d) != to_src[d];
            for (dim_t s = 0; s < m.src().numel(); ++s)
                bad_dst += m.destinations_of(s) != to_dst[s];
            CHECK(bad_src == 0);
            CHECK(bad_dst == 0);
        }
    }
    CHECK(tested > 100);
}

// [SECTION] dumps

TEST_CASE("maps: dump() lists every pair in enumeration order") {
    for (const Problem& p : random_problems(1301, 9)) {
        for (const IndexMap& m : all_maps(p)) {
            INFO(describe(p) << " map " << m.name());
            const auto want = expected_pairs(m);
            const dim_t total = static_cast<dim_t>(want.size());
            const auto lines = lines_of(m.dump());
            REQUIRE(static_cast<dim_t>(lines.size()) == total + 1);
            CHECK(lines[0].rfind("# map " + m.name() + " (", 0) == 0);
            CHECK(lines[0].find(m.kind() == IndexMap::Kind::Gather ? "gather" : "reduce") !=
                  std::string::npos);
            dim_t bad = 0;
            std::string first_bad;
            for (dim_t i = 0; i < total; ++i) {
                const auto [s, d] = want[i];
                std::string expect;
                const std::string& got = lines[i + 1];
                bool ok;
                if (m.kind() == IndexMap::Kind::Gather) {
                    expect = "dst" + coord_text(m.dst(), d) + " <- " +
                             (s < 0 ? std::string("0") : "src" + coord_text(m.src(), s));
                    ok = got == expect;
                } else if (d >= 0) {
                    expect = "dst" + coord_text(m.dst(), d) + " += src" + coord_text(m.src(), s);
                    ok = got == expect;
                } else {
                    // A source that feeds nothing: named, without a destination.
                    expect = "src" + coord_text(m.src(), s);
                    ok = got.size() >= expect.size() &&
                         got.compare(got.size() - expect.size(), expect.size(), expect) == 0 &&
                         got.find("dst") == std::string::npos;
                }
                if (!ok && !bad++) first_bad = "line " + got + " / want " + expect;
            }
            INFO(first_bad);
            CHECK(bad == 0);

            // Truncated dumps: the same first lines, then a count of what was left out.
            for (dim_t limit : {dim_t{0}, dim_t{1}, dim_t{5}, total - 1, total, total + 3}) {
                if (limit < 0) continue;
                const auto cut = lines_of(m.dump(limit));
                const dim_t shown = std::min(limit, total);
                INFO("limit " << limit);
                REQUIRE(static_cast<dim_t>(cut.size()) == shown + 1 + (limit < total ? 1 : 0));
                CHECK(std::equal(cut.begin(), cut.begin() + shown + 1, lines.begin()));
                if (limit < total)
                    CHECK(cut.back() == "# ... " + std::to_string(total - limit) + " more");
            }
        }
    }
    // Axis names of 1-D and 3-D problems.
    const auto l1 = lines_of(maps::strided(make_problem(1, 1, 1, 1, 1, {5}, {2}, {2})).dump(1));
    CHECK(l1[1] == "dst(n=0,k=0,w=0) <- src(n=0,k=0,w=0)");
    const auto l3 = lines_of(
        maps::im2col(make_problem(3, 1, 1, 1, 1, {2, 2, 2}, {1, 1, 1}, {}, {1, 0, 0})).dump(1));
    CHECK(l3[1] == "dst(n=0,g=0,row=0,col=0) <- 0");
}

namespace {

// A small structural JSON check: strings closed, brackets and braces balanced and nested.
bool balanced_json(const std::string& s) {
    std::vector<char> stack;
    bool in_string = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            stack.push_back(c);
        else if (c == '}' || c == ']') {
            if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) return false;
            stack.pop_back();
        }
    }
    return !in_string && stack.empty();
}

// The "pairs" array of dump_json as numbers.
std::vector<std::pair<dim_t, dim_t>> json_pairs(const std::string& s, bool& ok) {
    std::vector<std::pair<dim_t, dim_t>> out;
    ok = false;
    std::size_t i = s.find("\"pairs\":[");
    if (i == std::string::npos) return out;
    i += 9;
    while (i < s.size() && s[i] != ']') {
        if (s[i] == ',') ++i;
        long long a = 0, b = 0;
        int used = 0;
        if (std::sscanf(s.c_str() + i, "[%lld,%lld]%n", &a, &b, &used) != 2 || used == 0)
            return out;
        out.emplace_back(a, b);
        i += static_cast<std::size_t>(used);
    }
    ok = i < s.size();
    return out;
}

}  // namespace

TEST_CASE("maps: dump_json holds the shapes, pairs_total and the pairs") {
    for (const Problem& p : random_problems(1401, 9)) {
        for (const IndexMap& m : all_maps(p)) {
            INFO(describe(p) << " map " << m.name());
            const auto want = expected_pairs(m);
            const std::string j = m.dump_json();
            CHECK(balanced_json(j));
            CHECK(j.front() == '{');
            CHECK(j.find("\"name\":\"" + m.name() + "\"") != std::string::npos);
            CHECK(j.find(std::string("\"kind\":\"") +
                         (m.kind() == IndexMap::Kind::Gather ? "gather" : "reduce") + "\"") !=
                  std::string::npos);
            CHECK(j.find("\"pairs_total\":" + std::to_string(want.size()) + ",") !=
                  std::string::npos);
            std::string src_json = "\"src\":{\"dims\":[";
            for (int a = 0; a < m.src().rank(); ++a)
                src_json += (a ? "," : "") + std::to_string(m.src().dims[a]);
            src_json += "],\"names\":[";
            for (int a = 0; a < m.src().rank(); ++a)
                src_json += (a ? ",\"" : "\"") + m.src().names[a] + "\"";
            CHECK(j.find(src_json + "]}") != std::string::npos);
            bool ok = false;
            CHECK(json_pairs(j, ok) == want);
            CHECK(ok);
            const dim_t limit = std::min<dim_t>(7, static_cast<dim_t>(want.size()));
            const std::string jl = m.dump_json(limit);
            CHECK(balanced_json(jl));
            CHECK(jl.find("\"pairs_total\":" + std::to_string(want.size()) + ",") !=
                  std::string::npos);
            const auto cut = json_pairs(jl, ok);
            CHECK(ok);
            CHECK(cut == std::vector<std::pair<dim_t, dim_t>>(want.begin(), want.begin() + limit));
        }
    }
}

// [SECTION] execution through layouts

namespace {

// Runs m on tensors of the given layouts (source filled with 1, 2, 3 ... by logical index) and
// checks every logical destination value against the dense executor.
void check_layout_execute(const IndexMap& m, const Layout& src_layout, const Layout& dst_layout,
                          DType dst_dtype = DType::f32) {
    INFO("map " << m.name() << " src " << src_layout.str() << " dst " << dst_layout.str() << " "
                << std::string(convlab::dtype_name(dst_dtype)));
    const Buf src = iota(m.src().numel());
    const Buf dense = run(m, src);
    Tensor s(src_layout, DType::f32);
    for_each_coord(m.src().dims, [&](const Dims& c) { s.set(c, src[lin(m.src().dims, c)]); });
    Tensor d(dst_layout, dst_dtype);
    d.fill(99.0f);  // stale values must not survive (a reduce starts from zero)
    m.execute(s, d);
    dim_t bad = 0;
    for_each_coord(m.dst().dims,
                   [&](const Dims& c) { bad += d.get(c) != dense[lin(m.dst().dims, c)]; });
    CHECK(bad == 0);
    // Padding lanes of a blocked destination stay zero.
    std::vector<bool> reached(static_cast<std::size_t>(dst_layout.storage_size()), false);
    for_each_coord(m.dst().dims, [&](const Dims& c) {
        reached[static_cast<std::size_t>(dst_layout.offset(std::span<const dim_t>(c)))] = true;
    });
    dim_t dirty = 0;
    for (dim_t o = 0; o < dst_layout.storage_size(); ++o)
        if (!reached[static_cast<std::size_t>(o)]) dirty += d.get_offset(o) != 0.0f;
    CHECK(dirty == 0);
}

}  // namespace

TEST_CASE("maps: execute(Tensor, Tensor) through non-row-major layouts") {
    const Problem p2 = make_problem(2, 2, 3, 4, 1, {5, 4}, {3, 2}, {2, 1}, {1, 0}, {1, 1});
    const Problem p1 = make_problem(1, 2, 4, 2, 2, {7}, {3}, {2}, {1}, {0});
    const Problem p3 = make_problem(3, 1, 2, 2, 1, {3, 4, 3}, {2, 2, 1}, {1, 2, 1}, {1, 0, 0});
    for (const Problem& p : {p1, p2, p3}) {
        INFO(describe(p));
        const IndexMap im = maps::im2col(p);
        check_layout_execute(im, Layout::nxc(im.src().dims), Layout::row_major(im.dst().dims));
        check_layout_execute(im, Layout::ncx(im.src().dims),
                             Layout::permuted(im.dst().dims, {3, 2, 1, 0}, "reversed"));
        const IndexMap c2 = maps::col2im(p);
        check_layout_execute(c2, Layout::row_major(c2.src().dims), Layout::nxc(c2.dst().dims));
        const IndexMap pd = maps::pad_for_backward_data(p);
        check_layout_execute(pd, Layout::nxc(pd.src().dims), Layout::nxc(pd.dst().dims));
        check_layout_execute(pd, Layout::ncx(pd.src().dims), Layout::nxc(pd.dst().dims),
                             DType::f16);
        const IndexMap st = maps::strided(p);
        check_layout_execute(st, Layout::ncx(st.src().dims), Layout::nxc(st.dst().dims),
                             DType::bf16);
    }
    // Into blocked destinations: TNC of activations into NC1HWC0, FlipRot into FRACTAL_Z.
    const IndexMap t = maps::tnc_src(p2);
    const Dims td = t.dst().dims;
    for (dim_t c0 : {16, 8})
        check_layout_execute(t, Layout::nxc(t.src().dims),
                             Layout::blocked(td, {0, 1, 2, 3}, {{1, c0}}, "NC1HWC0"));
    const IndexMap f = maps::flip_rot(p2);
    check_layout_execute(
        f, Layout::row_major(f.src().dims),
        Layout::blocked(f.dst().dims, {1, 2, 3, 0}, {{0, 16}, {1, 8}}, "FRACTAL_Z"));
    // Shapes must match.
    const IndexMap im = maps::im2col(p2);
    Tensor good_src(im.src().dims), good_dst(im.dst().dims), wrong(Dims{1, 2, 3, 4});
    CHECK_THROWS_AS(im.execute(wrong, good_dst), Error);
    CHECK_THROWS_AS(im.execute(good_src, wrong), Error);
    CHECK_NOTHROW(im.execute(good_src, good_dst));
}

// [SECTION] names, shapes and construction

TEST_CASE("maps: names, by_name, granularities, shapes and map construction") {
    const Problem p = make_problem(2, 2, 4, 6, 2, {6, 5}, {3, 2}, {2, 1}, {1, 0}, {0, 1});
    const std::vector<std::string> known{"im2col",  "col2im", "strided", "pad",
                                         "fliprot", "tnc",    "winograd"};
    // The registry's NCHW maps begin with these (a map added to the registry follows them).
    const std::vector<std::string> names = maps::names();
    REQUIRE(names.size() >= known.size());
    CHECK(std::vector<std::string>(names.begin(), names.begin() + 7) == known);
    const Buf x = iota(prod(src_dims(p)));
    for (const auto& name : known) {
        INFO(name);
        if (name == "winograd") {  // p is strided: refused, naming the rule
            CHECK_THROWS_WITH_AS(maps::by_name(name, p), doctest::Contains("stride 1"), Error);
            continue;
        }
        const IndexMap m = maps::by_name(name, p);
        CHECK(m.name() == name);
    }
    const Problem w3 = convlab::parse_descriptor("mb2ic3ih9iw7oc4kh3kw3ph1pw1");
    const Buf xw = iota(prod(src_dims(w3)));
    CHECK(run(maps::by_name("winograd", w3), xw) == run(maps::winograd_tiles(w3), xw));
    // by_name returns the same maps as the named functions.
    CHECK(run(maps::by_name("im2col", p), x) == run(maps::im2col(p), x));
    CHECK(maps::by_name("pad", p).dst() == maps::pad_for_backward_data(p).dst());
    CHECK(maps::by_name("tnc", p).src() == maps::tnc_src(p).src());
    try {
        maps::by_name("transpose", p);
        FAIL("no Error for an unknown map");
    } catch (const Error& e) {
        const std::string what = e.what();
        CHECK(what.find("transpose") != std::string::npos);
        for (const auto& name : known) CHECK(what.find(name) != std::string::npos);
    }

    for (Granularity g :
         {Granularity::Element, Granularity::Line, Granularity::Tile, Granularity::Whole})
        CHECK(convlab::parse_granularity(convlab::granularity_name(g)) == g);
    CHECK(std::string(convlab::granularity_name(Granularity::Line)) == "line");
    CHECK(convlab::parse_granularity("row") == Granularity::Line);
    CHECK(convlab::parse_granularity("column") == Granularity::Line);
    CHECK(convlab::parse_granularity("tile") == Granularity::Tile);
    CHECK_THROWS_AS(convlab::parse_granularity("tiles"), Error);

    const Shape s{{2, 3, 4, 5}, {"n", "c", "h", "w"}};
    CHECK(s.str() == "(n=2,c=3,h=4,w=5)");
    CHECK(s.numel() == 120);
    CHECK(s.rank() == 4);
    Dims c(4);
    dim_t bad = 0;
    for (dim_t i = 0; i < 120; ++i) {
        s.coord_of(i, c);
        bad += c != Dims{i / 60, i / 20 % 3, i / 5 % 4, i % 5};
        bad += s.linear_of(c) != i;
    }
    CHECK(bad == 0);

    // Activation names per dimensionality.
    CHECK(maps::im2col(make_problem(1, 1, 1, 1, 1, {4}, {2})).src().names ==
          std::vector<std::string>{"n", "c", "w"});
    CHECK(maps::im2col(p).src().names == std::vector<std::string>{"n", "c", "h", "w"});
    CHECK(maps::im2col(make_problem(3, 1, 1, 1, 1, {4, 4, 4}, {2, 2, 2})).src().names ==
          std::vector<std::string>{"n", "c", "d", "h", "w"});
    CHECK(maps::flip_rot(p).dst().names == std::vector<std::string>{"c", "k", "kh", "kw"});

    const Shape a{{3}, {"i"}}, b{{3, 2}, {"i", "j"}};
    auto fn = [](const dim_t* cc) { return cc[0]; };
    CHECK_THROWS_AS(IndexMap("x", IndexMap::Kind::Gather, a, Shape{{3, 2}, {"i"}}, fn, 0), Error);
    CHECK_THROWS_AS(IndexMap("x", IndexMap::Kind::Gather, a, b, fn, 2), Error);
    CHECK_THROWS_AS(IndexMap("x", IndexMap::Kind::Gather, a, b, fn, -1), Error);
    const IndexMap g("pick_row", IndexMap::Kind::Gather, a, b, fn, 1);
    CHECK(run(g, {1, 2, 3}) == Buf{1, 1, 2, 2, 3, 3});
    const IndexMap r = g.transposed("sum_rows");
    CHECK(r.kind() == IndexMap::Kind::Reduce);
    CHECK(r.src() == b);
    CHECK(r.dst() == a);
    CHECK(r.domain() == b);
    CHECK(r.codomain() == a);
    CHECK(run(r, {1, 2, 3, 4, 5, 6}) == Buf{3, 7, 11});
    const IndexMap back = r.transposed("again");
    CHECK(back.kind() == IndexMap::Kind::Gather);
    CHECK(run(back, {1, 2, 3}) == run(g, {1, 2, 3}));
}

TEST_CASE("maps: a reduce into an fp16/bf16 tensor accumulates in fp32 (docs/design.md)") {
    // Three sources sum into one destination. In fp32: 2048 + 1 + 1 = 2050, exact in fp16; rounding
    // after every addition instead gives 2048 (2049 is a tie that goes to 2048, twice). bf16: 258
    // against 256.
    const Shape three{{3}, {"i"}}, one{{1}, {"j"}};
    const IndexMap sum(
        "sum", IndexMap::Kind::Reduce, three, one, [](const dim_t*) -> dim_t { return 0; }, 0);
    for (auto [dt, big] : {std::pair{DType::f16, 2048.0f}, std::pair{DType::bf16, 256.0f}}) {
        INFO(std::string(convlab::dtype_name(dt)));
        Tensor src(Dims{3});
        src.f32()[0] = big;
        src.f32()[1] = 1.0f;
        src.f32()[2] = 1.0f;
        Tensor dst(Layout::row_major({1}), dt);
        sum.execute(src, dst);
        CHECK(dst.get(Dims{0}) == big + 2.0f);
    }
}

TEST_CASE("maps: winograd_tiles gathers the 6x6 patch of every 4x4 output tile") {
    using convlab::Problem;
    std::mt19937 rng(66);
    int outputs = 0;
    for (const char* d : {"mb2ic3ih9iw11oc2kh3kw3ph1pw1", "g1mb1ic2ih5iw6oc2kh3kw3ph0pw2",
                          "mb1ic1ih3iw3oc1kh3kw3ph0pw0", "mb1ic2ih8iw8oc3kh3kw3ph3pw0phe1pwe3"}) {
        const Problem p = convlab::parse_descriptor(d);
        const convlab::IndexMap m = convlab::maps::winograd_tiles(p);
        INFO(d);
        REQUIRE(m.dst().dims ==
                std::vector<dim_t>{p.mb, p.ic, (p.out(0) + 3) / 4, (p.out(1) + 3) / 4, 6, 6});
        const convlab::Tensor x = convlab::test::integer_tensor(p.src_dims(), rng);
        const convlab::Tensor w = convlab::test::integer_tensor(p.wei_dims(), rng);
        std::vector<float> tiles(static_cast<std::size_t>(m.dst().numel()));
        m.execute(x.f32(), tiles.data());
        // Every output is the 3x3 correlation of its tile's patch at its place in the tile.
        const convlab::Tensor y = convlab::forward(p, x, w, nullptr, "direct");
        const dim_t th = m.dst().dims[2], tw = m.dst().dims[3];
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t k = 0; k < p.oc; ++k)
                for (dim_t oy = 0; oy < p.out(0); ++oy)
                    for (dim_t ox = 0; ox < p.out(1); ++ox) {
                        double sum = 0;
                        for (dim_t c = 0; c < p.ic; ++c)
                            for (dim_t r = 0; r < 3; ++r)
                                for (dim_t s = 0; s < 3; ++s) {
                                    const dim_t t =
                                        ((((n * p.ic + c) * th + oy / 4) * tw + ox / 4) * 6 +
                                         oy % 4 + r) *
                                            6 +
                                        ox % 4 + s;
                                    sum += double(tiles[static_cast<std::size_t>(t)]) *
                                           w.f32()[((k * p.ic + c) * 3 + r) * 3 + s];
                                }
                        CHECK(sum == y.f32()[((n * p.oc + k) * p.out(0) + oy) * p.out(1) + ox]);
                        ++outputs;
                    }
    }
    CHECK(outputs > 300);
    // Stride 2, a 5x5 kernel, 1-D: refused, naming the rule.
    for (const char* d : {"mb1ic1ih8oc1kh3sh2ph1", "mb1ic1ih8oc1kh5ph2", "mb1ic1iw8oc1kw3pw1"})
        CHECK_THROWS_WITH_AS(convlab::maps::winograd_tiles(convlab::parse_descriptor(d)),
                             doctest::Contains("needs 2-D, kernel 3x3, stride 1"), Error);
}
