// The standard charts of a benchmark run, built as data (see chart.hpp). Index:
//   [SECTION] helpers
//   [SECTION] common parts: x axis of layers, footer, legend
//   [SECTION] (a) relative time of backward data vs forward
//   [SECTION] (b) per-operation share
//   [SECTION] (c) GFLOP/s
//   [SECTION] hit test
#include "charts/chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

namespace convlab::charts {

using bench::Measurement;
using bench::Results;

// [SECTION] helpers

namespace {

std::string fmt(const char* f, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return buf;
}

// Milliseconds with 3 significant digits at least.
std::string ms(double x) {
    if (x >= 100) return fmt("%.1f ms", x);
    if (x >= 1) return fmt("%.3f ms", x);
    return fmt("%.4f ms", x);
}

std::string tick_label(double v, double step) {
    if (std::fabs(v) < step * 1e-9) v = 0;
    char buf[48];
    // Fixed notation only where it stays short: a tiny step or a huge value would print dozens
    // of digits, so those are labelled in %g.
    if (step < 1e-6 || step >= 1e15 || std::fabs(v) >= 1e15) {
        std::snprintf(buf, sizeof buf, "%.6g", v);
        return buf;
    }
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// Engine algorithms of a pass, in the order they were measured (the peer left out).
std::vector<std::string> engine_algos(const Results& r, Pass pass) {
    std::vector<std::string> out;
    for (const Measurement& m : r.rows)
        if (m.pass == pass && !m.peer &&
            std::find(out.begin(), out.end(), m.algorithm) == out.end())
            out.push_back(m.algorithm);
    return out;
}

std::string peer_name(const Results& r) {
    for (const Measurement& m : r.rows)
        if (m.peer) return m.algorithm;
    return "";
}

std::string check_line(const Measurement& m) {
    if (!m.ran) return "ERROR: " + m.error;
    std::string s = "check " + m.check.status();
    if (m.check.reference != "self") {
        s += " vs " + m.check.reference + fmt(", max abs err %.2g", m.check.max_abs) +
             fmt(", max rel err %.2g", m.check.max_rel);
    } else {
        s += " (it is the reference)";
    }
    if (!m.check.note.empty()) s += "\n" + m.check.note;
    return s;
}

std::string timing_line(const Measurement& m) {
    return "median " + ms(m.total.median_ms) + " (min " + ms(m.total.min_ms) + ", max " +
           ms(m.total.max_ms) + ", quartiles " + ms(m.total.q1_ms) + " .. " + ms(m.total.q3_ms) +
           ", " + std::to_string(m.total.runs) + " runs" +
           (m.total.calls > 1 ? " of " + std::to_string(m.total.calls) + " calls each" : "") + ")" +
           (m.foreign_cpu > 0.05
                ? fmt("\nother processes used %.0f%% of the CPUs meanwhile", 100 * m.foreign_cpu)
                : "") +
           (m.speed >= 0 ? fmt("\nthe machine at %.0f%% of its peak around it", 100 * m.speed) +
                               (m.speed < bench::kSlowMachine ? " (slow: noisy)" : "")
                         : "") +
           (m.retimed > 0
                ? ", timed " + std::to_string(m.retimed + 1) + " times, the fastest machine's kept"
                : "");
}

// Where the clock was coarse and runs were batches of calls (Stats::calls): the clock's tick and
// the batch sizes, so that a reader knows how a time shorter than a tick was measured; "" else.
std::string batch_summary(const Results& r) {
    int lo = 0, hi = 0;
    for (const Measurement& m : r.rows)
        if (m.total.calls > 1) {
            lo = lo == 0 ? m.total.calls : std::min(lo, m.total.calls);
            hi = std::max(hi, m.total.calls);
        }
    if (hi == 0) return "";
    const std::string tick = r.machine.clock_tick > 0
                                 ? fmt("ticks every %.3g us", r.machine.clock_tick * 1e6)
                                 : std::string("is coarse");
    return "the timing clock " + tick + ", so each timed run was a batch of " +
           (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
           " calls in a row, its time divided by the count (calls_per_run in the results).";
}

// Slot s of n in category i: a bar of 80% of the category width, split evenly.
std::pair<double, double> slot(std::size_t i, std::size_t s, std::size_t n) {
    const double w = 0.8 / static_cast<double>(std::max<std::size_t>(n, 1));
    const double x0 = static_cast<double>(i) + 0.1 + w * static_cast<double>(s);
    return {x0 + 0.06 * w, x0 + 0.94 * w};
}

Mark failed_mark(std::size_t i, std::size_t s, std::size_t n, double ymin, std::string hover) {
    Mark k;
    k.kind = MarkKind::Failed;
    std::tie(k.x0, k.x1) = slot(i, s, n);
    k.y0 = k.y1 = ymin;
    k.hover = std::move(hover) + "\nnot plotted: no verified time";
    return k;
}

// [SECTION] common parts: x axis of layers, footer, legend

void layer_axis(Chart& c, const Results& r) {
    std::string topo;
    for (const bench::LayerInfo& l : r.layers) {
        c.x.categories.push_back(short_layer_name(l.name));
        const auto colon = l.name.find(':');
        if (colon != std::string::npos) topo = l.name.substr(0, colon);
    }
    c.x.min = 0;
    c.x.max = static_cast<double>(r.layers.size());
    const std::string batch = r.batch > 0 ? "batch " + std::to_string(r.batch) : "batch from file";
    c.x.title = "layer" + (topo.empty() ? "" : " of " + topo) + " (" + batch + ")";
}

void finish(Chart& c, const Results& r) {
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) (m.kind == MarkKind::Failed ? c.failed : c.plotted) += 1;
    // Values drawn (a stacked bar once) and how many of them were measured under load.
    std::size_t values = 0;
    std::vector<double> stacks, noisy_stacks;
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) {
            if (m.kind == MarkKind::Failed) continue;
            if (s.style != SeriesStyle::StackedBars) {
                ++values;
                c.noisy += m.noisy ? 1 : 0;
                continue;
            }
            if (std::find(stacks.begin(), stacks.end(), m.x0) == stacks.end())
                stacks.push_back(m.x0);
            if (m.noisy &&
                std::find(noisy_stacks.begin(), noisy_stacks.end(), m.x0) == noisy_stacks.end())
                noisy_stacks.push_back(m.x0);
        }
    values += stacks.size();
    c.noisy += noisy_stacks.size();
    c.verified = r.failed() == 0 && !r.rows.empty() && !r.cancelled;
    c.verification = r.verification_summary() + "; " + std::to_string(c.noisy) + " of " +
                     std::to_string(values) + " plotted values noisy" + (c.noisy > 0 ? " (~)" : "");
    c.footer.push_back(std::string(c.verified ? "Verified: " : "NOT ALL VERIFIED: ") +
                       c.verification);
    c.footer.push_back("Machine: " + r.machine.summary());
    c.footer.push_back("Noise: " + r.machine.noise() + ". Times: median of " +
                       (r.timing.reps > 0 ? std::to_string(r.timing.reps) + " runs"
                                          : fmt("runs filling >= %.2g s", r.timing.min_seconds)) +
                       " after " + std::to_string(r.timing.warmup) + " warm-up runs.");
    if (const std::string s = r.speed_summary(); !s.empty())
        c.footer.push_back("Speed: " + s + ".");
    if (const std::string s = batch_summary(r); !s.empty()) c.footer.push_back("Clock: " + s);
    if (c.noisy > 0)
        c.footer.push_back("~ (hatched) measured while other processes used > " +
                           fmt("%.0f", 100 * bench::kNoisyForeignCpu) +
                           "% of the CPU, or while the machine itself ran below " +
                           fmt("%.0f", 100 * bench::kSlowMachine) +
                           "% of its peak (probed around the timed window): its time is suspect");
    for (const std::string& n : r.notes) c.footer.push_back("Note: " + n);
    c.footer.push_back("Reproduce: " + (r.command.empty() ? "(command not recorded)" : r.command));
    if (c.failed > 0) {
        LegendEntry e;
        e.label = "FAIL: not verified, not plotted";
        e.color = {200, 30, 30, 255};
        e.failed = true;
        c.legend.push_back(e);
    }
}

void y_axis(Chart& c, double lo, double hi, const std::string& title) {
    if (!(hi > lo)) hi = lo + 1;
    c.y.ticks = nice_ticks(lo, hi);
    c.y.min = lo;
    c.y.max = hi;
    c.y.title = title;
}

}  // namespace

double Axis::frac(double v) const {
    double a = min, b = max;
    if (log) {
        if (!(a > 0) || !(b > a)) return 0;
        v = std::log10(std::max(v, a));
        a = std::log10(a);
        b = std::log10(b);
    }
    if (!(b > a)) return 0;
    const double f = (v - a) / (b - a);
    return std::isnan(f) ? 0 : std::clamp(f, 0.0, 1.0);  // NaN would poison every coordinate
}

std::vector<Tick> log_ticks(double& lo, double& hi) {
    // The axis spans at most [kLogMin, kLogMax]: 600 decades, so the decade loop below is
    // bounded whatever the data (zero, negative, NaN or infinite values included).
    if (!(lo > 0)) lo = 1e-3;
    lo = std::clamp(lo, kLogMin, kLogMax / 10);
    if (std::isnan(hi) || !(hi > lo)) hi = lo * 10;
    hi = std::min(hi, kLogMax);
    const double steps[] = {1, 2, 5};
    auto down = [&](double v) {  // largest 1-2-5 value <= v
        const double mag = std::pow(10.0, std::floor(std::log10(v) + 1e-12));
        double best = mag;
        for (double f : steps)
            if (f * mag <= v * (1 + 1e-9)) best = f * mag;
        return best;
    };
    auto up = [&](double v) {  // smallest 1-2-5 value >= v
        const double mag = std::pow(10.0, std::floor(std::log10(v) - 1e-12));
        for (double f : {1.0, 2.0, 5.0, 10.0})
            if (f * mag >= v * (1 - 1e-9)) return f * mag;
        return 10 * mag;
    };
    lo = down(lo);
    hi = std::min(up(hi), kLogMax);
    // 1, 2, 5 in each decade; over more than four decades only the powers of ten (else the
    // labels crowd), and over more than kMaxTicks decades every k-th power so that at most about
    // kMaxTicks ticks are made.
    const int e0 = static_cast<int>(std::floor(std::log10(lo) + 1e-12));
    const int e1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-12));
    const bool sparse = std::log10(hi / lo) > 4.01;
    const int stride = std::max(1, (e1 - e0 + kMaxTicks - 1) / kMaxTicks);
    std::vector<Tick> ticks;
    for (int e = e0; e <= e1; e += stride) {
        const double mag = std::pow(10.0, e);
        for (double f : steps) {
            if (sparse && f != 1) continue;
            const double v = f * mag;
            if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9)) continue;
            char buf[32];
            std::snprintf(buf, sizeof buf, "%g", v);
            ticks.push_back({v, buf});
        }
    }
    return ticks;
}

