// The cells a step lights (StepState::current and the kCurrent flags), stepped in place by
// advance_step, which keeps its lists from one step to the next and lists each cell once by a
// flag instead of sorting: compared, after steps forward, back and jumps, with the same cells
// recomputed the plain way (ordered sets built afresh for the step, nothing kept), so that a
// list or a flag left over from an earlier step fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "convlab/index_map.hpp"
#include "convlab/problem.hpp"
#include "model/model.hpp"
#include "model/views/view_builder.hpp"
#include "view_test_util.hpp"

using namespace convlab;
using namespace convlab::app_test;

namespace {

using Sets = std::vector<std::set<dim_t>>;

// Element steps [begin, end) a driver runs at `step` (a finished driver runs nothing).
void plain_range(const app::ViewModel& v, const app::Driver& drv, Granularity g, dim_t step,
                 dim_t& begin, dim_t& end) {
    if (drv.link >= 0) {
        const app::Link& l = v.links[static_cast<std::size_t>(drv.link)];
        l.step_range(g, step, begin, end);
        if (step >= l.num_steps(g)) begin = end = l.elements;
        return;
    }
    const app::Panel& pr = v.panels[static_cast<std::size_t>(
        v.relations[static_cast<std::size_t>(drv.relation)].result)];
    const dim_t n = pr.numel();
    walk_step_span(g, step, n, pr.shape.dims.back(), app::mid_extent(pr), begin, end);
    if (step >= walk_num_steps(g, n, pr.shape.dims.back(), app::mid_extent(pr))) begin = end = n;
}

// The model's rule for the cells of a step, written out directly: the drivers' cells (a
// relation's operands for at most 4096 result cells and 64 Ki operand cells), then the panels
// no driver lit get what the lit ones read or feed, through links and relations, panel after
// panel (at most 64 Ki cells followed out of a panel, the first in ascending order).
Sets plain_current(const app::ViewModel& v, Granularity g, dim_t step) {
    Sets cur(v.panels.size());
    for (const app::Driver& drv : v.drivers) {
        dim_t begin = 0, end = 0;
        plain_range(v, drv, g, step, begin, end);
        if (drv.link >= 0) {
            const app::Link& l = v.links[static_cast<std::size_t>(drv.link)];
            const auto cs = static_cast<std::size_t>(l.is_gather() ? l.dst : l.src);
            const auto co = static_cast<std::size_t>(l.is_gather() ? l.src : l.dst);
            for (dim_t e = begin; e < end; ++e) {
                const dim_t d = l.element_at(e);
                cur[cs].insert(d);
                if (const dim_t img = l.image[static_cast<std::size_t>(d)]; img >= 0)
                    cur[co].insert(img);
            }
        } else {
            const app::Relation& rel = v.relations[static_cast<std::size_t>(drv.relation)];
            for (dim_t d = begin; d < end; ++d) cur[static_cast<std::size_t>(rel.result)].insert(d);
            std::size_t budget = std::size_t{1} << 16;
            dim_t k = 0;
            for (dim_t d = begin; d < end && k < 4096 && budget > 0; ++d, ++k) {
                std::vector<std::vector<dim_t>> ops(rel.operands.size());
                rel.fn(d, ops);
                for (std::size_t i = 0; i < ops.size(); ++i) {
                    cur[static_cast<std::size_t>(rel.operands[i])].insert(ops[i].begin(),
                                                                          ops[i].end());
                    budget -= std::min(budget, ops[i].size());
                }
            }
        }
    }
    const std::size_t cap = std::size_t{1} << 16;
    std::vector<bool> reached(v.panels.size());
    for (std::size_t i = 0; i < v.panels.size(); ++i) reached[i] = !cur[i].empty();
    for (bool grew = true; grew;) {
        grew = false;
        for (const app::Link& l : v.links) {
            const auto s = static_cast<std::size_t>(l.src), d = static_cast<std::size_t>(l.dst);
            if (reached[s] == reached[d]) continue;
            const bool forward = reached[s];
            std::set<dim_t> out;
            std::size_t n = 0;
            for (const dim_t c : cur[forward ? s : d]) {
                if (++n > cap) break;
                for (const dim_t t : forward ? l.destinations_of(c) : l.sources_of(c))
                    out.insert(t);
            }
            cur[forward ? d : s] = out;
            reached[forward ? d : s] = true;
            grew = true;
        }
        for (const app::Relation& rel : v.relations) {
            const auto res = static_cast<std::size_t>(rel.result);
            if (!reached[res]) continue;
            bool any = false;
            for (const int o : rel.operands) any |= !reached[static_cast<std::size_t>(o)];
            if (!any) continue;
            Sets out(rel.operands.size());
            std::size_t n = 0, looked = 0;
            for (const dim_t c : cur[res]) {
                if (++n > cap || looked > cap) break;
                std::vector<std::vector<dim_t>> ops(rel.operands.size());
                rel.fn(c, ops);
                for (std::size_t i = 0; i < ops.size(); ++i) {
                    out[i].insert(ops[i].begin(), ops[i].end());
                    looked += ops[i].size();
                }
            }
            for (std::size_t i = 0; i < rel.operands.size(); ++i) {
                const auto o = static_cast<std::size_t>(rel.operands[i]);
                if (reached[o]) continue;
                cur[o] = out[i];
                reached[o] = true;
                grew = true;
            }
        }
    }
    return cur;
}

// st's lit cells are exactly `want`: its lists (ascending, each once) and its kCurrent flags,
// and no cell keeps advance_step's own marks.
void check_lit(const app::StepState& st, const Sets& want) {
    REQUIRE(st.current.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(st.current[i] == std::vector<dim_t>(want[i].begin(), want[i].end()));
        const auto& flags = st.panels[i].flags;
        std::size_t lit = 0, wrong = 0, marked = 0;
        for (std::size_t c = 0; c < flags.size(); ++c) {
            const bool on = (flags[c] & app::kCurrent) != 0;
            lit += on ? 1 : 0;
            wrong += on != (want[i].count(static_cast<dim_t>(c)) != 0) ? 1 : 0;
            marked += (flags[c] & (app::kListed | app::kSummed)) != 0 ? 1 : 0;
        }
        CHECK(lit == want[i].size());
        CHECK(wrong == 0);
        CHECK(marked == 0);
    }
}

}  // namespace

