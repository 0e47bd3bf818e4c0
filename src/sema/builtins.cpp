// The tl.* functions, tensor methods and attributes, and the Python builtins
// a kernel may call. One table maps each name to its signature and handler.
#include <cmath>
#include <functional>
#include <map>

#include "ir/inline_asm.h"
#include "sema/lowerer.h"

namespace tilec {

namespace {

using Args = std::vector<std::optional<Arg>>;
using Handler = std::function<SVal(Lowerer &, Args &, std::vector<Arg> &, const Expr &)>;

struct BuiltinDef {
  std::vector<std::string> signature;
  Handler handler;
};

bool given(const std::optional<Arg> &a) { return a && !a->val.isNone(); }

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int normalizeAxis(Lowerer &l, int64_t axis, int rank, const Span &span) {
  if (axis < -rank || axis >= rank)
    l.error(span, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                      std::to_string(rank));
  return (int)(axis < 0 ? axis + rank : axis);
}

// --- creation

SVal programId(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call, OpKind kind) {
  int64_t axis = l.constIntArg(*a[0], "axis");
  if (axis < 0 || axis > 2)
    l.error(a[0]->span, "axis must be 0, 1 or 2, got " + std::to_string(axis));
  Op *op = l.b_.create(kind, {}, {Type::scalar(DType::I32)});
  op->setAttr("axis", axis);
  return SVal::tensor(op->result());
}

SVal arange(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  int64_t start = l.constIntArg(*a[0], "start"), end = l.constIntArg(*a[1], "end");
  if (end <= start)
    l.error(call.span, "tl.arange() needs end > start, got arange(" + std::to_string(start) +
                           ", " + std::to_string(end) + ")");
  int64_t n = end - start;
  if ((n & (n - 1)) != 0)
    l.error(call.span, "tl.arange()'s range must be a power of 2, got " + std::to_string(n));
  if (start < INT32_MIN || end > INT32_MAX)
    l.error(call.span, "tl.arange() bounds must fit in int32");
  Op *op = l.b_.create(OpKind::MakeRange, {}, {Type::scalar(DType::I32).withShape({n})});
  op->setAttr("start", start);
  op->setAttr("end", end);
  return SVal::tensor(op->result());
}

SVal fullOf(Lowerer &l, const std::vector<int64_t> &shape, const SVal &value, DType d,
            const Span &span) {
  l.checkBlockShape(shape, span);
  Value *s = value.isConst() ? l.constScalar(value.c, d) : l.materialize(value, span, d);
  if (s->type.isTensor())
    l.error(span, "tl.full() needs a scalar value, got " + s->type.str());
  return SVal::tensor(l.splatTo(s, shape));
}

SVal zeros(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  DType d = given(a[1]) ? l.dtypeArg(*a[1], "dtype") : DType::F32;
  return fullOf(l, l.shapeArg(*a[0], "shape"), SVal::constant(ConstValue::integer(0)), d,
                call.span);
}

SVal zerosLike(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  DType d = given(a[1]) ? l.dtypeArg(*a[1], "dtype") : x->type.dtype;
  return SVal::tensor(l.splatTo(l.constScalar(ConstValue::integer(0), d), x->type.shape));
}

SVal full(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  DType d = l.dtypeArg(*a[2], "dtype");
  return fullOf(l, l.shapeArg(*a[0], "shape"), a[1]->val, d, call.span);
}

// --- memory

Value *optionalMask(Lowerer &l, const std::optional<Arg> &a) {
  if (!given(a))
    return nullptr;
  if (a->val.isConst() && a->val.c.kind == ConstValue::Bool && a->val.c.b)
    return nullptr;
  Value *m = l.materialize(a->val, a->span);
  if (isPointer(m->type.dtype) || isFloat(m->type.dtype))
    l.error(a->span, "a mask must be a boolean tensor, got " + m->type.str());
  return l.toMask(m);
}

// The operands of a store or an atomic: pointers, values [, mask], broadcast to
// one shape, the values of the pointee's type.
std::vector<Value *> pointerValueMask(Lowerer &l, Value *ptr, const Arg &value,
                                      const std::optional<Arg> &maskArg, const Span &span) {
  Value *v = l.materialize(value.val, value.span, ptr->type.pointee);
  auto [p, bv] = l.broadcastPair(ptr, v, span);
  Value *mask = optionalMask(l, maskArg);
  if (!mask)
    return {p, bv};
  auto [p2, m] = l.broadcastPair(p, mask, span);
  return {p2, l.broadcastTo(bv, p2->type.shape, span), m};
}

Value *pointerArg(Lowerer &l, const Arg &a, const char *fnName) {
  Value *p = l.tensorArg(a, "pointer");
  if (!isPointer(p->type.dtype))
    l.error(a.span, std::string(fnName) + "() expects a pointer, got " + p->type.str() +
                        "; pass a tensor argument or add offsets to one");
  return p;
}

// The dims a block access checks against the tensor's bounds.
std::vector<int64_t> boundaryCheck(Lowerer &l, const std::optional<Arg> &arg, size_t rank) {
  std::vector<int64_t> check;
  if (!given(arg))
    return check;
  const ConstValue &c = arg->val.c;
  if (!arg->val.isConst() || (c.kind != ConstValue::Tuple && c.kind != ConstValue::Int))
    l.error(arg->span, "boundary_check must be a tuple of constexpr dims, got " +
                           arg->val.describe());
  for (auto &d : c.kind == ConstValue::Tuple ? c.elems : std::vector<ConstValue>{c})
    check.push_back(normalizeAxis(l, d.asInt(), (int)rank, arg->span));
  return check;
}

SVal load(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *ptr = pointerArg(l, *a[0], "tl.load");
  if (ptr->type.dtype == DType::BlockPtr) {
    Op *op = l.b_.create(OpKind::LoadBlock, {ptr},
                         {Type::scalar(ptr->type.pointee).withShape(ptr->type.blockShape)});
    op->setAttr("boundary_check", boundaryCheck(l, a[3], ptr->type.blockShape.size()));
    std::string pad = given(a[4]) && a[4]->val.c.kind == ConstValue::Str ? a[4]->val.c.s : "zero";
    if (pad != "zero" && pad != "nan" && pad != "")
      l.error(a[4]->span, "padding_option must be 'zero' or 'nan', got '" + pad + "'");
    op->setAttr("padding", pad.empty() ? "zero" : pad);
    return SVal::tensor(op->result());
  }
  Value *mask = optionalMask(l, a[1]);
  if (mask) {
    auto [p, m] = l.broadcastPair(ptr, mask, call.span);
    ptr = p;
    mask = m;
  }
  Type resultType = Type::scalar(ptr->type.pointee).withShape(ptr->type.shape);
  std::vector<Value *> operands = {ptr};
  if (mask) {
    operands.push_back(mask);
    if (given(a[2])) {
      Value *other = l.materialize(a[2]->val, a[2]->span, ptr->type.pointee);
      operands.push_back(l.broadcastTo(other, ptr->type.shape, a[2]->span));
    }
  } else if (given(a[2]) && !given(a[1])) {
    l.error(a[2]->span, "tl.load(): 'other' needs a 'mask'");
  } // (with mask=True, other is never taken)
  return SVal::tensor(l.b_.create1(OpKind::Load, operands, resultType));
}

SVal store(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *ptr = pointerArg(l, *a[0], "tl.store");
  l.checkWritable(ptr, call.span);
  if (ptr->type.dtype == DType::BlockPtr) {
    Value *v = l.materialize(a[1]->val, a[1]->span, ptr->type.pointee);
    v = l.broadcastTo(v, ptr->type.blockShape, a[1]->span);
    Op *op = l.b_.create(OpKind::StoreBlock, {ptr, v}, {});
    op->setAttr("boundary_check", boundaryCheck(l, a[3], ptr->type.blockShape.size()));
    return SVal::constant(ConstValue::none());
  }
  l.b_.create(OpKind::Store, pointerValueMask(l, ptr, *a[1], a[2], call.span), {});
  return SVal::constant(ConstValue::none());
}

// sem= and scope= of an atomic, with Triton's defaults (acq_rel, gpu).
std::string atomicOption(Lowerer &l, const std::optional<Arg> &a, const char *what,
                         const std::string &fallback, std::initializer_list<const char *> allowed) {
  if (!given(a))
    return fallback;
  if (!a->val.isConst() || a->val.c.kind != ConstValue::Str)
    l.error(a->span, std::string(what) + " must be a constexpr string, got " + a->val.describe());
  std::string s = a->val.c.s, names;
  for (const char *ok : allowed) {
    if (s == ok)
      return s;
    names += std::string(names.empty() ? "" : ", ") + "'" + ok + "'";
  }
  l.error(a->span, std::string(what) + " must be one of " + names + ", got '" + s + "'");
}

// Which element types each atomic takes (as the GPU's atom instructions do).
void checkAtomicType(Lowerer &l, const std::string &kind, DType d, const Span &span,
                     const char *fnName) {
  int bits = dtypeBits(d);
  bool ok;
  if (kind == "add")
    ok = (isInteger(d) && bits >= 32) || d == DType::F16 || d == DType::BF16 ||
         d == DType::F32 || d == DType::F64;
  else if (kind == "max" || kind == "min")
    ok = (isInteger(d) && bits >= 32) || d == DType::F32 || d == DType::F64;
  else if (kind == "and" || kind == "or" || kind == "xor")
    ok = isInteger(d) && bits >= 32;
  else if (kind == "xchg")
    ok = bits >= 32 && !isPointer(d);
  else // cas
    ok = (bits >= 32 && !isPointer(d)) || d == DType::F16 || d == DType::BF16;
  if (!ok)
    l.error(span, std::string(fnName) + "() does not take " + dtypeName(d) + " elements");
}

// The pointers an atomic updates, checked for its kind.
Value *atomicPointer(Lowerer &l, const Arg &a, const std::string &kind, const Span &span) {
  std::string fnName = "tl.atomic_" + kind;
  Value *ptr = pointerArg(l, a, fnName.c_str());
  if (ptr->type.dtype == DType::BlockPtr)
    l.error(a.span, fnName + "() takes a pointer or a tensor of pointers, not a block pointer");
  checkAtomicType(l, kind, ptr->type.pointee, span, fnName.c_str());
  return ptr;
}

// sem= and scope= of an atomic op, with Triton's defaults.
void setAtomicOrdering(Lowerer &l, Op *op, const std::optional<Arg> &sem,
                       const std::optional<Arg> &scope) {
  op->setAttr("sem", atomicOption(l, sem, "sem", "acq_rel",
                                  {"relaxed", "acquire", "release", "acq_rel"}));
  op->setAttr("scope", atomicOption(l, scope, "scope", "gpu", {"cta", "gpu", "sys"}));
}

// tl.atomic_add(pointer, val, mask=None, sem=None, scope=None) and the other
// read-modify-write atomics: the old values, shaped as the pointers.
SVal atomicRmw(Lowerer &l, Args &a, const Expr &call, const std::string &kind) {
  Value *ptr = atomicPointer(l, *a[0], kind, call.span);
  l.checkWritable(ptr, call.span);
  std::vector<Value *> operands = pointerValueMask(l, ptr, *a[1], a[2], call.span);
  Type t = Type::scalar(ptr->type.pointee).withShape(operands[0]->type.shape);
  Op *op = l.b_.create(OpKind::AtomicRMW, operands, {t});
  op->setAttr("kind", kind);
  setAtomicOrdering(l, op, a[3], a[4]);
  return SVal::tensor(op->result());
}

// tl.atomic_cas(pointer, cmp, val, sem=None, scope=None): stores val where the
// old value equals cmp; returns the old values.
SVal atomicCas(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *ptr = atomicPointer(l, *a[0], "cas", call.span);
  l.checkWritable(ptr, call.span);
  Value *cmp = l.materialize(a[1]->val, a[1]->span, ptr->type.pointee);
  Value *v = l.materialize(a[2]->val, a[2]->span, ptr->type.pointee);
  auto [p, bc] = l.broadcastPair(ptr, cmp, call.span);
  auto [p2, bv] = l.broadcastPair(p, v, call.span);
  bc = l.broadcastTo(bc, p2->type.shape, call.span);
  Type t = Type::scalar(ptr->type.pointee).withShape(p2->type.shape);
  Op *op = l.b_.create(OpKind::AtomicCAS, {p2, bc, bv}, {t});
  setAtomicOrdering(l, op, a[3], a[4]);
  return SVal::tensor(op->result());
}

// The element types tl.atomic_load/store take: integers and floats.
Value *atomicAccessPointer(Lowerer &l, const Arg &a, const char *fnName) {
  Value *ptr = pointerArg(l, a, fnName);
  if (ptr->type.dtype == DType::BlockPtr)
    l.error(a.span, std::string(fnName) +
                        "() takes a pointer or a tensor of pointers, not a block pointer");
  DType d = ptr->type.pointee;
  if (isPointer(d))
    l.error(a.span, std::string(fnName) + "() takes integer and floating-point elements, not " +
                        dtypeName(d));
  return ptr;
}

// tl.atomic_load(pointer, mask=None, sem=None, scope=None): the values, each
// read atomically with acquire (Triton's default) or relaxed ordering.
SVal atomicLoad(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *ptr = atomicAccessPointer(l, *a[0], "tl.atomic_load");
  std::vector<Value *> operands = {ptr};
  if (Value *mask = optionalMask(l, a[1])) {
    auto [p, m] = l.broadcastPair(ptr, mask, call.span);
    operands = {p, m};
  }
  Type t = Type::scalar(ptr->type.pointee).withShape(operands[0]->type.shape);
  Op *op = l.b_.create(OpKind::AtomicLoad, operands, {t});
  op->setAttr("sem", atomicOption(l, a[2], "sem", "acquire", {"acquire", "relaxed"}));
  op->setAttr("scope", atomicOption(l, a[3], "scope", "gpu", {"cta", "gpu", "sys"}));
  return SVal::tensor(op->result());
}

// tl.atomic_store(pointer, val, mask=None, sem=None, scope=None): each element
// written atomically, with release (the default) or relaxed ordering.
SVal atomicStore(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *ptr = atomicAccessPointer(l, *a[0], "tl.atomic_store");
  l.checkWritable(ptr, call.span);
  Op *op =
      l.b_.create(OpKind::AtomicStore, pointerValueMask(l, ptr, *a[1], a[2], call.span), {});
  op->setAttr("sem", atomicOption(l, a[3], "sem", "release", {"release", "relaxed"}));
  op->setAttr("scope", atomicOption(l, a[4], "scope", "gpu", {"cta", "gpu", "sys"}));
  return SVal::constant(ConstValue::none());
}

// tl.atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None):
// waits until each element equals the expected value, or until timeout_ns (one
// budget for the whole call) runs out; true where the value was seen.
SVal atomicPoll(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *ptr = atomicAccessPointer(l, *a[0], "tl.atomic_poll");
  DType d = ptr->type.pointee;
  int bits = dtypeBits(d);
  if (!isInteger(d) || (bits != 16 && bits != 32 && bits != 64))
    l.error(a[0]->span, std::string("tl.atomic_poll() takes 16-, 32- or 64-bit integer elements, not ") +
                            dtypeName(d));
  Value *expected = l.materialize(a[1]->val, a[1]->span, d);
  if (expected->type.dtype != d)
    expected = l.castTo(expected, d);
  auto [p, e] = l.broadcastPair(ptr, expected, call.span);
  std::vector<Value *> operands = {p, e};
  if (given(a[4])) {
    const SVal &t = a[4]->val;
    if (t.isConst() && t.c.kind == ConstValue::Int && t.c.i < 0)
      l.error(a[4]->span, "atomic_poll timeout_ns must be non-negative");
    Value *timeout = l.materialize(t, a[4]->span, DType::U64);
    if (timeout->type.isTensor() || !isInteger(timeout->type.dtype))
      l.error(a[4]->span, "atomic_poll timeout_ns must be a scalar integer, got " + t.describe());
    if (timeout->type.dtype != DType::U64)
      timeout = l.castTo(timeout, DType::U64);
    operands.push_back(timeout);
  }
  Op *op = l.b_.create(OpKind::AtomicPoll, operands, {p->type.withDType(DType::I1)});
  op->setAttr("sem", atomicOption(l, a[2], "sem", "acquire", {"acquire", "relaxed"}));
  op->setAttr("scope", atomicOption(l, a[3], "scope", "gpu", {"cta", "gpu", "sys"}));
  return SVal::tensor(op->result());
}

// A constexpr string argument.
std::string stringArg(Lowerer &l, const Arg &a, const char *what) {
  if (!a.val.isConst() || a.val.c.kind != ConstValue::Str)
    l.error(a.span, std::string(what) + " must be a constexpr string, got " + a.val.describe());
  return a.val.c.s;
}

// tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack): PTX
// run on each `pack` elements of the broadcast args; one tensor per dtype (a
// tuple when dtype is a tuple). The constraints must name as many registers as
// asmRegisters gives for each output and input.
SVal inlineAsmFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  std::string text = stringArg(l, *a[0], "asm");
  std::string constraints = stringArg(l, *a[1], "constraints");
  std::vector<Value *> inputs;
  const SVal &given = a[2]->val;
  std::vector<SVal> args = given.kind == SVal::Tuple ? given.elems : std::vector<SVal>{given};
  if (given.isConst() && given.c.kind == ConstValue::Tuple) { // constants only, or none
    args.clear();
    for (const ConstValue &c : given.c.elems)
      args.push_back(SVal::constant(c));
  }
  for (const SVal &x : args) {
    Value *v = l.materialize(x, a[2]->span);
    if (v->type.dtype == DType::BlockPtr)
      l.error(a[2]->span, "tl.inline_asm_elementwise() takes tensors, not block pointers");
    inputs.push_back(v);
  }
  std::vector<int64_t> shape;
  for (size_t k = 1; k < inputs.size(); ++k)
    inputs[0] = l.broadcastPair(inputs[0], inputs[k], call.span).first;
  if (!inputs.empty())
    shape = inputs[0]->type.shape;
  for (Value *&v : inputs)
    v = shape.empty() ? v : l.broadcastTo(v, shape, call.span);
  const ConstValue &dt = a[3]->val.c;
  bool many = a[3]->val.isConst() && dt.kind == ConstValue::Tuple;
  std::vector<DType> outs;
  for (const ConstValue &c : many ? dt.elems : std::vector<ConstValue>{dt}) {
    if (!a[3]->val.isConst() || c.kind != ConstValue::DTypeValue || isPointer(c.type.dtype) ||
        c.type.dtype == DType::I1)
      l.error(a[3]->span, "dtype must be a number type such as tl.float32 (or a tuple of them), "
                          "got " + a[3]->val.describe());
    outs.push_back(c.type.dtype);
  }
  if (outs.empty())
    l.error(a[3]->span, "tl.inline_asm_elementwise() must return at least one tensor");
  if (!a[4]->val.isConst() || a[4]->val.c.kind != ConstValue::Bool)
    l.error(a[4]->span, "is_pure must be a constexpr bool, got " + a[4]->val.describe());
  const ConstValue &pk = a[5]->val.c;
  if (!a[5]->val.isConst() || pk.kind != ConstValue::Int || pk.i < 1 || pk.i > 16 ||
      (pk.i & (pk.i - 1)))
    l.error(a[5]->span, "pack must be a constexpr power of 2 from 1 to 16, got " +
                            a[5]->val.describe());
  int pack = (int)pk.i;

