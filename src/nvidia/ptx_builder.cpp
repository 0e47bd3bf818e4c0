// PTX text building.
#include "nvidia/ptx_builder.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iterator>
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
  // Built in place: the lowering asks for one per value of every register.
  char text[24];
  const char *prefix = kPrefix[(int)c];
  size_t n = 0;
  while (prefix[n]) // (2 or 3 letters: a loop costs less than strlen and memcpy calls)
    text[n] = prefix[n], ++n;
  char *end = std::to_chars(text + n, text + sizeof text, ++counts_[(int)c]).ptr;
  return std::string(text, end);
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
  static constexpr std::string_view kPure[] = {
      "add", "sub", "mul",  "mad",  "mov",  "cvt", "cvta", "setp", "selp", "xor",
      "and", "or",  "not",  "shl",  "shr",  "bfe", "bfi",  "min",  "max",  "neg",
      "abs", "fma", "prmt", "lop3", "shf",  "cnot", "popc", "clz", "div",  "rem",
      "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos",  "tanh"};
  // Which of them start with each letter (a bit each): most lines test one or two.
  static const std::array<uint64_t, 26> kByFirst = [] {
    std::array<uint64_t, 26> by{};
    for (size_t k = 0; k < std::size(kPure); ++k)
      by[kPure[k][0] - 'a'] |= uint64_t(1) << k;
    return by;
  }();
  size_t dot = 0;
  while (dot < op.size() && op[dot] != '.')
    ++dot;
  std::string_view base = op.substr(0, dot);
  if (base.empty() || base[0] < 'a' || base[0] > 'z')
    return false;
  // (By hand: the library's comparison is a memcmp call per candidate.)
  auto same = [&](std::string_view p) {
    if (p.size() != base.size())
      return false;
    for (size_t k = 1; k < p.size(); ++k)
      if (p[k] != base[k])
        return false;
    return true;
  };
  for (uint64_t candidates = kByFirst[base[0] - 'a']; candidates; candidates &= candidates - 1)
    if (same(kPure[__builtin_ctzll(candidates)]))
      // .cc sets the carry flag another instruction reads
      return op.find(".cc") == std::string_view::npos;
  return false;
}

bool isLower(char c) { return c >= 'a' && c <= 'z'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The class of a virtual register's prefix (the letters after '%'), or -1:
// p h r rd f fd, as kPrefix lists them.
int prefixClass(std::string_view letters) {
  if (letters.size() == 1)
    return letters[0] == 'p' ? 0 : letters[0] == 'h' ? 1 : letters[0] == 'r' ? 2
         : letters[0] == 'f' ? 4 : -1;
  if (letters.size() == 2 && letters[1] == 'd')
    return letters[0] == 'r' ? 3 : letters[0] == 'f' ? 5 : -1;
  return -1;
}

// The first '%' or '\n' in [p, end), or end: eight bytes at a time (the
// text between registers is most of a line).
inline const char *nextPercentOrNewline(const char *p, const char *end) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    for (; end - p >= 8; p += 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      uint64_t percents = word ^ (kOnes * '%'), newlines = word ^ (kOnes * '\n');
      // A byte's high bit is set where it was zero; exact up to the first one.
      uint64_t found =
          ((percents - kOnes) & ~percents & kHighs) | ((newlines - kOnes) & ~newlines & kHighs);
      if (found)
        return p + __builtin_ctzll(found) / 8;
    }
  while (p < end && *p != '%' && *p != '\n')
    ++p;
  return p;
}

struct RegRef {
  int id;            // dense: each class's numbers after the classes before it
  size_t begin, end; // where in the line
};

