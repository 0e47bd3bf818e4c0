// The GPU layout pass: on the backend's copy of a kernel, gives every dot
// that runs on the tensor cores its accumulator layout as the encoding of
// its result type, and makes the accumulator operand arrive in it with an
// explicit gpu.convert_layout. A loop-carried accumulator (acc = dot(a, b,
// acc) yielded back) is encoded as the loop's argument and result, and
// converted once, before the loop. The lowering reads the encodings.
#include "nvidia/assign_layouts.h"

#include <algorithm>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

size_t positionOf(const Block &block, const Op *op) {
  for (size_t i = 0; i < block.ops.size(); ++i)
    if (block.ops[i].get() == op)
      return i;
  throw std::logic_error("op not in its parent block");
}

// Whether `arg` is a for loop's carried argument that the loop yields `result` back into.
Op *loopCarrying(const Value *arg, const Value *result) {
  Block *body = arg->owner;
  if (!body || !body->parent || body->parent->kind != OpKind::For || arg->index == 0)
    return nullptr;
  const Op *yield = body->terminator();
  return yield && yield->operand(arg->index - 1) == result ? body->parent : nullptr;
}

} // namespace

Value *convertBefore(Op *user, Value *v, const std::shared_ptr<const LayoutEncoding> &e) {
  Block &block = *user->parent;
  Op *convert = insertOp(block, positionOf(block, user), OpKind::ConvertLayout, {v},
                         v->type.withEncoding(e), user->loc);
  return convert->result();
}

void assignLayouts(Function &fn, const GpuOptions &opts) {
  std::vector<Op *> dots;
  walk(*fn.body, [&](Op *op) {
    if (op->kind == OpKind::Dot)
      dots.push_back(op);
  });
  for (Op *dot : dots) {
    std::shared_ptr<const LayoutEncoding> e = accumulatorEncoding(*dot, opts);
    if (!e)
      continue; // the FMA path: no tensor-core layout
    Value *result = dot->result();
    result->type = result->type.withEncoding(e);
    Value *acc = dot->operand(2);
    if (Op *loop = loopCarrying(acc, result)) {
      int k = acc->index - 1; // which carried value
      acc->type = acc->type.withEncoding(e);
      loop->result(k)->type = loop->result(k)->type.withEncoding(e);
      loop->operands[3 + k] = convertBefore(loop, loop->operand(3 + k), e);
    } else if (!acc->type.sameEncoding(result->type)) {
      dot->operands[2] = convertBefore(dot, acc, e);
    }
  }
}

} // namespace tilec::nvidia
