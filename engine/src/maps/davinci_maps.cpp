// The DaVinci converters as index maps (defined once; the app animates these values) and their
// fast kernels, which compute exactly what the generic executor computes (tests/test_davinci.cpp
// checks every element). Formulas: davinci.hpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <functional>

#include "convlab/davinci.hpp"
#include "convlab/map_registry.hpp"
#include "convlab/maps.hpp"
#include "geom.hpp"

namespace convlab::davinci {

// [SECTION] geometry

namespace {

void check_rank(const char* what, std::span<const dim_t> dims) {
    if (dims.size() < 3 || dims.size() > 5)
        throw Error(std::string(what) + " " + dims_str(dims) +
                    ": expected 3 to 5 dims (N, C, spatial...)");
    for (std::size_t i = 0; i < dims.size(); ++i)
        if (dims[i] < 1)
            throw Error(std::string(what) + " " + dims_str(dims) + ": dim " + std::to_string(i) +
                        " must be >= 1");
}

// Spatial sizes (d, h, w) of (X, Y, spatial...) dims, leading axes 1.
std::array<dim_t, 3> spatial3(std::span<const dim_t> dims) {
    std::array<dim_t, 3> s{1, 1, 1};
    const std::size_t ns = dims.size() - 2;
    for (std::size_t i = 0; i < ns; ++i) s[3 - ns + i] = dims[2 + i];
    return s;
}

// Per-axis problem values padded to (d, h, w) with `fill` in the unused leading axes.
std::array<dim_t, 3> axes3(const SpatialDims& v, int ndims, dim_t fill) {
    std::array<dim_t, 3> s{fill, fill, fill};
    for (int i = 0; i < ndims; ++i) s[3 - ndims + i] = v[i];
    return s;
}
std::array<dim_t, 3> axes3(std::span<const dim_t> v, std::size_t ns, dim_t fill) {
    std::array<dim_t, 3> s{fill, fill, fill};
    for (std::size_t i = 0; i < ns; ++i) s[3 - ns + i] = v[i];
    return s;
}

std::vector<std::string> spatial_names(std::size_t ns, const std::string& prefix = "") {
    static const char* names[3][3] = {{"w", "", ""}, {"h", "w", ""}, {"d", "h", "w"}};
    std::vector<std::string> out;
    for (std::size_t i = 0; i < ns; ++i) out.push_back(prefix + names[ns - 1][i]);
    return out;
}

Shape logical_shape(std::span<const dim_t> dims, const char* a, const char* b,
                    const std::string& prefix) {
    Shape s{{dims.begin(), dims.end()}, {a, b}};
    for (auto& n : spatial_names(dims.size() - 2, prefix)) s.names.push_back(n);
    return s;
}

// (kd, c1, kh, kw) of a fractal row.
struct Row4 {
    dim_t kd, c1, kh, kw;
};
Row4 unrow(const WeiGeom& g, dim_t r) {
    Row4 o;
    o.kw = r % g.w;
    r /= g.w;
    o.kh = r % g.h;
    r /= g.h;
    o.c1 = r % g.i1;
    o.kd = r / g.i1;
    return o;
}

std::vector<dim_t> swap01(std::span<const dim_t> dims) {
    std::vector<dim_t> t(dims.begin(), dims.end());
    std::swap(t[0], t[1]);
    return t;
}

using T = MapExpr::Term;

std::string upper(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

// The terms of a physical activation coordinate (rank 4, 5 or 6) that exist, by role: n, the
// channel block, the lane and the spatial axes (outermost first, e.g. {d, h, w}).
struct ActTerms {
    T n, c1, c0;
    std::vector<T> sp;
};
ActTerms act_terms(MapExpr& e, int rank) {
    ActTerms t;
    t.n = e.var(0);
    t.c0 = e.var(rank - 1);
    const int c1 = rank == 6 ? 2 : 1;
    t.c1 = e.var(c1);
    for (int a = 1; a < rank - 1; ++a)
        if (a != c1) t.sp.push_back(e.var(a));
    return t;
}
// A physical activation coordinate from its roles (spatial outermost first).
std::vector<T> act_image(T n, T c1, const std::vector<T>& sp, T c0) {
    std::vector<T> out{n};
    if (sp.size() == 3) {
        out.push_back(sp[0]);
        out.push_back(c1);
        out.push_back(sp[1]);
        out.push_back(sp[2]);
    } else {
        out.push_back(c1);
        out.insert(out.end(), sp.begin(), sp.end());
    }
    out.push_back(c0);
    return out;
}

// A fractal row ((kd*B + b)*KH + kh)*KW + kw split into its block b and the kernel taps of `ns`
// spatial axes (tap names "kd", "kh", "kw"; their sizes print as "KD", "KH", "KW"): the split of
// FRACTAL_Z's dim 0. The block sits between d and h.
void split_row(MapExpr& e, T row, dim_t blocks, const std::string& block_name,
               std::span<const dim_t> ks, const std::vector<std::string>& taps_named, T& block,
               std::vector<T>& taps) {
    const std::size_t ns = ks.size();
    taps.assign(ns, row);
    T r = row;
    for (std::size_t i = ns; i-- > (ns == 3 ? 1 : 0);) {
        const T size = e.sym(upper(taps_named[i]), ks[i]);
        taps[i] = e.let(taps_named[i], r % size);
        r = r / size;
    }
    if (ns == 3) {
        const T nb = e.sym(upper(block_name), blocks);
        block = e.let(block_name, r % nb);
        taps[0] = e.let(taps_named[0], r / nb);
    } else {
        block = e.let(block_name, r);
    }
}
// The inverse: the row of block b and taps (kd, kh, kw of `ns` axes).
T join_row(MapExpr& e, T block, dim_t blocks, const std::string& block_name,
           std::span<const dim_t> ks, const std::vector<std::string>& taps_named,
           const std::vector<T>& taps) {
    const std::size_t ns = ks.size();
    T r = ns == 3 ? taps[0] * e.sym(upper(block_name), blocks) + block : block;
    for (std::size_t i = ns == 3 ? 1 : 0; i < ns; ++i)
        r = r * e.sym(upper(taps_named[i]), ks[i]) + taps[i];
    return r;
}

}  // namespace

ActGeom ActGeom::of(std::span<const dim_t> dims, dim_t c0) {
    check_c0(c0);
    check_rank("activations", dims);
    ActGeom g;
    g.n = dims[0];
    g.c = dims[1];
    g.c0 = c0;
    g.c1 = blocks_of(g.c, c0);
    const auto s = spatial3(dims);
    g.d = s[0];
    g.h = s[1];
    g.w = s[2];
    return g;
}

WeiGeom WeiGeom::of(std::span<const dim_t> dims, dim_t c0) {
    check_c0(c0);
    check_rank("weights", dims);
    WeiGeom g;
    g.o = dims[0];
    g.i = dims[1];
    g.c0 = c0;
    g.i1 = blocks_of(g.i, c0);
    g.n1 = blocks_of(g.o, kN0);
    const auto s = spatial3(dims);
    g.d = s[0];
    g.h = s[1];
    g.w = s[2];
    return g;
}

// [SECTION] blocked pack / unpack from a Layout value

namespace {

// Inverse of a blocked layout: storage offset -> logical coordinate, or false for a padding
// lane. Built from the layout's outer strides and inner blocks only.
class Unblock {
  public:
    explicit Unblock(const Layout& l) : dims_(l.dims()), strides_(l.outer_strides()) {
        const int rank = l.rank();
        block_of_.assign(dims_.size(), 1);
        for (const auto& b : l.blocks()) block_of_[b.dim] *= b.size;
        // Inner blocks: position stride (innermost 1) and weight within their logical dim
        // (product of the later blocks of the same dim).
        dim_t stride = 1;
        std::vector<dim_t> finer(dims_.size(), 1);
        const auto& bl = l.blocks();
        for (int j = static_cast<int>(bl.size()) - 1; j >= 0; --j) {
            blocks_.push_back({bl[j].dim, bl[j].size, stride, finer[bl[j].dim]});
            finer[bl[j].dim] *= bl[j].size;
            stride *= bl[j].size;
        }
        inner_ = stride;
        // Outer dims by decreasing stride; on a tie the one with more blocks is outer (a tie
        // only happens next to a dim of a single block).
        order_.resize(dims_.size());
        for (int i = 0; i < rank; ++i) order_[i] = i;
        std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
            if (strides_[a] != strides_[b]) return strides_[a] > strides_[b];
            return extent(a) > extent(b);
        });
    }
    bool logical(dim_t off, dim_t* c) const {
        const dim_t inner = off % inner_;
        dim_t rest = off - inner;
        for (int d : order_) {
            c[d] = (strides_[d] ? rest / strides_[d] : 0) * block_of_[d];
            if (strides_[d]) rest %= strides_[d];
        }
        for (const auto& b : blocks_) c[b.dim] += (inner / b.stride) % b.size * b.weight;
        for (std::size_t d = 0; d < dims_.size(); ++d)
            if (c[d] >= dims_[d]) return false;
        return true;
    }

