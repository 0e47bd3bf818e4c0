// Requires: verified IR, loop invariants hoisted. Preserves: semantics, verified
// form. Invalidates: value ids.
//
// `tl.range(..., flatten=True)`: a for whose body is some pure ops (P), one
// inner for with bounds the outer loop does not change, and anything after
// it (E) becomes one loop over every (outer, inner) pair of iterations:
//
//   for i in range(n_out * n_in):
//     t, k = lb + i // n_in * step, klb + i % n_in * kstep
//     P(t); acc = init if k is the first else acc
//     acc = inner body(k, acc)
//     if k is the last: E(t, acc)
//
// A persistent kernel's tiles then form one stream of iterations, so the
// inner loop's loads are copied ahead across tile boundaries instead of the
// pipeline draining and filling again at every tile (the outer loop's tile
// offsets are functions of i, recomputed for each copied iteration). E's
// branch computes t and P again for itself. When the inner loop may run no
// iteration, the outer loop runs without it instead.
#include <unordered_set>

#include "passes/passes.h"

namespace tilec {

namespace {

using ValueMap = std::unordered_map<const Value *, Value *>;

// The loop nest of a flattenable for: its inner loop and where it is.
struct Nest {
  Op *outer = nullptr, *inner = nullptr;
  size_t innerAt = 0;
  std::vector<bool> beforeForInner; // per op before the inner loop: the inner loop needs it
};

// Whether `outer` can be flattened; fills `nest`.
bool flattenable(Op *outer, Nest &nest) {
  Block &body = *outer->regions[0];
  int loops = 0;
  for (size_t k = 0; k < body.ops.size(); ++k)
    if (body.ops[k]->kind == OpKind::For || body.ops[k]->kind == OpKind::While) {
      ++loops;
      nest.inner = body.ops[k].get();
      nest.innerAt = k;
    }
  if (loops != 1 || nest.inner->kind != OpKind::For)
    return false;
  Op *inner = nest.inner;
  DType iv = body.args[0]->type.dtype;
  if ((iv != DType::I32 && iv != DType::I64) || inner->regions[0]->args[0]->type != body.args[0]->type)
    return false;
  for (int k = 0; k < 3; ++k)
    if (isDefinedIn(inner->operand(k), body))
      return false; // the inner trip count changes with the outer iteration
  // Values the inner loop carries start again at each outer iteration: numbers
  // only (pointers it advances would lose the inner loop's pipelining).
  for (size_t k = 3; k < inner->operands.size(); ++k) {
    DType d = inner->operand((int)k)->type.dtype;
    if (!isFloat(d) && !isInteger(d))
      return false;
  }
  // What the inner loop needs from before it runs at every iteration: pure ops only.
  std::unordered_set<const Value *> needed;
  for (Value *v : inner->operands)
    needed.insert(v);
  walk(*inner->regions[0], [&](Op *op) {
    for (Value *v : op->operands)
      needed.insert(v);
  });
  nest.beforeForInner.assign(nest.innerAt, false);
  for (size_t k = nest.innerAt; k-- > 0;) {
    Op &op = *body.ops[k];
    bool need = false;
    for (auto &r : op.results)
      need |= needed.count(r.get()) > 0;
    if (!op.has(PURE) || op.has(EFFECT))
      return false; // runs once per outer iteration, before the inner loop: left nested
    if (need) {
      if (!op.regions.empty())
        return false;
      nest.beforeForInner[k] = true;
      for (Value *v : op.operands)
        needed.insert(v);
    }
  }
  nest.outer = outer;
  return true;
}

// Builds the flattened loop at the end of `b`'s block; returns it.
Op *buildFlatLoop(Builder &b, const Nest &nest, Value *nIn) {
  const Op &outer = *nest.outer, &inner = *nest.inner;
  const Block &body = *outer.regions[0], &innerBody = *inner.regions[0];
  Type ivType = body.args[0]->type;
  Value *total = b.create1(
      OpKind::Mul, {tripCount(b, outer.operand(0), outer.operand(1), outer.operand(2)), nIn}, ivType);
  Value *lastK = b.create1(OpKind::Sub, {nIn, b.constInt(1, ivType)}, ivType);
  Value *zero = b.constInt(0, ivType);
  Value *outerStep = outer.operand(2), *innerStepV = inner.operand(2);
  // The inner loop's values start each outer iteration again (selected below):
  // what they start the loop with does not matter when known outside it.
  std::vector<Value *> operands = {zero, total, b.constInt(1, ivType)};
  std::vector<Type> types;
  for (size_t k = 3; k < outer.operands.size(); ++k) {
    operands.push_back(outer.operand((int)k));
    types.push_back(outer.operand((int)k)->type);
  }
  for (size_t k = 3; k < inner.operands.size(); ++k) {
    Value *init = inner.operand((int)k);
    if (isDefinedIn(init, body)) {
      const Type &t = init->type;
      init = isFloat(t.dtype) ? b.constFloat(0, t) : b.constInt(0, t);
    }
    operands.push_back(init);
    types.push_back(init->type);
  }
  Op *flat = b.create(OpKind::For, operands, types, 1);
  for (auto &[name, value] : inner.attrs)
    flat->setAttr(name, value);
  for (auto &[name, value] : outer.attrs)
    if (!inner.attr(name))
      flat->setAttr(name, value);
  flat->setAttr("flatten", int64_t(0));
  flat->setAttr("flat", int64_t(1)); // its body splits i into i / n_in and i % n_in, n_in > 0
  Block &fb = *flat->regions[0];
  Value *i = fb.addArg(ivType);
  ValueMap map;
  size_t numOuter = outer.operands.size() - 3;
  for (size_t k = 0; k < numOuter; ++k)
    map[body.args[k + 1].get()] = fb.addArg(types[k]);
  std::vector<Value *> innerArgs;
  for (size_t k = 3; k < inner.operands.size(); ++k)
    innerArgs.push_back(fb.addArg(types[numOuter + k - 3]));

  Builder in(&fb);
  in.setLoc(outer.loc);
  Value *q = in.create1(OpKind::IDiv, {i, nIn}, ivType);
  Value *r = in.create1(OpKind::IRem, {i, nIn}, ivType);
  map[body.args[0].get()] = in.create1(
      OpKind::Add, {outer.operand(0), in.create1(OpKind::Mul, {q, outerStep}, ivType)}, ivType);
  map[innerBody.args[0].get()] = in.create1(
      OpKind::Add, {inner.operand(0), in.create1(OpKind::Mul, {r, innerStepV}, ivType)}, ivType);
  Value *first = in.create1(OpKind::CmpEq, {r, zero}, Type::scalar(DType::I1));
  Value *last = in.create1(OpKind::CmpEq, {r, lastK}, Type::scalar(DType::I1));
  for (size_t k = 0; k < nest.innerAt; ++k) // what the inner loop reads
    if (nest.beforeForInner[k])
      cloneOp(*body.ops[k], fb, map);
  // Each inner value: its initial value at an outer iteration's first inner one.
  for (size_t k = 0; k < innerArgs.size(); ++k) {
    Value *init = map.count(inner.operand(3 + (int)k)) ? map[inner.operand(3 + (int)k)]
                                                         : inner.operand(3 + (int)k);
    Value *cond = first;
    if (init->type.isTensor())
      cond = in.create1(OpKind::Splat, {first}, init->type.withDType(DType::I1));
    map[innerBody.args[k + 1].get()] =
        in.create1(OpKind::Select, {cond, init, innerArgs[k]}, init->type);
  }
  for (size_t k = 0; k + 1 < innerBody.ops.size(); ++k)
    cloneOp(*innerBody.ops[k], fb, map);
  std::vector<Value *> innerOut;
  for (Value *v : innerBody.terminator()->operands)
    innerOut.push_back(map.count(v) ? map[v] : v);
  for (size_t k = 0; k < innerOut.size(); ++k)
    map[inner.result((int)k)] = innerOut[k];
  // After the last inner iteration: the rest of the outer body.
  std::vector<Type> outerTypes(types.begin(), types.begin() + (long)numOuter);
  Op *tail = in.create(OpKind::If, {last}, outerTypes, 2);
  Block &then = *tail->regions[0], &otherwise = *tail->regions[1];
  // The epilogue computes the outer iteration and what comes before the
  // inner loop again: what the body computes at every step then only feeds
  // the inner loop (the copies a pipeline keeps ahead, which need none of it).
  ValueMap tailMap;
  for (size_t k = 0; k < numOuter; ++k)
    tailMap[body.args[k + 1].get()] = map[body.args[k + 1].get()];
  for (size_t k = 0; k < innerOut.size(); ++k)
    tailMap[inner.result((int)k)] = innerOut[k];
  Builder tb(&then);
  tb.setLoc(outer.loc);
  Value *tq = tb.create1(OpKind::IDiv, {i, nIn}, ivType);
  tailMap[body.args[0].get()] = tb.create1(
      OpKind::Add, {outer.operand(0), tb.create1(OpKind::Mul, {tq, outerStep}, ivType)}, ivType);
  for (size_t k = 0; k < nest.innerAt; ++k)
    cloneOp(*body.ops[k], then, tailMap);
  for (size_t k = nest.innerAt + 1; k + 1 < body.ops.size(); ++k)
    cloneOp(*body.ops[k], then, tailMap);
  std::vector<Value *> yielded;
  for (Value *v : body.terminator()->operands)
    yielded.push_back(tailMap.count(v) ? tailMap[v] : v);
  Builder(&then).create(OpKind::Yield, yielded, {});
  std::vector<Value *> unchanged;
  for (size_t k = 0; k < numOuter; ++k)
    unchanged.push_back(fb.args[k + 1].get());
  Builder(&otherwise).create(OpKind::Yield, unchanged, {});
  std::vector<Value *> next;
  for (auto &res : tail->results)
    next.push_back(res.get());
  next.insert(next.end(), innerOut.begin(), innerOut.end());
  in.create(OpKind::Yield, next, {});
  return flat;
}

// The outer loop as written less its inner loop, whose results are their
// initial values: for when the inner loop runs no iteration.
Op *buildWithoutInner(Builder &b, const Nest &nest) {
  const Op &outer = *nest.outer, &inner = *nest.inner;
  std::vector<Type> types;
  for (auto &r : outer.results)
    types.push_back(r->type);
  Op *copy = b.create(OpKind::For, outer.operands, types, 1);
  copy->attrs = outer.attrs;
  copy->setAttr("flatten", int64_t(0)); // nothing left to flatten
  ValueMap map;
  Block &cb = *copy->regions[0];
  const Block &body = *outer.regions[0];
  for (auto &a : body.args)
    map[a.get()] = cb.addArg(a->type);
  for (size_t k = 0; k < body.ops.size(); ++k) {
    if (k != nest.innerAt) {
      cloneOp(*body.ops[k], cb, map);
      continue;
    }
    for (size_t j = 3; j < inner.operands.size(); ++j) {
      Value *init = inner.operand((int)j);
      map[inner.result((int)j - 3)] = map.count(init) ? map[init] : init;
    }
  }
  return copy;
}

// Appends the flattened loop (versioned on the inner loop running) in place
// of the outer one; returns the values that stand for the outer loop's results.
std::vector<Value *> flatten(Builder &b, const Nest &nest) {
  const Op &outer = *nest.outer, &inner = *nest.inner;
  Value *nIn = tripCount(b, inner.operand(0), inner.operand(1), inner.operand(2));
  bool loKnown, hiKnown, stepKnown;
  int64_t lo = constantOf(inner.operand(0), loKnown), hi = constantOf(inner.operand(1), hiKnown);
  int64_t innerStep = constantOf(inner.operand(2), stepKnown);
  bool runs = loKnown && hiKnown && stepKnown && (innerStep > 0 ? lo < hi : lo > hi);
  std::vector<Value *> results;
  if (runs) {
    Op *flat = buildFlatLoop(b, nest, nIn);
    for (size_t k = 0; k < outer.results.size(); ++k)
      results.push_back(flat->result((int)k));
    return results;
  }
  std::vector<Type> types;
  for (auto &r : outer.results)
    types.push_back(r->type);
  Value *some = b.create1(OpKind::CmpGt, {nIn, b.constInt(0, nIn->type)}, Type::scalar(DType::I1));
  Op *choice = b.create(OpKind::If, {some}, types, 2);
  for (int side = 0; side < 2; ++side) {
    Builder rb(choice->regions[side].get());
    rb.setLoc(outer.loc);
    Op *loop = side == 0 ? buildFlatLoop(rb, nest, nIn) : buildWithoutInner(rb, nest);
    std::vector<Value *> out;
    for (size_t k = 0; k < outer.results.size(); ++k)
      out.push_back(loop->result((int)k));
    rb.create(OpKind::Yield, out, {});
  }
  for (auto &r : choice->results)
    results.push_back(r.get());
  return results;
}

bool flattenIn(Block &block) {
  bool changed = false;
  for (size_t k = 0; k < block.ops.size(); ++k) {
    Op *op = block.ops[k].get();
    for (auto &region : op->regions)
      changed |= flattenIn(*region);
    Nest nest;
    if (op->kind == OpKind::For && op->intAttr("flatten") != 0 && flattenable(op, nest)) {
      std::unique_ptr<Op> outer; // alive until its results' uses are replaced
      std::vector<Value *> results;
      k += replaceOp(block, k, [&](Builder &b, std::unique_ptr<Op> taken) {
             outer = std::move(taken);
             results = flatten(b, nest);
           }) - 1; // the last of what replaced the loop
      for (size_t r = 0; r < results.size(); ++r)
        replaceAllUses(block, outer->result((int)r), results[r]);
      changed = true;
    }
  }
  return changed;
}

} // namespace

bool flattenLoops(Function &fn) {
  if (!flattenIn(*fn.body))
    return false;
  // The trip counts' arithmetic on constants, and the epilogue on the inner
  // loop's initial values (for no inner iteration), fold away.
  foldConstants(fn);
  return true;
}

} // namespace tilec
