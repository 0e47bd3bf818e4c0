// Lowering of statements. Python variables become SSA values: an `if` yields
// the variables its branches change, a loop carries the variables its body
// changes (found by lowering the body once into a scratch block). A `return`
// inside an `if` moves the statements after the `if` into its branches.
#include <algorithm>

#include "sema/lowerer.h"

namespace tilec {

// --- merging the values two control-flow paths give a variable

namespace {

// The leaves of a value that differ between two paths become yielded IR
// values ("slots"); the rest stay as they are.
struct Slot {
  SVal a, b;   // the leaf on each path
  Type type;   // the type both are converted to
  Span span;
  std::string name;
};

// Marks a leaf that will be replaced by slot `index` once the op exists.
SVal slotMarker(size_t index) {
  SVal v;
  v.kind = SVal::Tensor;
  v.v = nullptr;
  v.c = ConstValue::integer((int64_t)index);
  return v;
}

bool sameSVal(const SVal &a, const SVal &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case SVal::Const:
    return a.c == b.c && a.c.kind == b.c.kind;
  case SVal::Tensor:
    return a.v == b.v;
  case SVal::Tuple:
    if (a.elems.size() != b.elems.size())
      return false;
    for (size_t i = 0; i < a.elems.size(); ++i)
      if (!sameSVal(a.elems[i], b.elems[i]))
        return false;
    return true;
  case SVal::JitFn:
    return a.fn == b.fn;
  default:
    return a.name == b.name && a.elems.size() == b.elems.size();
  }
}

} // namespace

// The type a leaf takes when it is a constant on one path and a tensor, or
// another constant, on the other.
static std::optional<Type> unifiedType(Lowerer &l, const SVal &a, const SVal &b) {
  if (a.isTensor() && b.isTensor())
    return a.v->type == b.v->type ? std::optional<Type>(a.v->type) : std::nullopt;
  if (a.isTensor() && b.isConst() && b.c.isNumber())
    return a.v->type;
  if (b.isTensor() && a.isConst() && a.c.isNumber())
    return b.v->type;
  if (a.isConst() && b.isConst() && a.c.isNumber() && b.c.isNumber()) {
    bool isF = a.c.kind == ConstValue::Float || b.c.kind == ConstValue::Float;
    if (isF)
      return Type::scalar(DType::F32);
    DType da = *Lowerer::literalDType(a.c), db = *Lowerer::literalDType(b.c);
    if (da == DType::I1 && db == DType::I1)
      return Type::scalar(DType::I1);
    return Type::scalar(dtypeBits(da) > 32 || dtypeBits(db) > 32 ? DType::I64 : DType::I32);
  }
  return std::nullopt;
}

static std::string pathNames(bool isLoop) {
  return isLoop ? "before the loop and at the end of its body" : "in the two branches of the 'if'";
}

// Compares the values a variable has on two paths; returns the merged value
// with slot markers where they differ, appending the slots.
static SVal mergeValue(Lowerer &l, const std::string &name, const SVal &a, const SVal &b,
                       const Span &span, bool isLoop, std::vector<Slot> &slots) {
  if (sameSVal(a, b))
    return a;
  if (a.kind == SVal::Tuple && b.kind == SVal::Tuple && a.elems.size() == b.elems.size()) {
    std::vector<SVal> elems;
    for (size_t i = 0; i < a.elems.size(); ++i)
      elems.push_back(mergeValue(l, name, a.elems[i], b.elems[i], span, isLoop, slots));
    return SVal::tuple(elems);
  }
  std::optional<Type> t = unifiedType(l, a, b);
  if (!t)
    l.error(span, "'" + name + "' is " + a.describe() + " and " + b.describe() + " " +
                      pathNames(isLoop) + "; it must have one type");
  slots.push_back({a, b, *t, span, name});
  return slotMarker(slots.size() - 1);
}

// Converts a leaf to the slot's type, creating any constant at the builder.
static Value *slotValue(Lowerer &l, const SVal &v, const Type &t, const Span &span) {
  if (v.isTensor())
    return v.v;
  Value *s = l.constScalar(v.c, t.dtype);
  return l.splatTo(s, t.shape);
}

