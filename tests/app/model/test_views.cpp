// The app's window-free state (app/model/model.hpp): for every view and a set of problems (strides
// with leftover rows, dilation, groups, asymmetric padding, 1-D, 3-D), step k highlights exactly
// the pairs the engine's IndexMap enumerates for step k, hovering a cell yields what the map's
// own sources_of / destinations_of say, running sums equal the engine's step-wise executor, the
// stride and weight-gradient views light exactly the taps the convolution formula names, hovers
// give their formulas. The canvas geometry is test_arrange.cpp's. No window is opened.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "convlab/conv.hpp"
#include "convlab/index_map.hpp"
#include "convlab/maps.hpp"
#include "convlab/problem.hpp"
#include "model/model.hpp"
#include "view_test_util.hpp"

using namespace convlab;
using namespace convlab::app_test;

// The largest single operator-new allocation while armed: evidence that a view too large to show
// is refused before its panels are allocated. (Not under AddressSanitizer, which has its own
// operator new: there the test checks the message and the time only.)
#if defined(__SANITIZE_ADDRESS__)
#define CONVLAB_TRACK_NEW 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONVLAB_TRACK_NEW 0
#endif
#endif
#ifndef CONVLAB_TRACK_NEW
#define CONVLAB_TRACK_NEW 1
#endif

namespace {
std::atomic<bool> g_track_new{false};
std::atomic<std::size_t> g_largest_new{0};
}  // namespace

#if CONVLAB_TRACK_NEW
// malloc/free underneath, as libstdc++'s own; GCC cannot see that the pair matches.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
    if (g_track_new.load(std::memory_order_relaxed)) {
        std::size_t cur = g_largest_new.load(std::memory_order_relaxed);
        while (n > cur && !g_largest_new.compare_exchange_weak(cur, n)) {
        }
    }
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
#pragma GCC diagnostic pop
#endif

TEST_CASE("app model: step k highlights exactly the pairs of the map's step k") {
    for (const char* desc : kProblems)
        for (const char* view : kViews) {
            const app::ViewModel v = build(view, desc);
            for (const auto& drv : v.drivers) {
                if (drv.link < 0) continue;
                const app::Link& l = v.links[static_cast<std::size_t>(drv.link)];
                for (Granularity g : kGranularities) {
                    const dim_t n = l.map->num_steps(g);
                    REQUIRE(n == l.num_steps(g));
                    REQUIRE(n <= app::num_steps(v, g));
                    for (dim_t k = 0; k < std::min<dim_t>(n, 150); ++k) {
                        std::vector<dim_t> src, dst;
                        l.map->for_each_in_step(g, k, [&](dim_t s, dim_t d) {
                            if (s >= 0) src.push_back(s);
                            if (d >= 0) dst.push_back(d);
                        });
                        const app::StepState st = app::compute_step(v, g, k);
                        INFO(desc << " view " << view << " map " << l.name << " granularity "
                                  << granularity_name(g) << " step " << k);
                        CHECK(st.current[static_cast<std::size_t>(l.src)] == sorted(src));
                        CHECK(st.current[static_cast<std::size_t>(l.dst)] == sorted(dst));
                        // Flags agree with the sets.
                        const auto& flags = st.panels[static_cast<std::size_t>(l.dst)].flags;
                        dim_t flagged = 0;
                        for (auto f : flags) flagged += (f & app::kCurrent) != 0;
                        CHECK(flagged == static_cast<dim_t>(sorted(dst).size()));
                    }
                }
            }
        }
}

TEST_CASE("app model: hovering a cell yields the map's own sources and destinations") {
    for (const char* desc : kProblems)
        for (const char* view : kViews) {
            const app::ViewModel v = build(view, desc);
            for (const auto& l : v.links) {
                const dim_t nd = v.panels[static_cast<std::size_t>(l.dst)].numel();
                const dim_t ns = v.panels[static_cast<std::size_t>(l.src)].numel();
                // Every cell of small panels, a spread of them in big ones.
                const dim_t sd = std::max<dim_t>(1, nd / 200), ss = std::max<dim_t>(1, ns / 200);
                for (dim_t c = 0; c < nd; c += sd) {
                    INFO(desc << " view " << view << " map " << l.name << " dst cell " << c);
                    const auto cells = app::linked_cells(v, l.dst, c);
                    CHECK(cells[static_cast<std::size_t>(l.src)] == sorted(l.map->sources_of(c)));
                    CHECK(l.sources_of(c) == sorted(l.map->sources_of(c)));
                }
                for (dim_t c = 0; c < ns; c += ss) {
                    INFO(desc << " view " << view << " map " << l.name << " src cell " << c);
                    const auto cells = app::linked_cells(v, l.src, c);
                    CHECK(cells[static_cast<std::size_t>(l.dst)] ==
                          sorted(l.map->destinations_of(c)));
                }
            }
        }
}

