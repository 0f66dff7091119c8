// The microkernels a test can run on this CPU, and a guard that restores the selected one.
#pragma once

#include <string>
#include <vector>

#include "../engine/src/gemm/microkernel.hpp"

namespace convlab::test {

// Selects back, when it goes out of scope, the microkernel selected when it was made.
struct KernelGuard {
    std::string before = detail::microkernel().isa;
    ~KernelGuard() { detail::select_microkernel(before.c_str()); }
};

// The ISA names of the microkernels this CPU can run, best first.
inline std::vector<std::string> isas() {
    int nk = 0;
    const detail::MicroKernel* uks = detail::microkernels(nk);
    std::vector<std::string> v;
    for (int u = 0; u < nk; ++u) v.emplace_back(uks[u].isa);
    return v;
}

}  // namespace convlab::test
