// Runs a forward convolution with ConvLab's engine (its default algorithm and implicit_gemm) and
// checks it against a naive loop over the definition. Exit status 0 when every value matches.
#include <convlab/conv.hpp>
#include <convlab/problem.hpp>
#include <convlab/tensor.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
    using convlab::dim_t;
    // Batch 2, 3 -> 4 channels, 9x9 input, 3x3 kernel, stride 2, padding 1.
    const convlab::Problem p = convlab::parse_descriptor("mb2ic3ih9oc4kh3sh2ph1");
    convlab::Tensor src(p.src_dims()), wei(p.wei_dims());
    for (dim_t i = 0; i < convlab::product(src.dims()); ++i)
        src.f32()[i] = static_cast<float>((i * 7) % 11) - 5.0f;
    for (dim_t i = 0; i < convlab::product(wei.dims()); ++i)
        wei.f32()[i] = static_cast<float>((i * 5) % 7) - 3.0f;

    // The definition: dst[n][k][y][x] = sum over c, r, s of src[n][c][y*S - P + r][x*S - P + s]
    // * wei[k][c][r][s], taps outside the input reading zero.
    const dim_t oh = p.out(0), ow = p.out(1), ih = p.in[0], iw = p.in[1];
    const dim_t kh = p.kernel[0], kw = p.kernel[1];
    std::vector<double> want(static_cast<std::size_t>(p.mb * p.oc * oh * ow), 0.0);
    for (dim_t n = 0; n < p.mb; ++n)
        for (dim_t k = 0; k < p.oc; ++k)
            for (dim_t y = 0; y < oh; ++y)
                for (dim_t x = 0; x < ow; ++x) {
                    double s = 0;
                    for (dim_t c = 0; c < p.ic; ++c)
                        for (dim_t r = 0; r < kh; ++r)
                            for (dim_t q = 0; q < kw; ++q) {
                                const dim_t yi = y * p.stride[0] - p.pad_begin[0] + r;
                                const dim_t xi = x * p.stride[1] - p.pad_begin[1] + q;
                                if (yi < 0 || yi >= ih || xi < 0 || xi >= iw) continue;
                                s += double(src.f32()[((n * p.ic + c) * ih + yi) * iw + xi]) *
                                     double(wei.f32()[((k * p.ic + c) * kh + r) * kw + q]);
                            }
                    want[static_cast<std::size_t>(((n * p.oc + k) * oh + y) * ow + x)] = s;
                }

    int bad = 0;
    for (const char* algo : {"auto", "implicit_gemm"}) {
        const convlab::Tensor dst = convlab::forward(p, src, wei, nullptr, algo);
        for (std::size_t i = 0; i < want.size(); ++i)
            if (std::fabs(double(dst.f32()[i]) - want[i]) > 1e-3) {
                if (bad++ < 5)
                    std::printf("%s: dst[%zu] = %g, the loop gives %g\n", algo, i,
                                double(dst.f32()[i]), want[i]);
            }
        std::printf("%s: %zu values of %s checked\n", algo, want.size(),
                    convlab::to_descriptor(p).c_str());
    }
    std::printf(bad ? "FAIL: %d values differ\n" : "PASS\n", bad);
    return bad ? 1 : 0;
}