  AsmConstraints parsed = parseAsmConstraints(constraints);
  if (!parsed.error.empty())
    l.error(a[1]->span, "bad constraints \"" + constraints + "\": " + parsed.error);
  auto registers = [&](const std::vector<DType> &types) {
    size_t n = 0;
    for (DType d : types)
      n += asmRegisters(d, pack).count;
    return n;
  };
  std::vector<DType> inTypes;
  for (Value *v : inputs)
    inTypes.push_back(v->type.dtype);
  size_t wantOut = registers(outs), wantIn = registers(inTypes);
  if (parsed.outputs.size() != wantOut || parsed.inputs.size() != wantIn)
    l.error(a[1]->span,
            "the constraints name " + std::to_string(parsed.outputs.size()) + " outputs and " +
                std::to_string(parsed.inputs.size()) + " inputs, but with pack=" +
                std::to_string(pack) + " the results need " + std::to_string(wantOut) +
                " output registers and the args " + std::to_string(wantIn) +
                " input registers (one per element of 32 bits or more; narrower elements "
                "packed into 32-bit registers, or one 16-bit register)");
  // Each register as wide as the constraint letter says.
  size_t index = 0;
  for (auto [letters, types] : {std::pair{&parsed.outputs, &outs}, std::pair{&parsed.inputs, &inTypes}})
    for (size_t k = 0, j = 0; k < types->size(); ++k) {
      AsmRegisters r = asmRegisters((*types)[k], pack);
      for (int c = 0; c < r.count; ++c, ++j, ++index)
        if (constraintBits((*letters)[j]) != r.bits)
          l.error(a[1]->span, "operand $" + std::to_string(index) + " ('" + (*letters)[j] +
                                  "') is a " + std::to_string(constraintBits((*letters)[j])) +
                                  "-bit register, but it holds " + std::to_string(r.bits) +
                                  " bits (" + std::to_string(pack) + " x " +
                                  dtypeName((*types)[k]) + "); use " +
                                  (r.bits == 16 ? "'h'" : r.bits == 32 ? "'r' or 'f'" : "'l' or 'd'"));
    }
  int largest = largestAsmOperand(text);
  if (largest >= (int)(wantOut + wantIn))
    l.error(a[0]->span, "the asm names $" + std::to_string(largest) + ", but there are only " +
                            std::to_string(wantOut + wantIn) + " operands");
  std::vector<Type> types;
  for (DType d : outs)
    types.push_back(Type::scalar(d).withShape(shape));
  Op *op = l.b_.create(OpKind::InlineAsm, inputs, types);
  op->setAttr("asm", text);
  op->setAttr("constraints", constraints);
  op->setAttr("pack", (int64_t)pack);
  op->setAttr("pure", (int64_t)a[4]->val.c.truthy());
  if (!many)
    return SVal::tensor(op->result());
  std::vector<SVal> results;
  for (size_t k = 0; k < outs.size(); ++k)
    results.push_back(SVal::tensor(op->result((int)k)));
  return SVal::tuple(results);
}

SVal makeBlockPtr(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *base = pointerArg(l, *a[0], "tl.make_block_ptr");
  if (base->type.isTensor() || base->type.dtype != DType::Ptr)
    l.error(a[0]->span, "tl.make_block_ptr() needs a scalar pointer base, got " + base->type.str());
  std::vector<int64_t> block = l.shapeArg(*a[4], "block_shape");
  l.checkBlockShape(block, a[4]->span);
  size_t rank = block.size();
  std::vector<Value *> operands = {base};
  const char *names[] = {"shape", "strides", "offsets"};
  for (int k = 0; k < 3; ++k) {
    const SVal &v = a[k + 1]->val;
    std::vector<SVal> elems;
    if (v.kind == SVal::Tuple)
      elems = v.elems;
    else if (v.isConst() && v.c.kind == ConstValue::Tuple)
      for (auto &c : v.c.elems)
        elems.push_back(SVal::constant(c));
    else
      l.error(a[k + 1]->span, std::string(names[k]) + " must be a tuple");
    if (elems.size() != rank)
      l.error(a[k + 1]->span, std::string(names[k]) + " has " + std::to_string(elems.size()) +
                                  " entries but block_shape has " + std::to_string(rank));
    for (auto &e : elems) {
      Value *x = l.materialize(e, a[k + 1]->span, k == 2 ? DType::I32 : DType::I64);
      operands.push_back(x);
    }
  }
  std::vector<int64_t> order = l.shapeArg(*a[5], "order");
  Op *op = l.b_.create(OpKind::MakeBlockPtr, operands,
                       {Type::blockPointer(base->type.pointee, block)});
  op->setAttr("order", order);
  return SVal::tensor(op->result());
}

// A list of offsets, one per block dim.
std::vector<SVal> offsetList(Lowerer &l, const Arg &a, size_t rank, const char *fnName) {
  std::vector<SVal> elems;
  if (a.val.kind == SVal::Tuple)
    elems = a.val.elems;
  else if (a.val.isConst() && a.val.c.kind == ConstValue::Tuple)
    for (auto &c : a.val.c.elems)
      elems.push_back(SVal::constant(c));
  if (elems.size() != rank)
    l.error(a.span, std::string(fnName) + "() needs one offset per block dimension");
  return elems;
}

SVal advance(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *p = l.tensorArg(*a[0], "base");
  if (p->type.dtype != DType::BlockPtr)
    l.error(a[0]->span, "tl.advance() needs a block pointer, got " + p->type.str());
  std::vector<SVal> elems = offsetList(l, *a[1], p->type.blockShape.size(), "tl.advance");
  std::vector<Value *> operands = {p};
  for (auto &e : elems)
    operands.push_back(l.materialize(e, a[1]->span, DType::I32));
  return SVal::tensor(l.b_.create1(OpKind::Advance, operands, p->type));
}

ConstValue constArg(Lowerer &l, const Arg &a, const char *fn);

// --- join, split, interleave, cat: built from ops every backend has. join
// selects between its operands along a new last dim of 2; split takes each half
// with a max, over that dim, of the bits as signed integers (exact for every
// value, NaN and -0.0 included).

// The index along a new last dim of 2, broadcast to `shape` (whose last dim is 2).
Value *lastDimIndex(Lowerer &l, const std::vector<int64_t> &shape, const Span &span) {
  Op *range = l.b_.create(OpKind::MakeRange, {}, {Type::scalar(DType::I32).withShape({2})});
  range->setAttr("start", (int64_t)0);
  range->setAttr("end", (int64_t)2);
  Value *r = range->result();
  if (shape.size() > 1)
    r = l.reshape(r, [&] {
      std::vector<int64_t> s(shape.size(), 1);
      s.back() = 2;
      return s;
    }(), span);
  return l.broadcastTo(r, shape, span);
}

Value *joinValues(Lowerer &l, Value *a, Value *b, const Span &span) {
  if (a->type.dtype != b->type.dtype)
    l.error(span, "tl.join() needs two tensors of one type, got " + a->type.str() + " and " +
                      b->type.str());
  auto [x, y] = l.broadcastPair(a, b, span);
  std::vector<int64_t> shape = x->type.shape;
  shape.push_back(2);
  auto widen = [&](Value *v) {
    v = v->type.isScalar() ? v : l.expandDims(v, v->type.rank());
    return l.broadcastTo(v, shape, span);
  };
  Value *first = l.b_.create1(OpKind::CmpEq,
                              {lastDimIndex(l, shape, span),
                               l.splatTo(l.constScalar(ConstValue::integer(0), DType::I32), shape)},
                              Type::scalar(DType::I1).withShape(shape));
  Value *wx = widen(x), *wy = widen(y);
  return l.b_.create1(OpKind::Select, {first, wx, wy}, wx->type);
}

SVal joinFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  return SVal::tensor(joinValues(l, l.materialize(a[0]->val, a[0]->span),
                                 l.materialize(a[1]->val, a[1]->span), call.span));
}

// The one value of each line along `axis` where `match` holds, exactly: the
// max, as signed integers of the same width, of the bits where it holds and
// the lowest integer elsewhere (NaN and -0.0 come through unchanged).
Value *selectAlong(Lowerer &l, Value *match, Value *values, int axis, const Span &span) {
  DType d = values->type.dtype;
  int bits = std::max(dtypeBits(d), 8);
  DType asInt = bits == 8 ? DType::I8 : bits == 16 ? DType::I16 : bits == 32 ? DType::I32 : DType::I64;
  Value *ints = d == DType::I1 ? l.castTo(values, DType::I8)
                : d == asInt  ? values
                              : l.b_.create1(OpKind::Bitcast, {values}, values->type.withDType(asInt));
  int64_t lowest = bits == 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
  Value *floor = l.splatTo(l.constScalar(ConstValue::integer(lowest), asInt), ints->type.shape);
  Value *picked = l.b_.create1(OpKind::Select, {match, ints, floor}, ints->type);
  Value *m = l.reduce(OpKind::ReduceMax, picked, SVal::constant(ConstValue::integer(axis)), false,
                      span)
                 .v;
  return d == DType::I1 ? l.castTo(m, DType::I1)
         : d == asInt  ? m
                       : l.b_.create1(OpKind::Bitcast, {m}, m->type.withDType(d));
}

std::pair<Value *, Value *> splitValues(Lowerer &l, Value *x, const Span &span) {
  std::vector<int64_t> shape = x->type.shape;
  Value *index = lastDimIndex(l, shape, span);
  Value *halves[2];
  for (int k = 0; k < 2; ++k) {
    Value *is = l.b_.create1(
        OpKind::CmpEq, {index, l.splatTo(l.constScalar(ConstValue::integer(k), DType::I32), shape)},
        Type::scalar(DType::I1).withShape(shape));
    halves[k] = selectAlong(l, is, x, (int)shape.size() - 1, span);
  }
  return {halves[0], halves[1]};
}

SVal splitFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "a");
  if (x->type.isScalar() || x->type.shape.back() != 2)
    l.error(a[0]->span, "tl.split() needs a tensor whose last dim is 2, got " + x->type.str());
  auto [lo, hi] = splitValues(l, x, call.span);
  return SVal::tuple({SVal::tensor(lo), SVal::tensor(hi)});
}

Value *permuteValue(Lowerer &l, Value *x, const std::vector<int64_t> &order) {
  std::vector<int64_t> shape;
  for (int64_t d : order)
    shape.push_back(x->type.shape[d]);
  Op *t = l.b_.create(OpKind::Trans, {x}, {x->type.withShape(shape)});
  t->setAttr("order", order);
  return t->result();
}

// The dims in order with `axis` moved last, and the inverse of an order.
std::vector<int64_t> axisLast(int rank, int axis) {
  std::vector<int64_t> order;
  for (int d = 0; d < rank; ++d)
    if (d != axis)
      order.push_back(d);
  order.push_back(axis);
  return order;
}

std::vector<int64_t> inverseOrder(const std::vector<int64_t> &order) {
  std::vector<int64_t> back(order.size());
  for (size_t d = 0; d < order.size(); ++d)
    back[order[d]] = (int64_t)d;
  return back;
}

