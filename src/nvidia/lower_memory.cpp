// Global memory: loads and stores of tensors of addresses, vectorized to 16
// bytes where axis info proves the addresses contiguous and aligned and the
// mask constant, and block pointers lowered to addresses and masks.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

// How many leading registers hold consecutive elements of dim `dim`.
int contiguousRegisters(const LinearLayout &l, int dim) {
  int k = 0;
  while (k < (int)l.regs.size()) {
    Coords want(l.rank(), 0);
    want[dim] = int64_t{1} << k;
    if (l.regs[k] != want)
      break;
    ++k;
  }
  return 1 << k;
}

int contiguousRegisters(const LinearLayout &l) { return contiguousRegisters(l, l.rank() - 1); }

int vectorDim(const LinearLayout &l) {
  for (int d = 0; !l.regs.empty() && d < l.rank(); ++d)
    if (l.regs[0][d] == 1)
      return d;
  return l.rank() - 1;
}

const char *memType(DType d) {
  switch (d) {
  case DType::I1:
  case DType::U8:
  case DType::F8E4M3:
  case DType::F8E5M2:
    return ".u8";
  case DType::I8:
    return ".s8";
  case DType::I16:
    return ".s16";
  case DType::U16:
    return ".u16";
  case DType::F16:
  case DType::BF16:
    return ".b16";
  case DType::F32:
    return ".f32";
  case DType::F64:
    return ".f64";
  case DType::I64:
  case DType::U64:
  case DType::Ptr:
    return ".b64";
  default:
    return ".b32";
  }
}

namespace {

int floorPow2(int64_t v) {
  int p = 1;
  while (p * 2 <= v)
    p *= 2;
  return p;
}


std::string vecSuffix(int n) { return n == 1 ? "" : ".v" + std::to_string(n); }

std::string braced(const std::vector<std::string> &regs) {
  return regs.size() == 1 ? regs[0] : regList(regs);
}

} // namespace

int vectorWidth(const AxisInfoMap &axisInfo, const Value *ptrValue, const LinearLayout *layout,
                DType d, const Value *mask) {
  if (!layout)
    return 1;
  int bytes = dtypeBytes(d);
  int last = vectorDim(*layout);
  AxisInfo info = axisInfoOf(axisInfo, ptrValue);
  int64_t w = std::min<int64_t>(contiguousRegisters(*layout, last), 16 / bytes);
  w = std::min(w, info.dims[last].contiguity);
  w = std::min(w, std::max<int64_t>(1, info.dims[last].divisibility / bytes));
  if (mask)
    w = std::min(w, axisInfoOf(axisInfo, mask).dims[last].constancy);
  int width = floorPow2(std::max<int64_t>(1, w));
  if (bytes < 4 && width * bytes < 4)
    return 1;
  return width;
}

// By register of `l`: 1 where an access of `vec` elements reads its address
// as computed (a vector's first), 2 where it is register 0's plus a constant
// (addressesFromFirst), 0 where nothing reads it.
static std::vector<char> addressesRead(const AxisInfoMap &info, const Value *ptrValue,
                                       const LinearLayout &l, int vec) {
  std::vector<char> read(l.numRegs(), 0);
  int dim = vectorDim(l);
  int64_t threadBits = l.threadBits(dim);
  int64_t run = floorPow2(std::max<int64_t>(1, axisInfoOf(info, ptrValue).dims[dim].contiguity));
  for (int r = 0; r < l.numRegs(); r += vec) {
    Coords c = l.regCoords(r);
    bool along = c[dim] > 0 && c[dim] < run && !(c[dim] & threadBits);
    for (int k = 0; k < l.rank(); ++k)
      along &= k == dim || c[k] == 0;
    read[r] = along ? 2 : 1;
  }
  return read;
}

