// The state of lowering one kernel: the IR builder, the stack of functions
// being inlined, and the helpers each part of sema uses. Split over
// lower_stmt.cpp (statements), lower_expr.cpp (expressions), semantic.cpp
// (typing rules), constexpr.cpp (Python semantics on constants) and
// builtins.cpp (the tl.* functions).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "frontend/ast.h"
#include "ir/ir.h"
#include "sema/resolver.h"
#include "sema/sema.h"

namespace tilec {

// Functions a tensor has as methods: x.to(...), x.sum(...), x.exp(), ... (builtins.cpp)
bool isTensorMethod(const std::string &name);

// One argument of a call as written: its value and where it is.
struct Arg {
  SVal val;
  Span span;
};

struct CallArgs {
  std::vector<Arg> positional;
  std::vector<std::pair<std::string, Arg>> keywords;
  Span span;
};

// One function being lowered: the kernel, or a @jit callee inlined into it.
struct Frame {
  std::string name;
  SourcePtr source;
  std::shared_ptr<Resolver> resolver;
  std::map<std::string, SVal> vars;
  std::set<std::string> oneBranchOnly; // names an `if` defined on one side only
  std::map<std::string, GlobalBinding> globals;
  bool returned = false;
  SVal returnValue;
  bool isKernel = false;
  int loopDepth = 0; // loops around the statement being lowered
};

using StmtList = std::vector<const Stmt *>;

class Lowerer {
public:
  explicit Lowerer(Function &fn) : fn_(fn), b_(fn.body.get()) {}

  void lowerKernelBody(const FunctionDef &def, Frame &frame);

  // --- statements (lower_stmt.cpp)
  void lowerStmts(const StmtList &stmts);
  void lowerStmt(const Stmt &s);
  void lowerAssign(const Stmt &s);
  void bindTarget(const Expr &target, const SVal &value);
  void lowerIf(const Stmt &s, const StmtList &rest, bool withRest);
  void lowerRuntimeIf(Value *cond, const Stmt &s, const StmtList &thenStmts,
                      const StmtList &elseStmts, bool returns);
  void lowerFor(const Stmt &s);
  void lowerStaticFor(const Stmt &s, const CallArgs &args);
  void lowerWhile(const Stmt &s);
  void lowerReturn(const Stmt &s);
  void lowerAssert(const Stmt &s);

  // --- expressions (lower_expr.cpp)
  SVal eval(const Expr &e);
  SVal evalName(const Expr &e);
  SVal evalBinOp(const Expr &e);
  SVal evalUnaryOp(const Expr &e);
  SVal evalBoolOp(const Expr &e);
  SVal evalCompare(const Expr &e);
  SVal evalIfExp(const Expr &e);
  SVal evalCall(const Expr &e);
  SVal evalAttribute(const Expr &e);
  SVal attribute(const SVal &base, const std::string &name, const Span &span);
  SVal evalSubscript(const Expr &e);
  CallArgs evalArgs(const Expr &call);
  SVal callValue(const SVal &fn, CallArgs &args, const Expr &call);
  SVal inlineJit(const JitFunctionRef &fn, CallArgs &args, const Expr &call);
  SVal lookupGlobal(const std::string &name, const Span &span);
  SVal moduleAttr(const std::string &module, const std::string &attr, const Span &span);

  // --- typing rules (semantic.cpp)
  // Errors when a Python int operand does not fit the integer type `t` it takes.
  void checkScalarFits(const SVal &s, DType t, const Span &span);
  Value *materialize(const SVal &v, const Span &span, std::optional<DType> like = std::nullopt);
  Value *constScalar(const ConstValue &c, DType d);
  static std::optional<DType> literalDType(const ConstValue &c);
  DType computationType(const SVal &a, const SVal &b, bool divOrMod, const Span &span);
  Value *castTo(Value *v, DType d);
  // A cast from or to a pointer type `t`: a bitcast between pointers, else
  // ptr_to_int or int_to_ptr.
  Value *pointerCast(Value *v, const Type &t);
  std::pair<Value *, Value *> broadcastPair(Value *a, Value *b, const Span &span);
  Value *broadcastTo(Value *v, const std::vector<int64_t> &shape, const Span &span);
  Value *splatTo(Value *v, const std::vector<int64_t> &shape);
  Value *toCondition(const SVal &v, const Span &span); // scalar i1
  Value *toMask(Value *v); // i1 of any shape
  // The scalar in a one-element tensor (x.item(), `if x:`).
  Value *unsplat(Value *v, const Span &span);
  SVal binary(BinOpKind op, const SVal &a, const SVal &b, const Span &span);
  SVal compare(CmpOpKind op, const SVal &a, const SVal &b, const Span &span);
  SVal unary(UnaryOpKind op, const SVal &a, const Span &span);
  SVal where(const SVal &cond, const SVal &a, const SVal &b, const Span &span);
  SVal minMax(bool isMax, const SVal &a, const SVal &b, const Span &span);
  Value *elementwise(OpKind kind, std::vector<Value *> operands, const Span &span);
  Value *reshape(Value *v, const std::vector<int64_t> &shape, const Span &span);
  Value *expandDims(Value *v, int axis);
  void checkBlockShape(const std::vector<int64_t> &shape, const Span &span);

  // --- Python semantics on constants (constexpr.cpp)
  ConstValue constBinary(BinOpKind op, const ConstValue &a, const ConstValue &b, const Span &span);
  ConstValue constCompare(CmpOpKind op, const ConstValue &a, const ConstValue &b, const Span &span);
  ConstValue constUnary(UnaryOpKind op, const ConstValue &a, const Span &span);

  // --- tl.* functions and tensor methods (builtins.cpp)
  SVal callBuiltin(const std::string &name, CallArgs &args, const Expr &call);
  static bool isBuiltin(const std::string &name);
  SVal tensorAttribute(const SVal &base, const std::string &attr, const Span &span);
  SVal dtypeAttribute(const ConstValue &dtype, const std::string &attr, const Span &span);
  SVal reduce(OpKind kind, Value *input, const SVal &axis, bool keepDims, const Span &span);

  // --- helpers
  Frame &frame() { return *frames_.back(); }
  Location loc(const Span &span) { return Location{frame().source, span}; }
  [[noreturn]] void error(const Span &span, const std::string &message);
  Value *tensorArg(const Arg &a, const char *what);
  int64_t constIntArg(const Arg &a, const char *what);
  std::vector<int64_t> shapeArg(const Arg &a, const char *what);
  DType dtypeArg(const Arg &a, const char *what);

  Function &fn_;
  Builder b_;
  std::string target_ = "cpu"; // what tl.target_info answers (fn_.dependsOnTarget once asked)
  std::unordered_set<const Value *> constPointers_; // parameters annotated tl.const
  // Errors when `ptr` points into a tl.const parameter (followed through the
  // ops that derive pointers from pointers), as Triton does for stores.
  void checkWritable(const Value *ptr, const Span &span);
  std::vector<Frame *> frames_;
  std::vector<std::unique_ptr<Block>> scratch_; // loop bodies lowered to learn what they carry
};

// Binds call arguments to a signature: names in order, "name=" for optional
// ones, "*name" for a rest list. Missing optional args stay empty. Reports
// unknown keywords, duplicates, too many or missing arguments.
std::vector<std::optional<Arg>> bindArgs(Lowerer &l, const std::string &fnName,
                                         const std::vector<std::string> &signature,
                                         CallArgs &args, std::vector<Arg> *rest = nullptr);

} // namespace tilec