TEST_CASE("app model: shown values follow the engine's step-wise executor") {
    for (const char* desc : kProblems)
        for (const char* view : {"im2col", "col2im", "fliprot", "fractal"}) {
            const app::ViewModel v = build(view, desc, app::DataKind::Real);
            const app::Link& l = v.links[static_cast<std::size_t>(v.drivers[0].link)];
            const auto& src = v.panels[static_cast<std::size_t>(l.src)].values;
            for (Granularity g : {Granularity::Element, Granularity::Line}) {
                const dim_t n = l.num_steps(g);
                for (dim_t k = 0; k < std::min<dim_t>(n, 40); ++k) {
                    std::vector<float> want(static_cast<std::size_t>(l.map->dst().numel()), 0.0f);
                    l.map->execute_steps(g, k + 1, src.data(), want.data());
                    const app::StepState st = app::compute_step(v, g, k);
                    const auto& ps = st.panels[static_cast<std::size_t>(l.dst)];
                    INFO(desc << " view " << view << " step " << k);
                    dim_t written = 0;
                    for (std::size_t i = 0; i < want.size(); ++i) {
                        if (ps.flags[i] & app::kPending) continue;
                        ++written;
                        // Reduce: running sums in a different order than the executor: fp32
                        // rounding only.
                        REQUIRE(std::fabs(ps.shown[i] - want[i]) <=
                                1e-5f * (1.0f + std::fabs(want[i])));
                    }
                    if (l.is_gather()) {
                        dim_t b = 0, e = 0;
                        l.step_range(g, k, b, e);
                        CHECK(written == e);  // exactly the destinations of steps 0..k
                    } else {
                        // Contribution counts: how many sources of steps 0..k feed each cell.
                        dim_t b = 0, e = 0;
                        l.step_range(g, k, b, e);
                        dim_t total = 0;
                        for (auto c : ps.count) total += c;
                        dim_t feeding = 0;
                        for (dim_t s = 0; s < e; ++s)
                            feeding += l.image[static_cast<std::size_t>(l.element_at(s))] >= 0;
                        CHECK(total == feeding);
                    }
                }
            }
        }
}

// The stride view: the dY taps lit for dX element (n, c, i) must be exactly the dY elements the
// convolution formula sends there: dY(n, k, o) with i = o*s - pb + t*d for some tap t, k in
// c's group. This checks the zero insertion, the padding with the leftover r and the FlipRot
// sliding together, independently of how the view computes them.
TEST_CASE("app model: the stride view lights exactly the dY taps that feed a dX element") {
    for (const char* desc : kProblems) {
        const Problem p = parse_descriptor(desc);
        const app::ViewModel v = build("stride", desc);
        const auto dxi = static_cast<std::size_t>(
            std::find_if(v.panels.begin(), v.panels.end(),
                         [](const app::Panel& pn) { return pn.name == "dX"; }) -
            v.panels.begin());
        REQUIRE(dxi < v.panels.size());
        const auto& dx = v.panels[dxi];
        REQUIRE(v.panels[0].name == "dY");
        const Shape& ys = v.panels[0].shape;
        for (dim_t e = 0; e < dx.numel(); ++e) {
            const app::StepState st = app::compute_step(v, Granularity::Element, e);
            std::vector<dim_t> xc(dx.shape.dims.size());
            dx.shape.coord_of(e, xc);
            std::vector<dim_t> want;
            std::vector<dim_t> yc(ys.dims.size());
            for (dim_t y = 0; y < ys.numel(); ++y) {
                ys.coord_of(y, yc);
                if (yc[0] != xc[0] || yc[1] / p.ocg() != xc[1] / p.icg()) continue;
                bool feeds = true;
                for (int a = 0; a < p.ndims; ++a) {
                    const dim_t off = xc[2 + a] + p.pad_begin[a] - yc[2 + a] * p.stride[a];
                    feeds &=
                        off >= 0 && off % p.dilation[a] == 0 && off / p.dilation[a] < p.kernel[a];
                }
                if (feeds) want.push_back(y);
            }
            INFO(desc << " dX element " << e);
            CHECK(st.current[0] == want);
        }
        CHECK(v.check.find(": yes") != std::string::npos);
    }
}

// The stride phases of dX (implicit GEMM's one GEMM per phase): every dX cell reads, by the
// convolution formula (conv_terms), only kernel taps of its phase's list, and the cells of a
// phase together read every tap of the list; stride 1 has no phases.
TEST_CASE("app model: dX's stride phases name the kernel taps their cells read") {
    for (const char* desc : kProblems) {
        const Problem p = parse_descriptor(desc);
        const app::ViewModel v = build("stride", desc);
        const auto it = std::find_if(v.panels.begin(), v.panels.end(),
                                     [](const app::Panel& pn) { return pn.name == "dX"; });
        REQUIRE(it != v.panels.end());
        const app::Panel& dx = *it;
        dim_t phases = 1;
        for (int a = 0; a < p.ndims; ++a) phases *= p.stride[a];
        INFO(desc);
        if (phases == 1 || phases > app::kMaxPhases) {
            CHECK(dx.group.empty());
            continue;
        }
        REQUIRE(static_cast<dim_t>(dx.group.size()) == dx.numel());
        REQUIRE(static_cast<dim_t>(dx.group_names.size()) == phases);
        // Taps read per phase, as (axis, offset) pairs, against the lists phase_taps gives.
        std::vector<std::set<std::pair<int, dim_t>>> read(static_cast<std::size_t>(phases));
        const dim_t taps = p.kernel_spatial();
        std::vector<dim_t> xc(dx.shape.dims.size());
        for (dim_t e = 0; e < dx.numel(); ++e) {
            dx.shape.coord_of(e, xc);
            const std::uint8_t g = dx.group[static_cast<std::size_t>(e)];
            REQUIRE(g < phases);
            // The phase's residues, the first axis outermost.
            dim_t below = phases;
            for (int a = 0; a < p.ndims; ++a) {
                below /= p.stride[a];
                CHECK((g / below) % p.stride[a] ==
                      xc[static_cast<std::size_t>(2 + a)] % p.stride[a]);
            }
            for (const auto& [y, w] : app::conv_terms(p, app::ConvResult::DiffSrc, e)) {
                (void)y;
                dim_t t = w % taps;  // the tap of W(k, c, t...), the last axis fastest
                for (int a = p.ndims - 1; a >= 0; --a) {
                    const dim_t off = t % p.kernel[a];
                    t /= p.kernel[a];
                    const auto list =
                        app::phase_taps(p, a, xc[static_cast<std::size_t>(2 + a)] % p.stride[a]);
                    CHECK(std::find(list.begin(), list.end(), off) != list.end());
                    read[g].insert({a, off});
                }
            }
        }
        // Each phase's list is what its cells read (where the image is large enough that every
        // tap of the list lands inside it for some cell: the problems here are).
        for (dim_t g = 0; g < phases; ++g) {
            dim_t below = phases;
            for (int a = 0; a < p.ndims; ++a) {
                below /= p.stride[a];
                for (dim_t off : app::phase_taps(p, a, (g / below) % p.stride[a]))
                    CHECK(read[static_cast<std::size_t>(g)].count({a, off}) == 1);
            }
        }
    }
    // The lesson's layer: the four phases of a 3x3 kernel at stride 2, padding 1, named.
    const app::ViewModel v = build("stride", "mb1ic1ih5oc1kh3sh2ph1");
    const app::Panel& dx = v.panels.back();
    REQUIRE(dx.name == "dX");
    CHECK(dx.group_names == std::vector<std::string>{"h%2=0 w%2=0: kh {1} kw {1} (1 tap)",
                                                     "h%2=0 w%2=1: kh {1} kw {0,2} (2 taps)",
                                                     "h%2=1 w%2=0: kh {0,2} kw {1} (2 taps)",
                                                     "h%2=1 w%2=1: kh {0,2} kw {0,2} (4 taps)"});
    CHECK(dx.group[1 * 5 + 1] == 3);  // dX[1][1]
    CHECK(dx.group[0] == 0);
    CHECK(build("stride", "mb1ic2ih5oc2kh3ph1").panels.back().group.empty());
}