  private:
    struct Blk {
        int dim;
        dim_t size, stride, weight;
    };
    dim_t extent(int d) const { return (dims_[d] + block_of_[d] - 1) / block_of_[d]; }
    std::vector<dim_t> dims_, strides_, block_of_;
    std::vector<Blk> blocks_;
    std::vector<int> order_;
    dim_t inner_ = 1;
};

constexpr int kMaxRank = 16;

void check_pair(const Layout& layout, const Shape& logical, const Shape& physical,
                const std::string& name) {
    if (logical.dims != layout.dims() || physical.numel() != layout.storage_size() ||
        logical.rank() > kMaxRank || physical.rank() > kMaxRank)
        throw Error("map " + name + ": logical shape " + logical.str() + " and physical shape " +
                    physical.str() + " do not match layout " + layout.str());
}

}  // namespace

IndexMap blocked_pack(const Layout& layout, Shape logical, Shape physical, std::string name) {
    check_pair(layout, logical, physical, name);
    const Unblock dec(layout);
    const std::vector<dim_t> pdims = physical.dims;
    auto fn = [dec, pdims, logical](const dim_t* pc) -> dim_t {
        dim_t off = 0;
        for (std::size_t i = 0; i < pdims.size(); ++i) off = off * pdims[i] + pc[i];
        dim_t c[kMaxRank];
        if (!dec.logical(off, c)) return IndexMap::kZero;
        return logical.linear_of(std::span<const dim_t>(c, logical.dims.size()));
    };
    const int line = physical.rank() - 1;
    return IndexMap(std::move(name), IndexMap::Kind::Gather, std::move(logical),
                    std::move(physical), fn, line);
}

IndexMap blocked_unpack(const Layout& layout, Shape logical, Shape physical, std::string name) {
    check_pair(layout, logical, physical, name);
    const std::size_t rank = logical.dims.size();
    auto fn = [layout, rank](const dim_t* c) -> dim_t {
        return layout.offset(std::span<const dim_t>(c, rank));
    };
    const int line = logical.rank() - 1;
    return IndexMap(std::move(name), IndexMap::Kind::Gather, std::move(physical),
                    std::move(logical), fn, line);
}

