// ConvLab's SGEMM core: microkernels, packing, scratch buffers, the thread split.
//
// [SECTION] microkernels   portable 4x16 here; avx512 12x32 (and 8x48, 4x64 per product) in
//                          microkernel_avx512.cpp, avx2 6x16 in microkernel_avx2.cpp (compiled
//                          for their target with function attributes, picked at run time by what
//                          the CPU supports); A packed or read from its rows
// [SECTION] selection
// [SECTION] packing
// [SECTION] the packed-block loop
// [SECTION] scratch and split
#include "microkernel.hpp"

#include <unistd.h>
#include "omp_compat.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "microkernel_x86.hpp"
#include "parallel.hpp"

namespace convlab::detail {

namespace {

// [SECTION] microkernels

// Register tile: MR rows x NR columns of C held in registers for the whole k loop; each k step
// loads NR/W vectors of B and broadcasts MR values of A.

// Plain C++ (the compiler may vectorise the inner j loop for the build's target).
void kernel_portable(dim_t kc, const float* a, const float* b, float* c, dim_t ldc, bool acc,
                     dim_t lda) {
    constexpr int MR = 4, NR = 16;
    float t[MR][NR] = {};
    for (dim_t k = 0; k < kc; ++k) {
        for (int i = 0; i < MR; ++i) {
            const float ai = a[i];
            for (int j = 0; j < NR; ++j) t[i][j] += ai * b[j];
        }
        a += lda;
        b += NR;
    }
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) c[i * ldc + j] = acc ? c[i * ldc + j] + t[i][j] : t[i][j];
}

// [SECTION] selection

struct Registry {
    std::vector<MicroKernel> all;  // best first
    MicroKernel best;
    MicroKernel narrow_avx512;  // 4 x 64 for M <= 4 (fn null when the CPU lacks AVX-512)
    MicroKernel wide_avx512;    // 8 x 48 where it wastes less of its tiles than 12 x 32
    MicroKernel n49_avx512;     // 6 x 64 whose 49-column edge tile runs N = 49
    MicroKernel rows7_avx512;   // 7 x 48 for fewer than 64 rows that it fills best (M = 49)
    Isa level = Isa::portable;  // best's ISA, read by the engine's other vector code
    bool select(std::string_view isa) {
        for (const auto& k : all)
            if (isa == k.isa) {
                best = k;
                level = isa == "avx512" ? Isa::avx512 : isa == "avx2" ? Isa::avx2 : Isa::portable;
                return true;
            }
        return false;
    }
    Registry() {
#if CONVLAB_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) {
            all.push_back(avx512_kernel());
            avx512_product_kernels(narrow_avx512, wide_avx512, n49_avx512, rows7_avx512);
        }
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            all.push_back(avx2_kernel());
#endif
        all.push_back({"portable", 4, 16, kernel_portable});
        select(all.front().isa);
        if (const char* cap = std::getenv("CONVLAB_ISA")) select(cap);
    }
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

const MicroKernel& microkernel() {
    return registry().best;
}

namespace {
// Share of the multiply-adds of an m x n product that land in C (the rest fill edge tiles).
double tile_use(dim_t m, dim_t n, int mr, int nr) {
    const double rows = static_cast<double>((m + mr - 1) / mr * mr);
    const double cols = static_cast<double>((n + nr - 1) / nr * nr);
    return static_cast<double>(m) * static_cast<double>(n) / (rows * cols);
}
}  // namespace

const MicroKernel& microkernel_for(dim_t m, dim_t n, bool a_rows) {
    const Registry& r = registry();
    if (std::string_view(r.best.isa) != "avx512") return r.best;
    if (m <= 4 && r.narrow_avx512.fn) return r.narrow_avx512;
    // 6 x 49 for N = 49 with A row-major (a 7x7 layer's forward at batch 1: its weights). With
    // W^T column-contiguous (backward data) it loaded half as much of A per k as 12 x 32 and
    // lost: res5b_branch2a 0.50 -> 0.73 ms.
    if (n == 49 && a_rows && r.n49_avx512.fn) return r.n49_avx512;
    // 8 x 48 for M = 64 (ResNet's res2 layers and conv1: 12 x 32 fills 64 of 72 rows), unless
    // its wider column tiles waste more (N = 49: 49 of 96 columns).
    const double wide = tile_use(m, n, 8, 48), best = tile_use(m, n, 12, 32);
    // 7 x 48 for M = 49 (7x7 positions as rows: backward data's transposed products at batch 1,
    // sgemm_transposes), which 8 x 48 and 12 x 32 filled to 49 of 56 and 60 rows: 4608x49x512
    // 1.49 -> 1.38 ms. Not for M = 196, where 12 x 32's 4-row tail leaves nothing to gain
    // (512x196x1024 1.45 -> 1.50 ms).
    if (r.rows7_avx512.fn && m < 64 && tile_use(m, n, 7, 48) > 1.03 * std::max(wide, best))
        return r.rows7_avx512;
    if (r.wide_avx512.fn && wide > 1.03 * best) return r.wide_avx512;
    return r.best;
}

bool select_microkernel(const char* isa) {
    return registry().select(isa);
}

Isa selected_isa() {
    return registry().level;
}

const char* runtime_isa() {
    return microkernel().isa;
}

bool avx512_selected() {
    return std::string_view(microkernel().isa) == "avx512";
}

const MicroKernel* microkernels(int& count) {
    count = static_cast<int>(registry().all.size());
    return registry().all.data();
}

// [SECTION] packing

void pack_a(const StridedA& a, dim_t i0, dim_t mc, dim_t k0, dim_t kc, int mr, float* dst) {
    for (dim_t ip = 0; ip < mc; ip += mr) {
        const dim_t mv = std::min<dim_t>(mr, mc - ip);
        float* d = dst + ip * kc;
        const float* row = a.p + (i0 + ip) * a.rs;
        for_image_runs(a.ks, a.ns, a.cs, k0, kc, [&](dim_t kk, dim_t off, dim_t len) {
            const float* s = row + off;
            float* dk = d + kk * mr;
            if (a.cs == 1) {
                // Row-major A: one row at a time, read sequentially. (Reading the mr rows side by
                // side would touch mr lines whose addresses are often 4 KiB multiples apart: one
                // L1 set.)
                for (dim_t i = 0; i < mv; ++i)
                    for (dim_t k = 0; k < len; ++k) dk[k * mr + i] = s[i * a.rs + k];
            } else {
                for (dim_t k = 0; k < len; ++k)
                    for (dim_t i = 0; i < mv; ++i) dk[k * mr + i] = s[i * a.rs + k * a.cs];
            }
        });
        for (dim_t k = 0; k < kc; ++k)
            for (dim_t i = mv; i < mr; ++i) d[k * mr + i] = 0.0f;
    }
}

namespace {
#if CONVLAB_X86
// step: 1, or 2 (every other float along k, taken from two loads by one permute).
__attribute__((target("avx512f"))) void pack_transposed_avx512(const float* src, dim_t ld, dim_t nv,
                                                               dim_t kc, int nr, float* dst,
                                                               const dim_t* to_row, int step = 1) {
    const auto row = [&](dim_t k) { return dst + (to_row ? to_row[k] : k * nr); };
    const __m512i evens =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (dim_t j0 = 0; j0 < nr; j0 += 16) {
        const dim_t jn = std::clamp<dim_t>(nv - j0, 0, 16);
        if (jn == 0) {
            for (dim_t k = 0; k < kc; ++k) _mm512_storeu_ps(row(k) + j0, _mm512_setzero_ps());
            continue;
        }
        for (dim_t k0 = 0; k0 < kc; k0 += 16) {
            const dim_t kn = std::min<dim_t>(16, kc - k0);
            const auto kmask = static_cast<__mmask16>((1u << kn) - 1u);
            __m512 r[16];
            if (step == 2) {  // floats [0, 2 kn - 1) of the run from k0, the even ones
                const dim_t span = 2 * kn - 1;
                const auto lo = static_cast<__mmask16>((1u << std::min<dim_t>(span, 16)) - 1u);
                const auto hi = static_cast<__mmask16>((1u << std::max<dim_t>(span - 16, 0)) - 1u);
                for (dim_t j = 0; j < 16; ++j) {
                    const float* s = src + (j0 + j) * ld + 2 * k0;
                    r[j] = j < jn ? _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, s), evens,
                                                           _mm512_maskz_loadu_ps(hi, s + 16))
                                  : _mm512_setzero_ps();
                }
            } else {
                for (dim_t j = 0; j < 16; ++j)
                    r[j] = j < jn ? _mm512_maskz_loadu_ps(kmask, src + (j0 + j) * ld + k0)
                                  : _mm512_setzero_ps();
            }
            transpose16(r);
            for (dim_t k = 0; k < kn; ++k) _mm512_storeu_ps(row(k0 + k) + j0, r[k]);
        }
    }
}

