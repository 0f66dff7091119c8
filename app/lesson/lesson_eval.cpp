// Evaluating lesson steps with the engine: named tensors, checks, validation.
//
// Index of sections:
//   [SECTION] Data: inline tensors and generated integers
//   [SECTION] Convolution steps
//   [SECTION] Map tensors
//   [SECTION] Network steps
//   [SECTION] Checks and highlights
//   [SECTION] evaluate / validate
//   [SECTION] Text output and lesson files
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/layers.hpp"
#include "convlab/map_registry.hpp"
#include "convlab/maps.hpp"
#include "data/data_dir.hpp"
#include "lesson/lesson.hpp"
#include "lesson/views.hpp"

namespace convlab::lesson {

const NamedTensor* StepResult::find(std::string_view name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

std::size_t StepResult::passed() const {
    return static_cast<std::size_t>(
        std::count_if(checks.begin(), checks.end(), [](const CheckResult& c) { return c.passed; }));
}

std::string check_line(const Lesson& l, std::size_t k, std::size_t c, const CheckResult& r) {
    return std::string(r.passed ? "PASS " : "FAIL ") + l.steps[k].checks[c].pos.str() + ": step " +
           std::to_string(k + 1) + ": " + r.message;
}

namespace {

// [SECTION] Data: inline tensors and generated integers

std::vector<dim_t> squeezed(const std::vector<dim_t>& d) {
    std::vector<dim_t> s;
    for (dim_t x : d)
        if (x != 1) s.push_back(x);
    return s;
}

// An inline tensor as a tensor of `dims`: the values must be as many, and the nesting must give
// the same dims once size-1 axes are left out (or be a flat list).
Tensor to_tensor(const InlineTensor& it, const std::vector<dim_t>& dims, const std::string& what) {
    const dim_t n = product(dims);
    if (static_cast<dim_t>(it.values.size()) != n ||
        (it.dims.size() > 1 && squeezed(it.dims) != squeezed(dims)))
        throw LessonError(it.pos, what + " is written with dims " + dims_str(it.dims) +
                                      ", but the step needs " + dims_str(dims) +
                                      " (size-1 axes may be left out)");
    Tensor t(dims);
    std::copy(it.values.begin(), it.values.end(), t.f32());
    return t;
}

Tensor to_tensor(const InlineTensor& it, const std::string& what) {
    std::vector<dim_t> dims = it.dims;
    if (dims.empty()) dims = {1};
    return to_tensor(it, dims, what);
}

const InlineTensor* data_of(const Step& s, std::string_view name) {
    for (const auto& [k, v] : s.data)
        if (k == name) return &v;
    return nullptr;
}

Tensor input(const Step& s, const char* name, std::vector<dim_t> dims, std::uint64_t salt) {
    if (const InlineTensor* d = data_of(s, name)) return to_tensor(*d, dims, name);
    return seeded_integers(std::move(dims), s.seed, salt);
}

Tensor run_map(const IndexMap& m, const Tensor& src) {
    Tensor dst(m.dst().dims);
    m.execute(src.f32(), dst.f32());
    return dst;
}

void add(StepResult& r, std::string name, std::string desc, Tensor t,
         std::vector<std::string> dim_names = {}) {
    if (dim_names.size() != static_cast<std::size_t>(t.rank())) dim_names.clear();
    r.tensors.push_back({std::move(name), std::move(desc), std::move(t), std::move(dim_names)});
}

bool is_davinci_map(const std::string& name) {
    const MapEntry* e = find_map(name);
    return e && e->family == "davinci";
}

IndexMap map_of(const Step& s) {
    if (!find_map(s.map)) {
        std::string known;
        for (const auto& n : map_registry_names()) known += (known.empty() ? "" : ", ") + n;
        throw Error("unknown map '" + s.map + "' (maps: " + known + ")");
    }
    return build_map(s.map, s.problem, s.c0);
}

// [SECTION] Convolution steps

// A DaVinci tensor of a step: packed storage or a fractal algorithm's result.
bool is_davinci_tensor(const std::string& n) {
    static const std::vector<std::string> names{"src_nc1hwc0",
                                                "wei_fractal_z",
                                                "diff_dst_nc1hwc0",
                                                "dst.fractal",
                                                "diff_wei.fractal_via_forward",
                                                "diff_src.fractal_via_forward",
                                                "diff_wei_fractal_z"};
    return std::find(names.begin(), names.end(), n) != names.end();
}

// The step names a DaVinci tensor somewhere, or its view shows one (the view registry's tensors).
bool names_davinci(const Step& s) {
    for (const auto& h : s.highlights)
        if (is_davinci_tensor(h.tensor)) return true;
    for (const auto& h : s.hide)
        if (is_davinci_tensor(h.tensor)) return true;
    for (const auto& n : s.show)
        if (is_davinci_tensor(n)) return true;
    for (const auto& c : s.checks)
        if (is_davinci_tensor(c.tensor) || is_davinci_tensor(c.equals_tensor)) return true;
    if (const ViewSpec* v = find_view(s.view)) {
        if (!v->map.empty() && is_davinci_map(v->map)) return true;
        for (const auto& t : v->tensors)
            if (is_davinci_tensor(t)) return true;
    }
    return false;
}

void conv_tensors(const Step& s, StepResult& r) {
    const Problem& p = s.problem;
    const std::string d = "(" + to_descriptor(p) + ")";
    Tensor src = input(s, "src", p.src_dims(), 1);
    Tensor wei = input(s, "wei", p.wei_dims(), 2);
    Tensor diff_dst = input(s, "diff_dst", p.dst_dims(), 3);
    const InlineTensor* bias_data = data_of(s, "bias");
    Tensor bias = bias_data ? to_tensor(*bias_data, {p.oc}, "bias") : Tensor{};

    Tensor dst = forward(p, src, wei, bias_data ? &bias : nullptr, "direct");
    Tensor diff_src = backward_data(p, diff_dst, wei, "direct");
    Tensor diff_wei = backward_weight(p, src, diff_dst, "direct");
    Tensor diff_bias = backward_bias(p, diff_dst);

    // B (n, g, rows, cols) = im2col(src); B* = W_g^T dY (the column matrix col2im scatters).
    Tensor col = run_map(maps::im2col(p), src);
    Tensor diff_col(col.dims());
    const dim_t rows = p.icg() * p.kernel_spatial(), cols = p.out_spatial(), kg = p.ocg();
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t g = 0; g < p.groups; ++g)
            for (dim_t row = 0; row < rows; ++row)
                for (dim_t o = 0; o < cols; ++o) {
                    double acc = 0;
                    for (dim_t k = 0; k < kg; ++k)
                        acc += double(wei.f32()[(g * kg + k) * rows + row]) *
                               double(diff_dst.f32()[((n * p.oc + g * kg + k) * cols) + o]);
                    diff_col.f32()[((n * p.groups + g) * rows + row) * cols + o] =
                        static_cast<float>(acc);
                }

    // Backward data through the forward kernel: Strided(dY), pad with the leftover r, FlipRot(W).
    Tensor strided = run_map(maps::strided(p), diff_dst);
    const IndexMap pad = maps::pad_for_backward_data(p);
    Tensor padded = run_map(pad, strided);
    Tensor fliprot = run_map(maps::flip_rot(p), wei);
    Problem q = maps::backward_data_as_forward(p);
    for (int a = 0; a < q.ndims; ++a) {
        q.in[a] = padded.dims()[2 + a];
        q.pad_begin[a] = q.pad_end[a] = 0;
    }

    add(r, "src", "input activations X (N, C, in...) " + d, std::move(src));
    add(r, "wei", "weights W (K, C/G, k...)", std::move(wei));
    if (bias_data) add(r, "bias", "bias (K)", std::move(bias));
    add(r, "dst", "Y = conv(X, W): forward, direct loops", std::move(dst));
    add(r, "diff_dst", "dL/dY (N, K, out...), the gradient arriving from above",
        std::move(diff_dst));
    add(r, "diff_src", "dL/dX: backward data, direct loops", std::move(diff_src));
    add(r, "diff_wei", "dL/dW: backward weight, direct loops", std::move(diff_wei));
    add(r, "diff_bias", "dL/db: sum of dY over batch and space", std::move(diff_bias));
    add(r, "col", "B = im2col(X) (n, g, C/G*k..., out...)", std::move(col));
    add(r, "diff_col", "B* = W^T dY per image and group (what col2im scatter-adds)",
        std::move(diff_col));
    add(r, "diff_dst_strided", "Strided(dY): zero insertion, (out-1)*s+1 per axis",
        std::move(strided));
    add(r, "diff_dst_padded",
        "Strided(dY) padded by (k-1)d - pb before and (k-1)d - pe + r after (negative: crop)",
        std::move(padded));
    if (q.validate().empty()) {
        const Tensor pd = r.find("diff_dst_padded")->value;
        add(r, "diff_src_via_forward",
            "dL/dX as a stride-1 forward convolution of the padded Strided(dY) with FlipRot(W)",
            forward(q, pd, fliprot, nullptr, "direct"));
    }
    add(r, "wei_fliprot", "FlipRot(W) (C, K/G, k...): channels swapped, kernel reversed",
        std::move(fliprot));
    Tensor src_tnc = run_map(maps::tnc_src(p), r.find("src")->value);
    add(r, "src_tnc", "TNC(X): X as (C, N, in...)", std::move(src_tnc));
    Tensor diff_dst_tnc = run_map(maps::tnc_diff_dst(p), r.find("diff_dst")->value);
    add(r, "diff_dst_tnc", "TNC(dY): dY as (K, N, out...)", std::move(diff_dst_tnc));

    for (const std::string& c : s.compare) {
        const auto colon = c.find(':');
        const Pass pass = parse_pass(c.substr(0, colon));
        const std::string algo = c.substr(colon + 1);
        // Copies: add() grows r.tensors, which would leave references dangling.
        const Tensor x = r.find("src")->value;
        const Tensor w = r.find("wei")->value;
        const Tensor dy = r.find("diff_dst")->value;
        switch (pass) {
            case Pass::Forward: {
                const Tensor b = bias_data ? r.find("bias")->value : Tensor{};
                add(r, "dst." + algo, "Y by " + algo,
                    forward(p, x, w, bias_data ? &b : nullptr, algo));
            } break;
            case Pass::BackwardData:
                add(r, "diff_src." + algo, "dL/dX by " + algo, backward_data(p, dy, w, algo));
                break;
            case Pass::BackwardWeight:
                add(r, "diff_wei." + algo, "dL/dW by " + algo, backward_weight(p, x, dy, algo));
                break;
            case Pass::BackwardBias:
                add(r, "diff_bias." + algo, "dL/db by " + algo, backward_bias(p, dy));
                break;
        }
    }

    // DaVinci tensors for the fractal and tnc views, DaVinci maps, and steps that name them.
    if (is_davinci_map(s.map) || names_davinci(s)) {
        // Copies: add() grows r.tensors, which would leave references dangling.
        const Tensor x = r.find("src")->value;
        const Tensor w = r.find("wei")->value;
        const Tensor dy = r.find("diff_dst")->value;
        const dim_t c0 = s.c0;
        const IndexMap px = davinci::pack_activation(p.src_dims(), c0);
        const IndexMap pw = davinci::pack_weight(p.wei_dims(), c0);
        const IndexMap py = davinci::pack_activation(p.dst_dims(), c0);
        add(r, "src_nc1hwc0",
            "X packed to NC1HWC0 / NDC1HWC0 storage (C0 = " + std::to_string(c0) +
                "), padding lanes zero",
            run_map(px, x), px.dst().names);
        add(r, "wei_fractal_z",
            "W packed to FRACTAL_Z / FRACTAL_Z_3D storage (C0 = " + std::to_string(c0) + ")",
            run_map(pw, w), pw.dst().names);
        add(r, "diff_dst_nc1hwc0", "dY packed to NC1HWC0 / NDC1HWC0", run_map(py, dy),
            py.dst().names);
        davinci::Options o;
        o.c0 = c0;
        add(r, "dst.fractal",
            "Y by the fractal forward (NC1HWC0 x FRACTAL_Z, 16x16 tiles), unpacked",
            davinci::forward(p, x, w, nullptr, o));
        add(r, "diff_wei.fractal_via_forward",
            "dL/dW by the fractal scheme (TNC(X), TNCf(dY), fractal conv), unpacked",
            davinci::backward_weight(p, x, dy, o));
        add(r, "diff_src.fractal_via_forward",
            "dL/dX by the fractal scheme (strided5d, pad5d, fliprot_fz, fractal conv), unpacked",
            davinci::backward_data(p, dy, w, o));
        // The storage in the dims of W's FRACTAL_Z (C1 k..., N1, 16, C0): fractal by fractal.
        Tensor dwfz = davinci::backward_weight_fz(p, x, dy, o);
        const dim_t size = dwfz.layout().storage_size();
        Tensor storage(pw.dst().numel() == size ? pw.dst().dims : std::vector<dim_t>{size});
        std::copy(static_cast<const float*>(dwfz.raw()),
                  static_cast<const float*>(dwfz.raw()) + storage.numel(), storage.f32());
        add(r, "diff_wei_fractal_z",
            "dL/dW in FRACTAL_Z / FRACTAL_Z_3D storage (fp32), as Ascend's backprop filter",
            std::move(storage), pw.dst().names);
    }
}

// [SECTION] Map tensors

// The tensor a map naturally reads, when the step has one of the right size; else an arange
// (0, 1, 2 ... in the map's source order: every value names its own index).
// The tensor a map converts, by its registry role (src, wei, diff_dst_strided ...) when the step
// has it at the map's size; else an arange (each element its own index).
Tensor map_source(const StepResult& r, const std::string& name, const IndexMap& m) {
    const MapEntry* e = find_map(name);
    if (e && !e->src_role.empty())
        if (const NamedTensor* t = r.find(e->src_role))
            if (t->value.numel() == m.src().numel()) {
                Tensor s(m.src().dims);
                std::copy(t->value.f32(), t->value.f32() + s.numel(), s.f32());
                return s;
            }
    Tensor s(m.src().dims);
    for (dim_t i = 0; i < s.numel(); ++i) s.f32()[i] = static_cast<float>(i);
    return s;
}

void map_tensors(const Step& s, StepResult& r) {
    const IndexMap m = map_of(s);
    r.map_steps = m.num_steps(s.granularity);
    Tensor src = map_source(r, s.map, m);
    Tensor full(m.dst().dims), played(m.dst().dims);
    m.execute(src.f32(), full.f32());
    const dim_t end = s.step_end < 0 ? r.map_steps : std::min<dim_t>(s.step_end, r.map_steps);
    m.execute_steps(s.granularity, end, src.f32(), played.f32());
    add(r, "map.src", "source of map " + m.name(), std::move(src), m.src().names);
    add(r, "map.dst", "destination of map " + m.name() + ", every step", std::move(full),
        m.dst().names);
    add(r, "map.dst_played",
        "destination after steps [0, " + std::to_string(end) + ") at " +
            granularity_name(s.granularity) + " granularity",
        std::move(played), m.dst().names);
}

// [SECTION] Network steps

std::unique_ptr<layers::Layer> build_layer(const LayerSpec& l, std::size_t index) {
    using namespace layers;
    const std::uint64_t seed = l.seed ? l.seed : 1000 + index;
    auto weights = [&](std::vector<dim_t> dims) {
        return l.wei.present() ? to_tensor(l.wei, dims, "'wei' of layer " + l.name)
                               : seeded_integers(std::move(dims), seed, 2);
    };
    auto bias = [&](std::vector<dim_t> dims) {
        return l.bias.present() ? to_tensor(l.bias, dims, "'bias' of layer " + l.name) : Tensor{};
    };
    if (l.type == "conv")
        return std::make_unique<Conv>(l.name, l.problem, weights(l.problem.wei_dims()),
                                      bias({l.problem.oc}));
    if (l.type == "conv_transposed")
        return std::make_unique<ConvTransposed>(l.name, l.problem, weights(l.problem.wei_dims()),
                                                bias({l.problem.ic}));
    if (l.type == "locally_connected")
        return std::make_unique<LocallyConnected>(l.name, l.problem,
                                                  weights(locally_connected_wei_dims(l.problem)),
                                                  bias({l.problem.oc, l.problem.out_spatial()}));
    if (l.type == "relu") return std::make_unique<ReLU>(l.name);
    if (l.type == "max_pool") return std::make_unique<MaxPool>(l.name, Pool{l.kernel, l.stride});
    if (l.type == "global_max_pool") return std::make_unique<GlobalMaxPool>(l.name);
    // fc: the weights give O and F.
    Tensor w = to_tensor(l.wei, "'wei' of layer " + l.name);
    if (w.rank() != 2) throw LessonError(l.wei.pos, "fc 'wei' must be nested arrays O x F");
    Tensor b =
        l.bias.present() ? to_tensor(l.bias, {w.dims()[0]}, "'bias' of layer " + l.name) : Tensor{};
    return std::make_unique<FullyConnected>(l.name, std::move(w), std::move(b));
}

void network_tensors(const NetworkSpec& spec, StepResult& r) {
    layers::Sequential net;
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        const LayerSpec& l = spec.layers[i];
        // Layer names become tensor names: they must be unique and not shadow another tensor.
        static const std::vector<std::string> reserved{"input", "probs", "loss"};
        bool taken = r.find(l.name) != nullptr ||
                     std::find(reserved.begin(), reserved.end(), l.name) != reserved.end();
        for (std::size_t j = 0; j < i; ++j) taken = taken || spec.layers[j].name == l.name;
        if (taken)
            throw LessonError(l.pos, "layer name '" + l.name +
                                         "' is taken (by another layer or a tensor of the step)");
        try {
            net.add(build_layer(l, i));
        } catch (const LessonError&) {
            throw;
        } catch (const Error& e) {
            throw LessonError(l.pos, "layer " + l.name + ": " + e.what());
        }
    }
    Tensor x = to_tensor(spec.input, "'input'");
    if (x.rank() < 3)
        throw LessonError(spec.input.pos, "'input' must be nested arrays (N, C, spatial...)");
    try {
        net.forward(x);
    } catch (const Error& e) {
        // Layer k failed when only activations 0..k exist.
        const std::size_t k = std::min(net.activations().size(), spec.layers.size()) - 1;
        throw LessonError(spec.layers[k].pos, "layer " + spec.layers[k].name + ": " + e.what());
    }
    try {
        r.loss = net.loss(spec.target);
        net.backward();
    } catch (const Error& e) {
        throw LessonError(spec.pos, e.what());
    }
    add(r, "input", "network input x", net.activations()[0]);
    for (std::size_t k = 0; k < net.layers().size(); ++k) {
        const auto& l = net.layers()[k];
        add(r, l->name(), std::string("output of ") + l->kind() + " layer " + l->name(),
            net.activations()[k + 1]);
    }
    add(r, "probs", "softmax of the logits", net.probs());
    Tensor loss({1});
    loss.f32()[0] = static_cast<float>(r.loss);
    add(r, "loss", "softmax cross-entropy, mean over the batch", std::move(loss));
    add(r, "diff_input", "dL/dx", net.diffs()[0]);
    for (std::size_t k = 0; k < net.layers().size(); ++k) {
        const auto& l = net.layers()[k];
        add(r, "diff_" + l->name(), "dL/d(output of " + l->name() + ")", net.diffs()[k + 1]);
    }
    for (const auto& l : net.layers())
        for (const layers::Param& p : l->params()) {
            add(r, l->name() + "." + p.name, p.name + " of layer " + l->name(), *p.value);
            add(r, l->name() + ".diff_" + p.name, "dL/d " + p.name + " of layer " + l->name(),
                *p.grad);
        }
}

// [SECTION] Checks and highlights

std::string names_of(const StepResult& r) {
    std::string s;
    for (const auto& t : r.tensors) s += (s.empty() ? "" : ", ") + t.name;
    return s;
}

const NamedTensor& need(const StepResult& r, const std::string& name, const SourcePos& pos,
                        const char* what) {
    if (const NamedTensor* t = r.find(name)) return *t;
    throw LessonError(pos, std::string(what) + " names tensor '" + name +
                               "', which this step does not have (tensors: " + names_of(r) + ")");
}

std::string index_str(const std::vector<dim_t>& at) {
    if (at.empty()) return "";
    std::string s = "[";
    for (std::size_t i = 0; i < at.size(); ++i) s += (i ? "," : "") + std::to_string(at[i]);
    return s + "]";
}

// The block an index prefix selects: its first linear index and its dims.
dim_t block_of(const Tensor& t, const std::vector<dim_t>& at, std::vector<dim_t>& block,
               const SourcePos& pos, const std::string& what) {
    if (static_cast<int>(at.size()) > t.rank())
        throw LessonError(pos, what + index_str(at) + ": " + std::to_string(at.size()) +
                                   " indices for a tensor of dims " + t.shape_str());
    dim_t lin = 0;
    for (std::size_t i = 0; i < at.size(); ++i) {
        if (at[i] < 0 || at[i] >= t.dims()[i])
            throw LessonError(pos, what + index_str(at) + ": index " + std::to_string(i) + " = " +
                                       std::to_string(at[i]) + " is outside [0, " +
                                       std::to_string(t.dims()[i]) + ") of dims " + t.shape_str());
        lin = lin * t.dims()[i] + at[i];
    }
    block.assign(t.dims().begin() + static_cast<std::ptrdiff_t>(at.size()), t.dims().end());
    return lin * product(block);
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

CheckResult run_check(const Check& c, const StepResult& r) {
    const NamedTensor& t = need(r, c.tensor, c.pos, "the check");
    std::vector<dim_t> block;
    const dim_t first = block_of(t.value, c.at, block, c.pos, c.tensor);
    const dim_t n = product(block);
    std::vector<double> expected;
    std::string against;
    if (!c.equals_tensor.empty()) {
        const NamedTensor& e = need(r, c.equals_tensor, c.pos, "the check's equals_tensor");
        std::vector<dim_t> eblock;
        const dim_t efirst = block_of(e.value, c.equals_at, eblock, c.pos, c.equals_tensor);
        if (product(eblock) != n || squeezed(eblock) != squeezed(block))
            throw LessonError(c.pos, "check " + c.tensor + index_str(c.at) + " selects dims " +
                                         dims_str(block) + " but " + c.equals_tensor +
                                         index_str(c.equals_at) + " has dims " + dims_str(eblock));
        for (dim_t i = 0; i < n; ++i) expected.push_back(e.value.f32()[efirst + i]);
        against = c.equals_tensor + index_str(c.equals_at);
    } else {
        const InlineTensor& e = c.equals;
        if (static_cast<dim_t>(e.values.size()) != n ||
            (e.dims.size() > 1 && squeezed(e.dims) != squeezed(block)))
            throw LessonError(e.pos, "check " + c.tensor + index_str(c.at) + " selects dims " +
                                         dims_str(block) + " (" + std::to_string(n) +
                                         " values) but 'equals' gives dims " + dims_str(e.dims));
        for (float v : e.values) expected.push_back(v);
    }
    CheckResult res;
    dim_t worst_i = 0;
    for (dim_t i = 0; i < n; ++i) {
        double d =
            std::abs(double(t.value.f32()[first + i]) - expected[static_cast<std::size_t>(i)]);
        if (std::isnan(d)) d = INFINITY;
        if (d > res.worst) {
            res.worst = d;
            worst_i = i;
        }
    }
    res.passed = res.worst <= c.within;
    const std::string where = c.tensor + index_str(c.at);
    if (n == 1) {
        res.message = where + " = " + num(t.value.f32()[first]) + ", expected " +
                      (against.empty() ? num(expected[0]) : against + " = " + num(expected[0]));
    } else {
        std::vector<dim_t> coord(block.size());
        dim_t rest = worst_i;
        for (std::size_t a = block.size(); a-- > 0;) {
            coord[a] = rest % block[a];
            rest /= block[a];
        }
        res.message = where + " " + dims_str(block) + " vs " +
                      (against.empty() ? "the given values" : against) +
                      ": max |got - expected| = " + num(res.worst) + " at " + index_str(coord) +
                      " (got " + num(t.value.f32()[first + worst_i]) + ", expected " +
                      num(expected[static_cast<std::size_t>(worst_i)]) + ")";
    }
    res.message += " (within " + num(c.within) + "): " + (res.passed ? "pass" : "FAIL");
    return res;
}

}  // namespace

// [SECTION] evaluate / validate

StepResult evaluate(const Lesson& l, std::size_t index) {
    if (index >= l.steps.size())
        throw LessonError({l.file, 0, 0}, "step " + std::to_string(index + 1) + " of " +
                                              std::to_string(l.steps.size()));
    const Step& s = l.steps[index];
    StepResult r;
    if (s.has_problem) {
        try {
            conv_tensors(s, r);
        } catch (const LessonError&) {
            throw;
        } catch (const Error& e) {
            throw LessonError(s.problem_pos, e.what());
        }
    }
    if (!s.map.empty()) {
        try {
            map_tensors(s, r);
        } catch (const Error& e) {
            throw LessonError(
                s.map_pos, "map '" + s.map + "' for problem " + s.problem_text + ": " + e.what());
        }
    }
    if (s.network.present()) network_tensors(s.network, r);
    for (std::size_t i = 0; i < s.show.size(); ++i) need(r, s.show[i], s.show_pos[i], "'show'");
    for (const Highlight& h : s.highlights) {
        std::vector<dim_t> block;
        block_of(need(r, h.tensor, h.pos, "the highlight").value, h.at, block, h.pos, h.tensor);
    }
    for (const Highlight& h : s.hide) {
        std::vector<dim_t> block;
        block_of(need(r, h.tensor, h.pos, "the 'hide' entry").value, h.at, block, h.pos, h.tensor);
    }
    for (const Check& c : s.checks) r.checks.push_back(run_check(c, r));
    return r;
}

void validate_step(const Lesson& l, std::size_t step) {
    (void)evaluate(l, step);
}

void validate(const Lesson& l) {
    for (std::size_t i = 0; i < l.steps.size(); ++i) validate_step(l, i);
}

// [SECTION] Text output and lesson files

std::string format_tensor(const Tensor& t, int max_elements) {
    std::ostringstream out;
    out << t.shape_str();
    if (t.numel() > max_elements) {
        out << " (" << t.numel() << " elements, not printed)\n";
        return out.str();
    }
    out << "\n";
    const int rank = t.rank();
    const dim_t cols = rank >= 1 ? t.dims()[rank - 1] : 1;
    const dim_t rows = rank >= 2 ? t.dims()[rank - 2] : 1;
    const dim_t blocks = t.numel() / std::max<dim_t>(rows * cols, 1);
    std::vector<dim_t> coord(static_cast<std::size_t>(rank));
    for (dim_t b = 0; b < blocks; ++b) {
        if (rank > 2) {
            t.coord_of(b * rows * cols, coord);
            out << "  [";
            for (int a = 0; a < rank - 2; ++a) out << (a ? "," : "") << coord[a];
            out << ",:,:]\n";
        }
        for (dim_t i = 0; i < rows; ++i) {
            out << "   ";
            for (dim_t j = 0; j < cols; ++j) {
                char buf[32];
                std::snprintf(buf, sizeof buf, " %7.4g",
                              double(t.f32()[(b * rows + i) * cols + j]));
                out << buf;
            }
            out << "\n";
        }
    }
    return out.str();
}

std::string default_lesson_dir() {
    return data::lessons_dir();
}

std::vector<std::string> lesson_files(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw Error("lesson directory '" + dir + "' does not exist");
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".toml") v.push_back(e.path().string());
    if (ec) throw Error("cannot list '" + dir + "': " + ec.message());
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace convlab::lesson
