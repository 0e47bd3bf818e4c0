// Lowering of expressions: names, operators, attributes, subscripts and
// calls, including the inlining of @jit callees.
#include <algorithm>
#include <map>

#include "sema/lowerer.h"

namespace tilec {

SVal Lowerer::eval(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Name:
    return evalName(e);
  case ExprKind::Int:
    if (e.intTooLarge || e.intValue > (uint64_t)INT64_MAX)
      error(e.span, "integer literal is too large for a kernel (the most is 2**63 - 1)");
    return SVal::constant(ConstValue::integer((int64_t)e.intValue));
  case ExprKind::Float:
    return SVal::constant(ConstValue::floating(e.floatValue));
  case ExprKind::Str:
    return SVal::constant(ConstValue::string(e.name));
  case ExprKind::Bool:
    return SVal::constant(ConstValue::boolean(e.boolValue));
  case ExprKind::None:
    return SVal::constant(ConstValue::none());
  case ExprKind::Tuple:
  case ExprKind::List: {
    std::vector<SVal> elems;
    for (auto &x : e.elts)
      elems.push_back(eval(*x));
    bool allConst = std::all_of(elems.begin(), elems.end(), [](auto &s) { return s.isConst(); });
    if (!allConst)
      return SVal::tuple(std::move(elems));
    std::vector<ConstValue> cs;
    for (auto &s : elems)
      cs.push_back(s.c);
    return SVal::constant(ConstValue::tuple(std::move(cs)));
  }
  case ExprKind::BinOp:
    return evalBinOp(e);
  case ExprKind::UnaryOp:
    return evalUnaryOp(e);
  case ExprKind::BoolOp:
    return evalBoolOp(e);
  case ExprKind::Compare:
    return evalCompare(e);
  case ExprKind::IfExp:
    return evalIfExp(e);
  case ExprKind::Call:
    return evalCall(e);
  case ExprKind::Attribute:
    return evalAttribute(e);
  case ExprKind::Subscript:
    return evalSubscript(e);
  case ExprKind::Slice:
    error(e.span, "a slice is allowed only inside a subscript");
  }
  error(e.span, "unsupported expression");
}

static const char *const kPythonBuiltins[] = {"range", "min",   "max",        "len",
                                               "int",   "float", "bool",       "print",
                                               "abs",   "tuple", "isinstance", "hasattr",
                                               "getattr"};

SVal Lowerer::evalName(const Expr &e) {
  Frame &f = frame();
  auto it = f.vars.find(e.name);
  if (it != f.vars.end())
    return it->second;
  if (f.oneBranchOnly.count(e.name))
    error(e.span, "'" + e.name +
                      "' is assigned in only one branch of an 'if' above, so it may be undefined "
                      "here; assign it in both branches or before the 'if'");
  return lookupGlobal(e.name, e.span);
}

SVal Lowerer::lookupGlobal(const std::string &name, const Span &span) {
  Frame &f = frame();
  auto cached = f.globals.find(name);
  GlobalBinding g;
  if (cached != f.globals.end()) {
    g = cached->second;
  } else {
    g = f.resolver ? f.resolver->lookup(name) : GlobalBinding{};
    f.globals[name] = g;
  }
  switch (g.kind) {
  case GlobalBinding::Module:
    return SVal::module(g.module);
  case GlobalBinding::JitFunction:
    return SVal::jit(g.fn);
  case GlobalBinding::Constexpr:
    return SVal::constant(g.value);
  case GlobalBinding::Builtin:
    return moduleAttr(g.module, g.name, span);
  case GlobalBinding::PythonObject: {
    SVal v;
    v.kind = SVal::PyObject;
    v.name = g.description.empty() ? "Python object '" + name + "'" : g.description;
    return v;
  }
  case GlobalBinding::Unknown:
    break;
  }
  for (const char *b : kPythonBuiltins)
    if (name == b)
      return SVal::builtin(std::string("py.") + b);
  error(span, "name '" + name + "' is not defined");
}