TEST_CASE("app model: the cells a step lights, stepped in place, equal the plain recomputation") {
    // Small problems (lists a large share of their panel: put in order from the flags) and
    // larger ones (short lists in large panels: sorted), forward, back, jumps both ways, past
    // the end and to the start; the changed lists name every cell whose state moved, once.
    const char* const problems[] = {"mb2ic1ih5oc2kh3sh2ph1", "mb1ic2ih3oc2kh2",
                                    "mb1ic16ih14oc32oh7kh1sh2ph0", "mb1ic8ih9oc16kh3ph1"};
    for (const char* desc : problems)
        for (const char* view : kViews) {
            const app::ViewModel v = build(view, desc);
            for (const Granularity g : {Granularity::Element, Granularity::Line}) {
                const dim_t n = app::num_steps(v, g);
                app::StepState st = app::compute_step(v, g, 0);
                check_lit(st, plain_current(v, g, 0));
                std::vector<std::vector<dim_t>> changed;
                for (const dim_t k : {dim_t{1}, dim_t{2}, dim_t{3}, dim_t{2}, n / 2, dim_t{1},
                                      n - 1, n, dim_t{0}, n / 3, n / 3 + 1, n / 2 - 1}) {
                    if (k < 0) continue;
                    INFO(desc << " view " << view << " granularity " << granularity_name(g)
                              << " step " << st.step << " -> " << k);
                    const app::StepState before = st;
                    REQUIRE(app::advance_step(v, st, g, k, changed));
                    check_lit(st, plain_current(v, g, k));
                    for (std::size_t i = 0; i < v.panels.size(); ++i) {
                        CAPTURE(i);
                        const std::set<dim_t> listed(changed[i].begin(), changed[i].end());
                        CHECK(listed.size() == changed[i].size());  // each once
                        std::size_t missing = 0;
                        for (std::size_t c = 0; c < st.panels[i].flags.size(); ++c)
                            if (before.panels[i].flags[c] != st.panels[i].flags[c] &&
                                !listed.count(static_cast<dim_t>(c)))
                                ++missing;
                        CHECK(missing == 0);
                    }
                }
            }
        }
}
