// Number formats on the CPU: values are held as int64 (integers, pointers)
// or double (floats) and brought back to their Tile IR type after each op.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/types.h"

namespace tilec::cpu {

// Wraps an integer to the width and signedness of `d`, as the hardware would.
int64_t wrapInt(int64_t v, DType d);
void wrapInts(std::vector<int64_t> &v, DType d);

// Rounds to the nearest value of float type `d` (ties to even). fp8 saturates
// to its largest finite value; f16 and bf16 overflow to infinity.
double roundFloat(double x, DType d);
void roundFloats(std::vector<double> &v, DType d);

// The bits of float `x` (already representable in `d`) and back.
uint64_t floatToBits(double x, DType d);
double bitsToFloat(uint64_t bits, DType d);

// Rounds an f32 value to tf32 (10 mantissa bits), as tensor cores read it.
double roundToTf32(double x);

} // namespace tilec::cpu
