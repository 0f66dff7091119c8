#include "onednn_peer.hpp"

#include <array>
#include <vector>

#ifdef CONVLAB_HAVE_DNNL
#include <dnnl.hpp>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace bench {

#ifdef CONVLAB_HAVE_DNNL

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

int pass_index(convlab::Pass p) {
    switch (p) {
        case convlab::Pass::Forward:
            return 0;
        case convlab::Pass::BackwardData:
            return 1;
        case convlab::Pass::BackwardWeight:
            return 2;
        default:
            break;
    }
    throw convlab::Error(std::string("oneDNN peer: no primitive for pass ") +
                         convlab::pass_name(p));
}

// Dense row-major strides of dims: ConvLab's plain layout.
memory::dims row_major(const memory::dims& dims) {
    memory::dims strides(dims.size());
    memory::dim s = 1;
    for (std::size_t i = dims.size(); i-- > 0;) {
        strides[i] = s;
        s *= dims[i];
    }
    return strides;
}

memory::dims spatial(const convlab::Problem& p, const convlab::SpatialDims& v, memory::dim add) {
    memory::dims d;
    for (int i = 0; i < p.ndims; ++i) d.push_back(v[static_cast<std::size_t>(i)] + add);
    return d;
}

std::string isa_name(dnnl::cpu_isa isa) {
    switch (isa) {
        case dnnl::cpu_isa::sse41:
            return "sse41";
        case dnnl::cpu_isa::avx:
            return "avx";
        case dnnl::cpu_isa::avx2:
            return "avx2";
        case dnnl::cpu_isa::avx2_vnni:
            return "avx2_vnni";
        case dnnl::cpu_isa::avx512_mic:
            return "avx512_mic";
        case dnnl::cpu_isa::avx512_mic_4ops:
            return "avx512_mic_4ops";
        case dnnl::cpu_isa::avx512_core:
            return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx:
            return "avx512_core_amx";
        default:
            return "isa " + std::to_string(static_cast<int>(isa));
    }
}

// The text of a oneDNN error while setting up `what` ("forward", "backward data", "backward
// weights") by algorithm alg_name ("convolution_winograd"). Where oneDNN has no implementation of
// it on this CPU (dnnl_unimplemented: Winograd, for one, needs avx512_core in oneDNN 2.x), said
// in words, naming the algorithm and the CPU's ISA, oneDNN's own text after it in parentheses.
std::string setup_error(const dnnl::error& e, const std::string& alg_name, const char* what) {
    if (e.status != dnnl_unimplemented) return e.what();
    return "oneDNN has no " + alg_name + " implementation of this " + what + " on this CPU (ISA " +
           isa_name(dnnl::get_effective_cpu_isa()) + ") (" + e.what() + ")";
}

// Calls make(t) for each output data type t in turn until oneDNN implements one; the last
// attempt's error, and any error other than dnnl_unimplemented, is thrown.
template <class F>
void first_implemented(const std::vector<dt>& outs, F make) {
    for (std::size_t i = 0; i < outs.size(); ++i) {
        try {
            make(outs[i]);
            return;
        } catch (const dnnl::error& e) {
            if (e.status != dnnl_unimplemented || i + 1 == outs.size()) throw;
        }
    }
}

dnnl::engine& cpu_engine() {
    static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    return eng;
}

}  // namespace

struct PeerConv::Impl {
    dnnl::engine& eng = cpu_engine();
    dnnl::stream stream{cpu_engine()};

    // Plain (ConvLab) descriptors.
    memory::desc src_plain, wei_plain, dst_plain;

    dnnl::convolution_forward::primitive_desc fwd_pd;
    dnnl::convolution_backward_data::primitive_desc bwd_d_pd;
    dnnl::convolution_backward_weights::primitive_desc bwd_w_pd;

    std::array<bool, 3> ok{};
    std::array<std::string, 3> err;
    std::array<dnnl::primitive, 3> prim;

    // Per-pass memories in the primitive's chosen layouts.
    memory f_src, f_wei, f_dst;            // forward
    memory d_diff_dst, d_wei, d_diff_src;  // backward data
    memory w_src, w_diff_dst, w_diff_wei;  // backward weights

