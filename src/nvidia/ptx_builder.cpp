// PTX text building.
#include "nvidia/ptx_builder.h"

#include <cstdint>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <string_view>

namespace tilec::nvidia {

namespace {
const char *const kPrefix[] = {"%p", "%h", "%r", "%rd", "%f", "%fd"};
const char *const kDeclType[] = {".pred", ".b16", ".b32", ".b64", ".f32", ".f64"};
} // namespace

RegClass regClassOf(DType d) {
  switch (d) {
  case DType::I1:
    return RegClass::Pred;
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::U8:
  case DType::U16:
  case DType::U32:
    return RegClass::B32;
  case DType::F8E4M3:
  case DType::F8E5M2:
  case DType::F16:
  case DType::BF16:
    return RegClass::B16;
  case DType::F32:
    return RegClass::F32;
  case DType::F64:
    return RegClass::F64;
  case DType::I64:
  case DType::U64:
  case DType::Ptr:
  case DType::BlockPtr:
    return RegClass::B64;
  }
  return RegClass::B32;
}

const char *regType(RegClass c) { return kDeclType[(int)c]; }

std::string PtxBuilder::reg(RegClass c) {
  return kPrefix[(int)c] + std::to_string(++counts_[(int)c]);
}

static void appendInstruction(std::string &to, const std::string &instr) {
  to += '\t';
  to += instr;
  to += ";\n";
}

void PtxBuilder::emit(const std::string &instr) { appendInstruction(body_, instr); }
void PtxBuilder::emitPrologue(const std::string &instr) { appendInstruction(prologue_, instr); }

std::string PtxBuilder::newLabel(const std::string &hint) {
  return "$L_" + hint + "_" + std::to_string(++labels_);
}

void PtxBuilder::label(const std::string &name) {
  body_ += name;
  body_ += ":\n";
}

void PtxBuilder::comment(const std::string &text) {
  body_ += "\t// ";
  body_ += text;
  body_ += '\n';
}

namespace {

// Instructions with no effect but their destination register.
bool pureOpcode(std::string_view op) {
  static const char *const kPure[] = {"add", "sub", "mul",  "mad", "mov", "cvt", "cvta",
                                      "setp", "selp", "xor", "and", "or",  "not", "shl",
                                      "shr", "bfe", "bfi",  "min", "max", "neg", "abs",
                                      "fma", "prmt", "lop3", "shf", "cnot", "popc", "clz",
                                      "div", "rem", "rcp", "sqrt", "rsqrt", "ex2", "lg2",
                                      "sin", "cos", "tanh"};
  std::string_view base = op.substr(0, op.find('.'));
  if (op.find(".cc") != std::string_view::npos) // sets the carry flag another instruction reads
    return false;
  for (const char *p : kPure)
    if (base == p)
      return true;
  return false;
}

// The virtual registers a line names (%p1, %rd7, ...), in order, as dense
// ids: each class's numbers after the classes before it (`counts` per class).
void registersOf(std::string_view line, const std::array<int, 6> &counts, std::vector<int> &out) {
  out.clear();
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    if (line[i] != '%')
      continue;
    size_t j = i + 1;
    while (j < line.size() && std::isalpha((unsigned char)line[j]))
      ++j;
    std::string_view prefix = line.substr(i, j - i);
    int number = 0;
    size_t digits = j;
    while (j < line.size() && std::isdigit((unsigned char)line[j]))
      number = number * 10 + (line[j++] - '0');
    i = j - 1;
    if (j == digits)
      continue; // %tid.x and other special registers
    int base = 0;
    for (int c = 0; c < 6; ++c) {
      if (prefix == kPrefix[c]) {
        out.push_back(base + number);
        break;
      }
      base += counts[c] + 1;
    }
  }
}

// The register a pure instruction writes when it writes exactly one (its id),
// else -1.
int deadCandidate(std::string_view line, const std::array<int, 6> &counts,
                  std::vector<int> &scratch) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line.back() != ';')
    return -1;
  if (line[i] == '@') { // a guard
    i = line.find(' ', i);
    if (i == std::string_view::npos)
      return -1;
    ++i;
  }
  size_t end = line.find(' ', i);
  if (end == std::string_view::npos || !pureOpcode(line.substr(i, end - i)))
    return -1;
  size_t comma = line.find(',', end);
  if (comma == std::string_view::npos)
    return -1;
  std::string_view dst = line.substr(end + 1, comma - end - 1);
  if (dst.empty() || dst[0] != '%' || dst.find_first_of("{|") != std::string_view::npos)
    return -1;
  registersOf(dst, counts, scratch);
  return scratch.size() == 1 ? scratch[0] : -1;
}

