// Constructors and descriptions of ConstValue and SVal.
#include "sema/values.h"

#include "support/text.h"

#include <cmath>
#include <sstream>

namespace tilec {

ConstValue ConstValue::boolean(bool v) {
  ConstValue c;
  c.kind = Bool;
  c.b = v;
  return c;
}
ConstValue ConstValue::integer(int64_t v) {
  ConstValue c;
  c.kind = Int;
  c.i = v;
  return c;
}
ConstValue ConstValue::floating(double v) {
  ConstValue c;
  c.kind = Float;
  c.f = v;
  return c;
}
ConstValue ConstValue::string(std::string v) {
  ConstValue c;
  c.kind = Str;
  c.s = std::move(v);
  return c;
}
ConstValue ConstValue::dtype(Type t) {
  ConstValue c;
  c.kind = DTypeValue;
  c.type = std::move(t);
  return c;
}
ConstValue ConstValue::tuple(std::vector<ConstValue> v) {
  ConstValue c;
  c.kind = Tuple;
  c.elems = std::move(v);
  return c;
}

bool ConstValue::truthy() const {
  switch (kind) {
  case None:
    return false;
  case Bool:
    return b;
  case Int:
    return i != 0;
  case Float:
    return f != 0;
  case Str:
    return !s.empty();
  case DTypeValue:
    return true;
  case Tuple:
    return !elems.empty();
  }
  return false;
}

bool ConstValue::operator==(const ConstValue &o) const {
  if (isNumber() && o.isNumber()) {
    if (kind == Float || o.kind == Float)
      return asDouble() == o.asDouble();
    return asInt() == o.asInt();
  }
  if (kind != o.kind)
    return false;
  switch (kind) {
  case None:
    return true;
  case Str:
    return s == o.s;
  case DTypeValue:
    return type == o.type;
  case Tuple:
    return elems == o.elems;
  default:
    return false;
  }
}

static std::string dtypeRepr(const Type &t) {
  static const std::pair<DType, const char *> names[] = {
      {DType::I1, "int1"},        {DType::I8, "int8"},        {DType::I16, "int16"},
      {DType::I32, "int32"},      {DType::I64, "int64"},      {DType::U8, "uint8"},
      {DType::U16, "uint16"},     {DType::U32, "uint32"},     {DType::U64, "uint64"},
      {DType::F8E4M3, "fp8e4nv"}, {DType::F8E5M2, "fp8e5"},   {DType::F16, "fp16"},
      {DType::BF16, "bf16"},      {DType::F32, "fp32"},       {DType::F64, "fp64"}};
  if (t.dtype == DType::Ptr)
    return "pointer<" + dtypeRepr(Type::scalar(t.pointee)) + ">";
  for (auto &[d, n] : names)
    if (d == t.dtype)
      return n;
  return t.str();
}

std::string ConstValue::repr() const {
  switch (kind) {
  case None:
    return "None";
  case Bool:
    return b ? "True" : "False";
  case Int:
    return std::to_string(i);
  case Float:
    return formatFloat(f);
  case Str:
    return "'" + s + "'";
  case DTypeValue:
    return dtypeRepr(type);
  case Tuple: {
    std::string out = "(";
    for (size_t k = 0; k < elems.size(); ++k)
      out += (k ? ", " : "") + elems[k].repr();
    return out + (elems.size() == 1 ? ",)" : ")");
  }
  }
  return "?";
}

SVal SVal::constant(ConstValue c) {
  SVal v;
  v.kind = Const;
  v.c = std::move(c);
  return v;
}
SVal SVal::tensor(Value *value) {
  SVal v;
  v.kind = Tensor;
  v.v = value;
  return v;
}
SVal SVal::tuple(std::vector<SVal> elems) {
  SVal v;
  v.kind = Tuple;
  v.elems = std::move(elems);
  return v;
}
SVal SVal::module(std::string name) {
  SVal v;
  v.kind = Module;
  v.name = std::move(name);
  return v;
}
SVal SVal::builtin(std::string name) {
  SVal v;
  v.kind = Builtin;
  v.name = std::move(name);
  return v;
}
SVal SVal::jit(std::shared_ptr<JitFunctionRef> fn) {
  SVal v;
  v.kind = JitFn;
  v.fn = std::move(fn);
  v.name = v.fn->name;
  return v;
}

std::string SVal::describe() const {
  switch (kind) {
  case Const:
    return c.kind == ConstValue::DTypeValue ? "dtype " + c.repr() : "constexpr " + c.repr();
  case Tensor:
    return v->type.isScalar() ? "scalar " + v->type.str() : v->type.str();
  case Tuple: {
    std::string out = "tuple (";
    for (size_t k = 0; k < elems.size(); ++k)
      out += (k ? ", " : "") + elems[k].describe();
    return out + ")";
  }
  case Module:
    return "module '" + name + "'";
  case Builtin:
    return "function '" + name + "'";
  case JitFn:
    return "@jit function '" + name + "'";
  case PyObject:
    return name;
  }
  return "?";
}

} // namespace tilec
