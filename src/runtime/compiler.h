// The compile driver: source → AST → Tile IR → passes, with timings and
// TILEC_DUMP_IR output. What the Python front door and the CLI call.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "sema/sema.h"

namespace tilec {

struct CompiledKernel {
  std::unique_ptr<Function> fn;
  std::string name;
  std::string irAfterSema; // the Tile IR before any pass
  std::string ir;          // the Tile IR after the pipeline
  double compileMs = 0;
};

// Compiles one kernel. When TILEC_DUMP_IR=1 is set, prints the IR after each
// stage to stderr. Throws CompileError.
std::shared_ptr<CompiledKernel> compileKernel(const SourcePtr &source,
                                              std::shared_ptr<Resolver> resolver,
                                              const std::vector<KernelParam> &params,
                                              const std::string &target = "cpu");

} // namespace tilec
