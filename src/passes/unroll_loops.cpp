// Requires: verified IR. Preserves: semantics, verified form. Invalidates:
// value ids.
//
// `tl.range(..., loop_unroll_factor=F)`, F > 1: the loop runs F bodies per
// iteration over the first n - n % F of its n iterations (each body at the
// induction variable plus j steps, reading the carried values the one before
// yields), then a loop as written runs the iterations left. That loop has
// fewer than F iterations: it is not pipelined.
#include "passes/passes.h"

namespace tilec {

namespace {

using ValueMap = std::unordered_map<const Value *, Value *>;

// Appends the unrolled loop, then `loop` itself for the iterations left.
void unroll(Builder &b, std::unique_ptr<Op> loop, int64_t factor) {
  Value *lb = loop->operand(0), *ub = loop->operand(1), *step = loop->operand(2);
  const Block &body = *loop->regions[0];
  Type t = lb->type;
  Value *n = tripCount(b, lb, ub, step);
  Value *f = b.constInt(factor, t);
  Value *whole = b.create1(OpKind::Mul, {b.create1(OpKind::IDiv, {n, f}, t), f}, t);
  Value *mainEnd = b.create1(OpKind::Add, {lb, b.create1(OpKind::Mul, {whole, step}, t)}, t);
  Value *bigStep = b.create1(OpKind::Mul, {step, f}, t);
  std::vector<Value *> steps = {nullptr}; // j steps, for the j-th body
  for (int64_t j = 1; j < factor; ++j)
    steps.push_back(b.create1(OpKind::Mul, {step, b.constInt(j, t)}, t));
  std::vector<Type> types;
  for (auto &r : loop->results)
    types.push_back(r->type);
  std::vector<Value *> operands = {lb, mainEnd, bigStep};
  operands.insert(operands.end(), loop->operands.begin() + 3, loop->operands.end());
  Op *main = b.create(OpKind::For, operands, types, 1);
  main->attrs = loop->attrs;
  main->setAttr("loop_unroll_factor", int64_t(1));
  Block &mb = *main->regions[0];
  Value *iv = mb.addArg(t);
  std::vector<Value *> carried;
  for (size_t k = 1; k < body.args.size(); ++k)
    carried.push_back(mb.addArg(body.args[k]->type));
  Builder in(&mb);
  in.setLoc(loop->loc);
  for (int64_t j = 0; j < factor; ++j) {
    ValueMap map;
    map[body.args[0].get()] = j == 0 ? iv : in.create1(OpKind::Add, {iv, steps[j]}, t);
    for (size_t k = 0; k < carried.size(); ++k)
      map[body.args[k + 1].get()] = carried[k];
    for (size_t k = 0; k + 1 < body.ops.size(); ++k)
      cloneOp(*body.ops[k], mb, map);
    for (size_t k = 0; k < carried.size(); ++k) {
      Value *y = body.terminator()->operand((int)k);
      carried[k] = map.count(y) ? map[y] : y;
    }
  }
  in.create(OpKind::Yield, carried, {});
  // The iterations left: the loop as written, from where the unrolled one ends.
  loop->operands[0] = mainEnd;
  for (size_t k = 0; k < main->results.size(); ++k)
    loop->operands[3 + k] = main->result((int)k);
  loop->setAttr("loop_unroll_factor", int64_t(1));
  loop->setAttr("num_stages", int64_t(1));
  loop->parent = b.block();
  b.block()->ops.push_back(std::move(loop));
}

bool unrollIn(Block &block) {
  bool changed = false;
  for (size_t k = 0; k < block.ops.size(); ++k) {
    Op *op = block.ops[k].get();
    for (auto &region : op->regions)
      changed |= unrollIn(*region);
    int64_t factor = op->kind == OpKind::For ? op->intAttr("loop_unroll_factor", 1) : 1;
    DType iv = op->kind == OpKind::For ? op->regions[0]->args[0]->type.dtype : DType::I32;
    if (iv != DType::I32 && iv != DType::I64)
      factor = 1; // (tripCount counts signed; kernels' loops are i32 or i64)
    if (factor > 1) {
      k += replaceOp(block, k, [&](Builder &b, std::unique_ptr<Op> loop) {
             unroll(b, std::move(loop), factor);
           }) - 1; // the remainder loop, last of what replaced it
      changed = true;
    }
  }
  return changed;
}

} // namespace

bool unrollLoops(Function &fn) {
  if (!unrollIn(*fn.body))
    return false;
  foldConstants(fn); // the trip count's arithmetic on constants
  return true;
}

} // namespace tilec