// Replaces slot markers with the values `values` gives.
static SVal fillSlots(const SVal &v, const std::vector<Value *> &values) {
  if (v.kind == SVal::Tensor && v.v == nullptr)
    return SVal::tensor(values[v.c.i]);
  if (v.kind == SVal::Tuple) {
    std::vector<SVal> elems;
    for (auto &e : v.elems)
      elems.push_back(fillSlots(e, values));
    return SVal::tuple(elems);
  }
  return v;
}

// The leaf value a slot's second path gives, looked up by walking the merged
// template in step with the path's value.
static void collectLeaves(const SVal &merged, const SVal &path, std::vector<SVal> &out) {
  if (merged.kind == SVal::Tensor && merged.v == nullptr) {
    out[merged.c.i] = path;
    return;
  }
  if (merged.kind == SVal::Tuple)
    for (size_t i = 0; i < merged.elems.size(); ++i)
      collectLeaves(merged.elems[i], path.elems[i], out);
}

// Ends a loop body: yields the values the carried variables have now,
// which must keep the types they entered the loop with.
static void yieldCarried(Lowerer &l, const Span &span,
                         const std::vector<std::pair<std::string, SVal>> &carried,
                         const std::vector<Slot> &slots) {
  std::vector<SVal> ends(slots.size());
  for (auto &[name, v] : carried)
    collectLeaves(v, l.frame().vars[name], ends);
  std::vector<Value *> yields;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SVal &end = ends[i];
    if (end.isTensor() && end.v->type != slots[i].type)
      l.error(span, "loop-carried variable '" + slots[i].name + "' has type " +
                        slots[i].type.str() + " before the loop but " + end.v->type.str() +
                        " at the end of its body; it must keep one type");
    if (!end.isTensor() && !(end.isConst() && end.c.isNumber()))
      l.error(span, "loop-carried variable '" + slots[i].name + "' becomes " + end.describe() +
                        " in the loop body");
    yields.push_back(slotValue(l, end, slots[i].type, span));
  }
  l.b_.create(OpKind::Yield, yields, {});
}

// --- statements

static bool containsReturn(const Stmt &s) {
  if (s.kind == StmtKind::Return)
    return true;
  if (s.kind != StmtKind::If)
    return false;
  for (auto *list : {&s.body, &s.orelse})
    for (auto &x : *list)
      if (containsReturn(*x))
        return true;
  return false;
}

void Lowerer::lowerKernelBody(const FunctionDef &def, Frame &f) {
  frames_.push_back(&f);
  StmtList body;
  for (auto &s : def.body)
    body.push_back(s.get());
  lowerStmts(body);
  b_.setBlock(fn_.body.get());
  b_.create(OpKind::Return, {}, {});
  frames_.pop_back();
}

void Lowerer::lowerStmts(const StmtList &stmts) {
  for (size_t i = 0; i < stmts.size() && !frame().returned; ++i) {
    if (stmts[i]->kind == StmtKind::If && containsReturn(*stmts[i])) {
      b_.setLoc(loc(stmts[i]->span));
      lowerIf(*stmts[i], StmtList(stmts.begin() + i + 1, stmts.end()), true);
      return;
    }
    lowerStmt(*stmts[i]);
  }
}

namespace {
// Counts the loops around the statement being lowered.
struct LoopScope {
  explicit LoopScope(int &depth) : depth_(depth) { ++depth_; }
  ~LoopScope() { --depth_; }
  int &depth_;
};
} // namespace

void Lowerer::lowerStmt(const Stmt &s) {
  b_.setLoc(loc(s.span));
  switch (s.kind) {
  case StmtKind::Expr:
    eval(*s.value);
    return;
  case StmtKind::Assign:
  case StmtKind::AnnAssign:
    lowerAssign(s);
    return;
  case StmtKind::AugAssign: {
    const Expr &t = *s.targets[0];
    if (t.kind != ExprKind::Name)
      error(t.span, "cannot assign to this expression: tensors are immutable; use tl.store to "
                    "write memory");
    SVal v = binary(s.op, eval(t), eval(*s.value), s.span);
    bindTarget(t, v);
    return;
  }
  case StmtKind::If:
    lowerIf(s, {}, false);
    return;
  case StmtKind::For:
    lowerFor(s);
    return;
  case StmtKind::While:
    lowerWhile(s);
    return;
  case StmtKind::Return:
    lowerReturn(s);
    return;
  case StmtKind::Pass:
    return;
  case StmtKind::Break:
  case StmtKind::Continue:
    error(s.span, std::string("'") + (s.kind == StmtKind::Break ? "break" : "continue") +
                      "' is not supported in kernels; put the condition in the loop bounds or "
                      "in a mask");
  case StmtKind::Assert:
    lowerAssert(s);
    return;
  case StmtKind::Raise: // allowed in branches a constexpr rules out, as in Triton
    error(s.span, "a kernel cannot raise exceptions, and this 'raise' is reached; use "
                  "tl.static_assert or tl.device_assert");
  }
}