// The weight-gradient view: the X elements lit (through B = im2col(X)) for dW(k, c, t) are the
// ones the formula names: X(n, c_abs, o*s - pb + t*d) inside the image, for every n and o.
TEST_CASE("app model: the weight-gradient view lights exactly the inputs of a dW element") {
    for (const char* desc : kProblems) {
        const Problem p = parse_descriptor(desc);
        const app::ViewModel v = build("weight_grad", desc);
        const auto& dw = v.panels[3];
        REQUIRE(dw.name == "dW");
        const Shape& xs = v.panels[0].shape;
        for (dim_t e = 0; e < dw.numel(); ++e) {
            const app::StepState st = app::compute_step(v, Granularity::Element, e);
            std::vector<dim_t> wc(dw.shape.dims.size());
            dw.shape.coord_of(e, wc);
            const dim_t g = wc[0] / p.ocg(), c_abs = g * p.icg() + wc[1];
            std::set<dim_t> want;
            std::vector<dim_t> xc(xs.dims.size());
            for (dim_t x = 0; x < xs.numel(); ++x) {
                xs.coord_of(x, xc);
                if (xc[1] != c_abs) continue;
                bool hit = true;
                for (int a = 0; a < p.ndims; ++a) {
                    // Some output position o reads this input through tap t = wc[2 + a].
                    const dim_t num = xc[2 + a] + p.pad_begin[a] - wc[2 + a] * p.dilation[a];
                    hit &= num >= 0 && num % p.stride[a] == 0 && num / p.stride[a] < p.out(a);
                }
                if (hit) want.insert(x);
            }
            INFO(desc << " dW element " << e);
            CHECK(st.current[0] == std::vector<dim_t>(want.begin(), want.end()));
        }
    }
}

TEST_CASE("app model: every view agrees with the engine's reference on integer and real data") {
    for (const char* desc : kProblems)
        for (const char* view : kViews)
            for (auto data : {app::DataKind::Integer, app::DataKind::Real}) {
                const app::ViewModel v = build(view, desc, data);
                INFO(desc << " view " << view << ": " << v.check);
                CHECK(!v.check.empty());
                CHECK(v.check.find(": yes") != std::string::npos);
            }
}

namespace {

// The formula of cell `coord` of the panel named `panel`.
std::string formula_at(const app::ViewModel& v, const std::string& panel,
                       const std::vector<dim_t>& coord) {
    for (std::size_t i = 0; i < v.panels.size(); ++i)
        if (v.panels[i].name == panel)
            return v.formula(v, static_cast<int>(i), v.panels[i].shape.linear_of(coord));
    FAIL("no panel " << panel);
    return "";
}

}  // namespace