std::string short_layer_name(const std::string& name) {
    const auto colon = name.find(':');
    return colon == std::string::npos ? name : name.substr(colon + 1);
}

std::vector<Tick> nice_ticks(double& lo, double& hi, int count) {
    // Finite bounds within +-kLinearMax, a non-empty range and at most kMaxTicks + 1 ticks,
    // whatever the data: NaN, infinite or equal bounds would otherwise give a zero or NaN step
    // and a loop that never ends.
    if (!std::isfinite(lo)) lo = 0;
    lo = std::clamp(lo, -kLinearMax, kLinearMax);
    if (std::isnan(hi)) hi = lo;
    hi = std::clamp(hi, -kLinearMax, kLinearMax);
    if (!(hi > lo)) hi = lo + std::max(1.0, std::fabs(lo) * 1e-6);
    count = std::clamp(count, 1, kMaxTicks);
    const double raw = (hi - lo) / count;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double f : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        step = f * mag;
        if (step >= raw) break;
    }
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
    const double n = std::min(std::round((hi - lo) / step), static_cast<double>(kMaxTicks));
    std::vector<Tick> ticks;
    for (int i = 0; i <= static_cast<int>(n); ++i) {
        const double v = lo + step * i;
        ticks.push_back({v, tick_label(v, step)});
    }
    return ticks;
}

