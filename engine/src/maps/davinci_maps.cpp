// The DaVinci converters as index maps (defined once; the app animates these values) and their
// fast kernels, which compute exactly what the generic executor computes (tests/test_davinci.cpp
// checks every element). Formulas: davinci.hpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "convlab/davinci.hpp"
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

// (n, d, c1, h, w, ci) of a physical activation coordinate of rank 4, 5 or 6.
struct A6 {
    dim_t n, d, c1, h, w, ci;
};
A6 act_coord(int phys_rank, const dim_t* c) {
    if (phys_rank == 6) return {c[0], c[1], c[2], c[3], c[4], c[5]};
    if (phys_rank == 5) return {c[0], 0, c[1], c[2], c[3], c[4]};
    return {c[0], 0, c[1], 0, c[2], c[3]};
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

IndexMap pack_activation(std::vector<dim_t> dims, dim_t c0) {
    check_rank("activations", dims);
    const Layout l = activation_layout(dims, c0);
    return blocked_pack(l, logical_shape(dims, "n", "c", ""), activation_physical(dims, c0),
                        lower(l.name()));
}

IndexMap unpack_activation(std::vector<dim_t> dims, dim_t c0) {
    check_rank("activations", dims);
    const Layout l = activation_layout(dims, c0);
    return blocked_unpack(l, logical_shape(dims, "n", "c", ""), activation_physical(dims, c0),
                          "unpack_" + lower(l.name()));
}

IndexMap pack_weight(std::vector<dim_t> dims, dim_t c0) {
    check_rank("weights", dims);
    const Layout l = weight_layout(dims, c0);
    return blocked_pack(l, logical_shape(dims, "o", "i", "k"), weight_physical(dims, c0),
                        lower(l.name()));
}

IndexMap unpack_weight(std::vector<dim_t> dims, dim_t c0) {
    check_rank("weights", dims);
    const Layout l = weight_layout(dims, c0);
    return blocked_unpack(l, logical_shape(dims, "o", "i", "k"), weight_physical(dims, c0),
                          "unpack_" + lower(l.name()));
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
    auto fn = [sg, rank](const dim_t* pc) -> dim_t {
        const A6 a = act_coord(rank, pc);  // a.n is the channel c, a.c1/a.ci the batch block
        const dim_t n = a.c1 * sg.c0 + a.ci, c = a.n;
        if (n >= sg.n) return IndexMap::kZero;
        return sg.offset(n, a.d, c / sg.c0, a.h, a.w, c % sg.c0);
    };
    return IndexMap("tnc5d", IndexMap::Kind::Gather, activation_physical(dims, c0), dst, fn,
                    rank - 1);
}

IndexMap tncf(std::vector<dim_t> dims, dim_t c0) {
    const ActGeom sg = ActGeom::of(dims, c0);
    const std::vector<dim_t> wdims = swap01(dims);
    const WeiGeom wg = WeiGeom::of(wdims, c0);
    auto fn = [sg, wg](const dim_t* pc) -> dim_t {
        const Row4 r = unrow(wg, pc[0]);
        const dim_t b = pc[1] * kN0 + pc[2], a = r.c1 * wg.c0 + pc[3];
        if (b >= sg.c || a >= sg.n) return IndexMap::kZero;
        return sg.offset(a, r.kd, b / sg.c0, r.kh, r.kw, b % sg.c0);
    };
    return IndexMap("tncf", IndexMap::Kind::Gather, activation_physical(dims, c0),
                    weight_physical(wdims, c0), fn, 3);
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
    const dim_t cg = p.icg(), kg = p.ocg();
    auto fn = [sg, dg, cg, kg](const dim_t* pc) -> dim_t {
        const Row4 r = unrow(dg, pc[0]);
        const dim_t c = pc[1] * kN0 + pc[2], kc = r.c1 * dg.c0 + pc[3];
        if (c >= dg.o || kc >= kg) return IndexMap::kZero;
        const dim_t g = c / cg, cc = c % cg, o = g * kg + kc;
        // Reversing the flattened tap index reverses every kernel axis.
        const dim_t row = sg.row(sg.d - 1 - r.kd, cc / sg.c0, sg.h - 1 - r.kh, sg.w - 1 - r.kw);
        return sg.offset(row, o / kN0, o % kN0, cc % sg.c0);
    };
    return IndexMap("fliprot_fz", IndexMap::Kind::Gather, weight_physical(sdims, c0),
                    weight_physical(ddims, c0), fn, 3);
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
    const auto s = axes3(p.stride, p.ndims, 1);
    const Shape dst = activation_physical(zdims, c0);
    const int rank = dst.rank();
    auto fn = [sg, s, rank](const dim_t* pc) -> dim_t {
        const A6 a = act_coord(rank, pc);
        if (a.c1 * sg.c0 + a.ci >= sg.c) return IndexMap::kZero;
        if (a.d % s[0] || a.h % s[1] || a.w % s[2]) return IndexMap::kZero;
        return sg.offset(a.n, a.d / s[0], a.c1, a.h / s[1], a.w / s[2], a.ci);
    };
    return IndexMap("strided5d", IndexMap::Kind::Gather, activation_physical(ydims, c0), dst, fn,
                    rank - 1);
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
    const auto pb = axes3(pad_begin, dims.size() - 2, 0);
    const Shape dst = activation_physical(pdims, c0);
    const int rank = dst.rank();
    auto fn = [sg, pb, rank](const dim_t* pc) -> dim_t {
        const A6 a = act_coord(rank, pc);
        if (a.c1 * sg.c0 + a.ci >= sg.c) return IndexMap::kZero;
        const dim_t d = a.d - pb[0], h = a.h - pb[1], w = a.w - pb[2];
        if (d < 0 || d >= sg.d || h < 0 || h >= sg.h || w < 0 || w >= sg.w) return IndexMap::kZero;
        return sg.offset(a.n, d, a.c1, h, w, a.ci);
    };
    return IndexMap("pad5d", IndexMap::Kind::Gather, activation_physical(dims, c0), dst, fn,
                    rank - 1);
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
    auto fn = [sg, g, m](const dim_t* pc) -> dim_t {
        dim_t mm = pc[2] * kN0 + pc[3];
        if (mm >= m) return IndexMap::kZero;
        dim_t r = pc[1];
        const dim_t kw = r % g.k[2];
        r /= g.k[2];
        const dim_t kh = r % g.k[1];
        r /= g.k[1];
        const dim_t c1 = r % sg.c1, kd = r / sg.c1;
        if (c1 * sg.c0 + pc[4] >= sg.c) return IndexMap::kZero;
        const dim_t ow = mm % g.out[2];
        mm /= g.out[2];
        const dim_t oh = mm % g.out[1], od = mm / g.out[1];
        const dim_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
        const dim_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
        const dim_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2])
            return IndexMap::kZero;
        return sg.offset(pc[0], id, c1, ih, iw, pc[4]);
    };
    return IndexMap("im2col_fractal", IndexMap::Kind::Gather, activation_physical(xdims, c0), dst,
                    fn, 4);
}

