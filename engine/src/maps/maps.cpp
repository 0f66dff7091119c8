#include "convlab/maps.hpp"

#include <algorithm>

#include "algorithms.hpp"

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

// The im2col function: column-matrix coordinate (n, g, row, col) -> image linear index or -1.
IndexMap::Fn im2col_fn(const Problem& p) {
    return [p](const dim_t* c) -> dim_t {
        const dim_t n = c[0], g = c[1];
        dim_t row = c[2], col = c[3];
        dim_t pos[kMaxSpatial];
        // row = ((ci * k0 + k_0) * k1 + k_1) ...; col = (o_0 * O1 + o_1) ...
        dim_t kk[kMaxSpatial], oo[kMaxSpatial];
        for (int i = p.ndims - 1; i >= 0; --i) {
            kk[i] = row % p.kernel[i];
            row /= p.kernel[i];
            const dim_t oi = p.out(i);
            oo[i] = col % oi;
            col /= oi;
        }
        const dim_t ci = row;
        for (int i = 0; i < p.ndims; ++i) {
            pos[i] = oo[i] * p.stride[i] - p.pad_begin[i] + kk[i] * p.dilation[i];
            if (pos[i] < 0 || pos[i] >= p.in[i]) return IndexMap::kZero;
        }
        dim_t lin = n * p.ic + g * p.icg() + ci;
        for (int i = 0; i < p.ndims; ++i) lin = lin * p.in[i] + pos[i];
        return lin;
    };
}

Shape column_shape(const Problem& p) {
    return Shape{{p.mb, p.groups, p.icg() * p.kernel_spatial(), p.out_spatial()},
                 {"n", "g", "row", "col"}};
}

}  // namespace

IndexMap im2col(const Problem& p) {
    return IndexMap("im2col", IndexMap::Kind::Gather, activation_shape(p, in_sizes(p)),
                    column_shape(p), im2col_fn(p), 2);
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
    auto fn = [p, src](const dim_t* c) -> dim_t {
        const dim_t y = 4 * c[2] + c[4] - p.pad_begin[0], x = 4 * c[3] + c[5] - p.pad_begin[1];
        if (y < 0 || y >= p.in[0] || x < 0 || x >= p.in[1]) return IndexMap::kZero;
        return ((c[0] * src.dims[1] + c[1]) * p.in[0] + y) * p.in[1] + x;
    };
    return IndexMap("winograd_tiles", IndexMap::Kind::Gather, src, dst, fn, 5);
}

IndexMap strided(const Problem& p) {
    Shape src = activation_shape(p, out_sizes(p), "k");
    std::vector<dim_t> z;
    for (int i = 0; i < p.ndims; ++i) z.push_back((p.out(i) - 1) * p.stride[i] + 1);
    Shape dst = activation_shape(p, z, "k");
    const int rank = dst.rank();
    auto fn = [p, src, rank](const dim_t* c) -> dim_t {
        dim_t lin = c[0] * src.dims[1] + c[1];
        for (int a = 2; a < rank; ++a) {
            const dim_t s = p.stride[a - 2];
            if (c[a] % s != 0) return IndexMap::kZero;
            lin = lin * src.dims[a] + c[a] / s;
        }
        return lin;
    };
    return IndexMap("strided", IndexMap::Kind::Gather, src, dst, fn, rank - 1);
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
    auto fn = [src, pb, rank](const dim_t* c) -> dim_t {
        dim_t lin = c[0] * src.dims[1] + c[1];
        for (int a = 2; a < rank; ++a) {
            const dim_t x = c[a] - pb[a - 2];
            if (x < 0 || x >= src.dims[a]) return IndexMap::kZero;
            lin = lin * src.dims[a] + x;
        }
        return lin;
    };
    return IndexMap("pad", IndexMap::Kind::Gather, std::move(src), std::move(dst), fn, rank - 1);
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
    auto fn = [p, rank](const dim_t* c) -> dim_t {
        // dst(g*Cg + ci, co, k) <- src(g*Kg + co, ci, K-1-k)
        const dim_t g = c[0] / p.icg(), ci = c[0] % p.icg(), co = c[1];
        dim_t lin = (g * p.ocg() + co) * p.icg() + ci;
        for (int a = 2; a < rank; ++a) lin = lin * p.kernel[a - 2] + (p.kernel[a - 2] - 1 - c[a]);
        return lin;
    };
    return IndexMap("fliprot", IndexMap::Kind::Gather, src, dst, fn, rank - 1);
}

IndexMap tnc(std::vector<dim_t> dims, std::vector<std::string> names) {
    if (dims.size() < 2 || names.size() != dims.size())
        throw Error("tnc: expects at least two dims and one name per dim");
    Shape src{dims, names};
    Shape dst = src;
    std::swap(dst.dims[0], dst.dims[1]);
    std::swap(dst.names[0], dst.names[1]);
    const int rank = src.rank();
    auto fn = [src, rank](const dim_t* c) -> dim_t {
        dim_t lin = c[1] * src.dims[1] + c[0];
        for (int a = 2; a < rank; ++a) lin = lin * src.dims[a] + c[a];
        return lin;
    };
    return IndexMap("tnc", IndexMap::Kind::Gather, src, dst, fn, rank - 1);
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
    auto fn = [p, rank](const dim_t* c) -> dim_t {
        const dim_t g = c[0] / p.ocg(), co = c[0] % p.ocg(), ci = c[1];
        dim_t lin = (g * p.icg() + ci) * p.ocg() + co;
        for (int a = 2; a < rank; ++a) lin = lin * p.kernel[a - 2] + c[a];
        return lin;
    };
    return IndexMap("tnc", IndexMap::Kind::Gather, src, dst, fn, rank - 1);
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

std::vector<std::string> names() {
    return {"im2col", "col2im", "strided", "pad", "fliprot", "tnc", "winograd"};
}

IndexMap by_name(std::string_view name, const Problem& p) {
    if (name == "im2col") return im2col(p);
    if (name == "col2im") return col2im(p);
    if (name == "strided") return strided(p);
    if (name == "pad") return pad_for_backward_data(p);
    if (name == "fliprot") return flip_rot(p);
    if (name == "tnc") return tnc_src(p);
    if (name == "winograd") return winograd_tiles(p);
    std::string known;
    for (auto& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("map '" + std::string(name) + "': unknown; known maps: " + known);
}

}  // namespace convlab::maps