Color algorithm_color(const std::string& name) {
    static const std::map<std::string, Color> fixed{{"im2col_gemm", {31, 119, 180, 255}},
                                                    {"col2im", {214, 39, 40, 255}},
                                                    {"via_forward", {44, 160, 44, 255}},
                                                    {"fractal", {148, 103, 189, 255}},
                                                    {"fractal_via_forward", {255, 127, 14, 255}},
                                                    {"implicit_gemm", {23, 190, 207, 255}},
                                                    {"auto", {188, 189, 34, 255}},
                                                    {"winograd", {204, 0, 204, 255}},
                                                    {"direct", {127, 127, 127, 255}},
                                                    {"oneDNN", {40, 40, 40, 255}},
                                                    {"oneDNN-nchw", {40, 40, 40, 255}}};
    if (const auto it = fixed.find(name); it != fixed.end()) return it->second;
    static const Color extra[] = {
        {140, 86, 75, 255}, {227, 119, 194, 255}, {98, 70, 160, 255}, {0, 100, 80, 255}};
    std::size_t h = 0;
    for (char ch : name) h = h * 31 + static_cast<unsigned char>(ch);
    return extra[h % std::size(extra)];
}

const std::vector<std::string>& known_operations() {
    static const std::vector<std::string> ops{
        "gemm",     "fractal_gemm",  "im2col",   "col2im",  "scatter",     "zero",   "zero-insert",
        "pad",      "fliprot",       "tnc",      "tncf",    "tncf_dw",     "pack",   "pack_src",
        "pack_dst", "pack_wei",      "unpack",   "bias",    "transpose_b", "direct", "other",
        "wino_src", "wino_diff_dst", "wino_dst", "wino_wei"};
    return ops;
}

Color operation_color(const std::string& name) {
    // One colour per profiler span of the engine, every two at least 34 apart in CIELAB (Delta
    // E 1976; chosen by farthest-point search over sRGB colours of moderate lightness and
    // chroma), so that no two operations of a stacked bar can be mistaken for each other;
    // "direct" a mid grey, "other" (time outside every span) a pale grey.
    static const std::map<std::string, Color> fixed{
        {"gemm", {0, 68, 187, 255}},
        {"fractal_gemm", {119, 51, 102, 255}},
        {"im2col", {255, 153, 68, 255}},
        {"col2im", {187, 0, 34, 255}},
        {"scatter", {85, 170, 34, 255}},
        {"zero", {153, 187, 119, 255}},
        {"zero-insert", {0, 238, 153, 255}},
        {"pad", {187, 187, 17, 255}},
        {"fliprot", {0, 85, 0, 255}},
        {"tnc", {187, 153, 255, 255}},
        {"tncf", {0, 221, 221, 255}},
        {"tncf_dw", {0, 85, 68, 255}},
        {"pack", {153, 68, 68, 255}},
        {"pack_src", {255, 153, 170, 255}},
        {"pack_dst", {204, 17, 102, 255}},
        {"pack_wei", {102, 68, 0, 255}},
        {"unpack", {34, 85, 136, 255}},
        {"bias", {255, 102, 204, 255}},
        {"transpose_b", {0, 170, 255, 255}},
        {"direct", {132, 132, 130, 255}},
        {"other", {232, 232, 232, 255}},
        // winograd's transforms: inputs, output gradients, outputs, filters (farthest-point
        // picks against the colours above, at least 114 apart in RGB)
        {"wino_src", {136, 0, 255, 255}},
        {"wino_diff_dst", {0, 255, 0, 255}},
        {"wino_dst", {119, 255, 221, 255}},
        {"wino_wei", {255, 0, 255, 255}}};
    if (const auto it = fixed.find(name); it != fixed.end()) return it->second;
    return algorithm_color(name);
}

std::string short_algorithm_name(const std::string& name) {
    static const std::map<std::string, std::string> names{
        {"im2col_gemm", "im2col"},  {"implicit_gemm", "implicit"},
        {"via_forward", "via_fwd"}, {"fractal_via_forward", "frac_via"},
        {"col2im", "col2im"},       {"fractal", "fractal"},
        {"winograd", "winograd"},   {"auto", "auto"},
        {"direct", "direct"}};
    if (const auto it = names.find(name); it != names.end()) return it->second;
    return name.size() <= 9 ? name : name.substr(0, 8) + ".";
}

