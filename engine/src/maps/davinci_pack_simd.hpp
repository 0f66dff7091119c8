// Internal: the vector kernels of the activation pack and unpack (davinci_kernels.cpp), a run of
// positions of one plane (n, d, c1) at a time: C0 channel rows of positions <-> position rows of
// C0 lanes, transposed in registers. Compiled per function for their ISA (target attributes) and
// chosen at run time by detail::selected_isa(), as the GEMM core's kernels are; none in a
// CONVLAB_PORTABLE build.
#pragma once

#include "convlab/problem.hpp"
#include "convlab/tensor.hpp"

namespace convlab::davinci::internal {

// Packs positions [0, len) of one plane: channel ci < valid holds its positions at
// src + ci * stride; out receives len rows of C0 lanes, the lanes >= valid zero. The bf16 and
// fp16 runs round each value to the storage type and widen it back in registers, the bits of
// detail::round_storage.
using PackRun = void (*)(const float* src, dim_t stride, dim_t valid, dim_t len, float* out);
// The run for c0 and the storage type under the selected ISA: C0 16 (AVX-512, AVX2), 8 and 4
// (AVX2 and above; fp16 where the CPU has F16C); null for any other C0 and on the portable level.
PackRun pack_run(dim_t c0, DType storage);

// A PackRun for any C0 and storage type, resolved once: the vector run where there is one for
// (c0, storage), else the fp32 run (or, portable, a scalar interleave) over the rows copied with
// rounding into a tile, 64 positions at a time. The activation pack's and the weight gradient's
// packs from NCHW.
class PositionPack {
  public:
    PositionPack(dim_t c0, DType storage);
    // As PackRun: positions [0, len) of channel rows ci < valid at src + ci * stride into out.
    void operator()(const float* src, dim_t stride, dim_t valid, dim_t len, float* out) const;

  private:
    dim_t c0_;
    PackRun direct_, run_;
    void (*copy_)(const float*, float*, dim_t);
};

// Unpacks len rows of C0 lanes at in into channel ci < valid at dst + ci * stride; the lanes
// >= valid are not written anywhere.
using UnpackRun = void (*)(const float* in, dim_t valid, dim_t len, float* dst, dim_t stride);
// The run for c0 under the selected ISA: the AVX2 runs of C0 16, 8 and 4 under AVX2 and AVX-512;
// null for any other C0 and on the portable level.
UnpackRun unpack_run(dim_t c0);

}  // namespace convlab::davinci::internal