static bool isConstexprAnnotation(const Expr *ann) {
  if (!ann)
    return false;
  if (ann->kind == ExprKind::Name || ann->kind == ExprKind::Attribute)
    return ann->name == "constexpr";
  return ann->kind == ExprKind::Str && ann->name.find("constexpr") != std::string::npos;
}

void Lowerer::lowerAssign(const Stmt &s) {
  if (s.kind == StmtKind::AnnAssign && !s.value)
    return;
  SVal v = eval(*s.value);
  if (s.kind == StmtKind::AnnAssign && isConstexprAnnotation(s.annotation.get()) && !v.isConst())
    error(s.value->span, "'" + s.targets[0]->name + "' is annotated tl.constexpr, but its value "
                         "is " + v.describe());
  for (auto &t : s.targets)
    bindTarget(*t, v);
}

void Lowerer::bindTarget(const Expr &target, const SVal &value) {
  if (target.kind == ExprKind::Name) {
    frame().vars[target.name] = value;
    frame().oneBranchOnly.erase(target.name);
    return;
  }
  if (target.kind == ExprKind::Tuple || target.kind == ExprKind::List) {
    size_t n = target.elts.size();
    bool isTuple = value.kind == SVal::Tuple;
    bool isConstTuple = value.isConst() && value.c.kind == ConstValue::Tuple;
    size_t have = isTuple ? value.elems.size() : isConstTuple ? value.c.elems.size() : 0;
    if (!isTuple && !isConstTuple)
      error(target.span, "cannot unpack " + value.describe() + " into " + std::to_string(n) +
                             " names");
    if (have != n)
      error(target.span, "cannot unpack a tuple of " + std::to_string(have) + " values into " +
                             std::to_string(n) + " names");
    for (size_t i = 0; i < n; ++i)
      bindTarget(*target.elts[i], isTuple ? value.elems[i] : SVal::constant(value.c.elems[i]));
    return;
  }
  error(target.span, "cannot assign to this expression: tensors are immutable; use tl.store to "
                     "write memory");
}

void Lowerer::lowerIf(const Stmt &s, const StmtList &rest, bool withRest) {
  SVal test = eval(*s.test);
  StmtList thenStmts, elseStmts;
  for (auto &x : s.body)
    thenStmts.push_back(x.get());
  for (auto &x : s.orelse)
    elseStmts.push_back(x.get());
  if (withRest) {
    thenStmts.insert(thenStmts.end(), rest.begin(), rest.end());
    elseStmts.insert(elseStmts.end(), rest.begin(), rest.end());
  }
  if (test.isConst()) {
    lowerStmts(test.c.truthy() ? thenStmts : elseStmts);
    return;
  }
  if (withRest && frame().loopDepth > 0)
    error(s.span, "'return' inside a loop is not supported in kernels");
  lowerRuntimeIf(toCondition(test, s.test->span), s, thenStmts, elseStmts, withRest);
}

