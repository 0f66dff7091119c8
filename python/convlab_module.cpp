// The `convlab` Python module: problems, the convolution passes on numpy float32 arrays, the
// index maps as numpy index arrays, and the DaVinci packers, over the same engine library as the
// convlab binary. Arrays are used in place when they are float32, C-contiguous and of the
// problem's shape (the engine's dense row-major layout), and results are allocated as numpy
// arrays that the engine writes directly: nothing is copied on that path. The GIL is released
// while the engine computes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/index_map.hpp"
#include "convlab/map_registry.hpp"
#include "convlab/maps.hpp"
#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace py = pybind11;
using namespace convlab;

namespace {

using Dims = std::vector<dim_t>;

std::string dims_text(const Dims& d) {
    std::string s = "(";
    for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + (d.size() == 1 ? ",)" : ")");
}

py::tuple to_tuple(const Dims& d) {
    py::tuple t(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) t[i] = py::int_(d[i]);
    return t;
}

Dims shape_of(const py::array& a) {
    Dims d(static_cast<std::size_t>(a.ndim()));
    for (py::ssize_t i = 0; i < a.ndim(); ++i) d[static_cast<std::size_t>(i)] = a.shape(i);
    return d;
}

// [SECTION] arrays in and out

// An input array: float32 of shape `want` (what names its dims, for the message). A C-contiguous
// array is read in place; any other strides are copied once into a C-contiguous array (keep).
// Anything else raises ValueError naming the argument and the rule.
const float* input(const char* arg, const py::handle& obj, const Dims& want, const char* what,
                   std::vector<py::array>& keep) {
    if (!py::isinstance<py::array>(obj))
        throw py::type_error(std::string(arg) + ": expected a numpy.ndarray of float32, got " +
                             std::string(py::str(py::type::of(obj).attr("__name__"))));
    auto a = py::reinterpret_borrow<py::array>(obj);
    if (!a.dtype().is(py::dtype::of<float>()))
        throw py::value_error(std::string(arg) + ": dtype " + std::string(py::str(a.dtype())) +
                              ", expected float32 (" + arg + ".astype(numpy.float32))");
    if (shape_of(a) != want)
        throw py::value_error(std::string(arg) + ": shape " + dims_text(shape_of(a)) +
                              ", the problem needs " + dims_text(want) + " " + what);
    if (!(a.flags() & py::array::c_style)) {
        keep.push_back(py::array_t<float, py::array::c_style>::ensure(a));
        a = keep.back();
    }
    return static_cast<const float*>(a.data());
}

// The result array: `out` when given (float32, C-contiguous, writeable, of shape `want`, sharing
// no memory with the inputs), else a new one.
py::array_t<float> output(const py::object& out, const Dims& want, const char* what,
                          const std::vector<std::pair<const char*, py::handle>>& inputs) {
    if (out.is_none()) return py::array_t<float>(want);
    if (!py::isinstance<py::array>(out))
        throw py::type_error("out: expected a numpy.ndarray of float32, got " +
                             std::string(py::str(py::type::of(out).attr("__name__"))));
    auto a = py::reinterpret_borrow<py::array>(out);
    if (!a.dtype().is(py::dtype::of<float>()))
        throw py::value_error("out: dtype " + std::string(py::str(a.dtype())) +
                              ", expected float32");
    if (shape_of(a) != want)
        throw py::value_error("out: shape " + dims_text(shape_of(a)) + ", the problem needs " +
                              dims_text(want) + " " + what);
    if (!(a.flags() & py::array::c_style))
        throw py::value_error("out: not C-contiguous; the engine writes dense row-major arrays");
    if (!a.writeable()) throw py::value_error("out: read-only array");
    const auto shares = py::module_::import("numpy").attr("shares_memory");
    for (const auto& [name, in] : inputs)
        if (py::isinstance<py::array>(in) && shares(a, in).cast<bool>())
            throw py::value_error(std::string("out: shares memory with ") + name +
                                  "; the engine reads every input while it writes out");
    return py::reinterpret_borrow<py::array_t<float>>(a);
}

// [SECTION] the passes

const Algorithm& algorithm_of(Pass pass, const std::string& name, const Problem& p) {
    const Algorithm& a = find_algorithm(pass, name);
    if (!algorithm_applies(a, p))
        throw Error(std::string(a.name) + " (" + pass_name(pass) + ") does not apply to " +
                    to_descriptor(p) + ": " + a.rule);
    check_memory_budget(a, p);
    return a;
}

void run(const Algorithm& a, const Problem& p, const ConvArgs& args) {
    py::gil_scoped_release unlocked;
    a.run(p, args, nullptr);
}

py::array_t<float> py_forward(const Problem& p, const py::object& src, const py::object& wei,
                              const py::object& bias, const std::string& algo,
                              const py::object& out) {
    const Algorithm& a = algorithm_of(Pass::Forward, algo, p);
    std::vector<py::array> keep;
    ConvArgs args;
    args.src = input("src", src, p.src_dims(), "(N, C, in...)", keep);
    args.wei = input("wei", wei, p.wei_dims(), "(K, C/G, kernel...)", keep);
    if (!bias.is_none()) args.bias = input("bias", bias, {p.oc}, "(K)", keep);
    auto dst =
        output(out, p.dst_dims(), "(N, K, out...)", {{"src", src}, {"wei", wei}, {"bias", bias}});
    args.dst = dst.mutable_data();
    run(a, p, args);
    return dst;
}

py::array_t<float> py_backward_data(const Problem& p, const py::object& diff_dst,
                                    const py::object& wei, const std::string& algo,
                                    const py::object& out) {
    const Algorithm& a = algorithm_of(Pass::BackwardData, algo, p);
    std::vector<py::array> keep;
    ConvArgs args;
    args.diff_dst = input("diff_dst", diff_dst, p.dst_dims(), "(N, K, out...)", keep);
    args.wei = input("wei", wei, p.wei_dims(), "(K, C/G, kernel...)", keep);
    auto diff_src =
        output(out, p.src_dims(), "(N, C, in...)", {{"diff_dst", diff_dst}, {"wei", wei}});
    args.diff_src = diff_src.mutable_data();
    run(a, p, args);
    return diff_src;
}

py::array_t<float> py_backward_weight(const Problem& p, const py::object& src,
                                      const py::object& diff_dst, const std::string& algo,
                                      const py::object& out) {
    const Algorithm& a = algorithm_of(Pass::BackwardWeight, algo, p);
    std::vector<py::array> keep;
    ConvArgs args;
    args.src = input("src", src, p.src_dims(), "(N, C, in...)", keep);
    args.diff_dst = input("diff_dst", diff_dst, p.dst_dims(), "(N, K, out...)", keep);
    auto diff_wei =
        output(out, p.wei_dims(), "(K, C/G, kernel...)", {{"src", src}, {"diff_dst", diff_dst}});
    args.diff_wei = diff_wei.mutable_data();
    run(a, p, args);
    return diff_wei;
}

py::array_t<float> py_backward_bias(const Problem& p, const py::object& diff_dst,
                                    const std::string& algo) {
    const Algorithm& a = algorithm_of(Pass::BackwardBias, algo, p);
    std::vector<py::array> keep;
    ConvArgs args;
    args.diff_dst = input("diff_dst", diff_dst, p.dst_dims(), "(N, K, out...)", keep);
    py::array_t<float> diff_bias(Dims{p.oc});
    args.diff_bias = diff_bias.mutable_data();
    run(a, p, args);
    return diff_bias;
}

py::object algos(const std::optional<std::string>& pass, const std::optional<Problem>& p) {
    const auto names = [&](Pass ps) {
        py::list l;
        for (const Algorithm* a : algorithms(ps))
            if (!p || algorithm_applies(*a, *p)) l.append(a->name);
        return l;
    };
    if (pass) return names(parse_pass(*pass));
    py::dict d;
    for (Pass ps : {Pass::Forward, Pass::BackwardData, Pass::BackwardWeight, Pass::BackwardBias})
        d[pass_name(ps)] = names(ps);
    return d;
}

// [SECTION] index maps

// The map of `convlab map --map NAME [--c0 N]`, from the map registry: only the maps with the
// "c0" parameter (the DaVinci family) take c0 (with c0, tnc and fliprot are the DaVinci tnc5d and
// fliprot_fz, as on the command line).
IndexMap map_by_name(std::string name, const Problem& p, std::optional<dim_t> c0) {
    if (c0 && (name == "tnc" || name == "fliprot")) name = name == "tnc" ? "tnc5d" : "fliprot_fz";
    const MapEntry* e = find_map(name);
    if (!e) {
        std::string known;
        for (const auto& n : map_registry_names("nchw")) known += (known.empty() ? "" : ", ") + n;
        known += "; DaVinci:";
        for (const auto& n : map_registry_names("davinci")) known += " " + n;
        throw Error("map '" + name + "': unknown; maps: " + known);
    }
    const bool takes_c0 = std::find(e->params.begin(), e->params.end(), "c0") != e->params.end();
    if (c0 && !takes_c0)
        throw Error("c0 is taken by the DaVinci maps only; " + name +
                    " is an NCHW map (its DaVinci counterparts: nc1hwc0, fractal_z, tnc5d, tncf, "
                    "fliprot_fz, strided5d ...)");
    if (c0) davinci::check_c0(*c0);
    return build_map(name, p, c0.value_or(davinci::kC0));
}

// A domain element given as a coordinate tuple (or a linear index), checked against the shape.
dim_t domain_linear(const IndexMap& m, const py::object& coord) {
    const Shape& d = m.domain();
    const char* side = m.kind() == IndexMap::Kind::Gather ? "destination" : "source";
    // A linear index: an int or a numpy integer scalar, which PyNumber_Index accepts. Anything
    // else (a tuple, a list, a 1-D array, which it refuses) is a coordinate.
    if (PyObject* index = PyNumber_Index(coord.ptr())) {
        const auto obj = py::reinterpret_steal<py::object>(index);
        dim_t i = -1;
        try {
            i = obj.cast<dim_t>();
        } catch (const py::cast_error&) {
            // Beyond 64 bits: outside every shape.
        }
        if (i < 0 || i >= d.numel())
            throw py::value_error("coord: linear index " + std::string(py::str(obj)) +
                                  " outside the " + side + " " + d.str() + " (0 <= index < " +
                                  std::to_string(d.numel()) + ")");
        return i;
    }
    PyErr_Clear();
    Dims c;
    try {
        c = coord.cast<Dims>();
    } catch (const py::cast_error&) {
        throw py::value_error("coord: expected a tuple of " + std::to_string(d.rank()) +
                              " integers (the " + side + "'s " + d.str() + ") or a linear index");
    }
    if (static_cast<int>(c.size()) != d.rank())
        throw py::value_error("coord: " + std::to_string(c.size()) + " values, the " + side + " " +
                              d.str() + " has " + std::to_string(d.rank()) + " dims");
    for (int i = 0; i < d.rank(); ++i)
        if (c[static_cast<std::size_t>(i)] < 0 ||
            c[static_cast<std::size_t>(i)] >= d.dims[static_cast<std::size_t>(i)])
            throw py::value_error("coord: " + d.names[static_cast<std::size_t>(i)] + " = " +
                                  std::to_string(c[static_cast<std::size_t>(i)]) + " outside the " +
                                  side + " " + d.str());
    return d.linear_of(c);
}

py::array_t<std::int64_t> index_array(const IndexMap& m) {
    py::array_t<std::int64_t> idx(m.domain().dims);
    std::int64_t* out = idx.mutable_data();
    const dim_t n = m.domain().numel();
    py::gil_scoped_release unlocked;
    m.images(0, n, out);
    return idx;
}

py::array_t<std::int64_t> pairs(const IndexMap& m) {
    const dim_t n = m.domain().numel();
    py::array_t<std::int64_t> r(Dims{n, 2});
    std::int64_t* out = r.mutable_data();
    py::gil_scoped_release unlocked;
    dim_t k = 0;
    // The walk of `convlab map`'s text and json (the line axis innermost), pair by pair.
    const dim_t steps = m.num_steps(Granularity::Whole);
    for (dim_t s = 0; s < steps; ++s)
        m.for_each_in_step(Granularity::Whole, s, [&](dim_t src, dim_t dst) {
            out[2 * k] = src;
            out[2 * k + 1] = dst;
            ++k;
        });
    return r;
}

py::array_t<float> apply_map(const IndexMap& m, const py::object& src) {
    std::vector<py::array> keep;
    const float* s = input("src", src, m.src().dims, "(the map's source)", keep);
    py::array_t<float> dst(m.dst().dims);
    float* d = dst.mutable_data();
    py::gil_scoped_release unlocked;
    m.execute(s, d);
    return dst;
}

// [SECTION] DaVinci packers

dim_t c0_arg(dim_t c0) {
    davinci::check_c0(c0);
    return c0;
}

const float* any_input(const char* arg, const py::handle& obj, std::vector<py::array>& keep,
                       Dims& dims, const char* rule, std::initializer_list<int> ranks) {
    if (!py::isinstance<py::array>(obj))
        throw py::type_error(std::string(arg) + ": expected a numpy.ndarray of float32, got " +
                             std::string(py::str(py::type::of(obj).attr("__name__"))));
    dims = shape_of(py::reinterpret_borrow<py::array>(obj));
    if (std::find(ranks.begin(), ranks.end(), static_cast<int>(dims.size())) == ranks.end())
        throw py::value_error(std::string(arg) + ": shape " + dims_text(dims) + ", expected " +
                              rule);
    for (dim_t d : dims)
        if (d < 1)
            throw py::value_error(std::string(arg) + ": shape " + dims_text(dims) +
                                  ": every dim must be >= 1");
    return input(arg, obj, dims, rule, keep);
}

py::array_t<float> to_nc1hwc0(const py::object& x, dim_t c0) {
    c0 = c0_arg(c0);
    std::vector<py::array> keep;
    Dims dims;
    const float* s =
        any_input("x", x, keep, dims, "(N, C, W), (N, C, H, W) or (N, C, D, H, W)", {3, 4, 5});
    py::array_t<float> r(davinci::activation_physical(dims, c0).dims);
    float* d = r.mutable_data();
    py::gil_scoped_release unlocked;
    davinci::pack_activation_kernel(dims, c0, s, d);
    return r;
}

py::array_t<float> from_nc1hwc0(const py::object& packed, dim_t channels) {
    std::vector<py::array> keep;
    Dims phys;
    any_input("packed", packed, keep, phys,
              "(N, C1, W, C0), (N, C1, H, W, C0) or (N, D, C1, H, W, C0)", {4, 5, 6});
    const dim_t c0 = c0_arg(phys.back());
    Dims dims{phys[0], channels};
    if (phys.size() == 6) dims.push_back(phys[1]);
    for (std::size_t i = phys.size() == 6 ? 3 : 2; i + 1 < phys.size(); ++i)
        dims.push_back(phys[i]);
    const dim_t c1 = phys[phys.size() == 6 ? 2 : 1];
    if (channels < 1 || davinci::blocks_of(channels, c0) != c1)
        throw py::value_error("channels = " + std::to_string(channels) + ": the packed array has " +
                              "C1 = " + std::to_string(c1) +
                              " blocks of C0 = " + std::to_string(c0) +
                              ", so channels must be in [" + std::to_string((c1 - 1) * c0 + 1) +
                              ", " + std::to_string(c1 * c0) + "]");
    const float* s = input("packed", packed, phys, "", keep);
    py::array_t<float> r(dims);
    float* d = r.mutable_data();
    py::gil_scoped_release unlocked;
    davinci::unpack_activation_kernel(dims, c0, s, d);
    return r;
}

py::array_t<float> to_fractal_z(const py::object& w, dim_t c0) {
    c0 = c0_arg(c0);
    std::vector<py::array> keep;
    Dims dims;
    const float* s = any_input("w", w, keep, dims,
                               "(O, I, KW), (O, I, KH, KW) or (O, I, KD, KH, KW)", {3, 4, 5});
    py::array_t<float> r(davinci::weight_physical(dims, c0).dims);
    float* d = r.mutable_data();
    py::gil_scoped_release unlocked;
    davinci::pack_weight_kernel(dims, c0, s, d);
    return r;
}

py::array_t<float> from_fractal_z(const py::object& packed, const Dims& shape) {
    if (shape.size() < 3 || shape.size() > 5)
        throw py::value_error("shape: " + dims_text(shape) +
                              ", expected the weights' (O, I, kernel...) with 1 to 3 kernel dims");
    for (dim_t d : shape)
        if (d < 1) throw py::value_error("shape: " + dims_text(shape) + ": every dim must be >= 1");
    std::vector<py::array> keep;
    Dims phys;
    any_input("packed", packed, keep, phys, "(rows, N1, 16, C0)", {4});
    const dim_t c0 = c0_arg(phys.back());
    const Dims want = davinci::weight_physical(shape, c0).dims;
    const float* s = input("packed", packed, want, "(FRACTAL_Z of shape)", keep);
    py::array_t<float> r(shape);
    float* d = r.mutable_data();
    py::gil_scoped_release unlocked;
    davinci::unpack_weight_kernel(shape, c0, s, d);
    return r;
}

// [SECTION] Problem fields by benchdnn key: size per spatial axis, 1 (0 for pads) where the
// problem has no such axis.

// Index into the engine's spatial arrays of axis 'd', 'h' or 'w' (-1 when absent).
int axis(const Problem& p, char a) {
    const int from_end = a == 'w' ? 0 : a == 'h' ? 1 : 2;
    return from_end < p.ndims ? p.ndims - 1 - from_end : -1;
}

template <class F>
auto per_axis(char a, dim_t absent, F f) {
    return [a, absent, f](const Problem& p) -> dim_t {
        const int i = axis(p, a);
        return i < 0 ? absent : f(p, i);
    };
}

Dims spatial(const Problem& p, const SpatialDims& s) {
    return Dims(s.begin(), s.begin() + p.ndims);
}

}  // namespace

