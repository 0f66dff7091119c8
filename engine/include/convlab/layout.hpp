// Layout: a function from a logical coordinate to a storage offset (in elements).
//
// One description covers plain strided layouts (NCHW, NHWC, NCDHW, grouped weights ...) and
// blocked ones (NC1HWC0, FRACTAL_Z ...), in the way oneDNN's blocking descriptor does:
//
//   offset(c) = sum_i (c[i] / B[i]) * outer_stride[i] + inner_offset(c)
//
// where B[i] is the product of the inner block sizes of logical dim i, and the inner blocks
// (dim, size), outermost first, are laid out densely, innermost contiguous:
//
//   inner_offset(c) = sum_j ((c[dim_j] / (product of later blocks of dim_j)) % size_j) * (product
//   of
//                     sizes of blocks after j)
//
// Blocked dims are padded up to a multiple of B[i]; storage positions that no logical coordinate
// reaches are padding lanes and stay zero (Tensor zero-fills).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "convlab/problem.hpp"

namespace convlab {

struct InnerBlock {
    int dim;     // logical dim that is blocked
    dim_t size;  // block size
    bool operator==(const InnerBlock&) const = default;
};

class Layout {
  public:
    Layout() = default;

    // Dense C-order (row-major) layout over dims; name defaults to "row_major".
    static Layout row_major(std::vector<dim_t> dims, std::string name = "row_major");
    // Dense layout whose storage order is dims[order[0]] outermost ... dims[order.back()]
    // innermost. NHWC over logical (N, C, H, W) is order {0, 2, 3, 1}.
    static Layout permuted(std::vector<dim_t> dims, std::vector<int> order, std::string name);
    // Explicit strides (in elements), one per logical dim.
    static Layout strided(std::vector<dim_t> dims, std::vector<dim_t> strides, std::string name);
    // Blocked: outer_order lists every logical dim, outermost first, for the block indices;
    // blocks are the inner blocks, outermost first.
    static Layout blocked(std::vector<dim_t> dims, std::vector<int> outer_order,
                          std::vector<InnerBlock> blocks, std::string name);

    // Named activation/weight layouts for a number of spatial dims (1..3).
    static Layout ncx(std::vector<dim_t> dims);  // NCW / NCHW / NCDHW (also OIHW ... for weights)
    static Layout nxc(std::vector<dim_t> dims);  // NWC / NHWC / NDHWC

    const std::string& name() const { return name_; }
    const std::vector<dim_t>& dims() const { return dims_; }
    int rank() const { return static_cast<int>(dims_.size()); }
    dim_t numel() const;         // logical elements: product of dims
    dim_t storage_size() const;  // elements of storage, padding lanes included
    const std::vector<dim_t>& outer_strides() const { return outer_strides_; }
    const std::vector<InnerBlock>& blocks() const { return blocks_; }
    bool is_blocked() const { return !blocks_.empty(); }
    bool is_row_major() const;  // dense C-order, no blocks

    dim_t offset(std::span<const dim_t> coord) const;
    dim_t offset(std::initializer_list<dim_t> coord) const {
        return offset(std::span<const dim_t>(coord.begin(), coord.size()));
    }

    // Physical view: the storage as a dense tensor, outermost first, e.g. for NC1HWC0 with C0 = 16
    // "NC1HWC0 (2,1,4,5,16):(320,320,80,16,1)"; for a strided layout "NCHW (2,3,4,5):(60,20,5,1)".
    std::string str() const;

    bool operator==(const Layout&) const = default;

  private:
    std::string name_;
    std::vector<dim_t> dims_;
    std::vector<dim_t> outer_strides_;
    std::vector<InnerBlock> blocks_;
    std::vector<int> outer_order_;  // for printing the physical view
    dim_t storage_ = 0;
};

}  // namespace convlab
