// .npy files (NumPy format 1.0/2.0/3.0): fp32, little-endian, C order only. Anything else is
// refused with an Error that says what the file holds and what is expected.
#pragma once

#include <string>

#include "convlab/tensor.hpp"

namespace convlab {

Tensor read_npy(const std::string& path);
// Writes atomically under the rules of output_file.hpp (a temporary beside the target, renamed
// over it when complete; symlinks written through; devices and FIFOs refused), so
// a failure never leaves a partial file. Throws Error (e.g. "cannot write out.npy: ...").
void write_npy(const std::string& path, const Tensor& t);

}  // namespace convlab