// Hover formulas name the terms and fill in the numbers (values by hand from the integer data:
// element i holds i % 99 + 1).
TEST_CASE("app model: hover formulas list their terms with the numbers filled in") {
    SUBCASE("col2im: dX lists the B* cells it sums, capped at 8 terms") {
        const app::ViewModel v = build("col2im", "mb1ic2ih5oc3kh3");
        // dX(0,0,1,1): taps (kh,kw) = (0,0),(0,1),(1,0),(1,1) at output (1,1),(1,0),(0,1),(0,0).
        const std::string f = formula_at(v, "dX", {0, 0, 1, 1});
        MESSAGE(f);
        CHECK(f.find("dX(n=0,c=0,h=1,w=1) = sum of B*(row, col) over the 4 kernel taps") == 0);
        CHECK(f.find("= B*(0,4) + B*(1,3) + B*(3,1) + B*(4,0) = 1122 + 1104 + 1050 + 1014 = "
                     "4290") != std::string::npos);
        const std::string g = formula_at(v, "dX", {0, 0, 2, 2});  // 9 taps
        MESSAGE(g);
        CHECK(g.find("over the 9 kernel taps") != std::string::npos);
        CHECK(g.find("+ ... = ") != std::string::npos);
    }
    SUBCASE("stride: dX lists the dY x W' products that are not zeros of P") {
        const app::ViewModel v = build("stride", "mb1ic2ih3oc2kh2");
        // dY k=0 [1 2; 3 4], k=1 [5 6; 7 8]; W'(c=0,k=0) [4 3; 2 1], W'(c=0,k=1) [12 11; 10 9].
        const std::string f = formula_at(v, "dX", {0, 0, 0, 0});
        MESSAGE(f);
        CHECK(f.find("(8 products; 2 read a dY tap") != std::string::npos);
        CHECK(f.find("dY(0,0,0,0)*W'(0,0,1,1) + dY(0,1,0,0)*W'(0,1,1,1) = 1*1 + 5*9 = 46") !=
              std::string::npos);
        const app::ViewModel r = build("stride", "mb1ic1ih6oc1kh3sh2ph1", app::DataKind::Real);
        const std::string g = formula_at(r, "dX", {0, 0, 2, 2});
        MESSAGE(g);
        CHECK(g.find("*W'(0,0,") != std::string::npos);
    }
    SUBCASE("fractal: Wz derives c and k from the fractal coordinates, by the map's terms") {
        const app::ViewModel v =
            build("fractal", "mb1ic20ih4oc18kh3ph1", app::DataKind::Integer, 16);
        // Row 13 = (c1=1, kh=1, kw=1); W(17, 19, 1, 1) is element 3235: 3235 % 99 + 1 = 68.
        const std::string f = formula_at(v, "Wz", {13, 1, 1, 3});
        MESSAGE(f);
        CHECK(f.find("kw = c1hw % KW = 13 % 3 = 1; kh = c1hw/KW % KH = 13/3 % 3 = 1; c1 = "
                     "c1hw/KW/KH = 13/3/3 = 1; o = n1*N0 + n0 = 1*16 + 1 = 17; i = c1*C0 + c0 = "
                     "1*16 + 3 = 19; o < O: 17 < 18 holds; i < I: 19 < 20 holds <- "
                     "W(k=17,c=19,kh=1,kw=1) = 68") != std::string::npos);
        CHECK(formula_at(v, "Wz", {13, 1, 2, 3})
                  .find("o < O: 18 < 18 fails: a padding zero; i < I: 19 < 20 holds <- 0 "
                        "(padding)") != std::string::npos);
        CHECK(formula_at(v, "Wz", {13, 0, 0, 4})
                  .find("i = c1*C0 + c0 = 1*16 + 4 = 20; o < O: 0 < 18 holds; i < I: 20 < 20 "
                        "fails: a padding zero <- 0 (padding)") != std::string::npos);
        // X5 lanes: c = c1*C0 + c0 with the numbers.
        CHECK(formula_at(v, "X5", {0, 1, 0, 0, 2})
                  .find("c = c1*C0 + c0 = 1*16 + 2 = 18; c < C: 18 < 20 holds <- "
                        "X(n=0,c=18,h=0,w=0) = ") != std::string::npos);
        const app::ViewModel v3 = build("fractal", "mb1ic3id2ih2iw2oc2kd2kh2kw2");
        const std::string g = formula_at(v3, "Wz", {5, 0, 1, 2});
        MESSAGE(g);
        CHECK(g.find("kw = dc1hw % KW = 5 % 2 = 1; kh = dc1hw/KW % KH = 5/2 % 2 = 0; c1 = "
                     "dc1hw/KW/KH % C1 = 5/2/2 % 1 = 0; kd = dc1hw/KW/KH/C1 = 5/2/2/1 = 1") !=
              std::string::npos);
    }
    SUBCASE("every formula of every view is non-empty and names its cell") {
        for (const char* view : kViews) {
            const app::ViewModel v = build(view, "mb2ic3ih5oc4kh3sh2ph1");
            for (std::size_t i = 0; i < v.panels.size(); ++i)
                for (dim_t c = 0; c < v.panels[i].numel(); c += 7) {
                    const std::string f = v.formula(v, static_cast<int>(i), c);
                    INFO(view << " " << f);
                    CHECK(f.find(v.panels[i].name + "(") == 0);
                }
        }
    }
}

