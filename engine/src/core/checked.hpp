// Internal: overflow-checked size arithmetic.
//
// Sizes derived from a problem (products of up to seven factors of up to 2^31 each) can exceed
// 64 bits, and a signed overflow is undefined behaviour. Everything that sizes a buffer or
// bounds a plane before the work starts goes through these: a result that does not fit
// saturates at kHugeSize, which no budget or size limit admits, so the caller refuses it (or
// takes another path) instead of computing with a wrapped value. Operands are >= 0.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

#include "convlab/problem.hpp"

namespace convlab::detail {

inline constexpr dim_t kHugeSize = std::numeric_limits<dim_t>::max();

inline dim_t sat_mul(dim_t a, dim_t b) {
    dim_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kHugeSize : r;
}

inline dim_t sat_add(dim_t a, dim_t b) {
    dim_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? kHugeSize : r;
}

inline dim_t sat_mul(std::initializer_list<dim_t> factors) {
    dim_t r = 1;
    for (dim_t f : factors) r = sat_mul(r, f);
    return r;
}

}  // namespace convlab::detail