// pack_transposed_avx512 by 8 x 8 blocks (nr a multiple of 8), for the AVX2 microkernel (its
// portable loop moved a float at a time).
__attribute__((target("avx2"))) void pack_transposed_avx2(const float* src, dim_t ld, dim_t nv,
                                                          dim_t kc, int nr, float* dst,
                                                          const dim_t* to_row, int step = 1) {
    const auto row = [&](dim_t k) { return dst + (to_row ? to_row[k] : k * nr); };
    for (dim_t j0 = 0; j0 < nr; j0 += 8) {
        const dim_t jn = std::clamp<dim_t>(nv - j0, 0, 8);
        if (jn == 0) {
            for (dim_t k = 0; k < kc; ++k) _mm256_storeu_ps(row(k) + j0, _mm256_setzero_ps());
            continue;
        }
        for (dim_t k0 = 0; k0 < kc; k0 += 8) {
            const dim_t kn = std::min<dim_t>(8, kc - k0);
            __m256 r[8];
            if (step == 2) {  // floats [0, 2 kn - 1) of the run from k0, the even ones
                const dim_t span = 2 * kn - 1;
                const __m256i lo = lanes8(std::min<dim_t>(span, 8)),
                              hi = lanes8(std::max<dim_t>(span - 8, 0));
                for (dim_t j = 0; j < 8; ++j) {
                    if (j >= jn) {
                        r[j] = _mm256_setzero_ps();
                        continue;
                    }
                    const float* s = src + (j0 + j) * ld + 2 * k0;
                    const __m256 a = _mm256_maskload_ps(s, lo), b = _mm256_maskload_ps(s + 8, hi);
                    // a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs in order 0 2 1 3.
                    r[j] = _mm256_castpd_ps(_mm256_permute4x64_pd(
                        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
                }
            } else {
                const __m256i km = lanes8(kn);
                for (dim_t j = 0; j < 8; ++j)
                    r[j] = j >= jn   ? _mm256_setzero_ps()
                           : kn == 8 ? _mm256_loadu_ps(src + (j0 + j) * ld + k0)
                                     : _mm256_maskload_ps(src + (j0 + j) * ld + k0, km);
            }
            transpose8(r);
            for (dim_t k = 0; k < kn; ++k) _mm256_storeu_ps(row(k0 + k) + j0, r[k]);
        }
    }
}
#endif
}  // namespace

void pack_transposed(const float* src, dim_t ld, dim_t nv, dim_t kc, int nr, float* dst,
                     const dim_t* to_row) {
#if CONVLAB_X86
    if (nr % 16 == 0 && std::string_view(microkernel().isa) == "avx512")
        return pack_transposed_avx512(src, ld, nv, kc, nr, dst, to_row);
    if (nr % 8 == 0 && std::string_view(microkernel().isa) == "avx2")
        return pack_transposed_avx2(src, ld, nv, kc, nr, dst, to_row);
#endif
    for (dim_t k = 0; k < kc; ++k) {
        float* d = dst + (to_row ? to_row[k] : k * nr);
        for (dim_t j = 0; j < nv; ++j) d[j] = src[j * ld + k];
        std::fill(d + nv, d + nr, 0.0f);
    }
}

void pack_sampled(const float* src, dim_t ld, dim_t step, dim_t nv, dim_t kc, int nr, float* dst) {
    if (step == 1) return pack_transposed(src, ld, nv, kc, nr, dst);
#if CONVLAB_X86
    if (step == 2 && nr % 16 == 0 && std::string_view(microkernel().isa) == "avx512")
        return pack_transposed_avx512(src, ld, nv, kc, nr, dst, nullptr, 2);
    if (step == 2 && nr % 8 == 0 && std::string_view(microkernel().isa) == "avx2")
        return pack_transposed_avx2(src, ld, nv, kc, nr, dst, nullptr, 2);
#endif
    for (dim_t k = 0; k < kc; ++k) {
        float* d = dst + k * nr;
        for (dim_t j = 0; j < nv; ++j) d[j] = src[j * ld + k * step];
        std::fill(d + nv, d + nr, 0.0f);
    }
}

void SampledTB::operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const {
    // Each panel's columns by runs of positions that lie in one output row.
    for (dim_t jp = 0; jp < nc; jp += nr) {
        const dim_t nv = std::min<dim_t>(nr, nc - jp);
        for (dim_t kk = 0; kk < kc;) {
            const dim_t q = first + k0 + kk, r = q / out_w, w = q % out_w;
            const dim_t len = std::min(kc - kk, out_w - w);
            const float* s = p + (j0 + jp) * cs + (r / out_h) * plane + (r % out_h) * row + w * sw;
            pack_sampled(s, cs, sw, nv, len, nr, dst + jp * kc + kk * nr);
            kk += len;
        }
    }
}

namespace {
#if CONVLAB_X86
__attribute__((target("avx512f"))) void permute_runs_avx512(const float* src, dim_t ld_src, int len,
                                                            const int* idx, int n, dim_t count,
                                                            float* dst, dim_t ld_dst) {
    alignas(64) int lane[16] = {};
    __mmask16 valid = 0;
    for (int u = 0; u < n; ++u)
        if (idx[u] >= 0) {
            lane[u] = idx[u];
            valid = static_cast<__mmask16>(valid | (1u << u));
        }
    const __m512i perm = _mm512_load_si512(lane);
    const auto in = static_cast<__mmask16>((1u << len) - 1u),
               out = static_cast<__mmask16>((1u << n) - 1u);
    for (dim_t j = 0; j < count; ++j) {
        const __m512 v = _mm512_maskz_loadu_ps(in, src + j * ld_src);
        _mm512_mask_storeu_ps(dst + j * ld_dst, out, _mm512_maskz_permutexvar_ps(valid, perm, v));
    }
}
#endif
}  // namespace

namespace {
#if CONVLAB_X86
__attribute__((target("avx512f"))) void flush_tap_tiles_avx512(const float* buf, int mv, int ks,
                                                               float* c, dim_t ldt, int nv,
                                                               bool acc) {
    const int n = mv * ks;
    for (int v = 0; v < 2 && 16 * v < nv; ++v)
        for (int e0 = 0, i = 0, t = 0; e0 < n; e0 += 16) {
            const int en = std::min(16, n - e0);
            __m512 q[16];
            for (int k = 0; k < 16; ++k) {  // element e0 + k = i ks + t
                q[k] = k < en ? _mm512_loadu_ps(buf + (t * 12 + i) * 32 + 16 * v)
                              : _mm512_setzero_ps();
                if (k < en && ++t == ks) t = 0, ++i;
            }
            transpose16(q);
            const auto m = static_cast<__mmask16>((1u << en) - 1u);
            for (int j = 0; j < 16 && 16 * v + j < nv; ++j) {
                float* cj = c + (16 * v + j) * ldt + e0;
                const __m512 x = acc ? _mm512_add_ps(q[j], _mm512_maskz_loadu_ps(m, cj)) : q[j];
                _mm512_mask_storeu_ps(cj, m, x);
            }
        }
}
#endif
}  // namespace

void flush_tap_tiles(const float* buf, int mv, int ks, float* c, dim_t ldt, int nv, bool acc) {
#if CONVLAB_X86
    if (std::string_view(microkernel().isa) == "avx512")
        return flush_tap_tiles_avx512(buf, mv, ks, c, ldt, nv, acc);
#endif
    for (int j = 0; j < nv; ++j)
        for (int i = 0; i < mv; ++i)
            for (int t = 0; t < ks; ++t) {
                float& d = c[j * ldt + i * ks + t];
                const float x = buf[(t * 12 + i) * 32 + j];
                d = acc ? d + x : x;
            }
}

void permute_runs(const float* src, dim_t ld_src, [[maybe_unused]] int len, const int* idx, int n,
                  dim_t count, float* dst, dim_t ld_dst) {
#if CONVLAB_X86
    if (n <= 16 && len <= 16 && std::string_view(microkernel().isa) == "avx512")
        return permute_runs_avx512(src, ld_src, len, idx, n, count, dst, ld_dst);
#endif
    for (dim_t j = 0; j < count; ++j)
        for (int u = 0; u < n; ++u)
            dst[j * ld_dst + u] = idx[u] < 0 ? 0.0f : src[j * ld_src + idx[u]];
}

namespace {
// d[0 .. nr) = s[0 .. nr), with the size known to the compiler for the tile widths in use (a
// libc call per 32-float piece cost more than the copy).
inline void copy_panel_row(float* d, const float* s, int nr) {
    switch (nr) {
        case 16:
            std::memcpy(d, s, 16 * sizeof(float));
            break;
        case 32:
            std::memcpy(d, s, 32 * sizeof(float));
            break;
        case 48:
            std::memcpy(d, s, 48 * sizeof(float));
            break;
        case 64:
            std::memcpy(d, s, 64 * sizeof(float));
            break;
        default:
            std::memcpy(d, s, static_cast<std::size_t>(nr) * sizeof(float));
    }
}

// The packers' row by row copy: columns [x, x + len) of one row of a block packed in panels of
// nr (row k of the block at d = dst + k*nr, panel p at d + p*nr*kc), from the contiguous run
// at from. Reading each row front to back is what the prefetchers like; panel by panel touched
// every row of the block at 128-byte steps.
inline void run_to_panels(const float* from, dim_t x, dim_t len, dim_t kc, int nr, float* d) {
    dim_t off = x % nr;  // only the first piece may start inside a panel
    float* to = d + (x - off) * kc + off;
    for (dim_t y = 0; y < len;) {
        const dim_t piece = std::min(len - y, nr - off);
        if (piece == nr)
            copy_panel_row(to, from + y, nr);
        else
            std::copy(from + y, from + y + piece, to);
        y += piece;
        to += nr * kc - off;
        off = 0;
    }
}

// Zeroes the columns from nc to the end of the last panel in one row of the block.
inline void zero_panel_tail(dim_t nc, dim_t kc, int nr, float* d) {
    if (nc % nr) {
        float* e = d + (nc - nc % nr) * kc;
        std::fill(e + nc % nr, e + nr, 0.0f);
    }
}

// AVX2's 16-column panels of rows 4 KiB and more apart are packed in bands of 4 rows, panel
// by panel (a line from each of the 4 rows, written one after the other). Row by row, a row's
// pieces went to lines 16 kc floats apart (16 KiB at kc = 256), all in one L1 set. Zen 3,
// harness, 2 threads, 8 MiB touched between calls, 300-400 calls, medians (ms): 64 x 3136 x 256
// 1.239 -> 1.108 and 1.191 -> 1.076 (bands of 8: 1.164, 1.119; of 16: 1.347, 1.283), 256 x
// 3136 x 64 0.978 -> 0.952, 64 x 3136 x 64 0.411 -> 0.386. Bench, forward, ratio to oneDNN, 3
// alternating rounds: batch 1 res2b_branch2a 1.418, 1.383, 1.362 -> 1.246, 1.265, 1.261; batch
// 32 res2b_branch2a 1.063, 1.026, 0.949 -> 0.845, 0.932, 0.906, res2a_branch2a 1.143, 1.119,
// 1.116 -> 1.062, 1.050, 1.093. Rows 784 floats apart: 128 x 784 x 512 1.156 -> 1.051 in the
// harness, but in the bench res3b_branch2a at batch 1 even (1.17-1.37 against 1.12-1.29, 4
// rounds) and res3a_branch1 at batch 32, from its sampled copy, slower (1.19-1.25 -> 1.23-1.29,
// 6 rounds); rows 196 apart slower (256 x 196 x 1024 0.973 -> 1.052 in the harness).
inline bool packs_in_bands(int nr, dim_t row_stride) {
    return nr == 16 && row_stride >= 1024;
}

// Rows [0, kc) x columns [0, nc) of src (rows rs apart) into 16-column panels (row k of panel
// x / 16 at dst + x kc + 16 k, zeros past nc), 4 rows at a time, panel by panel.
void pack_in_bands(const float* src, dim_t rs, dim_t kc, dim_t nc, float* dst) {
    constexpr dim_t kBand = 4;
    for (dim_t kb = 0; kb < kc; kb += kBand) {
        const dim_t kn = std::min(kBand, kc - kb);
        for (dim_t x = 0; x < nc; x += 16) {
            const dim_t len = std::min<dim_t>(16, nc - x);
            for (dim_t k = kb; k < kb + kn; ++k) {
                float* d = dst + x * kc + k * 16;
                const float* from = src + k * rs + x;
                if (len == 16) {
                    copy_panel_row(d, from, 16);
                } else {
                    std::copy(from, from + len, d);
                    std::fill(d + len, d + 16, 0.0f);
                }
            }
        }
    }
}
}  // namespace

void StridedB::operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const {
    if (cs == 1 && packs_in_bands(nr, rs)) return pack_in_bands(p + k0 * rs + j0, rs, kc, nc, dst);
    if (cs == 1) {  // row by row (run_to_panels)
        for (dim_t k = 0; k < kc; ++k) {
            run_to_panels(p + (k0 + k) * rs + j0, 0, nc, kc, nr, dst + k * nr);
            zero_panel_tail(nc, kc, nr, dst + k * nr);
        }
        return;
    }
    for (dim_t jp = 0; jp < nc; jp += nr) {
        const dim_t nv = std::min<dim_t>(nr, nc - jp);
        float* d = dst + jp * kc;
        const float* s = p + k0 * rs + (j0 + jp) * cs;
        if (rs == 1) {
            // Transposed B (dY X^T of a 1x1 weight gradient): columns are contiguous.
            pack_transposed(s, cs, nv, kc, nr, d);
        } else {
            for (dim_t j = 0; j < nv; ++j)
                for (dim_t k = 0; k < kc; ++k) d[k * nr + j] = s[j * cs + k * rs];
            if (nv < nr)
                for (dim_t k = 0; k < kc; ++k) std::fill(d + k * nr + nv, d + (k + 1) * nr, 0.0f);
        }
    }
}

void ImagesTB::operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const {
    // Each panel's columns by runs along k that lie in one image, transposed.
    for (dim_t jp = 0; jp < nc; jp += nr) {
        const dim_t nv = std::min<dim_t>(nr, nc - jp);
        for_image_runs(ks, ns, 1, k0, kc, [&](dim_t kk, dim_t off, dim_t len) {
            pack_transposed(p + off + (j0 + jp) * ld, ld, nv, len, nr, dst + jp * kc + kk * nr);
        });
    }
}

void ImagesB::operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const {
    // Row by row as StridedB does: each image's row a run, cut at the panels. (In bands of
    // rows, as StridedB packs rows far apart, 128 x 1568 x 512 from two images of 784 took 2.21
    // against 2.13 ms, and 64 x 6272 x 64 0.594 against 0.558: harness, medians of 300 calls.)
    for (dim_t k = 0; k < kc; ++k) {
        for (dim_t x = 0; x < nc;) {
            const dim_t j = j0 + x, n = j / in_size, pos = j % in_size;
            const dim_t len = std::min(nc - x, in_size - pos);
            run_to_panels(src + n * n_stride + (k0 + k) * in_size + pos, x, len, kc, nr,
                          dst + k * nr);
            x += len;
        }
        zero_panel_tail(nc, kc, nr, dst + k * nr);
    }
}

// [SECTION] the packed-block loop

namespace {
// A's rows copied (to rows kcs apart) rather than read in place: row strides that are multiples
// of 4 KiB, or columns that run over several images (gemm_packed_block says why).
bool rows_copied(const MicroKernel& uk, const StridedA& a, bool row_a) {
    return row_a && ((a.rs % 1024 == 0 && uk.mr >= 8) || a.ks != 0);
}
}  // namespace

bool stream_mode_allows(std::size_t bytes, std::size_t from, const Tuning& t) {
    return t.stream_output != Rule::Never && (t.stream_output == Rule::Always || bytes >= from);
}

void stream_fence() {
#if CONVLAB_X86
    _mm_sfence();
#endif
}

bool b_in_place_applies(const MicroKernel& uk, const GemmBlocking& bl, const StridedA& a,
                        const StridedB& b, dim_t m, dim_t k, const Tuning& tuning) {
    const Rule mode = tuning.b_in_place;
    const dim_t rem = m % uk.mr, panels = (m + uk.mr - 1) / uk.mr;
    const bool can = mode != Rule::Never && uk.in_place_fn[0] && b.cs == 1 && row_major(a) &&
                     read_a_in_place(uk, a, tuning) && !rows_copied(uk, a, true) &&
                     (rem == 0 || ((rem == 4 || rem == 8) && uk.in_place_tail_fn[rem / 8]));
    if (!can || mode == Rule::Always) return can;
    return (panels <= 8 && k <= 256) || (bl.prefetch_b && panels <= 24 && k <= 64);
}

dim_t gemm_b_in_place(const MicroKernel& uk, const GemmBlocking& bl, dim_t i0, dim_t i1, dim_t j0,
                      dim_t j1, dim_t k, const StridedA& a, const StridedB& b, float* c, dim_t ldc,
                      bool acc) {
    const int mr = uk.mr, nr = uk.nr;
    const dim_t jf = j0 + (j1 - j0) / nr * nr;
    const bool stream = bl.stream_c && ldc % 16 == 0;
    const dim_t calls = (i1 - i0 + mr - 1) / mr;
    for (dim_t jr = j0; jr < jf; jr += nr) {
        // The next panel's rows, a share per tile of this one.
        PrefetchA next =
            jr + nr < jf ? PrefetchA::runs(b.p + jr + nr, b.rs, k, 0, 1, nr, calls) : PrefetchA();
        for (dim_t ir = i0; ir < i1; ir += mr) {
            next.step_into_l2();
            float* cp = c + ir * ldc + jr;
            const bool nt = stream && reinterpret_cast<std::uintptr_t>(cp) % 64 == 0;
            const MicroKernelInPlaceFn fn =
                ir + mr <= i1 ? uk.in_place_fn[nt ? 1 : 0] : uk.in_place_tail_fn[(i1 - ir) / 8];
            fn(k, a.p + ir * a.rs, b.p + jr, b.rs, cp, ldc, acc, a.rs);
        }
    }
    if (stream) stream_fence();
    return jf;
}

bool tail_rows_apply(const MicroKernel& uk, const StridedA& a, const Tuning& tuning) {
    const bool row_a = row_major(a) && read_a_in_place(uk, a, tuning);
    const bool in_place = (a.rs == 1 && a.ks == 0) || row_a;
    if (!in_place || rows_copied(uk, a, row_a)) return false;
    // The remainders that row blocks of multiples of 4 leave.
    for (int r = 4; r < 4 * uk.mr; r += 4)
        if (r % uk.mr != 0 && !uk.tail_fn[row_a ? 1 : 0][r % uk.mr]) return false;
    return true;
}

void gemm_packed_block(const MicroKernel& uk, const GemmBlocking& bl, const Tuning& tuning,
                       dim_t i0, dim_t i1, dim_t jc, dim_t nc, dim_t pc, dim_t kc,
                       const StridedA& a, const float* bbuf, float* c, dim_t ldc, bool acc,
                       dim_t pc_next, dim_t kc_next) {
    const int mr = uk.mr, nr = uk.nr;
    const dim_t mcb = std::min(bl.mc, ((i1 - i0 + mr - 1) / mr) * mr);
    const bool row_a = row_major(a) && read_a_in_place(uk, a, tuning);
    // Row strides that are multiples of 4 KiB put the MR rows in one L1 set, which thrashes
    // where MR fills its 8 ways: such rows are copied (a memcpy, not a transpose) to rows kcs
    // apart, MR-padded with zeros. Six rows (the 6 x 49 tile) read in place measured faster than
    // copied (res5b_branch2a, batch 1: 0.60 -> 0.52 ms). So are A's rows copied when their
    // columns run over several images (a.ks).
    const bool row_copy = rows_copied(uk, a, row_a);
    // Non-temporal stores need C's rows 64-byte aligned: ldc a multiple of 16 floats (then a
    // tile is aligned when its first row is).
    const bool stream = bl.stream_c && ldc % 16 == 0;
    const dim_t kcs = kc + 16, mcp = ((mcb + mr - 1) / mr) * mr;
    float* abuf = scratch(1, static_cast<std::size_t>(mcp * (row_copy ? kcs : kc)));
    float* tile = scratch(2, static_cast<std::size_t>(mr * nr));
    float* bcol = nullptr;  // an edge panel's columns along k (last_column), made on first use
    // A's next block is prefetched only where the hardware prefetcher does not follow A's reads:
    // rows copied, or columns 4 KiB apart (W^T in backward data) whose block spans at most L2's
    // 1 MiB (beyond, as with 8 KiB, the block's lines already evict each other from L2's sets
    // and prefetching made it slower: res5b_branch2a's backward data at batch 1, 0.52 -> 0.57 ms),
    // or rows read in place where the caller says A comes from memory (bl.prefetch_a).
    const bool prefetch = row_copy || (bl.prefetch_a && row_a) ||
                          (a.rs == 1 && a.cs >= 1024 && a.cs * kc * sizeof(float) <= (1u << 20));
    // B's next block (bl.ahead), spread over all of this block's microkernel calls.
    PrefetchA ahead =
        bl.ahead.p ? PrefetchA(StridedA{bl.ahead.p, bl.ahead.stride, 1}, 0, bl.ahead.rows, 0,
                               bl.ahead.len, ((i1 - i0 + mr - 1) / mr) * ((nc + nr - 1) / nr))
                   : PrefetchA();
    for (dim_t ic = i0; ic < i1; ic += mcb) {
        const dim_t mc = std::min(mcb, i1 - ic);
        // Spread over this block's microkernel calls (none: no prefetch).
        const dim_t calls = prefetch ? ((mc + mr - 1) / mr) * ((nc + nr - 1) / nr) : 0;
        PrefetchA next = ic + mc < i1
                             ? PrefetchA(a, ic + mc, std::min(mcb, i1 - ic - mc), pc, kc, calls)
                             : PrefetchA(a, i0, std::min(mcb, i1 - i0), pc_next, kc_next, calls);
        // A with contiguous columns (rs == 1, as W^T in backward data) is read in place by full
        // row panels, and so is row-major A (row_a, copied when row_copy); only a last partial
        // panel is packed.
        if (row_copy)
            for (dim_t i = 0; i < ((mc + mr - 1) / mr) * mr; ++i) {
                float* d = abuf + i * kcs;
                if (i < mc)
                    for_image_runs(a.ks, a.ns, a.cs, pc, kc, [&](dim_t kk, dim_t off, dim_t len) {
                        std::copy_n(a.p + (ic + i) * a.rs + off, len, d + kk);
                    });
                else
                    std::fill_n(d, kc, 0.0f);
            }
        const bool in_place = (a.rs == 1 && a.ks == 0) || row_a;
        const dim_t full = row_copy ? mc : in_place ? (mc / mr) * mr : 0;
        // A last partial panel read in place runs a kernel of its height where there is one
        // (M = 64 with 12-row tiles leaves 4: a full tile spent 12 rows of work on them).
        const dim_t rem = mc - full;
        const MicroKernelFn tail_fn =
            in_place && !row_copy && rem > 0 ? uk.tail_fn[row_a ? 1 : 0][rem] : nullptr;
        if (full < mc && !tail_fn) pack_a(a, ic + full, mc - full, pc, kc, mr, abuf + full * kc);
        for (dim_t ir = 0; ir < mc; ir += mr) {
            const dim_t mv = std::min<dim_t>(mr, mc - ir);
            const bool tail = tail_fn && ir == full;
            const bool direct = ir < full || tail;
            const float* ap = !direct    ? abuf + ir * kc
                              : row_copy ? abuf + ir * kcs
                              : row_a    ? a.p + (ic + ir) * a.rs + pc
                                         : a.p + (ic + ir) + pc * a.cs;
            const dim_t lda = !direct ? mr : row_copy ? kcs : row_a ? a.rs : a.cs;
            const bool rowa = direct && row_a;
            const MicroKernelFn fn = tail ? tail_fn : rowa ? uk.rowa_fn : uk.fn;
            const MicroKernelFn sfn = stream && !tail ? uk.stream_fn[rowa ? 1 : 0] : nullptr;
            for (dim_t jr = 0; jr < nc; jr += nr) {
                const dim_t nv = std::min<dim_t>(nr, nc - jr);
                float* cp = c + (ic + ir) * ldc + jc + jr;
                const float* bp = bbuf + jr * kc;
                next.step_into_l2();
                ahead.step_into_l2();
                if ((mv == mr || tail) && nv == nr) {
                    if (sfn && reinterpret_cast<std::uintptr_t>(cp) % 64 == 0)
                        sfn(kc, ap, bp, cp, ldc, acc, lda);
                    else
                        fn(kc, ap, bp, cp, ldc, acc, lda);
                    continue;
                }
                // The last column of a 17-column edge with A row-major, or of a 16V + 1 column
                // tile (col_fn), contiguous along k (one edge panel per block: made once); with
                // A row-major, all of an edge's nv <= 4 columns (bcol[j*kc + k]).
                const auto last_column = [&] {
                    if (bcol) return;
                    const dim_t j0 = nv <= 4 ? 0 : nv - 1;
                    bcol = scratch(kGemmEdgeSlot, static_cast<std::size_t>((nv - j0) * kc));
                    for (dim_t j = j0; j < nv; ++j)
                        for (dim_t k = 0; k < kc; ++k) bcol[(j - j0) * kc + k] = bp[k * nr + j];
                };
                const MicroKernelColFn col = tail || nv + 15 != nr ? nullptr : uk.col_fn[rowa];
                if (col) {
                    last_column();
                    if (mv == mr) {  // nv columns exactly, straight into C
                        col(kc, ap, bp, bcol, cp, ldc, acc, lda);
                        continue;
                    }
                    col(kc, ap, bp, bcol, tile, nr, false, lda);
                } else if (const MicroKernelEdgeFn edge =  // a narrower tile where there is one
                           tail || nv >= nr ? nullptr
                           : rowa           ? uk.edge_rowa_fn[nv / 16][nv % 16]
                                            : uk.edge_fn[nv / 16][nv % 16]) {
                    if (rowa && (nv == 17 || nv <= 4)) last_column();
                    edge(kc, ap, bp, bcol, tile, nr, lda);
                } else {
                    fn(kc, ap, bp, tile, nr, false, lda);
                }
                for (dim_t i = 0; i < mv; ++i)
                    for (dim_t j = 0; j < nv; ++j)
                        cp[i * ldc + j] =
                            acc ? cp[i * ldc + j] + tile[i * nr + j] : tile[i * nr + j];
            }
        }
    }
    if (stream) stream_fence();  // the non-temporal stores visible before C is read elsewhere
}

// [SECTION] scratch and split

namespace {
struct AlignedFree {
    void operator()(float* p) const { std::free(p); }
};
std::atomic<std::size_t> g_scratch_high{0};  // largest single request (bytes)
std::atomic<std::size_t> g_scratch_held{0};  // bytes held, all threads
std::atomic<int> g_scratch_threads{1};       // 1 + the highest OpenMP thread number that held any
std::atomic<std::size_t> g_work_live{0};     // scratch held plus counted buffers (bytes)
std::atomic<std::size_t> g_work_peak{0};     // g_work_live's peak since the last reset
void add_work(std::size_t bytes) {
    const std::size_t now = g_work_live.fetch_add(bytes) + bytes;
    for (std::size_t h = g_work_peak.load(std::memory_order_relaxed);
         now > h && !g_work_peak.compare_exchange_weak(h, now);) {
    }
}
void sub_work(std::size_t bytes) {
    g_work_live.fetch_sub(bytes);
}
struct Scratch {
    std::unique_ptr<float, AlignedFree> buf[kScratchSlots];
    std::size_t bytes[kScratchSlots] = {};
    void release() {
        for (int i = 0; i < kScratchSlots; ++i) {
            g_scratch_held.fetch_sub(bytes[i]);
            sub_work(bytes[i]);
            buf[i].reset();
            bytes[i] = 0;
        }
    }
    ~Scratch() { release(); }
};
thread_local Scratch t_scratch;
}  // namespace

std::size_t scratch_high_water() {
    return g_scratch_high.load();
}
void reset_scratch_high_water() {
    g_scratch_high.store(0);
}
std::size_t scratch_bytes_held() {
    return g_scratch_held.load();
}
void count_work_memory(std::ptrdiff_t bytes) {
    if (bytes >= 0)
        add_work(static_cast<std::size_t>(bytes));
    else
        sub_work(static_cast<std::size_t>(-bytes));
}
std::size_t work_memory_peak() {
    return g_work_peak.load();
}
void reset_work_memory_peak() {
    g_work_peak.store(g_work_live.load());
}

// The calling thread's buffers, then (outside a parallel region) those of the OpenMP pool's
// threads, as many as ever held one (a team of n reuses the same n - 1 pool threads).
void release_scratch() {
    t_scratch.release();
    if (omp_in_parallel()) return;
#pragma omp parallel num_threads(g_scratch_threads.load())
    t_scratch.release();
}

float* scratch(int slot, std::size_t floats) {
    const std::size_t bytes_req = floats * sizeof(float);
    for (std::size_t h = g_scratch_high.load(std::memory_order_relaxed);
         bytes_req > h && !g_scratch_high.compare_exchange_weak(h, bytes_req);) {
    }
    Scratch& s = t_scratch;
    if (s.bytes[slot] < bytes_req) {
        const std::size_t bytes = (bytes_req + 63) / 64 * 64;
        g_scratch_held.fetch_sub(s.bytes[slot]);
        sub_work(s.bytes[slot]);
        s.bytes[slot] = 0;
        s.buf[slot].reset();  // (freed first: the old and new buffer are never both held)
        s.buf[slot].reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
        if (!s.buf[slot]) throw std::bad_alloc();
        s.bytes[slot] = bytes;
        g_scratch_held.fetch_add(bytes);
        add_work(bytes);
        const int id = omp_get_thread_num() + 1;
        for (int t = g_scratch_threads.load();
             id > t && !g_scratch_threads.compare_exchange_weak(t, id);) {
        }
    }
    return s.buf[slot].get();
}

void choose_split(dim_t m, dim_t n, dim_t k, const MicroKernel& uk, int threads, int& tm, int& tn,
                  double a_cost) {
    tm = tn = 1;
    if (threads <= 1) return;
    const double mpan = static_cast<double>((m + uk.mr - 1) / uk.mr);
    const double npan = static_cast<double>((n + uk.nr - 1) / uk.nr);
    double best = 1e300;
    for (int a = 1; a <= threads; ++a) {
        if (threads % a) continue;
        const int b = threads / a;
        if (a > mpan || b > npan) continue;
        // Per thread: tiles (cost ~ MR*NR*k / 16 FMA lanes) plus packing its A rows for each
        // NC block and its B columns once (cost ~ 1 per element). With A read in place and B
        // gathered (GathersB), A's rows cost a quarter: counted as packed, the strided 1x1
        // weight gradients at batch 1 split M, each thread sampling all of B. Harness, 2
        // threads, the splits alternating, 4 MiB touched between calls, medians: res3a_branch1
        // (512 x 256 x 784) 1.123/1.127 -> 1.053/1.065 ms, 1.036 -> 0.987; res4a_branch1 (1024
        // x 512 x 196) 0.966 -> 0.937. With B copied or transposed it lost: 2048 x 512 x 49
        // (A and B^T row-major) 0.65 -> 1.13 ms; im2col_gemm's res5a_branch2c weight gradient
        // in the bench 0.53-0.55 -> 0.64-0.65.
        const double rows = std::ceil(mpan / a) * uk.mr, cols = std::ceil(npan / b) * uk.nr;
        const double kd = static_cast<double>(k);
        const double cost =
            rows * cols * kd / 16.0 + a_cost * rows * kd * std::ceil(cols / 1536.0) + cols * kd;
        if (cost < best) {
            best = cost;
            tm = a;
            tn = b;
        }
    }
}

bool read_a_in_place(const MicroKernel& uk, const StridedA& a, const Tuning& tuning) {
    // Packing A is a transpose costing about a cycle per element, amortised over the block's
    // column tiles: with the two to eight tiles of the 7x7 and 14x14 layers at batch 1 it cost as
    // much as the tiles themselves (M=512 N=49 K=4608, 2 threads: 83 GFLOP/s packed, 157 read in
    // place). With many tiles, reading in place measured the same as packing or better.
    return uk.rowa_fn && a.cs == 1 && tuning.read_a != Rule::Never;
}

int gemm_threads(dim_t m, dim_t n, dim_t k) {
    if (omp_in_parallel()) return 1;
    if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < 2.0e5) return 1;
    return omp_get_max_threads();
}