// The addresses the vectors of `ptr` start at (registers 0, vec, 2 vec, ...)
// that lie in register 0's contiguous run along the vector dim, rewritten as
// register 0's address plus a constant: one live address instead of one per
// vector. A register qualifies when it differs from register 0 only along
// that dim, by bits no lane or warp sets there, within the run axis info proves.
static void addressesFromFirst(Lowering &L, const Value *ptrValue, TVal &ptr, DType d, int vec) {
  if (!ptr.isTensor() || ptr.uniform || ptr.regs.size() < 2)
    return;
  const LinearLayout &l = *ptr.layout;
  std::vector<char> read = addressesRead(L.axisInfo, ptrValue, l, vec);
  for (int r = vec; r < l.numRegs(); r += vec)
    if (read[r] == 2)
      ptr.regs[r] = L.opReg("add.s64", RegClass::B64,
                            {ptr.regs[0], imm(l.regCoords(r)[vectorDim(l)] * dtypeBytes(d))});
}

// The number of a 16-bit register (%h<n>), or -1 for any other text.
static int halfNumber(std::string_view r) {
  if (r.size() < 3 || r[0] != '%' || r[1] != 'h')
    return -1;
  int n = 0;
  for (char c : r.substr(2)) {
    if (c < '0' || c > '9')
      return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::pair<std::string, std::string> splitWord(Lowering &L, const std::string &w) {
  std::string lo = L.b.reg(RegClass::B16), hi = L.b.reg(RegClass::B16);
  char text[64]; // {lo, hi}: registers are short
  size_t n = 0;
  for (std::string_view part : {std::string_view("{"), std::string_view(lo), std::string_view(", "),
                                std::string_view(hi), std::string_view("}")})
    n += part.copy(text + n, sizeof text - n);
  L.b.emitWith("mov.b32", std::string_view(text, n), std::array<std::string_view, 1>{w});
  size_t at = L.b.lastNumber(RegClass::B16) - 1; // lo's
  if (L.unpackedFrom.size() <= at)
    L.unpackedFrom.resize(std::max(2 * L.unpackedFrom.size(), at + 1));
  L.unpackedFrom[at] = w;
  return {lo, hi};
}

const std::string *splitFrom(const Lowering &L, const std::string &lo, const std::string &hi) {
  int at = halfNumber(lo);
  if (at < 0 || at >= (int)L.unpackedFrom.size() || L.unpackedFrom[at].empty() ||
      halfNumber(hi) != at + 1)
    return nullptr;
  return &L.unpackedFrom[at];
}

std::string joinHalves(Lowering &L, const std::string &lo, const std::string &hi) {
  if (const std::string *word = splitFrom(L, lo, hi))
    return *word;
  return L.opReg("mov.b32", RegClass::B32, {"{" + lo + ", " + hi + "}"});
}

std::vector<std::string> unpackWords(Lowering &L, const std::vector<std::string> &words,
                                     DType d) {
  std::vector<std::string> out;
  int bytes = dtypeBytes(d);
  for (const std::string &w : words) {
    if (bytes == 2) {
      auto halves = splitWord(L, w);
      for (std::string *h : {&halves.first, &halves.second})
        out.push_back(
            regClassOf(d) == RegClass::B16
                ? std::move(*h)
                : L.opReg(isUnsigned(d) ? "cvt.u32.u16" : "cvt.s32.s16", RegClass::B32, {*h}));
      continue;
    }
    for (int k = 0; k < 4; ++k) {
      bool sign = d == DType::I8;
      std::string e = L.opReg(sign ? "bfe.s32" : "bfe.u32", RegClass::B32, {w, imm(8 * k), "8"});
      if (d == DType::I1)
        e = L.opReg("setp.ne.u32", RegClass::Pred, {e, "0"});
      else if (regClassOf(d) == RegClass::B16)
        e = L.opReg("cvt.u16.u32", RegClass::B16, {e});
      out.push_back(e);
    }
  }
  return out;
}

// Packs elements narrower than 4 bytes into 32-bit words.
std::vector<std::string> packWords(Lowering &L, const std::vector<std::string> &elems, DType d) {
  std::vector<std::string> words;
  int bytes = dtypeBytes(d), per = 4 / bytes;
  for (size_t k = 0; k < elems.size(); k += per) {
    if (bytes == 2) {
      std::string lo = elems[k], hi = elems[k + 1];
      if (regClassOf(d) == RegClass::B32) {
        lo = L.opReg("cvt.u16.u32", RegClass::B16, {lo});
        hi = L.opReg("cvt.u16.u32", RegClass::B16, {hi});
      }
      words.push_back(joinHalves(L, lo, hi));
      continue;
    }
    std::string w;
    for (int j = 0; j < 4; ++j) {
      std::string e = elems[k + j];
      if (d == DType::I1)
        e = L.opReg("selp.u32", RegClass::B32, {"1", "0", e});
      else if (regClassOf(d) == RegClass::B16)
        e = L.opReg("cvt.u32.u16", RegClass::B32, {e});
      e = L.opReg("and.b32", RegClass::B32, {e, "255"});
      if (j)
        e = L.opReg("shl.b32", RegClass::B32, {e, imm(8 * j)});
      w = j ? L.opReg("or.b32", RegClass::B32, {w, e}) : e;
    }
    words.push_back(w);
  }
  return words;
}

std::vector<std::string> Lowering::loadElements(const TVal &ptr, DType d, const TVal *mask,
                                                const TVal *other, int vec) {
  int n = (int)ptr.regs.size();
  int bytes = dtypeBytes(d);
  bool packed = bytes < 4 && vec * bytes >= 4;
  std::vector<std::string> out;
  for (int g = 0; g < n; g += vec) {
    std::string pred = mask ? "@" + mask->regs[g] + " " : "";
    std::string addr = "[" + ptr.regs[g] + "]";
    if (packed) {
      int words = vec * bytes / 4;
      std::vector<std::string> w;
      for (int k = 0; k < words; ++k) {
        w.push_back(b.reg(RegClass::B32));
        if (mask)
          b.emit("mov.b32 " + w.back() + ", 0");
      }
      b.emit(pred + "ld.global" + vecSuffix(words) + ".b32 " + braced(w) + ", " + addr);
      std::vector<std::string> elems = unpackWords(*this, w, d);
      for (int j = 0; j < vec; ++j) { // the mask is the same over a vector
        std::string e = elems[j];
        if (mask && other)
          e = select(d, mask->regs[g], e, other->regs[g + j]);
        out.push_back(e);
      }
      continue;
    }
    std::vector<std::string> dst;
    for (int j = 0; j < vec; ++j) {
      RegClass rc = d == DType::I1 ? RegClass::B32 : regClassOf(d);
      std::string r = b.reg(rc);
      if (mask) {
        std::string init = "0";
        if (other) {
          init = other->regs[g + j];
          if (d == DType::I1)
            init = castScalar(init, DType::I1, DType::U32, false);
        } else if (rc == RegClass::F32) {
          init = immF32(0);
        } else if (rc == RegClass::F64) {
          init = immF64(0);
        }
        b.emit(std::string("mov") + regType(rc) + " " + r + ", " + init);
      }
      dst.push_back(r);
    }
    const char *mt = vec > 1 && bytes == 8 ? ".b64" : memType(d);
    b.emit(pred + "ld.global" + vecSuffix(vec) + mt + " " + braced(dst) + ", " + addr);
    for (std::string &r : dst)
      out.push_back(d == DType::I1 ? opReg("setp.ne.u32", RegClass::Pred, {r, "0"}) : r);
  }
  return out;
}

void Lowering::storeElements(const TVal &ptr, DType d, const TVal &value, const TVal *mask,
                             int vec) {
  int n = (int)ptr.regs.size();
  int bytes = dtypeBytes(d);
  bool packed = bytes < 4 && vec * bytes >= 4;
  std::string owner = ptr.isTensor() ? ownerPredicate(ptr.layout) : "";
  if (!ptr.isTensor()) // a scalar store: one thread writes it
    owner = opReg("setp.eq.u32", RegClass::Pred, {tid, "0"});
  for (int g = 0; g < n; g += vec) {
    std::string p = owner;
    if (mask)
      p = p.empty() ? mask->regs[g] : opReg("and.pred", RegClass::Pred, {p, mask->regs[g]});
    std::string pred = p.empty() ? "" : "@" + p + " ";
    std::vector<std::string> elems(value.regs.begin() + g, value.regs.begin() + g + vec);
    std::string addr = "[" + ptr.regs[g] + "]";
    if (packed) {
      std::vector<std::string> w = packWords(*this, elems, d);
      b.emit(pred + "st.global" + vecSuffix((int)w.size()) + ".b32 " + addr + ", " + braced(w));
      continue;
    }
    if (d == DType::I1)
      for (std::string &e : elems)
        e = opReg("selp.u32", RegClass::B32, {"1", "0", e});
    const char *mt = vec > 1 && bytes == 8 ? ".b64" : memType(d);
    b.emit(pred + "st.global" + vecSuffix(vec) + mt + " " + addr + ", " + braced(elems));
  }
}

// The addresses and mask of an access in layout `l` of `vec` elements of
// `d` each, from values lowerBlock has not computed (deferUntilRead):
// materialized only in the registers the access reads.
void Lowering::accessOperands(const Value *ptrValue, const Value *maskValue,
                              const LinearLayout *l, DType d, TVal &ptr, TVal &mask) {
  int vec = vectorWidth(axisInfo, ptrValue, l, d, maskValue);
  std::vector<char> addresses = addressesRead(axisInfo, ptrValue, *l, vec), firsts;
  for (char &a : addresses) {
    firsts.push_back(a != 0);
    a = a == 1;
  }
  addresses[0] = 1; // the others' base
  ptr = materialize(ptrValue, l, &addresses);
  if (maskValue)
    mask = materialize(maskValue, l, &firsts);
}

void Lowering::lowerLoad(const Op &op) {
  // A layout the coalescing pass chose; else the addresses'.
  const LayoutEncoding *e = layoutEncoding(op.result()->type);
  DType d = op.result()->type.dtype;
  const Value *maskValue = op.operands.size() > 1 ? op.operand(1) : nullptr;
  TVal ptr, mask, other;
  if (e) {
    accessOperands(op.operand(0), maskValue, intern(e->layout), d, ptr, mask);
  } else {
    ptr = val(op.operand(0));
    if (maskValue)
      mask = ptr.isTensor() ? materialize(maskValue, ptr.layout) : val(maskValue);
  }
  // A zero `other` is what the masked-off registers start as: no select.
  bool hasOther = op.operands.size() > 2 && (!isZeroConstant(op.operand(2)) ||
                                             std::signbit(op.operand(2)->def->floatAttr("value")));
  if (hasOther)
    other = ptr.isTensor() ? materialize(op.operand(2), ptr.layout) : val(op.operand(2));
  int vec = vectorWidth(axisInfo, op.operand(0), ptr.layout, d, maskValue);
  addressesFromFirst(*this, op.operand(0), ptr, d, vec);
  std::vector<std::string> regs =
      loadElements(ptr, d, maskValue ? &mask : nullptr, hasOther ? &other : nullptr, vec);
  bind(op.result(), TVal{ptr.layout, std::move(regs)});
}

void Lowering::lowerStore(const Op &op) {
  DType d = op.operand(1)->type.dtype;
  const Value *maskValue = op.operands.size() > 2 ? op.operand(2) : nullptr;
  const TVal &v = val(op.operand(1));
  TVal ptr, mask;
  if (readLater.count(op.operand(0)->def)) {
    // In the value's layout (a splat's: the addresses' own).
    accessOperands(op.operand(0), maskValue,
                   v.isTensor() && !v.uniform ? v.layout : layoutFor(op.operand(0)), d, ptr, mask);
  } else {
    ptr = val(op.operand(0));
    // Stores happen in the value's layout when the addresses can be recomputed
    // there (a dot's result goes out without a trip through shared memory).
    if (ptr.isTensor() && v.isTensor() && !v.uniform && v.layout != ptr.layout &&
        rematerializable(op.operand(0)) && (!maskValue || rematerializable(maskValue)))
      ptr = materialize(op.operand(0), v.layout);
    if (maskValue)
      mask = ptr.isTensor() ? materialize(maskValue, ptr.layout) : val(maskValue);
  }
  TVal value = ptr.isTensor() ? materialize(op.operand(1), ptr.layout) : v;
  int vec = vectorWidth(axisInfo, op.operand(0), ptr.layout, d, maskValue);
  addressesFromFirst(*this, op.operand(0), ptr, d, vec);
  storeElements(ptr, d, value, maskValue ? &mask : nullptr, vec);
}

// A block pointer is held as scalars: base, then shape, strides and offsets
// of each dim as s64.
void Lowering::lowerBlockPtr(const Op &op) {
  TVal out;
  if (op.kind == OpKind::MakeBlockPtr) {
    out.regs.push_back(val(op.operand(0)).regs[0]);
    for (size_t k = 1; k < op.operands.size(); ++k)
      out.regs.push_back(
          castScalar(val(op.operand(k)).regs[0], op.operand(k)->type.dtype, DType::I64, false));
    bind(op.result(), out);
    return;
  }
  out = val(op.operand(0));
  size_t rank = op.operands.size() - 1;
  for (size_t k = 0; k < rank; ++k) {
    std::string delta = castScalar(val(op.operand(k + 1)).regs[0], op.operand(k + 1)->type.dtype,
                                   DType::I64, false);
    std::string &off = out.regs[1 + 2 * rank + k];
    off = opReg("add.s64", RegClass::B64, {off, delta});
  }
  bind(op.result(), out);
}

// Elements per access of a block pointer's load or store in layout `l`: the
// registers contiguous along a dim of unit stride, as far as the base, the
// other dims' strides and the offset along it keep each vector aligned, and
// (when that dim is bounds-checked) its shape keeps each vector all in or out.
int blockVectorWidth(const AxisInfoMap &axisInfo, const Op &op, const LinearLayout *l, DType d) {
  std::optional<BlockPtrInfo> info = blockPtrInfo(axisInfo, op.operand(0));
  int dim = vectorDim(*l);
  if (!info || !info->unitStride[dim])
    return 1;
  int64_t bytes = dtypeBytes(d);
  int64_t align = info->baseDivisibility;
  for (size_t e = 0; e < info->unitStride.size(); ++e)
    if ((int)e != dim)
      align = std::gcd(align, std::min<int64_t>(info->strideDivisibility[e], 1 << 20) * bytes);
  align = std::gcd(align, std::min<int64_t>(info->offsetDivisibility[dim], 1 << 20) * bytes);
  int64_t w = std::min<int64_t>(contiguousRegisters(*l, dim), 16 / bytes);
  w = std::min(w, std::max<int64_t>(1, align / bytes));
  for (int64_t c : op.intsAttr("boundary_check"))
    if (c == dim)
      w = std::min(w, info->shapeDivisibility[dim]);
  int width = floorPow2(std::max<int64_t>(1, w));
  return bytes < 4 && width * bytes < 4 ? 1 : width;
}

// The others of a vector repeat its first address: accesses read only the first.
void blockAddresses(Lowering &L, const Op &op, const TVal &bp, const LinearLayout *l, int vec,
                    TVal &ptr, TVal &mask, bool &masked) {
  const Type &pt = op.operand(0)->type;
  size_t rank = pt.blockShape.size();
  std::vector<bool> check(rank, false);
  for (int64_t c : op.intsAttr("boundary_check"))
    check[c] = true;
  masked = std::find(check.begin(), check.end(), true) != check.end();
  ptr = TVal{l, {}};
  mask = TVal{l, {}};
  int64_t bytes = dtypeBytes(pt.pointee);
  // Per dim, the coordinates this thread's registers take: the thread's own
  // (offset + thread part, once) plus each register's constant where their
  // bits are disjoint (blocked layouts); each distinct coordinate's term
  // (times the stride) and bounds check is computed once.
  std::vector<std::string> threadCoord(rank);
  std::vector<std::map<int64_t, std::pair<std::string, std::string>>> terms(rank); // c -> term, inside
  auto termOf = [&](size_t d, int r) -> const std::pair<std::string, std::string> & {
    int64_t c = l->regCoords(r)[d];
    bool disjoint = !(c & l->threadBits((int)d));
    int64_t key = disjoint ? c : -1 - r; // overlapping bits: per register
    auto it = terms[d].find(key);
    if (it != terms[d].end())
      return it->second;
    std::string coord;
    if (disjoint) {
      if (threadCoord[d].empty()) {
        std::string t = L.opReg("cvt.u64.u32", RegClass::B64, {L.elementCoord(l, (int)d, 0)});
        threadCoord[d] = L.opReg("add.s64", RegClass::B64, {bp.regs[1 + 2 * rank + d], t});
      }
      coord = c ? L.opReg("add.s64", RegClass::B64, {threadCoord[d], imm(c)}) : threadCoord[d];
    } else {
      std::string t = L.opReg("cvt.u64.u32", RegClass::B64, {L.elementCoord(l, (int)d, r)});
      coord = L.opReg("add.s64", RegClass::B64, {bp.regs[1 + 2 * rank + d], t});
    }
    std::string term = L.opReg("mul.lo.s64", RegClass::B64, {coord, bp.regs[1 + rank + d]});
    // 0 <= coord < shape, as one unsigned compare
    std::string in = check[d] ? L.opReg("setp.lt.u64", RegClass::Pred, {coord, bp.regs[1 + d]})
                              : "";
    return terms[d][key] = {term, in};
  };
  for (int r = 0; r < l->numRegs(); ++r) {
    if (r % vec) {
      ptr.regs.push_back(ptr.regs.back());
      if (masked)
        mask.regs.push_back(mask.regs.back());
      continue;
    }
    std::string offset, inside;
    for (size_t d = 0; d < rank; ++d) {
      const auto &[term, in] = termOf(d, r);
      offset = d ? L.opReg("add.s64", RegClass::B64, {offset, term}) : term;
      if (!in.empty())
        inside = inside.empty() ? in : L.opReg("and.pred", RegClass::Pred, {inside, in});
    }
    ptr.regs.push_back(L.opReg("mad.lo.s64", RegClass::B64, {offset, imm(bytes), bp.regs[0]}));
    if (masked)
      mask.regs.push_back(inside.empty() ? L.constantReg(DType::I1, 1, 1) : inside);
  }
}

void Lowering::lowerLoadBlock(const Op &op) {
  if (op.intAttr("resident_copy"))
    return copyResidentTile(op);
  const LinearLayout *l = layoutFor(op.result()); // the coalescing pass's
  DType d = op.result()->type.dtype;
  int vec = blockVectorWidth(axisInfo, op, l, d);
  TVal ptr, mask;
  bool masked = false;
  blockAddresses(*this, op, val(op.operand(0)), l, vec, ptr, mask, masked);
  TVal other;
  bool nanPad = op.strAttr("padding") == "nan" && isFloat(d);
  if (masked && nanPad)
    other = convert(TVal{nullptr, {constantReg(d, NAN, 0)}}, d, ptr.layout);
  std::vector<std::string> regs =
      loadElements(ptr, d, masked ? &mask : nullptr, nanPad ? &other : nullptr, vec);
  bind(op.result(), TVal{ptr.layout, regs});
}

void Lowering::lowerStoreBlock(const Op &op) {
  if (op.intAttr("tma"))
    return lowerTmaStore(op);
  DType d = op.operand(1)->type.dtype;
  const TVal &v = val(op.operand(1));
  // In the value's layout: the coalescing pass moved it into an access layout.
  const LinearLayout *l = layoutFor(op.operand(1));
  int vec = blockVectorWidth(axisInfo, op, l, d);
  TVal ptr, mask;
  bool masked = false;
  blockAddresses(*this, op, val(op.operand(0)), l, vec, ptr, mask, masked);
  TVal value = convert(v, d, l);
  storeElements(ptr, d, value, masked ? &mask : nullptr, vec);
}

} // namespace tilec::nvidia
