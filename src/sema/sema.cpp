// The entry of sema: binds the kernel's specialized parameters and lowers its
// body into a fresh Function.
#include "sema/sema.h"

#include <functional>
#include <unordered_set>

#include "sema/lowerer.h"

namespace tilec {

static Type paramType(const KernelParam &p) {
  switch (p.kind) {
  case KernelParam::Pointer:
    return Type::pointer(p.dtype);
  case KernelParam::Bool:
    return Type::scalar(DType::I1);
  default:
    return Type::scalar(p.dtype);
  }
}

// A host tensor descriptor: its base, sizes and strides arrive as arguments;
// the kernel sees a block pointer at offset 0 (tensor descriptor methods load
// and store tiles through it, as for tl.make_tensor_descriptor).
static Value *descriptorParam(Function &fn, Builder &entry, const std::string &name,
                              const KernelParam &p) {
  size_t rank = p.blockShape.size();
  std::vector<Value *> operands;
  auto arg = [&](const std::string &argName, Type t, int divisibility) {
    fn.argNames.push_back(argName);
    fn.argDivisibility.push_back(divisibility);
    return fn.body->addArg(std::move(t));
  };
  operands.push_back(arg(name, Type::pointer(p.dtype), p.divisibility));
  size_t k = 0; // sizes, then strides
  for (const char *part : {"shape", "stride"})
    for (size_t d = 0; d < rank; ++d, ++k) {
      int divisibility = k < p.dimDivisibility.size() ? p.dimDivisibility[k] : 1;
      Value *v = arg(name + "." + part + std::to_string(d), Type::scalar(DType::I64), divisibility);
      // A unit stride known at compile time lets accesses along it be vectors.
      bool unit = k >= rank && d < p.unitStrides.size() && p.unitStrides[d];
      operands.push_back(unit ? entry.constInt(1, Type::scalar(DType::I64)) : v);
    }
  for (size_t d = 0; d < rank; ++d)
    operands.push_back(entry.constInt(0, Type::scalar(DType::I32)));
  std::vector<int64_t> order;
  for (size_t d = 0; d < rank; ++d)
    order.push_back((int64_t)(rank - 1 - d));
  Op *op = entry.create(OpKind::MakeBlockPtr, operands,
                        {Type::blockPointer(p.dtype, p.blockShape)});
  op->setAttr("order", order);
  op->setAttr("padding", p.padding);
  return op->result();
}

std::unique_ptr<Function> lowerKernel(const SourcePtr &source, std::shared_ptr<Resolver> resolver,
                                      const std::vector<KernelParam> &params,
                                      const std::string &target) {
  std::shared_ptr<const FunctionDef> def = parsedFunction(source);
  if (def->params.size() != params.size())
    fail(Location{source, def->span}, "'" + def->name + "' takes " +
                                          std::to_string(def->params.size()) + " arguments but " +
                                          std::to_string(params.size()) + " were given");
  auto fn = std::make_unique<Function>();
  fn->name = def->name;
  Frame frame;
  frame.name = def->name;
  frame.source = source;
  frame.resolver = std::move(resolver);
  frame.isKernel = true;
  Builder entry(fn->body.get());
  // What the kernel sees for a parameter; a tuple's elements are arguments
  // named name.0, name.1, ... in order.
  std::function<SVal(const std::string &, const KernelParam &)> bind =
      [&](const std::string &name, const KernelParam &p) -> SVal {
    switch (p.kind) {
    case KernelParam::Constexpr:
      return SVal::constant(p.value);
    case KernelParam::Descriptor:
      return SVal::tensor(descriptorParam(*fn, entry, name, p));
    case KernelParam::Tuple: {
      std::vector<SVal> elems;
      for (size_t k = 0; k < p.elems.size(); ++k)
        elems.push_back(bind(name + "." + std::to_string(k), p.elems[k]));
      return SVal::tuple(std::move(elems));
    }
    default:
      fn->argNames.push_back(name);
      fn->argDivisibility.push_back(p.divisibility);
      return SVal::tensor(fn->body->addArg(paramType(p)));
    }
  };
  std::unordered_set<const Value *> constPointers;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param &param = def->params[i];
    SVal v = bind(param.name, params[i]);
    const Expr *ann = param.annotation.get();
    if (ann && (ann->kind == ExprKind::Name || ann->kind == ExprKind::Attribute) &&
        ann->name == "const" && v.isTensor() && v.v->type.dtype == DType::Ptr)
      constPointers.insert(v.v); // `x_ptr: tl.const`: the kernel only reads through it
    frame.vars[param.name] = v;
  }
  Lowerer lowerer(*fn);
  lowerer.target_ = target;
  lowerer.constPointers_ = std::move(constPointers);
  lowerer.lowerKernelBody(*def, frame);
  return fn;
}

} // namespace tilec