static const std::map<std::string, DType> &dtypeNames() {
  static const std::map<std::string, DType> names = {
      {"int1", DType::I1},          {"int8", DType::I8},        {"int16", DType::I16},
      {"int32", DType::I32},        {"int64", DType::I64},      {"uint8", DType::U8},
      {"uint16", DType::U16},       {"uint32", DType::U32},     {"uint64", DType::U64},
      {"float8e4nv", DType::F8E4M3}, {"float8e5", DType::F8E5M2}, {"float16", DType::F16},
      {"bfloat16", DType::BF16},    {"float32", DType::F32},    {"float64", DType::F64}};
  return names;
}

SVal Lowerer::moduleAttr(const std::string &module, const std::string &attr, const Span &span) {
  if (module == "triton") {
    if (attr == "language")
      return SVal::module("triton.language");
    if (attr == "cdiv" || attr == "next_power_of_2")
      return SVal::builtin(attr);
  } else if (module == "triton.language" || module == "triton.language.core") {
    auto d = dtypeNames().find(attr);
    if (d != dtypeNames().end())
      return SVal::constant(ConstValue::dtype(Type::scalar(d->second)));
    if (std::string why = unsupportedDTypeReason(attr); !why.empty())
      error(span, why);
    if (attr == "target_info")
      return SVal::module("triton.language.target_info");
    if (attr == "math" || attr == "extra")
      return SVal::module("triton.language." + attr);
    if (attr == "core" || attr == "standard")
      return SVal::module("triton.language");
    if (isBuiltin(attr) || attr == "range" || attr == "static_range")
      return SVal::builtin(attr);
  } else if (module == "triton.language.target_info") {
    if (isBuiltin("target_info." + attr))
      return SVal::builtin("target_info." + attr);
  } else if (module == "triton.language.math" || module == "libdevice") {
    if (isBuiltin("math." + attr))
      return SVal::builtin("math." + attr);
  } else if (module == "triton.language.extra" || module == "triton.language.extra.cuda") {
    if (attr == "libdevice")
      return SVal::module("libdevice");
    if (attr == "cuda")
      return SVal::module("triton.language.extra.cuda");
    if (module == "triton.language.extra.cuda" && isBuiltin("cuda." + attr))
      return SVal::builtin("cuda." + attr);
  }
  // A helper written in the kernel language (tl.rand, ...) or a constant of a
  // language module: the Python side resolves the dotted name.
  if (const auto &resolver = frame().resolver) {
    GlobalBinding g = resolver->lookup(module + "." + attr);
    if (g.kind == GlobalBinding::JitFunction)
      return SVal::jit(g.fn);
    if (g.kind == GlobalBinding::Constexpr) // tl.TRITON_MAX_TENSOR_NUMEL, tl.PropagateNan.ALL
      return SVal::constant(g.value);
    if (g.kind == GlobalBinding::Module) // tl.PropagateNan: a namespace of constants
      return SVal::module(g.module);
  }
  error(span, "module '" + module + "' has no attribute '" + attr + "' that kernels can use");
}

SVal Lowerer::evalBinOp(const Expr &e) {
  SVal a = eval(*e.a), b = eval(*e.b);
  return binary(e.binop, a, b, e.span);
}

SVal Lowerer::evalUnaryOp(const Expr &e) { return unary(e.unop, eval(*e.a), e.span); }

// `a and b` / `a or b`: Python's short circuit on constants, logical ops on
// runtime booleans.
SVal Lowerer::evalBoolOp(const Expr &e) {
  bool isAnd = e.boolop == BoolOpKind::And;
  SVal acc = eval(*e.elts[0]);
  for (size_t i = 1; i < e.elts.size(); ++i) {
    if (acc.isConst()) {
      if (acc.c.truthy() != isAnd)
        return acc;
      acc = eval(*e.elts[i]);
      continue;
    }
    SVal next = eval(*e.elts[i]);
    if (next.isConst() && next.c.truthy() == isAnd)
      continue;
    Value *x = toMask(materialize(acc, e.elts[i - 1]->span));
    Value *y = toMask(materialize(next, e.elts[i]->span));
    auto [bx, by] = broadcastPair(x, y, e.span);
    acc = SVal::tensor(b_.create1(isAnd ? OpKind::And : OpKind::Or, {bx, by}, bx->type));
  }
  return acc;
}

