// The entry of sema: binds the kernel's specialized parameters and lowers its
// body into a fresh Function.
#include "sema/sema.h"

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

std::unique_ptr<Function> lowerKernel(const SourcePtr &source, std::shared_ptr<Resolver> resolver,
                                      const std::vector<KernelParam> &params) {
  std::unique_ptr<FunctionDef> def = parseFunction(source);
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
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam &p = params[i];
    const std::string &name = def->params[i].name;
    if (p.kind == KernelParam::Constexpr) {
      frame.vars[name] = SVal::constant(p.value);
      continue;
    }
    fn->argNames.push_back(name);
    fn->argDivisibility.push_back(p.divisibility);
    frame.vars[name] = SVal::tensor(fn->body->addArg(paramType(p)));
  }
  Lowerer lowerer(*fn);
  lowerer.lowerKernelBody(*def, frame);
  return fn;
}

} // namespace tilec