std::vector<std::string> map_names() {
    return {"nc1hwc0", "unpack_nc1hwc0", "fractal_z", "fractal_z_3d", "unpack_fractal_z", "tnc5d",
            "tncf",    "fliprot_fz",     "strided5d", "pad5d",        "im2col_fractal"};
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

IndexMap by_name(std::string_view name, const Problem& p, dim_t c0) {
    p.check();
    if (name == "nc1hwc0" || name == "ndc1hwc0") return pack_activation(p.src_dims(), c0);
    if (name == "unpack_nc1hwc0" || name == "unpack_ndc1hwc0")
        return unpack_activation(p.src_dims(), c0);
    if (name == "fractal_z" || name == "fractal_z_3d" || name == "unpack_fractal_z") {
        if (name == "fractal_z" && p.ndims == 3)
            throw Error("map fractal_z: the problem is 3-D; use fractal_z_3d");
        if (name == "fractal_z_3d" && p.ndims != 3)
            throw Error("map fractal_z_3d: the problem is " + std::to_string(p.ndims) +
                        "-D; use fractal_z");
        return name == "unpack_fractal_z" ? unpack_weight(p.wei_dims(), c0)
                                          : pack_weight(p.wei_dims(), c0);
    }
    if (name == "tnc5d") return tnc5d(p.src_dims(), c0);
    if (name == "tncf") return tncf(p.dst_dims(), c0);
    if (name == "fliprot_fz") return fliprot_fz(p, c0);
    if (name == "strided5d") return strided5d(p, c0);
    if (name == "pad5d") {
        const BackwardDataPads b = backward_data_pads(p);
        return pad5d(b.zdims, b.begin, b.end, c0);
    }
    if (name == "im2col_fractal") return im2col_fractal(p, c0);
    std::string known;
    for (auto& n : map_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("map '" + std::string(name) + "': unknown; known DaVinci maps: " + known);
}

// [SECTION] fast kernels

void pack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                            dim_t src_channels, dim_t c_begin) {
    const ActGeom g = ActGeom::of(dims, c0);
    const dim_t ct = src_channels < 0 ? g.c : src_channels, hw = g.h * g.w;
    const dim_t planes = g.n * g.d * g.c1;
#pragma omp parallel for schedule(static) if (planes * hw * c0 > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t n = t / (g.d * g.c1), d = t / g.c1 % g.d, c1 = t % g.c1;
        float* out = dst + t * hw * c0;
        for (dim_t ci = 0; ci < c0; ++ci) {
            const dim_t c = c1 * c0 + ci;
            if (c >= g.c) {
                for (dim_t i = 0; i < hw; ++i) out[i * c0 + ci] = 0.0f;
                continue;
            }
            const float* in = src + ((n * ct + c_begin + c) * g.d + d) * hw;
            for (dim_t i = 0; i < hw; ++i) out[i * c0 + ci] = in[i];
        }
    }
}