WinCount count_wins(const Results& r, Pass pass, const std::string& a, const std::string& b) {
    WinCount w;
    for (std::size_t li = 0; li < r.layers.size(); ++li) {
        const Measurement* ma = r.find(li, pass, a);
        const Measurement* mb = r.find(li, pass, b);
        if (!ma || !mb || !ma->valid() || !mb->valid()) continue;
        ++w.compared;
        if (ma->total.median_ms < mb->total.median_ms) {
            ++w.wins;
            w.winners.push_back(short_layer_name(r.layers[li].name));
        }
    }
    return w;
}

// [SECTION] (a) relative time of backward data vs forward

namespace {

// On a log axis bars start at its minimum (not 0), and failed marks sit on it.
void rest_on_axis(Chart& c) {
    for (Series& s : c.series)
        for (Mark& m : s.marks)
            if (m.kind == MarkKind::Bar)
                m.y0 = c.y.min;
            else if (m.kind == MarkKind::Failed)
                m.y0 = m.y1 = c.y.min;
}

}  // namespace

Chart relative_time_chart(const Results& r, const std::string& forward_algo) {
    Chart c;
    c.id = "relative_bwd_data";
    layer_axis(c, r);
    const std::vector<std::string> fwd = engine_algos(r, Pass::Forward);
    std::string f = forward_algo;
    if (f.empty())
        f = std::find(fwd.begin(), fwd.end(), "im2col_gemm") != fwd.end() ? "im2col_gemm"
            : fwd.empty()                                                 ? ""
                                                                          : fwd.front();
    const std::vector<std::string> bwd = engine_algos(r, Pass::BackwardData);
    const std::string peer = peer_name(r);
    c.title = "Backward data time relative to forward, per layer";
    c.subtitle = "bar = median time of the backward-data algorithm / median time of forward " +
                 (f.empty() ? std::string("(no forward measured)") : f) +
                 " on the same layer; below 1 = faster than forward; whiskers: interquartile range"
                 " of the repeats";
    if (!peer.empty()) c.subtitle += "; dots: " + peer + " bwd_data / " + peer + " fwd";
    double hi = 1.0, lo = 1.0;
    const std::size_t n = bwd.size();
    for (std::size_t s = 0; s < n; ++s) {
        Series se;
        se.name = bwd[s];
        se.color = algorithm_color(bwd[s]);
        se.style = SeriesStyle::Bars;
        for (std::size_t li = 0; li < r.layers.size(); ++li) {
            const Measurement* mb = r.find(li, Pass::BackwardData, bwd[s]);
            const Measurement* mf = f.empty() ? nullptr : r.find(li, Pass::Forward, f);
            if (!mb) continue;
            const std::string head = short_layer_name(r.layers[li].name) + "  bwd_data " + bwd[s];
            // A forward time of 0 has no ratio: the bar would be infinite.
            const bool zero_fwd = mf && mf->valid() && !(mf->total.median_ms > 0);
            if (!mb->valid() || !mf || !mf->valid() || zero_fwd) {
                std::string why = check_line(*mb);
                if (mf && !mf->valid()) why += "\nforward " + f + ": " + check_line(*mf);
                if (!mf) why += "\nno forward " + f + " measurement";
                if (zero_fwd) why += "\nforward " + f + " median time is 0: no ratio";
                se.marks.push_back(failed_mark(li, s, n, 0, head + "\n" + why));
                continue;
            }
            Mark k;
            std::tie(k.x0, k.x1) = slot(li, s, n);
            k.y0 = 0;
            k.y1 = mb->total.median_ms / mf->total.median_ms;
            k.lo = mb->total.q1_ms / mf->total.median_ms;
            k.hi = mb->total.q3_ms / mf->total.median_ms;
            hi = std::max({hi, k.y1, k.hi});
            lo = std::min({lo, k.y1, k.lo});
            k.noisy = mb->noisy() || mf->noisy();
            k.hover = head + fmt("\n%.2fx forward", k.y1) + " (" + ms(mb->total.median_ms) + " / " +
                      ms(mf->total.median_ms) + ")\n" + timing_line(*mb) + "\n" + check_line(*mb);
            se.marks.push_back(std::move(k));
        }
        c.legend.push_back({bwd[s], se.color, SeriesStyle::Bars, false, false});
        c.series.push_back(std::move(se));
    }
    if (!peer.empty()) {
        Series se;
        se.name = peer + " bwd_data / " + peer + " fwd";
        se.color = algorithm_color(peer);
        se.style = SeriesStyle::LinePoints;
        se.connect = false;  // a ratio per layer: no trend between layers
        for (std::size_t li = 0; li < r.layers.size(); ++li) {
            const Measurement* mb = r.find(li, Pass::BackwardData, peer);
            const Measurement* mf = r.find(li, Pass::Forward, peer);
            if (!mb || !mf || !mb->valid() || !mf->valid() || !(mf->total.median_ms > 0)) continue;
            Mark k;
            k.kind = MarkKind::Point;
            k.x0 = k.x1 = static_cast<double>(li) + 0.5;
            k.y0 = k.y1 = mb->total.median_ms / mf->total.median_ms;
            k.noisy = mb->noisy() || mf->noisy();
            hi = std::max(hi, k.y1);
            lo = std::min(lo, k.y1);
            k.hover = short_layer_name(r.layers[li].name) + "  " + peer +
                      fmt("\nbwd_data / fwd = %.2f", k.y1) + " (" + ms(mb->total.median_ms) +
                      " / " + ms(mf->total.median_ms) + ")\nbwd_data " + check_line(*mb);
            se.marks.push_back(std::move(k));
        }
        c.legend.push_back({se.name, se.color, SeriesStyle::LinePoints, false, false, false});
        c.series.push_back(std::move(se));
    }
    c.ref_lines.push_back({"1 = forward time", 1.0, {90, 90, 90, 255}, true});
    // Log scale: 2x slower and 2x faster are equally far from 1.
    c.y.log = true;
    lo = std::max(lo / 1.3, 1e-3);
    hi *= 1.3;
    c.y.ticks = log_ticks(lo, hi);
    c.y.min = lo;
    c.y.max = hi;
    c.y.title = "time / forward time (" + (f.empty() ? std::string("-") : f) + "), log scale";
    rest_on_axis(c);

    const bool have = [&] {
        bool a = false, b = false;
        for (const auto& x : bwd) {
            a |= x == "via_forward";
            b |= x == "col2im";
        }
        return a && b;
    }();
    if (have) {
        const WinCount w = count_wins(r, Pass::BackwardData, "via_forward", "col2im");
        c.annotations.push_back("via_forward faster than col2im in " + std::to_string(w.wins) +
                                " of " + std::to_string(w.compared) +
                                " layers (both verified; median times)");
    }
    if (std::find(bwd.begin(), bwd.end(), "fractal_via_forward") != bwd.end() &&
        std::find(bwd.begin(), bwd.end(), "col2im") != bwd.end()) {
        const WinCount w = count_wins(r, Pass::BackwardData, "fractal_via_forward", "col2im");
        c.annotations.push_back("fractal_via_forward faster than col2im in " +
                                std::to_string(w.wins) + " of " + std::to_string(w.compared) +
                                " layers");
    }
    finish(c, r);
    return c;
}

