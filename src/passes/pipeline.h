// The Tile IR pass pipeline: one straight list of passes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace tilec {

// Runs the passes in order, verifying the IR at entry and exit (and after every
// pass when `verifyEach`). When `dump` is set, prints the IR after each pass
// under a header naming it, or "unchanged".
void runPipeline(Function &fn, std::ostream *dump = nullptr, bool verifyEach = false);

// Whether TILEC_DUMP_IR asks for the IR after every pass (on stderr).
bool irDumpRequested();

// Runs the named passes ("fold", "cse", "dce") in order; for golden tests.
// Throws std::invalid_argument on an unknown name.
void runPasses(Function &fn, const std::vector<std::string> &names);

} // namespace tilec