void Lowerer::lowerRuntimeIf(Value *cond, const Stmt &s, const StmtList &thenStmts,
                             const StmtList &elseStmts, bool returns) {
  Frame &f = frame();
  auto before = f.vars;
  Block *outer = b_.block();
  Op *ifOp = b_.create(OpKind::If, {cond}, {}, 2);
  Block *blocks[2] = {ifOp->regions[0].get(), ifOp->regions[1].get()};
  std::map<std::string, SVal> vars[2];
  SVal rets[2];
  for (int k = 0; k < 2; ++k) {
    f.vars = before;
    f.returned = false;
    b_.setBlock(blocks[k]);
    lowerStmts(k == 0 ? thenStmts : elseStmts);
    vars[k] = f.vars;
    rets[k] = f.returned ? f.returnValue : SVal::constant(ConstValue::none());
  }
  b_.setBlock(outer);
  b_.setLoc(loc(s.span));

  std::vector<Slot> slots;
  std::vector<std::pair<std::string, SVal>> merged;
  SVal mergedReturn;
  if (returns) {
    mergedReturn = mergeValue(*this, "the return value", rets[0], rets[1], s.span, false, slots);
  } else {
    std::set<std::string> names;
    for (auto &v : vars)
      for (auto &[name, _] : v)
        names.insert(name);
    for (auto &name : names) {
      bool inThen = vars[0].count(name), inElse = vars[1].count(name);
      if (!inThen || !inElse) {
        f.oneBranchOnly.insert(name);
        continue;
      }
      merged.push_back({name, mergeValue(*this, name, vars[0][name], vars[1][name], s.span,
                                         false, slots)});
    }
  }
  for (int k = 0; k < 2; ++k) {
    b_.setBlock(blocks[k]);
    std::vector<Value *> yields;
    for (auto &slot : slots)
      yields.push_back(slotValue(*this, k == 0 ? slot.a : slot.b, slot.type, slot.span));
    b_.create(OpKind::Yield, yields, {});
  }
  b_.setBlock(outer);
  std::vector<Value *> results;
  for (size_t i = 0; i < slots.size(); ++i) {
    auto v = std::make_unique<Value>();
    v->type = slots[i].type;
    v->def = ifOp;
    v->index = (int)i;
    results.push_back(v.get());
    ifOp->results.push_back(std::move(v));
  }
  f.vars = before;
  if (returns) {
    f.returned = true;
    f.returnValue = fillSlots(mergedReturn, results);
    return;
  }
  f.returned = false;
  for (auto &[name, v] : merged)
    f.vars[name] = fillSlots(v, results);
}

// The names a statement list assigns, at any depth.
static void collectAssigned(const Expr &target, std::set<std::string> &out) {
  if (target.kind == ExprKind::Name)
    out.insert(target.name);
  for (auto &e : target.elts)
    collectAssigned(*e, out);
}

static void collectAssigned(const std::vector<StmtPtr> &stmts, std::set<std::string> &out) {
  for (auto &s : stmts) {
    for (auto &t : s->targets)
      collectAssigned(*t, out);
    if (s->target)
      collectAssigned(*s->target, out);
    collectAssigned(s->body, out);
    collectAssigned(s->orelse, out);
  }
}

// The names whose values a loop body changes, found by lowering the body once
// into a scratch block. Constants the body assigns enter it as opaque values,
// so `total += i` counts as a change even when both start as 0.
template <typename F>
static std::vector<std::pair<std::string, SVal>>
changedByBody(Lowerer &l, const std::vector<StmtPtr> &body, F &&bodyFn) {
  Frame &f = l.frame();
  auto before = f.vars;
  // The scratch block lives until the compile ends: the values it defines
  // are compared with the ones before the loop.
  l.scratch_.push_back(std::make_unique<Block>());
  Block *scratch = l.scratch_.back().get();
  std::set<std::string> assigned;
  collectAssigned(body, assigned);
  for (auto &[name, v] : f.vars)
    if (assigned.count(name) && v.isConst() && v.c.isNumber())
      v = SVal::tensor(scratch->addArg(Type::scalar(*Lowerer::literalDType(v.c))));
  auto entry = f.vars;
  Block *saved = l.b_.block();
  Location savedLoc = l.b_.loc();
  l.b_.setBlock(scratch);
  bodyFn(scratch);
  auto after = f.vars;
  l.b_.setBlock(saved);
  l.b_.setLoc(savedLoc);
  f.vars = before;
  std::vector<std::pair<std::string, SVal>> changed;
  for (auto &[name, v] : entry) {
    auto it = after.find(name);
    if (it != after.end() && !sameSVal(v, it->second))
      changed.push_back({name, it->second});
  }
  return changed;
}

// Binds a loop's range arguments: range(end), range(start, end[, step]).
static void rangeBounds(Lowerer &l, const CallArgs &args, const Span &span, Arg out[3]) {
  size_t n = args.positional.size();
  if (n < 1 || n > 3)
    l.error(span, "range() takes 1 to 3 positional arguments, got " + std::to_string(n));
  Arg zero{SVal::constant(ConstValue::integer(0)), span}, one{SVal::constant(ConstValue::integer(1)), span};
  out[0] = n == 1 ? zero : args.positional[0];
  out[1] = n == 1 ? args.positional[0] : args.positional[1];
  out[2] = n == 3 ? args.positional[2] : one;
}