// [SECTION] (b) per-operation share

Chart operation_share_chart(const Results& r, Pass pass) {
    Chart c;
    c.id = std::string("ops_") + pass_name(pass);
    layer_axis(c, r);
    const std::vector<std::string> algos = engine_algos(r, pass);
    c.title = std::string("Where the time goes: share of each operation, ") + pass_name(pass);
    std::string order;
    for (std::size_t s = 0; s < algos.size(); ++s)
        order += (s ? ", " : "") + std::to_string(s + 1) + " = " + algos[s];
    c.subtitle = "one stacked bar per algorithm in each layer (" + order +
                 "); segment = median time of the operation / median total; "
                 "'other' = time outside the profiled operations";
    // Operations in order of first appearance; one series per operation.
    std::vector<std::string> ops;
    for (const std::string& a : algos)
        for (std::size_t li = 0; li < r.layers.size(); ++li)
            if (const Measurement* m = r.find(li, pass, a))
                for (const auto& op : m->ops)
                    if (std::find(ops.begin(), ops.end(), op.name) == ops.end())
                        ops.push_back(op.name);
    ops.push_back("other");  // time of the call outside every profiled span
    std::vector<Series> series(ops.size());
    for (std::size_t k = 0; k < ops.size(); ++k) {
        series[k].name = ops[k];
        series[k].color = operation_color(ops[k]);
        series[k].style = SeriesStyle::StackedBars;
    }
    Series failed;
    failed.name = "FAIL";
    failed.color = {200, 30, 30, 255};
    failed.style = SeriesStyle::StackedBars;
    const std::size_t n = algos.size();
    for (std::size_t s = 0; s < n; ++s) {
        for (std::size_t li = 0; li < r.layers.size(); ++li) {
            const Measurement* m = r.find(li, pass, algos[s]);
            if (!m) continue;
            const std::string head =
                short_layer_name(r.layers[li].name) + "  " + pass_name(pass) + " " + algos[s];
            if (!m->valid()) {
                failed.marks.push_back(failed_mark(li, s, n, 0, head + "\n" + check_line(*m)));
                failed.marks.back().tag = short_algorithm_name(algos[s]);
                continue;
            }
            double sum = 0;
            for (const auto& op : m->ops) sum += op.time.median_ms;
            const double other = std::max(0.0, m->total.median_ms - sum);
            const double denom = std::max(m->total.median_ms, sum);
            if (!(denom > 0)) continue;
            double y = 0;
            const auto [x0, x1] = slot(li, s, n);
            bool first = true;
            for (std::size_t k = 0; k < ops.size(); ++k) {
                double t = 0;
                bool present = false;
                if (ops[k] == "other") {
                    t = other;
                    present = other > 0;
                } else {
                    for (const auto& op : m->ops)
                        if (op.name == ops[k]) {
                            t = op.time.median_ms;
                            present = true;
                        }
                }
                if (!present) continue;
                Mark mk;
                mk.x0 = x0;
                mk.x1 = x1;
                mk.y0 = y;
                mk.y1 = y + 100.0 * t / denom;
                y = mk.y1;
                mk.hover = head + "\n" + ops[k] + ": " + ms(t) + fmt(" (%.1f%%", 100 * t / denom) +
                           " of " + ms(m->total.median_ms) + ")\n" + check_line(*m);
                mk.noisy = m->noisy();
                if (first) {
                    mk.label = std::to_string(s + 1);
                    mk.tag = short_algorithm_name(algos[s]);
                }
                first = false;
                series[k].marks.push_back(std::move(mk));
            }
        }
    }
    for (std::size_t k = 0; k < ops.size(); ++k) {
        if (series[k].marks.empty()) continue;
        c.legend.push_back({ops[k], series[k].color, SeriesStyle::StackedBars, false, false});
        c.series.push_back(std::move(series[k]));
    }
    if (!failed.marks.empty()) c.series.push_back(std::move(failed));
    y_axis(c, 0, 100, "share of the algorithm's time (%)");
    finish(c, r);
    return c;
}

// [SECTION] (c) GFLOP/s

