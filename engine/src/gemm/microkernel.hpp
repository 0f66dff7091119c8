// Internal: ConvLab's blocked SGEMM core (Goto/BLIS scheme) with register-blocked microkernels.
//
// [SECTION] microkernels   MR x NR tiles of C += A_panel * B_panel; AVX-512, AVX2+FMA or portable,
//                          chosen once at run time from what the CPU supports (microkernel.cpp)
// [SECTION] operands       A as a strided matrix; B from any packer (strided matrix, im2col gather)
// [SECTION] driver         cache blocking (NC, KC, MC), packing, the 2-D split over threads
//
// C (M x N, row-major, leading dimension ldc) = A (M x K) * B (K x N)  (+ C when accumulate).
// A packed: panels of MR rows, k-major (panel[k*MR + i]); B packed: panels of NR columns,
// k-major (panel[k*NR + j]); both zero-padded at the edges so the microkernel always runs full
// tiles. Edge tiles of C go through a small buffer.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "convlab/problem.hpp"
#include "convlab/tuning.hpp"

namespace convlab::detail {

// [SECTION] microkernels

// c (MR x NR, leading dim ldc) = (acc ? c : 0) + sum_k a[k*lda + i] * b[k*NR + j]; lda = MR
// for a packed panel, or the column stride of an A whose rows are contiguous (read in place).
using MicroKernelFn = void (*)(dim_t kc, const float* a, const float* b, float* c, dim_t ldc,
                               bool acc, dim_t lda);

// The same with B's rows read in place: row k of the panel is brows[k][0 .. nv), nv <= NR
// (columns from nv on are zero; c still receives NR columns).
using MicroKernelRowsFn = void (*)(dim_t kc, const float* a, const float* const* brows, int nv,
                                   float* c, dim_t ldc, bool acc, dim_t lda);

// An edge tile of nv < 32 columns (the last panel of a block) of a 32-column panel: c (MR x nv,
// leading dim ldc; a kernel may write columns up to the next multiple of 16) = A * B over kc,
// B a packed panel (row k at b[k*32], zero from column nv on). With A row-major, for nv = 17
// bcol[k] = b(k, 16) contiguous (column 16 as MR dot products along k), and for nv <= 4
// bcol[j*kc + k] = b(k, j) (all of them as dot products). N = 49 (a 7x7 layer of one image) is
// 32 + 17 columns, N = 196 is 6 x 32 + 4.
using MicroKernelEdgeFn = void (*)(dim_t kc, const float* a, const float* b, const float* bcol,
                                   float* c, dim_t ldc, dim_t lda);

// A tile of exactly nv = NR - 15 = 16V + 1 columns (6 x 49 of a 6 x 64 kernel: N = 49, a 7x7
// output of one image) written straight into c (+= when acc): columns 0 .. 16V-1 from the packed
// panel (row k at b[k*NR]), column 16V from bcol[k] = b(k, 16V), contiguous along k.
using MicroKernelColFn = void (*)(dim_t kc, const float* a, const float* b, const float* bcol,
                                  float* c, dim_t ldc, bool acc, dim_t lda);

// t (R x 32) = sum over k < kc of x[off[k] + i] * b[k*32 + j]: R positions whose inputs for
// reduction row k lie side by side from x + off[k], times a packed panel; stored transposed,
// c[j*ldt + i] for i < R, j < nv.
using ShiftedFn = void (*)(dim_t kc, const float* x, const dim_t* off, const float* b, float* c,
                           dim_t ldt, int nv);

// The same, with x + off[k] + ahead (and R - 1 floats on) prefetched into L2 at reduction row k.
using ShiftedPfFn = void (*)(dim_t kc, const float* x, const dim_t* off, const float* b, float* c,
                             dim_t ldt, int nv, dim_t ahead);

// Longest run of output positions of MicroKernel::shifted_row_fn.
inline constexpr int kShiftedRowMax = 12;

// The same product with the positions in the lanes: c[o*ldc + j] = sum over k < kc of
// w[k*ldw + o] * x[off[k] + j], for o < nv (<= 4 output channels) and j < 16 V, the 16 V
// positions of an output row whose inputs for reduction row k lie side by side from x + off[k];
// stored straight into C's rows, by non-temporal stores with stream where C and ldc are aligned
// to the vectors. w: 4 channels of a packed W^T panel (ldw = 32).
using RowLanesFn = void (*)(dim_t kc, const float* x, const dim_t* off, const float* w, dim_t ldw,
                            float* c, dim_t ldc, int nv, bool stream);

// Orders the non-temporal stores made so far before the stores that follow (sfence on x86,
// nothing elsewhere): after a run of row_lanes_fn calls with stream, before C is read.
void stream_fence();
// Whether an output of `bytes` is written by non-temporal stores where its rule streams from
// `from` bytes on: t.stream_output Always always, Never never.
bool stream_mode_allows(std::size_t bytes, std::size_t from, const Tuning& t);

// Most vectors of 16 positions of MicroKernel::row_lanes_fn (a 112-wide output row).
inline constexpr int kRowLanesMax = 7;

// The reduction of a weight-gradient tile (RowRunsFn): ni images of nq runs of len positions.
// A row's value at (m, q, k) is arows[i][m*xi + q*xq + S k]; dY^T's 32 values are at
// b + m*bi + q*bq + 32 k.
struct Runs {
    dim_t ni = 1, nq = 1, len = 0;
    dim_t xi = 0, xq = 0;
    dim_t bi = 0, bq = 0;
    // Nonzero: each run's values ahead floats on (the next rows' run) prefetched into L2 as the
    // run starts.
    dim_t ahead = 0;
};

// t (MR x 32) = sum over the runs of a(i) * b (S = 1 or 2): MR reduction rows against a packed
// panel of dY^T; then c[j*ldt + i] (+= when acc) for i < MR, j < nv. The weight gradient's
// tiles over padded planes or the input itself (S = 1, a run per output row) and over a 1x1's
// input strided by 2 along w, read in place (S = 2). With raw, t itself: c[i*32 + j] for
// i < MR, j < 32 (the tiles whose rows are 12 input channels of one tap, into the buffer of
// flush_tap_tiles; ldt and acc unused).
using RowRunsFn = void (*)(const Runs& runs, const float* const* arows, const float* b, float* c,
                           dim_t ldt, bool raw, int nv, bool acc);

// c (MR x NR, leading dim ldc) = (acc ? c : 0) + A * B over kc with both read in place: a(i, k)
// = a[i*lda + k] (row-major) and b(k, j) = b[k*ldb + j] (B's rows, ldb apart).
using MicroKernelInPlaceFn = void (*)(dim_t kc, const float* a, const float* b, dim_t ldb, float* c,
                                      dim_t ldc, bool acc, dim_t lda);

// Rows of MicroKernel::tail_fn: the tallest tile (12 x 32) less one, and one for the index.
inline constexpr int kMaxTailRows = 12;

struct MicroKernel {
    const char* isa = "portable";  // avx512 | avx2 | portable
    int mr = 0, nr = 0;
    MicroKernelFn fn = nullptr;
    MicroKernelRowsFn rows_fn = nullptr;  // only where packing B cannot pay (few rows of C)
    // A read from row-major storage, a(i, k) = a[i*lda + k], instead of a packed panel (see
    // read_a_in_place); null where the ISA has none.
    MicroKernelFn rowa_fn = nullptr;
    // Edge tiles of nv = 16 V + R columns, [V][R] (12 x 32 only), for A packed or
    // column-contiguous and for A read from its rows; null where the full tile is as cheap.
    MicroKernelEdgeFn edge_fn[4][16] = {};
    MicroKernelEdgeFn edge_rowa_fn[4][16] = {};
    // fn and rowa_fn ([A row-major]) with C's rows written by non-temporal stores (after
    // adding C when acc), for C's rows 64-byte aligned (GemmBlocking::stream_c); null where
    // there are none.
    MicroKernelFn stream_fn[2] = {nullptr, nullptr};
    // A and B read in place, [C by non-temporal stores]; null where the ISA has none.
    MicroKernelInPlaceFn in_place_fn[2] = {nullptr, nullptr};
    // The same for a last row panel of 4 and 8 rows, [rows / 8].
    MicroKernelInPlaceFn in_place_tail_fn[2] = {nullptr, nullptr};
    // A last row panel of fewer than MR rows read in place, [A row-major][rows]: 12 x 32's of 4
    // and 8 rows, 6 x 16's of 1 to 5; null where there is none (the panel is packed and run as
    // a full tile).
    MicroKernelFn tail_fn[2][kMaxTailRows] = {};
    // Tiles of NR - 15 columns (MicroKernelColFn), [A row-major]; null where there are none.
    MicroKernelColFn col_fn[2] = {nullptr, nullptr};
    // R = 1 .. kShiftedRowMax output positions x 32 output channels of a convolution from its
    // padded stride-phase planes (or a 1x1's input rows), [R] (see ShiftedFn and
    // implicit_gemm_shifted.cpp).
    ShiftedFn shifted_row_fn[kShiftedRowMax + 1] = {};
    // The same with the R positions' inputs every other float, x[off[k] + 2 i] (a 1x1 strided
    // by 2 along w, read in place).
    ShiftedFn shifted_row_s2_fn[kShiftedRowMax + 1] = {};
    // shifted_row_fn for a row's first, last, or first and last tile ([0], [1], [2]) of a 3-wide,
    // stride-1, undilated convolution padded by 1 along w whose reduction rows come in threes
    // kw = 0, 1, 2: the taps that read the padding column are skipped (kc a multiple of 3).
    ShiftedFn shifted_edge_fn[3][kShiftedRowMax + 1] = {};
    // shifted_row_fn and shifted_row_s2_fn with the next tile's inputs prefetched (ShiftedPfFn).
    ShiftedPfFn shifted_row_pf_fn[kShiftedRowMax + 1] = {};
    ShiftedPfFn shifted_row_s2_pf_fn[kShiftedRowMax + 1] = {};
    // Whole output rows of 16 V positions x 4 output channels (RowLanesFn), [V].
    RowLanesFn row_lanes_fn[kRowLanesMax + 1] = {};
    // MR = 1 .. 12 reduction rows x 32 channels of the weight gradient (RowRunsFn), [S - 1][MR]:
    // a last tile of fewer than 12 rows computes only those (conv1's 147 = 12 x 12 + 3 spent a
    // whole tile on 3 rows).
    RowRunsFn row_runs_fn[2][13] = {};
};

// The best microkernel for this CPU (CONVLAB_ISA=avx512|avx2|portable in the environment caps
// the choice, for testing the fallbacks).
const MicroKernel& microkernel();
// Every microkernel this CPU can run, best first (for tests), and a switch between them (false
// when the CPU lacks that ISA).
const MicroKernel* microkernels(int& count);
bool select_microkernel(const char* isa);
// Whether the selected microkernel is AVX-512's. Rules measured on AVX-512 machines hold there;
// without it (AVX2, portable) several were measured again and narrowed: implicit_gemm's tiles
// (narrow_tiles), swapped_forward, swapped_bwd_data, winograd_pays.
bool avx512_selected();
// The microkernel for an m x n product: the selected one; with AVX-512 selected, 4 x 64 when
// m <= 4, 6 x 64 (whose 6 x 49 tiles run N = 49) when n = 49 and A's rows are contiguous
// (a_rows: A row-major, read in place), 7 x 48 for fewer than 64 rows that it fills better
// (m = 49), and 8 x 48 when it fills its tiles better than 12 x 32.
const MicroKernel& microkernel_for(dim_t m, dim_t n, bool a_rows = false);

// [SECTION] operands

// a(i, k) = p[i*rs + k*cs]; with ks > 0, images side by side along k (a weight gradient's
// reduction over images and positions): a(i, k) = p[i*rs + (k / ks)*ns + (k % ks)*cs].
struct StridedA {
    const float* p;
    dim_t rs, cs;
    dim_t ks = 0, ns = 0;
};

// Whether A's rows are contiguous runs along k (row-major, not a single column).
inline bool row_major(const StridedA& a) {
    return a.cs == 1 && a.rs != 1;
}

// Calls f(kk, off, len) for each run of the reduction [k0, k0 + kc) that lies in one image, ks
// positions per image (0: one image), ns floats between images, cs between positions: k0 + kk
// .. k0 + kk + len - 1, the first at offset off (StridedA: of its row; ImagesTB: of its column).
template <class F>
void for_image_runs(dim_t ks, dim_t ns, dim_t cs, dim_t k0, dim_t kc, const F& f) {
    if (ks == 0) return f(dim_t{0}, k0 * cs, kc);
    for (dim_t kk = 0; kk < kc;) {
        const dim_t k = k0 + kk, pos = k % ks, len = std::min(kc - kk, ks - pos);
        f(kk, (k / ks) * ns + pos * cs, len);
        kk += len;
    }
}

// Packs rows [i0, i0+mc) x cols [k0, k0+kc) of A into panels of mr rows.
void pack_a(const StridedA& a, dim_t i0, dim_t mc, dim_t k0, dim_t kc, int mr, float* dst);

// One panel of B from B^T: dst[k*nr + j] = src[j*ld + k] for j < nv, k < kc, and 0 for
// nv <= j < nr. With AVX-512 (and nr a multiple of 16) by 16 x 16 register transposes. With
// to_row, row k goes to dst + to_row[k] instead of dst + k*nr (a reordering of the rows done in
// the same pass).
void pack_transposed(const float* src, dim_t ld, dim_t nv, dim_t kc, int nr, float* dst,
                     const dim_t* to_row = nullptr);

// pack_transposed of a source whose rows hold B^T's values `step` floats apart: dst[k*nr + j] =
// src[j*ld + k*step] (0 for nv <= j < nr). Step 2 by two loads and a permute per 16 values.
void pack_sampled(const float* src, dim_t ld, dim_t step, dim_t nv, dim_t kc, int nr, float* dst);

// The weight gradient's tap tiles of one (12 input channels, 32 output channels) group, stored
// raw (RowRunsFn with raw) at buf[(t*12 + i)*32 + j] for tap t < ks, channel i < mv and
// output channel j: c[j*ldt + i*ks + t] (+= when acc) for j < nv, mv * ks contiguous floats
// per output channel (16 of them at a time by a 16x16 register transpose where AVX-512 is
// used), where storing each tile transposed wrote every float on its own, ks apart.
void flush_tap_tiles(const float* buf, int mv, int ks, float* c, dim_t ldt, int nv, bool acc);

// count runs of n floats, each picked from a run of len floats of src (n, len <= 16), zeros
// where idx[u] < 0: dst[j*ld_dst + u] = idx[u] < 0 ? 0 : src[j*ld_src + idx[u]] for j < count,
// u < n, 0 <= idx[u] < len. With AVX-512 a masked load, a permute and a masked store per run.
void permute_runs(const float* src, dim_t ld_src, int len, const int* idx, int n, dim_t count,
                  float* dst, dim_t ld_dst);

// B packer for a strided matrix: b(k, j) = p[k*rs + j*cs].
struct StridedB {
    const float* p;
    dim_t rs, cs;
    // Packs rows [k0, k0+kc) x cols [j0, j0+nc) into panels of nr columns (zero-padded).
    void operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const;
};

// B packer for several matrices side by side (images): b(k, j) = src[(j / in_size) * n_stride +
// k * in_size + j % in_size], i.e. the (k x in_size) blocks of consecutive images as one wide
// matrix, each image's row a contiguous run (1x1 stride-1 forward inputs, backward data's dY).
struct ImagesB {
    const float* src;
    dim_t n_stride, in_size;
    void operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const;
};

// B packer for B^T stored by rows with images side by side along k (a weight gradient's input
// or its sampled copy): b(k, j) = p[(k / ks)*ns + j*ld + k % ks].
struct ImagesTB {
    const float* p;
    dim_t ld, ks, ns;
    void operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const;
};

// B packer for a strided 1x1 weight gradient's B^T, the input sampled at the strides, read from
// the input itself (no sampled copy): b(k, j) = p[j*cs + at(first + k)], where output position
// q (along the reduction) lies in output row r = q / out_w at column q % out_w, and at(q) =
// (r / out_h) plane + (r % out_h) row + (q % out_w) sw.
struct SampledTB {
    const float* p;
    dim_t cs;              // floats between channels (columns)
    dim_t out_w, out_h;    // output positions per row, output rows per depth plane
    dim_t sw, row, plane;  // input floats between output columns, rows and depth planes
    dim_t first = 0;       // the position of k = 0
    void operator()(dim_t k0, dim_t kc, dim_t j0, dim_t nc, int nr, float* dst) const;
    static constexpr bool gathers = true;  // see GathersB
};

// Packers whose B is gathered value by value (SampledTB), not copied or transposed by rows,
// declare `static constexpr bool gathers = true`: gemm then weighs A read in place at a quarter
// of packing it, and splits B's columns rather than have each thread gather all of B
// (choose_split).
template <class PackB>
concept GathersB = PackB::gathers;

// [SECTION] driver

// Rows [0, rows) of len floats, stride apart, from p: data read next (the next block of B's
// source), prefetched into L2 while tiles run.
struct RowsAhead {
    const float* p = nullptr;
    dim_t stride = 0, rows = 0, len = 0;
};

struct GemmBlocking {
    dim_t mc = 96, kc = 256, nc = 1536;
    // B's next block prefetched into L2 while a block's tiles run, where B's rows are
    // contiguous in its source (StridedB) and the caller says the source comes from memory
    // (each image of a large batch: forward_implicit_gemm, measured there).
    bool prefetch_b = false;
    // Prefetched into L2 a share per microkernel call of a block (gemm_block sets it per block).
    RowsAhead ahead;
    // C's final values (its last block along k) written by non-temporal stores where the tile
    // allows (MicroKernel::stream_fn): for a C far larger than the caches, whose lines would
    // otherwise be read from memory before being written.
    bool stream_c = false;
    // A's next block prefetched into L2 while this one is used also where A is read in place
    // by rows (row-major, not copied): the caller knows A comes from memory (each 14x14 image of
    // a large batch in its own product: backward_weight_implicit_gemm, measured there).
    bool prefetch_a = false;
};

// Per-thread aligned scratch buffers, kept between calls (no page faults in steady state) until
// release_scratch(), not initialised. Slots: 0-2 the GEMM's packed tiles, 3 a column matrix or
// GEMM output, 4-7 the via_forward intermediates, 8 the GEMM's edge column (kGemmEdgeSlot), 9
// implicit_gemm's reordered input (kSubsampleSlot), 10 its packed dY^T (kPackedDySlot), 11 its
// packed W^T (kPackedWeiSlot), 12 a thread's own rows of dY^T (kPanelSlot: the shifted weight
// gradient, one image at a time), 13 a product computed away from its place before it is put
// there (kTransposedSlot: sgemm's transposed product, the transposed 1x1 forward, backward data
// and weight gradient, and the shifted forward's rows streamed to dst), 14-17 winograd's
// transformed weights, inputs, products (or gradients) and transform work (kWinograd*Slot).
inline constexpr int kScratchSlots = 18;
inline constexpr int kWinogradUSlot = 14;
inline constexpr int kWinogradVSlot = 15;
inline constexpr int kWinogradMSlot = 16;
inline constexpr int kWinogradWorkSlot = 17;
inline constexpr int kTransposedSlot = 13;
inline constexpr int kPackedWeiSlot = 11;
inline constexpr int kPanelSlot = 12;
inline constexpr int kGemmEdgeSlot = 8;
inline constexpr int kSubsampleSlot = 9;
inline constexpr int kPackedDySlot = 10;
float* scratch(int slot, std::size_t floats);
// Largest single scratch request in bytes since the last reset, over all threads and slots: the
// instrument behind "no column matrix larger than a few MiB" (tests/conv/test_fast_algorithms.cpp).
std::size_t scratch_high_water();
void reset_scratch_high_water();
// Bytes of scratch held by all threads, and their release: the calling thread's and (outside a
// parallel region) the OpenMP threads'. The next scratch() allocates again.
std::size_t scratch_bytes_held();
void release_scratch();
// Work memory: the scratch held plus the DaVinci algorithms' buffers (count_work_memory), and
// its peak since reset_work_memory_peak (which starts it at the bytes live then). The instrument
// behind the tests that hold each algorithm's stated need (work_bytes) against what it takes.
void count_work_memory(std::ptrdiff_t bytes);
std::size_t work_memory_peak();
void reset_work_memory_peak();

// Splits M x N over the threads as tm x tn blocks, choosing the split with the least estimated
// cost (tile work plus duplicated packing). a_cost: the cost of each thread's A rows per element
// against packing them (1; gemm gives a quarter for A read in place beside a gathered B).
void choose_split(dim_t m, dim_t n, dim_t k, const MicroKernel& uk, int threads, int& tm, int& tn,
                  double a_cost = 1.0);

// Threads a GEMM of this size may use (1 inside a parallel region or for tiny products).
int gemm_threads(dim_t m, dim_t n, dim_t k);
// Runs fn(ctx, t) once for each t in [0, threads) on OpenMP's threads (all of them on the
// calling thread without OpenMP).
void run_threads(int threads, void (*fn)(void*, int), void* ctx);
// The same for a callable body(t).
template <class F>
void run_threads(int threads, F& body) {
    run_threads(
        threads, [](void* ctx, int t) { (*static_cast<F*>(ctx))(t); }, &body);
}

// Whether gemm_block reads a row-major A (cs == 1) from its rows (in place, or copied row by row
// when the row stride would make the rows collide in L1) instead of packing it into panels:
// where the microkernel has a kernel for it, unless tuning.read_a is Never (Tuning::read_a says
// why).
bool read_a_in_place(const MicroKernel& uk, const StridedA& a, const Tuning& tuning);

// A B packer that can also hand out B's rows in place: run_end(j, nr) is the end of the run of
// columns from j that may be contiguous in memory (panels are cut there); block_rows(k0, kc)
// prepares rows [k0, k0+kc) once; rows(k0, kc, j, nv, prep, out) fills out[k] with a pointer to
// row k's columns [j, j+nv) when they are contiguous, or returns false (the panel is packed).
template <class PackB>
concept RowsInPlace = requires(const PackB& b, dim_t k, int nr, const float** out) {
    { b.run_end(k, nr) } -> std::same_as<dim_t>;
    { b.rows(k, k, k, nr, b.block_rows(k, k), out) } -> std::same_as<bool>;
};

// One thread's share of a product with a single row panel (m <= mr) whose microkernel reads B in
// place: nothing of B is packed where its rows are contiguous.
template <class PackB>
void gemm_block_rows(const MicroKernel& uk, const GemmBlocking& bl, dim_t i0, dim_t i1, dim_t j0,
                     dim_t j1, dim_t k, const StridedA& a, const PackB& packb, float* c, dim_t ldc,
                     bool accumulate) {
    const int mr = uk.mr, nr = uk.nr;
    const dim_t kcb = std::min(bl.kc, k), mv = i1 - i0;
    float* bbuf = scratch(0, static_cast<std::size_t>(nr * kcb));
    float* abuf = scratch(1, static_cast<std::size_t>(mr * kcb));
    float* tile = scratch(2, static_cast<std::size_t>(mr * nr));
    thread_local std::vector<const float*> ptrs;
    ptrs.resize(static_cast<std::size_t>(kcb));
    for (dim_t pc = 0; pc < k; pc += kcb) {
        const dim_t kc = std::min(kcb, k - pc);
        const bool acc = accumulate || pc > 0;
        pack_a(a, i0, mv, pc, kc, mr, abuf);
        const auto prep = packb.block_rows(pc, kc);
        for (dim_t jr = j0; jr < j1;) {
            const dim_t nv = std::min<dim_t>({nr, j1 - jr, packb.run_end(jr, nr) - jr});
            float* cp = c + i0 * ldc + jr;
            const bool full = mv == mr && nv == nr;
            float* out = full ? cp : tile;
            const dim_t ldo = full ? ldc : nr;
            if (packb.rows(pc, kc, jr, static_cast<int>(nv), prep, ptrs.data())) {
                uk.rows_fn(kc, abuf, ptrs.data(), static_cast<int>(nv), out, ldo, full && acc, mr);
            } else {
                packb(pc, kc, jr, nv, nr, bbuf);
                uk.fn(kc, abuf, bbuf, out, ldo, full && acc, mr);
            }
            if (!full)
                for (dim_t i = 0; i < mv; ++i)
                    for (dim_t j = 0; j < nv; ++j)
                        cp[i * ldc + j] =
                            acc ? cp[i * ldc + j] + tile[i * nr + j] : tile[i * nr + j];
            jr += nv;
        }
    }
}

// Prefetches a block of A (rows [i0, i0 + mc) x columns [k0, k0 + kc)) into L2 a share at a
// time, while the block before it is used: A read in place or copied then comes from L2
// instead of L3 or memory (res5a_branch1 at batch 1 copies 8 MiB of weights per call). Used by
// gemm_packed_block. Blocks whose rows or columns are contiguous runs only (not a.ks).
class PrefetchA {
  public:
    PrefetchA() = default;
    PrefetchA(const StridedA& a, dim_t i0, dim_t mc, dim_t k0, dim_t kc, dim_t shares) {
        if (a.ks != 0 || mc <= 0 || kc <= 0 || shares <= 0) return;
        if (a.cs == 1)
            start(a.p + i0 * a.rs + k0, a.rs, mc, kc, shares);
        else if (a.rs == 1)
            start(a.p + i0 + k0 * a.cs, a.cs, kc, mc, shares);
    }
    // Runs of len floats at p + o * outer_stride + i * inner_stride for o < outer, i < inner
    // (rows of several channels: a strided 1x1's input lines).
    static PrefetchA runs(const float* p, dim_t outer_stride, dim_t outer, dim_t inner_stride,
                          dim_t inner, dim_t len, dim_t shares) {
        PrefetchA f;
        if (outer <= 0 || inner <= 0 || len <= 0 || shares <= 0) return f;
        f.inner_ = inner;
        f.stride2_ = inner_stride;
        f.start(p, outer_stride, outer * inner, len, shares);
        return f;
    }
    // f(line) for the next share of the block's cache lines (64-byte aligned addresses); all
    // of them after `shares` steps.
    template <class F>
    void step(const F& f) {
        for (dim_t n = 0; n < quota_ && run_ < runs_; ++n) {
            f(reinterpret_cast<const void*>(line_));
            line_ += 64;
            if (line_ >= end_) {
                if (++run_ == runs_) break;
                first_line(inner_ == 1 ? p_ + run_ * stride_
                                       : p_ + run_ / inner_ * stride_ + run_ % inner_ * stride2_);
            }
        }
    }
    // step, each line prefetched into L2 (the GEMM's next block of A, the 1x1 tiles' next
    // chunk of input).
    void step_into_l2() {
        step([](const void* line) { __builtin_prefetch(line, 0, 2); });
    }
    // step, each line prefetched for writing (the lines a 1x1 forward's next tiles write).
    void step_for_write() {
        step([](const void* line) { __builtin_prefetch(line, 1, 2); });
    }

