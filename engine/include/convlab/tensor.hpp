// Tensor: logical dims, a Layout, a dtype and aligned, zero-initialised owning storage.
// fp32 is computed on directly; fp16 and bf16 are storage types read and written as fp32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "convlab/layout.hpp"

namespace convlab {

enum class DType { f32, f16, bf16 };
std::size_t dtype_size(DType t);
const char* dtype_name(DType t);
DType parse_dtype(std::string_view s);  // "fp32" | "fp16" | "bf16"; throws Error

// Round-to-nearest-even conversions.
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);
float bf16_to_float(std::uint16_t b);

inline constexpr std::size_t kTensorAlignment = 64;

// Largest storage a single tensor may ask for; bigger requests throw Error instead of trying.
// 16 GiB, or half the address space where size_t is 32 bits (WebAssembly), where 16 GiB would
// wrap to 0 and refuse every tensor.
inline constexpr std::size_t kMaxTensorBytes =
    sizeof(std::size_t) >= 8 ? static_cast<std::size_t>(std::uint64_t{16} << 30)
                             : static_cast<std::size_t>(-1) / 2;

class Tensor {
  public:
    Tensor() = default;
    // Dense row-major fp32 (or other dtype) tensor.
    explicit Tensor(std::vector<dim_t> dims, DType dtype = DType::f32);
    Tensor(Layout layout, DType dtype);

    Tensor(Tensor&&) noexcept = default;
    Tensor& operator=(Tensor&&) noexcept = default;
    Tensor(const Tensor& other);
    Tensor& operator=(const Tensor& other);

    const std::vector<dim_t>& dims() const { return layout_.dims(); }
    const Layout& layout() const { return layout_; }
    DType dtype() const { return dtype_; }
    dim_t numel() const { return layout_.numel(); }
    int rank() const { return layout_.rank(); }
    std::size_t bytes() const { return bytes_; }
    bool empty() const { return bytes_ == 0; }

    // Raw fp32 storage (throws Error unless dtype is f32).
    float* f32();
    const float* f32() const;
    void* raw() { return data_.get(); }
    const void* raw() const { return data_.get(); }

    // Element access through the layout, converting to/from fp32.
    float get(std::span<const dim_t> coord) const;
    void set(std::span<const dim_t> coord, float v);
    float get_offset(dim_t off) const;
    void set_offset(dim_t off, float v);

    // Logical row-major linear index <-> coordinate.
    void coord_of(dim_t linear, std::span<dim_t> coord) const;

    void fill(float v);
    std::string shape_str() const;  // "(2,3,4,5)"

  private:
    struct Free {
        void operator()(std::byte* p) const;
    };
    Layout layout_;
    DType dtype_ = DType::f32;
    std::size_t bytes_ = 0;
    std::unique_ptr<std::byte[], Free> data_;
    void allocate();
};

std::string dims_str(std::span<const dim_t> dims);  // "(2,3,4,5)"
dim_t product(std::span<const dim_t> dims);

// Integers in [-3, 3] from splitmix64: sums of them stay exact in fp32, so every algorithm gives
// the same bits whatever its summation order. `salt` separates the tensors of one seed. The
// sequence of `convlab compute --seed` and of the lessons' generated data.
Tensor seeded_integers(std::vector<dim_t> dims, std::uint64_t seed, std::uint64_t salt);

}  // namespace convlab
