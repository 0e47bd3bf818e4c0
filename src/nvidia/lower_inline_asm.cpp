// tl.inline_asm_elementwise: the user's PTX, pasted once for each `pack`
// registers of elements a thread holds, inside its own { } scope, with $N
// replaced by registers. Operands come in the registers the constraints name
// (asmRegisters in ir/inline_asm.h says how elements are packed into them).
#include <cctype>

#include "ir/inline_asm.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

RegClass constraintClass(char c) {
  switch (c) {
  case 'h':
  case 'c':
    return RegClass::B16;
  case 'l':
    return RegClass::B64;
  case 'f':
    return RegClass::F32;
  case 'd':
    return RegClass::F64;
  default:
    return RegClass::B32;
  }
}

// `text` with each $N replaced by operands[N].
std::string substitute(Lowering &L, const Op &op, const std::string &text,
                       const std::vector<std::string> &operands) {
  std::string out;
  for (size_t k = 0; k < text.size(); ++k) {
    if (text[k] != '$' || k + 1 >= text.size() || !std::isdigit((unsigned char)text[k + 1])) {
      out += text[k];
      continue;
    }
    size_t end = k + 1;
    while (end < text.size() && std::isdigit((unsigned char)text[end]))
      ++end;
    size_t n = std::stoul(text.substr(k + 1, end - k - 1));
    if (n >= operands.size())
      L.unsupported(op, "inline asm operand $" + std::to_string(n) + " (there are " +
                            std::to_string(operands.size()) + ")");
    out += operands[n];
    k = end - 1;
  }
  return out;
}

} // namespace

// `pack` elements of type `d` in the registers the asm reads.
std::vector<std::string> Lowering::asmInputRegisters(const std::vector<std::string> &elems,
                                                     DType d, const char *letters) {
  AsmRegisters shape = asmRegisters(d, (int)elems.size());
  int bits = d == DType::I1 ? 8 : dtypeBits(d);
  std::vector<std::string> words;
  RegClass have = shape.bits == 16 ? RegClass::B16 : RegClass::B32;
  if (bits >= 32) {
    words = elems;
    have = regClassOf(d);
  } else if (shape.bits == 32) {
    words = packWords(*this, elems, d);
  } else if (bits == 16) { // one 16-bit element
    words = {regClassOf(d) == RegClass::B16 ? elems[0]
                                            : opReg("cvt.u16.u32", RegClass::B16, {elems[0]})};
  } else { // one or two bytes: the low half of a packed word
    std::vector<std::string> four(elems);
    while (four.size() < 4)
      four.push_back(four.back());
    words = {opReg("cvt.u16.u32", RegClass::B16, {packWords(*this, four, d)[0]})};
  }
  for (size_t k = 0; k < words.size(); ++k)
    if (constraintClass(letters[k]) != have)
      words[k] = opReg("mov.b" + std::to_string(shape.bits), constraintClass(letters[k]),
                       {words[k]});
  return words;
}

// The `pack` elements of type `d` in the registers the asm wrote.
std::vector<std::string> Lowering::asmOutputElements(const std::vector<std::string> &regs,
                                                     DType d, int pack, const char *letters) {
  AsmRegisters shape = asmRegisters(d, pack);
  int bits = dtypeBits(d);
  RegClass have = bits >= 32 ? regClassOf(d) : shape.bits == 16 ? RegClass::B16 : RegClass::B32;
  std::vector<std::string> words(regs);
  for (size_t k = 0; k < words.size(); ++k)
    if (constraintClass(letters[k]) != have)
      words[k] = opReg("mov.b" + std::to_string(shape.bits), have, {words[k]});
  if (bits >= 32)
    return words;
  if (shape.bits == 32)
    return unpackWords(*this, words, d);
  if (bits == 16)
    return {regClassOf(d) == RegClass::B16
                ? words[0]
                : opReg(isUnsigned(d) ? "cvt.u32.u16" : "cvt.s32.s16", RegClass::B32, {words[0]})};
  std::vector<std::string> out =
      unpackWords(*this, {opReg("cvt.u32.u16", RegClass::B32, {words[0]})}, d);
  out.resize(pack);
  return out;
}

void Lowering::lowerInlineAsm(const Op &op) {
  int pack = (int)op.intAttr("pack");
  AsmConstraints letters = parseAsmConstraints(op.strAttr("constraints"));
  const LinearLayout *layout = op.result()->type.isTensor() ? layoutFor(op.result()) : nullptr;
  std::vector<TVal> in;
  for (const Value *v : op.operands)
    in.push_back(layout ? materialize(v, layout) : val(v));
  size_t n = layout ? (size_t)layout->numRegs() : 1;
  std::vector<TVal> out(op.results.size(), TVal{layout, {}});

  for (size_t g = 0; g < n; g += pack) {
    std::vector<std::string> operands;
    std::vector<std::vector<std::string>> outRegs;
    size_t letter = 0;
    for (const auto &r : op.results) {
      AsmRegisters shape = asmRegisters(r->type.dtype, pack);
      outRegs.emplace_back();
      for (int k = 0; k < shape.count; ++k)
        outRegs.back().push_back(b.reg(constraintClass(letters.outputs[letter++])));
      operands.insert(operands.end(), outRegs.back().begin(), outRegs.back().end());
    }
    letter = 0;
    for (size_t a = 0; a < in.size(); ++a) {
      std::vector<std::string> elems;
      for (int k = 0; k < pack; ++k) // past the last register, repeat it
        elems.push_back(in[a].regs[std::min(g + k, in[a].regs.size() - 1)]);
      DType d = op.operand((int)a)->type.dtype;
      std::vector<std::string> regs = asmInputRegisters(elems, d, &letters.inputs[letter]);
      letter += regs.size();
      operands.insert(operands.end(), regs.begin(), regs.end());
    }
    b.raw("{ // inline asm");
    std::string text = substitute(*this, op, op.strAttr("asm"), operands);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos)
        end = text.size();
      b.raw(text.substr(start, end - start));
      start = end + 1;
    }
    b.raw("}");
    letter = 0;
    for (size_t k = 0; k < op.results.size(); ++k) {
      DType d = op.result((int)k)->type.dtype;
      std::vector<std::string> elems =
          asmOutputElements(outRegs[k], d, pack, &letters.outputs[letter]);
      letter += outRegs[k].size();
      for (size_t e = 0; e < elems.size() && g + e < n; ++e)
        out[k].regs.push_back(normalize(elems[e], d));
    }
  }
  for (size_t k = 0; k < op.results.size(); ++k)
    bind(op.result((int)k), out[k]);
}

} // namespace tilec::nvidia