// tl.flip(x, dim=None): reversed along dim (the last by default). The dim,
// of size 2^k, is reshaped into k dims of 2, whose halves are swapped in turn.
Value *flipValue(Lowerer &l, Value *x, int dim, const Span &span);

SVal flipFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "x");
  int rank = x->type.rank();
  if (rank == 0)
    return SVal::tensor(x);
  int dim = given(a[1]) ? normalizeAxis(l, constArg(l, *a[1], "tl.flip").asInt(), rank, a[1]->span)
                        : rank - 1;
  return SVal::tensor(flipValue(l, x, dim, call.span));
}

Value *flipValue(Lowerer &l, Value *x, int dim, const Span &span) {
  std::vector<int64_t> shape = x->type.shape, split(shape.begin(), shape.begin() + dim);
  int steps = 0;
  while ((int64_t{1} << steps) < shape[dim])
    ++steps;
  for (int i = 0; i < steps; ++i)
    split.push_back(2);
  split.insert(split.end(), shape.begin() + dim + 1, shape.end());
  Value *y = l.reshape(x, split, span);
  int n = (int)split.size();
  for (int i = 0; i < steps; ++i) {
    std::vector<int64_t> toLast = axisLast(n, dim + i);
    auto [lo, hi] = splitValues(l, permuteValue(l, y, toLast), span);
    y = permuteValue(l, joinValues(l, hi, lo, span), inverseOrder(toLast));
  }
  return l.reshape(y, shape, span);
}

// tl.interleave(a, b): a[0], b[0], a[1], b[1], ... along the last dim.
SVal interleaveFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *j = joinValues(l, l.tensorArg(*a[0], "a"), l.tensorArg(*a[1], "b"), call.span);
  std::vector<int64_t> shape(j->type.shape.begin(), j->type.shape.end() - 1);
  if (shape.empty())
    return SVal::tensor(j);
  shape.back() *= 2;
  return SVal::tensor(l.reshape(j, shape, call.span));
}

// tl.cat(a, b, can_reorder=..., dim=0): b after a along dim (in order, whatever
// can_reorder says): join's new last dim moved before dim, then merged into it.
SVal catFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input"), *y = l.tensorArg(*a[1], "other");
  if (x->type.shape != y->type.shape || x->type.isScalar())
    l.error(call.span, "tl.cat() needs two tensors of one shape, got " + x->type.str() + " and " +
                           y->type.str());
  int rank = x->type.rank();
  int dim = given(a[3]) ? normalizeAxis(l, constArg(l, *a[3], "tl.cat").asInt(), rank, a[3]->span)
                        : 0;
  Value *j = joinValues(l, x, y, call.span); // (..., 2)
  std::vector<int64_t> order;
  for (int d = 0; d < rank; ++d)
    order.push_back(d);
  order.insert(order.begin() + dim, rank);
  std::vector<int64_t> out = x->type.shape;
  out[dim] *= 2;
  return SVal::tensor(l.reshape(permuteValue(l, j, order), out, call.span));
}

// --- reductions with any combine function (tl.reduce, xor_sum, reduce_or): a
// tree of split and combine. The axis goes last; while it is longer than 1 it
// is cut into pairs, split, and each pair combined, halving it.

using Combine = std::function<std::vector<Value *>(const std::vector<Value *> &lo,
                                                   const std::vector<Value *> &hi)>;

// The even and odd elements of each tensor's last dim.
std::pair<std::vector<Value *>, std::vector<Value *>>
evenAndOdd(Lowerer &l, const std::vector<Value *> &xs, const Span &span) {
  std::vector<int64_t> pairs = xs[0]->type.shape;
  pairs.back() /= 2;
  pairs.push_back(2);
  std::vector<Value *> even, odd;
  for (Value *x : xs) {
    auto [e, o] = splitValues(l, l.reshape(x, pairs, span), span);
    even.push_back(e);
    odd.push_back(o);
  }
  return {even, odd};
}

std::vector<Value *> treeReduce(Lowerer &l, std::vector<Value *> xs, int axis, bool keepDims,
                                const Combine &combine, const Span &span) {
  std::vector<int64_t> shape = xs[0]->type.shape;
  int rank = (int)shape.size();
  std::vector<int64_t> toLast = axisLast(rank, axis);
  for (Value *&x : xs)
    x = permuteValue(l, x, toLast);
  std::vector<int64_t> rest(toLast.size() - 1);
  for (size_t d = 0; d + 1 < toLast.size(); ++d)
    rest[d] = shape[toLast[d]];
  for (int64_t n = shape[axis]; n > 1; n /= 2) {
    auto [lo, hi] = evenAndOdd(l, xs, span);
    xs = combine(lo, hi);
  }
  for (Value *&x : xs) {
    x = l.reshape(x, rest, span); // drops the axis, now of size 1
    if (keepDims) {
      std::vector<int64_t> kept = shape;
      kept[axis] = 1;
      x = l.reshape(x, kept, span);
    }
  }
  return xs;
}

// The tensors of a reduction's input (one, or a tuple) and its axis; axis=None
// reduces the flattened tensors along their one dim.
std::pair<std::vector<Value *>, int> reductionInputs(Lowerer &l, const Arg &input,
                                                     const std::optional<Arg> &axisArg,
                                                     const char *fnName) {
  std::vector<Value *> xs;
  if (input.val.kind == SVal::Tuple)
    for (const SVal &e : input.val.elems)
      xs.push_back(l.materialize(e, input.span));
  else
    xs.push_back(l.materialize(input.val, input.span));
  for (Value *&x : xs) {
    if (x->type.isScalar())
      x = l.splatTo(x, {1});
    if (x->type.shape != xs[0]->type.shape)
      l.error(input.span, std::string(fnName) + "(): the tensors it takes together must have one "
                                                "shape, got " +
                              x->type.str() + " and " + xs[0]->type.str());
  }
  if (!given(axisArg)) {
    for (Value *&x : xs)
      x = l.reshape(x, {x->type.numel()}, input.span);
    return {xs, 0};
  }
  int axis = normalizeAxis(l, constArg(l, *axisArg, fnName).asInt(), xs[0]->type.rank(),
                           axisArg->span);
  return {xs, axis};
}

SVal reductionResult(const std::vector<Value *> &xs, bool tuple) {
  if (!tuple)
    return SVal::tensor(xs[0]);
  std::vector<SVal> out;
  for (Value *x : xs)
    out.push_back(SVal::tensor(x));
  return SVal::tuple(out);
}

// tl.reduce(input, axis, combine_fn, keep_dims=False): combine_fn, a @jit
// function of (a..., b...) returning the combined values, applied in a tree.
// Applies a @jit combine function of (a..., b...) returning k values: the
// combine step of tl.reduce and tl.associative_scan.
Combine jitCombine(Lowerer &l, const SVal &fnArg, const Span &fnSpan, size_t k, const Expr &call,
                   const char *fnName) {
  if (fnArg.kind != SVal::JitFn)
    l.error(fnSpan, std::string(fnName) + "() needs a @jit combine function, got " +
                        fnArg.describe());
  std::shared_ptr<JitFunctionRef> fn = fnArg.fn;
  return [&l, fn, k, &call, fnName](const std::vector<Value *> &lo, const std::vector<Value *> &hi) {
    CallArgs args;
    args.span = call.span;
    for (const auto *side : {&lo, &hi})
      for (Value *v : *side)
        args.positional.push_back(Arg{SVal::tensor(v), call.span});
    SVal r = l.inlineJit(*fn, args, call);
    std::vector<Value *> out;
    for (const SVal &e : r.kind == SVal::Tuple ? r.elems : std::vector<SVal>{r})
      out.push_back(l.materialize(e, call.span));
    if (out.size() != k)
      l.error(call.span, std::string("the combine function of ") + fnName + "() must return " +
                             std::to_string(k) + " value(s), one per input, got " +
                             std::to_string(out.size()));
    for (size_t i = 0; i < k; ++i)
      out[i] = l.broadcastTo(out[i], lo[i]->type.shape, call.span);
    return out;
  };
}

// An op of `kind` over `xs` whose region is `combine` applied to scalars
// (lhs..., rhs...), the results cast back to the inputs' types; null (and the
// op gone) when the combine function uses anything but elementwise ops, which
// only the tree of whole-tensor steps can run.
Op *withCombineRegion(Lowerer &l, OpKind kind, const std::vector<Value *> &xs,
                      std::vector<Type> resultTypes, const Combine &combine) {
  Block *outer = l.b_.block();
  Op *op = l.b_.create(kind, xs, std::move(resultTypes), 1);
  Block *body = op->regions[0].get();
  std::vector<Value *> lhs, rhs;
  for (Value *x : xs)
    lhs.push_back(body->addArg(Type::scalar(x->type.dtype)));
  for (Value *x : xs)
    rhs.push_back(body->addArg(Type::scalar(x->type.dtype)));
  l.b_.setBlock(body);
  std::vector<Value *> out = combine(lhs, rhs);
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i]->type != lhs[i]->type)
      out[i] = l.castTo(out[i], lhs[i]->type.dtype);
  l.b_.create(OpKind::Yield, out, {});
  l.b_.setBlock(outer);
  for (const auto &inner : body->ops)
    if (!inner->has(ELEMENTWISE) && inner->kind != OpKind::Constant &&
        inner->kind != OpKind::Yield) {
      outer->ops.pop_back();
      return nullptr;
    }
  return op;
}

// A reduction with a combine function: one reduce_with op, or the tree of
// whole-tensor steps when the function is not elementwise.
SVal reduceWithCombine(Lowerer &l, std::vector<Value *> xs, int axis, bool keep,
                       const Combine &combine, const Span &span, bool tuple) {
  std::vector<int64_t> shape = xs[0]->type.shape, rest = shape;
  rest.erase(rest.begin() + axis);
  std::vector<Type> types;
  for (Value *x : xs)
    types.push_back(x->type.withShape(rest));
  Op *op = withCombineRegion(l, OpKind::ReduceWith, xs, types, combine);
  if (!op)
    return reductionResult(treeReduce(l, xs, axis, keep, combine, span), tuple);
  op->setAttr("axis", (int64_t)axis);
  std::vector<Value *> out;
  for (auto &r : op->results) {
    Value *v = r.get();
    if (keep) {
      std::vector<int64_t> kept = shape;
      kept[axis] = 1;
      v = l.reshape(v, kept, span);
    }
    out.push_back(v);
  }
  return reductionResult(out, tuple);
}

SVal reduceFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  auto [xs, axis] = reductionInputs(l, *a[0], a[1], "tl.reduce");
  bool keep = given(a[3]) && a[3]->val.c.truthy();
  Combine combine = jitCombine(l, a[2]->val, a[2]->span, xs.size(), call, "tl.reduce");
  return reduceWithCombine(l, xs, axis, keep, combine, call.span, a[0]->val.kind == SVal::Tuple);
}

// xor_sum and reduce_or: a reduction whose combine is one bitwise op.
SVal bitwiseReduce(Lowerer &l, Args &a, const Expr &call, OpKind op, const char *fnName) {
  auto [xs, axis] = reductionInputs(l, *a[0], a[1], fnName);
  if (!isInteger(xs[0]->type.dtype) && xs[0]->type.dtype != DType::I1)
    l.error(a[0]->span, std::string(fnName) + "() needs integers, got " + xs[0]->type.str());
  bool keep = given(a[2]) && a[2]->val.c.truthy();
  Combine combine = [&](const std::vector<Value *> &lo, const std::vector<Value *> &hi) {
    return std::vector<Value *>{l.elementwise(op, {lo[0], hi[0]}, call.span)};
  };
  return reduceWithCombine(l, xs, axis, keep, combine, call.span, false);
}

// A range 0..n-1 of type `d` laid along dim `dim` of `shape` (of size n), broadcast.
Value *rangeAlong(Lowerer &l, const std::vector<int64_t> &shape, int dim, DType d,
                  const Span &span) {
  int64_t n = shape[dim];
  Op *range = l.b_.create(OpKind::MakeRange, {}, {Type::scalar(DType::I32).withShape({n})});
  range->setAttr("start", (int64_t)0);
  range->setAttr("end", n);
  std::vector<int64_t> ones(shape.size(), 1);
  ones[dim] = n;
  Value *r = l.castTo(l.reshape(range->result(), ones, span), d);
  return l.broadcastTo(r, shape, span);
}

// tl.gather(src, index, axis): out[..., i, ...] = src[..., index[..., i, ...], ...].
// Each output compares its index with every position along the axis and keeps
// the match: a max of the bits, exact for every value.
SVal gatherFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *src = l.tensorArg(*a[0], "src"), *index = l.tensorArg(*a[1], "index");
  int rank = src->type.rank();
  int axis = normalizeAxis(l, constArg(l, *a[2], "tl.gather").asInt(), rank, a[2]->span);
  if (index->type.rank() != rank || !isInteger(index->type.dtype))
    l.error(call.span, "tl.gather() needs an integer index of the source's rank, got " +
                           index->type.str() + " for " + src->type.str());
  for (int d = 0; d < rank; ++d)
    if (d != axis && index->type.shape[d] != src->type.shape[d])
      l.error(call.span, "tl.gather(): index " + index->type.str() + " and source " +
                             src->type.str() + " differ outside the gathered axis");
  Op *op = l.b_.create(OpKind::Gather, {src, index}, {index->type.withDType(src->type.dtype)});
  op->setAttr("axis", (int64_t)axis);
  return SVal::tensor(op->result());
}

// tl.histogram(input, num_bins, mask=None): how many inputs equal each bin
// 0..num_bins-1 (others count nowhere), as int32.
SVal histogramFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  if (x->type.rank() != 1 || !isInteger(x->type.dtype))
    l.error(a[0]->span, "tl.histogram() needs a 1-D integer tensor, got " + x->type.str());
  int64_t bins = constArg(l, *a[1], "tl.histogram").asInt();
  l.checkBlockShape({bins}, a[1]->span);
  std::vector<Value *> operands = {x};
  if (Value *mask = optionalMask(l, a[2]))
    operands.push_back(l.broadcastTo(mask, x->type.shape, a[2]->span));
  return SVal::tensor(l.b_.create1(OpKind::Histogram, operands,
                                   Type::scalar(DType::I32).withShape({bins})));
}

// --- scans with any combine function (tl.associative_scan, tl.cumprod), on the
// last dim: the even and odd elements are split, each pair combined, the pairs
// scanned recursively, and the elements rebuilt from them. Besides the
// inclusive scan each level returns the exclusive one (undefined at 0).
struct ScanLevel {
  std::vector<Value *> inclusive, exclusive;
};