void Lowerer::lowerFor(const Stmt &s) {
  const Expr &iter = *s.test;
  if (iter.kind != ExprKind::Call)
    error(iter.span, "a kernel loop must iterate over range(), tl.range() or tl.static_range()");
  SVal fnv = eval(*iter.a);
  bool isRange = fnv.kind == SVal::Builtin &&
                 (fnv.name == "py.range" || fnv.name == "range" || fnv.name == "static_range");
  if (!isRange)
    error(iter.span, "a kernel loop must iterate over range(), tl.range() or tl.static_range()");
  if (s.target->kind != ExprKind::Name)
    error(s.target->span, "a loop variable must be a single name");
  CallArgs args = evalArgs(iter);
  if (fnv.name == "static_range") {
    lowerStaticFor(s, args);
    return;
  }
  std::vector<Arg> options;
  CallArgs positional = args;
  positional.keywords.clear();
  Arg bounds[3];
  rangeBounds(*this, positional, iter.span, bounds);
  for (auto &[name, arg] : args.keywords) {
    static const char *known[] = {"num_stages", "loop_unroll_factor", "flatten",
                                  "warp_specialize", "disallow_acc_multi_buffer", "step"};
    if (fnv.name == "py.range" ||
        std::none_of(std::begin(known), std::end(known), [&](auto k) { return name == k; }))
      error(arg.span, "range() got an unexpected keyword argument '" + name + "'");
  }
  DType ivType = DType::I32;
  for (auto &b : bounds) {
    if (b.val.isConst() && b.val.c.kind == ConstValue::Int) {
      if (*literalDType(b.val.c) != DType::I32)
        ivType = DType::I64;
    } else if (!b.val.isTensor() || b.val.v->type.isTensor() || !isInteger(b.val.v->type.dtype)) {
      error(b.span, "range() bounds must be integer scalars, got " + b.val.describe());
    } else if (dtypeBits(b.val.v->type.dtype) == 64) {
      ivType = DType::I64;
    }
  }
  if (bounds[2].val.isConst() && bounds[2].val.c.i == 0)
    error(bounds[2].span, "range() step must not be zero");
  Value *lb = materialize(bounds[0].val, bounds[0].span, ivType);
  Value *ub = materialize(bounds[1].val, bounds[1].span, ivType);
  Value *step = materialize(bounds[2].val, bounds[2].span, ivType);

  Frame &f = frame();
  const std::string &ivName = s.target->name;
  StmtList body;
  for (auto &x : s.body)
    body.push_back(x.get());
  LoopScope scope(frame().loopDepth);
  auto changed = changedByBody(*this, s.body, [&](Block *scratch) {
    frame().vars[ivName] = SVal::tensor(scratch->addArg(Type::scalar(ivType)));
    lowerStmts(body);
  });

  auto before = f.vars;
  std::vector<Slot> slots;
  std::vector<std::pair<std::string, SVal>> carried;
  for (auto &[name, after] : changed) {
    if (name == ivName)
      continue;
    carried.push_back({name, mergeValue(*this, name, before[name], after, s.span, true, slots)});
  }
  std::vector<Value *> operands = {lb, ub, step};
  std::vector<Type> types;
  for (auto &slot : slots) {
    operands.push_back(slotValue(*this, slot.a, slot.type, slot.span));
    types.push_back(slot.type);
  }
  Op *forOp = b_.create(OpKind::For, operands, types, 1);
  for (auto &[name, arg] : args.keywords)
    if (arg.val.isConst() && arg.val.c.isNumber())
      forOp->setAttr(name, arg.val.c.asInt());
  Block *bodyBlock = forOp->regions[0].get();
  Value *iv = bodyBlock->addArg(Type::scalar(ivType));
  std::vector<Value *> args2;
  for (auto &slot : slots)
    args2.push_back(bodyBlock->addArg(slot.type));
  for (auto &[name, v] : carried)
    f.vars[name] = fillSlots(v, args2);
  f.vars[ivName] = SVal::tensor(iv);

  Block *outer = b_.block();
  b_.setBlock(bodyBlock);
  lowerStmts(body);
  yieldCarried(*this, s.span, carried, slots);
  b_.setBlock(outer);
  b_.setLoc(loc(s.span));
  std::vector<Value *> results;
  for (auto &r : forOp->results)
    results.push_back(r.get());
  f.vars = before;
  for (auto &[name, v] : carried)
    f.vars[name] = fillSlots(v, results);
}

