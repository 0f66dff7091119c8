// implicit_gemm's gather helpers: a strided 1x1's input sampled at the strides, a stride-2
// input de-interleaved along w, and the images merged per product.
#include "omp_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "implicit_gemm_internal.hpp"

namespace convlab::detail {

// A 1x1 unpadded strided problem whose sampled positions all lie inside the input: its B is the
// input sampled at the strides (subsample_input), for nb images at most 4 MiB.
bool can_subsample(const Problem& p, dim_t nb) {
    if (p.kernel_spatial() != 1 || im2col_is_identity(p)) return false;
    if (static_cast<std::size_t>(nb * p.icg() * p.out_spatial()) * sizeof(float) > (4u << 20))
        return false;
    const Geom3 g = geom3(p);
    for (int x = 0; x < 3; ++x)
        if (g.pb[x] != 0 || (g.out[x] - 1) * g.s[x] >= g.in[x]) return false;
    return true;
}

// A 1x1 whose B is the input read in place, or its copy sampled at the strides (one image).
bool reads_input_1x1(const Problem& p) {
    return im2col_is_identity(p) || can_subsample(p, 1);
}

// sub (nn x cg x out positions) = channels [0, cg) of images [0, nn) at src (n_stride floats
// apart) sampled at the strides.
void subsample_input(const Geom3& g, const float* src, dim_t n_stride, dim_t nn, dim_t cg,
                     float* sub) {
    const dim_t is = g.in_size(), os = g.out_size();
    // The source of the line 8 lines on is prefetched while this one is copied (prefetch_ahead).
    // The bench calls a layer every 2 ms or so, and on the Zen 3 its input is back in memory by
    // then, whatever ran in between: a harness sampling res3a_branch1's 3.2 MB input on 2 threads,
    // only spinning between copies, took 0.06 ms back to back, 0.11 after 1 ms of spinning and 0.41
    // after 2 ms. Bench, 6 alternating rounds of 100 calls (batch 32: 3 of 10), pack_src medians:
    // res3a_branch1 at batch 1, scalar 0.50 ms, vectorised 0.39, and with the prefetch (4, 8 or 16
    // lines ahead) 0.32-0.33; at batch 32 15.9 -> 11.6 -> 10.2 (16 ahead: 10.0). With 28 or 14
    // floats a line (res4a, res5a) tied (4.9-6.0 ms, 2.1-2.3).
    constexpr dim_t kAhead = 8;
    const dim_t run_bytes = ((g.out[2] - 1) * g.s[2] + 1) * dim_t{sizeof(float)};
    // Both threads from 8192 elements: res5a at batch 1 (50176) left one thread waiting.
#pragma omp parallel for collapse(2) schedule(static) if (nn * cg * os > 8192)
    for (dim_t i = 0; i < nn; ++i)
        for (dim_t c = 0; c < cg; ++c) {
            const float* from = src + i * n_stride + c * is;
            float* to = sub + (i * cg + c) * os;
            for (dim_t od = 0; od < g.out[0]; ++od)
                for (dim_t oh = 0; oh < g.out[1]; ++oh) {
                    const float* line = from + (od * g.s[0] * g.in[1] + oh * g.s[1]) * g.in[2];
                    prefetch_ahead(line, kAhead * g.s[1] * g.in[2], run_bytes);
                    copy_run(line, g.s[2], 0, g.out[2], g.out[2],
                             to + (od * g.out[1] + oh) * g.out[2]);
                }
        }
}

// Stride 2 along w (conv1), not a 1x1 (subsample_input takes those): each input line is
// copied de-interleaved, even elements then odd ones, so that the packers copy runs instead of
// gathering every other float. For nb images at most 4 MiB.
bool can_deinterleave(const Problem& p, dim_t nb) {
    const Geom3 g = geom3(p);
    return g.s[2] == 2 && p.kernel_spatial() > 1 &&
           static_cast<std::size_t>(nb * p.icg() * p.in_spatial()) * sizeof(float) <= (4u << 20);
}

// dst (nn x cg x in positions) = channels [0, cg) of images [0, nn) at src (n_stride floats
// apart), each line de-interleaved; m then reads it (Im2col::deint).
void deinterleave_w(Im2col& m, dim_t nn, dim_t cg, float* dst) {
    const Geom3& g = m.g;
    const dim_t is = g.in_size(), w = g.in[2], we = (w + 1) / 2, lines = g.in[0] * g.in[1];
#pragma omp parallel for collapse(2) schedule(static) if (nn * cg * is > 65536)
    for (dim_t i = 0; i < nn; ++i)
        for (dim_t c = 0; c < cg; ++c)
            for (dim_t l = 0; l < lines; ++l) {
                const float* from = m.src + i * m.n_stride + c * is + l * w;
                float* to = dst + (i * cg + c) * is + l * w;
                for (dim_t e = 0; e < we; ++e) to[e] = from[2 * e];
                for (dim_t e = 0; e < w / 2; ++e) to[we + e] = from[2 * e + 1];
            }
    m.src = dst;
    m.n_stride = cg * is;
    m.deint = true;
    m.we = we;
}

// Images per GEMM: small images (deep layers, the via_forward reductions) are merged so that
// the GEMM has enough columns to fill its tiles; the merged output (K/G x images*cols) stays
// within 4 MiB. From 512 positions one image fills them nearly: there the merged output stays
// within 1 MiB (the L2 of a core), since copying it back to (N, K, out...) from beyond L2 cost
// more than the edge tiles saved (res3a_branch2c, 28x28 and K = 512, batch 32, 2 threads,
// alternating: 16.8 -> 15.6 ms; K = 128 keeps two images).
dim_t images_per_gemm(const Problem& p) {
    const dim_t cols = p.out_spatial();
    if (cols >= 1024) return 1;
    const dim_t cap = cols >= 512 ? (1 << 18) : (1 << 20);
    return std::clamp<dim_t>(std::min<dim_t>(2048 / cols, cap / (p.ocg() * cols)), 1, p.mb);
}

// Images per product capped so that a batch of at least two images per thread splits into
// equal blocks (32 images, 2 threads: 4 blocks of 8, not 10 + 10 + 10 + 2), and then, down to
// half the cap, into a number of blocks that the threads share evenly: 5 images a product made
// 7 blocks of 32 images, one thread computing 17 or 20 images while the other computed 15 or 12
// (the 14x14 1x1s with 1024 output channels at batch 32), 4 makes 8. The Zen 3, bench, batch 32,
// 3 alternating rounds, ratio to oneDNN's median: res4a_branch1's forward 1.336/1.332/1.415 ->
// 1.294/1.288/1.301, res4a_branch2c's 1.275/1.295/1.327 -> 1.253/1.227/1.282.
dim_t balanced_images(dim_t nb, dim_t mb) {
    const dim_t t = omp_get_max_threads();
    if (t <= 1 || omp_in_parallel() || mb < 2 * t) return nb;
    nb = std::clamp<dim_t>(mb / (2 * t), 1, nb);
    for (dim_t b = nb; 2 * b >= nb; --b)
        if (((mb + b - 1) / b) % t == 0) return b;
    return nb;
}

}  // namespace convlab::detail
