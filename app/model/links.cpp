// Links (model.hpp): an engine IndexMap between two panels, enumerated once.
#include "model/model.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <numeric>
#include <set>

#include "convlab/conv.hpp"
#include "convlab/davinci.hpp"
#include "convlab/kernels.hpp"
#include "convlab/maps.hpp"
#include "convlab/tensor.hpp"
#include "lesson/lesson.hpp"

namespace convlab::app {

void* allocate_table(std::size_t bytes) {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    if (bytes < 2 * kHuge) {
        if (void* p = std::malloc(std::max<std::size_t>(bytes, 1))) return p;
        throw std::bad_alloc();
    }
    const std::size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, size);
    if (!p) throw std::bad_alloc();
    ::madvise(p, size, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
    return p;
}

void free_table(void* p) noexcept {
    std::free(p);
}

dim_t Link::num_steps(Granularity g) const {
    return walk_num_steps(g, elements, line_len, mid_len);
}

void Link::step_range(Granularity g, dim_t step, dim_t& begin, dim_t& end) const {
    walk_step_span(g, step, elements, line_len, mid_len, begin, end);
}

std::vector<dim_t> Link::sources_of(dim_t dst_linear) const {
    std::vector<dim_t> r;
    if (is_gather()) {
        if (image[static_cast<std::size_t>(dst_linear)] >= 0)
            r.push_back(image[static_cast<std::size_t>(dst_linear)]);
    } else {
        for (dim_t i = inv_start[static_cast<std::size_t>(dst_linear)];
             i < inv_start[static_cast<std::size_t>(dst_linear) + 1]; ++i)
            r.push_back(inv_items[static_cast<std::size_t>(i)]);
    }
    return r;
}

std::vector<dim_t> Link::destinations_of(dim_t src_linear) const {
    std::vector<dim_t> r;
    if (!is_gather()) {
        if (image[static_cast<std::size_t>(src_linear)] >= 0)
            r.push_back(image[static_cast<std::size_t>(src_linear)]);
    } else {
        for (dim_t i = inv_start[static_cast<std::size_t>(src_linear)];
             i < inv_start[static_cast<std::size_t>(src_linear) + 1]; ++i)
            r.push_back(inv_items[static_cast<std::size_t>(i)]);
    }
    return r;
}

Link make_link(std::shared_ptr<const IndexMap> map, int src, int dst,
               std::atomic<float>* progress) {
    Link l;
    l.name = map->name();
    l.src = src;
    l.dst = dst;
    const dim_t n = map->domain().numel();
    const dim_t m = map->codomain().numel();
    l.line_len = map->domain().dims[static_cast<std::size_t>(map->line_axis())];
    l.mid_len = map->mid_extent();
    l.elements = n;
    l.image.resize(static_cast<std::size_t>(n));
    const bool gather = map->kind() == IndexMap::Kind::Gather;
    // The whole walk in one call (the map's own enumeration order, as its steps cut it),
    // reporting its progress every 64 Ki pairs. order and step_of stay empty while the walk
    // visits element e at step e; the first step that does not fills them, the steps before
    // it as the identity.
    dim_t e = 0;
    bool identity = true;
    if (n > 0)
        map->for_each_in_step(Granularity::Whole, 0, [&](dim_t sl, dim_t dl) {
            const dim_t d = gather ? dl : sl;
            const dim_t img = gather ? sl : dl;
            if (e < n && d >= 0 && d < n) {
                if (identity && d != e) {
                    identity = false;
                    l.order.resize(static_cast<std::size_t>(n));
                    l.step_of.resize(static_cast<std::size_t>(n));
                    for (dim_t i = 0; i < e; ++i)
                        l.order[static_cast<std::size_t>(i)] =
                            l.step_of[static_cast<std::size_t>(i)] = static_cast<LinkIndex>(i);
                }
                if (!identity) {
                    l.order[static_cast<std::size_t>(e)] = static_cast<LinkIndex>(d);
                    l.step_of[static_cast<std::size_t>(d)] = static_cast<LinkIndex>(e);
                }
                l.image[static_cast<std::size_t>(d)] = static_cast<LinkIndex>(img);
            }
            ++e;
            if (progress && (e & 0xffff) == 0)
                progress->store(static_cast<float>(e) / static_cast<float>(n));
        });
    if (e != n)
        throw Error("map " + l.name + ": enumeration gave " + std::to_string(e) + " pairs for " +
                    std::to_string(n) + " domain elements");
    // Inverse (counting sort): the domain elements of every codomain element, ascending.
    l.inv_start.assign(static_cast<std::size_t>(m) + 1, 0);
    for (dim_t d = 0; d < n; ++d)
        if (const dim_t img = l.image[static_cast<std::size_t>(d)]; img >= 0)
            ++l.inv_start[static_cast<std::size_t>(img) + 1];
    std::partial_sum(l.inv_start.begin(), l.inv_start.end(), l.inv_start.begin());
    l.inv_items.resize(static_cast<std::size_t>(l.inv_start.back()));
    // Filled with inv_start[img] as the cursor of img's list (it ends where img + 1's list
    // starts), then shifted up by one place, back to the starts.
    for (dim_t d = 0; d < n; ++d)
        if (const dim_t img = l.image[static_cast<std::size_t>(d)]; img >= 0)
            l.inv_items[static_cast<std::size_t>(l.inv_start[static_cast<std::size_t>(img)]++)] =
                static_cast<LinkIndex>(d);
    for (std::size_t k = l.inv_start.size() - 1; k > 0; --k) l.inv_start[k] = l.inv_start[k - 1];
    l.inv_start[0] = 0;
    l.map = std::move(map);
    if (progress) progress->store(1.0f);
    return l;
}

}  // namespace convlab::app