ScanLevel scanLastDim(Lowerer &l, const std::vector<Value *> &xs, const Combine &combine,
                      const Span &span) {
  std::vector<int64_t> shape = xs[0]->type.shape;
  int64_t n = shape.back();
  if (n == 1)
    return {xs, xs};
  auto [even, odd] = evenAndOdd(l, xs, span);
  ScanLevel sums = scanLastDim(l, combine(even, odd), combine, span);
  // Element 2i is the pairs before it combined with it (just itself for i = 0).
  std::vector<int64_t> half = sums.inclusive[0]->type.shape;
  Value *first = l.elementwise(
      OpKind::CmpEq,
      {rangeAlong(l, half, (int)half.size() - 1, DType::I32, span),
       l.splatTo(l.constScalar(ConstValue::integer(0), DType::I32), half)},
      span);
  std::vector<Value *> withBefore = combine(sums.exclusive, even), evenIncl;
  for (size_t k = 0; k < xs.size(); ++k)
    evenIncl.push_back(l.b_.create1(OpKind::Select, {first, even[k], withBefore[k]},
                                    even[k]->type));
  ScanLevel out;
  for (size_t k = 0; k < xs.size(); ++k) {
    out.inclusive.push_back(l.reshape(joinValues(l, evenIncl[k], sums.inclusive[k], span), shape, span));
    out.exclusive.push_back(l.reshape(joinValues(l, sums.exclusive[k], evenIncl[k], span), shape, span));
  }
  return out;
}

std::vector<Value *> scanAlong(Lowerer &l, std::vector<Value *> xs, int axis, bool reverse,
                               const Combine &combine, const Span &span) {
  std::vector<Type> types;
  for (Value *x : xs)
    types.push_back(x->type);
  // One scan_with op when the combine function is elementwise, else the tree.
  if (Op *op = withCombineRegion(l, OpKind::ScanWith, xs, types, combine)) {
    op->setAttr("axis", (int64_t)axis);
    op->setAttr("reverse", (int64_t)reverse);
    std::vector<Value *> out;
    for (auto &r : op->results)
      out.push_back(r.get());
    return out;
  }
  int rank = xs[0]->type.rank();
  std::vector<int64_t> toLast = axisLast(rank, axis), back = inverseOrder(toLast);
  for (Value *&x : xs)
    x = permuteValue(l, x, toLast);
  auto flipLast = [&](Value *x) { return flipValue(l, x, x->type.rank() - 1, span); };
  if (reverse)
    for (Value *&x : xs)
      x = flipLast(x);
  std::vector<Value *> out = scanLastDim(l, xs, combine, span).inclusive;
  for (Value *&x : out) {
    if (reverse)
      x = flipLast(x);
    x = permuteValue(l, x, back);
  }
  return out;
}

// tl.associative_scan(input, axis, combine_fn, reverse=False).
SVal associativeScanFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  auto [xs, axis] = reductionInputs(l, *a[0], a[1], "tl.associative_scan");
  Combine step = jitCombine(l, a[2]->val, a[2]->span, xs.size(), call, "tl.associative_scan");
  std::vector<DType> types;
  for (Value *x : xs)
    types.push_back(x->type.dtype);
  // A scan's values keep their types from level to level.
  Combine combine = [&](const std::vector<Value *> &lo, const std::vector<Value *> &hi) {
    std::vector<Value *> out = step(lo, hi);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = l.castTo(out[i], types[i]);
    return out;
  };
  bool reverse = given(a[3]) && a[3]->val.c.truthy();
  return reductionResult(scanAlong(l, xs, axis, reverse, combine, call.span),
                         a[0]->val.kind == SVal::Tuple);
}

// tl.cumprod(input, axis=0, reverse=False, dtype=None).
SVal cumprodFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  if (given(a[3]))
    x = l.castTo(x, l.dtypeArg(*a[3], "dtype"));
  else if (isInteger(x->type.dtype) && dtypeBits(x->type.dtype) < 32) // as Triton widens
    x = l.castTo(x, isUnsigned(x->type.dtype) ? DType::U32 : DType::I32);
  if (x->type.isScalar())
    x = l.splatTo(x, {1});
  int axis = given(a[1]) ? normalizeAxis(l, constArg(l, *a[1], "tl.cumprod").asInt(),
                                         x->type.rank(), a[1]->span)
                         : 0;
  Combine combine = [&](const std::vector<Value *> &lo, const std::vector<Value *> &hi) {
    return std::vector<Value *>{l.elementwise(OpKind::Mul, {lo[0], hi[0]}, call.span)};
  };
  bool reverse = given(a[2]) && a[2]->val.c.truthy();
  return SVal::tensor(scanAlong(l, {x}, axis, reverse, combine, call.span)[0]);
}

// --- tl.sort and tl.topk: Triton's bitonic network on the last dim, one op.
Value *bitonicSort(Lowerer &l, Value *x, bool descending, bool mergeOnly) {
  Op *op = l.b_.create(OpKind::Sort, {x}, {x->type});
  op->setAttr("descending", (int64_t)descending);
  op->setAttr("merge_only", (int64_t)mergeOnly);
  return op->result();
}

// The first k elements of the last dim: halved (a split of the front half) until k are left.
Value *firstOfLastDim(Lowerer &l, Value *x, int64_t k, const Span &span) {
  int rank = x->type.rank();
  while (x->type.shape.back() > k) {
    std::vector<int64_t> halves(x->type.shape.begin(), x->type.shape.end() - 1);
    int64_t m = x->type.shape.back() / 2;
    halves.insert(halves.end(), {2, m});
    std::vector<int64_t> order;
    for (int d = 0; d < rank - 1; ++d)
      order.push_back(d);
    order.insert(order.end(), {rank, rank - 1});
    x = splitValues(l, permuteValue(l, l.reshape(x, halves, span), order), span).first;
  }
  return x;
}

SVal sortOrTopk(Lowerer &l, Value *x, const std::optional<Arg> &dimArg, bool descending,
                int64_t k, const Span &span, const char *fnName, bool mergeOnly = false) {
  int rank = x->type.rank();
  if (rank == 0)
    return SVal::tensor(x);
  int dim = given(dimArg) && !dimArg->val.isNone()
                ? normalizeAxis(l, constArg(l, *dimArg, fnName).asInt(), rank, dimArg->span)
                : rank - 1;
  std::vector<int64_t> toLast = axisLast(rank, dim), back = inverseOrder(toLast);
  if ((x->type.shape[dim] & (x->type.shape[dim] - 1)) != 0)
    l.error(span, std::string(fnName) + "(): the dim's size must be a power of 2, got " +
                      std::to_string(x->type.shape[dim]));
  Value *y = bitonicSort(l, permuteValue(l, x, toLast), descending, mergeOnly);
  if (k > 0) {
    if (k > y->type.shape.back() || (k & (k - 1)))
      l.error(span, std::string(fnName) + "(): k must be a power of 2 no larger than the dim, got " +
                        std::to_string(k));
    y = firstOfLastDim(l, y, k, span);
  }
  return SVal::tensor(permuteValue(l, y, back));
}

// tl.map_elementwise(scalar_fn, *args, pack=1): scalar_fn applied to every
// element; inlined on whole tensors, as its ops are elementwise (a branch on an
// element's value is refused there with the usual message).
SVal mapElementwiseFn(Lowerer &l, Args &a, std::vector<Arg> &rest, const Expr &call) {
  if (a[0]->val.kind != SVal::JitFn)
    l.error(a[0]->span, "tl.map_elementwise() needs a @jit function, got " + a[0]->val.describe());
  std::vector<Value *> xs;
  for (const Arg &r : rest)
    xs.push_back(l.materialize(r.val, r.span));
  for (size_t i = 1; i < xs.size(); ++i) {
    auto [x, y] = l.broadcastPair(xs[0], xs[i], call.span);
    xs[0] = x;
    xs[i] = y;
  }
  CallArgs args;
  args.span = call.span;
  for (size_t i = 0; i < xs.size(); ++i)
    args.positional.push_back(Arg{SVal::tensor(l.broadcastTo(xs[i], xs[0]->type.shape, call.span)),
                                  rest[i].span});
  return l.inlineJit(*a[0]->val.fn, args, call);
}

SVal sortFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  bool descending = given(a[2]) && a[2]->val.c.truthy();
  return sortOrTopk(l, l.tensorArg(*a[0], "x"), a[1], descending, 0, call.span, "tl.sort");
}

// tl.bitonic_merge(x, dim=None, descending=0): sorts x along dim when it is a
// bitonic sequence there (rising then falling, or the reverse).
SVal bitonicMergeFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  bool descending = given(a[2]) && a[2]->val.c.truthy();
  return sortOrTopk(l, l.tensorArg(*a[0], "x"), a[1], descending, 0, call.span,
                    "tl.bitonic_merge", true);
}

SVal topkFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  int64_t k = constArg(l, *a[1], "tl.topk").asInt();
  bool descending = !given(a[3]) || a[3]->val.c.truthy();
  return sortOrTopk(l, l.tensorArg(*a[0], "x"), a[2], descending, k, call.span, "tl.topk");
}

// tl.make_tensor_descriptor(base, shape, strides, block_shape): tiles of
// block_shape of a row-major tensor; desc.load(offsets) and desc.store(offsets,
// value) read and write the tile at `offsets`, zeros outside the tensor, as
// Triton's (TMA) descriptors do. Built on a block pointer at offset 0.
// The make_block_ptr op a block pointer (a tensor descriptor) was made by,
// through the advances since; nullptr when it came through a loop or an if.
const Op *blockPtrOrigin(const Value *v) {
  while (v->def && v->def->kind == OpKind::Advance)
    v = v->def->operand(0);
  return v->def && v->def->kind == OpKind::MakeBlockPtr ? v->def : nullptr;
}

SVal makeTensorDescriptor(Lowerer &l, Args &a, std::vector<Arg> &rest, const Expr &call) {
  std::vector<int64_t> block = l.shapeArg(*a[3], "block_shape");
  std::string padding = "zero";
  if (given(a[4])) {
    if (!(a[4]->val.isConst() && a[4]->val.c.kind == ConstValue::Str &&
          (a[4]->val.c.s == "zero" || a[4]->val.c.s == "nan")))
      l.error(a[4]->span, "tl.make_tensor_descriptor(): padding_option must be 'zero' or 'nan'");
    padding = a[4]->val.c.s;
  }
  std::vector<ConstValue> zeros, order;
  for (size_t d = 0; d < block.size(); ++d) {
    zeros.push_back(ConstValue::integer(0));
    order.push_back(ConstValue::integer((int64_t)(block.size() - 1 - d)));
  }
  Args bp(6);
  bp[0] = a[0];
  bp[1] = a[1];
  bp[2] = a[2];
  bp[3] = Arg{SVal::constant(ConstValue::tuple(zeros)), call.span};
  bp[4] = a[3];
  bp[5] = Arg{SVal::constant(ConstValue::tuple(order)), call.span};
  SVal desc = makeBlockPtr(l, bp, rest, call);
  desc.v->def->setAttr("padding", padding); // what its loads give outside the tensor
  return desc;
}

// The tile of descriptor a[0] at offsets a[1]: its block pointer moved there.
Value *descriptorTile(Lowerer &l, Args &a, const Expr &call, const char *fnName) {
  Value *p = l.tensorArg(*a[0], "desc");
  if (p->type.dtype != DType::BlockPtr)
    l.error(a[0]->span, std::string(fnName) + "() needs a tensor descriptor, got " +
                            p->type.str());
  Args adv(2);
  adv[0] = a[0];
  adv[1] = a[1];
  std::vector<Arg> none;
  return advance(l, adv, none, call).v;
}

SVal loadTensorDescriptor(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *p = descriptorTile(l, a, call, "tl.load_tensor_descriptor");
  std::vector<int64_t> all;
  for (size_t d = 0; d < p->type.blockShape.size(); ++d)
    all.push_back((int64_t)d);
  Op *op = l.b_.create(OpKind::LoadBlock, {p},
                       {Type::scalar(p->type.pointee).withShape(p->type.blockShape)});
  op->setAttr("boundary_check", all);
  const Op *origin = blockPtrOrigin(p);
  op->setAttr("padding", origin ? origin->strAttr("padding", "zero") : std::string("zero"));
  return SVal::tensor(op->result());
}

SVal storeTensorDescriptor(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *p = descriptorTile(l, a, call, "tl.store_tensor_descriptor");
  Value *v = l.materialize(a[2]->val, a[2]->span, p->type.pointee);
  v = l.broadcastTo(v, p->type.blockShape, a[2]->span);
  std::vector<int64_t> all;
  for (size_t d = 0; d < p->type.blockShape.size(); ++d)
    all.push_back((int64_t)d);
  Op *op = l.b_.create(OpKind::StoreBlock, {p, v}, {});
  op->setAttr("boundary_check", all);
  return SVal::constant(ConstValue::none());
}

// The addresses and the in-bounds mask of the elements at indices idx[d]
// along each dim d (broadcastable to one shape) of the descriptor `origin` made.
std::pair<Value *, Value *> descriptorElements(Lowerer &l, const Op *origin,
                                               const std::vector<SVal> &idx, const Span &span) {
  auto operand = [&](size_t i) { return SVal::tensor(origin->operand(i)); };
  size_t rank = idx.size();
  SVal offset, mask, zero = SVal::constant(ConstValue::integer(0));
  for (size_t d = 0; d < rank; ++d) {
    SVal term = l.binary(BinOpKind::Mul, idx[d], operand(1 + rank + d), span);
    SVal inside = l.binary(BinOpKind::BitAnd, l.compare(CmpOpKind::GtE, idx[d], zero, span),
                           l.compare(CmpOpKind::Lt, idx[d], operand(1 + d), span), span);
    offset = d ? l.binary(BinOpKind::Add, offset, term, span) : term;
    mask = d ? l.binary(BinOpKind::BitAnd, mask, inside, span) : inside;
  }
  SVal ptrs = l.binary(BinOpKind::Add, operand(0), offset, span);
  return l.broadcastPair(l.materialize(ptrs, span), l.materialize(mask, span), span);
}

// desc.gather(x_offsets, y) / desc.scatter(value, x_offsets, y) on a 2-D
// descriptor with block_shape [1, N]: rows x_offsets[i], columns y .. y+N-1,
// as one masked load or store (zeros outside the tensor, nothing stored there).
// Returns the pointers and the mask, both [len(x_offsets), N].
std::pair<Value *, Value *> descriptorRows(Lowerer &l, Args &a, size_t rowsAt, const Expr &call,
                                           const char *fnName) {
  Value *p = l.tensorArg(*a[0], "desc");
  const Op *origin = p->type.dtype == DType::BlockPtr ? blockPtrOrigin(p) : nullptr;
  if (!origin || p->type.blockShape.size() != 2 || p->type.blockShape[0] != 1)
    l.error(a[0]->span, std::string(fnName) + "() needs a 2-D tensor descriptor with block_shape "
                        "[1, N] made in this kernel, got " + a[0]->val.describe());
  Value *rows = l.tensorArg(*a[rowsAt], "x_offsets");
  if (rows->type.rank() != 1 || !isInteger(rows->type.dtype))
    l.error(a[rowsAt]->span, std::string(fnName) +
                                 "(): x_offsets must be a 1-D integer tensor, got " +
                                 rows->type.str());
  const Span &span = call.span;
  int64_t cols = p->type.blockShape[1];
  Op *range = l.b_.create(OpKind::MakeRange, {}, {Type::scalar(DType::I32).withShape({cols})});
  range->setAttr("start", (int64_t)0);
  range->setAttr("end", cols);
  SVal r = SVal::tensor(l.expandDims(rows, 1));
  SVal c = l.binary(BinOpKind::Add, a[rowsAt + 1]->val, SVal::tensor(range->result()), span);
  c = SVal::tensor(l.expandDims(l.materialize(c, span), 0));
  return descriptorElements(l, origin, {r, c}, span);
}