namespace {

std::string lower(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

}  // namespace

// The packs and unpacks as expressions; blocked_pack / blocked_unpack of the same layouts compute
// the same maps from the Layout value (tested on every element).
IndexMap pack_activation(std::vector<dim_t> dims, dim_t c0) {
    check_rank("activations", dims);
    const Layout l = activation_layout(dims, c0);
    Shape phys = activation_physical(dims, c0);
    // dst(n, [d,] c1, [h,] w, c0) <- src(n, c, spatial...), c = c1*C0 + c0, zero unless c < C.
    MapExpr e(phys.names);
    const ActTerms t = act_terms(e, phys.rank());
    const T c = e.let("c", t.c1 * e.sym("C0", c0) + t.c0);
    e.require_below(c, e.sym("C", dims[1]));
    std::vector<T> image{t.n, c};
    image.insert(image.end(), t.sp.begin(), t.sp.end());
    e.set_image(image);
    const int line = phys.rank() - 1;
    return IndexMap(lower(l.name()), IndexMap::Kind::Gather, logical_shape(dims, "n", "c", ""),
                    std::move(phys), std::move(e), line);
}

IndexMap unpack_activation(std::vector<dim_t> dims, dim_t c0) {
    check_rank("activations", dims);
    const Layout l = activation_layout(dims, c0);
    Shape logical = logical_shape(dims, "n", "c", "");
    // dst(n, c, spatial...) <- src(n, [d,] c/C0, [h,] w, c % C0).
    MapExpr e(logical.names);
    const T C0 = e.sym("C0", c0);
    std::vector<T> sp;
    for (int a = 2; a < logical.rank(); ++a) sp.push_back(e.var(a));
    e.set_image(act_image(e.var(0), e.var(1) / C0, sp, e.var(1) % C0));
    const int line = logical.rank() - 1;
    return IndexMap("unpack_" + lower(l.name()), IndexMap::Kind::Gather,
                    activation_physical(dims, c0), std::move(logical), std::move(e), line);
}

IndexMap pack_weight(std::vector<dim_t> dims, dim_t c0) {
    check_rank("weights", dims);
    const Layout l = weight_layout(dims, c0);
    Shape phys = weight_physical(dims, c0);
    const std::span<const dim_t> ks(dims.data() + 2, dims.size() - 2);
    // dst(row, n1, n0, c0) <- src(o, i, taps...), row = ((kd*C1 + c1)*KH + kh)*KW + kw,
    // o = n1*N0 + n0, i = c1*C0 + c0; zero unless o < O and i < I.
    MapExpr e(phys.names);
    T c1;
    std::vector<T> taps;
    split_row(e, e.var(0), blocks_of(dims[1], c0), "c1", ks, spatial_names(ks.size(), "k"), c1,
              taps);
    const T o = e.let("o", e.var(1) * e.sym("N0", kN0) + e.var(2));
    const T i = e.let("i", c1 * e.sym("C0", c0) + e.var(3));
    e.require_below(o, e.sym("O", dims[0]));
    e.require_below(i, e.sym("I", dims[1]));
    std::vector<T> image{o, i};
    image.insert(image.end(), taps.begin(), taps.end());
    e.set_image(image);
    return IndexMap(lower(l.name()), IndexMap::Kind::Gather, logical_shape(dims, "o", "i", "k"),
                    std::move(phys), std::move(e), 3);
}

IndexMap unpack_weight(std::vector<dim_t> dims, dim_t c0) {
    check_rank("weights", dims);
    const Layout l = weight_layout(dims, c0);
    Shape logical = logical_shape(dims, "o", "i", "k");
    const std::span<const dim_t> ks(dims.data() + 2, dims.size() - 2);
    // dst(o, i, taps...) <- src(row(taps, i/C0), o/N0, o % N0, i % C0).
    MapExpr e(logical.names);
    const T C0 = e.sym("C0", c0), N0 = e.sym("N0", kN0);
    std::vector<T> taps;
    for (int a = 2; a < logical.rank(); ++a) taps.push_back(e.var(a));
    const T row = join_row(e, e.var(1) / C0, blocks_of(dims[1], c0), "c1", ks,
                           spatial_names(ks.size(), "k"), taps);
    e.set_image({row, e.var(0) / N0, e.var(0) % N0, e.var(1) % C0});
    const int line = logical.rank() - 1;
    return IndexMap("unpack_" + lower(l.name()), IndexMap::Kind::Gather, weight_physical(dims, c0),
                    std::move(logical), std::move(e), line);
}

// [SECTION] converters (direct formulas)

IndexMap tnc5d(std::vector<dim_t> dims, dim_t c0) {
    const ActGeom sg = ActGeom::of(dims, c0);
    const std::vector<dim_t> tdims = swap01(dims);
    // NC1HWC0 of the swapped tensor, its dims named by what they hold: the outer dim is the
    // channel, the blocked one the batch, (C, N1, H, W, N0) as docs/design.md writes TNC.
    Shape dst = activation_physical(tdims, c0);
    dst.names.front() = "c";
    std::replace(dst.names.begin(), dst.names.end(), std::string("c1"), std::string("n1"));
    dst.names.back() = "n0";
    const int rank = dst.rank();
    // dst(c, [d,] n1, [h,] w, n0) <- src(n, [d,] c/C0, [h,] w, c % C0), n = n1*C0 + n0 < N.
    MapExpr e(dst.names);
    const ActTerms t = act_terms(e, rank);  // t.n is the channel c, t.c1 and t.c0 the batch
    const T C0 = e.sym("C0", c0);
    const T n = e.let("n", t.c1 * C0 + t.c0);
    e.require_below(n, e.sym("N", sg.n));
    e.set_image(act_image(n, t.n / C0, t.sp, t.n % C0));
    return IndexMap("tnc5d", IndexMap::Kind::Gather, activation_physical(dims, c0), dst,
                    std::move(e), rank - 1);
}

IndexMap tncf(std::vector<dim_t> dims, dim_t c0) {
    const ActGeom sg = ActGeom::of(dims, c0);
    const std::vector<dim_t> wdims = swap01(dims);
    const WeiGeom wg = WeiGeom::of(wdims, c0);
    const Shape dst = weight_physical(wdims, c0);
    const std::span<const dim_t> sp(dims.data() + 2, dims.size() - 2);
    // dst(row, nb, ni, ai) <- src(a, [d,] b/C0, [h,] w, b % C0) with row = ((d*A1 + a1)*H + h)*W
    // + w, b = nb*N0 + ni < B, a = a1*C0 + ai < A.
    MapExpr e(dst.names);
    T a1;
    std::vector<T> pos;
    split_row(e, e.var(0), wg.i1, "a1", sp, spatial_names(sp.size()), a1, pos);
    const T C0 = e.sym("C0", c0);
    const T b = e.let("b", e.var(1) * e.sym("N0", kN0) + e.var(2));
    const T a = e.let("a", a1 * C0 + e.var(3));
    e.require_below(b, e.sym("B", sg.c));
    e.require_below(a, e.sym("A", sg.n));
    e.set_image(act_image(a, b / C0, pos, b % C0));
    return IndexMap("tncf", IndexMap::Kind::Gather, activation_physical(dims, c0), dst,
                    std::move(e), 3);
}

namespace {

std::vector<dim_t> fliprot_dims(const Problem& p) {
    std::vector<dim_t> d{p.ic, p.ocg()};
    for (int i = 0; i < p.ndims; ++i) d.push_back(p.kernel[i]);
    return d;
}

}  // namespace

IndexMap fliprot_fz(const Problem& p, dim_t c0) {
    const std::vector<dim_t> sdims = p.wei_dims(), ddims = fliprot_dims(p);
    const WeiGeom sg = WeiGeom::of(sdims, c0), dg = WeiGeom::of(ddims, c0);
    const Shape dst = weight_physical(ddims, c0);
    const std::span<const dim_t> ks(p.kernel.data(), static_cast<std::size_t>(p.ndims));
    const std::vector<std::string> tap_names = spatial_names(ks.size(), "k");
    // dst(row(taps, kc1), nb, ni, ci): c = nb*N0 + ni < C, kc = kc1*C0 + ci < KG; g = c/CG,
    // cc = c % CG, o = g*KG + kc; src(row(K-1-taps, cc/C0), o/N0, o % N0, cc % C0).
    MapExpr e(dst.names);
    T kc1;
    std::vector<T> taps;
    split_row(e, e.var(0), dg.i1, "kc1", ks, tap_names, kc1, taps);
    const T C0 = e.sym("C0", c0), N0 = e.sym("N0", kN0);
    const T c = e.let("c", e.var(1) * N0 + e.var(2));
    const T kc = e.let("kc", kc1 * C0 + e.var(3));
    e.require_below(c, e.sym("C", dg.o));
    e.require_below(kc, e.sym("KG", p.ocg()));
    const T CG = e.sym("CG", p.icg());
    const T g = e.let("g", c / CG), cc = e.let("cc", c % CG);
    const T o = e.let("o", g * e.sym("KG", p.ocg()) + kc);
    std::vector<T> flipped;
    for (std::size_t i = 0; i < ks.size(); ++i)
        flipped.push_back(e.sym(upper(tap_names[i]), ks[i]) - 1 - taps[i]);
    const T row = join_row(e, cc / C0, sg.i1, "c1", ks, tap_names, flipped);
    e.set_image({row, o / N0, o % N0, cc % C0});
    return IndexMap("fliprot_fz", IndexMap::Kind::Gather, weight_physical(sdims, c0), dst,
                    std::move(e), 3);
}

IndexMap fliprot_fz_composed(const Problem& p, dim_t c0) {
    const IndexMap mid = compose(maps::flip_rot(p), unpack_weight(p.wei_dims(), c0), "flip_rot");
    return compose(pack_weight(fliprot_dims(p), c0), mid, "fliprot_fz_composed");
}

IndexMap strided5d(const Problem& p, dim_t c0) {
    const std::vector<dim_t> ydims = p.dst_dims();
    std::vector<dim_t> zdims{p.mb, p.oc};
    for (int i = 0; i < p.ndims; ++i) zdims.push_back((p.out(i) - 1) * p.stride[i] + 1);
    const ActGeom sg = ActGeom::of(ydims, c0);
    const Shape dst = activation_physical(zdims, c0);
    const int rank = dst.rank();
    // dst(n, [d,] k1, [h,] w, k0) <- src(n, [d/SD,] k1, [h/SH,] w/SW, k0), zero unless
    // k = k1*C0 + k0 < K and every stride divides its position.
    MapExpr e(dst.names);
    const ActTerms t = act_terms(e, rank);
    e.require_below(e.let("k", t.c1 * e.sym("C0", c0) + t.c0), e.sym("K", sg.c));
    const auto names = spatial_names(t.sp.size());
    std::vector<T> sp;
    for (std::size_t i = 0; i < t.sp.size(); ++i) {
        const T st = e.sym("S" + upper(names[i]), p.stride[i]);
        e.require_divisible(t.sp[i], st);
        sp.push_back(t.sp[i] / st);
    }
    e.set_image(act_image(t.n, t.c1, sp, t.c0));
    return IndexMap("strided5d", IndexMap::Kind::Gather, activation_physical(ydims, c0), dst,
                    std::move(e), rank - 1);
}

namespace {

std::vector<dim_t> padded_dims(std::span<const dim_t> dims, std::span<const dim_t> pb,
                               std::span<const dim_t> pe) {
    check_rank("activations", dims);
    const std::size_t ns = dims.size() - 2;
    if (pb.size() < ns || pe.size() < ns) throw Error("pad5d: one pad per spatial axis");
    std::vector<dim_t> out(dims.begin(), dims.end());
    for (std::size_t i = 0; i < ns; ++i) {
        out[2 + i] = dims[2 + i] + pb[i] + pe[i];
        if (out[2 + i] < 1) throw Error("pad5d: a spatial axis would be cropped to nothing");
    }
    return out;
}

}  // namespace

IndexMap pad5d(std::vector<dim_t> dims, std::span<const dim_t> pad_begin,
               std::span<const dim_t> pad_end, dim_t c0) {
    const std::vector<dim_t> pdims = padded_dims(dims, pad_begin, pad_end);
    const ActGeom sg = ActGeom::of(dims, c0);
    const Shape dst = activation_physical(pdims, c0);
    const int rank = dst.rank();
    // dst(n, [d,] c1, [h,] w, c0) <- src(n, [d - PD,] c1, [h - PH,] w - PW, c0), zero unless
    // c = c1*C0 + c0 < C and every position is inside the source.
    MapExpr e(dst.names);
    const ActTerms t = act_terms(e, rank);
    e.require_below(e.let("c", t.c1 * e.sym("C0", c0) + t.c0), e.sym("C", sg.c));
    const std::size_t ns = t.sp.size();
    const auto names = spatial_names(ns);
    std::vector<T> sp;
    for (std::size_t i = 0; i < ns; ++i) {
        const std::string A = upper(names[i]);
        const T x = t.sp[i] - e.sym("P" + A, pad_begin[i]);
        e.require_range(x, e.num(0), e.sym(A, dims[2 + i]));
        sp.push_back(x);
    }
    e.set_image(act_image(t.n, t.c1, sp, t.c0));
    return IndexMap("pad5d", IndexMap::Kind::Gather, activation_physical(dims, c0), dst,
                    std::move(e), rank - 1);
}

namespace {

std::vector<dim_t> group_src_dims(const Problem& p) {
    std::vector<dim_t> d{p.mb, p.icg()};
    for (int i = 0; i < p.ndims; ++i) d.push_back(p.in[i]);
    return d;
}

}  // namespace

IndexMap im2col_fractal(const Problem& p, dim_t c0) {
    p.check(true);
    const std::vector<dim_t> xdims = group_src_dims(p);
    const ActGeom sg = ActGeom::of(xdims, c0);
    const detail::Geom3 g = detail::geom3(p);
    const dim_t rows = g.k[0] * sg.c1 * g.k[1] * g.k[2], m = g.out_size();
    const Shape dst{{p.mb, rows, blocks_of(m, kN0), kN0, c0}, {"n", "k1", "m1", "m0", "c0"}};
    // dst(n, row, m1, m0, c0): m = m1*M0 + m0 < M the output position, row = ((kd*C1 + c1)*KH +
    // kh)*KW + kw the tap and channel block, c = c1*C0 + c0 < C; per axis i = o*S - P + k*D
    // inside the input, else zero; src(n, [id,] c1, [ih,] iw, c0).
    MapExpr e(dst.names);
    const auto ns = static_cast<std::size_t>(p.ndims);
    const std::span<const dim_t> ks(p.kernel.data(), ns);
    T c1;
    std::vector<T> k;
    split_row(e, e.var(1), sg.c1, "c1", ks, spatial_names(ns, "k"), c1, k);
    T mm = e.let("m", e.var(2) * e.sym("M0", kN0) + e.var(3));
    e.require_below(mm, e.sym("M", m));
    e.require_below(e.let("c", c1 * e.sym("C0", c0) + e.var(4)), e.sym("C", sg.c));
    std::vector<T> o(ns, mm), pos;
    for (std::size_t i = ns; i-- > 0;) {
        const int ax = static_cast<int>(i);
        const std::string a = p.axis_name(ax), A = upper(a);
        o[i] = i == 0 ? e.let("o" + a, mm) : e.let("o" + a, mm % e.sym("O" + A, p.out(ax)));
        mm = mm / e.sym("O" + A, p.out(ax));
    }
    for (std::size_t i = 0; i < ns; ++i) {
        const int ax = static_cast<int>(i);
        const std::string a = p.axis_name(ax), A = upper(a);
        const T x =
            e.let("i" + a, o[i] * e.sym("S" + A, p.stride[ax]) - e.sym("P" + A, p.pad_begin[ax]) +
                               k[i] * e.sym("D" + A, p.dilation[ax]));
        e.require_range(x, e.num(0), e.sym("I" + A, p.in[ax]));
        pos.push_back(x);
    }
    e.set_image(act_image(e.var(0), c1, pos, e.var(4)));
    return IndexMap("im2col_fractal", IndexMap::Kind::Gather, activation_physical(xdims, c0), dst,
                    std::move(e), 4);
}

std::vector<std::string> map_names() {
    return map_registry_names("davinci");
}

BackwardDataPads backward_data_pads(const Problem& p) {
    BackwardDataPads b;
    b.zdims = {p.mb, p.oc};
    for (int i = 0; i < p.ndims; ++i) {
        b.zdims.push_back((p.out(i) - 1) * p.stride[i] + 1);
        const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
        b.begin.push_back(span - p.pad_begin[i]);
        b.end.push_back(span - p.pad_end[i] + p.leftover(i));  // the leftover rows r
    }
    return b;
}

namespace {

// FRACTAL_NZ of the weights seen as the forward GEMM's left matrix: M = K output channels rows
// by C/G * k... columns (the row-major bytes of OIHW), into M1 x K1 fractals of M0 = 16 rows by
// C0 columns stored (K1, M1, M0, C0): dst(k1, m1, m0, c0) <- src(m, k) with m = m1*M0 + m0 < M,
// k = k1*C0 + c0 < K, else a padding zero (docs/design.md, FRACTAL_NZ).
IndexMap fractal_nz_map(const Problem& p, dim_t c0) {
    const dim_t rows = p.oc, cols = p.icg() * p.kernel_spatial();
    Shape dst = fractal_nz_physical(rows, cols, c0);
    MapExpr e(dst.names);
    const T m = e.let("m", e.var(1) * e.sym("M0", kN0) + e.var(2));
    const T k = e.let("k", e.var(0) * e.sym("C0", c0) + e.var(3));
    e.require_below(m, e.sym("M", rows));
    e.require_below(k, e.sym("K", cols));
    e.set_image({m, k});
    return IndexMap("fractal_nz", IndexMap::Kind::Gather, Shape{{rows, cols}, {"m", "k"}},
                    std::move(dst), std::move(e), 3);
}

}  // namespace

std::vector<MapEntry> registry_entries() {
    using Kernel = std::function<void(const Problem&, dim_t, const float*, float*)>;
    const auto entry = [](const char* name, const char* summary,
                          std::function<IndexMap(const Problem&, dim_t)> build, Kernel kernel,
                          const char* src, const char* dst) {
        MapEntry e;
        e.name = name;
        e.family = "davinci";
        e.params = {"c0"};
        e.summary = summary;
        e.build = std::move(build);
        e.kernel = std::move(kernel);
        e.src_role = src;
        e.dst_role = dst;
        return e;
    };
    // FRACTAL_Z and FRACTAL_Z_3D are one map under two names, each refusing the other's rank.
    const auto weight_format = [](bool three_d) {
        return [three_d](const Problem& p, dim_t c0) {
            if (!three_d && p.ndims == 3)
                throw Error("map fractal_z: the problem is 3-D; use fractal_z_3d");
            if (three_d && p.ndims != 3)
                throw Error("map fractal_z_3d: the problem is " + std::to_string(p.ndims) +
                            "-D; use fractal_z");
            return pack_weight(p.wei_dims(), c0);
        };
    };
    const Kernel pack_wei = [](const Problem& p, dim_t c0, const float* s, float* d) {
        pack_weight_kernel(p.wei_dims(), c0, s, d);
    };
    std::vector<MapEntry> v;
    v.push_back(entry(
        "nc1hwc0", "activations NCHW to NC1HWC0 (NDC1HWC0 for 3-D)",
        [](const Problem& p, dim_t c0) { return pack_activation(p.src_dims(), c0); },
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            pack_activation_kernel(p.src_dims(), c0, s, d);
        },
        "src", "src_nc1hwc0"));
    v.back().aliases = {"ndc1hwc0"};
    v.push_back(entry(
        "unpack_nc1hwc0", "NC1HWC0 back to NCHW",
        [](const Problem& p, dim_t c0) { return unpack_activation(p.src_dims(), c0); },
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            unpack_activation_kernel(p.src_dims(), c0, s, d);
        },
        "src_nc1hwc0", "src"));
    v.back().aliases = {"unpack_ndc1hwc0"};
    v.push_back(entry("fractal_z", "weights OIHW to FRACTAL_Z", weight_format(false), pack_wei,
                      "wei", "wei_fractal_z"));
    v.push_back(entry("fractal_z_3d", "weights OIDHW to FRACTAL_Z_3D", weight_format(true),
                      pack_wei, "wei", "wei_fractal_z"));
    v.push_back(entry(
        "unpack_fractal_z", "FRACTAL_Z back to OIHW",
        [](const Problem& p, dim_t c0) { return unpack_weight(p.wei_dims(), c0); },
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            unpack_weight_kernel(p.wei_dims(), c0, s, d);
        },
        "wei_fractal_z", "wei"));
    v.push_back(entry(
        "tnc5d", "NC1HWC0 activations with N and C swapped",
        [](const Problem& p, dim_t c0) { return tnc5d(p.src_dims(), c0); },
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            tnc5d_kernel(p.src_dims(), c0, s, d);
        },
        "src_nc1hwc0", ""));
    v.push_back(entry(
        "tncf", "NC1HWC0 dY straight into the FRACTAL_Z of the weight-gradient kernel",
        [](const Problem& p, dim_t c0) { return tncf(p.dst_dims(), c0); },
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            tncf_kernel(p.dst_dims(), c0, s, d);
        },
        "diff_dst_nc1hwc0", ""));
    v.push_back(entry(
        "fliprot_fz", "FlipRot on FRACTAL_Z", fliprot_fz,
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            fliprot_fz_kernel(p, c0, s, d);
        },
        "wei_fractal_z", ""));
    v.push_back(entry(
        "strided5d", "zero insertion of NC1HWC0 dY", strided5d,
        [](const Problem& p, dim_t c0, const float* s, float* d) { strided5d_kernel(p, c0, s, d); },
        "diff_dst_nc1hwc0", ""));
    v.push_back(entry(
        "pad5d", "backward data's pad (or crop) of the zero-inserted NC1HWC0 dY",
        [](const Problem& p, dim_t c0) {
            const BackwardDataPads b = backward_data_pads(p);
            return pad5d(b.zdims, b.begin, b.end, c0);
        },
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            const BackwardDataPads b = backward_data_pads(p);
            pad5d_kernel(b.zdims, b.begin, b.end, c0, s, d);
        },
        "", ""));
    v.push_back(entry(
        "im2col_fractal", "NC1HWC0 activations to the fractal column matrix of one group",
        im2col_fractal,
        [](const Problem& p, dim_t c0, const float* s, float* d) {
            const IndexMap m = im2col_fractal(p, c0);
            const dim_t per_image = m.dst().numel() / p.mb;
            for (dim_t n = 0; n < p.mb; ++n) im2col_fractal_kernel(p, c0, s, n, d + n * per_image);
        },
        "src_nc1hwc0", ""));
    v.push_back(entry("fractal_nz", "weights as the GEMM matrix (K x C/G*k...) to FRACTAL_NZ",
                      fractal_nz_map, nullptr, "wei", "wei_fractal_nz"));
    return v;
}

