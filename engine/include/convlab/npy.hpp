// .npy files (NumPy format 1.0/2.0/3.0): fp32, little-endian, C order only. Anything else is
// refused with an Error that says what the file holds and what is expected. Index arrays (an
// index map's gather index) are written as int64 too.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "convlab/tensor.hpp"

namespace convlab {

Tensor read_npy(const std::string& path);
// Writes atomically under the rules of output_file.hpp (a temporary beside the target, renamed
// over it when complete; symlinks written through; devices and FIFOs refused), so
// a failure never leaves a partial file. Throws Error (e.g. "cannot write out.npy: ...").
void write_npy(const std::string& path, const Tensor& t);
// An int64 array ('<i8', C order) of shape dims, written under the same rules. fill(begin, end,
// out) writes elements [begin, end) of the C-order sequence to out[0 .. end - begin); it is
// called on consecutive ranges of at most kNpyChunk elements, so memory stays constant however
// large the array. Throws Error when the array would exceed kMaxTensorBytes.
inline constexpr std::int64_t kNpyChunk = std::int64_t{1} << 16;
void write_npy_int64(const std::string& path, std::span<const dim_t> dims,
                     const std::function<void(dim_t begin, dim_t end, std::int64_t* out)>& fill);

}  // namespace convlab