// Scans the line of `text` (a whole std::string's text: the NUL after it ends
// every loop) that starts at `at` once: the virtual registers
// it names (%p1, %rd7, ...; special registers such as %tid.x are not
// virtual), in order, into `out`; returns where it ends (its '\n', or the
// text's end). `bases` is each class's first id. A plain loop: lines are
// short, and a search call per line or per register costs more. Kept out of
// line: inlined, its loop loses its registers to the caller's state.
__attribute__((noinline)) size_t scanLine(std::string_view text, size_t at,
                                          const std::array<int, 6> &bases,
                                          std::vector<RegRef> &out) {
  out.clear();
  const char *line = text.data() + at, *end = text.data() + text.size(), *p = line;
  for (;;) {
    p = nextPercentOrNewline(p, end);
    if (p == end || *p == '\n')
      break;
    const char *letters = p + 1, *q = letters;
    int number = 0;
    // No test for the text's end: the NUL that ends its string stops both.
    while (isLower(*q))
      ++q;
    const char *digits = q;
    for (unsigned k; (k = (unsigned)(*q - '0')) < 10; ++q)
      number = number * 10 + (int)k;
    int c = q == digits ? -1 : prefixClass(std::string_view(letters, digits - letters));
    if (c >= 0)
      out.push_back({bases[c] + number, (size_t)(p - line), (size_t)(q - line)});
    p = q;
  }
  return p - text.data();
}

// The position of the first space at or after `i` (the line's size if none).
// (Plain loops here and below: a library search call per line costs more.)
size_t spaceFrom(std::string_view line, size_t i) {
  while (i < line.size() && line[i] != ' ')
    ++i;
  return i;
}

// The registers a pure instruction writes, as [first, last) of its
// references in `regs`: one destination, or a braced list of them (a move
// that splits a register into parts: mov.b32 {%h1, %h2}, %r1); empty when
// the line is not such an instruction. `i`: the line's first byte that is
// not blank.
std::pair<int, int> deadCandidate(std::string_view line, size_t i,
                                  const std::vector<RegRef> &regs) {
  const std::pair<int, int> none{0, 0};
  if (i >= line.size() || line.back() != ';')
    return none;
  int first = 0;
  if (line[i] == '@') { // a guard
    i = spaceFrom(line, i);
    if (i == line.size())
      return none;
    ++i;
    first = 1;
  }
  size_t end = spaceFrom(line, i);
  if (end == line.size() || end == i || !pureOpcode(line.substr(i, end - i)) ||
      (int)regs.size() <= first)
    return none;
  if (line[end + 1] == '{') { // every register up to the '}', the operands' comma after it
    size_t close = line.find('}', end + 1);
    if (close == std::string_view::npos || close + 1 >= line.size() || line[close + 1] != ',')
      return none;
    int last = first;
    while (last < (int)regs.size() && regs[last].end <= close)
      ++last;
    return last > first ? std::pair<int, int>{first, last} : none;
  }
  // The destination is exactly that register, the operands' comma after it.
  const RegRef &dst = regs[first];
  bool one = dst.begin == end + 1 && dst.end < line.size() && line[dst.end] == ',';
  return one ? std::pair<int, int>{first, first + 1} : none;
}