IndexMap by_name(std::string_view name, const Problem& p, dim_t c0) {
    p.check();
    const MapEntry* e = find_map(name);
    if (e && e->family == "davinci") return e->build(p, c0);
    std::string known;
    for (auto& n : map_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("map '" + std::string(name) + "': unknown; known DaVinci maps: " + known);
}

// [SECTION] fast kernels

// pack / unpack of activations: a plane (n, d, c1) moves C0 channel rows of H*W positions to
// H*W position rows of C0 lanes, a block of kPosBlock positions at a time through a tile in L1,
// so that the NCHW side is read (written) in runs of kPosBlock floats and the NC1HWC0 side in
// whole rows of C0 lanes.
constexpr dim_t kPosBlock = 64;

void pack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                            dim_t src_channels, dim_t c_begin) {
    const ActGeom g = ActGeom::of(dims, c0);
    const dim_t ct = src_channels < 0 ? g.c : src_channels, hw = g.h * g.w;
    const dim_t planes = g.n * g.d * g.c1, blocks = blocks_of(hw, kPosBlock);
#pragma omp parallel for collapse(2) schedule(static) if (planes * hw * c0 > 65536)
    for (dim_t t = 0; t < planes; ++t)
        for (dim_t blk = 0; blk < blocks; ++blk) {
            const dim_t n = t / (g.d * g.c1), d = t / g.c1 % g.d, c1 = t % g.c1;
            const dim_t i0 = blk * kPosBlock, len = std::min(kPosBlock, hw - i0);
            const dim_t valid = std::min(c0, g.c - c1 * c0);
            float tile[64 * kPosBlock];  // tile[ci*kPosBlock + i]
            for (dim_t ci = 0; ci < valid; ++ci)
                std::memcpy(tile + ci * kPosBlock,
                            src + ((n * ct + c_begin + c1 * c0 + ci) * g.d + d) * hw + i0,
                            static_cast<std::size_t>(len) * sizeof(float));
            float* out = dst + (t * hw + i0) * c0;
            for (dim_t i = 0; i < len; ++i) {
                for (dim_t ci = 0; ci < valid; ++ci) out[i * c0 + ci] = tile[ci * kPosBlock + i];
                std::fill(out + i * c0 + valid, out + (i + 1) * c0, 0.0f);
            }
        }
}

