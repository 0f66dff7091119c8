// Internal: OpenMP's runtime calls, or their one-thread equivalents in a build without OpenMP
// (CONVLAB_PORTABLE: the compiler then ignores the `#pragma omp` lines and every loop runs on
// the calling thread).
#pragma once

#if defined(_OPENMP)
#include <omp.h>
#else
inline int omp_get_max_threads() {
    return 1;
}
inline int omp_get_num_threads() {
    return 1;
}
inline int omp_get_thread_num() {
    return 0;
}
inline int omp_get_num_procs() {
    return 1;
}
inline int omp_in_parallel() {
    return 0;
}
inline void omp_set_num_threads(int) {}
#endif