// Drops instructions whose result nobody reads, until none is left: the
// lowering computes some values for every register of a layout and uses
// only some (a vector's first address), and PTX size is ptxas time.
// `pieces` are read as one text, in order; what is kept is appended to `out`.
// Each is a whole std::string's text (scanLine reads the NUL after it).
void withoutDeadInstructions(std::string &out, std::initializer_list<std::string_view> pieces,
                             const std::array<int, 6> &counts) {
  struct Line {
    std::string_view text;
    int piece;
    bool newline; // a '\n' follows it in its piece (kept lines copy in runs)
  };
  std::vector<Line> lines;
  size_t size = 0;
  for (std::string_view text : pieces)
    size += text.size();
  lines.reserve(size / 24); // PTX lines average about 30 bytes
  std::array<int, 6> bases{};
  int numRegs = 0;
  for (int c = 0; c < 6; ++c) {
    bases[c] = numRegs;
    numRegs += counts[c] + 1;
  }
  std::vector<int> reads(numRegs, 0);
  // The registers each candidate writes: dsts[dstStart[k] .. dstStart[k + 1]).
  std::vector<int> dsts;
  std::vector<size_t> dstStart(1, 0);
  dstStart.reserve(size / 24);
  std::vector<RegRef> regs;
  // The registers each candidate reads: sources[sourceStart[k] .. sourceStart[k + 1]).
  std::vector<int> sources;
  std::vector<size_t> sourceStart(1, 0);
  sourceStart.reserve(size / 24);
  int scopes = 0; // inside a `{ ... }` (inline asm): kept as written
  int piece = 0;
  for (std::string_view text : pieces) {
    for (size_t at = 0; at < text.size();) {
      size_t end = scanLine(text, at, bases, regs);
      std::string_view line = text.substr(at, end - at);
      lines.push_back({line, piece, end < text.size()});
      at = end + 1;
      size_t first = 0;
      while (first < line.size() && (line[first] == ' ' || line[first] == '\t'))
        ++first;
      char c = first == line.size() ? ' ' : line[first];
      scopes += c == '{' ? 1 : c == '}' ? -1 : 0;
      // Every register but the destinations is read, a guard's predicate too.
      auto [from, to] =
          scopes <= 0 && c != '}' ? deadCandidate(line, first, regs) : std::pair<int, int>{0, 0};
      for (int r = from; r < to; ++r)
        dsts.push_back(regs[r].id);
      dstStart.push_back(dsts.size());
      for (int r = 0; r < (int)regs.size(); ++r)
        if (r < from || r >= to) {
          ++reads[regs[r].id];
          if (to > from)
            sources.push_back(regs[r].id);
        }
      sourceStart.push_back(sources.size());
    }
    ++piece;
  }
  std::vector<char> dead(lines.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = lines.size(); k-- > 0;) {
      if (dead[k] || dstStart[k] == dstStart[k + 1] ||
          std::any_of(dsts.begin() + dstStart[k], dsts.begin() + dstStart[k + 1],
                      [&](int d) { return reads[d] > 0; }))
        continue;
      dead[k] = changed = true;
      for (size_t r = sourceStart[k]; r < sourceStart[k + 1]; ++r)
        --reads[sources[r]];
    }
  }
  // Kept lines that follow each other in their piece are copied as one run.
  out.reserve(out.size() + size);
  const char *runBegin = nullptr, *runEnd = nullptr;
  int runPiece = -1;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (dead[k])
      continue;
    const Line &l = lines[k];
    if (runBegin && l.piece == runPiece && l.text.data() == runEnd) {
      runEnd += l.text.size() + 1;
    } else {
      if (runBegin)
        out.append(runBegin, runEnd);
      runBegin = l.text.data();
      runEnd = runBegin + l.text.size() + 1;
      runPiece = l.piece;
    }
    if (!l.newline) { // the piece's last line: its newline is not in the text
      out.append(runBegin, runEnd - 1);
      out += '\n';
      runBegin = runEnd = nullptr;
    }
  }
  if (runBegin)
    out.append(runBegin, runEnd);
}

} // namespace

std::string PtxBuilder::functionBody() const {
  std::string os;
  for (int c = 0; c < 6; ++c)
    if (counts_[c])
      os += std::string("\t.reg ") + kDeclType[c] + " " + kPrefix[c] + "<" +
            std::to_string(counts_[c] + 1) + ">;\n";
  withoutDeadInstructions(os, {prologue_, body_}, counts_);
  return os;
}

std::string imm(int64_t v) { return std::to_string(v); }

std::string regList(const std::vector<std::string> &regs) {
  std::string s = "{";
  s.reserve(2 + 9 * regs.size());
  for (size_t k = 0; k < regs.size(); ++k) {
    if (k)
      s += ", ";
    s += regs[k];
  }
  s += '}';
  return s;
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