void unpack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                              dim_t dst_channels, dim_t c_begin) {
    const ActGeom g = ActGeom::of(dims, c0);
    const dim_t ct = dst_channels < 0 ? g.c : dst_channels, hw = g.h * g.w;
    const dim_t planes = g.n * g.d * g.c1, blocks = blocks_of(hw, kPosBlock);
#pragma omp parallel for collapse(2) schedule(static) if (planes * hw * c0 > 65536)
    for (dim_t t = 0; t < planes; ++t)
        for (dim_t blk = 0; blk < blocks; ++blk) {
            const dim_t n = t / (g.d * g.c1), d = t / g.c1 % g.d, c1 = t % g.c1;
            const dim_t i0 = blk * kPosBlock, len = std::min(kPosBlock, hw - i0);
            const dim_t valid = std::min(c0, g.c - c1 * c0);
            float tile[64 * kPosBlock];  // tile[ci*kPosBlock + i]
            const float* in = src + (t * hw + i0) * c0;
            for (dim_t i = 0; i < len; ++i)
                for (dim_t ci = 0; ci < valid; ++ci) tile[ci * kPosBlock + i] = in[i * c0 + ci];
            for (dim_t ci = 0; ci < valid; ++ci)
                std::memcpy(dst + ((n * ct + c_begin + c1 * c0 + ci) * g.d + d) * hw + i0,
                            tile + ci * kPosBlock, static_cast<std::size_t>(len) * sizeof(float));
        }
}

