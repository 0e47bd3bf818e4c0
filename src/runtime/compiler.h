// The compile driver: source → AST → Tile IR → passes, with timings and
// TILEC_DUMP_IR output. What the Python front door and the CLI call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "sema/sema.h"

namespace tilec {

struct CompiledKernel {
  std::unique_ptr<Function> fn;
  std::string name;
  std::string ir; // the Tile IR after the pipeline
  double compileMs = 0;

  // The Tile IR before any pass. Printed when first asked for (a listing for
  // people, not needed to run): sema runs again on what the compile was given.
  const std::string &irAfterSema();

private:
  friend std::shared_ptr<CompiledKernel> compileKernel(const SourcePtr &, std::shared_ptr<Resolver>,
                                                       std::vector<KernelParam>,
                                                       const std::string &);
  SourcePtr source_;
  std::shared_ptr<Resolver> resolver_;
  std::vector<KernelParam> params_;
  std::string target_;
  std::optional<std::string> irAfterSema_;
};

// Compiles one kernel. When TILEC_DUMP_IR=1 is set, prints the IR after each
// stage to stderr. Throws CompileError.
std::shared_ptr<CompiledKernel> compileKernel(const SourcePtr &source,
                                              std::shared_ptr<Resolver> resolver,
                                              std::vector<KernelParam> params,
                                              const std::string &target = "cpu");

} // namespace tilec
