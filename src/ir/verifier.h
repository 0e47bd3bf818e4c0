// The type rules of Tile IR, stated in one place.
#pragma once

#include "ir/ir.h"

namespace tilec {

// Throws InternalError naming the first op that breaks a rule.
void verify(const Function &fn);

} // namespace tilec
