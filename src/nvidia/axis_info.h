// Axis-info analysis: for each integer or pointer value, per dimension, how
// long its runs of consecutive values are (contiguity), the largest power of 2
// dividing the first value of each run (divisibility; bytes for pointers), and
// how long its runs of equal values are (constancy). Drives vectorized,
// coalesced loads and stores, as in Triton.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "nvidia/rank_vector.h"

namespace tilec::nvidia {

struct AxisInfo {
  struct Dim {
    int64_t contiguity = 1, divisibility = 1, constancy = 1;
    bool operator==(const Dim &o) const {
      return contiguity == o.contiguity && divisibility == o.divisibility &&
             constancy == o.constancy;
    }
  };
  // One entry per dim; scalars have one entry.
  RankVector<Dim> dims;
};

using AxisInfoMap = std::unordered_map<const Value *, AxisInfo>;

// Analyzes every value of `fn`; values not in the map are unknown (all 1s).
AxisInfoMap analyzeAxisInfo(const Function &fn);

// The info of `v`, or the pessimistic one.
AxisInfo axisInfoOf(const AxisInfoMap &map, const Value *v);

// What is known of the addresses a block pointer covers, per dim of its
// block: whether the dim's stride is the constant 1, the powers of 2 dividing
// its stride, its offset and its shape (elements), and the base's (bytes);
// `order` is make_block_ptr's. Traced through advance and loop-carried block
// pointers that each iteration advances; nullopt where the origin is unknown.
struct BlockPtrInfo {
  std::vector<bool> unitStride;
  std::vector<int64_t> strideDivisibility, offsetDivisibility, shapeDivisibility;
  int64_t baseDivisibility = 1;
  std::vector<int64_t> order;
};
std::optional<BlockPtrInfo> blockPtrInfo(const AxisInfoMap &map, const Value *blockPtr);

} // namespace tilec::nvidia
