// Internal: the engine's x86 vector code is compiled per function for its ISA (target
// attributes) and chosen at run time, so that one build runs on any x86-64 at the speed of the
// CPU it runs on. CONVLAB_X86 is 1 where that code exists: x86-64 with GCC or Clang, unless the
// build is CONVLAB_PORTABLE (no intrinsics at all: other CPUs, WebAssembly).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CONVLAB_PORTABLE)
#define CONVLAB_X86 1
#else
#define CONVLAB_X86 0
#endif

#if CONVLAB_X86
#include <cpuid.h>
#endif

// Loops that GCC vectorises itself (the Winograd transforms): compiled for AVX-512
// (x86-64-v4), AVX2 + FMA (x86-64-v3) and the baseline, the best the CPU has chosen when the
// program loads (an ifunc). Empty where the whole build already targets such a CPU (-march=native)
// or has no x86 code. Helpers they call are always inlined, so that they get each clone's ISA.
// None under ThreadSanitizer: the ifunc resolvers run while the program loads, before the
// sanitizer's runtime starts, and instrumented they crash it (the baseline code is used).
#if CONVLAB_X86 && defined(__ELF__) && !defined(__AVX2__) && !defined(__SANITIZE_THREAD__)
#define CONVLAB_ISA_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CONVLAB_ISA_CLONES
#endif

namespace convlab::detail {

// Vector ISA levels of the engine's kernels, lowest first.
enum class Isa { portable = 0, avx2 = 1, avx512 = 2 };

// The level of the microkernel in use (microkernel.cpp): the best the CPU has, capped by
// CONVLAB_ISA or select_microkernel. The other vector code of the engine follows it.
Isa selected_isa();

// Its name: avx512 | avx2 | portable.
const char* runtime_isa();

#if CONVLAB_X86
// What the CPU has (cpuid, read once).
inline bool cpu_has_avx512f() {
    static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));
    return has;
}
inline bool cpu_has_avx2_fma() {
    static const bool has =
        (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
    return has;
}
// F16C (cpuid leaf 1, ecx bit 29: vcvtps2ph / vcvtph2ps), which fp16's conversions on 8 lanes
// need; read from cpuid itself, because Clang's __builtin_cpu_supports does not know "f16c".
inline bool cpu_has_f16c() {
    static const bool has = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
    }();
    return has;
}
inline bool cpu_has_bmi2() {
    static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("bmi2"));
    return has;
}
#endif

}  // namespace convlab::detail