// The hovers of the views over im2col, col2im, strided, the padding and winograd_tiles are their
// maps' expressions: a cell's hover holds the map's explain lines at that cell (bindings and
// guards with the numbers filled in, "; " apart), then its partner. A hand-written formula that
// drifts from the map fails here.
TEST_CASE("app model: hovers of the map views are their maps' explain lines") {
    struct Case {
        const char* view;
        const char* desc;
        const char* panel;  // the panel whose cells the map's domain is
        IndexMap map;
    };
    const Problem ps = parse_descriptor("mb1ic2ih5oc2kh3sh2ph1");
    const Problem pw = parse_descriptor("mb1ic2ih6oc2kh3ph1");
    const Case cases[] = {
        {"im2col", "mb1ic2ih5oc2kh3sh2ph1", "B", maps::im2col(ps)},
        {"col2im", "mb1ic2ih5oc2kh3sh2ph1", "B*", maps::col2im(ps)},
        {"stride", "mb1ic2ih5oc2kh3sh2ph1", "Z", maps::strided(ps)},
        {"stride", "mb1ic2ih5oc2kh3sh2ph1", "P", maps::pad_for_backward_data(ps)},
        {"stride", "mb1ic2ih5oc2kh3sh2ph1", "W'", maps::flip_rot(ps)},
        {"winograd", "mb1ic2ih6oc2kh3ph1", "D", maps::winograd_tiles(pw)},
        {"weight_grad", "mb1ic2ih5oc2kh3sh2ph1", "B", maps::im2col(ps)},
    };
    for (const Case& cs : cases) {
        const app::ViewModel v = build(cs.view, cs.desc);
        int panel = -1;
        for (std::size_t i = 0; i < v.panels.size(); ++i)
            if (v.panels[i].name == cs.panel) panel = static_cast<int>(i);
        REQUIRE(panel >= 0);
        REQUIRE(cs.map.expr() != nullptr);
        const dim_t n = v.panels[static_cast<std::size_t>(panel)].numel();
        REQUIRE(n ==
                (cs.map.kind() == IndexMap::Kind::Gather ? cs.map.dst() : cs.map.src()).numel());
        int padded = 0;
        for (dim_t c = 0; c < n; c += 5) {
            std::vector<std::string> lines = cs.map.explain_lines(c);
            REQUIRE(lines.size() >= 2);
            lines.pop_back();  // the pair, named by the hover with the panels' names
            std::string arith;
            for (const auto& l : lines) arith += (arith.empty() ? "" : "; ") + l;
            padded += arith.find("fails") != std::string::npos;
            const std::string f = v.formula(v, panel, c);
            INFO(cs.view << " " << cs.panel << " cell " << c << ": " << f);
            CHECK(f.find(": " + arith +
                         (cs.map.kind() == IndexMap::Kind::Gather ? " <- " : " -> ")) !=
                  std::string::npos);
        }
        // The padding cases are among the cells checked (a guard that fails), except for maps
        // without guards.
        if (cs.map.expr()->guards().empty())
            CHECK(padded == 0);
        else
            CHECK(padded > 0);
    }
}

// A view too large to show is refused from the problem's sizes before anything is allocated
// (mb1ic64ih400oc64kh3ph1 would otherwise allocate and fill ~486 MB), with one message that
// names the sizes and the limit; the shot adds "view im2col: " once.
TEST_CASE("app model: a view too large to show is refused from its sizes, before allocating") {
    app::ViewRequest r;
    r.view = "im2col";
    r.problem = parse_descriptor("mb1ic64ih400oc64kh3ph1");
    std::string msg;
    try {
        app::build_view(r);
    } catch (const Error& e) {
        msg = e.what();
    }
    CHECK(msg ==
          "too large to show: 102,400,000 cells (X 10,240,000 + B 92,160,000), more than the "
          "25,165,824 the app draws; choose a smaller problem");
    CHECK(msg.find("view ") == std::string::npos);  // the caller names the view
    // Every view of a problem the engine accepts (X 822 M elements, B 7.3 G) and the views of
    // the first one that are too large; the descriptor parser itself refuses tensors past 2^34
    // elements (mb64ic2048ih1000oc2048kh3).
    CHECK_THROWS_AS(parse_descriptor("mb64ic2048ih1000oc2048kh3"), Error);
    struct Case {
        const char* desc;
        const char* view;
    };
    std::vector<Case> cases;
    for (const char* view : kViews)
        if (std::string(view) != "fliprot")  // (only W and W': 590 K cells)
            cases.push_back({"mb64ic256ih224oc256kh3", view});
    for (const char* view : {"im2col", "col2im", "stride", "tnc", "weight_grad"})
        cases.push_back({"mb1ic64ih400oc64kh3ph1", view});
    r.c0 = 16;
    for (const Case& cs : cases) {
        r.view = cs.view;
        r.problem = parse_descriptor(cs.desc);
        const std::string what = std::string(cs.view) + " " + cs.desc;
        INFO(what);
        g_largest_new = 0;
        g_track_new = true;
        const auto t0 = std::chrono::steady_clock::now();
        CHECK_THROWS_WITH_AS(app::build_view(r), doctest::Contains("too large to show: "), Error);
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        g_track_new = false;
        CHECK(sec < 1.0);
#if CONVLAB_TRACK_NEW
        CHECK(g_largest_new.load() < (std::size_t{1} << 20));
#endif
    }
}

TEST_CASE("app model: a driver shorter than the view stays finished, not blank, to the end") {
    // The fractal view packs X and W: two maps of different lengths under one step index.
    for (Granularity g : kGranularities) {
        const app::ViewModel v = build("fractal", "mb1ic3ih3oc5kh2", app::DataKind::Integer, 4);
        const dim_t n = app::num_steps(v, g);
        int shorter = 0;
        for (const auto& drv : v.drivers) {
            if (drv.link < 0) continue;
            const app::Link& l = v.links[static_cast<std::size_t>(drv.link)];
            if (l.num_steps(g) >= n) continue;
            ++shorter;
            const app::StepState st = app::compute_step(v, g, n - 1);
            const auto& pd = st.panels[static_cast<std::size_t>(l.dst)];
            const auto pending = std::count_if(pd.flags.begin(), pd.flags.end(),
                                               [](auto f) { return (f & app::kPending) != 0; });
            INFO(granularity_name(g) << " " << l.name);
            CHECK(pending == 0);
            CHECK(st.current[static_cast<std::size_t>(l.dst)].empty());
        }
        if (g != Granularity::Whole) CHECK(shorter == 1);
    }
}

TEST_CASE("app model: values show three significant figures, integers whole") {
    using app::DataKind;
    CHECK(app::format_value(0.0181499f, DataKind::Real) == "0.0181");
    CHECK(app::format_value(-0.5f, DataKind::Real) == "-0.5");
    CHECK(app::format_value(12.345f, DataKind::Real) == "12.3");
    CHECK(app::format_value(1234.4f, DataKind::Real) == "1234");
    CHECK(app::format_value(7.0f, DataKind::Integer) == "7");
    CHECK(app::format_value(-0.0f, DataKind::Real) == "0");
    CHECK(app::format_value(NAN, DataKind::Real).empty());
}