void pack_weight_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const WeiGeom g = WeiGeom::of(dims, c0);
    const dim_t taps = g.taps(), outs = g.n1 * kN0;
    // One output channel o and one input-channel block at a time: the source block (C0 channels
    // x taps) is contiguous; each tap writes C0 contiguous lanes of its fractal row.
#pragma omp parallel for schedule(static) if (g.size() > 65536)
    for (dim_t o = 0; o < outs; ++o)
        for (dim_t c1 = 0; c1 < g.i1; ++c1) {
            const dim_t valid = o < g.o ? std::min(c0, g.i - c1 * c0) : 0;
            const float* in = src + (o * g.i + c1 * c0) * taps;
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh)
                    for (dim_t kw = 0; kw < g.w; ++kw) {
                        const dim_t tap = (kd * g.h + kh) * g.w + kw;
                        float* out = dst + g.offset(g.row(kd, c1, kh, kw), o / kN0, o % kN0, 0);
                        for (dim_t ci = 0; ci < valid; ++ci) out[ci] = in[ci * taps + tap];
                        std::fill(out + valid, out + c0, 0.0f);
                    }
        }
}

void unpack_weight_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const WeiGeom g = WeiGeom::of(dims, c0);
    const dim_t taps = g.taps(), o1s = blocks_of(g.o, kN0);
    // One fractal column (input-channel block c1, output block o1) at a time: each tap's fractal
    // is 16 x C0 contiguous floats and the column's destination is 16 runs of C0 * taps floats,
    // so both sides move in cache-sized pieces. (Walking output channel by output channel read
    // one cache line per fractal row, rows 128 KB apart on ResNet-50's last stage: 2.7 ms for
    // res5a_branch1's weight gradient.)
