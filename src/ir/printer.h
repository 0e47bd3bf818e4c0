// The text form of Tile IR (see docs in printer.cpp). print(parse(t)) == t.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tilec {

std::string printFunction(Function &fn);
// One op on one line (its regions left out), for messages.
std::string printOp(const Op &op);

} // namespace tilec