TEST_CASE("app model: a value fitted to its cell is written shorter, never cut") {
    using app::DataKind;
    const auto chars = [](const std::string& t) { return static_cast<float>(t.size()); };
    const auto fit = [&](float v, float room, DataKind d = DataKind::Real) {
        return app::format_value_fit(v, d, room, chars);
    };
    // Room enough: the full text.
    CHECK(fit(-0.952574f, 6) == "-0.953");
    // Less room: fewer digits, the sign kept (a cut "-0.953" read "0.953" on a projector).
    CHECK(fit(-0.952574f, 5) == "-0.95");
    CHECK(fit(-0.952574f, 2) == "-1");
    CHECK(fit(0.0474259f, 4) == "0.05");
    // Small and large values: the scientific form with a short exponent.
    CHECK(fit(-0.0000361f, 7) == "-3.6e-5");
    CHECK(fit(-0.0000361f, 5) == "-4e-5");
    CHECK(fit(123456.0f, 5) == "1.2e5");
    CHECK(fit(123456.0f, 6, DataKind::Integer) == "123456");
    CHECK(fit(-123456.0f, 4, DataKind::Integer) == "-1e5");
    CHECK(fit(150.4f, 3) == "150");
    CHECK(fit(150.4f, 2).empty());
    // Nothing fits: no text at all (the hover gives the value), never a part of it.
    CHECK(fit(-0.952574f, 1).empty());
    CHECK(fit(0.0f, 0.5f).empty());
    // Every text returned reads as the value rounded: parsed back, it is within its own last
    // digit's rounding, and a negative value keeps its sign.
    for (float v : {-0.952574f, 0.0474259f, -3.6e-5f, 123456.0f, -98.76f, 7.5f, -0.051f})
        for (float room = 1; room <= 8; room += 1) {
            const std::string t = fit(v, room);
            INFO(v << " in " << room << ": '" << t << "'");
            CHECK(t.size() <= static_cast<std::size_t>(room));
            if (t.empty()) continue;
            const double back = std::stod(t);
            CHECK((back < 0) == (v < 0));
            CHECK(std::fabs(back - v) <= std::fabs(v) * 0.5 + 1e-12);
        }
}

TEST_CASE("app model: each tensor has its own colour scale") {
    app::Panel grad, act, zero;
    grad.values = {0.0f, -0.036f, 0.0f, 0.012f, NAN};
    act.values = {2.0f, -1.0f};
    zero.values = {0.0f, 0.0f};
    // The gradient's largest |value| is its deepest tint, whatever the activations hold.
    CHECK(app::colour_scale(grad) == doctest::Approx(0.036f));
    CHECK(app::colour_scale(act) == 2.0f);
    CHECK(app::colour_scale(zero) == 1.0f);
}

TEST_CASE("app model: a panel title's short form stops at its first clause") {
    CHECK(app::short_title("Strided(dY): s-1 zeros between taps") == "Strided(dY)");
    CHECK(app::short_title("dX = conv(P, W'), stride 1") == "dX = conv(P, W')");
    CHECK(app::short_title("input (padding drawn as padding)") == "input");
    CHECK(app::short_title("output gradient") == "output gradient");
    CHECK(app::short_title("column matrix B = im2col(X)") == "column matrix B = im2col(X)");
}

TEST_CASE("app model: playback") {
    app::Playback pb;
    CHECK(pb.paused);
    CHECK_FALSE(pb.advance(10.0, 5));  // paused: nothing moves
    pb.paused = false;
    pb.speed = 2.0;
    CHECK_FALSE(pb.advance(0.25, 5));  // half a step
    CHECK(pb.advance(0.25, 5));
    CHECK(pb.step == 1);
    CHECK(pb.advance(1.0, 5));  // two steps
    CHECK(pb.step == 3);
    CHECK(pb.advance(1.0, 5));  // 4, then loops to 0
    CHECK(pb.step == 0);
    pb.loop = false;
    pb.step = 3;
    pb.time_left = 0;
    CHECK(pb.advance(5.0, 5));
    CHECK(pb.step == 4);
    CHECK(pb.paused);  // stops at the end without loop
    pb.step_forward(5);
    CHECK(pb.step == 4);
    pb.step_back(5);
    CHECK(pb.step == 3);
    pb.step = 0;
    pb.step_back(5);
    CHECK(pb.step == 0);
    pb.loop = true;
    pb.step_back(5);
    CHECK(pb.step == 4);
    pb.step_forward(5);
    CHECK(pb.step == 0);
    pb.scrub(99, 5);
    CHECK(pb.step == 4);
    pb.scrub(-3, 5);
    CHECK(pb.step == 0);
    pb.scrub(3, 0);
    CHECK(pb.step == 0);
}

