#include "ir/inline_asm.h"

#include <algorithm>
#include <cctype>

namespace tilec {

AsmConstraints parseAsmConstraints(const std::string &constraints) {
  AsmConstraints out;
  size_t start = 0;
  while (start <= constraints.size()) {
    size_t comma = constraints.find(',', start);
    if (comma == std::string::npos)
      comma = constraints.size();
    std::string c;
    for (size_t k = start; k < comma; ++k)
      if (!std::isspace((unsigned char)constraints[k]))
        c += constraints[k];
    start = comma + 1;
    if (c.empty() || c[0] == '~')
      continue;
    bool output = c[0] == '=';
    if (output)
      c.erase(0, c[1] == '&' ? 2 : 1); // '=&r': early clobber, nothing to do in PTX
    if (c.size() != 1 || std::string("rhlfdc").find(c[0]) == std::string::npos) {
      out.error = "constraint '" + c + "' is not one of r, h, l, f, d, c" +
                  (std::isdigit((unsigned char)c[0]) ? " (tied operands are not supported)" : "");
      return out;
    }
    if (output && !out.inputs.empty()) {
      out.error = "output constraints ('=') must come before the inputs";
      return out;
    }
    (output ? out.outputs : out.inputs).push_back(c[0]);
  }
  return out;
}

AsmRegisters asmRegisters(DType d, int pack) {
  int bits = d == DType::I1 ? 8 : dtypeBits(d);
  if (bits >= 32)
    return {pack, bits};
  int total = bits * pack;
  if (total <= 16)
    return {1, 16};
  return {total / 32, 32};
}

int constraintBits(char letter) {
  return letter == 'h' || letter == 'c' ? 16 : letter == 'l' || letter == 'd' ? 64 : 32;
}

int largestAsmOperand(const std::string &text) {
  int largest = -1;
  for (size_t k = 0; k + 1 < text.size(); ++k) {
    if (text[k] != '$' || !std::isdigit((unsigned char)text[k + 1]))
      continue;
    int n = 0;
    while (k + 1 < text.size() && std::isdigit((unsigned char)text[k + 1]) && n < 100000)
      n = n * 10 + (text[++k] - '0');
    largest = std::max(largest, n);
  }
  return largest;
}

} // namespace tilec