void Lowerer::lowerStaticFor(const Stmt &s, const CallArgs &args) {
  Arg bounds[3];
  rangeBounds(*this, args, s.test->span, bounds);
  int64_t v[3];
  for (int i = 0; i < 3; ++i) {
    if (!bounds[i].val.isConst() || bounds[i].val.c.kind != ConstValue::Int)
      error(bounds[i].span, "tl.static_range() bounds must be constexpr integers, got " +
                                bounds[i].val.describe());
    v[i] = bounds[i].val.c.i;
  }
  if (v[2] == 0)
    error(bounds[2].span, "tl.static_range() step must not be zero");
  StmtList body;
  for (auto &x : s.body)
    body.push_back(x.get());
  LoopScope scope(frame().loopDepth);
  int64_t trips = 0;
  for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) {
    if (++trips > 4096)
      error(s.test->span, "tl.static_range() unrolls at most 4096 iterations");
    frame().vars[s.target->name] = SVal::constant(ConstValue::integer(i));
    lowerStmts(body);
  }
}

void Lowerer::lowerWhile(const Stmt &s) {
  Frame &f = frame();
  StmtList body;
  for (auto &x : s.body)
    body.push_back(x.get());
  LoopScope scope(frame().loopDepth);
  auto changed = changedByBody(*this, s.body, [&](Block *) { lowerStmts(body); });
  auto before = f.vars;
  std::vector<Slot> slots;
  std::vector<std::pair<std::string, SVal>> carried;
  for (auto &[name, after] : changed)
    carried.push_back({name, mergeValue(*this, name, before[name], after, s.span, true, slots)});
  std::vector<Value *> inits;
  std::vector<Type> types;
  for (auto &slot : slots) {
    inits.push_back(slotValue(*this, slot.a, slot.type, slot.span));
    types.push_back(slot.type);
  }
  Block *outer = b_.block();
  Op *w = b_.create(OpKind::While, inits, types, 2);
  Block *cond = w->regions[0].get(), *after = w->regions[1].get();
  std::vector<Value *> condArgs, bodyArgs;
  for (auto &slot : slots) {
    condArgs.push_back(cond->addArg(slot.type));
    bodyArgs.push_back(after->addArg(slot.type));
  }
  for (auto &[name, v] : carried)
    f.vars[name] = fillSlots(v, condArgs);
  b_.setBlock(cond);
  SVal test = eval(*s.test);
  if (test.isConst() && test.c.truthy())
    error(s.test->span, "this while loop never ends: its condition is always true, and kernels "
                        "have no 'break'");
  Value *c = test.isConst() ? constScalar(test.c, DType::I1) : toCondition(test, s.test->span);
  std::vector<Value *> condOperands = {c};
  condOperands.insert(condOperands.end(), condArgs.begin(), condArgs.end());
  b_.create(OpKind::Condition, condOperands, {});

  for (auto &[name, v] : carried)
    f.vars[name] = fillSlots(v, bodyArgs);
  b_.setBlock(after);
  lowerStmts(body);
  yieldCarried(*this, s.span, carried, slots);
  b_.setBlock(outer);
  std::vector<Value *> results;
  for (auto &r : w->results)
    results.push_back(r.get());
  f.vars = before;
  for (auto &[name, v] : carried)
    f.vars[name] = fillSlots(v, results);
}

void Lowerer::lowerReturn(const Stmt &s) {
  if (frame().loopDepth > 0)
    error(s.span, "'return' inside a loop is not supported in kernels");
  Frame &f = frame();
  SVal v = s.value ? eval(*s.value) : SVal::constant(ConstValue::none());
  if (f.isKernel && !v.isNone())
    error(s.value->span, "a kernel cannot return a value; write results to memory with tl.store");
  f.returned = true;
  f.returnValue = v;
}

void Lowerer::lowerAssert(const Stmt &s) {
  SVal test = eval(*s.test);
  std::string msg;
  if (s.msg) {
    SVal m = eval(*s.msg);
    msg = m.isConst() && m.c.kind == ConstValue::Str ? m.c.s : m.describe();
  }
  if (test.isConst()) {
    if (!test.c.truthy())
      error(s.test->span, "assertion failed" + (msg.empty() ? "" : ": " + msg));
    return;
  }
  Value *c = toMask(materialize(test, s.test->span));
  Op *op = b_.create(OpKind::Assert, {c}, {});
  op->setAttr("message", msg);
}

} // namespace tilec