  private:
    void start(const float* p, dim_t stride, dim_t runs, dim_t len, dim_t shares) {
        p_ = p;
        stride_ = stride;
        runs_ = runs;
        len_ = len;
        first_line(p);
        quota_ = (runs * ((len + 15) / 16 + 1) + shares - 1) / shares;  // lines per share
    }
    void first_line(const float* run) {
        const auto at = reinterpret_cast<std::uintptr_t>(run);
        line_ = at & ~std::uintptr_t{63};
        end_ = at + static_cast<std::uintptr_t>(len_) * sizeof(float);
    }
    const float* p_ = nullptr;
    std::uintptr_t line_ = 0, end_ = 0;
    dim_t stride_ = 0, runs_ = 0, len_ = 0, run_ = 0, quota_ = 0, inner_ = 1, stride2_ = 0;
};

// Rows [i0, i1) x columns [jc, jc + nc) of C (+= when acc) from A's columns [pc, pc + kc) and a
// packed block of B (kc x nc in panels of nr columns, bbuf[jr*kc + k*nr + j]). A is packed here
// per MC block, or read in place (read_a_in_place under tuning). The loop every GEMM driver below
// ends in. A's next MC block is prefetched while this one is used; after the last, A's columns
// [pc_next, pc_next + kc_next) of the first (kc_next = 0: none).
void gemm_packed_block(const MicroKernel& uk, const GemmBlocking& bl, const Tuning& tuning,
                       dim_t i0, dim_t i1, dim_t jc, dim_t nc, dim_t pc, dim_t kc,
                       const StridedA& a, const float* bbuf, float* c, dim_t ldc, bool acc,
                       dim_t pc_next = 0, dim_t kc_next = 0);

// Columns of one packed B block: NC rounded down to whole panels, at most n rounded up.
inline dim_t block_columns(const GemmBlocking& bl, int nr, dim_t n) {
    return std::min(std::max<dim_t>(nr, bl.nc / nr * nr), (n + nr - 1) / nr * nr);
}

// Zeroes (or keeps, when accumulating) C[i0:i1, j0:j1] of a product with k == 0.
inline void gemm_empty_k(dim_t i0, dim_t i1, dim_t j0, dim_t j1, float* c, dim_t ldc,
                         bool accumulate) {
    if (!accumulate)
        for (dim_t i = i0; i < i1; ++i) std::fill(c + i * ldc + j0, c + i * ldc + j1, 0.0f);
}

// Whether gemm_block reads B's rows in place (MicroKernel::in_place_fn) rather than packing
// them (tuning.b_in_place: Auto by this rule, Always wherever it can run, Never): A row-major read
// in place, B's rows contiguous, the rows of C in whole panels or a last
// one of 4 or 8, and a packed panel that too few row panels would share to pay for its copy: at
// most 8 of them over a reduction of at most 256, or, where B comes from memory
// (GemmBlocking::prefetch_b), 24 over at most 64.
//   64 x 3136 x 64 (res2a_branch2a's forward, an image), 2 threads, B in cache: 0.136 -> 0.125
//   ms; bench, 3 alternating rounds: batch 1 0.135 -> 0.120 ms, batch 32 4.78-4.93 -> 3.98-4.04.
//   64 x 3136 x 256 (res2b_branch2a): 0.627 -> 0.495 ms (so that layer's forward is no longer
//   computed transposed, swapped_forward).
//   256 x 3136 x 64 (res2a_branch1): batch 32 16.3/16.7 -> 15.9/15.9 ms; batch 1 lost, 0.482 ->
//   0.492, and so did 512 x 784 x 128 at batch 32 (res3a_branch2c, 15.3/15.4 -> 15.6/15.6);
//   128 x 784 x 512, B in cache, 0.50 against 0.47 computed transposed (res3b_branch2a).
bool b_in_place_applies(const MicroKernel& uk, const GemmBlocking& bl, const StridedA& a,
                        const StridedB& b, dim_t m, dim_t k, const Tuning& tuning);
// Columns [j0, jf) of C[i0:i1] (jf: j0 plus whole panels of NR columns) from A and B read in
// place, a panel of B at a time (its next panel prefetched into L2 while its tiles run); returns
// jf, the columns left to the packed path.
dim_t gemm_b_in_place(const MicroKernel& uk, const GemmBlocking& bl, dim_t i0, dim_t i1, dim_t j0,
                      dim_t j1, dim_t k, const StridedA& a, const StridedB& b, float* c, dim_t ldc,
                      bool acc);

// One thread's share: C[i0:i1, j0:j1], under the blocked GEMM's rules of tuning.
template <class PackB>
void gemm_block(const MicroKernel& uk, const GemmBlocking& bl, const Tuning& tuning, dim_t i0,
                dim_t i1, dim_t j0, dim_t j1, dim_t k, const StridedA& a, const PackB& packb,
                float* c, dim_t ldc, bool accumulate) {
    const int mr = uk.mr, nr = uk.nr;
    if (i0 >= i1 || j0 >= j1) return;
    if (k == 0) return gemm_empty_k(i0, i1, j0, j1, c, ldc, accumulate);
    if constexpr (RowsInPlace<PackB>)
        if (uk.rows_fn && i1 - i0 <= mr) {
            gemm_block_rows(uk, bl, i0, i1, j0, j1, k, a, packb, c, ldc, accumulate);
            return;
        }
    if constexpr (std::is_same_v<PackB, StridedB>)
        if (b_in_place_applies(uk, bl, a, packb, i1 - i0, k, tuning)) {
            j0 = gemm_b_in_place(uk, bl, i0, i1, j0, j1, k, a, packb, c, ldc, accumulate);
            if (j0 >= j1) return;
        }
    const dim_t ncb = block_columns(bl, nr, j1 - j0);
    const dim_t kcb = std::min(bl.kc, k);
    float* bbuf = scratch(0, static_cast<std::size_t>(ncb * kcb));
    for (dim_t jc = j0; jc < j1; jc += ncb) {
        const dim_t nc = std::min(ncb, j1 - jc);
        for (dim_t pc = 0; pc < k; pc += kcb) {
            const dim_t kc = std::min(kcb, k - pc);
            packb(pc, kc, jc, nc, nr, bbuf);
            // A's block after this one: the next columns, or the first of the next B block.
            const dim_t pn = pc + kc < k ? pc + kc : 0;
            const dim_t kn = pc + kc < k ? std::min(kcb, k - pc - kc) : jc + nc < j1 ? kcb : 0;
            GemmBlocking blk = bl;
            blk.stream_c = bl.stream_c && pc + kc == k;
            // B's next block: the next rows of these columns or the first rows of the next
            // columns.
            blk.ahead = {};
            if constexpr (std::is_same_v<PackB, StridedB>) {
                if (bl.prefetch_b && packb.cs == 1 && pn > 0)
                    blk.ahead = {packb.p + pn * packb.rs + jc, packb.rs, kn, nc};
                else if (bl.prefetch_b && packb.cs == 1 && jc + nc < j1)
                    blk.ahead = {packb.p + jc + nc, packb.rs, kn, std::min(ncb, j1 - jc - nc)};
            }
            gemm_packed_block(uk, blk, tuning, i0, i1, jc, nc, pc, kc, a, bbuf, c, ldc,
                              accumulate || pc > 0, pn, kn);
        }
    }
}

// Whether gemm_packed_block runs the last rows of a block of a multiple of 4 rows (4 or 8 of
// 12 x 32's, 2 or 4 of 6 x 16's) by a kernel of that height (A read in place, not copied:
// MicroKernel::tail_fn), not as a full tile.
bool tail_rows_apply(const MicroKernel& uk, const StridedA& a, const Tuning& tuning);

// KC of a product with n columns: longer (1024, then 512) where the packed B block (KC x n,
// panels rounded, at most NC) stays within 512 KiB, so that each tile loads and stores C (and
// the 6 x 64 tiles sum their 49th column's dot products) less often; not for an A whose
// columns lie 4 KiB and more apart, whose next block is prefetched only within 1 MiB
// (gemm_packed_block). One panel of columns (N = 49, a 7x7 output of one image, 6 x 64
// tiles), 2 threads, against KC = 256: 512 x 49 x 2048 0.507/0.505 -> 0.494/0.494 ms, 2048 x
// 49 x 1024 0.983/0.983 -> 0.941/0.937; N = 196, 1024 x 196 x 512 (KC 512) 0.949/0.945 ->
// 0.924/0.928. Bench, batch 1, 3 alternating rounds, totals: forward 12.78 -> 12.71 ms, weight
// gradient 12.99 -> 12.88 (conv1's backward data -0.08, res4a_branch1's -0.04; res5a_branch1's
// backward data, W^T columns 4 KiB apart, lost 0.3 ms before that exception).
inline dim_t reduction_block(const MicroKernel& uk, const StridedA& a, dim_t n, dim_t k) {
    const GemmBlocking bl;
    if (k <= bl.kc || (a.rs == 1 && a.cs >= 1024)) return bl.kc;
    const dim_t cols = block_columns(bl, uk.nr, n);
    for (const dim_t kc : {dim_t{1024}, dim_t{512}})
        if (kc * cols * dim_t{sizeof(float)} <= (dim_t{512} << 10)) return kc;
    return bl.kc;
}

// L2 per core in bytes (sysconf; 0 or -1 when unknown).
long l2_cache_bytes();
// Whether L2 per core is 2 MiB or more (the Intel Xeons measured; the AMD cores the other rules
// were measured on have 0.5-1 MiB): the machine condition of the rules that only paid there.
bool large_l2();

// NC for a thread's share of `rows` rows of A and `panels` panels of nr columns of B, a reduction
// block of kc and l2 bytes of L2 per core. gemm_packed_block runs every row panel over the whole
// packed B block, so a block larger than L2 comes from L3 once per row panel; smaller blocks
// read A's rows once per block instead. So: GemmBlocking's NC where the block (kc x NC floats)
// fits in 3/4 of L2, where A's share (rows x kc) exceeds a quarter of L2, or where L2's size is
// unknown; else the share cut into as few blocks of equal whole panels as keep each within 27/32
// of L2. Zen 3 (512 KiB L2), 2 threads, harness alternating call by call, 8 MiB touched between
// calls, medians: 64 x 3136 x 256 (res2b_branch2a's forward) 1.35/1.30 -> 1.08/1.10 ms (NC 1536
// -> 400; 1.01/1.07 -> 0.94/0.96 without touching), A column-contiguous (NC 384) 1.65 -> 1.15; one
// thread, 128 x 1568 x 512 3.20 -> 2.95; even: 64 x 12544 x 147 2.31 -> 2.28, 128 x 1152 x 784
// 1.91 -> 1.94, 64 x 3136 x 576 2.26 -> 2.23. With A's share larger it lost: 512 x 784 x 256
// 2.59 -> 2.66, 1024 x 490 x 2048 19.3 -> 20.4, one thread 1024 x 784 x 256 6.33 -> 6.53. The
// bench's one-layer rounds of res2b_branch2a's forward at batch 1 (8 alternating) measured it
// within their spread: 1.126 -> 1.073 ms, minima 0.739 -> 0.732.
dim_t l2_block_columns(dim_t kc, int nr, dim_t panels, dim_t rows, long l2);

// C (m x n, ldc) = A * B (+ C when accumulate), on all of OpenMP's threads when it pays, under
// the blocked GEMM's rules of tuning (read_a, b_in_place). kc > 0 replaces GemmBlocking's;
// stream_c, prefetch_a and prefetch_b as GemmBlocking's.
template <class PackB>
void gemm(const Tuning& tuning, dim_t m, dim_t n, dim_t k, const StridedA& a, const PackB& packb,
          float* c, dim_t ldc, bool accumulate, dim_t kc = 0, bool stream_c = false,
          bool prefetch_a = false, bool prefetch_b = false) {
    const MicroKernel& uk = microkernel_for(m, n, row_major(a));
    GemmBlocking bl;
    bl.kc = reduction_block(uk, a, n, k);
    if (kc > 0) bl.kc = kc;
    bl.stream_c = stream_c;
    bl.prefetch_a = prefetch_a;
    bl.prefetch_b = prefetch_b;
    int tm = 1, tn = 1;
    choose_split(m, n, k, uk, gemm_threads(m, n, k), tm, tn,
                 GathersB<PackB> && read_a_in_place(uk, a, tuning) ? 0.25 : 1.0);
    const dim_t mpan = (m + uk.mr - 1) / uk.mr, npan = (n + uk.nr - 1) / uk.nr;
    if (bl.kc <= GemmBlocking{}.kc)  // not where reduction_block took a longer one for few columns
        bl.nc = l2_block_columns(std::min(bl.kc, k), uk.nr, (npan + tn - 1) / tn, (m + tm - 1) / tm,
                                 l2_cache_bytes());
    if (tm * tn == 1) {
        gemm_block(uk, bl, tuning, 0, m, 0, n, k, a, packb, c, ldc, accumulate);
        return;
    }
    // Row blocks aligned to MR, column blocks to NR, so only the last block has edge tiles. Where
    // each block's last rows run a kernel of their own (tail_rows_apply), row blocks are
    // cut at multiples of 4 as near equal as they come: 256 rows on two threads go 128 + 128
    // (10 tiles of 12 and a tail of 8 each), not 132 + 124 (11 tiles against 10 and a tail of
    // 4: the first thread took 14 us longer of res4a_branch2a's 250 at batch 1).
    const bool quarters = tm > 1 && m % 4 == 0 && tail_rows_apply(uk, a, tuning);
    const auto row_bound = [&](dim_t ti) {
        return quarters ? std::min(m, (m / 4 * ti / tm) * 4)
                        : std::min(m, (mpan * ti / tm) * uk.mr);
    };
    auto body = [&](int t) {
        const dim_t ti = t / tn, tj = t % tn;
        const dim_t i0 = row_bound(ti), i1 = row_bound(ti + 1);
        const dim_t j0 = std::min(n, (npan * tj / tn) * uk.nr);
        const dim_t j1 = std::min(n, (npan * (tj + 1) / tn) * uk.nr);
        gemm_block(uk, bl, tuning, i0, i1, j0, j1, k, a, packb, c, ldc, accumulate);
    };
    run_threads(tm * tn, body);
}

// Whether sgemm computes C^T = B^T A^T and transposes it into C: A column-contiguous (W^T in
// backward data) of at least 2 MiB, and at most 256 columns (a 7x7 or 14x14 layer at batch 1).
// Read in place, such an A's 12-float pieces of columns far apart come as demand misses. With
// A at 1 MiB or 0.5 MiB it measured even or slower (512x49x512, 512x196x256). tuning's
// transposed_products: Auto only on machines where it pays (transposed_products_pay), Always on
// any, Never not at all.
bool sgemm_transposes(dim_t m, dim_t n, dim_t k, const StridedA& a, const Tuning& tuning);

// The transposed products were measured faster on an Intel Xeon with 2 MiB of L2 per core
// (4608x49x512: 1.91 -> 1.45 ms) and slower on an AMD EPYC (Zen 4) with 1 MiB, where the old
// path prefetches A's next block into L2 (bench, res5 backward data at batch 1, 3 alternating
// rounds: 3.78 -> 4.41 ms). They are used where L2 per core is at least 2 MiB.
bool transposed_products_pay();

// C^T (n x m, leading dimension m) of C = A * B, computed as B^T A^T into scratch slot
// kTransposedSlot (A^T packed as B, B^T read as A), for transpose_into to put in place; kc > 0
// replaces GemmBlocking's; under tuning's rules, as gemm.
const float* product_transposed(const Tuning& tuning, dim_t m, dim_t n, dim_t k, const StridedA& a,
                                const StridedB& b, dim_t kc = 0);

// c[i*ldc + j] (+)= t[j*ldt + i] for i < m, j < n (t holds C^T), 16 x 16 blocks through
// registers with AVX-512, the rows of C split over `threads`.
void transpose_into(const float* t, dim_t ldt, dim_t m, dim_t n, float* c, dim_t ldc,
                    bool accumulate, int threads);

// dst[i*ldd + e] = src[i*lds + e] for i < rows, e < len, by non-temporal stores where dst is
// 64-byte aligned (whole cache lines written without reading them first, and not kept in the
// caches), plain stores at the ends; fenced before it returns. For outputs far larger than the
// caches, whose lines a tile would otherwise only partly write.
void stream_rows(const float* src, dim_t lds, dim_t rows, dim_t len, float* dst, dim_t ldd);

// Plain strided GEMM: C = A * B (+ C), under tuning's rules (read_a, b_in_place,
// transposed_products).
void sgemm(const Tuning& tuning, dim_t m, dim_t n, dim_t k, const StridedA& a, const StridedB& b,
           float* c, dim_t ldc, bool accumulate);

}  // namespace convlab::detail
