// The compile driver.
#include "runtime/compiler.h"

#include <chrono>
#include <iostream>
#include <sstream>

#include "ir/printer.h"
#include "passes/pipeline.h"

namespace tilec {

std::shared_ptr<CompiledKernel> compileKernel(const SourcePtr &source,
                                              std::shared_ptr<Resolver> resolver,
                                              std::vector<KernelParam> params,
                                              const std::string &target) {
  auto start = std::chrono::steady_clock::now();
  auto out = std::make_shared<CompiledKernel>();
  out->fn = lowerKernel(source, resolver, params, target);
  out->name = out->fn->name;
  out->source_ = source;
  out->resolver_ = std::move(resolver);
  out->params_ = std::move(params); // (kept for irAfterSema: moved, not copied)
  out->target_ = target;
  bool dump = irDumpRequested();
  std::ostringstream log;
  if (dump) {
    out->irAfterSema_ = printFunction(*out->fn);
    log << "// -----// IR after sema (" << out->name << ") //----- //\n" << *out->irAfterSema_;
  }
  runPipeline(*out->fn, dump ? &log : nullptr);
  out->fn->renumber();
  out->ir = printFunction(*out->fn);
  if (dump)
    std::cerr << log.str() << std::flush;
  out->compileMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

const std::string &CompiledKernel::irAfterSema() {
  if (!irAfterSema_)
    irAfterSema_ = printFunction(*lowerKernel(source_, resolver_, params_, target_));
  return *irAfterSema_;
}

} // namespace tilec
