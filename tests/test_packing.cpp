// The GEMM core's transposing packers and transpose_into, on every microkernel this CPU runs
// (AVX-512's 16 x 16 and AVX2's 8 x 8 register transposes, the portable loops), and the row
// copies of StridedB (in bands of rows or row by row) and ImagesB, against the definitions
// written out element by element: sizes that are not multiples of 8 or 16, rows reordered
// (to_row), every other float (pack_sampled's step 2) and accumulation.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "../engine/src/gemm/microkernel.hpp"

using namespace convlab;

namespace {

struct KernelGuard {
    std::string before = detail::microkernel().isa;
    ~KernelGuard() { detail::select_microkernel(before.c_str()); }
};

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

}  // namespace

TEST_CASE("pack_transposed and pack_sampled equal their definitions on every microkernel") {
    KernelGuard guard;
    int nk = 0;
    const detail::MicroKernel* uks = detail::microkernels(nk);
    std::mt19937 rng(7);
    int checked = 0;
    for (int u = 0; u < nk; ++u) {
        const std::string isa = uks[u].isa;
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const int nr : {16, 32, 48}) {
            for (const dim_t nv : {dim_t{1}, dim_t{7}, dim_t{8}, dim_t{13}, dim_t{16}, dim_t{nr}}) {
                if (nv > nr) continue;
                for (const dim_t kc : {dim_t{1}, dim_t{5}, dim_t{8}, dim_t{17}, dim_t{40}}) {
                    for (const dim_t step : {dim_t{1}, dim_t{2}, dim_t{3}}) {
                        const dim_t ld = step * kc + 3;  // rows of B^T, not aligned
                        const std::vector<float> src =
                            random_floats(static_cast<std::size_t>(nv * ld), rng);
                        std::vector<float> got(static_cast<std::size_t>(kc * nr), -7.0f);
                        detail::pack_sampled(src.data(), ld, step, nv, kc, nr, got.data());
                        int wrong = 0;
                        for (dim_t k = 0; k < kc; ++k)
                            for (dim_t j = 0; j < nr; ++j) {
                                const float want = j < nv ? src[j * ld + k * step] : 0.0f;
                                wrong += got[k * nr + j] != want;
                            }
                        INFO("isa " << isa << " nr " << nr << " nv " << nv << " kc " << kc
                                    << " step " << step);
                        CHECK(wrong == 0);
                        ++checked;
                    }
                    // Rows reordered: row k goes to to_row[k] (reversed here).
                    const dim_t ld = kc + 1;
                    const std::vector<float> src =
                        random_floats(static_cast<std::size_t>(nv * ld), rng);
                    std::vector<dim_t> to_row(static_cast<std::size_t>(kc));
                    for (dim_t k = 0; k < kc; ++k) to_row[k] = (kc - 1 - k) * nr;
                    std::vector<float> got(static_cast<std::size_t>(kc * nr), -7.0f);
                    detail::pack_transposed(src.data(), ld, nv, kc, nr, got.data(), to_row.data());
                    int wrong = 0;
                    for (dim_t k = 0; k < kc; ++k)
                        for (dim_t j = 0; j < nr; ++j)
                            wrong +=
                                got[(kc - 1 - k) * nr + j] != (j < nv ? src[j * ld + k] : 0.0f);
                    INFO("isa " << isa << " to_row, nr " << nr << " nv " << nv << " kc " << kc);
                    CHECK(wrong == 0);
                }
            }
        }
    }
    CHECK(checked == nk * 3 * 6 * 5 * 3);  // every (nr, nv, kc, step) on every microkernel
}

TEST_CASE("StridedB packs rows into panels, in bands of rows or row by row, as defined") {
    // b(k, j) = p[k*rs + j] into panels of nr columns: panel q's row k at dst[q*nr*kc + k*nr],
    // zeros past nc. 16-column panels of rows 1024 floats and more apart go in bands of 4 rows
    // (kc not a multiple of 4 leaves a short band), others row by row.
    std::mt19937 rng(11);
    int checked = 0;
    for (const int nr : {16, 32}) {
        for (const dim_t rs : {dim_t{200}, dim_t{1000}, dim_t{1030}, dim_t{3136}}) {
            for (const dim_t kc : {dim_t{1}, dim_t{3}, dim_t{4}, dim_t{9}, dim_t{30}}) {
                for (const dim_t nc : {dim_t{5}, dim_t{16}, dim_t{37}, dim_t{160}}) {
                    const dim_t k0 = 2, j0 = 7, rows = k0 + kc;
                    const std::vector<float> src =
                        random_floats(static_cast<std::size_t>(rows * rs), rng);
                    const dim_t panels = (nc + nr - 1) / nr;
                    std::vector<float> got(static_cast<std::size_t>(panels * nr * kc), -7.0f);
                    detail::StridedB{src.data(), rs, 1}(k0, kc, j0, nc, nr, got.data());
                    int wrong = 0;
                    for (dim_t q = 0; q < panels; ++q)
                        for (dim_t k = 0; k < kc; ++k)
                            for (dim_t j = 0; j < nr; ++j) {
                                const dim_t col = q * nr + j;
                                const float want = col < nc ? src[(k0 + k) * rs + j0 + col] : 0.0f;
                                wrong += got[(q * kc + k) * nr + j] != want;
                            }
                    INFO("nr " << nr << " rs " << rs << " kc " << kc << " nc " << nc);
                    CHECK(wrong == 0);
                    ++checked;
                }
            }
        }
    }
    CHECK(checked == 2 * 4 * 5 * 4);
}

