#include "convlab/layout.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "convlab/tensor.hpp"

namespace convlab {

namespace {

void check_dims(const std::vector<dim_t>& dims) {
    for (std::size_t i = 0; i < dims.size(); ++i)
        if (dims[i] < 0)
            throw Error("layout dim[" + std::to_string(i) + "] = " + std::to_string(dims[i]) +
                        ": dims must be >= 0");
}

}  // namespace

Layout Layout::row_major(std::vector<dim_t> dims, std::string name) {
    std::vector<int> order(dims.size());
    std::iota(order.begin(), order.end(), 0);
    return permuted(std::move(dims), std::move(order), std::move(name));
}

Layout Layout::permuted(std::vector<dim_t> dims, std::vector<int> order, std::string name) {
    return blocked(std::move(dims), std::move(order), {}, std::move(name));
}

Layout Layout::strided(std::vector<dim_t> dims, std::vector<dim_t> strides, std::string name) {
    check_dims(dims);
    if (strides.size() != dims.size()) throw Error("layout: one stride per dim is required");
    Layout l;
    l.name_ = std::move(name);
    l.dims_ = std::move(dims);
    l.outer_strides_ = std::move(strides);
    // Storage: one past the largest offset.
    dim_t last = 0;
    bool any_empty = false;
    for (std::size_t i = 0; i < l.dims_.size(); ++i) {
        if (l.dims_[i] == 0) any_empty = true;
        dim_t term;
        if (l.dims_[i] > 0 && (__builtin_mul_overflow(l.dims_[i] - 1, l.outer_strides_[i], &term) ||
                               __builtin_add_overflow(last, term, &last)))
            throw Error("layout " + l.name_ + " " + dims_str(l.dims_) + ": storage size overflows");
    }
    l.storage_ = any_empty ? 0 : last + 1;
    // Print order: by decreasing stride.
    l.outer_order_.resize(l.dims_.size());
    std::iota(l.outer_order_.begin(), l.outer_order_.end(), 0);
    std::stable_sort(l.outer_order_.begin(), l.outer_order_.end(),
                     [&](int a, int b) { return l.outer_strides_[a] > l.outer_strides_[b]; });
    return l;
}

Layout Layout::blocked(std::vector<dim_t> dims, std::vector<int> outer_order,
                       std::vector<InnerBlock> blocks, std::string name) {
    check_dims(dims);
    const int rank = static_cast<int>(dims.size());
    std::vector<bool> seen(dims.size(), false);
    if (static_cast<int>(outer_order.size()) != rank)
        throw Error("layout " + name + ": outer_order must list every dim once");
    for (int d : outer_order) {
        if (d < 0 || d >= rank || seen[d])
            throw Error("layout " + name + ": outer_order must list every dim once");
        seen[d] = true;
    }
    std::vector<dim_t> block_of(dims.size(), 1);
    dim_t inner = 1;
    for (const auto& b : blocks) {
        if (b.dim < 0 || b.dim >= rank || b.size < 1)
            throw Error("layout " + name + ": bad inner block");
        block_of[b.dim] *= b.size;
        inner *= b.size;
    }
    Layout l;
    l.name_ = std::move(name);
    l.dims_ = std::move(dims);
    l.blocks_ = std::move(blocks);
    l.outer_order_ = std::move(outer_order);
    l.outer_strides_.assign(l.dims_.size(), 0);
    dim_t running = inner;
    for (int i = rank - 1; i >= 0; --i) {
        const int d = l.outer_order_[i];
        l.outer_strides_[d] = running;
        if (__builtin_mul_overflow(running, (l.dims_[d] + block_of[d] - 1) / block_of[d], &running))
            throw Error("layout " + l.name_ + " " + dims_str(l.dims_) + ": storage size overflows");
    }
    l.storage_ = running;
    return l;
}

Layout Layout::ncx(std::vector<dim_t> dims) {
    static const char* names[] = {"NC", "NCW", "NCHW", "NCDHW"};
    const std::size_t s = dims.size() >= 2 ? dims.size() - 2 : 0;
    return row_major(std::move(dims), s <= 3 ? names[s] : "row_major");
}

Layout Layout::nxc(std::vector<dim_t> dims) {
    static const char* names[] = {"NC", "NWC", "NHWC", "NDHWC"};
    const int rank = static_cast<int>(dims.size());
    if (rank < 2) throw Error("layout nxc needs at least (N, C)");
    std::vector<int> order{0};
    for (int i = 2; i < rank; ++i) order.push_back(i);
    order.push_back(1);
    const int s = rank - 2;
    return permuted(std::move(dims), std::move(order), s <= 3 ? names[s] : "nxc");
}

dim_t Layout::numel() const {
    return product(dims_);
}

dim_t Layout::storage_size() const {
    return storage_;
}

bool Layout::is_row_major() const {
    if (!blocks_.empty()) return false;
    dim_t expect = 1;
    for (int i = rank() - 1; i >= 0; --i) {
        if (dims_[i] != 1 && outer_strides_[i] != expect) return false;
        expect *= dims_[i];
    }
    return true;
}

dim_t Layout::offset(std::span<const dim_t> coord) const {
    dim_t off = 0;
    if (blocks_.empty()) {
        for (std::size_t i = 0; i < coord.size(); ++i) off += coord[i] * outer_strides_[i];
        return off;
    }
    // Walk the inner blocks from the innermost outwards: `finer[d]` is the product of the blocks
    // of dim d already passed, so (c / finer) % size is this block's index and, once all blocks
    // are passed, c / finer is the outer block index.
    dim_t finer_small[8];
    std::vector<dim_t> finer_big;
    dim_t* finer = finer_small;
    if (coord.size() > 8) {
        finer_big.resize(coord.size());
        finer = finer_big.data();
    }
    std::fill(finer, finer + coord.size(), dim_t{1});
    dim_t stride = 1;
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
        off += (coord[it->dim] / finer[it->dim]) % it->size * stride;
        finer[it->dim] *= it->size;
        stride *= it->size;
    }
    for (std::size_t i = 0; i < coord.size(); ++i) off += coord[i] / finer[i] * outer_strides_[i];
    return off;
}

std::string Layout::str() const {
    std::ostringstream s;
    s << name_ << " (";
    std::vector<dim_t> block_of(dims_.size(), 1);
    for (const auto& b : blocks_) block_of[b.dim] *= b.size;
    std::vector<dim_t> pdims, pstrides;
    for (int d : outer_order_) {
        pdims.push_back(blocks_.empty() ? dims_[d] : (dims_[d] + block_of[d] - 1) / block_of[d]);
        pstrides.push_back(outer_strides_[d]);
    }
    dim_t stride = 1;
    std::vector<dim_t> istr(blocks_.size());
    for (int j = static_cast<int>(blocks_.size()) - 1; j >= 0; --j) {
        istr[j] = stride;
        stride *= blocks_[j].size;
    }
    for (std::size_t j = 0; j < blocks_.size(); ++j) {
        pdims.push_back(blocks_[j].size);
        pstrides.push_back(istr[j]);
    }
    for (std::size_t i = 0; i < pdims.size(); ++i) s << (i ? "," : "") << pdims[i];
    s << "):(";
    for (std::size_t i = 0; i < pstrides.size(); ++i) s << (i ? "," : "") << pstrides[i];
    s << ")";
    return s.str();
}

}  // namespace convlab
