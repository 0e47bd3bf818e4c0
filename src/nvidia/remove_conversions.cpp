// The conversion cleanup pass: a gpu.convert_layout between two equal
// layouts moves nothing, so its users read its operand instead and it goes.
// (Conversions that move data stay; the lowering recomputes cheap values in
// the layout asked for instead of moving them.)
#include "nvidia/remove_conversions.h"

#include "nvidia/linear_layout.h"

namespace tilec::nvidia {

namespace {

bool isIdentity(const Op &op) {
  if (op.kind != OpKind::ConvertLayout)
    return false;
  const LayoutEncoding *from = layoutEncoding(op.operand(0)->type);
  const LayoutEncoding *to = layoutEncoding(op.result()->type);
  return from && to && from->layout == to->layout;
}

void removeIn(Block &block, Block &root) {
  for (size_t i = 0; i < block.ops.size();) {
    Op &op = *block.ops[i];
    for (auto &region : op.regions)
      removeIn(*region, root);
    if (!isIdentity(op)) {
      ++i;
      continue;
    }
    replaceAllUses(root, op.result(), op.operand(0));
    block.ops.erase(block.ops.begin() + (long)i);
  }
}

} // namespace

void removeConversions(Function &fn, const GpuOptions &) { removeIn(*fn.body, *fn.body); }

} // namespace tilec::nvidia