// Drops instructions whose result nobody reads, until none is left: the
// lowering computes some values for every register of a layout and uses
// only some (a vector's first address), and PTX size is ptxas time.
std::string withoutDeadInstructions(const std::string &text, const std::array<int, 6> &counts) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    lines.push_back(std::string_view(text).substr(at, end - at));
    at = end + 1;
  }
  int numRegs = 0;
  for (int c : counts)
    numRegs += c + 1;
  std::vector<int> reads(numRegs, 0), dst(lines.size(), -1), regs;
  // The registers each candidate reads: sources[sourceStart[k] .. sourceStart[k + 1]).
  std::vector<int> sources;
  std::vector<size_t> sourceStart(lines.size() + 1, 0);
  int scopes = 0; // inside a `{ ... }` (inline asm): kept as written
  for (size_t k = 0; k < lines.size(); ++k) {
    size_t first = lines[k].find_first_not_of(" \t");
    char c = first == std::string_view::npos ? ' ' : lines[k][first];
    scopes += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (scopes <= 0 && c != '}')
      dst[k] = deadCandidate(lines[k], counts, regs);
    registersOf(lines[k], counts, regs);
    // Every register but the destination is read, a guard's predicate too.
    size_t written = dst[k] < 0 ? regs.size() : c == '@' ? 1 : 0;
    for (size_t r = 0; r < regs.size(); ++r)
      if (r != written) {
        ++reads[regs[r]];
        if (dst[k] >= 0)
          sources.push_back(regs[r]);
      }
    sourceStart[k + 1] = sources.size();
  }
  std::vector<bool> dead(lines.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = lines.size(); k-- > 0;) {
      if (dead[k] || dst[k] < 0 || reads[dst[k]] > 0)
        continue;
      dead[k] = changed = true;
      for (size_t r = sourceStart[k]; r < sourceStart[k + 1]; ++r)
        --reads[sources[r]];
    }
  }
  std::string out;
  out.reserve(text.size());
  for (size_t k = 0; k < lines.size(); ++k)
    if (!dead[k]) {
      out += lines[k];
      out += '\n';
    }
  return out;
}

} // namespace

std::string PtxBuilder::functionBody() const {
  std::string os;
  for (int c = 0; c < 6; ++c)
    if (counts_[c])
      os += std::string("\t.reg ") + kDeclType[c] + " " + kPrefix[c] + "<" +
            std::to_string(counts_[c] + 1) + ">;\n";
  os += withoutDeadInstructions(prologue_ + body_, counts_);
  return os;
}

std::string imm(int64_t v) { return std::to_string(v); }

std::string regList(const std::vector<std::string> &regs) {
  std::string s = "{";
  for (size_t k = 0; k < regs.size(); ++k)
    s += (k ? ", " : "") + regs[k];
  return s + "}";
}

std::string immF32(double v) {
  float f = (float)v;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0f%08X", bits);
  return buf;
}

std::string immF64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  char buf[24];
  std::snprintf(buf, sizeof buf, "0d%016llX", (unsigned long long)bits);
  return buf;
}

} // namespace tilec::nvidia