TEST_CASE("app model: bad requests give the engine's message, never a crash") {
    app::ViewRequest r;
    r.problem = parse_descriptor("mb1ic2ih3oc2kh2");
    r.problem.stride[0] = 0;
    const std::string msg = r.problem.validate();
    REQUIRE(!msg.empty());
    CHECK_THROWS_WITH_AS(app::build_view(r), msg.c_str(), Error);
    r.problem = parse_descriptor("mb1ic2ih3oc2kh2");
    r.problem.groups = 3;  // does not divide C
    CHECK_THROWS_WITH_AS(app::build_view(r), r.problem.validate().c_str(), Error);
    r.problem = parse_descriptor("mb1ic2ih3oc2kh2");
    r.view = "nope";
    CHECK_THROWS_AS(app::build_view(r), Error);
    try {
        app::build_view(r);
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("weight_grad") != std::string::npos);
    }
    r.view = "fractal";
    r.c0 = 0;
    CHECK_THROWS_AS(app::build_view(r), Error);
    r.view = "im2col";
    r.c0 = 16;
    r.problem = parse_descriptor("mb64ic256ih56oc64kh3ph1");  // a column matrix of 2.3e8 cells
    CHECK_THROWS_AS(app::build_view(r), Error);
    CHECK(!app::is_placeholder_view("tensors"));  // tests/test_lesson_player.cpp
    for (const char* ph : {"timings"}) {
        r.view = ph;
        r.problem = parse_descriptor("mb1ic2ih3oc2kh2");
        const app::ViewModel v = app::build_view(r);
        CHECK(app::is_placeholder_view(ph));
        CHECK(v.panels.empty());
        CHECK(v.caption.find("not built yet") != std::string::npos);
        CHECK(app::num_steps(v, Granularity::Line) == 0);
    }
}

// A link's tables hold the map's own walk: element step e visits domain element element_at(e),
// step_at inverts it, image is the map, and sources_of / destinations_of agree with the map's. The
// tnc view over one image (its batch padded to C0 lanes) stores no order tables, the walk being
// row-major, and the views whose walks are not keep them; both read back as the walk.
TEST_CASE("app model: link tables give the map's walk, image and inverse for every cell") {
    bool stored = false;
    for (const auto& [view, desc, c0] : {std::tuple{"tnc", "mb1ic20ih6oc18kh3", dim_t{16}},
                                         {"tnc", "mb3ic5ih4oc6kh2", dim_t{4}},
                                         {"im2col", "mb2ic3ih5oc2kh3sh2ph1", dim_t{4}},
                                         {"col2im", "mb1ic2ih5oc3kh3ph1", dim_t{4}},
                                         {"fractal", "mb1ic5ih4oc6kh3ph1", dim_t{4}},
                                         {"weight_grad", "mb2ic3ih4oc2kh2", dim_t{4}}}) {
        INFO(view << " " << desc);
        const app::ViewModel v = build(view, desc, app::DataKind::Integer, c0);
        for (const app::Link& l : v.links) {
            INFO(l.name);
            const IndexMap& m = *l.map;
            REQUIRE(l.elements == m.domain().numel());
            if (std::string(view) == "tnc") CHECK(l.order.empty());
            stored = stored || !l.order.empty();
            dim_t e = 0;
            bool walk_ok = true, image_ok = true;
            m.for_each_in_step(Granularity::Whole, 0, [&](dim_t s, dim_t d) {
                const dim_t dom = l.is_gather() ? d : s, img = l.is_gather() ? s : d;
                walk_ok = walk_ok && l.element_at(e) == dom && l.step_at(dom) == e;
                image_ok = image_ok && l.image[static_cast<std::size_t>(dom)] == img;
                ++e;
            });
            CHECK(e == l.elements);
            CHECK(walk_ok);
            CHECK(image_ok);
            for (dim_t i = 0; i < m.dst().numel(); ++i)
                REQUIRE(sorted(l.sources_of(i)) == sorted(m.sources_of(i)));
            for (dim_t i = 0; i < m.src().numel(); ++i)
                REQUIRE(sorted(l.destinations_of(i)) == sorted(m.destinations_of(i)));
        }
    }
    CHECK(stored);  // some walk is not row-major, so the stored tables are read back too
}

TEST_CASE("app model: the winograd view animates winograd_tiles and shows winograd's Y") {
    const char* desc = "mb2ic3ih9iw7oc2kh3kw3ph1pw1";
    const Problem p = parse_descriptor(desc);
    const app::ViewModel v = build("winograd", desc);
    REQUIRE(v.panels.size() == 4);
    CHECK(v.panels[0].name == "X");
    CHECK(v.panels[1].name == "D");
    CHECK(v.panels[2].name == "W");
    CHECK(v.panels[3].name == "Y");
    // D is the map applied to X, and its link is the map's.
    const IndexMap m = maps::winograd_tiles(p);
    std::vector<float> d(static_cast<std::size_t>(m.dst().numel()));
    m.execute(v.panels[0].values.data(), d.data());
    CHECK(d == v.panels[1].values);
    REQUIRE(v.links.size() == 1);
    for (dim_t i = 0; i < m.dst().numel(); ++i)
        CHECK(v.links[0].image[static_cast<std::size_t>(i)] == m.map(i));
    // Y is the engine's winograd forward of the shown X and W, which the check holds to direct.
    const auto tensor = [](const std::vector<float>& vals, std::vector<dim_t> dims) {
        Tensor t(std::move(dims));
        std::copy(vals.begin(), vals.end(), t.f32());
        return t;
    };
    const Tensor want = forward(p, tensor(v.panels[0].values, p.src_dims()),
                                tensor(v.panels[2].values, p.wei_dims()), nullptr, "direct");
    double big = 0, diff = 0;
    for (dim_t i = 0; i < want.numel(); ++i) {
        big = std::max(big, std::abs(double(want.f32()[i])));
        diff = std::max(diff, std::abs(double(want.f32()[i]) -
                                       v.panels[3].values[static_cast<std::size_t>(i)]));
    }
    CHECK(diff <= 1e-5 * big);
    CHECK(v.check.find(": yes") != std::string::npos);
    // Other problems: an error naming the rule (the sidebar shows it).
    CHECK_THROWS_WITH_AS(build("winograd", "mb1ic1ih8oc1kh3sh2ph1"),
                         doctest::Contains("needs 2-D, kernel 3x3, stride 1"), Error);
}

