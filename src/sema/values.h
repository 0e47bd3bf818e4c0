// The values sema works with: compile-time constants (Python values a kernel
// sees as tl.constexpr) and SVal, what any expression evaluates to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/ir.h"

namespace tilec {

// A Python value known at compile time.
struct ConstValue {
  enum Kind { None, Bool, Int, Float, Str, DTypeValue, Tuple } kind = None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  Type type;                    // DTypeValue: a scalar or pointer type
  std::vector<ConstValue> elems; // Tuple

  static ConstValue none() { return {}; }
  static ConstValue boolean(bool v);
  static ConstValue integer(int64_t v);
  static ConstValue floating(double v);
  static ConstValue string(std::string v);
  static ConstValue dtype(Type t);
  static ConstValue tuple(std::vector<ConstValue> v);

  bool isNumber() const { return kind == Bool || kind == Int || kind == Float; }
  double asDouble() const { return kind == Float ? f : kind == Int ? (double)i : (double)b; }
  int64_t asInt() const { return kind == Int ? i : (int64_t)b; }
  bool truthy() const;
  bool operator==(const ConstValue &o) const;
  // Python's repr(), for messages and cache keys.
  std::string repr() const;
};

class Resolver;
struct FunctionAst;

// A @jit function another kernel calls; inlined at each call.
struct JitFunctionRef {
  SourcePtr source;
  std::shared_ptr<Resolver> resolver;
  std::string name;
};

// What an expression evaluates to during lowering.
struct SVal {
  enum Kind {
    Const,   // c
    Tensor,  // v: an IR value, scalar or tensor
    Tuple,   // elems, which may mix constants and IR values
    Module,  // name: "triton", "triton.language", "triton.language.math", "libdevice"
    Builtin, // name: a tl function; elems[0] is the receiver of a bound method
    JitFn,   // fn
    PyObject // name: a description of a Python object a kernel cannot use
  } kind = Const;
  ConstValue c;
  Value *v = nullptr;
  std::vector<SVal> elems;
  std::string name;
  std::shared_ptr<JitFunctionRef> fn;

  static SVal constant(ConstValue c);
  static SVal tensor(Value *v);
  static SVal tuple(std::vector<SVal> elems);
  static SVal module(std::string name);
  static SVal builtin(std::string name);
  static SVal jit(std::shared_ptr<JitFunctionRef> fn);

  bool isConst() const { return kind == Const; }
  bool isTensor() const { return kind == Tensor; }
  bool isNone() const { return kind == Const && c.kind == ConstValue::None; }
  // What the value is, for messages: "constexpr 3", "tensor<128xf32>", "module 'tl'".
  std::string describe() const;
};

} // namespace tilec
