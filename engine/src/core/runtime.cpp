// The engine's run-time facts and housekeeping for programs that time it (convlab/runtime.hpp).
#include "convlab/runtime.hpp"

#include "microkernel.hpp"
#include "x86.hpp"

namespace convlab {

const char* kernel_isa() {
    return detail::runtime_isa();
}

void release_work_buffers() {
    detail::release_scratch();
}

}  // namespace convlab