// Which element types the tensor-descriptor reductions take: those of TMA's
// bulk reductions (cp.reduce.async.bulk.tensor) on sm_90.
bool descriptorReduceTakes(const std::string &kind, DType d) {
  bool word = d == DType::I32 || d == DType::U32 || d == DType::U64;
  if (kind == "add")
    return word || d == DType::F32 || d == DType::F16 || d == DType::BF16;
  if (kind == "min" || kind == "max")
    return word || d == DType::I64 || d == DType::F16 || d == DType::BF16;
  return word || d == DType::I64; // and, or, xor
}

// desc.atomic_add(offsets, value) and the other reductions: each element of the
// tile at `offsets` combined atomically with the value's (relaxed, as TMA's
// reductions are); nothing happens outside the tensor.
SVal reduceTensorDescriptor(Lowerer &l, Args &a, const Expr &call, const std::string &kind) {
  std::string fnName = "desc.atomic_" + kind;
  Value *p = l.tensorArg(*a[0], "desc");
  const Op *origin = p->type.dtype == DType::BlockPtr ? blockPtrOrigin(p) : nullptr;
  if (!origin)
    l.error(a[0]->span, fnName + "() needs a tensor descriptor made in this kernel or passed to "
                                 "it, got " + a[0]->val.describe());
  DType d = p->type.pointee;
  if (!descriptorReduceTakes(kind, d))
    l.error(call.span, fnName + "() does not take " + dtypeName(d) + " elements");
  const std::vector<int64_t> &block = p->type.blockShape;
  std::vector<SVal> offsets = offsetList(l, *a[1], block.size(), fnName.c_str());
  const Span &span = call.span;
  std::vector<SVal> idx;
  for (size_t dim = 0; dim < block.size(); ++dim) {
    SVal along = SVal::tensor(rangeAlong(l, block, (int)dim, DType::I32, span));
    idx.push_back(l.binary(BinOpKind::Add, offsets[dim], along, span));
  }
  auto [ptrs, mask] = descriptorElements(l, origin, idx, span);
  l.checkWritable(ptrs, span);
  Value *v = l.broadcastTo(l.materialize(a[2]->val, a[2]->span, d), ptrs->type.shape, span);
  Op *op = l.b_.create(OpKind::AtomicRMW, {ptrs, v, mask},
                       {Type::scalar(d).withShape(ptrs->type.shape)});
  op->setAttr("kind", kind);
  op->setAttr("sem", std::string("relaxed"));
  op->setAttr("scope", std::string("gpu"));
  return SVal::constant(ConstValue::none());
}

SVal gatherTensorDescriptor(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  auto [ptrs, mask] = descriptorRows(l, a, 1, call, "desc.gather");
  Value *zero =
      l.splatTo(l.constScalar(ConstValue::integer(0), ptrs->type.pointee), ptrs->type.shape);
  Type t = Type::scalar(ptrs->type.pointee).withShape(ptrs->type.shape);
  return SVal::tensor(l.b_.create1(OpKind::Load, {ptrs, mask, zero}, t));
}

SVal scatterTensorDescriptor(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  auto [ptrs, mask] = descriptorRows(l, a, 2, call, "desc.scatter");
  l.checkWritable(ptrs, call.span);
  Value *v = l.materialize(a[1]->val, a[1]->span, ptrs->type.pointee);
  v = l.broadcastTo(v, ptrs->type.shape, a[1]->span);
  l.b_.create(OpKind::Store, {ptrs, v, mask}, {});
  return SVal::constant(ConstValue::none());
}

// --- math

SVal unaryMath(Lowerer &l, Args &a, const Expr &call, OpKind kind, const char *name,
               bool intsToo) {
  Value *x = l.materialize(a[0]->val, a[0]->span);
  DType d = x->type.dtype;
  if (isPointer(d) || (!isFloat(d) && !intsToo))
    l.error(a[0]->span, std::string("tl.") + name + "() expects a floating-point tensor, got " +
                            x->type.str());
  return SVal::tensor(l.b_.create1(kind, {x}, x->type));
}

// Operands of a float function of several arguments, converted to one float
// type (the tensors' own when they agree on one, else the widest, at least
// f32) and broadcast to one shape.
std::vector<Value *> floatOperands(Lowerer &l, Args &a, size_t n) {
  std::optional<DType> common;
  bool agree = true;
  DType widest = DType::F32;
  for (size_t i = 0; i < n; ++i) {
    if (!a[i]->val.isTensor())
      continue;
    DType d = a[i]->val.v->type.dtype;
    if (isFloat(d) && dtypeBits(d) > dtypeBits(widest))
      widest = d;
    agree = agree && (!common || *common == d);
    common = d;
  }
  DType t = agree && common && isFloat(*common) ? *common : widest;
  std::vector<Value *> vs;
  for (size_t i = 0; i < n; ++i)
    vs.push_back(l.materialize(a[i]->val, a[i]->span, t));
  for (size_t i = 1; i < n; ++i)
    std::tie(vs[0], vs[i]) = l.broadcastPair(vs[0], vs[i], a[i]->span);
  for (size_t i = 1; i < n; ++i)
    vs[i] = l.broadcastTo(vs[i], vs[0]->type.shape, a[i]->span);
  return vs;
}

// --- reductions

SVal sum(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  DType d = x->type.dtype;
  if (given(a[3]))
    d = l.dtypeArg(*a[3], "dtype");
  else if (isInteger(d) && dtypeBits(d) < 32)
    d = isUnsigned(d) ? DType::U32 : DType::I32;
  x = l.castTo(x, d);
  bool keep = given(a[2]) && a[2]->val.c.truthy();
  return l.reduce(OpKind::ReduceSum, x, a[1] ? a[1]->val : SVal(), keep, call.span);
}

SVal maxMin(Lowerer &l, Args &a, const Expr &call, bool isMax) {
  Value *x = l.tensorArg(*a[0], "input");
  bool keep = given(a[4]) && a[4]->val.c.truthy();
  SVal axis = a[1] ? a[1]->val : SVal();
  SVal r = l.reduce(isMax ? OpKind::ReduceMax : OpKind::ReduceMin, x, axis, keep, call.span);
  if (given(a[2]) && a[2]->val.c.truthy()) {
    SVal idx = l.reduce(isMax ? OpKind::ArgMax : OpKind::ArgMin, x, axis, keep, call.span);
    return SVal::tuple({r, idx});
  }
  return r;
}

SVal argMaxMin(Lowerer &l, Args &a, const Expr &call, bool isMax) {
  Value *x = l.tensorArg(*a[0], "input");
  bool keep = given(a[3]) && a[3]->val.c.truthy();
  return l.reduce(isMax ? OpKind::ArgMax : OpKind::ArgMin, x, a[1]->val, keep, call.span);
}

SVal cumsum(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  if (x->type.isScalar())
    l.error(a[0]->span, "tl.cumsum() needs a tensor");
  int64_t axis = given(a[1]) ? l.constIntArg(*a[1], "axis") : 0;
  int ax = normalizeAxis(l, axis, x->type.rank(), call.span);
  DType d = x->type.dtype;
  if (isInteger(d) && dtypeBits(d) < 32)
    x = l.castTo(x, isUnsigned(d) ? DType::U32 : DType::I32);
  Op *op = l.b_.create(OpKind::CumSum, {x}, {x->type});
  op->setAttr("axis", (int64_t)ax);
  op->setAttr("reverse", (int64_t)(given(a[2]) && a[2]->val.c.truthy()));
  return SVal::tensor(op->result());
}

// --- dot

SVal dot(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input"), *y = l.tensorArg(*a[1], "other");
  int rank = x->type.rank();
  if (rank < 2 || y->type.rank() != rank)
    l.error(call.span, "tl.dot() needs two tensors of rank 2 or more (batch dims first), got " +
                           x->type.str() + " and " + y->type.str());
  int64_t k = x->type.shape[rank - 1];
  int64_t k2 = y->type.shape[rank - 2], n = y->type.shape[rank - 1];
  bool sameBatch = std::equal(x->type.shape.begin(), x->type.shape.end() - 2,
                              y->type.shape.begin());
  if (k != k2 || !sameBatch)
    l.error(call.span, "tl.dot(): incompatible shapes " + x->type.str() + " and " + y->type.str());
  // Any size runs: shapes the tensor cores do not fit take the CUDA-core path.
  DType dx = x->type.dtype, dy = y->type.dtype;
  if (dx != dy) {
    if (isFloat(dx) && isFloat(dy) && dtypeBits(dx) >= 16 && dtypeBits(dy) >= 16) {
      DType t = dtypeBits(dx) >= dtypeBits(dy) ? dx : dy;
      x = l.castTo(x, t);
      y = l.castTo(y, t);
      dx = dy = t;
    } else if (!(dtypeBits(dx) == 8 && dtypeBits(dy) == 8 && isFloat(dx) && isFloat(dy))) {
      l.error(call.span, std::string("tl.dot() operands must have the same dtype, got ") +
                             dtypeName(dx) + " and " + dtypeName(dy));
    }
  }
  bool isInt = isInteger(dx);
  if (isInt && dx != DType::I8 && dx != DType::U8)
    l.error(call.span, std::string("tl.dot() supports int8 but not ") + dtypeName(dx));
  DType out = isInt ? DType::I32 : DType::F32;
  // int8 products accumulate in int32 whatever out_dtype says, as in Triton
  if (given(a[6]) && !isInt)
    out = l.dtypeArg(*a[6], "out_dtype");
  std::vector<int64_t> shape = x->type.shape;
  shape[rank - 1] = n;
  Value *acc;
  if (given(a[2])) {
    acc = l.tensorArg(*a[2], "acc");
    if (acc->type.shape != shape)
      l.error(a[2]->span, "tl.dot(): acc has shape " + shapeStr(acc->type.shape) +
                              " but the product has shape " + shapeStr(shape));
  } else {
    acc = l.splatTo(l.constScalar(ConstValue::integer(0), out), shape);
  }
  std::string precision = dx == DType::F32 ? "tf32" : "ieee";
  if (given(a[4]) && a[4]->val.isConst() && a[4]->val.c.kind == ConstValue::Bool &&
      !a[4]->val.c.b)
    precision = "ieee";
  if (given(a[3])) {
    if (!a[3]->val.isConst() || a[3]->val.c.kind != ConstValue::Str)
      l.error(a[3]->span, "input_precision must be a string");
    precision = a[3]->val.c.s;
    if (precision != "tf32" && precision != "tf32x3" && precision != "ieee" &&
        precision != "bf16x3" && precision != "bf16x6")
      l.error(a[3]->span, "input_precision must be 'tf32', 'tf32x3', 'bf16x3', 'bf16x6' or "
                          "'ieee', got '" + precision + "'");
  }
  if (dx != DType::F32)
    precision = "ieee";
  // fp8 products may add up at the tensor cores' reduced precision (Hopper's
  // fp8 wgmma): Triton's default lets them over a whole dot, and keeps
  // `acc + tl.dot(a, b)` two ops, the add in f32 (fold_dot_accumulate.cpp).
  bool fp8 = isFloat(dx) && dtypeBits(dx) == 8;
  int64_t imprecise = -1; // the default
  if (given(a[5])) {
    imprecise = l.constIntArg(*a[5], "max_num_imprecise_acc");
    if (fp8 && (imprecise < 0 || imprecise > k))
      l.error(a[5]->span, "max_num_imprecise_acc (" + std::to_string(imprecise) +
                              ") must be from 0 to K (" + std::to_string(k) + ")");
  }
  // Batch dims beyond one fold into one: the backends multiply 2-D and 3-D tensors.
  auto folded = [&](Value *v) {
    if (rank <= 3)
      return v;
    std::vector<int64_t> s = {1, v->type.shape[rank - 2], v->type.shape[rank - 1]};
    for (int d = 0; d < rank - 2; ++d)
      s[0] *= v->type.shape[d];
    return l.reshape(v, s, call.span);
  };
  x = folded(x);
  y = folded(y);
  acc = folded(acc);
  auto unfolded = [&](Value *v) { return SVal::tensor(rank <= 3 ? v : l.reshape(v, shape, call.span)); };
  auto dot = [&](Value *p, Value *q, Value *c, const char *prec) {
    Op *op = l.b_.create(OpKind::Dot, {p, q, c}, {c->type});
    op->setAttr("input_precision", std::string(prec));
    if (fp8)
      op->setAttr("max_num_imprecise_acc", imprecise);
    return op->result();
  };
  if (precision == "bf16x6") {
    // Each f32 operand as three bf16 parts (high, middle, low); the six
    // products above f32's precision, the smallest first.
    auto parts = [&](Value *v) {
      std::vector<Value *> out;
      Value *rest = v;
      for (int i = 0; i < 3; ++i) {
        out.push_back(l.castTo(rest, DType::BF16));
        if (i < 2)
          rest = l.elementwise(OpKind::Sub, {rest, l.castTo(out.back(), DType::F32)}, call.span);
      }
      return out;
    };
    std::vector<Value *> xs = parts(x), ys = parts(y);
    Value *r = acc;
    for (auto [i, j] : {std::pair{2, 0}, {0, 2}, {1, 1}, {1, 0}, {0, 1}, {0, 0}})
      r = dot(xs[i], ys[j], r, "ieee");
    return unfolded(r);
  }
  if (precision == "tf32x3" || precision == "bf16x3") {
    // Each f32 operand as a high part the tensor cores take exactly plus the
    // rest; three products (the low x low one is below f32's precision).
    bool tf32 = precision == "tf32x3";
    auto parts = [&](Value *v) {
      Value *hi;
      if (tf32) { // the top 10 mantissa bits: a tf32 value
        Value *bits = l.b_.create1(OpKind::Bitcast, {v}, v->type.withDType(DType::I32));
        Value *keep = l.splatTo(l.constScalar(ConstValue::integer((int32_t)0xFFFFE000), DType::I32),
                                v->type.shape);
        hi = l.b_.create1(OpKind::Bitcast, {l.elementwise(OpKind::And, {bits, keep}, call.span)},
                          v->type);
      } else {
        hi = l.castTo(v, DType::BF16);
      }
      Value *lo = l.elementwise(OpKind::Sub, {v, tf32 ? hi : l.castTo(hi, DType::F32)}, call.span);
      return std::pair{hi, tf32 ? lo : l.castTo(lo, DType::BF16)};
    };
    auto [xh, xl] = parts(x);
    auto [yh, yl] = parts(y);
    const char *prec = tf32 ? "tf32" : "ieee";
    Value *r = dot(xl, yh, dot(xh, yl, acc, prec), prec);
    return unfolded(dot(xh, yh, r, prec));
  }
  return unfolded(dot(x, y, acc, precision.c_str()));
}

// --- shapes

std::vector<int64_t> shapeFromRest(Lowerer &l, const std::optional<Arg> &first,
                                   std::vector<Arg> &rest, const char *what) {
  std::vector<int64_t> shape;
  if (first) {
    std::vector<int64_t> s = l.shapeArg(*first, what);
    shape.insert(shape.end(), s.begin(), s.end());
  }
  for (auto &r : rest) {
    std::vector<int64_t> s = l.shapeArg(r, what);
    shape.insert(shape.end(), s.begin(), s.end());
  }
  return shape;
}

