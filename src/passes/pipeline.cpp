// The Tile IR pass pipeline: one straight list of passes, verified at entry and
// exit, optionally after each pass, with the IR dumped after each pass.
#include "passes/pipeline.h"

#include <cstdlib>
#include <stdexcept>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/passes.h"

namespace tilec {

namespace {

struct Pass {
  const char *name;
  bool (*run)(Function &);
};

// Every pass runPasses knows, by name.
const Pass kPasses[] = {
    {"fold", foldConstants},
    {"cse", eliminateCommonSubexpressions},
    {"dce", eliminateDeadCode},
    {"licm", hoistLoopInvariants},
    {"dot-acc", foldDotAccumulate},
    {"flatten", flattenLoops},
    {"unroll", unrollLoops},
};

// The pipeline, in order.
const Pass kPipeline[] = {
    {"fold", foldConstants},
    {"cse", eliminateCommonSubexpressions},
    {"fold", foldConstants},
    {"dot-acc", foldDotAccumulate},
    {"licm", hoistLoopInvariants},
    {"cse", eliminateCommonSubexpressions},
    {"unroll", unrollLoops},
    // After CSE: the epilogue it puts in a branch computes the tile again,
    // rather than reading what every iteration would then have to compute.
    {"flatten", flattenLoops},
    {"dce", eliminateDeadCode},
};

// Verifies with fresh value ids, so that messages name values as printed.
void verifyNumbered(Function &fn) {
  fn.renumber();
  verify(fn);
}

void dumpAfter(std::ostream &dump, const char *name, bool changed, Function &fn) {
  if (!changed) {
    dump << "// " << name << ": unchanged\n";
    return;
  }
  dump << "// -----// IR after " << name << " //----- //\n" << printFunction(fn);
}

const Pass &passNamed(const std::string &name) {
  for (const Pass &pass : kPasses)
    if (name == pass.name)
      return pass;
  throw std::invalid_argument("unknown pass '" + name +
                              "' (known: fold, cse, dce, licm, dot-acc, flatten, unroll)");
}

} // namespace

bool irDumpRequested() {
  const char *v = std::getenv("TILEC_DUMP_IR");
  return v && *v && std::string(v) != "0";
}

void runPipeline(Function &fn, std::ostream *dump, bool verifyEach) {
  verifyNumbered(fn);
  for (const Pass &pass : kPipeline) {
    bool changed = pass.run(fn);
    if (dump)
      dumpAfter(*dump, pass.name, changed, fn);
    if (verifyEach)
      verifyNumbered(fn);
  }
  verifyNumbered(fn);
}

void runPasses(Function &fn, const std::vector<std::string> &names) {
  std::vector<const Pass *> passes;
  for (const std::string &name : names)
    passes.push_back(&passNamed(name));
  for (const Pass *pass : passes)
    pass->run(fn);
}

} // namespace tilec
