// The browser build has no threads (they would need a cross-origin isolated page): a thread the
// app starts (a view's build, a lesson step's evaluation, a timings run) runs to its end at once
// on the calling thread, and joining it returns at once. These replace emscripten's stubs for a
// build without threads (weak symbols that fail with EAGAIN), so that the app's std::thread code
// is the same as on the desktop. The page does not repaint while such a job runs.
#include <pthread.h>

#include <cstdint>

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t*, void* (*start)(void*),
                              void* arg) {
    static std::uintptr_t next = 0x1000;  // a distinct non-null id for each (never dereferenced)
    *thread = reinterpret_cast<pthread_t>(next += 16);
    start(arg);
    return 0;
}

extern "C" int pthread_join(pthread_t, void** result) {
    if (result) *result = nullptr;
    return 0;
}

extern "C" int pthread_detach(pthread_t) {
    return 0;
}