    void reorder_in(const memory::desc& plain, const float* data, memory& to) {
        memory user(plain, eng, const_cast<float*>(data));
        dnnl::reorder(user, to).execute(stream, user, to);
        stream.wait();
    }
    void reorder_out(memory from, const memory::desc& plain, float* data) {
        memory user(plain, eng, data);
        dnnl::reorder(from, user).execute(stream, from, user);
        stream.wait();
    }
};

bool PeerConv::available() {
    return true;
}

std::optional<convlab::bench::PeerSpec> PeerConv::spec(const std::string& algo, bool plain) {
    convlab::bench::PeerSpec s;
    s.name = plain ? "oneDNN-nchw" : "oneDNN";
    s.reorders_weights = !plain;
    s.description = describe() + ", algorithm convolution_" + algo +
                    (plain ? ", plain layouts (NCHW, OIHW: the engine's)" : "");
    s.set_threads = [](int threads) {
#ifdef _OPENMP
        omp_set_num_threads(threads);  // Debian's libdnnl runs on OpenMP
#else
        (void)threads;
#endif
    };
    s.create = [algo, plain](const convlab::Problem& p, const std::vector<convlab::Pass>& passes)
        -> std::unique_ptr<convlab::bench::PeerConv> {
        return std::make_unique<PeerConv>(p, passes, algo, plain);
    };
    s.dtypes = {convlab::DType::bf16};
    s.create_dtype = [algo, plain](const convlab::Problem& p,
                                   const std::vector<convlab::Pass>& passes,
                                   convlab::DType t) -> std::unique_ptr<convlab::bench::PeerConv> {
        return std::make_unique<PeerConv>(p, passes, algo, plain, t);
    };
    return s;
}

std::string PeerConv::describe() {
    const dnnl::version_t* v = dnnl::version();
    std::string runtime;
    switch (v->cpu_runtime) {
        case DNNL_RUNTIME_OMP:
            runtime = "OpenMP";
            break;
        case DNNL_RUNTIME_TBB:
            runtime = "TBB";
            break;
        case DNNL_RUNTIME_SEQ:
            runtime = "sequential";
            break;
        case DNNL_RUNTIME_THREADPOOL:
            runtime = "threadpool";
            break;
        default:
            runtime = std::to_string(v->cpu_runtime);
            break;
    }
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + " (CPU runtime " + runtime + ", ISA " +
           isa_name(dnnl::get_effective_cpu_isa()) + ")";
}