Chart gflops_chart(const Results& r, Pass pass) {
    Chart c;
    c.id = std::string("gflops_") + pass_name(pass);
    layer_axis(c, r);
    const std::vector<std::string> algos = engine_algos(r, pass);
    const std::string peer = peer_name(r);
    c.title = std::string("Throughput per layer, ") + pass_name(pass);
    c.subtitle =
        "GFLOP/s = 2*N*K*(C/G)*prod(out)*prod(kernel) / median time (padding taps counted, as "
        "CK; gflops_benchdnn in the files leaves them out); whiskers: interquartile range of the "
        "repeats";
    if (!peer.empty()) c.subtitle += "; black level: " + peer + " fp32 in the same run";
    // Log scale: a classroom layer at 0.5 GFLOP/s and a ResNet layer at 80 both readable, the
    // measured peak on the same axis.
    double hi = 0, lo = std::numeric_limits<double>::infinity();
    const std::size_t n = algos.size();
    for (std::size_t s = 0; s < n; ++s) {
        Series se;
        se.name = algos[s];
        se.color = algorithm_color(algos[s]);
        for (std::size_t li = 0; li < r.layers.size(); ++li) {
            const Measurement* m = r.find(li, pass, algos[s]);
            if (!m) continue;
            const std::string head =
                short_layer_name(r.layers[li].name) + "  " + pass_name(pass) + " " + algos[s];
            if (!m->valid()) {
                se.marks.push_back(failed_mark(li, s, n, 0, head + "\n" + check_line(*m)));
                continue;
            }
            Mark k;
            std::tie(k.x0, k.x1) = slot(li, s, n);
            k.y0 = 0;
            k.y1 = m->gflops();
            k.lo = bench::gflops(m->flops, m->total.q3_ms);
            k.hi = bench::gflops(m->flops, m->total.q1_ms);
            hi = std::max({hi, k.y1, k.hi});
            if (k.y1 > 0) lo = std::min(lo, k.y1);
            if (k.lo > 0) lo = std::min(lo, k.lo);
            k.noisy = m->noisy();
            k.hover = head + fmt("\n%.2f GFLOP/s", k.y1) +
                      fmt(" (%.2f counting no padding taps, as benchdnn)", m->gflops_benchdnn()) +
                      fmt(", %.2f GB/s", m->gbps()) + "\n" + timing_line(*m) + "\n" +
                      check_line(*m);
            se.marks.push_back(std::move(k));
        }
        c.legend.push_back({algos[s], se.color, SeriesStyle::Bars, false, false});
        c.series.push_back(std::move(se));
    }
    if (!peer.empty()) {
        Series se;
        se.name = peer + " fp32 (level across each layer's bars)";
        se.color = algorithm_color(peer);
        se.style = SeriesStyle::LinePoints;
        se.connect = false;
        for (std::size_t li = 0; li < r.layers.size(); ++li) {
            const Measurement* m = r.find(li, pass, peer);
            if (!m) continue;
            const std::string head = short_layer_name(r.layers[li].name) + "  " + pass_name(pass) +
                                     " " + peer + " (" + m->impl + ")";
            if (!m->valid()) continue;  // a gap in the line; the hover of the slot says nothing
            Mark k;
            k.kind = MarkKind::Point;  // a level across the layer's bars
            k.x0 = static_cast<double>(li) + 0.1;
            k.x1 = static_cast<double>(li) + 0.9;
            k.y0 = k.y1 = m->gflops();
            k.noisy = m->noisy();
            hi = std::max(hi, k.y1);
            if (k.y1 > 0) lo = std::min(lo, k.y1);
            k.hover =
                head + fmt("\n%.2f GFLOP/s", k.y1) + "\n" + timing_line(*m) + "\n" + check_line(*m);
            se.marks.push_back(std::move(k));
        }
        c.legend.push_back({se.name, se.color, SeriesStyle::LinePoints, false, false});
        c.series.push_back(std::move(se));
    }
    if (r.machine.peak_gflops > 0) {
        c.ref_lines.push_back(
            {fmt("fp32 peak %.0f GFLOP/s (measured FMA loop: ", r.machine.peak_gflops) +
                 fmt("%.0f per thread, ", r.machine.peak_gflops_1t) +
                 std::to_string(r.machine.threads) +
                 (r.machine.threads == 1 ? " thread)" : " threads)"),
             r.machine.peak_gflops,
             {200, 30, 30, 255},
             true});
        hi = std::max(hi, r.machine.peak_gflops);
        // A time above the peak means the peak loop was slowed (other processes held a core
        // while it ran, or a lower clock then): say so rather than leave the reader puzzled.
        int above = 0;
        for (const Series& s : c.series)
            for (const Mark& m : s.marks)
                if (m.kind != MarkKind::Failed && m.y1 > r.machine.peak_gflops) ++above;
        if (above > 0)
            c.annotations.push_back(
                std::to_string(above) +
                " point(s) above the measured peak: the FMA loop was slowed by other processes "
                "or a lower clock when it ran (see Noise below)");
    }
    if (!std::isfinite(lo)) lo = hi > 0 ? hi / 10 : 0.1;  // nothing plotted
    if (!(hi > 0)) hi = 1;
    lo /= 1.5;
    hi *= 1.3;
    c.y.log = true;
    c.y.ticks = log_ticks(lo, hi);
    c.y.min = lo;
    c.y.max = hi;
    c.y.title = (r.dtype == DType::f32 ? std::string("GFLOP/s (fp32)")
                                       : std::string("GFLOP/s (") + dtype_name(r.dtype) +
                                             " storage, fp32 accumulation)") +
                ", log scale";
    rest_on_axis(c);
    finish(c, r);
    return c;
}

