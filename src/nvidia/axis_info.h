// Axis-info analysis: for each integer or pointer value, per dimension, how
// long its runs of consecutive values are (contiguity), the largest power of 2
// dividing the first value of each run (divisibility; bytes for pointers), and
// how long its runs of equal values are (constancy). Drives vectorized,
// coalesced loads and stores, as in Triton.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace tilec::nvidia {

struct AxisInfo {
  // One entry per dim; scalars have one entry.
  std::vector<int64_t> contiguity, divisibility, constancy;
};

using AxisInfoMap = std::unordered_map<const Value *, AxisInfo>;

// Analyzes every value of `fn`; values not in the map are unknown (all 1s).
AxisInfoMap analyzeAxisInfo(const Function &fn);

// The info of `v`, or the pessimistic one.
AxisInfo axisInfoOf(const AxisInfoMap &map, const Value *v);

} // namespace tilec::nvidia