void unpack_activation_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst,
                              dim_t dst_channels, dim_t c_begin) {
    const ActGeom g = ActGeom::of(dims, c0);
    const dim_t ct = dst_channels < 0 ? g.c : dst_channels, hw = g.h * g.w;
    const dim_t planes = g.n * g.d * g.c1;
#pragma omp parallel for schedule(static) if (planes * hw * c0 > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t n = t / (g.d * g.c1), d = t / g.c1 % g.d, c1 = t % g.c1;
        const float* in = src + t * hw * c0;
        for (dim_t ci = 0; ci < c0 && c1 * c0 + ci < g.c; ++ci) {
            float* out = dst + ((n * ct + c_begin + c1 * c0 + ci) * g.d + d) * hw;
            for (dim_t i = 0; i < hw; ++i) out[i] = in[i * c0 + ci];
        }
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
    const dim_t taps = g.taps(), row_stride = g.n1 * kN0 * c0;
    // Mirror of pack_weight_kernel: one output channel and one input-channel block at a time.
#pragma omp parallel for schedule(static) if (g.o * g.i * taps > 65536)
    for (dim_t o = 0; o < g.o; ++o)
        for (dim_t c1 = 0; c1 < g.i1; ++c1) {
            const dim_t valid = std::min(c0, g.i - c1 * c0);
            float* out = dst + (o * g.i + c1 * c0) * taps;
            for (dim_t kd = 0; kd < g.d; ++kd)
                for (dim_t kh = 0; kh < g.h; ++kh) {
                    const dim_t tap0 = (kd * g.h + kh) * g.w;
                    const float* in = src + g.offset(g.row(kd, c1, kh, 0), o / kN0, o % kN0, 0);
                    for (dim_t kw = 0; kw < g.w; ++kw, in += row_stride)
                        for (dim_t ci = 0; ci < valid; ++ci) out[ci * taps + tap0 + kw] = in[ci];
                }
        }
}

void tnc5d_kernel(std::span<const dim_t> dims, dim_t c0, const float* src, float* dst) {
    const ActGeom sg = ActGeom::of(dims, c0);
    const std::vector<dim_t> tdims = swap01(dims);
    const ActGeom dg = ActGeom::of(tdims, c0);
    const dim_t hw = sg.h * sg.w;
    const dim_t planes = dg.n * dg.d * dg.c1;  // (c, d, n1)
#pragma omp parallel for schedule(static) if (dg.size() > 65536)
    for (dim_t t = 0; t < planes; ++t) {
        const dim_t c = t / (dg.d * dg.c1), d = t / dg.c1 % dg.d, n1 = t % dg.c1;
        float* out = dst + t * hw * c0;
        for (dim_t ni = 0; ni < c0; ++ni) {
            const dim_t n = n1 * c0 + ni;
            if (n >= sg.n) {
                for (dim_t i = 0; i < hw; ++i) out[i * c0 + ni] = 0.0f;
                continue;
            }
            const float* in = src + sg.offset(n, d, c / c0, 0, 0, c % c0);
            for (dim_t i = 0; i < hw; ++i) out[i * c0 + ni] = in[i * c0];
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
        for (dim_t ob = b_lo; ob < b_hi; ++ob) {
            const dim_t b = ob - b_lo;  // output channel of the source
            float* lane = out + ob * c0;
            if (b >= sg.c) {
                std::fill(lane, lane + c0, 0.0f);
                continue;
            }
            const float* in = src + sg.offset(q.c1 * c0, q.kd, b / c0, q.kh, q.kw, b % c0);
            for (dim_t ai = 0; ai < valid; ++ai) lane[ai] = in[ai * a_stride];
            std::fill(lane + valid, lane + c0, 0.0f);
        }
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
        for (dim_t c = 0; c < dg.n1 * kN0; ++c) {
            float* lane = out + c * c0;
            if (c >= dg.o || valid <= 0) {
                std::fill(lane, lane + c0, 0.0f);
                continue;
            }
            const dim_t g = c / cg, cc = c % cg;
            const dim_t row = sg.row(sg.d - 1 - q.kd, cc / c0, sg.h - 1 - q.kh, sg.w - 1 - q.kw);
            const float* in = src + sg.offset(row, 0, 0, cc % c0);
            const dim_t o0 = g * kg + q.c1 * c0;  // source output channel of lane 0
            for (dim_t ci = 0; ci < valid; ++ci) lane[ci] = in[(o0 + ci) * c0];
            std::fill(lane + std::max<dim_t>(valid, 0), lane + c0, 0.0f);
        }
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