std::vector<std::string> run_labels(const std::vector<Results>& runs,
                                    const std::vector<std::string>& files) {
    std::vector<std::string> out;
    for (const Results& r : runs)
        out.push_back(r.machine.cpu + ", " + std::to_string(r.machine.threads) +
                      (r.machine.threads == 1 ? " thread, " : " threads, ") +
                      r.machine.date.substr(0, 10));
    const auto clashes = [&](std::size_t i) {
        return std::count(out.begin(), out.end(), out[i]) > 1;
    };
    // Runs of one machine on one day: told apart first by their builds (portable or native
    // flags, the kernels' ISA), then by the shortest tail of their paths that differs.
    std::vector<std::string> next = out;
    for (std::size_t i = 0; i < out.size(); ++i)
        if (clashes(i))
            for (std::size_t k = 0; k < out.size(); ++k)
                if (k != i && out[k] == out[i] &&
                    runs[k].machine.engine_isa != runs[i].machine.engine_isa)
                    next[i] = out[i] + " [" + runs[i].machine.engine_isa + "]";
    out = next;
    const auto tail = [&](std::size_t i, std::size_t parts) {
        if (i >= files.size()) return "run " + std::to_string(i + 1);
        std::filesystem::path p(files[i]);
        if (p.filename() == "results.json" && p.has_parent_path()) p = p.parent_path();
        std::vector<std::string> comps;
        for (const auto& c : p)
            if (!c.empty() && c != "/" && c != ".") comps.push_back(c.string());
        std::string t;
        for (std::size_t n = comps.size() > parts ? comps.size() - parts : 0; n < comps.size(); ++n)
            t += (t.empty() ? "" : "/") + comps[n];
        return t.empty() ? "run " + std::to_string(i + 1) : t;
    };
    next = out;
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (!clashes(i)) continue;
        for (std::size_t parts = 1; parts <= 16; ++parts) {
            bool unique = true;
            for (std::size_t k = 0; k < out.size(); ++k)
                if (k != i && out[k] == out[i] && tail(k, parts) == tail(i, parts)) unique = false;
            next[i] = out[i] + " (" + tail(i, parts) + ")";
            if (unique) break;
        }
    }
    return next;
}

Chart machines_chart(const std::vector<Results>& runs, const std::vector<std::string>& labels,
                     Pass pass) {
    Chart c;
    c.id = std::string("machines_") + pass_name(pass);
    c.title = std::string("Runs side by side, ") + pass_name(pass);
    c.subtitle =
        "bar = sum of the median times over the layers every run measured (a layer "
        "matched by name and descriptor); lower is faster";
    // The algorithms (and peers) every run measured in this pass, in the first run's order.
    std::vector<std::string> algos;
    if (!runs.empty())
        for (const Measurement& m : runs[0].rows)
            if (m.pass == pass && std::find(algos.begin(), algos.end(), m.algorithm) == algos.end())
                algos.push_back(m.algorithm);
    std::erase_if(algos, [&](const std::string& a) {
        return std::any_of(runs.begin(), runs.end(), [&](const Results& r) {
            return std::none_of(r.rows.begin(), r.rows.end(), [&](const Measurement& m) {
                return m.pass == pass && m.algorithm == a;
            });
        });
    });
    // The layer (index in each run) of every layer all runs hold.
    const auto layer_in = [](const Results& r, const bench::LayerInfo& l) -> std::optional<size_t> {
        for (std::size_t i = 0; i < r.layers.size(); ++i)
            if (r.layers[i].name == l.name && r.layers[i].descriptor == l.descriptor) return i;
        return std::nullopt;
    };
    c.x.categories = algos;
    c.x.min = 0;
    c.x.max = static_cast<double>(algos.size());
    c.x.title = "algorithm";
    const std::size_t n = runs.size();
    double hi = 0, lo = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> totals(n, std::vector<double>(algos.size(), -1));
    for (std::size_t a = 0; a < algos.size(); ++a) {
        // Layers where every run has a verified time of this algorithm.
        std::vector<std::vector<const Measurement*>> per_run(n);
        std::vector<bool> failed(n, false);
        if (n > 0)
            for (const bench::LayerInfo& l : runs[0].layers) {
                std::vector<const Measurement*> row(n, nullptr);
                for (std::size_t k = 0; k < n; ++k)
                    if (const auto li = layer_in(runs[k], l))
                        row[k] = runs[k].find(*li, pass, algos[a]);
                if (std::any_of(row.begin(), row.end(), [](auto* m) { return m == nullptr; }))
                    continue;
                for (std::size_t k = 0; k < n; ++k) {
                    if (!row[k]->valid()) failed[k] = true;
                    per_run[k].push_back(row[k]);
                }
            }
        for (std::size_t k = 0; k < n; ++k) {
            const std::string head = labels[k] + "\n" + pass_name(pass) + " " + algos[a];
            if (per_run[k].empty() || failed[k]) {
                Mark f = failed_mark(a, k, n, 0,
                                     head + (per_run[k].empty() ? "\nno layer in common"
                                                                : "\na layer failed verification"));
                c.series.resize(n);
                c.series[k].marks.push_back(std::move(f));
                continue;
            }
            double t = 0;
            bool noisy = false;
            for (const Measurement* m : per_run[k]) {
                t += m->total.median_ms;
                noisy = noisy || m->noisy();
            }
            totals[k][a] = t;
            Mark m;
            std::tie(m.x0, m.x1) = slot(a, k, n);
            m.y0 = 0;
            m.y1 = t;
            m.noisy = noisy;
            m.hover = head + "\n" + ms(t) + " over " + std::to_string(per_run[k].size()) +
                      (per_run[k].size() == 1 ? " layer" : " layers");
            if (k > 0 && totals[0][a] > 0)
                m.hover += fmt("\n%.2fx the first run's time", t / totals[0][a]);
            if (t > 0) lo = std::min(lo, t);
            hi = std::max(hi, t);
            c.series.resize(n);
            c.series[k].marks.push_back(std::move(m));
        }
    }
    c.series.resize(n);
    static const Color kRunColors[] = {{31, 119, 180, 255}, {255, 127, 14, 255},
                                       {44, 160, 44, 255},  {148, 103, 189, 255},
                                       {140, 86, 75, 255},  {127, 127, 127, 255}};
    for (std::size_t k = 0; k < n; ++k) {
        c.series[k].name = labels[k];
        c.series[k].color = kRunColors[k % std::size(kRunColors)];
        c.legend.push_back({labels[k], c.series[k].color, SeriesStyle::Bars, false, false});
    }
    // Headline: each later run's time over the first's, per algorithm.
    for (std::size_t k = 1; k < n; ++k) {
        std::string line = labels[k] + " / " + labels[0] + ":";
        for (std::size_t a = 0; a < algos.size(); ++a)
            if (totals[k][a] > 0 && totals[0][a] > 0)
                line += " " + algos[a] + fmt(" %.2fx", totals[k][a] / totals[0][a]);
        c.annotations.push_back(line);
    }
    if (!std::isfinite(lo)) lo = hi > 0 ? hi / 10 : 0.1;
    if (!(hi > 0)) hi = 1;
    lo /= 1.5;
    hi *= 1.3;
    c.y.log = true;
    c.y.ticks = log_ticks(lo, hi);
    c.y.min = lo;
    c.y.max = hi;
    c.y.title = "time, ms (sum of medians), log scale";
    rest_on_axis(c);
    bool verified = n > 0;
    for (const Series& s : c.series)
        for (const Mark& m : s.marks) {
            (m.kind == MarkKind::Failed ? c.failed : c.plotted) += 1;
            c.noisy += m.kind != MarkKind::Failed && m.noisy ? 1 : 0;
        }
    for (std::size_t k = 0; k < n; ++k) {
        const Results& r = runs[k];
        verified = verified && r.failed() == 0 && !r.rows.empty() && !r.cancelled;
        c.footer.push_back(labels[k] + ": " + r.verification_summary() + "; " +
                           r.machine.summary());
        c.footer.push_back("  Reproduce: " +
                           (r.command.empty() ? "(command not recorded)" : r.command));
    }
    c.verified = verified;
    c.verification = std::string(verified ? "every run verified" : "NOT ALL VERIFIED") + "; " +
                     std::to_string(c.noisy) + " of " + std::to_string(c.plotted) +
                     " plotted values noisy" + (c.noisy > 0 ? " (~)" : "");
    c.footer.insert(c.footer.begin(),
                    std::string(verified ? "Verified: " : "NOT ALL VERIFIED: ") + c.verification);
    if (c.failed > 0) {
        LegendEntry e;
        e.label = "FAIL: not verified, not plotted";
        e.color = {200, 30, 30, 255};
        e.failed = true;
        c.legend.push_back(e);
    }
    return c;
}