#pragma omp parallel for collapse(2) schedule(static) if (g.o * g.i * taps > 65536)
    for (dim_t c1 = 0; c1 < g.i1; ++c1)
        for (dim_t o1 = 0; o1 < o1s; ++o1) {
            const dim_t valid = std::min(c0, g.i - c1 * c0), ov = std::min(kN0, g.o - o1 * kN0);
            float* out = dst + (o1 * kN0 * g.i + c1 * c0) * taps;
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh)
                    for (dim_t kw = 0; kw < g.w; ++kw) {
                        const dim_t tap = (kd * g.h + kh) * g.w + kw;
                        const float* in = src + g.offset(g.row(kd, c1, kh, kw), o1, 0, 0);
                        for (dim_t oi = 0; oi < ov; ++oi) {
                            float* o_row = out + oi * g.i * taps + tap;
                            const float* i_row = in + oi * c0;
                            for (dim_t ci = 0; ci < valid; ++ci) o_row[ci * taps] = i_row[ci];
                        }
                    }
        }
}

// tnc5d, tncf and fliprot_fz each move C0 x C0 blocks whose rows are contiguous on one side and
// columns on the other: a block is read a contiguous row at a time into a small tile (L1), then
// written a contiguous row at a time, so that neither side is walked one element per cache line.

void tnc5d_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const ActGeom sg = ActGeom::of(dims, c0);
    const std::vector<dim_t> tdims = swap01(dims);
    const ActGeom dg = ActGeom::of(tdims, c0);
    const dim_t hw = sg.h * sg.w;
    const dim_t n_stride = sg.d * sg.c1 * hw * c0;  // source: the next image
    const dim_t c_stride = dg.d * dg.c1 * hw * c0;  // destination: the next channel
    // A unit: batch block n1 and channel block cb at depth d, a C0 x C0 block per position.
#pragma omp parallel for collapse(3) schedule(static) if (dg.size() > 65536)
    for (dim_t d = 0; d < sg.d; ++d)
        for (dim_t n1 = 0; n1 < dg.c1; ++n1)
            for (dim_t cb = 0; cb < sg.c1; ++cb) {
                const dim_t nv = std::min(c0, sg.n - n1 * c0), cv = std::min(c0, sg.c - cb * c0);
                const float* in = src + sg.offset(n1 * c0, d, cb, 0, 0, 0);
                float* out = dst + dg.offset(cb * c0, d, n1, 0, 0, 0);
                float tile[64 * 64];  // tile[ci*C0 + ni]; lanes ni >= nv stay zero
                std::fill(tile, tile + c0 * c0, 0.0f);
                for (dim_t i = 0; i < hw; ++i) {
                    for (dim_t ni = 0; ni < nv; ++ni) {
                        const float* row = in + ni * n_stride + i * c0;
                        for (dim_t ci = 0; ci < cv; ++ci) tile[ci * c0 + ni] = row[ci];
                    }
                    for (dim_t ci = 0; ci < cv; ++ci)
                        std::memcpy(out + ci * c_stride + i * c0, tile + ci * c0,
                                    static_cast<std::size_t>(c0) * sizeof(float));
                }
            }
}

void tncf_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst, dim_t dst_b,
                 dim_t b_begin) {
    const ActGeom sg = ActGeom::of(dims, c0);
    std::vector<dim_t> wdims = swap01(dims);
    const bool slice = dst_b >= 0;
    if (slice) wdims[0] = dst_b;
    const WeiGeom wg = WeiGeom::of(wdims, c0);
    const dim_t rows = wg.rows();
    const dim_t b_lo = slice ? b_begin : 0, b_hi = slice ? b_begin + sg.c : wg.n1 * kN0;
    const dim_t a_stride = sg.d * sg.c1 * sg.h * sg.w * c0;  // source stride of the batch index
#pragma omp parallel for schedule(static) if (wg.size() > 65536)
    for (dim_t r = 0; r < rows; ++r) {
        const Row4 q = unrow(wg, r);
        float* out = dst + wg.offset(r, 0, 0, 0);
        const dim_t valid = std::min(c0, sg.n - q.c1 * c0);  // lanes a < A
        float tile[64 * 64];  // tile[bi*C0 + ai]; lanes ai >= valid stay zero
        std::fill(tile, tile + c0 * c0, 0.0f);
        // Source channel block bc: rows a (valid of them, a_stride apart) of bv contiguous
        // channels b, into the destination rows b_lo + b (C0 lanes a each).
        for (dim_t bc = 0; bc < sg.c1; ++bc) {
            const dim_t bv = std::min(c0, sg.c - bc * c0);
            const float* in = src + sg.offset(q.c1 * c0, q.kd, bc, q.kh, q.kw, 0);
            for (dim_t ai = 0; ai < valid; ++ai)
                for (dim_t bi = 0; bi < bv; ++bi) tile[bi * c0 + ai] = in[ai * a_stride + bi];
            std::memcpy(out + (b_lo + bc * c0) * c0, tile,
                        static_cast<std::size_t>(bv * c0) * sizeof(float));
        }
        std::fill(out + (b_lo + sg.c) * c0, out + b_hi * c0, 0.0f);  // channels b >= B
    }
}

void fliprot_fz_kernel(const Problem& p, dim_t c0, const float* src, float* dst) {
    const std::vector<dim_t> sdims = p.wei_dims(), ddims = fliprot_dims(p);
    const WeiGeom sg = WeiGeom::of(sdims, c0), dg = WeiGeom::of(ddims, c0);
    const dim_t cg = p.icg(), kg = p.ocg(), rows = dg.rows();
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t r = 0; r < rows; ++r) {
        const Row4 q = unrow(dg, r);
        float* out = dst + dg.offset(r, 0, 0, 0);
        const dim_t valid = std::min(c0, kg - q.c1 * c0);  // lanes kc < K/G
        if (valid <= 0) {
            std::fill(out, out + dg.n1 * kN0 * c0, 0.0f);
            continue;
        }
        float tile[64 * 64];  // tile[t*C0 + ci]; lanes ci >= valid stay zero
        std::fill(tile, tile + c0 * c0, 0.0f);
        // A run of destination rows c = c_0 + t of one group g and one source lane block
        // cc/C0: the source rows o = g*K/G + kc1*C0 + ci (C0 apart, contiguous in the lanes
        // x = cc%C0 + t) of the flipped tap's fractal row.
        for (dim_t c = 0; c < dg.o;) {
            const dim_t g = c / cg, cc = c % cg, x0 = cc % c0;
            const dim_t len = std::min({c0 - x0, cg - cc, dg.o - c});
            const dim_t row = sg.row(sg.d - 1 - q.kd, cc / c0, sg.h - 1 - q.kh, sg.w - 1 - q.kw);
            const float* in = src + sg.offset(row, 0, 0, 0) + (g * kg + q.c1 * c0) * c0 + x0;
            for (dim_t ci = 0; ci < valid; ++ci)
                for (dim_t t = 0; t < len; ++t) tile[t * c0 + ci] = in[ci * c0 + t];
            std::memcpy(out + c * c0, tile, static_cast<std::size_t>(len * c0) * sizeof(float));
            c += len;
        }
        std::fill(out + dg.o * c0, out + dg.n1 * kN0 * c0, 0.0f);  // rows c >= C
    }
}

