// Tile IR types: scalars, pointers, block pointers and tensors of scalars or
// pointers. A type is a small value; compare with ==.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace tilec {

// Element types. Declared in one table: enum, spelling, bit width, kind.
#define TILEC_DTYPES(X)                                                                            \
  X(I1, "i1", 1, Int)                                                                              \
  X(I8, "i8", 8, Int)                                                                              \
  X(I16, "i16", 16, Int)                                                                           \
  X(I32, "i32", 32, Int)                                                                           \
  X(I64, "i64", 64, Int)                                                                           \
  X(U8, "u8", 8, UInt)                                                                             \
  X(U16, "u16", 16, UInt)                                                                          \
  X(U32, "u32", 32, UInt)                                                                          \
  X(U64, "u64", 64, UInt)                                                                          \
  X(F8E4M3, "f8e4m3", 8, Float)                                                                    \
  X(F8E5M2, "f8e5m2", 8, Float)                                                                    \
  X(F16, "f16", 16, Float)                                                                         \
  X(BF16, "bf16", 16, Float)                                                                       \
  X(F32, "f32", 32, Float)                                                                         \
  X(F64, "f64", 64, Float)                                                                         \
  X(Ptr, "ptr", 64, Pointer)                                                                       \
  X(BlockPtr, "blockptr", 64, Pointer)

enum class DType {
#define X(name, text, bits, kind) name,
  TILEC_DTYPES(X)
#undef X
};

enum class DKind { Int, UInt, Float, Pointer };

const char *dtypeName(DType d);
int dtypeBits(DType d);
DKind dtypeKind(DType d);
std::optional<DType> dtypeFromName(const std::string &name);
// Why a Triton dtype tilec does not compile (float8e4b15, float8e4b8,
// float8e5b16) cannot be used; empty for every other name.
std::string unsupportedDTypeReason(const std::string &tritonName);
inline bool isFloat(DType d) { return dtypeKind(d) == DKind::Float; }
inline bool isInteger(DType d) { return dtypeKind(d) == DKind::Int || dtypeKind(d) == DKind::UInt; }
inline bool isUnsigned(DType d) { return dtypeKind(d) == DKind::UInt; }
inline bool isPointer(DType d) { return dtypeKind(d) == DKind::Pointer; }
// Bytes one element takes in memory (i1 is stored as a byte).
int dtypeBytes(DType d);

// A tensor's layout encoding: how a backend distributes its elements over
// threads (or shared memory). Portable Tile IR carries none; a backend's layout
// passes attach them (nvidia/assign_layouts.cpp) and its lowering reads them.
struct Encoding {
  virtual ~Encoding() = default;
  // Printed after the element type: #name<...> (kept: types print it often).
  virtual const std::string &str() const = 0;
  virtual bool equals(const Encoding &o) const = 0;
};

struct Type {
  DType dtype = DType::I32;
  // For Ptr and BlockPtr: the element type pointed to (a scalar, not a pointer).
  DType pointee = DType::I32;
  // For BlockPtr: the shape of the block it addresses.
  std::vector<int64_t> blockShape;
  // Empty for a scalar; otherwise the tensor's dimensions.
  std::vector<int64_t> shape;
  // For a tensor: its layout encoding, or null (portable IR). Not part of the
  // type's identity (==): ops whose operands sit in different layouts still
  // type-check; the backend converts.
  std::shared_ptr<const Encoding> encoding;

  static Type scalar(DType d) { return Type{d, DType::I32, {}, {}, nullptr}; }
  static Type pointer(DType pointee) { return Type{DType::Ptr, pointee, {}, {}, nullptr}; }
  static Type blockPointer(DType pointee, std::vector<int64_t> block) {
    return Type{DType::BlockPtr, pointee, std::move(block), {}, nullptr};
  }

  bool isTensor() const { return !shape.empty(); }
  bool isScalar() const { return shape.empty(); }
  int64_t numel() const;
  int rank() const { return (int)shape.size(); }
  // The same element type with another shape (empty: the scalar), no encoding.
  Type withShape(std::vector<int64_t> s) const;
  Type withEncoding(std::shared_ptr<const Encoding> e) const;
  bool sameEncoding(const Type &o) const {
    return encoding == o.encoding || (encoding && o.encoding && encoding->equals(*o.encoding));
  }
  Type element() const { return withShape({}); }
  // element() == o.element(), without building either.
  bool sameElement(const Type &o) const {
    return dtype == o.dtype &&
           (!isPointer(dtype) || (pointee == o.pointee && blockShape == o.blockShape));
  }
  // The same shape with another element dtype (not a pointer).
  Type withDType(DType d) const;

  bool operator==(const Type &o) const { return shape == o.shape && sameElement(o); }
  bool operator!=(const Type &o) const { return !(*this == o); }

  // Text form: i32, !ptr<f32>, !blockptr<f16, 64x64>, tensor<128x64xf32>,
  // tensor<128x!ptr<f32>>, tensor<64x64xf32, #mma<...>>.
  std::string str() const;
  void appendTo(std::string &out) const; // str() at the end of `out`
  // The same with the encoding's name from `aliases` (#blocked0) instead of its text.
  void appendTo(std::string &out,
                const std::unordered_map<const Encoding *, std::string> &aliases) const;
};

} // namespace tilec