// Every share t in [0, threads) runs once, whatever number of threads the region gets: the
// callers split their work by t, so a share left out would leave its part uncomputed (a build
// without OpenMP runs them all on the calling thread, one after another).
void run_threads(int threads, void (*fn)(void*, int), void* ctx) {
    ParallelError err;
#pragma omp parallel num_threads(threads)
    for (int t = omp_get_thread_num(); t < threads; t += omp_get_num_threads())
        err.run([&] { fn(ctx, t); });
    err.rethrow();
}

namespace {
#if CONVLAB_X86
// c[i * ldc + j] (+)= t[j * ldt + i] for i in [i0, i1), j < n: 16 x 16 blocks through registers.
__attribute__((target("avx512f"))) void add_transposed_avx512(const float* t, dim_t ldt, dim_t n,
                                                              dim_t i0, dim_t i1, float* c,
                                                              dim_t ldc, bool acc) {
    for (dim_t i = i0; i < i1; i += 16) {
        const dim_t iv = std::min<dim_t>(16, i1 - i);
        const auto im = static_cast<__mmask16>((1u << iv) - 1u);
        for (dim_t j = 0; j < n; j += 16) {
            const dim_t jv = std::min<dim_t>(16, n - j);
            const auto jm = static_cast<__mmask16>((1u << jv) - 1u);
            __m512 q[16];
            for (dim_t r = 0; r < 16; ++r)
                q[r] =
                    r < jv ? _mm512_maskz_loadu_ps(im, t + (j + r) * ldt + i) : _mm512_setzero_ps();
            transpose16(q);
            for (dim_t r = 0; r < iv; ++r) {
                float* cr = c + (i + r) * ldc + j;
                const __m512 x = acc ? _mm512_add_ps(q[r], _mm512_maskz_loadu_ps(jm, cr)) : q[r];
                _mm512_mask_storeu_ps(cr, jm, x);
            }
        }
    }
}

// add_transposed_avx512 by 8 x 8 blocks, for the AVX2 microkernel.
__attribute__((target("avx2"))) void add_transposed_avx2(const float* t, dim_t ldt, dim_t n,
                                                         dim_t i0, dim_t i1, float* c, dim_t ldc,
                                                         bool acc) {
    for (dim_t i = i0; i < i1; i += 8) {
        const dim_t iv = std::min<dim_t>(8, i1 - i);
        const __m256i im = lanes8(iv);
        for (dim_t j = 0; j < n; j += 8) {
            const dim_t jv = std::min<dim_t>(8, n - j);
            const __m256i jm = lanes8(jv);
            __m256 q[8];
            for (dim_t r = 0; r < 8; ++r)
                q[r] = r < jv ? _mm256_maskload_ps(t + (j + r) * ldt + i, im) : _mm256_setzero_ps();
            transpose8(q);
            for (dim_t r = 0; r < iv; ++r) {
                float* cr = c + (i + r) * ldc + j;
                const __m256 x = acc ? _mm256_add_ps(q[r], _mm256_maskload_ps(cr, jm)) : q[r];
                _mm256_maskstore_ps(cr, jm, x);
            }
        }
    }
}
#endif

void add_transposed(const float* t, dim_t ldt, dim_t n, dim_t i0, dim_t i1, float* c, dim_t ldc,
                    bool acc) {
#if CONVLAB_X86
    if (std::string_view(microkernel().isa) == "avx512")
        return add_transposed_avx512(t, ldt, n, i0, i1, c, ldc, acc);
    if (std::string_view(microkernel().isa) == "avx2")
        return add_transposed_avx2(t, ldt, n, i0, i1, c, ldc, acc);
#endif
    for (dim_t i = i0; i < i1; ++i)
        for (dim_t j = 0; j < n; ++j)
            c[i * ldc + j] = acc ? c[i * ldc + j] + t[j * ldt + i] : t[j * ldt + i];
}
}  // namespace

