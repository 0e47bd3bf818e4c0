// Tile IR types: names, sizes and the text form.
#include "ir/types.h"

#include <sstream>

namespace tilec {

const char *dtypeName(DType d) {
  switch (d) {
#define X(name, text, bits, kind)                                                                  \
  case DType::name:                                                                                \
    return text;
    TILEC_DTYPES(X)
#undef X
  }
  return "?";
}

int dtypeBits(DType d) {
  switch (d) {
#define X(name, text, bits, kind)                                                                  \
  case DType::name:                                                                                \
    return bits;
    TILEC_DTYPES(X)
#undef X
  }
  return 0;
}

DKind dtypeKind(DType d) {
  switch (d) {
#define X(name, text, bits, kind)                                                                  \
  case DType::name:                                                                                \
    return DKind::kind;
    TILEC_DTYPES(X)
#undef X
  }
  return DKind::Int;
}

std::string unsupportedDTypeReason(const std::string &tritonName) {
  if (tritonName == "float8e4b15")
    return "tl.float8e4b15 is not supported by tilec (a format of GPUs before Hopper, which "
           "Triton deprecates for Hopper's dots); use tl.float8e4nv or tl.float8e5";
  if (tritonName == "float8e4b8" || tritonName == "float8e5b16")
    return "tl." + tritonName + " is an AMD fp8 format, which neither NVIDIA GPUs nor tilec's CPU "
           "backend have; use tl.float8e4nv or tl.float8e5";
  return "";
}

std::optional<DType> dtypeFromName(const std::string &name) {
#define X(n, text, bits, kind)                                                                     \
  if (name == text)                                                                                \
    return DType::n;
  TILEC_DTYPES(X)
#undef X
  return std::nullopt;
}

int dtypeBytes(DType d) { return d == DType::I1 ? 1 : dtypeBits(d) / 8; }

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

Type Type::withShape(std::vector<int64_t> s) const {
  Type t = *this;
  t.shape = std::move(s);
  t.encoding = nullptr;
  return t;
}

Type Type::withEncoding(std::shared_ptr<const Encoding> e) const {
  Type t = *this;
  t.encoding = std::move(e);
  return t;
}

Type Type::withDType(DType d) const {
  Type t = *this;
  t.dtype = d;
  t.blockShape.clear();
  t.pointee = DType::I32;
  return t;
}

// Built by appending (the printer and CSE keys call these for every value).
static void appendElement(std::string &out, const Type &t) {
  if (t.dtype == DType::Ptr) {
    out += "!ptr<";
    out += dtypeName(t.pointee);
    out += ">";
  } else if (t.dtype == DType::BlockPtr) {
    out += "!blockptr<";
    out += dtypeName(t.pointee);
    out += ", ";
    for (size_t i = 0; i < t.blockShape.size(); ++i) {
      if (i)
        out += "x";
      out += std::to_string(t.blockShape[i]);
    }
    out += ">";
  } else {
    out += dtypeName(t.dtype);
  }
}

std::string Type::str() const {
  std::string out;
  appendTo(out);
  return out;
}

void Type::appendTo(std::string &out) const {
  static const std::unordered_map<const Encoding *, std::string> none;
  appendTo(out, none);
}

void Type::appendTo(std::string &out,
                    const std::unordered_map<const Encoding *, std::string> &aliases) const {
  if (shape.empty()) {
    appendElement(out, *this);
    return;
  }
  out += "tensor<";
  for (int64_t s : shape) {
    out += std::to_string(s);
    out += "x";
  }
  appendElement(out, *this);
  if (encoding) {
    out += ", ";
    auto alias = aliases.find(encoding.get());
    out += alias != aliases.end() ? alias->second : encoding->str();
  }
  out += ">";
}

} // namespace tilec
