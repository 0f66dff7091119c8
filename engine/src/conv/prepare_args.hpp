// Internal: the argument checks of both prepare_weights (convlab's in implicit_gemm.cpp, the
// fractal layout's in fractal_pack.cpp), written once so that both refuse the same input with
// the same message.
#pragma once

#include <string>

#include "convlab/conv.hpp"

namespace convlab::detail {

// Error unless p is valid, pass is one whose weights are packed (fwd, bwd_data) and wei is set.
inline void check_prepare_args(const Problem& p, Pass pass, const float* wei) {
    p.check();
    if (pass != Pass::Forward && pass != Pass::BackwardData)
        throw Error(std::string("pass: weights are prepared for fwd and bwd_data, not ") +
                    pass_name(pass));
    if (!wei) throw Error("wei: null weights");
}

}  // namespace convlab::detail