// 0 (unknown) where the C library cannot tell (_SC_LEVEL2_CACHE_SIZE is glibc's).
long l2_cache_bytes() {
#ifdef _SC_LEVEL2_CACHE_SIZE
    static const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2;
#else
    return 0;
#endif
}

dim_t l2_block_columns(dim_t kc, int nr, dim_t panels, dim_t rows, long l2) {
    const dim_t nc = GemmBlocking{}.nc, sz = static_cast<dim_t>(sizeof(float));
    if (l2 <= 0 || kc <= 0 || rows * kc * sz > l2 / 4) return nc;
    const dim_t most = std::max<dim_t>(1, 3 * static_cast<dim_t>(l2) / 4 / (kc * nr * sz));
    if (std::min(panels, nc / nr) <= most) return nc;
    const dim_t slack = most + most / 8, blocks = (panels + slack - 1) / slack;
    return std::min(nc, (panels + blocks - 1) / blocks * nr);
}

bool large_l2() {
    static const bool large = l2_cache_bytes() >= 2L * (1L << 20);
    return large;
}

bool transposed_products_pay() {
    return large_l2();
}

bool sgemm_transposes(dim_t m, dim_t n, dim_t k, const StridedA& a, const Tuning& tuning) {
    const Rule mode = tuning.transposed_products;
    if (mode == Rule::Never || (mode == Rule::Auto && !transposed_products_pay())) return false;
    const double a_bytes = static_cast<double>(m) * static_cast<double>(k) * sizeof(float);
    return a.rs == 1 && a.ks == 0 && n <= 256 && a_bytes >= 2.0 * (1 << 20);
}

