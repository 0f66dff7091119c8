#include "convlab/tensor.hpp"
#include "bf16.hpp"
#include "bit_cast.hpp"

#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

namespace convlab {

std::size_t dtype_size(DType t) {
    return t == DType::f32 ? 4 : 2;
}

const char* dtype_name(DType t) {
    switch (t) {
        case DType::f32:
            return "fp32";
        case DType::f16:
            return "fp16";
        case DType::bf16:
            return "bf16";
    }
    return "?";
}

DType parse_dtype(std::string_view s) {
    if (s == "fp32" || s == "f32") return DType::f32;
    if (s == "fp16" || s == "f16") return DType::f16;
    if (s == "bf16") return DType::bf16;
    throw Error("dtype '" + std::string(s) + "': expected fp32, fp16 or bf16");
}

// IEEE binary16, round to nearest even, with subnormals, infinities and NaN.
std::uint16_t float_to_half(float f) {
    const std::uint32_t x = detail::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)  // Inf or NaN
        return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow
    if (absx < 0x38800000u) {  // result is subnormal or zero
        if (absx < 0x33000000u) return static_cast<std::uint16_t>(sign);
        const std::uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        const int shift = 126 - static_cast<int>(absx >> 23);  // 14 + (113 - exp)
        std::uint32_t h = mant >> (shift);
        const std::uint32_t rem = mant & ((1u << shift) - 1);
        const std::uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    std::uint32_t h = ((absx - 0x38000000u) >> 13);
    const std::uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            x = sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    return detail::bit_cast<float>(x);
}

std::uint16_t float_to_bf16(float f) {
    return detail::bf16_of_bits(detail::bit_cast<std::uint32_t>(f));
}

float bf16_to_float(std::uint16_t b) {
    return detail::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

Tensor seeded_integers(std::vector<dim_t> dims, std::uint64_t seed, std::uint64_t salt) {
    Tensor t(std::move(dims));
    float* data = t.f32();
    std::uint64_t state = seed ^ (salt * 0xd1b54a32d192ed03ull);
    for (dim_t i = 0; i < t.numel(); ++i) {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        data[i] = static_cast<float>(static_cast<int>(z % 7) - 3);
    }
    return t;
}

dim_t product(std::span<const dim_t> dims) {
    dim_t p = 1;
    for (dim_t d : dims)
        if (__builtin_mul_overflow(p, d, &p))
            throw Error("dims " + dims_str(dims) + ": element count overflows 64 bits");
    return p;
}

std::string dims_str(std::span<const dim_t> dims) {
    std::ostringstream s;
    s << "(";
    for (std::size_t i = 0; i < dims.size(); ++i) s << (i ? "," : "") << dims[i];
    s << ")";
    return s.str();
}

void Tensor::Free::operator()(std::byte* p) const {
    ::operator delete[](p, std::align_val_t{kTensorAlignment});
}

Tensor::Tensor(std::vector<dim_t> dims, DType dtype)
    : Tensor(Layout::row_major(std::move(dims)), dtype) {}

Tensor::Tensor(Layout layout, DType dtype) : layout_(std::move(layout)), dtype_(dtype) {
    allocate();
}

void Tensor::allocate() {
    const dim_t n = layout_.storage_size();
    const std::size_t es = dtype_size(dtype_);
    if (n < 0 || static_cast<std::size_t>(n) > kMaxTensorBytes / es)
        throw Error("tensor " + dims_str(layout_.dims()) + " " + dtype_name(dtype_) +
                    " would need " +
                    std::to_string(static_cast<double>(n) * static_cast<double>(es) / 1e9) +
                    " GB: more than the " + std::to_string(kMaxTensorBytes >> 30) +
                    " GiB limit of one tensor");
    bytes_ = static_cast<std::size_t>(n) * es;
    if (bytes_ == 0) {
        data_.reset();
        return;
    }
    auto* p = static_cast<std::byte*>(
        ::operator new[](bytes_, std::align_val_t{kTensorAlignment}, std::nothrow));
    if (!p)
        throw Error("tensor " + dims_str(layout_.dims()) + ": out of memory allocating " +
                    std::to_string(bytes_) + " bytes");
    std::memset(p, 0, bytes_);  // padding lanes of blocked layouts stay zero
    data_.reset(p);
}

Tensor::Tensor(const Tensor& other) : layout_(other.layout_), dtype_(other.dtype_) {
    allocate();
    if (bytes_) std::memcpy(data_.get(), other.data_.get(), bytes_);
}

Tensor& Tensor::operator=(const Tensor& other) {
    if (this != &other) {
        Tensor copy(other);
        *this = std::move(copy);
    }
    return *this;
}

float* Tensor::f32() {
    if (dtype_ != DType::f32)
        throw Error(std::string("tensor holds ") + dtype_name(dtype_) + ", fp32 access asked");
    return reinterpret_cast<float*>(data_.get());
}

const float* Tensor::f32() const {
    return const_cast<Tensor*>(this)->f32();
}

float Tensor::get_offset(dim_t off) const {
    const std::byte* base = data_.get();
    switch (dtype_) {
        case DType::f32: {
            float v;
            std::memcpy(&v, base + off * 4, 4);
            return v;
        }
        case DType::f16:
        case DType::bf16: {
            std::uint16_t h;
            std::memcpy(&h, base + off * 2, 2);
            return dtype_ == DType::f16 ? half_to_float(h) : bf16_to_float(h);
        }
    }
    return 0;
}

void Tensor::set_offset(dim_t off, float v) {
    std::byte* base = data_.get();
    switch (dtype_) {
        case DType::f32:
            std::memcpy(base + off * 4, &v, 4);
            return;
        case DType::f16:
        case DType::bf16: {
            const std::uint16_t h = dtype_ == DType::f16 ? float_to_half(v) : float_to_bf16(v);
            std::memcpy(base + off * 2, &h, 2);
            return;
        }
    }
}

float Tensor::get(std::span<const dim_t> coord) const {
    return get_offset(layout_.offset(coord));
}

void Tensor::set(std::span<const dim_t> coord, float v) {
    set_offset(layout_.offset(coord), v);
}

void Tensor::coord_of(dim_t linear, std::span<dim_t> coord) const {
    const auto& d = dims();
    for (int i = rank() - 1; i >= 0; --i) {
        coord[i] = d[i] ? linear % d[i] : 0;
        linear = d[i] ? linear / d[i] : 0;
    }
}

void Tensor::fill(float v) {
    std::vector<dim_t> c(static_cast<std::size_t>(rank()));
    for (dim_t i = 0; i < numel(); ++i) {
        coord_of(i, c);
        set(c, v);
    }
}

std::string Tensor::shape_str() const {
    return dims_str(dims());
}

}  // namespace convlab
