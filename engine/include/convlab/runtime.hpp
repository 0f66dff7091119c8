// What a program that times the engine needs to know of it at run time, and to tidy after it:
// the vector ISA its kernels chose, and the per-thread work buffers they keep between calls.
#pragma once

namespace convlab {

// The vector ISA of the kernels in use, chosen when the program starts (the best the CPU has,
// capped by CONVLAB_ISA): "avx512", "avx2" or "portable".
const char* kernel_isa();

// Frees the per-thread work buffers the algorithms keep between calls (kept so that repeated
// calls fault no pages in) of the calling thread and, outside a parallel region, of the OpenMP
// threads. The next call allocates them again.
void release_work_buffers();

}  // namespace convlab