PYBIND11_MODULE(convlab, m) {
    m.doc() =
        "ConvLab's convolution engine: problems (benchdnn descriptors), the forward and backward "
        "passes on numpy float32 arrays (N, C, spatial...), index maps as numpy index arrays, "
        "and the DaVinci (Ascend) packers.";
    m.attr("__version__") = CONVLAB_VERSION;

    // Bad input of any kind: the engine's message names the field and the rule.
    py::register_exception_translator([](std::exception_ptr e) {
        try {
            if (e) std::rethrow_exception(e);
        } catch (const Error& err) {
            PyErr_SetString(PyExc_ValueError, err.what());
        }
    });

    auto P = py::class_<Problem>(m, "Problem",
                                 "One convolution: a benchdnn-style descriptor such as "
                                 "'mb2ic3ih8oc4kh3ph1' (g groups, mb batch, ic/oc channels, "
                                 "id/ih/iw input, kd/kh/kw kernel, sd/sh/sw stride, dd/dh/dw "
                                 "dilation 0-based, pd/ph/pw padding, pde/phe/pwe end padding).");
    P.def(py::init([](const std::string& desc) {
              Problem p = parse_descriptor(desc);
              p.check();
              return p;
          }),
          py::arg("descriptor"))
        .def_readonly("ndims", &Problem::ndims, "spatial dims: 1, 2 or 3")
        .def_readonly("mb", &Problem::mb)
        .def_readonly("ic", &Problem::ic)
        .def_readonly("oc", &Problem::oc)
        .def_readonly("groups", &Problem::groups)
        .def_property_readonly("g", [](const Problem& p) { return p.groups; })
        .def_readonly("name", &Problem::name)
        .def_property_readonly("descriptor", [](const Problem& p) { return to_descriptor(p); })
        .def_property_readonly("flops", &Problem::flops,
                               "2*N*K*(C/G)*prod(out)*prod(kernel): every tap, padding included")
        .def_property_readonly(
            "src_shape", [](const Problem& p) { return to_tuple(p.src_dims()); }, "(N, C, in...)")
        .def_property_readonly(
            "wei_shape", [](const Problem& p) { return to_tuple(p.wei_dims()); },
            "(K, C/G, kernel...)")
        .def_property_readonly(
            "dst_shape", [](const Problem& p) { return to_tuple(p.dst_dims()); }, "(N, K, out...)")
        .def_property_readonly("bias_shape", [](const Problem& p) { return to_tuple({p.oc}); })
        .def_property_readonly(
            "input", [](const Problem& p) { return to_tuple(spatial(p, p.in)); },
            "input size per spatial axis")
        .def_property_readonly("kernel",
                               [](const Problem& p) { return to_tuple(spatial(p, p.kernel)); })
        .def_property_readonly("stride",
                               [](const Problem& p) { return to_tuple(spatial(p, p.stride)); })
        .def_property_readonly(
            "dilation", [](const Problem& p) { return to_tuple(spatial(p, p.dilation)); },
            "dilation factor per axis, 1 = none (the descriptor's dd/dh/dw are this minus 1)")
        .def_property_readonly("pad_begin",
                               [](const Problem& p) { return to_tuple(spatial(p, p.pad_begin)); })
        .def_property_readonly("pad_end",
                               [](const Problem& p) { return to_tuple(spatial(p, p.pad_end)); })
        .def_property_readonly("output",
                               [](const Problem& p) {
                                   Dims o;
                                   for (int i = 0; i < p.ndims; ++i) o.push_back(p.out(i));
                                   return to_tuple(o);
                               })
        .def("__eq__", [](const Problem& a, const Problem& b) { return a == b; })
        .def("__repr__",
             [](const Problem& p) { return "convlab.Problem('" + to_descriptor(p) + "')"; });
    for (const char a : {'d', 'h', 'w'}) {
        const std::string s(1, a);
        P.def_property_readonly(("i" + s).c_str(),
                                per_axis(a, 1, [](auto& p, int i) { return p.in[i]; }));
        P.def_property_readonly(("o" + s).c_str(),
                                per_axis(a, 1, [](auto& p, int i) { return p.out(i); }));
        P.def_property_readonly(("k" + s).c_str(),
                                per_axis(a, 1, [](auto& p, int i) { return p.kernel[i]; }));
        P.def_property_readonly(("s" + s).c_str(),
                                per_axis(a, 1, [](auto& p, int i) { return p.stride[i]; }));
        P.def_property_readonly(("d" + s).c_str(),
                                per_axis(a, 0, [](auto& p, int i) { return p.dilation[i] - 1; }));
        P.def_property_readonly(("p" + s).c_str(),
                                per_axis(a, 0, [](auto& p, int i) { return p.pad_begin[i]; }));
        P.def_property_readonly(("p" + s + "e").c_str(),
                                per_axis(a, 0, [](auto& p, int i) { return p.pad_end[i]; }));
    }

    const char* array_rule =
        " Arrays are numpy float32 of the problem's shapes (N, C, in...), (K, C/G, kernel...), (N, "
        "K, out...), used in place when C-contiguous (other strides are copied once). out: an "
        "optional float32 C-contiguous array the result is written to. algo: a name of "
        "convlab.algos(pass); 'auto' picks the fastest here.";
    m.def("forward", &py_forward, py::arg("problem"), py::arg("src"), py::arg("wei"),
          py::arg("bias") = py::none(), py::arg("algo") = "auto", py::arg("out") = py::none(),
          (std::string("dst = conv(src, wei) + bias.") + array_rule).c_str());
    m.def("backward_data", &py_backward_data, py::arg("problem"), py::arg("diff_dst"),
          py::arg("wei"), py::arg("algo") = "auto", py::arg("out") = py::none(),
          (std::string("diff_src: the gradient of the input.") + array_rule).c_str());
    m.def("backward_weight", &py_backward_weight, py::arg("problem"), py::arg("src"),
          py::arg("diff_dst"), py::arg("algo") = "auto", py::arg("out") = py::none(),
          (std::string("diff_wei: the gradient of the weights.") + array_rule).c_str());
    m.def("backward_bias", &py_backward_bias, py::arg("problem"), py::arg("diff_dst"),
          py::arg("algo") = "direct", "diff_bias (K): diff_dst summed over N and space.");
    m.def("algos", &algos, py::arg("pass") = py::none(), py::arg("problem") = py::none(),
          "The algorithm names of a pass (fwd, bwd_data, bwd_weight, bwd_bias), or a dict of all "
          "passes; with a problem, only those that compute it.");

    py::class_<IndexMap>(m, "Map",
                         "An index map of the engine (convlab.map): a gather (every destination "
                         "element reads one source element or is a padding zero) or a reduce "
                         "(every source element adds into one destination element, or nowhere).")
        .def_property_readonly("name", &IndexMap::name)
        .def_property_readonly("kind",
                               [](const IndexMap& x) {
                                   return x.kind() == IndexMap::Kind::Gather ? "gather" : "reduce";
                               })
        .def_property_readonly("src_shape",
                               [](const IndexMap& x) { return to_tuple(x.src().dims); })
        .def_property_readonly("dst_shape",
                               [](const IndexMap& x) { return to_tuple(x.dst().dims); })
        .def_property_readonly("src_names", [](const IndexMap& x) { return x.src().names; })
        .def_property_readonly("dst_names", [](const IndexMap& x) { return x.dst().names; })
        .def(
            "gather_index",
            [](const IndexMap& x) {
                if (x.kind() != IndexMap::Kind::Gather)
                    throw py::value_error(x.name() +
                                          " is a reduce map (destinations sum several sources): "
                                          "use scatter_index()");
                return index_array(x);
            },
            "int64, shaped like the destination: the source linear index each element reads, -1 "
            "for a padding zero. dst = numpy.where(idx < 0, 0, src.ravel()[idx]).")
        .def(
            "scatter_index",
            [](const IndexMap& x) {
                if (x.kind() != IndexMap::Kind::Reduce)
                    throw py::value_error(x.name() +
                                          " is a gather map (a source may feed several "
                                          "destinations): use gather_index()");
                return index_array(x);
            },
            "int64, shaped like the source of a reduce map: the destination linear index each "
            "element adds into, -1 for none. numpy.add.at(dst.ravel(), idx[idx >= 0], "
            "src[idx >= 0]).")
        .def("pairs", &pairs,
             "int64 (pairs, 2): [src_linear, dst_linear] in the order of `convlab map` (the line "
             "axis innermost); -1 for a padding zero (gather) or no destination (reduce).")
        .def(
            "formula",
            [](const IndexMap& x, const py::object& coord) {
                return x.pair_text(domain_linear(x, coord));
            },
            py::arg("coord"),
            "The pair of one destination element (a source element for a reduce), given as a "
            "coordinate tuple or a linear index, as `convlab map` prints it: 'dst(n=0,g=0,row=1,"
            "col=2) <- src(n=0,c=0,h=1,w=2)', '<- 0' for a padding zero. The engine holds maps "
            "as functions, not as arithmetic text: the source coordinate is what it gives (the "
            "app's hover shows the arithmetic).")
        .def(
            "source",
            [](const IndexMap& x, const py::object& coord) -> py::object {
                if (x.kind() != IndexMap::Kind::Gather)
                    throw py::value_error(x.name() + " is a reduce map: use destination()");
                const dim_t s = x.map(domain_linear(x, coord));
                if (s < 0) return py::none();
                Dims c(static_cast<std::size_t>(x.src().rank()));
                x.src().coord_of(s, c);
                return to_tuple(c);
            },
            py::arg("coord"),
            "The source coordinate a destination element reads, or None for a padding zero.")
        .def(
            "destination",
            [](const IndexMap& x, const py::object& coord) -> py::object {
                if (x.kind() != IndexMap::Kind::Reduce)
                    throw py::value_error(x.name() + " is a gather map: use source()");
                const dim_t d = x.map(domain_linear(x, coord));
                if (d < 0) return py::none();
                Dims c(static_cast<std::size_t>(x.dst().rank()));
                x.dst().coord_of(d, c);
                return to_tuple(c);
            },
            py::arg("coord"),
            "The destination coordinate a source element adds into, or None for none.")
        .def("__call__", &apply_map, py::arg("src"),
             "Executes the map on a float32 array of the source shape.")
        .def("__repr__", [](const IndexMap& x) {
            return "convlab.Map('" + x.name() + "', " +
                   (x.kind() == IndexMap::Kind::Gather ? "gather" : "reduce") + ", src " +
                   x.src().str() + " -> dst " + x.dst().str() + ")";
        });

    m.def(
        "map",
        [](const std::string& name, const Problem& p, std::optional<dim_t> c0) {
            return map_by_name(name, p, c0);
        },
        py::arg("name"), py::arg("problem"), py::arg("c0") = py::none(),
        "The index map `convlab map --map NAME` prints: im2col col2im strided pad fliprot tnc "
        "winograd; DaVinci (c0 = C0 of the blocked formats, default 16): nc1hwc0 unpack_nc1hwc0 "
        "fractal_z fractal_z_3d unpack_fractal_z tnc5d tncf fliprot_fz strided5d pad5d "
        "im2col_fractal (with c0, tnc and fliprot mean tnc5d and fliprot_fz).");
    m.def(
        "maps", [] { return map_registry_names(); }, "Every name convlab.map accepts.");

    m.def("to_nc1hwc0", &to_nc1hwc0, py::arg("x"), py::arg("c0") = davinci::kC0,
          "Activations (N, C, [[D,] H,] W) packed: NC1WC0 (N, C1, W, C0), NC1HWC0 (N, C1, H, W, "
          "C0) or NDC1HWC0 (N, D, C1, H, W, C0), C1 = ceil(C / C0), padding lanes zero.");
    m.def("from_nc1hwc0", &from_nc1hwc0, py::arg("packed"), py::arg("channels"),
          "The inverse of to_nc1hwc0: channels = the logical C (C0 is the last dim).");
    m.def("to_fractal_z", &to_fractal_z, py::arg("w"), py::arg("c0") = davinci::kC0,
          "Weights (O, I, kernel...) packed: FRACTAL_Z (C1*KH*KW, N1, 16, C0), 1-D with KH = 1, or "
          "FRACTAL_Z_3D (KD*C1*KH*KW, N1, 16, C0); C1 = ceil(I / C0), N1 = ceil(O / 16).");
    m.def("from_fractal_z", &from_fractal_z, py::arg("packed"), py::arg("shape"),
          "The inverse of to_fractal_z: shape = the weights' (O, I, kernel...).");
}
