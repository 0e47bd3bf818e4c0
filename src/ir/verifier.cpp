// The type rules of Tile IR, stated in one place. A broken rule is a compiler
// bug: verify() throws InternalError naming the rule and printing the op.
//
// Rules for every op, from its OpInfo row in ops.def:
//   - fixed operand / result counts hold; the region count always holds
//   - operands are defined before use: earlier in the same block, in an enclosing
//     block, or arguments of an enclosing region (dominance)
//   - ELEMENTWISE: every operand and the result have one shape
//   - INTS / FLOATS: operand element types are integers / floats as allowed
//   - INTS / FLOATS arithmetic (not comparisons): operands and result have one type
//   - a region (and the function body) ends in its terminator and has no other:
//     return for the body, condition for while's first region, yield otherwise
// Rules of single ops are in checkOp's switch, one case per op or family.
#include "ir/verifier.h"

#include <algorithm>
#include <numeric>

#include "ir/inline_asm.h"
#include "ir/printer.h"

namespace tilec {

namespace {

[[noreturn]] void broken(const std::string &rule, const std::string &where) {
  throw InternalError("internal error: IR verification failed: " + rule + "\n  in: " + where);
}

void require(bool ok, const Op &op, const char *rule) {
  if (!ok)
    broken(rule, printOp(op));
}

std::vector<Type> typesOf(const std::vector<Value *> &values, size_t from = 0) {
  std::vector<Type> types;
  for (size_t i = from; i < values.size(); ++i)
    types.push_back(values[i]->type);
  return types;
}

std::vector<Type> typesOf(const std::vector<std::unique_ptr<Value>> &values) {
  std::vector<Type> types;
  for (const auto &v : values)
    types.push_back(v->type);
  return types;
}

bool isComparison(OpKind kind) {
  switch (kind) {
  case OpKind::CmpEq:
  case OpKind::CmpNe:
  case OpKind::CmpLt:
  case OpKind::CmpLe:
  case OpKind::CmpGt:
  case OpKind::CmpGe:
    return true;
  default:
    return false;
  }
}

bool isScalarOf(const Type &t, DKind kind) { return t.isScalar() && dtypeKind(t.dtype) == kind; }
bool isScalarInt(const Type &t) { return t.isScalar() && isInteger(t.dtype); }
bool isI1(const Type &t) { return t.dtype == DType::I1; }
bool allScalarInts(const Op &op, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    if (!isScalarInt(op.operand(i)->type))
      return false;
  return true;
}

bool isPermutation(std::vector<int64_t> order, int rank) {
  std::vector<int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  std::sort(order.begin(), order.end());
  return order == identity;
}

bool axisIn(const Op &op, int rank) {
  int64_t axis = op.intAttr("axis", -1);
  return op.attr("axis") && axis >= 0 && axis < rank;
}

std::vector<int64_t> without(std::vector<int64_t> shape, int64_t axis) {
  shape.erase(shape.begin() + axis);
  return shape;
}

// The type a load from / store to pointers `ptr` reads or writes.
Type pointeeOf(const Type &ptr) { return Type::scalar(ptr.pointee).withShape(ptr.shape); }

// The tile a block pointer addresses.
Type blockTile(const Type &blockPtr) {
  return Type::scalar(blockPtr.pointee).withShape(blockPtr.blockShape);
}

// The types a region's terminator passes on, checking the terminator's kind.
std::vector<Type> terminatorTypes(const Op &op, int region, OpKind kind, const char *rule) {
  const Op *term = op.regions[region]->terminator();
  require(term && term->kind == kind, op, rule);
  return typesOf(term->operands);
}

// --- rules from the op table

void checkCounts(const Op &op) {
  const OpInfo &info = op.info();
  require(info.numOperands == VARIADIC || (int)op.operands.size() == info.numOperands, op,
          "wrong number of operands");
  require(info.numResults == VARIADIC || (int)op.results.size() == info.numResults, op,
          "wrong number of results");
  require((int)op.regions.size() == info.numRegions, op, "wrong number of regions");
}

void checkElementwise(const Op &op) {
  if (!op.has(ELEMENTWISE))
    return;
  for (const Value *v : op.operands)
    require(v->type.shape == op.result()->type.shape, op,
            "elementwise operands and result must have one shape");
}

const char *operandKindsRule(const Op &op) {
  if (!op.has(FLOATS))
    return "operands must be integers";
  return op.has(INTS) ? "operands must be integers or floats" : "operands must be floats";
}

bool hasAllowedKind(const Op &op, DType d) {
  return (op.has(INTS) && isInteger(d)) || (op.has(FLOATS) && isFloat(d)) ||
         (op.has(PTRS) && d == DType::Ptr);
}

void checkOperandKinds(const Op &op) {
  if (!op.has(INTS) && !op.has(FLOATS))
    return;
  for (const Value *v : op.operands)
    require(hasAllowedKind(op, v->type.dtype), op, operandKindsRule(op));
  if (isComparison(op.kind))
    return;
  for (const Value *v : op.operands)
    require(v->type == op.result()->type, op, "operands and result must have one type");
}

// --- rules of single ops

void checkComparison(const Op &op) {
  require(op.operand(0)->type == op.operand(1)->type, op, "compared operands must have one type");
  require(op.result()->type == op.operand(0)->type.withDType(DType::I1), op,
          "a comparison's result is i1 of the operands' shape");
}

void checkConstant(const Op &op) {
  const Attr *value = op.attr("value");
  require(value &&
              (std::holds_alternative<int64_t>(*value) || std::holds_alternative<double>(*value)),
          op, "constant needs an int or float 'value'");
  require(std::holds_alternative<int64_t>(*value) || isFloat(op.result()->type.dtype), op,
          "a float 'value' needs a float type");
}

void checkProgramIndex(const Op &op) {
  int64_t axis = op.intAttr("axis", -1);
  require(op.attr("axis") && axis >= 0 && axis < 3, op, "'axis' must be 0, 1 or 2");
  require(op.result()->type == Type::scalar(DType::I32), op, "the result must be i32");
}

void checkMakeRange(const Op &op) {
  int64_t start = op.intAttr("start"), end = op.intAttr("end");
  require(op.attr("start") && op.attr("end") && end > start, op, "needs 'start' < 'end'");
  require(op.result()->type == Type::scalar(DType::I32).withShape({end - start}), op,
          "the result must be tensor<(end - start)xi32>");
}

void checkSplat(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  require(in.isScalar() && out.isTensor() && out.sameElement(in), op,
          "splat makes a tensor of the scalar operand's type");
}

void checkBroadcast(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  require(in.sameElement(out) && in.rank() == out.rank(), op,
          "broadcast keeps the element type and the rank");
  for (int i = 0; i < in.rank(); ++i)
    require(in.shape[i] == out.shape[i] || in.shape[i] == 1, op,
            "broadcast only widens dimensions of size 1");
}

void checkExpandDims(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  require(axisIn(op, in.rank() + 1), op, "'axis' out of range");
  std::vector<int64_t> shape = in.shape;
  shape.insert(shape.begin() + op.intAttr("axis"), 1);
  require(out == in.withShape(shape), op, "expand_dims inserts a dimension of 1 at 'axis'");
}

void checkReshape(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  require(in.sameElement(out) && in.numel() == out.numel(), op,
          "reshape keeps the element type and the number of elements");
}

void checkTrans(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  std::vector<int64_t> order = op.intsAttr("order");
  require((int)order.size() == in.rank() && isPermutation(order, in.rank()), op,
          "'order' must be a permutation of the operand's dimensions");
  std::vector<int64_t> shape;
  for (int64_t d : order)
    shape.push_back(in.shape[d]);
  require(out == in.withShape(shape), op, "result dim i must be operand dim order[i]");
}

void checkConversion(const Op &op) {
  DType in = op.operand(0)->type.dtype, out = op.result()->type.dtype;
  switch (op.kind) {
  case OpKind::Cast:
    return require(!isPointer(in) && !isPointer(out), op, "cast converts numbers");
  case OpKind::Bitcast:
    return require(dtypeBits(in) == dtypeBits(out), op, "bitcast keeps the bit width");
  case OpKind::IntToPtr:
    return require(isInteger(in) && out == DType::Ptr, op, "int_to_ptr turns ints to !ptr");
  default:
    return require(in == DType::Ptr && isInteger(out), op, "ptr_to_int turns !ptr to ints");
  }
}

void checkSelect(const Op &op) {
  require(isI1(op.operand(0)->type), op, "select's condition must be i1");
  require(op.operand(1)->type == op.result()->type && op.operand(2)->type == op.result()->type, op,
          "select's branches and result must have one type");
}

void checkAddPtr(const Op &op) {
  require(op.operand(0)->type.dtype == DType::Ptr && isInteger(op.operand(1)->type.dtype), op,
          "addptr adds an integer offset to a !ptr");
  require(op.result()->type == op.operand(0)->type, op, "addptr's result has the pointer's type");
}

void checkLoad(const Op &op) {
  size_t n = op.operands.size();
  require(n >= 1 && n <= 3, op, "load takes ptr [, mask [, other]]");
  const Type &ptr = op.operand(0)->type;
  require(ptr.dtype == DType::Ptr, op, "load reads through a !ptr or a tensor of them");
  require(op.result()->type == pointeeOf(ptr), op, "load's result is the pointee, shaped as ptr");
  require(n < 2 || op.operand(1)->type == ptr.withDType(DType::I1), op,
          "load's mask is i1 shaped as ptr");
  require(n < 3 || op.operand(2)->type == op.result()->type, op,
          "load's 'other' has the result type");
}

void checkStore(const Op &op) {
  size_t n = op.operands.size();
  require(n >= 2 && n <= 3, op, "store takes ptr, value [, mask]");
  const Type &ptr = op.operand(0)->type;
  require(ptr.dtype == DType::Ptr, op, "store writes through a !ptr or a tensor of them");
  require(op.operand(1)->type == pointeeOf(ptr), op, "store's value is the pointee, shaped as ptr");
  require(n < 3 || op.operand(2)->type == ptr.withDType(DType::I1), op,
          "store's mask is i1 shaped as ptr");
}

void checkAtomic(const Op &op) {
  size_t n = op.operands.size();
  bool cas = op.kind == OpKind::AtomicCAS;
  require(cas || (n >= 2 && n <= 3), op, "atomic_rmw takes ptr, value [, mask]");
  const Type &ptr = op.operand(0)->type;
  require(ptr.dtype == DType::Ptr, op, "atomics update through a !ptr or a tensor of them");
  for (size_t k = 1; k < (cas ? 3 : 2); ++k)
    require(op.operand((int)k)->type == pointeeOf(ptr), op,
            "an atomic's values are the pointee, shaped as ptr");
  require(cas || n < 3 || op.operand(2)->type == ptr.withDType(DType::I1), op,
          "an atomic's mask is i1 shaped as ptr");
  require(op.result()->type == pointeeOf(ptr), op, "an atomic returns the old values");
  static const char *const kinds[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
  bool known = cas;
  for (const char *k : kinds)
    known |= op.strAttr("kind") == k;
  require(known, op, "atomic_rmw's kind is add, max, min, and, or, xor or xchg");
  std::string sem = op.strAttr("sem"), scope = op.strAttr("scope");
  require(sem == "relaxed" || sem == "acquire" || sem == "release" || sem == "acq_rel", op,
          "an atomic's sem is relaxed, acquire, release or acq_rel");
  require(scope == "cta" || scope == "gpu" || scope == "sys", op,
          "an atomic's scope is cta, gpu or sys");
}

// atomic_load: ptr [, mask]; atomic_store: ptr, value [, mask]; atomic_poll:
// ptr, expected [, timeout].
void checkAtomicAccess(const Op &op) {
  size_t n = op.operands.size();
  bool load = op.kind == OpKind::AtomicLoad, poll = op.kind == OpKind::AtomicPoll;
  size_t least = load ? 1 : 2;
  require(n >= least && n <= least + 1, op,
          load ? "atomic_load takes ptr [, mask]"
               : poll ? "atomic_poll takes ptr, expected [, timeout]"
                      : "atomic_store takes ptr, value [, mask]");
  const Type &ptr = op.operand(0)->type;
  require(ptr.dtype == DType::Ptr, op, "atomics access a !ptr or a tensor of them");
  if (!load)
    require(op.operand(1)->type == pointeeOf(ptr), op,
            "an atomic's values are the pointee, shaped as ptr");
  if (n > least && poll)
    require(op.operand(2)->type == Type::scalar(DType::U64), op, "atomic_poll's timeout is a u64");
  else if (n > least)
    require(op.operand((int)least)->type == ptr.withDType(DType::I1), op,
            "an atomic's mask is i1 shaped as ptr");
  if (load)
    require(op.result()->type == pointeeOf(ptr), op, "atomic_load returns the pointee");
  if (poll)
    require(op.result()->type == ptr.withDType(DType::I1), op, "atomic_poll returns i1 shaped as ptr");
  std::string sem = op.strAttr("sem"), scope = op.strAttr("scope");
  bool store = op.kind == OpKind::AtomicStore;
  require(sem == "relaxed" || sem == (store ? "release" : "acquire"), op,
          store ? "atomic_store's sem is relaxed or release"
                : "atomic_load's and atomic_poll's sem is relaxed or acquire");
  require(scope == "cta" || scope == "gpu" || scope == "sys", op,
          "an atomic's scope is cta, gpu or sys");
}

// inline_asm: operands and results share one shape; the constraints parse.
void checkInlineAsm(const Op &op) {
  require(!op.results.empty(), op, "inline_asm has at least one result");
  const auto &shape = op.result()->type.shape;
  for (const auto &r : op.results)
    require(r->type.shape == shape && !isPointer(r->type.dtype), op,
            "inline_asm's results are numbers of one shape");
  for (const Value *v : op.operands)
    require(v->type.shape == shape, op, "inline_asm's operands have its results' shape");
  require(op.attr("asm") && op.attr("pack") && op.intAttr("pack") >= 1, op,
          "inline_asm needs 'asm' and 'pack'");
  require(parseAsmConstraints(op.strAttr("constraints")).error.empty(), op,
          "inline_asm's constraints do not parse");
}

void checkMakeBlockPtr(const Op &op) {
  const Type &out = op.result()->type;
  require(!op.operands.empty() && isScalarOf(op.operand(0)->type, DKind::Pointer) &&
              op.operand(0)->type.dtype == DType::Ptr,
          op, "make_block_ptr's base is a scalar !ptr");
  require(out.isScalar() && out.dtype == DType::BlockPtr &&
              out.pointee == op.operand(0)->type.pointee,
          op, "make_block_ptr's result is a !blockptr to the base's pointee");
  size_t rank = out.blockShape.size();
  require(op.operands.size() == 1 + 3 * rank && allScalarInts(op, 1, op.operands.size()), op,
          "make_block_ptr takes base, then rank scalar ints each of shape, strides, offsets");
  require(!op.attr("order") || isPermutation(op.intsAttr("order"), (int)rank), op,
          "'order' must be a permutation of the block's dimensions");
}

void checkAdvance(const Op &op) {
  require(!op.operands.empty() && op.operand(0)->type.isScalar() &&
              op.operand(0)->type.dtype == DType::BlockPtr,
          op, "advance moves a scalar !blockptr");
  require(op.operands.size() == 1 + op.operand(0)->type.blockShape.size() &&
              allScalarInts(op, 1, op.operands.size()),
          op, "advance takes one scalar int offset per block dimension");
  require(op.result()->type == op.operand(0)->type, op, "advance keeps the type");
}

void checkBlockAccess(const Op &op) {
  const Type &ptr = op.operand(0)->type;
  require(ptr.isScalar() && ptr.dtype == DType::BlockPtr, op, "operand 0 must be a !blockptr");
  const Type &tile = op.kind == OpKind::LoadBlock ? op.result()->type : op.operand(1)->type;
  require(tile == blockTile(ptr), op, "the tile is a tensor of the block's shape and pointee");
}

void checkReduce(const Op &op) {
  const Type &in = op.operand(0)->type, &out = op.result()->type;
  require(axisIn(op, in.rank()), op, "'axis' out of range");
  bool isArg = op.kind == OpKind::ArgMax || op.kind == OpKind::ArgMin;
  DType dtype = isArg ? DType::I32 : in.dtype;
  Type expected =
      (isArg ? in.withDType(dtype) : in).withShape(without(in.shape, op.intAttr("axis")));
  require(out == expected, op,
          isArg ? "the result is i32, the operand's shape less 'axis'"
                : "the result is the operand's type less 'axis'");
}

// The region of a reduce_with or scan_with: lhs..., rhs... scalars of the
// inputs' types, elementwise ops, and a yield of one value per input.
void checkCombineRegion(const Op &op) {
  size_t k = op.operands.size();
  const Block &body = *op.regions[0];
  require(body.args.size() == 2 * k, op, "the combine region takes lhs..., rhs...: one per input");
  for (size_t i = 0; i < 2 * k; ++i)
    require(body.args[i]->type == Type::scalar(op.operand((int)(i % k))->type.dtype), op,
            "the combine region's arguments are scalars of the inputs' types");
  for (const auto &inner : body.ops)
    require(inner->has(ELEMENTWISE) || inner->kind == OpKind::Constant ||
                inner->kind == OpKind::Yield,
            op, "a combine region holds elementwise ops only");
  const Op &yield = *body.ops.back();
  require(yield.operands.size() == k, op, "the combine region yields one value per input");
  for (size_t i = 0; i < k; ++i)
    require(yield.operand((int)i)->type == body.args[i]->type, op,
            "the combine region yields scalars of the inputs' types");
}

void checkReduceWith(const Op &op) {
  require(!op.operands.empty() && op.results.size() == op.operands.size(), op,
          "reduce_with gives one result per input");
  const Type &in = op.operand(0)->type;
  require(in.isTensor() && axisIn(op, in.rank()), op, "'axis' out of range");
  for (size_t i = 0; i < op.operands.size(); ++i) {
    require(op.operand((int)i)->type.shape == in.shape, op, "reduce_with's inputs share a shape");
    require(op.result((int)i)->type ==
                op.operand((int)i)->type.withShape(without(in.shape, op.intAttr("axis"))),
            op, "each result is its input's type less 'axis'");
  }
  checkCombineRegion(op);
}

void checkScanWith(const Op &op) {
  require(!op.operands.empty() && op.results.size() == op.operands.size(), op,
          "scan_with gives one result per input");
  const Type &in = op.operand(0)->type;
  require(in.isTensor() && axisIn(op, in.rank()), op, "'axis' out of range");
  for (size_t i = 0; i < op.operands.size(); ++i)
    require(op.operand((int)i)->type.shape == in.shape &&
                op.result((int)i)->type == op.operand((int)i)->type,
            op, "scan_with's inputs share a shape; each result has its input's type");
  checkCombineRegion(op);
}

void checkSort(const Op &op) {
  const Type &t = op.operand(0)->type;
  require(t.isTensor() && op.result()->type == t, op, "sort keeps its operand's type");
  int64_t n = t.shape.back();
  require((n & (n - 1)) == 0, op, "sort's last dim is a power of 2");
}

void checkCumSum(const Op &op) {
  require(axisIn(op, op.operand(0)->type.rank()), op, "'axis' out of range");
  require(op.result()->type == op.operand(0)->type, op, "cumsum keeps the type");
}

void checkGather(const Op &op) {
  const Type &src = op.operand(0)->type, &index = op.operand(1)->type;
  require(src.isTensor() && index.rank() == src.rank() && isInteger(index.dtype), op,
          "gather's index is an integer tensor of the source's rank");
  require(axisIn(op, src.rank()), op, "'axis' out of range");
  int axis = (int)op.intAttr("axis");
  for (int d = 0; d < src.rank(); ++d)
    require(d == axis || index.shape[d] == src.shape[d], op,
            "gather's index and source agree outside the axis");
  require(op.result()->type == index.withDType(src.dtype), op,
          "gather gives the source's type in the index's shape");
}

void checkHistogram(const Op &op) {
  const Type &x = op.operand(0)->type;
  require(x.rank() == 1 && isInteger(x.dtype), op, "histogram counts a 1-D integer tensor");
  require(op.operands.size() == 1 ||
              (op.operands.size() == 2 && op.operand(1)->type == x.withDType(DType::I1)),
          op, "histogram's mask is i1 shaped as its values");
  require(op.result()->type.rank() == 1 && op.result()->type.dtype == DType::I32, op,
          "histogram gives a 1-D i32 tensor of counts");
}

void checkDot(const Op &op) {
  const Type &a = op.operand(0)->type, &b = op.operand(1)->type, &acc = op.operand(2)->type;
  int r = a.rank();
  require((r == 2 || r == 3) && b.rank() == r && acc.rank() == r, op,
          "dot's operands are all rank 2, or all rank 3 (batched)");
  require(r == 2 || (a.shape[0] == b.shape[0] && a.shape[0] == acc.shape[0]), op,
          "dot's batch dimensions must match");
  int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
  require(b.shape[r - 2] == k && acc.shape[r - 2] == m && acc.shape[r - 1] == n, op,
          "dot needs a [M, K], b [K, N], acc [M, N]");
  require(op.result()->type == acc, op, "dot's result has the accumulator's type");
}

void checkFor(const Op &op) {
  require(op.operands.size() >= 3, op, "for takes lb, ub, step, inits...");
  const Type &iv = op.operand(0)->type;
  require(isScalarInt(iv) && op.operand(1)->type == iv && op.operand(2)->type == iv, op,
          "for's lb, ub and step are scalars of one integer type");
  std::vector<Type> inits = typesOf(op.operands, 3);
  require(typesOf(op.results) == inits, op, "for's result types are its inits' types");
  std::vector<Type> args = {iv};
  args.insert(args.end(), inits.begin(), inits.end());
  require(typesOf(op.regions[0]->args) == args, op, "for's body args are iv, then one per init");
  require(terminatorTypes(op, 0, OpKind::Yield, "for's body must end in yield") == inits, op,
          "for's yield must match its result types");
}

void checkIf(const Op &op) {
  require(op.operands.size() == 1 && op.operand(0)->type == Type::scalar(DType::I1), op,
          "if takes one scalar i1 condition");
  std::vector<Type> results = typesOf(op.results);
  for (int i = 0; i < 2; ++i) {
    require(op.regions[i]->args.empty(), op, "if's regions take no arguments");
    require(terminatorTypes(op, i, OpKind::Yield, "if's regions must end in yield") == results, op,
            "if's yields must match its result types");
  }
}

void checkWhile(const Op &op) {
  std::vector<Type> inits = typesOf(op.operands), results = typesOf(op.results);
  require(typesOf(op.regions[0]->args) == inits, op, "while's before-region args are the inits");
  std::vector<Type> cond =
      terminatorTypes(op, 0, OpKind::Condition, "while's before-region must end in condition");
  require(!cond.empty() && cond[0] == Type::scalar(DType::I1), op,
          "condition's first operand is a scalar i1");
  require(std::vector<Type>(cond.begin() + 1, cond.end()) == results, op,
          "condition passes values of the result types");
  require(typesOf(op.regions[1]->args) == results, op, "while's after-region args are the results");
  require(terminatorTypes(op, 1, OpKind::Yield, "while's after-region must end in yield") == inits,
          op, "while's yield must match its init types");
}

// GPU-level ops appear only on a backend's copy (verify(fn, true)).
thread_local bool gpuLevel = false;

void checkConvertLayout(const Op &op) {
  require(gpuLevel, op, "a GPU-level op in portable Tile IR");
  require(op.operand(0)->type == op.result()->type && op.result()->type.encoding, op,
          "convert_layout keeps the type and gives it an encoding");
}

void checkWarpSpecialize(const Op &op) {
  require(gpuLevel, op, "a GPU-level op in portable Tile IR");
  for (int i = 0; i < 2; ++i)
    require(op.regions[i]->args.empty() &&
                terminatorTypes(op, i, OpKind::Yield, "warp_specialize's regions end in yield")
                    .empty(),
            op, "warp_specialize's regions take and yield nothing");
  require(op.intAttr("ring_stages") >= 2 && op.intAttr("ring_slot_bytes") > 0, op,
          "warp_specialize needs ring_stages >= 2 and ring_slot_bytes");
}

void checkProduce(const Op &op) {
  require(gpuLevel, op, "a GPU-level op in portable Tile IR");
  require(!op.operands.empty() && op.intsAttr("tile_rows").size() == op.operands.size() &&
              op.intsAttr("tile_row_bytes").size() == op.operands.size(),
          op, "produce takes block pointers, with a tile_rows and tile_row_bytes each");
  for (const Value *v : op.operands)
    require(v->type.dtype == DType::BlockPtr, op, "produce copies the tiles of block pointers");
}

void checkAssert(const Op &op) {
  require(isI1(op.operand(0)->type), op, "assert's operand must be i1");
}

// The rules of single ops. Every op is listed, so a new one needs a decision here.
void checkOp(const Op &op) {
  switch (op.kind) {
  case OpKind::Constant:
    return checkConstant(op);
  case OpKind::ProgramId:
  case OpKind::NumPrograms:
    return checkProgramIndex(op);
  case OpKind::MakeRange:
    return checkMakeRange(op);
  case OpKind::Splat:
    return checkSplat(op);
  case OpKind::Broadcast:
    return checkBroadcast(op);
  case OpKind::ExpandDims:
    return checkExpandDims(op);
  case OpKind::Reshape:
    return checkReshape(op);
  case OpKind::Trans:
    return checkTrans(op);
  case OpKind::Cast:
  case OpKind::Bitcast:
  case OpKind::IntToPtr:
  case OpKind::PtrToInt:
    return checkConversion(op);
  case OpKind::CmpEq:
  case OpKind::CmpNe:
  case OpKind::CmpLt:
  case OpKind::CmpLe:
  case OpKind::CmpGt:
  case OpKind::CmpGe:
    return checkComparison(op);
  case OpKind::Select:
    return checkSelect(op);
  case OpKind::AddPtr:
    return checkAddPtr(op);
  case OpKind::Load:
    return checkLoad(op);
  case OpKind::Store:
    return checkStore(op);
  case OpKind::AtomicRMW:
  case OpKind::AtomicCAS:
    return checkAtomic(op);
  case OpKind::AtomicLoad:
  case OpKind::AtomicStore:
  case OpKind::AtomicPoll:
    return checkAtomicAccess(op);
  case OpKind::InlineAsm:
    return checkInlineAsm(op);
  case OpKind::MakeBlockPtr:
    return checkMakeBlockPtr(op);
  case OpKind::Advance:
    return checkAdvance(op);
  case OpKind::LoadBlock:
  case OpKind::StoreBlock:
    return checkBlockAccess(op);
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    return checkReduce(op);
  case OpKind::CumSum:
    return checkCumSum(op);
  case OpKind::ReduceWith:
    return checkReduceWith(op);
  case OpKind::ScanWith:
    return checkScanWith(op);
  case OpKind::Sort:
    return checkSort(op);
  case OpKind::Gather:
    return checkGather(op);
  case OpKind::Histogram:
    return checkHistogram(op);
  case OpKind::Dot:
    return checkDot(op);
  case OpKind::For:
    return checkFor(op);
  case OpKind::If:
    return checkIf(op);
  case OpKind::While:
    return checkWhile(op);
  case OpKind::Assert:
    return checkAssert(op);
  case OpKind::ConvertLayout:
    return checkConvertLayout(op);
  case OpKind::WarpSpecialize:
    return checkWarpSpecialize(op);
  case OpKind::Produce:
    return checkProduce(op);
  // Fully covered by the table's rules (arithmetic, math) or free-form.
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::IDiv:
  case OpKind::IRem:
  case OpKind::FRem:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Min:
  case OpKind::Max:
  case OpKind::UMulHi:
  case OpKind::Pow:
  case OpKind::Atan2:
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Erf:
  case OpKind::Fma:
  case OpKind::Yield:     // placed by checkBlock
  case OpKind::Condition: // placed by checkBlock
  case OpKind::Return:    // placed by checkBlock
  case OpKind::Print:
  case OpKind::GdcWait:
  case OpKind::GdcLaunchDependents:
    return;
  }
}

// The terminator a block must end in: return for the function body, condition
// for while's first region, yield for every other region.
OpKind expectedTerminator(const Block &block) {
  const Op *parent = block.parent;
  if (!parent)
    return OpKind::Return;
  if (parent->kind == OpKind::While && parent->regions[0].get() == &block)
    return OpKind::Condition;
  return OpKind::Yield;
}

// Walks blocks in order, keeping the set of values visible at each op.
class Verifier {
public:
  // `values`: how many the function defines, as its last renumbering counted
  // (the table is sized once; it grows if the count is stale).
  explicit Verifier(size_t values) : visible_(values) {}
  void checkBlock(const Block &block, const Op *parent);

private:
  UseCounts visible_; // 1 while a value is visible (no heap node per value)

  void checkLinks(const Op &op, const Block &block);
  void checkTerminator(const Block &block, const Op *parent);
};

void Verifier::checkLinks(const Op &op, const Block &block) {
  require(op.parent == &block, op, "op's parent is not the block holding it");
  for (size_t i = 0; i < op.results.size(); ++i) {
    const Value &r = *op.results[i];
    require(r.def == &op && r.owner == nullptr && r.index == (int)i, op,
            "result's def/owner/index are wrong");
  }
  for (const auto &region : op.regions)
    require(region->parent == &op, op, "region's parent is not its op");
  for (const Value *v : op.operands)
    require(v && visible_.get(v) > 0, op, "operand is not defined before this use (dominance)");
}

void Verifier::checkTerminator(const Block &block, const Op *parent) {
  OpKind want = expectedTerminator(block);
  if (block.ops.empty() || block.ops.back()->kind != want) // (the message built only here)
    broken(std::string("block must end in ") + opInfo(want).mnemonic,
           !block.ops.empty() ? printOp(*block.ops.back())
           : parent          ? printOp(*parent)
                             : "the function body");
  for (size_t i = 0; i + 1 < block.ops.size(); ++i)
    require(!block.ops[i]->has(TERMINATOR), *block.ops[i],
            "a terminator must be last in its block");
}

void Verifier::checkBlock(const Block &block, const Op *parent) {
  if (block.parent != parent)
    broken("block's parent is not the op holding it", parent ? printOp(*parent) : "the function");
  std::vector<const Value *> added;
  for (size_t i = 0; i < block.args.size(); ++i) {
    const Value &a = *block.args[i];
    if (a.owner != &block || a.def || a.index != (int)i)
      broken("block argument's owner/def/index are wrong",
             parent ? printOp(*parent) : "the function's arguments");
    visible_[&a] = 1;
    added.push_back(&a);
  }
  checkTerminator(block, parent);
  for (const auto &op : block.ops) {
    checkCounts(*op);
    checkLinks(*op, block);
    checkElementwise(*op);
    checkOperandKinds(*op);
    checkOp(*op);
    for (const auto &region : op->regions)
      checkBlock(*region, op.get());
    for (const auto &r : op->results) {
      visible_[r.get()] = 1;
      added.push_back(r.get());
    }
  }
  for (const Value *v : added)
    visible_[v] = 0;
}

} // namespace

void verify(const Function &fn, bool gpu) {
  if (!fn.body)
    broken("function has no body", "@" + fn.name);
  gpuLevel = gpu;
  try {
    Verifier(fn.numValues).checkBlock(*fn.body, nullptr);
  } catch (...) {
    gpuLevel = false;
    throw;
  }
  gpuLevel = false;
}

} // namespace tilec
