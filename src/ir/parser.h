// Reads the text form of Tile IR back into a Function.
#pragma once

#include <memory>
#include <string>

#include "ir/ir.h"

namespace tilec {

// Throws CompileError (located in the IR text, file name `filename`) on bad input.
std::unique_ptr<Function> parseIR(const std::string &text, const std::string &filename = "<ir>");

} // namespace tilec
