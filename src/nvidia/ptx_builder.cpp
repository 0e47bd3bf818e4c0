// PTX text building.
#include "nvidia/ptx_builder.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

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

void PtxBuilder::emit(const std::string &instr) { body_ << "\t" << instr << ";\n"; }
void PtxBuilder::emitPrologue(const std::string &instr) { prologue_ << "\t" << instr << ";\n"; }

std::string PtxBuilder::newLabel(const std::string &hint) {
  return "$L_" + hint + "_" + std::to_string(++labels_);
}

void PtxBuilder::label(const std::string &name) { body_ << name << ":\n"; }
void PtxBuilder::comment(const std::string &text) { body_ << "\t// " << text << "\n"; }

std::string PtxBuilder::functionBody() const {
  std::ostringstream os;
  for (int c = 0; c < 6; ++c)
    if (counts_[c])
      os << "\t.reg " << kDeclType[c] << " " << kPrefix[c] << "<" << counts_[c] + 1 << ">;\n";
  os << prologue_.str() << body_.str();
  return os.str();
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