PeerConv::PeerConv(const convlab::Problem& p, const std::vector<convlab::Pass>& passes,
                   const std::string& algo, bool plain, convlab::DType dtype)
    : impl_(std::make_unique<Impl>()) {
    if (dtype == convlab::DType::f16)
        throw convlab::Error("oneDNN peer: fp16 convolution is not offered (fp32 and bf16 are)");
    const dnnl::algorithm alg = algo == "auto"       ? dnnl::algorithm::convolution_auto
                                : algo == "winograd" ? dnnl::algorithm::convolution_winograd
                                                     : dnnl::algorithm::convolution_direct;
    const std::string alg_name = algo == "auto"       ? "convolution_auto"
                                 : algo == "winograd" ? "convolution_winograd"
                                                      : "convolution_direct";
    Impl& m = *impl_;
    memory::dims src_dims{p.mb, p.ic}, dst_dims{p.mb, p.oc}, wei_dims;
    if (p.groups > 1) {
        wei_dims = {p.groups, p.ocg(), p.icg()};
    } else {
        wei_dims = {p.oc, p.ic};
    }
    for (int i = 0; i < p.ndims; ++i) {
        const auto a = static_cast<std::size_t>(i);
        src_dims.push_back(p.in[a]);
        dst_dims.push_back(p.out(i));
        wei_dims.push_back(p.kernel[a]);
    }
    const memory::dims strides = spatial(p, p.stride, 0);
    const memory::dims dilates = spatial(p, p.dilation, -1);  // oneDNN's dilation is 0-based
    const memory::dims pad_l = spatial(p, p.pad_begin, 0);
    const memory::dims pad_r = spatial(p, p.pad_end, 0);

    m.src_plain = memory::desc(src_dims, dt::f32, row_major(src_dims));
    m.wei_plain = memory::desc(wei_dims, dt::f32, row_major(wei_dims));
    m.dst_plain = memory::desc(dst_dims, dt::f32, row_major(dst_dims));
    // oneDNN's own layouts (tag::any), or with plain the engine's, the primitives reading and
    // writing them as they are; inputs in dtype, outputs fp32 (or, where oneDNN has no such
    // implementation, in dtype).
    const auto md = [plain](const memory::dims& dims, dt t) {
        return plain ? memory::desc(dims, t, row_major(dims)) : memory::desc(dims, t, tag::any);
    };
    const dt in = dtype == convlab::DType::bf16 ? dt::bf16 : dt::f32;
    const std::vector<dt> outs =
        in == dt::f32 ? std::vector<dt>{dt::f32} : std::vector<dt>{dt::f32, in};

    auto want = [&](convlab::Pass q) {
        for (convlab::Pass x : passes)
            if (x == q) return true;
        return false;
    };

    // The forward primitive descriptor is also the hint of both backward ones.
    bool fwd_ok = false;
    try {
        first_implemented(outs, [&](dt out) {
            dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, alg,
                                              md(src_dims, in), md(wei_dims, in), md(dst_dims, out),
                                              strides, dilates, pad_l, pad_r);
            m.fwd_pd = dnnl::convolution_forward::primitive_desc(d, m.eng);
        });
        fwd_ok = true;
    } catch (const dnnl::error& e) {
        // No forward, no backward either (its primitive descriptor is their hint).
        for (auto& s : m.err)
            s = e.status == dnnl_unimplemented ? setup_error(e, alg_name, "forward")
                                               : std::string("forward: ") + e.what();
    }
    if (fwd_ok && want(convlab::Pass::Forward)) {
        try {
            m.prim[0] = dnnl::convolution_forward(m.fwd_pd);
            m.f_src = memory(m.fwd_pd.src_desc(), m.eng);
            m.f_wei = memory(m.fwd_pd.weights_desc(), m.eng);
            m.f_dst = memory(m.fwd_pd.dst_desc(), m.eng);
            m.ok[0] = true;
        } catch (const dnnl::error& e) {
            m.err[0] = setup_error(e, alg_name, "forward");
        }
    }
    if (fwd_ok && want(convlab::Pass::BackwardData)) {
        try {
            first_implemented(outs, [&](dt out) {
                dnnl::convolution_backward_data::desc d(alg, md(src_dims, out), md(wei_dims, in),
                                                        md(dst_dims, in), strides, dilates, pad_l,
                                                        pad_r);
                m.bwd_d_pd = dnnl::convolution_backward_data::primitive_desc(d, m.eng, m.fwd_pd);
            });
            m.prim[1] = dnnl::convolution_backward_data(m.bwd_d_pd);
            m.d_diff_dst = memory(m.bwd_d_pd.diff_dst_desc(), m.eng);
            m.d_wei = memory(m.bwd_d_pd.weights_desc(), m.eng);
            m.d_diff_src = memory(m.bwd_d_pd.diff_src_desc(), m.eng);
            m.ok[1] = true;
        } catch (const dnnl::error& e) {
            m.err[1] = setup_error(e, alg_name, "backward data");
        }
    }
    if (fwd_ok && want(convlab::Pass::BackwardWeight)) {
        try {
            first_implemented(outs, [&](dt out) {
                dnnl::convolution_backward_weights::desc d(alg, md(src_dims, in), md(wei_dims, out),
                                                           md(dst_dims, in), strides, dilates,
                                                           pad_l, pad_r);
                m.bwd_w_pd = dnnl::convolution_backward_weights::primitive_desc(d, m.eng, m.fwd_pd);
            });
            m.prim[2] = dnnl::convolution_backward_weights(m.bwd_w_pd);
            m.w_src = memory(m.bwd_w_pd.src_desc(), m.eng);
            m.w_diff_dst = memory(m.bwd_w_pd.diff_dst_desc(), m.eng);
            m.w_diff_wei = memory(m.bwd_w_pd.diff_weights_desc(), m.eng);
            m.ok[2] = true;
        } catch (const dnnl::error& e) {
            m.err[2] = setup_error(e, alg_name, "backward weights");
        }
    }
    for (std::size_t i = 0; i < 3; ++i)
        if (!m.ok[i] && m.err[i].empty()) m.err[i] = "not requested";
}