SVal reshapeFn(Lowerer &l, Args &a, std::vector<Arg> &rest, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  std::vector<int64_t> shape = shapeFromRest(l, a[1], rest, "shape");
  l.checkBlockShape(shape, call.span);
  return SVal::tensor(l.reshape(x, shape, call.span));
}

SVal transFn(Lowerer &l, Args &a, std::vector<Arg> &rest, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  std::vector<int64_t> order = shapeFromRest(l, a[1], rest, "dims");
  int rank = x->type.rank();
  if (order.empty()) {
    if (rank < 2)
      return SVal::tensor(x);
    for (int i = 0; i < rank; ++i)
      order.push_back(i);
    std::swap(order[rank - 1], order[rank - 2]);
  }
  std::vector<bool> seen(rank, false);
  if ((int)order.size() != rank)
    l.error(call.span, "the permutation needs " + std::to_string(rank) + " dims, got " +
                           shapeStr(order));
  std::vector<int64_t> shape;
  for (int64_t d : order) {
    if (d < 0 || d >= rank || seen[d])
      l.error(call.span, shapeStr(order) + " is not a permutation of the dims of " + x->type.str());
    seen[d] = true;
    shape.push_back(x->type.shape[d]);
  }
  Op *op = l.b_.create(OpKind::Trans, {x}, {x->type.withShape(shape)});
  op->setAttr("order", order);
  return SVal::tensor(op->result());
}

SVal broadcastToFn(Lowerer &l, Args &a, std::vector<Arg> &rest, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  std::vector<int64_t> shape = shapeFromRest(l, a[1], rest, "shape");
  return SVal::tensor(l.broadcastTo(x, shape, call.span));
}

SVal expandDimsFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.tensorArg(*a[0], "input");
  std::vector<int64_t> axes = l.shapeArg(*a[1], "axis");
  int newRank = x->type.rank() + (int)axes.size();
  std::vector<int64_t> norm;
  for (int64_t ax : axes)
    norm.push_back(normalizeAxis(l, ax, newRank, a[1]->span));
  std::sort(norm.begin(), norm.end());
  for (int64_t ax : norm)
    x = l.expandDims(x, (int)ax);
  return SVal::tensor(x);
}

SVal castFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  Value *x = l.materialize(a[0]->val, a[0]->span);
  ConstValue dt = a[1]->val.c;
  if (!a[1]->val.isConst() || dt.kind != ConstValue::DTypeValue)
    l.error(a[1]->span, "expected a dtype such as tl.float16, got " + a[1]->val.describe());
  bool bitcast = given(a[3]) && a[3]->val.c.truthy();
  Type target = dt.type.withShape(x->type.shape);
  if (isPointer(target.dtype) || isPointer(x->type.dtype))
    return SVal::tensor(l.pointerCast(x, target));
  if (bitcast) {
    if (dtypeBits(target.dtype) != dtypeBits(x->type.dtype))
      l.error(call.span, std::string("a bitcast needs equal bit widths, got ") +
                             dtypeName(x->type.dtype) + " and " + dtypeName(target.dtype));
    if (target.dtype == x->type.dtype)
      return SVal::tensor(x);
    return SVal::tensor(l.b_.create1(OpKind::Bitcast, {x}, target));
  }
  Value *r = l.castTo(x, target.dtype);
  if (given(a[2]) && r != x && r->def && r->def->kind == OpKind::Cast)
    r->def->setAttr("rounding", a[2]->val.c.s);
  return SVal::tensor(r);
}

SVal deviceAssert(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  std::string msg = given(a[1]) && a[1]->val.c.kind == ConstValue::Str ? a[1]->val.c.s : "";
  if (a[0]->val.isConst()) {
    if (!a[0]->val.c.truthy())
      l.error(a[0]->span, "assertion failed" + (msg.empty() ? "" : ": " + msg));
    return SVal::constant(ConstValue::none());
  }
  Value *c = l.toMask(l.materialize(a[0]->val, a[0]->span));
  Op *op = l.b_.create(OpKind::Assert, {c}, {});
  op->setAttr("message", msg);
  return SVal::constant(ConstValue::none());
}

SVal devicePrint(Lowerer &l, const std::string &prefix, std::vector<Arg> &rest, bool hex) {
  std::vector<Value *> vs;
  for (auto &r : rest) {
    if (r.val.isConst() && r.val.c.kind == ConstValue::Str)
      continue;
    vs.push_back(l.materialize(r.val, r.span));
  }
  Op *op = l.b_.create(OpKind::Print, vs, {});
  op->setAttr("prefix", prefix);
  op->setAttr("hex", (int64_t)hex);
  return SVal::constant(ConstValue::none());
}

SVal pyMinMax(Lowerer &l, std::vector<Arg> &rest, const Expr &call, bool isMax) {
  if (rest.size() == 1 && rest[0].val.isConst() && rest[0].val.c.kind == ConstValue::Tuple) {
    std::vector<Arg> items;
    for (auto &c : rest[0].val.c.elems)
      items.push_back({SVal::constant(c), rest[0].span});
    return pyMinMax(l, items, call, isMax);
  }
  if (rest.empty())
    l.error(call.span, std::string(isMax ? "max" : "min") + "() needs at least one argument");
  SVal acc = rest[0].val;
  for (size_t i = 1; i < rest.size(); ++i) {
    const SVal &v = rest[i].val;
    if (acc.isConst() && v.isConst()) {
      bool greater = l.constCompare(CmpOpKind::Gt, v.c, acc.c, call.span).b;
      bool less = l.constCompare(CmpOpKind::Lt, v.c, acc.c, call.span).b;
      if (isMax ? greater : less)
        acc = v;
    } else {
      acc = l.minMax(isMax, acc, v, call.span);
    }
  }
  return acc;
}

std::string constStringArg(Lowerer &l, const Arg &a, const char *fn) {
  if (!a.val.isConst() || a.val.c.kind != ConstValue::Str)
    l.error(a.span, std::string(fn) + "() needs a constexpr string, got " + a.val.describe());
  return a.val.c.s;
}

// isinstance(obj, classinfo) at compile time. Classes of the language reach
// the kernel as modules named after them ("triton.language.tensor"); Python's
// int, float, bool and tuple as builtins; a tuple of classes tests each.
bool isInstance(Lowerer &l, const SVal &obj, const SVal &cls, const Span &span) {
  if (cls.kind == SVal::Tuple) {
    for (const SVal &c : cls.elems)
      if (isInstance(l, obj, c, span))
        return true;
    return false;
  }
  bool isDType = obj.isConst() && obj.c.kind == ConstValue::DTypeValue;
  bool isDescriptor = obj.isTensor() && obj.v->type.dtype == DType::BlockPtr;
  if (cls.kind == SVal::Builtin) {
    const ConstValue::Kind k = obj.c.kind;
    if (cls.name == "py.int")
      return obj.isConst() && (k == ConstValue::Int || k == ConstValue::Bool);
    if (cls.name == "py.float")
      return obj.isConst() && k == ConstValue::Float;
    if (cls.name == "py.bool")
      return obj.isConst() && k == ConstValue::Bool;
    if (cls.name == "py.tuple")
      return obj.kind == SVal::Tuple || (obj.isConst() && k == ConstValue::Tuple);
  }
  // A class of the language: a module named after it, or a builtin of its name
  // (tl.pointer_type, which kernels also call to make a type).
  const std::string prefix = "triton.language.";
  std::string name;
  if (cls.kind == SVal::Module && cls.name.rfind(prefix, 0) == 0)
    name = cls.name.substr(prefix.size());
  else if (cls.kind == SVal::Builtin && cls.name.rfind("py.", 0) != 0 && cls.elems.empty())
    name = cls.name;
  if (!name.empty()) {
    if (name == "tensor")
      return obj.isTensor() && !isDescriptor;
    if (name == "tensor_descriptor" || name == "tensor_descriptor_base")
      return isDescriptor;
    if (name == "constexpr")
      return obj.isConst();
    if (name == "dtype")
      return isDType;
    if (name == "pointer_type")
      return isDType && isPointer(obj.c.type.dtype);
    if (name == "tuple")
      return obj.kind == SVal::Tuple || (obj.isConst() && obj.c.kind == ConstValue::Tuple);
    if (name == "block_type" || name == "tuple_type" || name == "constexpr_type" ||
        name == "slice")
      return false;
  }
  l.error(span, "isinstance() in a kernel takes a class of the language (tl.tensor, "
                "tl.constexpr, tl.dtype, tl.pointer_type, tl.tensor_descriptor), int, float, "
                "bool or tuple, got " + cls.describe());
}

ConstValue constArg(Lowerer &l, const Arg &a, const char *fn) {
  if (!a.val.isConst())
    l.error(a.span, std::string(fn) + "() needs a constexpr argument here, got " + a.val.describe());
  return a.val.c;
}

SVal pyNumber(Lowerer &l, Args &a, const Expr &call, const char *kind) {
  if (!given(a[0]))
    return SVal::constant(std::string(kind) == "float" ? ConstValue::floating(0)
                                                      : ConstValue::integer(0));
  ConstValue c = constArg(l, *a[0], kind);
  std::string k = kind;
  if (c.kind == ConstValue::Str) {
    if (k != "float")
      l.error(a[0]->span, k + "() of a string is not supported in kernels");
    std::string s = c.s;
    for (auto &ch : s)
      ch = (char)std::tolower(ch);
    if (s == "inf" || s == "+inf" || s == "infinity")
      return SVal::constant(ConstValue::floating(INFINITY));
    if (s == "-inf" || s == "-infinity")
      return SVal::constant(ConstValue::floating(-INFINITY));
    if (s == "nan")
      return SVal::constant(ConstValue::floating(NAN));
    try {
      return SVal::constant(ConstValue::floating(std::stod(c.s)));
    } catch (...) {
      l.error(a[0]->span, "could not convert string to float: '" + c.s + "'");
    }
  }
  if (!c.isNumber())
    l.error(a[0]->span, k + "() needs a number, got " + c.repr());
  if (k == "float")
    return SVal::constant(ConstValue::floating(c.asDouble()));
  if (k == "bool")
    return SVal::constant(ConstValue::boolean(c.truthy()));
  return SVal::constant(ConstValue::integer(c.kind == ConstValue::Float ? (int64_t)c.f : c.asInt()));
}

SVal cdivFn(Lowerer &l, Args &a, std::vector<Arg> &, const Expr &call) {
  const SVal &x = a[0]->val, &d = a[1]->val;
  SVal one = SVal::constant(ConstValue::integer(1));
  SVal num = l.binary(BinOpKind::Sub, l.binary(BinOpKind::Add, x, d, call.span), one, call.span);
  if (num.isConst() && d.isConst())
    return SVal::constant(l.constBinary(BinOpKind::FloorDiv, num.c, d.c, call.span));
  return l.binary(BinOpKind::FloorDiv, num, d, call.span);
}

