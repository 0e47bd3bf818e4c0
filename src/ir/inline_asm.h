// The operands of an inline_asm op (tl.inline_asm_elementwise): how its
// constraint string names them, and how many registers `pack` elements of
// each tensor take. Shared by sema (which checks them against the asm) and the
// NVIDIA lowering (which allocates them).
#pragma once

#include <string>
#include <vector>

#include "ir/types.h"

namespace tilec {

struct AsmConstraints {
  std::vector<char> outputs; // register letters: r h l f d c
  std::vector<char> inputs;
  std::string error;         // why the string is not usable, if it is not
};

// Splits "=r,=r,r,l,~{memory}": outputs first (with '='), then inputs;
// clobbers ('~') are dropped, as PTX has nothing for them to do.
AsmConstraints parseAsmConstraints(const std::string &constraints);

// Registers for `pack` elements of `d`: one per element for 32 bits and wider;
// narrower elements packed into 32-bit registers, or into one 16-bit register
// when all of them fit in 16 bits. `bits` is each register's width.
struct AsmRegisters {
  int count;
  int bits;
};
AsmRegisters asmRegisters(DType d, int pack);
// The width of a register a constraint letter names: r f 32, h c 16, l d 64.
int constraintBits(char letter);
// The largest $N the asm text names, or -1.
int largestAsmOperand(const std::string &text);

} // namespace tilec
