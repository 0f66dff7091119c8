// Internal: std::bit_cast where the standard library has it; emscripten's libc++ 14 does not, and
// GCC and clang both have the builtin it is made of.
#pragma once

#include <bit>

namespace convlab::detail {

template <class To, class From>
constexpr To bit_cast(const From& from) noexcept {
#if defined(__cpp_lib_bit_cast)
    return std::bit_cast<To>(from);
#else
    return __builtin_bit_cast(To, from);
#endif
}

}  // namespace convlab::detail