PeerConv::~PeerConv() = default;

bool PeerConv::has(convlab::Pass pass) const {
    return impl_->ok[static_cast<std::size_t>(pass_index(pass))];
}

std::string PeerConv::error(convlab::Pass pass) const {
    return impl_->err[static_cast<std::size_t>(pass_index(pass))];
}

std::string PeerConv::impl(convlab::Pass pass) const {
    const Impl& m = *impl_;
    switch (pass_index(pass)) {
        case 0:
            return m.ok[0] ? m.fwd_pd.impl_info_str() : "-";
        case 1:
            return m.ok[1] ? m.bwd_d_pd.impl_info_str() : "-";
        default:
            return m.ok[2] ? m.bwd_w_pd.impl_info_str() : "-";
    }
}

void PeerConv::set_inputs(const float* src, const float* wei, const float* diff_dst) {
    Impl& m = *impl_;
    if (m.ok[0]) {
        m.reorder_in(m.src_plain, src, m.f_src);
        m.reorder_in(m.wei_plain, wei, m.f_wei);
    }
    if (m.ok[1]) {
        m.reorder_in(m.dst_plain, diff_dst, m.d_diff_dst);
        m.reorder_in(m.wei_plain, wei, m.d_wei);
    }
    if (m.ok[2]) {
        m.reorder_in(m.src_plain, src, m.w_src);
        m.reorder_in(m.dst_plain, diff_dst, m.w_diff_dst);
    }
}

void PeerConv::run(convlab::Pass pass) {
    Impl& m = *impl_;
    const int i = pass_index(pass);
    if (!m.ok[static_cast<std::size_t>(i)])
        throw convlab::Error("oneDNN peer: " + m.err[static_cast<std::size_t>(i)]);
    switch (i) {
        case 0:
            m.prim[0].execute(
                m.stream,
                {{DNNL_ARG_SRC, m.f_src}, {DNNL_ARG_WEIGHTS, m.f_wei}, {DNNL_ARG_DST, m.f_dst}});
            break;
        case 1:
            m.prim[1].execute(m.stream, {{DNNL_ARG_DIFF_DST, m.d_diff_dst},
                                         {DNNL_ARG_WEIGHTS, m.d_wei},
                                         {DNNL_ARG_DIFF_SRC, m.d_diff_src}});
            break;
        default:
            m.prim[2].execute(m.stream, {{DNNL_ARG_SRC, m.w_src},
                                         {DNNL_ARG_DIFF_DST, m.w_diff_dst},
                                         {DNNL_ARG_DIFF_WEIGHTS, m.w_diff_wei}});
            break;
    }
    m.stream.wait();
}

void PeerConv::output(convlab::Pass pass, float* plain) {
    Impl& m = *impl_;
    switch (pass_index(pass)) {
        case 0:
            m.reorder_out(m.f_dst, m.dst_plain, plain);
            break;
        case 1:
            m.reorder_out(m.d_diff_src, m.src_plain, plain);
            break;
        default:
            m.reorder_out(m.w_diff_wei, m.wei_plain, plain);
            break;
    }
}

#else  // !CONVLAB_HAVE_DNNL

struct PeerConv::Impl {};

bool PeerConv::available() {
    return false;
}
std::optional<convlab::bench::PeerSpec> PeerConv::spec(const std::string&, bool) {
    return std::nullopt;
}
std::string PeerConv::describe() {
    return "not built with oneDNN (no peer column)";
}
PeerConv::PeerConv(const convlab::Problem&, const std::vector<convlab::Pass>&, const std::string&,
                   bool, convlab::DType) {
    throw convlab::Error("convlab_bench was built without oneDNN");
}
PeerConv::~PeerConv() = default;
bool PeerConv::has(convlab::Pass) const {
    return false;
}
std::string PeerConv::error(convlab::Pass) const {
    return "not built with oneDNN";
}
std::string PeerConv::impl(convlab::Pass) const {
    return "-";
}
void PeerConv::set_inputs(const float*, const float*, const float*) {}
void PeerConv::run(convlab::Pass) {}
void PeerConv::output(convlab::Pass, float*) {}

#endif

}  // namespace bench
