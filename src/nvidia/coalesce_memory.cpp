// The coalescing pass, as Triton's: the addresses of a load or store are
// ordered by how far axis info proves them contiguous along each dim, and the
// access gets a blocked layout with that order, each thread holding a vector
// along the most contiguous dim. A load whose order is not row-major gets the
// layout as the encoding of its result (row-major ones keep the kernel's
// default layout, which is the same). A store's value is moved into the layout
// by a gpu.convert_layout, so that a dot's accumulator, whose fragments are
// narrow, goes out in 16-byte vectors; a value already in the layout makes the
// conversion free. A conversion that moves data goes through shared memory
// whole, so values over 64 KiB are stored in their own layout instead.
#include "nvidia/coalesce_memory.h"

#include <algorithm>
#include <numeric>

#include "nvidia/assign_layouts.h"
#include "nvidia/axis_info.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

constexpr int64_t kMaxConvertBytes = 64 * 1024;

// Dims from the most contiguous to the least; ties keep the last dim first.
std::vector<int> contiguityOrder(const std::vector<int64_t> &contiguity) {
  std::vector<int> order(contiguity.size());
  std::iota(order.rbegin(), order.rend(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return contiguity[a] > contiguity[b]; });
  return order;
}

} // namespace

void coalesceMemory(Function &fn, const GpuOptions &opts) {
  AxisInfoMap info = analyzeAxisInfo(fn);
  int minBytes = minAccessBytes(fn);
  std::vector<Op *> accesses;
  walk(*fn.body, [&](Op *op) {
    if ((op->kind == OpKind::Load || op->kind == OpKind::Store) && op->operand(0)->type.isTensor())
      accesses.push_back(op);
  });
  for (Op *op : accesses) {
    const Type &ptr = op->operand(0)->type;
    std::vector<int> order = contiguityOrder(axisInfoOf(info, op->operand(0)).contiguity);
    auto e = std::make_shared<LayoutEncoding>(
        "blocked", blockedLayout(ptr.shape, defaultVector(ptr.shape, minBytes, opts.numWarps),
                                 opts.numWarps, order));
    if (op->kind == OpKind::Load) {
      if (order[0] != ptr.rank() - 1)
        op->result()->type = op->result()->type.withEncoding(e);
      continue;
    }
    Value *value = op->operand(1);
    bool fits = value->type.isTensor() &&
                value->type.numel() * storageBytes(value->type.dtype) <= kMaxConvertBytes;
    if (fits && !value->type.sameEncoding(value->type.withEncoding(e)))
      op->operands[1] = convertBefore(op, value, e);
  }
}

} // namespace tilec::nvidia