SVal Lowerer::evalCompare(const Expr &e) {
  SVal left = eval(*e.a);
  SVal result;
  for (size_t i = 0; i < e.cmpops.size(); ++i) {
    SVal right = eval(*e.elts[i]);
    SVal r = compare(e.cmpops[i], left, right, e.span);
    if (i == 0) {
      result = r;
    } else if (result.isConst() && r.isConst()) {
      result = SVal::constant(ConstValue::boolean(result.c.truthy() && r.c.truthy()));
    } else {
      Value *x = toMask(materialize(result, e.span)), *y = toMask(materialize(r, e.span));
      auto [bx, by] = broadcastPair(x, y, e.span);
      result = SVal::tensor(b_.create1(OpKind::And, {bx, by}, bx->type));
    }
    left = right;
  }
  return result;
}

SVal Lowerer::evalIfExp(const Expr &e) {
  SVal test = eval(*e.a);
  if (test.isConst())
    return test.c.truthy() ? eval(*e.b) : eval(*e.c);
  SVal yes = eval(*e.b), no = eval(*e.c);
  return where(test, yes, no, e.span);
}

SVal Lowerer::evalAttribute(const Expr &e) { return attribute(eval(*e.a), e.name, e.span); }

// `base.name`, also for getattr() and hasattr().
SVal Lowerer::attribute(const SVal &base, const std::string &name, const Span &span) {
  switch (base.kind) {
  case SVal::Module:
    return moduleAttr(base.name, name, span);
  case SVal::Tensor:
    return tensorAttribute(base, name, span);
  case SVal::Const:
    if (base.c.kind == ConstValue::DTypeValue)
      return dtypeAttribute(base.c, name, span);
    if (name == "value")
      return base;
    if (name == "dtype" && base.c.isNumber()) // `value = 1; value.dtype`: the type Triton gives it
      return SVal::constant(ConstValue::dtype(materialize(base, span)->type.element()));
    if (base.c.isNumber() && isTensorMethod(name)) { // `acc = 0; acc = acc.to(tl.int64)`
      SVal m = SVal::builtin(name);
      m.elems.push_back(SVal::tensor(materialize(base, span)));
      return m;
    }
    break;
  default:
    break;
  }
  error(span, base.describe() + " has no attribute '" + name + "'");
}

// x[:, None], x[None, :], t[0] for a tuple.
SVal Lowerer::evalSubscript(const Expr &e) {
  SVal base = eval(*e.a);
  std::vector<const Expr *> indices;
  if (e.b->kind == ExprKind::Tuple)
    for (auto &x : e.b->elts)
      indices.push_back(x.get());
  else
    indices.push_back(e.b.get());
  if (base.kind == SVal::Tuple || (base.isConst() && base.c.kind == ConstValue::Tuple)) {
    SVal idx = eval(*e.b);
    if (!idx.isConst() || idx.c.kind != ConstValue::Int)
      error(e.b->span, "a tuple index must be a constexpr integer");
    int64_t n = base.isConst() ? (int64_t)base.c.elems.size() : (int64_t)base.elems.size();
    int64_t i = idx.c.i < 0 ? idx.c.i + n : idx.c.i;
    if (i < 0 || i >= n)
      error(e.b->span, "tuple index " + std::to_string(idx.c.i) + " out of range for a tuple of " +
                           std::to_string(n));
    return base.isConst() ? SVal::constant(base.c.elems[i]) : base.elems[i];
  }
  if (!base.isTensor())
    error(e.span, base.describe() + " cannot be subscripted");
  Value *v = base.v;
  int dim = 0;
  for (const Expr *ix : indices) {
    if (ix->kind == ExprKind::None) {
      v = expandDims(v, dim++);
      continue;
    }
    auto isNone = [](const ExprPtr &x) { return !x || x->kind == ExprKind::None; };
    if (ix->kind == ExprKind::Slice && isNone(ix->a) && isNone(ix->b) && isNone(ix->c)) {
      ++dim; // ':' keeps a dim; as in Triton, one past the last is allowed (Z[None, :])
      continue;
    }
    error(ix->span, "unsupported tensor index: tensors take only ':' and None as indices "
                    "(x[:, None]); use tl.load with computed offsets to pick elements");
  }
  return SVal::tensor(v);
}