TEST_CASE("ImagesB packs images side by side into panels, as defined") {
    // b(k, j) = src[(j / in_size) n_stride + k in_size + j % in_size], with panels that span
    // two images.
    std::mt19937 rng(13);
    int checked = 0;
    for (const int nr : {16, 32}) {
        for (const dim_t in_size : {dim_t{200}, dim_t{520}, dim_t{784}}) {
            for (const dim_t kc : {dim_t{1}, dim_t{6}, dim_t{9}}) {
                const dim_t k0 = 3, rows = k0 + kc, n_stride = rows * in_size + 5, images = 3;
                const std::vector<float> src =
                    random_floats(static_cast<std::size_t>(images * n_stride), rng);
                for (const dim_t j0 : {dim_t{0}, in_size - 9}) {
                    for (const dim_t nc : {dim_t{7}, dim_t{48}, in_size + 21}) {
                        const dim_t panels = (nc + nr - 1) / nr;
                        std::vector<float> got(static_cast<std::size_t>(panels * nr * kc), -7.0f);
                        detail::ImagesB{src.data(), n_stride, in_size}(k0, kc, j0, nc, nr,
                                                                       got.data());
                        int wrong = 0;
                        for (dim_t q = 0; q < panels; ++q)
                            for (dim_t k = 0; k < kc; ++k)
                                for (dim_t j = 0; j < nr; ++j) {
                                    const dim_t col = j0 + q * nr + j;
                                    const float want = q * nr + j < nc
                                                           ? src[col / in_size * n_stride +
                                                                 (k0 + k) * in_size + col % in_size]
                                                           : 0.0f;
                                    wrong += got[(q * kc + k) * nr + j] != want;
                                }
                        INFO("nr " << nr << " in_size " << in_size << " kc " << kc << " j0 " << j0
                                   << " nc " << nc);
                        CHECK(wrong == 0);
                        ++checked;
                    }
                }
            }
        }
    }
    CHECK(checked == 2 * 3 * 3 * 2 * 3);
}

TEST_CASE("transpose_into puts C^T in place, with and without accumulating, on every microkernel") {
    KernelGuard guard;
    int nk = 0;
    const detail::MicroKernel* uks = detail::microkernels(nk);
    std::mt19937 rng(11);
    for (int u = 0; u < nk; ++u) {
        const std::string isa = uks[u].isa;
        REQUIRE(detail::select_microkernel(isa.c_str()));
        for (const dim_t m : {dim_t{1}, dim_t{5}, dim_t{8}, dim_t{21}, dim_t{64}})
            for (const dim_t n : {dim_t{1}, dim_t{9}, dim_t{16}, dim_t{33}})
                for (const bool acc : {false, true})
                    for (const int threads : {1, 2}) {
                        const dim_t ldt = m + 2, ldc = n + 5;
                        const std::vector<float> t =
                            random_floats(static_cast<std::size_t>(n * ldt), rng);
                        const std::vector<float> c0 =
                            random_floats(static_cast<std::size_t>(m * ldc), rng);
                        std::vector<float> c = c0;
                        detail::transpose_into(t.data(), ldt, m, n, c.data(), ldc, acc, threads);
                        int wrong = 0;
                        for (dim_t i = 0; i < m; ++i)
                            for (dim_t j = 0; j < ldc; ++j) {
                                const float tv = j < n ? t[j * ldt + i] : 0.0f;
                                const float want = j >= n ? c0[i * ldc + j]
                                                   : acc  ? c0[i * ldc + j] + tv
                                                          : tv;
                                wrong += c[i * ldc + j] != want;
                            }
                        INFO("isa " << isa << " m " << m << " n " << n << " acc " << acc
                                    << " threads " << threads);
                        CHECK(wrong == 0);
                    }
    }
}