std::map<std::string, BuiltinDef> makeTable() {
  std::map<std::string, BuiltinDef> t;
  auto add = [&](std::string name, std::vector<std::string> sig, Handler h) {
    t[name] = BuiltinDef{std::move(sig), std::move(h)};
  };
  using R = std::vector<Arg>;
  add("program_id", {"axis"}, [](Lowerer &l, Args &a, R &r, const Expr &c) {
    return programId(l, a, r, c, OpKind::ProgramId);
  });
  add("num_programs", {"axis"}, [](Lowerer &l, Args &a, R &r, const Expr &c) {
    return programId(l, a, r, c, OpKind::NumPrograms);
  });
  add("arange", {"start", "end"}, arange);
  add("zeros", {"shape", "dtype="}, zeros);
  add("zeros_like", {"input", "dtype="}, zerosLike);
  add("full", {"shape", "value", "dtype"}, full);
  add("load", {"pointer", "mask=", "other=", "boundary_check=", "padding_option=",
               "cache_modifier=", "eviction_policy=", "volatile="},
      load);
  add("store", {"pointer", "value", "mask=", "boundary_check=", "cache_modifier=",
                "eviction_policy="},
      store);
  add("make_block_ptr", {"base", "shape", "strides", "offsets", "block_shape", "order"},
      makeBlockPtr);
  for (const char *kind : {"add", "max", "min", "and", "or", "xor", "xchg"})
    add(std::string("atomic_") + kind, {"pointer", "val", "mask=", "sem=", "scope="},
        [kind](Lowerer &l, Args &a, R &, const Expr &c) { return atomicRmw(l, a, c, kind); });
  add("atomic_cas", {"pointer", "cmp", "val", "sem=", "scope="}, atomicCas);
  for (std::string kind : {"add", "min", "max", "and", "or", "xor"})
    add("atomic_" + kind + "_tensor_descriptor", {"desc", "offsets", "value"},
        [kind](Lowerer &l, Args &a, R &, const Expr &c) {
          return reduceTensorDescriptor(l, a, c, kind);
        });
  // x.logical_and(y), x.logical_or(y): both as booleans (nonzero is true).
  for (auto [name, kind] : {std::pair{"logical_and", BinOpKind::BitAnd},
                            std::pair{"logical_or", BinOpKind::BitOr}})
    add(name, {"input", "other"}, [kind = kind](Lowerer &l, Args &a, R &, const Expr &c) {
      auto asBool = [&](const Arg &x) {
        return SVal::tensor(l.toMask(l.materialize(x.val, x.span)));
      };
      return l.binary(kind, asBool(*a[0]), asBool(*a[1]), c.span);
    });
  add("atomic_load", {"pointer", "mask=", "sem=", "scope="}, atomicLoad);
  add("inline_asm_elementwise", {"asm", "constraints", "args", "dtype", "is_pure", "pack"},
      inlineAsmFn);
  add("atomic_store", {"pointer", "val", "mask=", "sem=", "scope="}, atomicStore);
  add("atomic_poll", {"pointer", "expected_value", "sem=", "scope=", "timeout_ns="}, atomicPoll);
  // A constexpr as a runtime scalar of its default type (int32 or int64, fp32, int1).
  add("to_tensor", {"x"}, [](Lowerer &l, Args &a, R &, const Expr &) {
    return SVal::tensor(l.materialize(a[0]->val, a[0]->span));
  });
  add("advance", {"base", "offsets"}, advance);
  add("join", {"a", "b"}, joinFn);
  add("split", {"a"}, splitFn);
  add("interleave", {"a", "b"}, interleaveFn);
  add("cat", {"input", "other", "can_reorder=", "dim="}, catFn);
  add("flip", {"x", "dim="}, flipFn);
  add("reduce", {"input", "axis", "combine_fn", "keep_dims="}, reduceFn);
  add("gather", {"src", "index", "axis"}, gatherFn);
  add("associative_scan", {"input", "axis", "combine_fn", "reverse="}, associativeScanFn);
  add("cumprod", {"input", "axis=", "reverse=", "dtype="}, cumprodFn);
  add("sort", {"x", "dim=", "descending="}, sortFn);
  add("bitonic_merge", {"x", "dim=", "descending="}, bitonicMergeFn);
  add("map_elementwise", {"scalar_fn", "*args", "pack="}, mapElementwiseFn);
  add("topk", {"x", "k", "dim=", "descending="}, topkFn);
  add("histogram", {"input", "num_bins", "mask="}, histogramFn);
  add("xor_sum", {"input", "axis=", "keep_dims="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return bitwiseReduce(l, a, c, OpKind::Xor, "tl.xor_sum");
  });
  add("reduce_or", {"input", "axis", "keep_dims="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return bitwiseReduce(l, a, c, OpKind::Or, "tl.reduce_or");
  });
  add("make_tensor_descriptor", {"base", "shape", "strides", "block_shape", "padding_option="},
      makeTensorDescriptor);
  add("load_tensor_descriptor", {"desc", "offsets"}, loadTensorDescriptor);
  add("gather_tensor_descriptor", {"desc", "x_offsets", "y_offset"}, gatherTensorDescriptor);
  add("scatter_tensor_descriptor", {"desc", "value", "x_offsets", "y_offset"},
      scatterTensorDescriptor);
  add("store_tensor_descriptor", {"desc", "offsets", "value"}, storeTensorDescriptor);
  add("item", {"input"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return SVal::tensor(l.unsplat(l.materialize(a[0]->val, a[0]->span), c.span));
  });
  add("where", {"condition", "x", "y"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return l.where(a[0]->val, a[1]->val, a[2]->val, c.span);
  });
  add("maximum", {"x", "y", "propagate_nan="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return l.minMax(true, a[0]->val, a[1]->val, c.span);
  });
  add("minimum", {"x", "y", "propagate_nan="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return l.minMax(false, a[0]->val, a[1]->val, c.span);
  });
  add("clamp", {"x", "min", "max", "propagate_nan="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    SVal lo = l.minMax(true, a[0]->val, a[1]->val, c.span);
    return l.minMax(false, lo, a[2]->val, c.span);
  });
  struct MathFn {
    const char *name;
    OpKind kind;
    bool ints;
  };
  static const MathFn math[] = {
      {"exp", OpKind::Exp, false},     {"exp2", OpKind::Exp2, false},
      {"log", OpKind::Log, false},     {"log2", OpKind::Log2, false},
      {"sqrt", OpKind::Sqrt, false},   {"sqrt_rn", OpKind::Sqrt, false},
      {"rsqrt", OpKind::Rsqrt, false}, {"abs", OpKind::Abs, true},
      {"sin", OpKind::Sin, false},     {"cos", OpKind::Cos, false},
      {"floor", OpKind::Floor, false}, {"ceil", OpKind::Ceil, false},
      {"erf", OpKind::Erf, false},     {"tanh", OpKind::Tanh, false}};
  for (const MathFn &m : math) {
    Handler h = [m](Lowerer &l, Args &a, R &, const Expr &c) {
      return unaryMath(l, a, c, m.kind, m.name, m.ints);
    };
    if (std::string(m.name) != "tanh")
      add(m.name, {"x"}, h);
    add(std::string("math.") + m.name, {"x"}, h);
  }
  Handler sigmoid = [](Lowerer &l, Args &a, R &, const Expr &c) {
    Value *x = unaryMath(l, a, c, OpKind::Neg, "sigmoid", false).v;
    Value *e = l.b_.create1(OpKind::Exp, {x}, x->type);
    Value *one = l.splatTo(l.constScalar(ConstValue::floating(1.0), x->type.dtype), x->type.shape);
    Value *den = l.b_.create1(OpKind::Add, {one, e}, x->type);
    return SVal::tensor(l.b_.create1(OpKind::Div, {one, den}, x->type));
  };
  add("sigmoid", {"x"}, sigmoid);
  add("math.sigmoid", {"x"}, sigmoid);
  Handler fma = [](Lowerer &l, Args &a, R &, const Expr &c) {
    auto v = floatOperands(l, a, 3);
    return SVal::tensor(l.b_.create1(OpKind::Fma, v, v[0]->type));
  };
  add("fma", {"x", "y", "z"}, fma);
  add("math.fma", {"x", "y", "z"}, fma);
  auto binaryFloat = [&](OpKind kind) {
    Handler h = [kind](Lowerer &l, Args &a, R &, const Expr &c) {
      auto v = floatOperands(l, a, 2);
      return SVal::tensor(l.b_.create1(kind, v, v[0]->type));
    };
    return h;
  };
  // `/` divides as the target does fastest (2 ulp on NVIDIA); div_rn and
  // fdiv(ieee_rounding=True) round exactly.
  Handler divRn = [](Lowerer &l, Args &a, R &, const Expr &c) {
    auto v = floatOperands(l, a, 2);
    Value *q = l.b_.create1(OpKind::Div, v, v[0]->type);
    q->def->setAttr("rounding", std::string("rn"));
    return SVal::tensor(q);
  };
  Handler fdiv = [divRn, div = binaryFloat(OpKind::Div)](Lowerer &l, Args &a, R &r,
                                                         const Expr &c) {
    bool ieee = given(a[2]) && a[2]->val.c.kind == ConstValue::Bool && a[2]->val.c.b;
    return ieee ? divRn(l, a, r, c) : div(l, a, r, c);
  };
  add("div_rn", {"x", "y"}, divRn);
  add("math.div_rn", {"x", "y"}, divRn);
  add("fdiv", {"x", "y", "ieee_rounding="}, fdiv);
  add("math.fdiv", {"x", "y", "ieee_rounding="}, fdiv);
  add("math.pow", {"x", "y"}, binaryFloat(OpKind::Pow));
  add("math.atan2", {"x", "y"}, binaryFloat(OpKind::Atan2));
  Handler umulhi = [](Lowerer &l, Args &a, R &, const Expr &c) {
    SVal x = a[0]->val, y = a[1]->val;
    DType t = l.computationType(x, y, false, c.span);
    Value *vx = l.materialize(x, c.span, t), *vy = l.materialize(y, c.span, t);
    auto [bx, by] = l.broadcastPair(vx, vy, c.span);
    return SVal::tensor(l.b_.create1(OpKind::UMulHi, {bx, by}, bx->type));
  };
  add("umulhi", {"x", "y"}, umulhi);
  add("math.umulhi", {"x", "y"}, umulhi);
  add("cdiv", {"x", "div"}, cdivFn);
  add("math.cdiv", {"x", "div"}, cdivFn);
  add("next_power_of_2", {"n"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    int64_t n = l.constIntArg(*a[0], "n"), p = 1;
    while (p < n)
      p <<= 1;
    return SVal::constant(ConstValue::integer(p));
  });
  add("sum", {"input", "axis=", "keep_dims=", "dtype="}, sum);
  add("max", {"input", "axis=", "return_indices=", "return_indices_tie_break_left=", "keep_dims="},
      [](Lowerer &l, Args &a, R &, const Expr &c) { return maxMin(l, a, c, true); });
  add("min", {"input", "axis=", "return_indices=", "return_indices_tie_break_left=", "keep_dims="},
      [](Lowerer &l, Args &a, R &, const Expr &c) { return maxMin(l, a, c, false); });
  add("argmax", {"input", "axis", "tie_break_left=", "keep_dims="},
      [](Lowerer &l, Args &a, R &, const Expr &c) { return argMaxMin(l, a, c, true); });
  add("argmin", {"input", "axis", "tie_break_left=", "keep_dims="},
      [](Lowerer &l, Args &a, R &, const Expr &c) { return argMaxMin(l, a, c, false); });
  add("cumsum", {"input", "axis=", "reverse="}, cumsum);
  add("softmax", {"x", "ieee_rounding="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    Value *x = l.tensorArg(*a[0], "x");
    SVal zero = SVal::constant(ConstValue::integer(0));
    SVal m = l.reduce(OpKind::ReduceMax, x, zero, true, c.span);
    SVal z = l.binary(BinOpKind::Sub, SVal::tensor(x), m, c.span);
    Value *num = l.b_.create1(OpKind::Exp, {z.v}, z.v->type);
    SVal den = l.reduce(OpKind::ReduceSum, num, zero, true, c.span);
    return l.binary(BinOpKind::Div, SVal::tensor(num), den, c.span);
  });
  add("dot", {"input", "other", "acc=", "input_precision=", "allow_tf32=",
              "max_num_imprecise_acc=", "out_dtype="},
      dot);
  add("reshape", {"input", "shape=", "*shape", "can_reorder="}, reshapeFn);
  add("view", {"input", "shape=", "*shape"}, reshapeFn);
  add("ravel", {"x", "can_reorder="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    Value *x = l.tensorArg(*a[0], "x");
    return SVal::tensor(l.reshape(x, {x->type.numel()}, c.span));
  });
  add("trans", {"input", "dims=", "*dims"}, transFn);
  add("permute", {"input", "dims=", "*dims"}, transFn);
  add("broadcast_to", {"input", "shape=", "*shape"}, broadcastToFn);
  add("broadcast", {"input", "other"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    Value *x = l.tensorArg(*a[0], "input"), *y = l.tensorArg(*a[1], "other");
    auto [bx, by] = l.broadcastPair(x, y, c.span);
    return SVal::tuple({SVal::tensor(bx), SVal::tensor(by)});
  });
  add("expand_dims", {"input", "axis"}, expandDimsFn);
  add("unsqueeze", {"input", "dim"}, expandDimsFn);
  // tl.squeeze(x, dim): drops a dim of size 1.
  add("squeeze", {"input", "dim"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    Value *x = l.tensorArg(*a[0], "input");
    ConstValue d = constArg(l, *a[1], "tl.squeeze");
    int dim = normalizeAxis(l, d.asInt(), x->type.rank(), a[1]->span);
    if (x->type.shape[dim] != 1)
      l.error(a[1]->span, "tl.squeeze(): dim " + std::to_string(dim) + " of " + x->type.str() +
                              " is not of size 1");
    std::vector<int64_t> shape = x->type.shape;
    shape.erase(shape.begin() + dim);
    return SVal::tensor(l.reshape(x, shape, c.span));
  });
  // tl.add / tl.sub / tl.mul: the operators as functions (sanitize_overflow is a
  // debugging aid of Triton's that tilec does not insert).
  for (auto [name, kind] : {std::pair{"add", BinOpKind::Add}, std::pair{"sub", BinOpKind::Sub},
                            std::pair{"mul", BinOpKind::Mul}})
    add(name, {"x", "y", "sanitize_overflow="},
        [kind = kind](Lowerer &l, Args &a, R &, const Expr &c) {
          return l.binary(kind, a[0]->val, a[1]->val, c.span);
        });
  add("cast", {"input", "dtype", "fp_downcast_rounding=", "bitcast="}, castFn);
  add("to", {"input", "dtype", "fp_downcast_rounding=", "bitcast="}, castFn);
  Handler identity = [](Lowerer &l, Args &a, R &, const Expr &c) { return a[0]->val; };
  // Hints for the axis analysis (tl.multiple_of, max_contiguous, max_constancy):
  // kept as an attribute of the op that computes the value, one entry per dim,
  // as Triton keeps them; the value itself is unchanged.
  auto hint = [](const char *attr) -> Handler {
    return [attr](Lowerer &l, Args &a, R &, const Expr &c) {
      std::vector<int64_t> values = l.shapeArg(*a[1], "values");
      const SVal &x = a[0]->val;
      if (!x.isTensor() || !x.v->def)
        return x; // a constant, or an argument: nothing to add
      size_t rank = x.v->type.isTensor() ? x.v->type.shape.size() : 1;
      if (values.size() == 1 && rank > 1)
        values.assign(rank, values[0]);
      if (values.size() != rank)
        l.error(c.span, std::string(attr) + ": " + std::to_string(values.size()) +
                            " values for a value of " + std::to_string(rank) + " dims");
      for (int64_t v : values)
        if (v < 1)
          l.error(c.span, std::string(attr) + " values must be positive, got " +
                              std::to_string(v));
      x.v->def->setAttr(attr, values);
      return x;
    };
  };
  add("multiple_of", {"input", "values"}, hint("multiple_of"));
  add("condition", {"arg1", "disable_licm="}, identity); // while tl.condition(c): ...
  add("expect_zero", {"x", "mask"}, identity);           // a check only Triton's debug builds make
  // tl.assume(cond): a hint to the optimizer in Triton; tilec's analyses do not use it.
  add("assume", {"cond"}, [](Lowerer &, Args &, R &, const Expr &) {
    return SVal::constant(ConstValue::none());
  });
  add("max_contiguous", {"input", "values"}, hint("max_contiguous"));
  add("max_constancy", {"input", "values"}, hint("max_constancy"));
  add("constexpr", {"value"}, identity);
  add("debug_barrier", {}, [](Lowerer &, Args &, R &, const Expr &) {
    return SVal::constant(ConstValue::none());
  });
  // tl.extra.cuda.gdc_*: programmatic dependent launch (a launch with launch_pdl=True).
  add("cuda.gdc_wait", {}, [](Lowerer &l, Args &, R &, const Expr &) {
    l.b_.create(OpKind::GdcWait, {}, {});
    return SVal::constant(ConstValue::none());
  });
  add("cuda.gdc_launch_dependents", {}, [](Lowerer &l, Args &, R &, const Expr &) {
    l.b_.create(OpKind::GdcLaunchDependents, {}, {});
    return SVal::constant(ConstValue::none());
  });
  add("pointer_type", {"element_ty", "address_space="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return SVal::constant(ConstValue::dtype(Type::pointer(l.dtypeArg(*a[0], "element_ty"))));
  });
  add("static_assert", {"cond", "msg="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    ConstValue cond = constArg(l, *a[0], "tl.static_assert");
    if (!cond.truthy()) {
      std::string msg = given(a[1]) ? a[1]->val.c.s : "";
      l.error(a[0]->span, "static assertion failed" + (msg.empty() ? "" : ": " + msg));
    }
    return SVal::constant(ConstValue::none());
  });
  add("static_print", {"*values"}, [](Lowerer &, Args &, R &r, const Expr &) {
    return SVal::constant(ConstValue::none());
  });
  add("device_assert", {"cond", "msg=", "mask="}, deviceAssert);
  add("device_print", {"prefix", "*args", "hex="}, [](Lowerer &l, Args &a, R &r, const Expr &c) {
    std::string prefix = a[0]->val.isConst() ? a[0]->val.c.s : "";
    return devicePrint(l, prefix, r, given(a[1]) && a[1]->val.c.truthy());
  });
  add("py.print", {"*args"}, [](Lowerer &l, Args &, R &r, const Expr &c) {
    std::string prefix;
    for (auto &x : r)
      if (x.val.isConst() && x.val.c.kind == ConstValue::Str)
        prefix += x.val.c.s + " ";
    return devicePrint(l, prefix, r, false);
  });
  add("py.min", {"*args"}, [](Lowerer &l, Args &, R &r, const Expr &c) {
    return pyMinMax(l, r, c, false);
  });
  add("py.max", {"*args"}, [](Lowerer &l, Args &, R &r, const Expr &c) {
    return pyMinMax(l, r, c, true);
  });
  // tl.target_info: what the compile target is. Asking makes the IR the
  // target's own (the CPU's and each GPU architecture's are compiled apart).
  add("target_info.is_cuda", {}, [](Lowerer &l, Args &, R &, const Expr &) {
    l.fn_.dependsOnTarget = true;
    return SVal::constant(ConstValue::boolean(l.target_ != "cpu"));
  });
  add("target_info.cuda_capability_geq", {"major", "minor="},
      [](Lowerer &l, Args &a, R &, const Expr &) {
        l.fn_.dependsOnTarget = true;
        int64_t want = constArg(l, *a[0], "cuda_capability_geq").asInt() * 10 +
                       (given(a[1]) ? constArg(l, *a[1], "cuda_capability_geq").asInt() : 0);
        int64_t arch = l.target_ == "cpu" ? 0 : std::atoi(l.target_.c_str() + 3); // sm_90a: 90
        return SVal::constant(ConstValue::boolean(arch != 0 && arch >= want));
      });
  for (const char *name : {"target_info.is_hip", "target_info.is_hip_cdna3",
                           "target_info.is_hip_cdna4", "target_info.is_hip_gfx1250"})
    add(name, {}, [](Lowerer &, Args &, R &, const Expr &) { // tilec has no AMD backend
      return SVal::constant(ConstValue::boolean(false));
    });
  add("target_info.current_target", {}, [](Lowerer &l, Args &, R &, const Expr &c) -> SVal {
    l.error(c.span, "tl.target_info.current_target() gives an object kernels cannot use; ask "
                    "tl.target_info.is_cuda() or cuda_capability_geq(major, minor)");
  });
  // tuple(values) and tl.tuple(values): a tuple (or list) of values as a tuple.
  for (const char *name : {"tuple", "py.tuple"})
    add(name, {"values="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
      if (!given(a[0]))
        return SVal::constant(ConstValue::tuple({}));
      const SVal &v = a[0]->val;
      if (v.kind == SVal::Tuple || (v.isConst() && v.c.kind == ConstValue::Tuple))
        return v;
      l.error(a[0]->span, "tuple() takes a tuple or a list, got " + v.describe());
    });
  add("py.len", {"obj"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    const SVal &v = a[0]->val;
    if (v.kind == SVal::Tuple)
      return SVal::constant(ConstValue::integer((int64_t)v.elems.size()));
    if (v.isConst() && v.c.kind == ConstValue::Tuple)
      return SVal::constant(ConstValue::integer((int64_t)v.c.elems.size()));
    if (v.isConst() && v.c.kind == ConstValue::Str)
      return SVal::constant(ConstValue::integer((int64_t)v.c.s.size()));
    if (v.isTensor() && v.v->type.isTensor())
      return SVal::constant(ConstValue::integer(v.v->type.shape[0]));
    l.error(a[0]->span, "len() of " + v.describe() + " is not defined");
  });
  // getattr(obj, "name"[, default]) and hasattr(obj, "name") with a constexpr name.
  add("py.getattr", {"obj", "name", "default="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    std::string name = constStringArg(l, *a[1], "getattr");
    if (!given(a[2]))
      return l.attribute(a[0]->val, name, c.span);
    try {
      return l.attribute(a[0]->val, name, c.span);
    } catch (const CompileError &) {
      return a[2]->val;
    }
  });
  add("py.hasattr", {"obj", "name"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    std::string name = constStringArg(l, *a[1], "hasattr");
    try {
      l.attribute(a[0]->val, name, c.span);
      return SVal::constant(ConstValue::boolean(true));
    } catch (const CompileError &) {
      return SVal::constant(ConstValue::boolean(false));
    }
  });
  add("py.isinstance", {"obj", "classinfo"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return SVal::constant(ConstValue::boolean(isInstance(l, a[0]->val, a[1]->val, a[1]->span)));
  });
  add("py.int", {"x="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return pyNumber(l, a, c, "int");
  });
  add("py.float", {"x="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return pyNumber(l, a, c, "float");
  });
  add("py.bool", {"x="}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    return pyNumber(l, a, c, "bool");
  });
  add("py.abs", {"x"}, [](Lowerer &l, Args &a, R &, const Expr &c) {
    if (a[0]->val.isConst()) {
      ConstValue v = constArg(l, *a[0], "abs");
      if (v.kind == ConstValue::Float)
        return SVal::constant(ConstValue::floating(std::fabs(v.f)));
      return SVal::constant(ConstValue::integer(std::llabs(v.asInt())));
    }
    return unaryMath(l, a, c, OpKind::Abs, "abs", true);
  });
  return t;
}

