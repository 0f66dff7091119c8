// The fast paths' rules chosen from the environment, for the command line and the benchmark:
// they build one Tuning at start and pass it to every call (the engine reads no environment for
// them). docs/algorithms.md lists the variables.
#pragma once

#include "convlab/tuning.hpp"

namespace convlab {

// A default Tuning with the environment's choices: CONVLAB_GEMM=eigen takes Eigen's GEMM core
// for the column-matrix algorithms (any other value: the blocked core); CONVLAB_READ_A=packed
// packs the blocked GEMM's row-major A (read_a Never); CONVLAB_TRANSPOSED=on|off forces its
// transposed products (transposed_products Always or Never). Other values leave the default.
Tuning tuning_from_environment();

}  // namespace convlab
