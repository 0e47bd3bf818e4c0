// What the loop passes (flatten, unroll) compute about a for loop, and how
// they put their loops in its place.
#include "passes/passes.h"

namespace tilec {

int64_t constantOf(const Value *v, bool &known) {
  known = v->def && v->def->kind == OpKind::Constant && v->type.isScalar() &&
          std::holds_alternative<int64_t>(*v->def->attr("value"));
  return known ? v->def->intAttr("value") : 0;
}

Value *tripCount(Builder &b, Value *lb, Value *ub, Value *step) { // (signed types)
  Type t = lb->type;
  bool known;
  int64_t c = constantOf(step, known);
  Value *span, *size;
  if (known) {
    span = c > 0 ? b.create1(OpKind::Sub, {ub, lb}, t) : b.create1(OpKind::Sub, {lb, ub}, t);
    size = b.constInt(c > 0 ? c : -c, t);
  } else { // a step of either sign: both ways round
    Value *up = b.create1(OpKind::CmpGt, {step, b.constInt(0, t)}, Type::scalar(DType::I1));
    span = b.create1(OpKind::Select,
                     {up, b.create1(OpKind::Sub, {ub, lb}, t), b.create1(OpKind::Sub, {lb, ub}, t)},
                     t);
    size = b.create1(OpKind::Abs, {step}, t);
  }
  Value *most = b.create1(OpKind::Sub, {size, b.constInt(1, t)}, t);
  Value *n = b.create1(OpKind::IDiv, {b.create1(OpKind::Add, {span, most}, t), size}, t);
  return b.create1(OpKind::Max, {n, b.constInt(0, t)}, t);
}

size_t replaceOp(Block &block, size_t at,
                 const std::function<void(Builder &, std::unique_ptr<Op>)> &build) {
  std::unique_ptr<Op> op = std::move(block.ops[at]);
  std::vector<std::unique_ptr<Op>> after;
  for (size_t k = at + 1; k < block.ops.size(); ++k)
    after.push_back(std::move(block.ops[k]));
  block.ops.resize(at);
  Builder b(&block);
  b.setLoc(op->loc);
  build(b, std::move(op));
  size_t replaced = block.ops.size() - at;
  for (auto &moved : after)
    block.ops.push_back(std::move(moved));
  return replaced;
}

} // namespace tilec
