// Where a kernel's pointers come from (see pointer_origins.h).
#include "ir/pointer_origins.h"

#include "ir/types.h"

namespace tilec {

namespace {

bool carriesPointer(const Value *v) { return isPointer(v->type.dtype); }

// The op's memory operand (the pointer it reads or writes through), or null.
const Value *addressOf(const Op &op) {
  switch (op.kind) {
  case OpKind::Load:
  case OpKind::Store:
  case OpKind::LoadBlock:
  case OpKind::StoreBlock:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCAS:
  case OpKind::AtomicLoad:
  case OpKind::AtomicStore:
  case OpKind::AtomicPoll:
    return op.operands.empty() ? nullptr : op.operand(0);
  default:
    return nullptr;
  }
}

bool writesMemory(const Op &op) {
  switch (op.kind) {
  case OpKind::Store:
  case OpKind::StoreBlock:
  case OpKind::AtomicRMW:
  case OpKind::AtomicCAS:
  case OpKind::AtomicStore:
    return true;
  default:
    return false;
  }
}

const Op *terminatorOf(const Block &b) { return b.terminator(); }

// The values a block argument or a control op's result takes its value from.
void sourcesOfCarried(const Value *v, std::vector<const Value *> &out) {
  auto operandOf = [&](const Op *op, size_t i) {
    if (op && i < op->operands.size())
      out.push_back(op->operand(i));
  };
  if (v->def) { // a result of For, If or While
    const Op &op = *v->def;
    size_t k = v->index;
    if (op.kind == OpKind::For) {
      operandOf(&op, 3 + k);
      operandOf(terminatorOf(*op.regions[0]), k);
    } else if (op.kind == OpKind::If) {
      for (const auto &region : op.regions)
        operandOf(terminatorOf(*region), k);
    } else if (op.kind == OpKind::While) {
      operandOf(terminatorOf(*op.regions[0]), k + 1);
    }
    return;
  }
  const Op *parent = v->owner->parent;
  size_t j = v->index;
  if (parent->kind == OpKind::For) {
    if (j == 0)
      return; // the induction variable
    operandOf(parent, 3 + j - 1);
    operandOf(terminatorOf(*parent->regions[0]), j - 1);
  } else if (parent->kind == OpKind::While) {
    if (v->owner == parent->regions[0].get()) {
      operandOf(parent, j);
      operandOf(terminatorOf(*parent->regions[1]), j);
    } else {
      operandOf(terminatorOf(*parent->regions[0]), j + 1);
    }
  } else { // a combine region's scalars: from the op's operands
    for (const Value *operand : parent->operands)
      out.push_back(operand);
  }
}

bool isControl(const Op &op) {
  return op.kind == OpKind::For || op.kind == OpKind::If || op.kind == OpKind::While;
}

} // namespace

PointerOrigins pointerOrigins(const Function &fn, const Value *ptr) {
  PointerOrigins origins;
  std::vector<const Value *> todo = {ptr};
  std::unordered_set<const Value *> seen;
  std::vector<bool> argumentSeen(fn.body->args.size(), false);
  while (!todo.empty()) {
    const Value *v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second || !carriesPointer(v))
      continue;
    if (!v->def && v->owner == fn.body.get()) {
      if (!argumentSeen[v->index]) {
        argumentSeen[v->index] = true;
        origins.arguments.push_back(v->index);
      }
      continue;
    }
    if (!v->def || isControl(*v->def)) {
      std::vector<const Value *> sources;
      sourcesOfCarried(v, sources);
      todo.insert(todo.end(), sources.begin(), sources.end());
      continue;
    }
    const Op &op = *v->def;
    if (op.kind == OpKind::IntToPtr || addressOf(op) != nullptr) {
      origins.madeAtRunTime = true; // an integer made an address, or a pointer read from memory
      continue;
    }
    for (const Value *operand : op.operands)
      todo.push_back(operand);
  }
  return origins;
}

std::vector<bool> storedArguments(const Function &fn) {
  std::vector<bool> stored(fn.body->args.size(), false);
  walk(*fn.body, [&](Op *op) {
    if (!writesMemory(*op))
      return;
    for (int arg : pointerOrigins(fn, addressOf(*op)).arguments)
      stored[arg] = true;
  });
  return stored;
}

std::unordered_set<const Op *> accessesThroughRunTimePointers(const Function &fn) {
  std::unordered_set<const Op *> ops;
  walk(*fn.body, [&](Op *op) {
    const Value *address = addressOf(*op);
    if (address && pointerOrigins(fn, address).madeAtRunTime)
      ops.insert(op);
  });
  return ops;
}

} // namespace tilec
