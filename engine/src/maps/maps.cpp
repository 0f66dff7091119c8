#include "convlab/maps.hpp"

#include <algorithm>
#include <cctype>

#include "algorithms.hpp"
#include "convlab/kernels.hpp"
#include "convlab/map_registry.hpp"

namespace convlab::maps {

namespace {

// Names of the spatial axes of a problem: {"w"}, {"h","w"} or {"d","h","w"}, with a prefix.
std::vector<std::string> spatial_names(int ndims, const std::string& prefix = "") {
    static const char* names[3][3] = {{"w", "", ""}, {"h", "w", ""}, {"d", "h", "w"}};
    std::vector<std::string> out;
    for (int i = 0; i < ndims; ++i) out.push_back(prefix + names[ndims - 1][i]);
    return out;
}

Shape activation_shape(const Problem& p, std::vector<dim_t> spatial, const char* c = "c") {
    Shape s;
    s.dims = {p.mb, c[0] == 'k' ? p.oc : p.ic};
    s.names = {"n", c};
    for (int i = 0; i < p.ndims; ++i) s.dims.push_back(spatial[i]);
    for (auto& n : spatial_names(p.ndims)) s.names.push_back(n);
    return s;
}

std::vector<dim_t> in_sizes(const Problem& p) {
    return std::vector<dim_t>(p.in.begin(), p.in.begin() + p.ndims);
}

std::vector<dim_t> out_sizes(const Problem& p) {
    std::vector<dim_t> o;
    for (int i = 0; i < p.ndims; ++i) o.push_back(p.out(i));
    return o;
}

Shape weight_shape(const Problem& p) {
    Shape s;
    s.dims = {p.oc, p.icg()};
    s.names = {"k", "c"};
    for (int i = 0; i < p.ndims; ++i) s.dims.push_back(p.kernel[i]);
    for (auto& n : spatial_names(p.ndims, "k")) s.names.push_back(n);
    return s;
}

std::string upper(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

// The im2col expression on a column-matrix coordinate (n, g, row, col): row = ((c*K0 + k0)*K1 +
// k1)..., col = (o0*O1 + o1)...; per axis i = o*S - P + k*D, a padding zero outside [0, I).
MapExpr im2col_expr(const Problem& p) {
    MapExpr e({"n", "g", "row", "col"});
    MapExpr::Term row = e.var(2), col = e.var(3);
    std::vector<MapExpr::Term> k(static_cast<std::size_t>(p.ndims)), o(k);
    for (int i = p.ndims - 1; i >= 0; --i) {
        const std::string a = p.axis_name(i), A = upper(a);
        const auto u = static_cast<std::size_t>(i);
        k[u] = e.let("k" + a, row % e.sym("K" + A, p.kernel[i]));
        row = row / e.sym("K" + A, p.kernel[i]);
        o[u] = i == 0 ? e.let("o" + a, col) : e.let("o" + a, col % e.sym("O" + A, p.out(i)));
        col = col / e.sym("O" + A, p.out(i));
    }
    const MapExpr::Term c = e.let("c", row);
    std::vector<MapExpr::Term> image{e.var(0), e.var(1) * e.sym("CG", p.icg()) + c};
    for (int i = 0; i < p.ndims; ++i) {
        const std::string a = p.axis_name(i), A = upper(a);
        const auto u = static_cast<std::size_t>(i);
        const MapExpr::Term x =
            e.let("i" + a, o[u] * e.sym("S" + A, p.stride[i]) - e.sym("P" + A, p.pad_begin[i]) +
                               k[u] * e.sym("D" + A, p.dilation[i]));
        e.require_range(x, e.num(0), e.sym("I" + A, p.in[i]));
        image.push_back(x);
    }
    e.set_image(image);
    return e;
}

Shape column_shape(const Problem& p) {
    return Shape{{p.mb, p.groups, p.icg() * p.kernel_spatial(), p.out_spatial()},
                 {"n", "g", "row", "col"}};
}

}  // namespace

IndexMap im2col(const Problem& p) {
    return IndexMap("im2col", IndexMap::Kind::Gather, activation_shape(p, in_sizes(p)),
                    column_shape(p), im2col_expr(p), 2);
}

IndexMap col2im(const Problem& p) {
    return im2col(p).transposed("col2im");
}

IndexMap winograd_tiles(const Problem& p) {
    if (!detail::winograd_applies(p))  // the algorithm's own rule
        throw Error("winograd_tiles: " + to_descriptor(p) + ": needs " + detail::kWinogradRule);
    const Shape src = activation_shape(p, in_sizes(p));
    const dim_t th = (p.out(0) + 3) / 4, tw = (p.out(1) + 3) / 4;
    Shape dst;
    dst.dims = {p.mb, p.ic, th, tw, 6, 6};
    dst.names = {"n", "c", "th", "tw", "i", "j"};
    // dst(n, c, th, tw, i, j) <- src(n, c, 4*th + i - PH, 4*tw + j - PW), zero outside.
    MapExpr e(dst.names);
    const MapExpr::Term y =
        e.let("ih", e.num(4) * e.var(2) + e.var(4) - e.sym("PH", p.pad_begin[0]));
    const MapExpr::Term x =
        e.let("iw", e.num(4) * e.var(3) + e.var(5) - e.sym("PW", p.pad_begin[1]));
    e.require_range(y, e.num(0), e.sym("IH", p.in[0]));
    e.require_range(x, e.num(0), e.sym("IW", p.in[1]));
    e.set_image({e.var(0), e.var(1), y, x});
    return IndexMap("winograd_tiles", IndexMap::Kind::Gather, src, dst, std::move(e), 5);
}

IndexMap strided(const Problem& p) {
    Shape src = activation_shape(p, out_sizes(p), "k");
    std::vector<dim_t> z;
    for (int i = 0; i < p.ndims; ++i) z.push_back((p.out(i) - 1) * p.stride[i] + 1);
    Shape dst = activation_shape(p, z, "k");
    const int rank = dst.rank();
    // dst(n, k, z...) <- src(n, k, z/S...), zero unless S divides every z.
    MapExpr e(dst.names);
    std::vector<MapExpr::Term> image{e.var(0), e.var(1)};
    for (int a = 2; a < rank; ++a) {
        const MapExpr::Term st = e.sym("S" + upper(p.axis_name(a - 2)), p.stride[a - 2]);
        e.require_divisible(e.var(a), st);
        image.push_back(e.var(a) / st);
    }
    e.set_image(image);
    return IndexMap("strided", IndexMap::Kind::Gather, src, dst, std::move(e), rank - 1);
}

namespace {

// dst(i) <- src(i - pb) per spatial axis of an (n, c, spatial...) shape; negative pads crop.
IndexMap make_pad(Shape src, std::span<const dim_t> pad_begin, std::span<const dim_t> pad_end) {
    const int rank = src.rank();
    const int ns = rank - 2;
    if (ns < 1 || ns > 3 || static_cast<int>(pad_begin.size()) < ns ||
        static_cast<int>(pad_end.size()) < ns)
        throw Error("pad: expects (n, c, spatial...) with 1 to 3 spatial dims and their pads");
    Shape dst = src;
    std::vector<dim_t> pb(pad_begin.begin(), pad_begin.begin() + ns);
    for (int i = 0; i < ns; ++i) {
        dst.dims[2 + i] = src.dims[2 + i] + pad_begin[i] + pad_end[i];
        if (dst.dims[2 + i] < 1)
            throw Error("pad: axis " + src.names[2 + i] + " would be cropped to nothing");
    }
    // dst(n, c, x...) <- src(n, c, x - P...), zero outside the source.
    MapExpr e(dst.names);
    std::vector<MapExpr::Term> image{e.var(0), e.var(1)};
    for (int a = 2; a < rank; ++a) {
        const std::string A = upper(src.names[static_cast<std::size_t>(a)]);
        const MapExpr::Term x = e.var(a) - e.sym("P" + A, pb[static_cast<std::size_t>(a) - 2]);
        e.require_range(x, e.num(0), e.sym(A, src.dims[static_cast<std::size_t>(a)]));
        image.push_back(x);
    }
    e.set_image(image);
    return IndexMap("pad", IndexMap::Kind::Gather, std::move(src), std::move(dst), std::move(e),
                    rank - 1);
}

}  // namespace

IndexMap pad(std::vector<dim_t> dims, std::span<const dim_t> pad_begin,
             std::span<const dim_t> pad_end) {
    const int ns = static_cast<int>(dims.size()) - 2;
    Shape src{std::move(dims), {"n", "c"}};
    if (ns >= 1 && ns <= 3)
        for (auto& n : spatial_names(ns)) src.names.push_back(n);
    return make_pad(std::move(src), pad_begin, pad_end);
}

IndexMap pad_for_backward_data(const Problem& p) {
    SpatialDims pb{}, pe{};
    std::vector<dim_t> z;
    for (int i = 0; i < p.ndims; ++i) {
        z.push_back((p.out(i) - 1) * p.stride[i] + 1);
        const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
        pb[i] = span - p.pad_begin[i];
        pe[i] = span - p.pad_end[i] + p.leftover(i);
    }
    return make_pad(activation_shape(p, z, "k"), pb, pe);
}

IndexMap flip_rot(const Problem& p) {
    Shape src = weight_shape(p);
    Shape dst{{p.ic, p.ocg()}, {"c", "k"}};
    for (int i = 0; i < p.ndims; ++i) dst.dims.push_back(p.kernel[i]);
    for (auto& n : spatial_names(p.ndims, "k")) dst.names.push_back(n);
    const int rank = dst.rank();
    // dst(c, k, t...) <- src(g*KG + k, ci, K-1-t...) with g = c/CG, ci = c % CG.
    MapExpr e(dst.names);
    const MapExpr::Term cg = e.sym("CG", p.icg());
    const MapExpr::Term g = e.let("g", e.var(0) / cg), ci = e.let("ci", e.var(0) % cg);
    std::vector<MapExpr::Term> image{g * e.sym("KG", p.ocg()) + e.var(1), ci};
    for (int a = 2; a < rank; ++a) {
        const std::string A = upper(p.axis_name(a - 2));
        image.push_back(e.sym("K" + A, p.kernel[a - 2]) - 1 - e.var(a));
    }
    e.set_image(image);
    return IndexMap("fliprot", IndexMap::Kind::Gather, src, dst, std::move(e), rank - 1);
}

IndexMap tnc(std::vector<dim_t> dims, std::vector<std::string> names) {
    if (dims.size() < 2 || names.size() != dims.size())
        throw Error("tnc: expects at least two dims and one name per dim");
    Shape src{dims, names};
    Shape dst = src;
    std::swap(dst.dims[0], dst.dims[1]);
    std::swap(dst.names[0], dst.names[1]);
    const int rank = src.rank();
    // dst(b, a, rest...) <- src(a, b, rest...).
    MapExpr e(dst.names);
    std::vector<MapExpr::Term> image{e.var(1), e.var(0)};
    for (int a = 2; a < rank; ++a) image.push_back(e.var(a));
    e.set_image(image);
    return IndexMap("tnc", IndexMap::Kind::Gather, src, dst, std::move(e), rank - 1);
}

IndexMap tnc_src(const Problem& p) {
    Shape s = activation_shape(p, in_sizes(p));
    return tnc(s.dims, s.names);
}

IndexMap tnc_diff_dst(const Problem& p) {
    Shape s = activation_shape(p, out_sizes(p), "k");
    return tnc(s.dims, s.names);
}

IndexMap tnc_diff_wei(const Problem& p) {
    // Source: the per-group results of the backward-weight forward convolution, stacked:
    // (g, ci, co, k...) = (C, K/G, k...) as (G*Cg, Kg, k...). Destination: weights (K, C/G, k...).
    Shape src{{p.ic, p.ocg()}, {"c", "k"}};
    for (int i = 0; i < p.ndims; ++i) src.dims.push_back(p.kernel[i]);
    for (auto& n : spatial_names(p.ndims, "k")) src.names.push_back(n);
    Shape dst = weight_shape(p);
    const int rank = dst.rank();
    // dst(k, c, t...) <- src(g*CG + c, ko, t...) with g = k/KG, ko = k % KG.
    MapExpr e(dst.names);
    const MapExpr::Term kg = e.sym("KG", p.ocg());
    const MapExpr::Term g = e.let("g", e.var(0) / kg), ko = e.let("ko", e.var(0) % kg);
    std::vector<MapExpr::Term> image{g * e.sym("CG", p.icg()) + e.var(1), ko};
    for (int a = 2; a < rank; ++a) image.push_back(e.var(a));
    e.set_image(image);
    return IndexMap("tnc", IndexMap::Kind::Gather, src, dst, std::move(e), rank - 1);
}

Problem backward_data_as_forward(const Problem& p) {
    Problem q = p;
    q.name = p.name.empty() ? "" : p.name + ":bwd_data_as_fwd";
    q.ic = p.oc;
    q.oc = p.ic;
    for (int i = 0; i < p.ndims; ++i) {
        const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
        // Input: zero-inserted and already padded dY; the pads live in the pad map.
        q.in[i] = (p.out(i) - 1) * p.stride[i] + 1 + (span - p.pad_begin[i]) +
                  (span - p.pad_end[i] + p.leftover(i));
        q.stride[i] = 1;
        q.pad_begin[i] = 0;
        q.pad_end[i] = 0;
    }
    return q;
}

Problem backward_weight_as_forward(const Problem& p) {
    Problem q;
    q.ndims = p.ndims;
    q.name = p.name.empty() ? "" : p.name + ":bwd_weight_as_fwd";
    q.mb = p.icg();
    q.ic = p.mb;
    q.oc = p.ocg();
    q.groups = 1;
    for (int i = 0; i < p.ndims; ++i) {
        q.in[i] = p.in[i];
        q.kernel[i] = p.out(i);
        q.stride[i] = p.dilation[i];
        q.dilation[i] = p.stride[i];
        q.pad_begin[i] = p.pad_begin[i];
        q.pad_end[i] = p.pad_end[i] - p.leftover(i);
    }
    return q;
}

namespace {

// NHWC: the activations with the channel innermost, dst(n, spatial..., c) <- src(n, c, spatial...).
IndexMap nhwc(const Problem& p) {
    Shape src = activation_shape(p, in_sizes(p));
    Shape dst{{p.mb}, {"n"}};
    for (int i = 0; i < p.ndims; ++i) {
        dst.dims.push_back(p.in[i]);
        dst.names.push_back(src.names[static_cast<std::size_t>(2 + i)]);
    }
    dst.dims.push_back(p.ic);
    dst.names.push_back("c");
    const int rank = dst.rank();
    MapExpr e(dst.names);
    std::vector<MapExpr::Term> image{e.var(0), e.var(rank - 1)};
    for (int a = 1; a < rank - 1; ++a) image.push_back(e.var(a));
    e.set_image(image);
    return IndexMap("nhwc", IndexMap::Kind::Gather, std::move(src), std::move(dst), std::move(e),
                    rank - 1);
}

}  // namespace

std::vector<MapEntry> registry_entries() {
    const auto entry = [](const char* name, const char* summary, IndexMap (*build)(const Problem&),
                          const char* src, const char* dst) {
        MapEntry e;
        e.name = name;
        e.family = "nchw";
        e.summary = summary;
        e.build = [build](const Problem& p, dim_t) { return build(p); };
        e.src_role = src;
        e.dst_role = dst;
        return e;
    };
    std::vector<MapEntry> v;
    v.push_back(
        entry("im2col", "activations to column matrices (n, g, row, col)", im2col, "src", "col"));
    v.back().kernel = [](const Problem& p, dim_t, const float* src, float* dst) {
        const dim_t per_group = p.icg() * p.kernel_spatial() * p.out_spatial();
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g)
                im2col_kernel(p, src, n, g, dst + (n * p.groups + g) * per_group);
    };
    v.push_back(entry("col2im", "column matrices added back into the activations (reduce)", col2im,
                      "diff_col", "diff_src"));
    v.back().kernel = [](const Problem& p, dim_t, const float* src, float* dst) {
        std::fill(dst, dst + p.mb * p.ic * p.in_spatial(), 0.0f);
        const dim_t per_group = p.icg() * p.kernel_spatial() * p.out_spatial();
        for (dim_t n = 0; n < p.mb; ++n)
            for (dim_t g = 0; g < p.groups; ++g)
                col2im_kernel(p, src + (n * p.groups + g) * per_group, n, g, dst);
    };
    v.push_back(entry("strided", "zero insertion of dY for a stride", strided, "diff_dst",
                      "diff_dst_strided"));
    v.back().kernel = [](const Problem& p, dim_t, const float* src, float* dst) {
        strided_kernel(p, src, dst);
    };
    v.push_back(entry("pad", "backward data's pad (or crop) of the zero-inserted dY",
                      pad_for_backward_data, "diff_dst_strided", "diff_dst_padded"));
    v.back().kernel = [](const Problem& p, dim_t, const float* src, float* dst) {
        std::vector<dim_t> z{p.mb, p.oc};
        std::vector<dim_t> pb, pe;
        for (int i = 0; i < p.ndims; ++i) {
            z.push_back((p.out(i) - 1) * p.stride[i] + 1);
            const dim_t span = (p.kernel[i] - 1) * p.dilation[i];
            pb.push_back(span - p.pad_begin[i]);
            pe.push_back(span - p.pad_end[i] + p.leftover(i));
        }
        pad_kernel(z, pb, pe, src, dst);
    };
    v.push_back(entry("fliprot", "weights (K, C/G, k...) to (C, K/G, k...), kernels reversed",
                      flip_rot, "wei", "wei_fliprot"));
    v.back().kernel = [](const Problem& p, dim_t, const float* src, float* dst) {
        flip_rot_kernel(p, src, dst);
    };
    v.push_back(entry("tnc", "activations (N, C, ...) to (C, N, ...)", tnc_src, "src", "src_tnc"));
    v.back().kernel = [](const Problem& p, dim_t, const float* src, float* dst) {
        tnc_kernel(p.src_dims(), src, dst);
    };
    v.push_back(
        entry("winograd", "Winograd F(4x4, 3x3) input tiles of 6x6", winograd_tiles, "src", ""));
    v.push_back(
        entry("nhwc", "activations NCHW to NHWC (channels innermost)", nhwc, "src", "src_nhwc"));
    return v;
}

std::vector<std::string> names() {
    return map_registry_names("nchw");
}

IndexMap by_name(std::string_view name, const Problem& p) {
    const MapEntry* e = find_map(name);
    if (e && e->family == "nchw") return e->build(p, 0);
    std::string known;
    for (auto& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("map '" + std::string(name) + "': unknown; known maps: " + known);
}

}  // namespace convlab::maps