void sgemm(const Tuning& tuning, dim_t m, dim_t n, dim_t k, const StridedA& a, const StridedB& b,
           float* c, dim_t ldc, bool accumulate) {
    if (!sgemm_transposes(m, n, k, a, tuning))
        return gemm(tuning, m, n, k, a, b, c, ldc, accumulate);
    // C^T (n x m) = B^T A^T into scratch, then transposed into C. A^T is row-major: packed as B
    // by long runs of its rows (one read of W per call, which the prefetcher follows), each
    // panel of it used by all n rows while in L1 (kc 128: at most 24 KiB, 48 columns).
    const float* t = product_transposed(tuning, m, n, k, a, b, 128);
    transpose_into(t, m, m, n, c, ldc, accumulate, gemm_threads(m, n, k));
}

const float* product_transposed(const Tuning& tuning, dim_t m, dim_t n, dim_t k, const StridedA& a,
                                const StridedB& b, dim_t kc) {
    float* t = scratch(kTransposedSlot, static_cast<std::size_t>(n * m));
    gemm(tuning, n, m, k, StridedA{b.p, b.cs, b.rs}, StridedB{a.p, a.cs, a.rs}, t, m, false, kc);
    return t;
}

#if CONVLAB_X86
namespace {
__attribute__((target("avx512f"))) void stream_rows_avx512(const float* src, dim_t lds, dim_t rows,
                                                           dim_t len, float* dst, dim_t ldd) {
    const auto mask = [](dim_t n) { return static_cast<__mmask16>((1u << n) - 1u); };
    for (dim_t i = 0; i < rows; ++i) {
        const float* s = src + i * lds;
        float* d = dst + i * ldd;
        // Up to the first 64-byte boundary, then whole lines, then the rest.
        const dim_t head = std::min<dim_t>(
            len, static_cast<dim_t>((64 - reinterpret_cast<std::uintptr_t>(d) % 64) % 64) / 4);
        if (head) _mm512_mask_storeu_ps(d, mask(head), _mm512_maskz_loadu_ps(mask(head), s));
        dim_t e = head;
        for (; e + 16 <= len; e += 16) _mm512_stream_ps(d + e, _mm512_loadu_ps(s + e));
        if (e < len)
            _mm512_mask_storeu_ps(d + e, mask(len - e),
                                  _mm512_maskz_loadu_ps(mask(len - e), s + e));
    }
    stream_fence();
}
}  // namespace
#endif

void stream_rows(const float* src, dim_t lds, dim_t rows, dim_t len, float* dst, dim_t ldd) {
#if CONVLAB_X86
    if (__builtin_cpu_supports("avx512f")) return stream_rows_avx512(src, lds, rows, len, dst, ldd);
#endif
    for (dim_t i = 0; i < rows; ++i) std::copy(src + i * lds, src + i * lds + len, dst + i * ldd);
}

void transpose_into(const float* t, dim_t ldt, dim_t m, dim_t n, float* c, dim_t ldc,
                    bool accumulate, int threads) {
    auto body = [&](int th) {
        const dim_t blocks = (m + 15) / 16;
        add_transposed(t, ldt, n, blocks * th / threads * 16,
                       std::min(m, blocks * (th + 1) / threads * 16), c, ldc, accumulate);
    };
    run_threads(threads, body);
}

}  // namespace convlab::detail
