#include "convlab/tuning_env.hpp"

#include <cstdlib>
#include <string_view>

namespace convlab {

Tuning tuning_from_environment() {
    Tuning t;
    const char* gemm = std::getenv("CONVLAB_GEMM");
    if (gemm && std::string_view(gemm) == "eigen") t.gemm_core = GemmCore::eigen;
    return t;
}

}  // namespace convlab