namespace {

// Two step states agree cell for cell (NaN equal to NaN), current cells and padding cells alike.
void check_same_state(const app::StepState& a, const app::StepState& b) {
    REQUIRE(a.panels.size() == b.panels.size());
    CHECK(a.step == b.step);
    CHECK(a.current == b.current);
    for (std::size_t i = 0; i < a.panels.size(); ++i) {
        const app::PanelState &pa = a.panels[i], &pb = b.panels[i];
        CAPTURE(i);
        CHECK(pa.flags == pb.flags);
        CHECK(pa.count == pb.count);
        CHECK(pa.current_pads.size() == pb.current_pads.size());
        REQUIRE(pa.shown.size() == pb.shown.size());
        std::size_t differ = 0;
        for (std::size_t c = 0; c < pa.shown.size(); ++c)
            differ +=
                (std::isnan(pa.shown[c]) && std::isnan(pb.shown[c])) || pa.shown[c] == pb.shown[c]
                    ? 0
                    : 1;
        CHECK(differ == 0);
    }
}

}  // namespace

TEST_CASE("app model: a step advanced in place equals the step computed afresh") {
    // Forward, back, a jump ahead, a jump back and past the end: each the same state as
    // compute_step, and every cell that differs from the previous state listed as changed.
    for (const char* desc : kProblems)
        for (const char* view : kViews) {
            const app::ViewModel v = build(view, desc);
            for (Granularity g : kGranularities) {
                const dim_t n = app::num_steps(v, g);
                app::StepState st = app::compute_step(v, g, 0);
                std::vector<std::vector<dim_t>> changed;
                for (const dim_t k :
                     {dim_t{1}, dim_t{2}, dim_t{1}, n / 2, dim_t{0}, n - 1, n, n - 2, dim_t{3}}) {
                    if (k < 0) continue;
                    INFO(desc << " view " << view << " granularity " << granularity_name(g)
                              << " step " << st.step << " -> " << k);
                    const app::StepState before = st;
                    CHECK(app::advance_step(v, st, g, k, changed));
                    const app::StepState fresh = app::compute_step(v, g, k);
                    check_same_state(st, fresh);
                    for (std::size_t i = 0; i < v.panels.size(); ++i)
                        for (std::size_t c = 0; c < fresh.panels[i].flags.size(); ++c) {
                            const float x = before.panels[i].shown[c], y = fresh.panels[i].shown[c];
                            const bool same =
                                before.panels[i].flags[c] == fresh.panels[i].flags[c] &&
                                ((std::isnan(x) && std::isnan(y)) || x == y);
                            if (same) continue;
                            CAPTURE(i);
                            CAPTURE(c);
                            CHECK(std::find(changed[i].begin(), changed[i].end(),
                                            static_cast<dim_t>(c)) != changed[i].end());
                        }
                }
                // Another granularity, or another view: computed afresh.
                const Granularity other =
                    g == Granularity::Line ? Granularity::Element : Granularity::Line;
                CHECK_FALSE(app::advance_step(v, st, other, 0, changed));
                check_same_state(st, app::compute_step(v, other, 0));
            }
        }
}

TEST_CASE("app model: a ResNet-50 layer's tnc view steps without touching its millions of cells") {
    // res2a_branch2a at 1 image, C0 16: the view holds about 7 million cells. A step of playback
    // changes the cells of two lines, not the view: what keeps a frame within a projector's
    // 33 ms (the texture redraws only the changed cells).
    app::ViewRequest r;
    r.view = "tnc";
    r.problem = parse_descriptor("mb1ic64ih56oc64oh56kh1ph0");
    r.c0 = 16;
    const app::ViewModel v = app::build_view(r);
    std::size_t cells = 0;
    for (const app::Panel& p : v.panels) cells += static_cast<std::size_t>(p.numel());
    REQUIRE(cells > 6'000'000);
    app::StepState st = app::compute_step(v, Granularity::Line, 0);
    std::vector<std::vector<dim_t>> changed;
    for (dim_t k = 1; k <= 5; ++k) {
        CAPTURE(k);
        REQUIRE(app::advance_step(v, st, Granularity::Line, k, changed));
        std::size_t touched = 0, current = 0;
        for (std::size_t i = 0; i < v.panels.size(); ++i) {
            touched += changed[i].size();
            current += st.current[i].size();
        }
        CHECK(touched > 0);
        // The old and the new step's cells (current, and the cells they wrote), nothing more.
        CHECK(touched <= 4 * current);
        CHECK(touched < cells / 1000);
    }
    // The state stepped in place is the state computed afresh.
    const app::StepState fresh = app::compute_step(v, Granularity::Line, 5);
    for (std::size_t i = 0; i < v.panels.size(); ++i) {
        CAPTURE(i);
        CHECK(st.panels[i].flags == fresh.panels[i].flags);
    }
}

TEST_CASE("app model: ResNet-50's stem in DaVinci layouts stays within a texture's size") {
    // conv1's 224 x 224 positions as one column of rows made X5 50176 cells tall: no texture
    // holds it (16384 texels at most under Mesa), so the fractal and tnc views drew nothing and
    // did not fit. Past 64 x 64 positions the w columns go across.
    app::ViewModel v = build("fractal", "mb1ic3ih224oc64oh112kh7sh2ph3", app::DataKind::Real, 16);
    for (app::Panel& p : v.panels) {
        CAPTURE(p.name);
        app::layout_panel(p);
        CHECK(p.width <= 16384);
        CHECK(p.height <= 16384);
    }
    // Small activations keep one row per position (the lessons' pictures).
    const app::ViewModel small = build("fractal", "mb1ic3ih8oc4kh3", app::DataKind::Integer, 4);
    CHECK(small.panels[1].rows == 64);
}