const std::map<std::string, BuiltinDef> &table() {
  static const std::map<std::string, BuiltinDef> t = makeTable();
  return t;
}

} // namespace

// Functions a tensor has as methods: x.to(...), x.sum(...), x.exp(), ...
bool isTensorMethod(const std::string &name) {
  static const char *const methods[] = {
      "to",      "cast",   "reshape",  "view",    "trans",        "permute", "broadcast_to",
      "expand_dims", "sum", "max",     "min",     "argmax",       "argmin",  "cumsum",
      "exp",     "exp2",   "log",      "log2",    "sqrt",         "rsqrt",   "abs",
      "sin",     "cos",    "floor",    "ceil",    "erf",          "sigmoid", "softmax",
      "ravel",   "split",  "flip",     "reduce",  "xor_sum",      "cumprod", "associative_scan", "sort", "topk",
      "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
      "atomic_xchg", "atomic_cas", "atomic_load", "atomic_store", "atomic_poll", "store",
      "advance", "cdiv", "gather", "histogram", "reduce_or", "sqrt_rn", "logical_and",
      "logical_or", "item"};
  for (const char *m : methods)
    if (name == m)
      return true;
  return false;
}

void Lowerer::checkWritable(const Value *ptr, const Span &span) {
  if (constPointers_.empty())
    return;
  std::vector<const Value *> todo = {ptr};
  std::unordered_set<const Value *> seen;
  while (!todo.empty()) {
    const Value *v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second)
      continue;
    if (constPointers_.count(v))
      error(span, "Cannot store to a constant pointer (the kernel's parameter is tl.const)");
    if (!v->def)
      continue;
    for (const Value *operand : v->def->operands)
      if (isPointer(operand->type.dtype))
        todo.push_back(operand);
  }
}

bool Lowerer::isBuiltin(const std::string &name) { return table().count(name) != 0; }

SVal Lowerer::callBuiltin(const std::string &name, CallArgs &args, const Expr &call) {
  auto it = table().find(name);
  if (name == "py.range" || name == "range" || name == "static_range")
    error(call.span, "range() may appear only as the iterable of a 'for' loop");
  TILEC_ASSERT(it != table().end(), "builtin without a handler: " + name);
  std::string shown = name.rfind("py.", 0) == 0 ? name.substr(3) : "tl." + name;
  std::vector<Arg> rest;
  Args bound = bindArgs(*this, shown, it->second.signature, args, &rest);
  return it->second.handler(*this, bound, rest, call);
}

SVal Lowerer::reduce(OpKind kind, Value *input, const SVal &axisVal, bool keepDims,
                     const Span &span) {
  if (input->type.isScalar())
    input = splatTo(input, {1});
  int rank = input->type.rank();
  bool isArg = kind == OpKind::ArgMax || kind == OpKind::ArgMin;
  if (axisVal.isNone() || (axisVal.kind == SVal::Const && axisVal.c.kind == ConstValue::None &&
                           axisVal.kind != SVal::Tensor)) {
    Value *flat = rank == 1 ? input : reshape(input, {input->type.numel()}, span);
    Type t = isArg ? Type::scalar(DType::I32) : flat->type.element();
    Op *op = b_.create(kind, {flat}, {t});
    op->setAttr("axis", (int64_t)0);
    Value *r = op->result();
    if (keepDims)
      r = splatTo(r, std::vector<int64_t>(rank, 1));
    return SVal::tensor(r);
  }
  if (!axisVal.isConst() || axisVal.c.kind != ConstValue::Int)
    error(span, "the reduction axis must be a constexpr integer, got " + axisVal.describe());
  int axis = normalizeAxis(*this, axisVal.c.i, rank, span);
  std::vector<int64_t> shape = input->type.shape;
  shape.erase(shape.begin() + axis);
  Type t = isArg ? Type::scalar(DType::I32).withShape(shape) : input->type.withShape(shape);
  Op *op = b_.create(kind, {input}, {t});
  op->setAttr("axis", (int64_t)axis);
  Value *r = op->result();
  if (keepDims)
    r = r->type.isScalar() ? splatTo(r, {1}) : expandDims(r, axis);
  return SVal::tensor(r);
}

SVal Lowerer::tensorAttribute(const SVal &base, const std::string &attr, const Span &span) {
  Value *v = base.v;
  // .type as .dtype: Out.type.element_ty (a pointer's pointee) and x.type.element_ty
  // (a tensor's scalar type) both read through dtypeAttribute's element_ty.
  // A tensor descriptor's (and a block pointer's) dtype is its element type, so that
  // desc.dtype and block_ptr.dtype.element_ty both name it.
  if (v->type.dtype == DType::BlockPtr && (attr == "dtype" || attr == "type"))
    return SVal::constant(ConstValue::dtype(Type::scalar(v->type.pointee)));
  if (attr == "dtype" || attr == "type")
    return SVal::constant(ConstValue::dtype(v->type.element()));
  if (attr == "shape" && v->type.dtype != DType::BlockPtr) {
    std::vector<ConstValue> dims;
    for (int64_t d : v->type.shape)
      dims.push_back(ConstValue::integer(d));
    return SVal::constant(ConstValue::tuple(dims));
  }
  if (attr == "numel")
    return SVal::constant(ConstValue::integer(v->type.numel()));
  if (attr == "T") {
    if (v->type.rank() != 2)
      error(span, ".T needs a 2-D tensor, got " + v->type.str());
    Op *op = b_.create(OpKind::Trans, {v}, {v->type.withShape({v->type.shape[1], v->type.shape[0]})});
    op->setAttr("order", std::vector<int64_t>{1, 0});
    return SVal::tensor(op->result());
  }
  if (v->type.dtype == DType::BlockPtr) { // a tensor descriptor's methods and block shape
    if (attr == "load" || attr == "store" || attr == "gather" || attr == "scatter" ||
        attr == "atomic_add" || attr == "atomic_min" || attr == "atomic_max" ||
        attr == "atomic_and" || attr == "atomic_or" || attr == "atomic_xor") {
      SVal m = SVal::builtin(attr + "_tensor_descriptor");
      m.elems.push_back(base);
      return m;
    }
    if (attr == "block_shape") {
      std::vector<ConstValue> dims;
      for (int64_t d : v->type.blockShape)
        dims.push_back(ConstValue::integer(d));
      return SVal::constant(ConstValue::tuple(dims));
    }
    if (attr == "shape" || attr == "strides") { // operands of the make_block_ptr it came from
      const Op *origin = blockPtrOrigin(v);
      if (!origin)
        error(span, "the " + attr + " of this tensor descriptor is not known here (it was "
                    "carried through a loop or an if); pass it to the kernel instead");
      size_t rank = v->type.blockShape.size(), first = attr == "shape" ? 1 : 1 + rank;
      std::vector<SVal> dims;
      for (size_t d = 0; d < rank; ++d)
        dims.push_back(SVal::tensor(origin->operand(first + d)));
      return SVal::tuple(dims);
    }
  }
  if (isTensorMethod(attr)) {
    SVal m = SVal::builtin(attr == "abs" ? "abs" : attr);
    m.elems.push_back(base);
    return m;
  }
  error(span, v->type.str() + " has no attribute '" + attr + "'");
}

SVal Lowerer::dtypeAttribute(const ConstValue &dtype, const std::string &attr, const Span &span) {
  const Type &t = dtype.type;
  if (attr == "element_ty") { // a pointer's pointee; a block's (x.type) element type is itself
    if (t.dtype != DType::Ptr)
      return SVal::constant(ConstValue::dtype(t));
    return SVal::constant(ConstValue::dtype(Type::scalar(t.pointee)));
  }
  if (attr == "primitive_bitwidth" || attr == "int_bitwidth")
    return SVal::constant(ConstValue::integer(dtypeBits(t.dtype)));
  std::map<std::string, bool> preds = {
      {"is_floating", isFloat(t.dtype)},
      {"is_int", isInteger(t.dtype)},
      {"is_int_signed", dtypeKind(t.dtype) == DKind::Int},
      {"is_int_unsigned", isUnsigned(t.dtype)},
      {"is_fp16", t.dtype == DType::F16},
      {"is_bf16", t.dtype == DType::BF16},
      {"is_fp32", t.dtype == DType::F32},
      {"is_fp64", t.dtype == DType::F64},
      {"is_fp8", t.dtype == DType::F8E4M3 || t.dtype == DType::F8E5M2},
      {"is_ptr", t.dtype == DType::Ptr},
      {"is_bool", t.dtype == DType::I1}};
  auto it = preds.find(attr);
  if (it == preds.end())
    error(span, "dtype " + dtype.repr() + " has no attribute '" + attr + "'");
  // A predicate method: calling it returns the constant.
  SVal m = SVal::builtin("constexpr");
  m.elems.push_back(SVal::constant(ConstValue::boolean(it->second)));
  return m;
}

// --- argument helpers

void Lowerer::error(const Span &span, const std::string &message) { fail(loc(span), message); }

Value *Lowerer::tensorArg(const Arg &a, const char *what) {
  if (a.val.isTensor())
    return a.val.v;
  if (a.val.isConst() && a.val.c.isNumber())
    return materialize(a.val, a.span);
  error(a.span, std::string("'") + what + "' must be a tensor, got " + a.val.describe());
}

int64_t Lowerer::constIntArg(const Arg &a, const char *what) {
  if (a.val.isConst() && (a.val.c.kind == ConstValue::Int || a.val.c.kind == ConstValue::Bool))
    return a.val.c.asInt();
  if (a.val.isTensor())
    error(a.span, std::string("'") + what + "' must be a constexpr integer, but it is a runtime " +
                      "value (" + a.val.describe() + "); declare it as tl.constexpr");
  error(a.span, std::string("'") + what + "' must be a constexpr integer, got " + a.val.describe());
}

std::vector<int64_t> Lowerer::shapeArg(const Arg &a, const char *what) {
  if (a.val.isConst() && a.val.c.kind == ConstValue::Tuple) {
    std::vector<int64_t> out;
    for (auto &e : a.val.c.elems) {
      if (e.kind != ConstValue::Int)
        error(a.span, std::string("'") + what + "' must hold constexpr integers, got " + a.val.c.repr());
      out.push_back(e.i);
    }
    return out;
  }
  if (a.val.kind == SVal::Tuple) { // a tuple argument whose elements are each constexpr
    std::vector<int64_t> out;
    for (const SVal &e : a.val.elems) {
      if (!e.isConst() || e.c.kind != ConstValue::Int)
        error(a.span, std::string("'") + what + "' must hold constexpr integers, but it has "
                                                "runtime values; declare them as tl.constexpr");
      out.push_back(e.c.i);
    }
    return out;
  }
  return {constIntArg(a, what)};
}

DType Lowerer::dtypeArg(const Arg &a, const char *what) {
  if (a.val.isConst() && a.val.c.kind == ConstValue::DTypeValue && !isPointer(a.val.c.type.dtype))
    return a.val.c.type.dtype;
  error(a.span, std::string("'") + what + "' must be a dtype such as tl.float32, got " +
                    a.val.describe());
}

} // namespace tilec