namespace {

// The relative chart divides bwd_data times by fwd times: both passes must have engine rows.
bool can_draw_relative(const Results& r) {
    return !engine_algos(r, Pass::Forward).empty() && !engine_algos(r, Pass::BackwardData).empty();
}

}  // namespace

std::vector<std::string> skipped_charts(const Results& r) {
    std::vector<std::string> out;
    if (!can_draw_relative(r))
        out.push_back("relative_bwd_data: skipped, needs passes fwd and bwd_data");
    return out;
}

std::vector<Chart> standard_charts(const Results& r) {
    std::vector<Pass> passes;
    for (const Measurement& m : r.rows)
        if (std::find(passes.begin(), passes.end(), m.pass) == passes.end())
            passes.push_back(m.pass);
    std::vector<Chart> out;
    if (can_draw_relative(r)) out.push_back(relative_time_chart(r));
    for (Pass p : passes)
        if (!engine_algos(r, p).empty()) out.push_back(operation_share_chart(r, p));
    for (Pass p : passes) out.push_back(gflops_chart(r, p));
    return out;
}

// [SECTION] hit test

std::optional<std::pair<std::size_t, std::size_t>> Chart::hit(double hx, double hy, double tol_x,
                                                              double tol_y) const {
    std::optional<std::pair<std::size_t, std::size_t>> best;
    double best_d = std::numeric_limits<double>::infinity();
    for (std::size_t s = 0; s < series.size(); ++s) {
        for (std::size_t k = 0; k < series[s].marks.size(); ++k) {
            const Mark& m = series[s].marks[k];
            // In axis fractions (log-aware), so tol_y is a fraction of the plot height too.
            const double fy = y.frac(hy);
            double y0 = std::min(y.frac(m.y0), y.frac(m.y1));
            double y1 = std::max(y.frac(m.y0), y.frac(m.y1));
            if (m.kind == MarkKind::Failed) {  // the marker sits on the axis, a little above it
                y0 = 0;
                y1 = 0.06;
            }
            const double x0 = std::min(m.x0, m.x1) - tol_x, x1 = std::max(m.x0, m.x1) + tol_x;
            if (hx < x0 || hx > x1 || fy < y0 - tol_y || fy > y1 + tol_y) continue;
            // Distance to the box (0 inside): points and thin bars compete fairly.
            const double dx = std::max({0.0, std::min(m.x0, m.x1) - hx, hx - std::max(m.x0, m.x1)});
            const double dy = std::max({0.0, y0 - fy, fy - y1});
            const double d = dx / std::max(tol_x, 1e-12) + dy / std::max(tol_y, 1e-12);
            if (d < best_d) {
                best_d = d;
                best = std::make_pair(s, k);
            }
        }
    }
    return best;
}

}  // namespace convlab::charts
