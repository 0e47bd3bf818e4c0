// The one place PTX text is built: virtual registers by class, instructions,
// labels, and the kernel's prologue (thread indices and other values every
// path needs, computed once at entry).
#pragma once

#include <algorithm>
#include <array>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"

namespace tilec::nvidia {

enum class RegClass { Pred, B16, B32, B64, F32, F64 };

// Where a Tile IR element type lives in PTX: i1 in predicates; integers up
// to 32 bits in b32 registers, kept sign- or zero-extended; f16, bf16 and
// fp8 as raw bits in b16 registers; pointers in b64.
RegClass regClassOf(DType d);
// The PTX type suffix for moves and memory of that class (.pred .b16 ...).
const char *regType(RegClass c);

class PtxBuilder {
public:
  // A fresh virtual register of class `c`.
  std::string reg(RegClass c);
  // The number of the last register of class `c` reg made (%h<n>: n).
  int lastNumber(RegClass c) const { return counts_[(int)c]; }
  // Appends one instruction (the ';' is added) to the body, or to the prologue.
  void emit(const std::string &instr);
  void emitPrologue(const std::string &instr);
  // Appends `instr dst, src, ...;` to the body without building the line first
  // (one resize and copies: an append per piece costs a library call each).
  template <class Sources>
  void emitWith(std::string_view instr, std::string_view dst, const Sources &srcs) {
    size_t n = instr.size() + dst.size() + 4; // \t, ' ', ";\n"
    for (const auto &s : srcs)
      n += std::string_view(s).size() + 2;
    size_t at = body_.size();
    body_.resize(at + n);
    char *p = body_.data() + at;
    auto put = [&p](std::string_view piece) { p = std::copy(piece.begin(), piece.end(), p); };
    *p++ = '\t';
    put(instr);
    *p++ = ' ';
    put(dst);
    for (const auto &s : srcs) {
      *p++ = ',';
      *p++ = ' ';
      put(s);
    }
    *p++ = ';';
    *p = '\n';
  }
  std::string newLabel(const std::string &hint);
  void label(const std::string &name);
  void comment(const std::string &text);
  // A line written as it is (a `{ ... }` scope, which takes no ';').
  void raw(const std::string &text) { body_ += "\t" + text + "\n"; }
  // Module-scope declarations (format strings for printf).
  void global(const std::string &decl) { globals_ += decl + "\n"; }

  // The register declarations, then the prologue, then the body.
  std::string functionBody() const;
  const std::string globals() const { return globals_; }

private:
  std::array<int, 6> counts_{};
  std::string prologue_, body_, globals_; // appended to (a stream's inserts cost more)
  int labels_ = 0;
};

// Text of a vector operand: {a, b, c}.
std::string regList(const std::vector<std::string> &regs);
// Text of a PTX immediate of an integer.
std::string imm(int64_t v);
// Text of a PTX f32/f64 immediate (exact hex form).
std::string immF32(double v);
std::string immF64(double v);

} // namespace tilec::nvidia