namespace {

// Copies the first `valid` lanes of a C0 vector and zeroes the rest.
inline void copy_lanes(const float* in, float* out, dim_t valid, dim_t c0) {
    std::memcpy(out, in, static_cast<std::size_t>(valid) * sizeof(float));
    std::fill(out + valid, out + c0, 0.0f);
}

}  // namespace

void strided5d_kernel(const Problem& p, dim_t c0, const float* src, float* dst) {
    const std::vector<dim_t> ydims = p.dst_dims();
    std::vector<dim_t> zdims{p.mb, p.oc};
    for (int i = 0; i < p.ndims; ++i) zdims.push_back((p.out(i) - 1) * p.stride[i] + 1);
    const ActGeom sg = ActGeom::of(ydims, c0), dg = ActGeom::of(zdims, c0);
    const auto s = axes3(p.stride, p.ndims, 1);
    const dim_t planes = dg.n * dg.d * dg.c1, line = dg.w * c0;
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t n = t / (dg.d * dg.c1), d = t / dg.c1 % dg.d, c1 = t % dg.c1;
        const dim_t valid = std::min(c0, sg.c - c1 * c0);
        for (dim_t h = 0; h < dg.h; ++h) {
            float* out = dst + dg.offset(n, d, c1, h, 0, 0);
            if (d % s[0] || h % s[1]) {
                std::fill(out, out + line, 0.0f);
                continue;
            }
            const float* in = src + sg.offset(n, d / s[0], c1, h / s[1], 0, 0);
            for (dim_t w = 0; w < dg.w; ++w) {
                if (w % s[2])
                    std::fill(out + w * c0, out + (w + 1) * c0, 0.0f);
                else
                    copy_lanes(in + w / s[2] * c0, out + w * c0, valid, c0);
            }
        }
    }
}

void pad5d_kernel(std::span<const dim_t> dims, std::span<const dim_t> pad_begin,
                  std::span<const dim_t> pad_end, dim_t c0, const float* src, float* dst) {
    const std::vector<dim_t> pdims = padded_dims(dims, pad_begin, pad_end);
    const ActGeom sg = ActGeom::of(dims, c0), dg = ActGeom::of(pdims, c0);
    const auto pb = axes3(pad_begin, dims.size() - 2, 0);
    const dim_t planes = dg.n * dg.d * dg.c1, line = dg.w * c0;
    dim_t w_lo, w_hi;  // destination w that read the source
    detail::valid_range(-pb[2], 1, sg.w, dg.w, w_lo, w_hi);
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t n = t / (dg.d * dg.c1), d = t / dg.c1 % dg.d, c1 = t % dg.c1;
        const dim_t valid = std::min(c0, sg.c - c1 * c0), sd = d - pb[0];
        for (dim_t h = 0; h < dg.h; ++h) {
            float* out = dst + dg.offset(n, d, c1, h, 0, 0);
            const dim_t sh = h - pb[1];
            if (sd < 0 || sd >= sg.d || sh < 0 || sh >= sg.h) {
                std::fill(out, out + line, 0.0f);
                continue;
            }
            const float* in = src + sg.offset(n, sd, c1, sh, 0, 0);
            std::fill(out, out + w_lo * c0, 0.0f);
            for (dim_t w = w_lo; w < w_hi; ++w)
                copy_lanes(in + (w - pb[2]) * c0, out + w * c0, valid, c0);
            std::fill(out + w_hi * c0, out + line, 0.0f);
        }
    }
}

void im2col_fractal_kernel(const Problem& p, dim_t c0, const float* src, dim_t n, float* dst,
                           dim_t m1_begin, dim_t m1_end) {
    const std::vector<dim_t> xdims = group_src_dims(p);
    const ActGeom sg = ActGeom::of(xdims, c0);
    const detail::Geom3 g = detail::geom3(p);
    const dim_t rows = g.k[0] * sg.c1 * g.k[1] * g.k[2], m = g.out_size();
    if (m1_end < 0) m1_end = blocks_of(m, kN0);
    const dim_t m_begin = m1_begin * kN0, m_end = std::min(m1_end * kN0, m);
    const dim_t chunk = (m1_end - m1_begin) * kN0;  // rows of the destination block column
#pragma omp parallel for schedule(static) if (rows * chunk * c0 > 65536)
    for (dim_t r = 0; r < rows; ++r) {
        dim_t q = r;
        const dim_t kw = q % g.k[2];
        q /= g.k[2];
        const dim_t kh = q % g.k[1];
        q /= g.k[1];
        const dim_t c1 = q % sg.c1, kd = q / sg.c1;
        const dim_t valid = std::min(c0, sg.c - c1 * c0);
        float* out = dst + r * chunk * c0;
        const dim_t off_d = kd * g.d[0] - g.pb[0], off_h = kh * g.d[1] - g.pb[1],
                    off_w = kw * g.d[2] - g.pb[2];
        dim_t w_lo, w_hi;
        detail::valid_range(off_w, g.s[2], g.in[2], g.out[2], w_lo, w_hi);
        // Walk the output positions of the range a line (fixed od, oh) at a time.
        for (dim_t mm = m_begin; mm < m_end;) {
            const dim_t ow0 = mm % g.out[2], t = mm / g.out[2];
            const dim_t oh = t % g.out[1], od = t / g.out[1];
            const dim_t len = std::min(g.out[2] - ow0, m_end - mm);
            float* seg = out + (mm - m_begin) * c0;  // position ow is seg[(ow - ow0) * c0]
            const dim_t id = od * g.s[0] + off_d, ih = oh * g.s[1] + off_h;
            const dim_t lo = std::clamp(w_lo, ow0, ow0 + len), hi = std::clamp(w_hi, lo, ow0 + len);
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
                std::fill(seg, seg + len * c0, 0.0f);
            } else {
                const float* in = src + sg.offset(n, id, c1, ih, 0, 0);
                std::fill(seg, seg + (lo - ow0) * c0, 0.0f);
                for (dim_t ow = lo; ow < hi; ++ow)
                    copy_lanes(in + (ow * g.s[2] + off_w) * c0, seg + (ow - ow0) * c0, valid, c0);
                std::fill(seg + (hi - ow0) * c0, seg + len * c0, 0.0f);
            }
            mm += len;
        }
        std::fill(out + (m_end - m_begin) * c0, out + chunk * c0, 0.0f);
    }
}

}  // namespace convlab::davinci