CallArgs Lowerer::evalArgs(const Expr &call) {
  CallArgs args;
  args.span = call.span;
  for (auto &a : call.elts)
    args.positional.push_back({eval(*a), a->span});
  for (auto &k : call.keywords)
    args.keywords.push_back({k.name, {eval(*k.value), k.span}});
  return args;
}

SVal Lowerer::evalCall(const Expr &e) {
  SVal fn = eval(*e.a);
  CallArgs args = evalArgs(e);
  return callValue(fn, args, e);
}

SVal Lowerer::callValue(const SVal &fn, CallArgs &args, const Expr &call) {
  switch (fn.kind) {
  case SVal::Builtin:
    if (!fn.elems.empty())
      args.positional.insert(args.positional.begin(), Arg{fn.elems[0], call.a->span});
    return callBuiltin(fn.name, args, call);
  case SVal::JitFn:
    return inlineJit(*fn.fn, args, call);
  case SVal::PyObject:
    error(call.a->span, "cannot call " + fn.name +
                            " from a kernel: only @jit functions and tl.* builtins can be called");
  default:
    error(call.a->span, fn.describe() + " is not callable");
  }
}

SVal Lowerer::inlineJit(const JitFunctionRef &ref, CallArgs &args, const Expr &call) {
  if (frames_.size() > 64)
    error(call.span, "too deeply nested @jit calls (is '" + ref.name + "' recursive?)");
  std::shared_ptr<const FunctionDef> def = parsedFunction(ref.source);

  Frame callee;
  callee.name = def->name;
  callee.source = ref.source;
  callee.resolver = ref.resolver;
  std::vector<std::string> signature;
  for (auto &p : def->params)
    signature.push_back(p.defaultValue ? p.name + "=" : p.name);
  std::vector<std::optional<Arg>> bound = bindArgs(*this, def->name, signature, args);

  frames_.push_back(&callee);
  try {
    for (size_t i = 0; i < def->params.size(); ++i) {
      const Param &p = def->params[i];
      // A helper's tl.constexpr annotation is not enforced, as in Triton: Triton's
      // attention tutorial passes tensors (offs_m) to such parameters.
      SVal v = bound[i] ? bound[i]->val : eval(*p.defaultValue);
      callee.vars[p.name] = v;
    }
    StmtList body;
    for (auto &s : def->body)
      body.push_back(s.get());
    lowerStmts(body);
  } catch (CompileError &err) {
    if (frames_.back() == &callee)
      frames_.pop_back();
    err.addNote(loc(call.span), "in the call to '" + def->name + "' here");
    throw;
  }
  frames_.pop_back();
  return callee.returned ? callee.returnValue : SVal::constant(ConstValue::none());
}

std::vector<std::optional<Arg>> bindArgs(Lowerer &l, const std::string &fnName,
                                         const std::vector<std::string> &signature,
                                         CallArgs &args, std::vector<Arg> *rest) {
  std::vector<std::string> names;
  std::vector<bool> optional;
  int restAt = -1;
  for (auto &s : signature) {
    if (s[0] == '*') {
      restAt = (int)names.size();
      continue;
    }
    bool opt = s.back() == '=';
    names.push_back(opt ? s.substr(0, s.size() - 1) : s);
    optional.push_back(opt);
  }
  std::vector<std::optional<Arg>> out(names.size());
  size_t limit = restAt >= 0 ? (size_t)restAt : names.size();
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < limit) {
      out[i] = args.positional[i];
    } else if (restAt >= 0 && rest) {
      rest->push_back(args.positional[i]);
    } else {
      l.error(args.positional[i].span, fnName + "() takes " + std::to_string(limit) +
                                           " positional arguments but " +
                                           std::to_string(args.positional.size()) + " were given");
    }
  }
  for (auto &[name, arg] : args.keywords) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      l.error(arg.span, fnName + "() got an unexpected keyword argument '" + name + "'");
    size_t i = it - names.begin();
    if (out[i])
      l.error(arg.span, fnName + "() got multiple values for argument '" + name + "'");
    out[i] = arg;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (!out[i] && !optional[i])
      l.error(args.span, fnName + "() missing required argument '" + names[i] + "'");
  return out;
}

} // namespace tilec
