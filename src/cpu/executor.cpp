// Interprets Tile IR one program at a time. Each value is a Tile: a flat
// row-major array of int64 (integers, pointers) or double (floats), brought
// back to its IR type after every op (numerics.h). Memory accesses are
// checked against the launch's buffers, so a bad offset is an error, not a
// crash.
#include "cpu/executor.h"

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "cpu/numerics.h"
#include "ir/pointer_origins.h"

namespace tilec::cpu {

namespace {

struct Tile {
  std::vector<int64_t> i;
  std::vector<double> f;
};

bool holdsFloat(const Type &t) { return isFloat(t.dtype); }

// Element k of a tile as the bits of a `d` in memory, and the reverse.
uint64_t elementBits(const Tile &t, size_t k, DType d) {
  int bytes = dtypeBytes(d);
  uint64_t bits = isFloat(d) ? floatToBits(t.f[k], d) : (uint64_t)t.i[k];
  return bytes == 8 ? bits : bits & ((1ull << (8 * bytes)) - 1);
}
void setElementBits(Tile &t, size_t k, uint64_t bits, DType d) {
  if (isFloat(d))
    t.f[k] = bitsToFloat(bits, d);
  else
    t.i[k] = d == DType::I1 ? bits != 0 : wrapInt((int64_t)bits, d);
}
// A tile of n zeros of type `d`.
Tile zeroTile(DType d, size_t n) {
  Tile t;
  if (isFloat(d))
    t.f.assign(n, 0.0);
  else
    t.i.assign(n, 0);
  return t;
}

// A tensor seen as lines along `axis`: element (o, j, in) is at (o * n + j) * inner + in.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};
Lines linesAlong(const Type &t, int axis) {
  Lines l;
  l.n = t.shape[axis];
  for (int d = 0; d < axis; ++d)
    l.outer *= t.shape[d];
  for (int d = axis + 1; d < t.rank(); ++d)
    l.inner *= t.shape[d];
  return l;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int k = (int)shape.size() - 2; k >= 0; --k)
    s[k] = s[k + 1] * shape[k + 1];
  return s;
}

class Program {
public:
  Program(const Function &fn, const Launch &launch,
          const std::unordered_set<const Op *> &unchecked)
      : fn_(fn), launch_(launch), unchecked_(unchecked) {
    env_.resize(fn.numValues);
  }

  void run(int64_t x, int64_t y, int64_t z) {
    pid_ = {x, y, z};
    const Block &body = *fn_.body;
    for (size_t k = 0; k < body.args.size(); ++k) {
      const Value &arg = *body.args[k];
      Tile &t = env_[arg.id];
      if (holdsFloat(arg.type))
        t.f.assign(1, roundFloat(launch_.args[k].f, arg.type.dtype));
      else
        t.i.assign(1, wrapInt(launch_.args[k].i, arg.type.dtype));
    }
    runBlock(body);
  }

private:
  const Function &fn_;
  const Launch &launch_;
  const std::unordered_set<const Op *> &unchecked_; // accesses through pointer tables
  const Op *lastChecked_ = nullptr;                  // the op checkAccess saw last
  bool lastUnchecked_ = false;                       // and whether it is one of those
  std::vector<Tile> env_;
  std::array<int64_t, 3> pid_{};
  size_t lastRange_ = 0;
  // While a combine region runs on whole tiles (runCombine): how many elements
  // its scalar-typed ops compute; 0 otherwise.
  size_t regionCount_ = 0;
  size_t countOf(const Type &t) const { return regionCount_ ? regionCount_ : t.numel(); }

  Tile &val(const Value *v) { return env_[v->id]; }

  [[noreturn]] void fail(const Op &op, const std::string &message) {
    throw KernelError(CompileError(op.loc, message).formatted());
  }

  // Runs the ops of a block; returns its terminator.
  const Op *runBlock(const Block &block) {
    for (auto &op : block.ops) {
      if (op->has(TERMINATOR))
        return op.get();
      exec(*op);
    }
    return nullptr;
  }

  std::vector<Tile> operandsOf(const Op &op, size_t from = 0) {
    std::vector<Tile> out;
    for (size_t k = from; k < op.operands.size(); ++k)
      out.push_back(val(op.operands[k]));
    return out;
  }

  void exec(const Op &op);
  void execElementwise(const Op &op);
  void execCast(const Op &op);
  void execBitcast(const Op &op);
  void execLoad(const Op &op);
  void execStore(const Op &op);
  void execAtomic(const Op &op);
  void execAtomicAccess(const Op &op);
  void execBlockAccess(const Op &op, bool isStore);
  void execReduce(const Op &op);
  void execReduceWith(const Op &op);
  void execScanWith(const Op &op);
  void execSort(const Op &op);
  std::vector<Tile> runCombine(const Op &op, std::vector<Tile> lhs, std::vector<Tile> rhs,
                               size_t count);
  void execCumSum(const Op &op);
  void execGather(const Op &op);
  void execHistogram(const Op &op);
  void execDot(const Op &op);
  void execBroadcast(const Op &op);
  void execTrans(const Op &op);
  void execFor(const Op &op);
  void execIf(const Op &op);
  void execWhile(const Op &op);
  void execPrint(const Op &op);
  void execAssert(const Op &op);

public:
  void checkAccess(const Op &op, uint64_t addr, int bytes, bool isStore) {
    if (&op != lastChecked_) {
      lastChecked_ = &op;
      lastUnchecked_ = unchecked_.count(&op) != 0;
    }
    if (lastUnchecked_)
      return;
    const auto &mem = launch_.memory;
    size_t found = mem.size();
    if (lastRange_ < mem.size() && addr >= mem[lastRange_].begin &&
        addr + bytes <= mem[lastRange_].end) {
      found = lastRange_;
    } else {
      for (size_t k = 0; k < mem.size() && found == mem.size(); ++k)
        if (addr >= mem[k].begin && addr + bytes <= mem[k].end)
          found = k;
    }
    if (found < mem.size()) {
      lastRange_ = found;
      if (isStore && !mem[found].writable)
        fail(op, "argument '" + mem[found].name +
                     "' is read-only but the kernel stores through it");
      return;
    }
    fail(op, outOfBounds(addr, isStore));
  }

private:
  // Says where an access outside every tensor lies: past the nearest tensor
  // (the view its argument passed, which may lie inside a larger allocation).
  std::string outOfBounds(uint64_t addr, bool isStore) const {
    std::ostringstream msg;
    msg << "out-of-bounds " << (isStore ? "store to" : "load from") << " address 0x" << std::hex
        << addr << std::dec << " in program (" << pid_[0] << ", " << pid_[1] << ", " << pid_[2]
        << "): ";
    const MemoryRange *nearest = nullptr;
    uint64_t distance = UINT64_MAX;
    for (const MemoryRange &r : launch_.memory) {
      uint64_t d = addr < r.begin ? r.begin - addr : addr >= r.end ? addr - r.end + 1 : 0;
      if (d < distance) {
        distance = d;
        nearest = &r;
      }
    }
    if (nearest && !nearest->name.empty() && distance <= (nearest->end - nearest->begin) + 4096) {
      if (addr < nearest->begin)
        msg << (nearest->begin - addr) << " bytes before";
      else
        msg << (addr - nearest->end) << " bytes past the end of";
      msg << " argument '" << nearest->name << "' (" << (nearest->end - nearest->begin)
          << " bytes)";
    } else {
      msg << "it is outside every tensor passed to the kernel";
    }
    msg << "; is a mask missing?";
    return msg.str();
  }

  void readElement(const Op &op, uint64_t addr, DType d, Tile &out, size_t k) {
    int bytes = dtypeBytes(d);
    checkAccess(op, addr, bytes, false);
    uint64_t bits = 0;
    std::memcpy(&bits, reinterpret_cast<const void *>(addr), bytes);
    setElementBits(out, k, bits, d);
  }

  void writeElement(const Op &op, uint64_t addr, DType d, const Tile &in, size_t k) {
    int bytes = dtypeBytes(d);
    checkAccess(op, addr, bytes, true);
    uint64_t bits = elementBits(in, k, d);
    std::memcpy(reinterpret_cast<void *>(addr), &bits, bytes);
  }
};

// --- elementwise

int64_t shiftLeft(int64_t a, int64_t b, int bits) {
  return (b < 0 || b >= bits) ? 0 : (int64_t)((uint64_t)a << b);
}

int64_t shiftRight(int64_t a, int64_t b, DType d) {
  int bits = dtypeBits(d);
  if (isUnsigned(d)) {
    uint64_t ua = (uint64_t)a & (bits == 64 ? ~0ull : ((1ull << bits) - 1));
    return (b < 0 || b >= bits) ? 0 : (int64_t)(ua >> b);
  }
  return (b < 0 || b >= bits) ? (a < 0 ? -1 : 0) : a >> b;
}

bool lessThan(int64_t a, int64_t b, DType d) {
  return d == DType::U64 ? (uint64_t)a < (uint64_t)b : a < b;
}

int64_t intDiv(int64_t a, int64_t b, DType d, bool rem) {
  if (b == 0)
    return rem ? a : -1; // what the GPU gives: all ones
  if (d == DType::U64)
    return rem ? (int64_t)((uint64_t)a % (uint64_t)b) : (int64_t)((uint64_t)a / (uint64_t)b);
  if (a == INT64_MIN && b == -1)
    return rem ? 0 : a;
  return rem ? a % b : a / b;
}

int64_t mulHi(int64_t a, int64_t b, DType d) {
  int bits = dtypeBits(d);
  if (bits == 64) {
    __int128 p = isUnsigned(d) ? (__int128)((unsigned __int128)(uint64_t)a * (uint64_t)b)
                               : (__int128)a * b;
    return (int64_t)(p >> 64);
  }
  return (a * b) >> bits;
}

void Program::execElementwise(const Op &op) {
  const Type &t = op.operands[0]->type;
  DType d = t.dtype;
  size_t n = countOf(t);
  std::vector<Tile *> xs;
  for (auto *v : op.operands)
    xs.push_back(&val(v));
  Tile r;
  const OpKind kind = op.kind;
  if (kind == OpKind::Select) {
    const Type &rt = op.result()->type;
    if (holdsFloat(rt)) {
      r.f.resize(n);
      for (size_t k = 0; k < n; ++k)
        r.f[k] = xs[0]->i[k] ? xs[1]->f[k] : xs[2]->f[k];
    } else {
      r.i.resize(n);
      for (size_t k = 0; k < n; ++k)
        r.i[k] = xs[0]->i[k] ? xs[1]->i[k] : xs[2]->i[k];
    }
    val(op.result()) = std::move(r);
    return;
  }
  if (kind == OpKind::AddPtr) {
    int64_t size = dtypeBytes(t.pointee);
    r.i.resize(n);
    for (size_t k = 0; k < n; ++k)
      r.i[k] = xs[0]->i[k] + xs[1]->i[k] * size;
    val(op.result()) = std::move(r);
    return;
  }
  if (isFloat(d)) {
    const auto &a = xs[0]->f;
    const auto *b = xs.size() > 1 ? &xs[1]->f : nullptr;
    bool isCmp = kind >= OpKind::CmpEq && kind <= OpKind::CmpGe;
    if (isCmp) {
      r.i.resize(n);
      for (size_t k = 0; k < n; ++k) {
        double x = a[k], y = (*b)[k];
        bool c = false;
        switch (kind) {
        case OpKind::CmpEq: c = x == y; break;
        case OpKind::CmpNe: c = x != y; break;
        case OpKind::CmpLt: c = x < y; break;
        case OpKind::CmpLe: c = x <= y; break;
        case OpKind::CmpGt: c = x > y; break;
        default: c = x >= y; break;
        }
        r.i[k] = c;
      }
      val(op.result()) = std::move(r);
      return;
    }
    r.f.resize(n);
    auto &o = r.f;
#define TILEC_FLOAT_UNARY(K, EXPR)                                                                 \
  case OpKind::K:                                                                                  \
    for (size_t k = 0; k < n; ++k) {                                                               \
      double x = a[k];                                                                             \
      o[k] = (EXPR);                                                                               \
    }                                                                                              \
    break;
#define TILEC_FLOAT_BINARY(K, EXPR)                                                                \
  case OpKind::K:                                                                                  \
    for (size_t k = 0; k < n; ++k) {                                                               \
      double x = a[k], y = (*b)[k];                                                                \
      o[k] = (EXPR);                                                                               \
    }                                                                                              \
    break;
    switch (kind) {
      TILEC_FLOAT_BINARY(Add, x + y)
      TILEC_FLOAT_BINARY(Sub, x - y)
      TILEC_FLOAT_BINARY(Mul, x * y)
      TILEC_FLOAT_BINARY(Div, x / y)
      TILEC_FLOAT_BINARY(FRem, std::fmod(x, y))
      TILEC_FLOAT_BINARY(Min, std::fmin(x, y))
      TILEC_FLOAT_BINARY(Max, std::fmax(x, y))
      TILEC_FLOAT_BINARY(Pow, std::pow(x, y))
      TILEC_FLOAT_BINARY(Atan2, std::atan2(x, y))
      TILEC_FLOAT_UNARY(Neg, -x)
      TILEC_FLOAT_UNARY(Abs, std::fabs(x))
      TILEC_FLOAT_UNARY(Exp, std::exp(x))
      TILEC_FLOAT_UNARY(Exp2, std::exp2(x))
      TILEC_FLOAT_UNARY(Log, std::log(x))
      TILEC_FLOAT_UNARY(Log2, std::log2(x))
      TILEC_FLOAT_UNARY(Sqrt, std::sqrt(x))
      TILEC_FLOAT_UNARY(Rsqrt, 1.0 / std::sqrt(x))
      TILEC_FLOAT_UNARY(Sin, std::sin(x))
      TILEC_FLOAT_UNARY(Cos, std::cos(x))
      TILEC_FLOAT_UNARY(Tanh, std::tanh(x))
      TILEC_FLOAT_UNARY(Floor, std::floor(x))
      TILEC_FLOAT_UNARY(Ceil, std::ceil(x))
      TILEC_FLOAT_UNARY(Erf, std::erf(x))
    case OpKind::Fma: // rounded once, in the result's own precision
      for (size_t k = 0; k < n; ++k)
        o[k] = d == DType::F32 ? (double)std::fmaf((float)a[k], (float)(*b)[k], (float)xs[2]->f[k])
                               : std::fma(a[k], (*b)[k], xs[2]->f[k]);
      break;
    default:
      fail(op, std::string("the CPU backend cannot run '") + op.info().mnemonic + "' on floats");
    }
#undef TILEC_FLOAT_UNARY
#undef TILEC_FLOAT_BINARY
    roundFloats(o, op.result()->type.dtype);
    val(op.result()) = std::move(r);
    return;
  }
  const auto &a = xs[0]->i;
  const auto *b = xs.size() > 1 ? &xs[1]->i : nullptr;
  r.i.resize(n);
  auto &o = r.i;
  int bits = dtypeBits(d);
#define TILEC_INT_UNARY(K, EXPR)                                                                   \
  case OpKind::K:                                                                                  \
    for (size_t k = 0; k < n; ++k) {                                                               \
      int64_t x = a[k];                                                                            \
      o[k] = (EXPR);                                                                               \
    }                                                                                              \
    break;
#define TILEC_INT_BINARY(K, EXPR)                                                                  \
  case OpKind::K:                                                                                  \
    for (size_t k = 0; k < n; ++k) {                                                               \
      int64_t x = a[k], y = (*b)[k];                                                               \
      o[k] = (EXPR);                                                                               \
    }                                                                                              \
    break;
  switch (kind) {
    TILEC_INT_BINARY(Add, (int64_t)((uint64_t)x + (uint64_t)y))
    TILEC_INT_BINARY(Sub, (int64_t)((uint64_t)x - (uint64_t)y))
    TILEC_INT_BINARY(Mul, (int64_t)((uint64_t)x * (uint64_t)y))
    TILEC_INT_BINARY(IDiv, intDiv(x, y, d, false))
    TILEC_INT_BINARY(IRem, intDiv(x, y, d, true))
    TILEC_INT_BINARY(And, x & y)
    TILEC_INT_BINARY(Or, x | y)
    TILEC_INT_BINARY(Xor, x ^ y)
    TILEC_INT_BINARY(Shl, shiftLeft(x, y, bits))
    TILEC_INT_BINARY(Shr, shiftRight(x, y, d))
    TILEC_INT_BINARY(Min, lessThan(y, x, d) ? y : x)
    TILEC_INT_BINARY(Max, lessThan(x, y, d) ? y : x)
    TILEC_INT_BINARY(UMulHi, mulHi(x, y, d))
    TILEC_INT_BINARY(CmpEq, x == y)
    TILEC_INT_BINARY(CmpNe, x != y)
    TILEC_INT_BINARY(CmpLt, lessThan(x, y, d))
    TILEC_INT_BINARY(CmpLe, !lessThan(y, x, d))
    TILEC_INT_BINARY(CmpGt, lessThan(y, x, d))
    TILEC_INT_BINARY(CmpGe, !lessThan(x, y, d))
    TILEC_INT_UNARY(Neg, (int64_t)(0 - (uint64_t)x))
    TILEC_INT_UNARY(Not, ~x)
    TILEC_INT_UNARY(Abs, x < 0 && !isUnsigned(d) ? (int64_t)(0 - (uint64_t)x) : x)
  default:
    fail(op, std::string("the CPU backend cannot run '") + op.info().mnemonic + "' on integers");
  }
#undef TILEC_INT_UNARY
#undef TILEC_INT_BINARY
  wrapInts(o, op.result()->type.dtype);
  val(op.result()) = std::move(r);
}

void Program::execCast(const Op &op) {
  const Type &from = op.operand(0)->type, &to = op.result()->type;
  const Tile &x = val(op.operand(0));
  size_t n = countOf(from);
  Tile r;
  bool rtz = op.strAttr("rounding") == "rtz";
  if (isFloat(to.dtype)) {
    r.f.resize(n);
    for (size_t k = 0; k < n; ++k) {
      // An integer goes to f32 in one rounding, not through f64.
      bool toF32 = to.dtype == DType::F32;
      double v = isFloat(from.dtype)        ? x.f[k]
                 : from.dtype == DType::U64 ? (toF32 ? (double)(float)(uint64_t)x.i[k]
                                                     : (double)(uint64_t)x.i[k])
                                            : (toF32 ? (double)(float)x.i[k] : (double)x.i[k]);
      if (rtz && isFloat(from.dtype)) {
        double rounded = roundFloat(v, to.dtype);
        if (std::fabs(rounded) > std::fabs(v))
          rounded = std::nextafter(rounded, 0.0);
        v = rounded;
      }
      r.f[k] = v;
    }
    if (!rtz)
      roundFloats(r.f, to.dtype);
  } else {
    r.i.resize(n);
    for (size_t k = 0; k < n; ++k) {
      if (!isFloat(from.dtype)) {
        r.i[k] = to.dtype == DType::I1 ? (x.i[k] != 0) : x.i[k];
        continue;
      }
      double v = x.f[k];
      if (to.dtype == DType::I1) {
        r.i[k] = v != 0;
      } else if (std::isnan(v)) {
        r.i[k] = 0;
      } else if (isUnsigned(to.dtype)) {
        double hi = to.dtype == DType::U64 ? 18446744073709551615.0 : std::ldexp(1.0, dtypeBits(to.dtype)) - 1;
        v = std::trunc(std::clamp(v, 0.0, hi));
        r.i[k] = v >= 9223372036854775808.0 ? (int64_t)(uint64_t)v : (int64_t)v;
      } else {
        double lim = std::ldexp(1.0, dtypeBits(to.dtype) - 1);
        r.i[k] = v >= lim ? (int64_t)(lim - 1) : v < -lim ? (int64_t)-lim : (int64_t)std::trunc(v);
        if (dtypeBits(to.dtype) == 64 && v >= lim)
          r.i[k] = INT64_MAX;
      }
    }
    wrapInts(r.i, to.dtype);
  }
  val(op.result()) = std::move(r);
}

void Program::execBitcast(const Op &op) {
  const Type &from = op.operand(0)->type, &to = op.result()->type;
  const Tile &x = val(op.operand(0));
  size_t n = countOf(from);
  Tile r;
  for (size_t k = 0; k < n; ++k) {
    uint64_t bits = isFloat(from.dtype) ? floatToBits(x.f[k], from.dtype) : (uint64_t)x.i[k];
    int width = dtypeBits(from.dtype);
    if (width < 64)
      bits &= (1ull << width) - 1;
    if (isFloat(to.dtype))
      r.f.push_back(bitsToFloat(bits, to.dtype));
    else
      r.i.push_back(wrapInt((int64_t)bits, to.dtype));
  }
  val(op.result()) = std::move(r);
}

// --- memory

// Reads n elements of C type T at the tile's addresses into `out`, converted
// by `convert`; masked-off elements keep `other` (or zero).
template <typename T, typename Out, typename Convert>
void loadRun(Program &p, const Op &op, const Tile &ptr, const Tile *mask, std::vector<Out> &out,
             size_t n, Convert convert) {
  for (size_t k = 0; k < n; ++k) {
    if (mask && !mask->i[k])
      continue;
    uint64_t addr = (uint64_t)ptr.i[k];
    p.checkAccess(op, addr, sizeof(T), false);
    T v;
    std::memcpy(&v, reinterpret_cast<const void *>(addr), sizeof(T));
    out[k] = convert(v);
  }
}

void Program::execLoad(const Op &op) {
  const Type &rt = op.result()->type;
  DType d = rt.dtype;
  size_t n = rt.numel();
  const Tile &ptr = val(op.operand(0));
  const Tile *mask = op.operands.size() > 1 ? &val(op.operand(1)) : nullptr;
  const Tile *other = op.operands.size() > 2 ? &val(op.operand(2)) : nullptr;
  Tile r;
  if (isFloat(d))
    r.f = other ? other->f : std::vector<double>(n, 0.0);
  else
    r.i = other ? other->i : std::vector<int64_t>(n, 0);
  auto same = [](auto v) { return v; };
  switch (d) { // the common types without a per-element switch
  case DType::F32:
    loadRun<float>(*this, op, ptr, mask, r.f, n, same);
    break;
  case DType::F64:
    loadRun<double>(*this, op, ptr, mask, r.f, n, same);
    break;
  case DType::I32:
    loadRun<int32_t>(*this, op, ptr, mask, r.i, n, same);
    break;
  case DType::I64:
    loadRun<int64_t>(*this, op, ptr, mask, r.i, n, same);
    break;
  default:
    for (size_t k = 0; k < n; ++k)
      if (!mask || mask->i[k])
        readElement(op, (uint64_t)ptr.i[k], d, r, k);
  }
  val(op.result()) = std::move(r);
}

void Program::execStore(const Op &op) {
  const Type &vt = op.operand(1)->type;
  size_t n = vt.numel();
  const Tile &ptr = val(op.operand(0)), &v = val(op.operand(1));
  const Tile *mask = op.operands.size() > 2 ? &val(op.operand(2)) : nullptr;
  for (size_t k = 0; k < n; ++k) {
    if (mask && !mask->i[k])
      continue;
    uint64_t addr = (uint64_t)ptr.i[k];
    if (vt.dtype == DType::F32) {
      checkAccess(op, addr, 4, true);
      float f = (float)v.f[k];
      std::memcpy(reinterpret_cast<void *>(addr), &f, 4);
      continue;
    }
    writeElement(op, addr, vt.dtype, v, k);
  }
}

// One atomic update of the `bytes`-wide element at `addr` to f(old bits): a
// compare-and-swap loop, so that every kind and width is atomic across the
// programs running on other threads. Returns the old bits.
template <typename U, typename F> uint64_t casLoop(uint64_t addr, F f) {
  U *p = reinterpret_cast<U *>(addr);
  U old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(p, &old, (U)f((uint64_t)old), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST)) {
  }
  return (uint64_t)old;
}

template <typename F> uint64_t atomicUpdate(uint64_t addr, int bytes, F f) {
  switch (bytes) {
  case 1:
    return casLoop<uint8_t>(addr, f);
  case 2:
    return casLoop<uint16_t>(addr, f);
  case 4:
    return casLoop<uint32_t>(addr, f);
  default:
    return casLoop<uint64_t>(addr, f);
  }
}

void Program::execAtomic(const Op &op) {
  DType d = op.result()->type.dtype;
  int bytes = dtypeBytes(d);
  size_t n = op.result()->type.numel();
  bool cas = op.kind == OpKind::AtomicCAS;
  const Tile &ptr = val(op.operand(0)), &v = val(op.operand(cas ? 2 : 1));
  const Tile *cmp = cas ? &val(op.operand(1)) : nullptr;
  const Tile *mask = !cas && op.operands.size() > 2 ? &val(op.operand(2)) : nullptr;
  std::string kind = cas ? "cas" : op.strAttr("kind");
  bool fl = isFloat(d);
  uint64_t widthMask = bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  Tile out = zeroTile(d, n);
  for (size_t k = 0; k < n; ++k) {
    if (mask && !mask->i[k])
      continue;
    uint64_t addr = (uint64_t)ptr.i[k];
    checkAccess(op, addr, bytes, true);
    uint64_t operand = elementBits(v, k, d);
    // The new bits from the old ones, computed as the GPU does for each kind.
    auto update = [&](uint64_t old) -> uint64_t {
      if (kind == "xchg")
        return operand;
      if (kind == "cas")
        return old == elementBits(*cmp, k, d) ? operand : old;
      if (kind == "and")
        return old & operand;
      if (kind == "or")
        return old | operand;
      if (kind == "xor")
        return old ^ operand;
      if (fl) {
        double a = bitsToFloat(old, d), b = v.f[k];
        double r = kind == "add" ? a + b : kind == "max" ? std::max(a, b) : std::min(a, b);
        return floatToBits(r, d) & widthMask;
      }
      int64_t a = wrapInt((int64_t)old, d), b = v.i[k];
      int64_t r = kind == "add"   ? (int64_t)((uint64_t)a + (uint64_t)b)
                  : kind == "max" ? (lessThan(a, b, d) ? b : a)
                                  : (lessThan(a, b, d) ? a : b);
      return (uint64_t)r & widthMask;
    };
    setElementBits(out, k, atomicUpdate(addr, bytes, update), d);
  }
  val(op.result()) = std::move(out);
}

// The `bytes`-wide element at `addr`, read or written as one atomic access.
uint64_t atomicLoadBits(uint64_t addr, int bytes, int order) {
  switch (bytes) {
  case 1:
    return __atomic_load_n(reinterpret_cast<uint8_t *>(addr), order);
  case 2:
    return __atomic_load_n(reinterpret_cast<uint16_t *>(addr), order);
  case 4:
    return __atomic_load_n(reinterpret_cast<uint32_t *>(addr), order);
  default:
    return __atomic_load_n(reinterpret_cast<uint64_t *>(addr), order);
  }
}

void atomicStoreBits(uint64_t addr, int bytes, uint64_t bits, int order) {
  switch (bytes) {
  case 1:
    return __atomic_store_n(reinterpret_cast<uint8_t *>(addr), (uint8_t)bits, order);
  case 2:
    return __atomic_store_n(reinterpret_cast<uint16_t *>(addr), (uint16_t)bits, order);
  case 4:
    return __atomic_store_n(reinterpret_cast<uint32_t *>(addr), (uint32_t)bits, order);
  default:
    return __atomic_store_n(reinterpret_cast<uint64_t *>(addr), bits, order);
  }
}

// tl.atomic_load, atomic_store and atomic_poll. A poll spins on each element
// in turn, all against one deadline; an element is read at least once.
void Program::execAtomicAccess(const Op &op) {
  const Tile &ptr = val(op.operand(0));
  DType d = op.operand(0)->type.pointee;
  int bytes = dtypeBytes(d);
  size_t n = op.operand(0)->type.numel();
  bool relaxed = op.strAttr("sem") == "relaxed";
  if (op.kind == OpKind::AtomicStore) {
    const Tile &v = val(op.operand(1));
    const Tile *mask = op.operands.size() > 2 ? &val(op.operand(2)) : nullptr;
    for (size_t k = 0; k < n; ++k) {
      if (mask && !mask->i[k])
        continue;
      checkAccess(op, (uint64_t)ptr.i[k], bytes, true);
      atomicStoreBits((uint64_t)ptr.i[k], bytes, elementBits(v, k, d),
                      relaxed ? __ATOMIC_RELAXED : __ATOMIC_RELEASE);
    }
    return;
  }
  int order = relaxed ? __ATOMIC_RELAXED : __ATOMIC_ACQUIRE;
  Tile out;
  if (op.kind == OpKind::AtomicLoad) {
    const Tile *mask = op.operands.size() > 1 ? &val(op.operand(1)) : nullptr;
    out = zeroTile(d, n);
    for (size_t k = 0; k < n; ++k) {
      if (mask && !mask->i[k])
        continue;
      checkAccess(op, (uint64_t)ptr.i[k], bytes, false);
      setElementBits(out, k, atomicLoadBits((uint64_t)ptr.i[k], bytes, order), d);
    }
  } else { // AtomicPoll
    const Tile &expected = val(op.operand(1));
    bool timed = op.operands.size() > 2;
    auto deadline = std::chrono::steady_clock::now();
    if (timed)
      deadline += std::chrono::nanoseconds(
          (int64_t)std::min<uint64_t>((uint64_t)val(op.operand(2)).i[0], INT64_MAX / 2));
    out.i.assign(n, 0);
    for (size_t k = 0; k < n; ++k) {
      uint64_t addr = (uint64_t)ptr.i[k];
      checkAccess(op, addr, bytes, false);
      for (;;) {
        if (atomicLoadBits(addr, bytes, order) == elementBits(expected, k, d)) {
          out.i[k] = 1;
          break;
        }
        if (timed && std::chrono::steady_clock::now() >= deadline)
          break;
        std::this_thread::yield(); // let the program that will write it run
      }
    }
  }
  val(op.result()) = std::move(out);
}

// A block pointer's tile holds [base, shape..., strides..., offsets...].
void Program::execBlockAccess(const Op &op, bool isStore) {
  const Type &pt = op.operand(0)->type;
  const Tile &bp = val(op.operand(0));
  const auto &block = pt.blockShape;
  size_t rank = block.size();
  DType d = pt.pointee;
  int64_t bytes = dtypeBytes(d);
  std::vector<int64_t> checkDims = op.intsAttr("boundary_check");
  std::vector<bool> check(rank, false);
  for (int64_t c : checkDims)
    check[c] = true;
  int64_t n = 1;
  for (int64_t s : block)
    n *= s;
  Tile r;
  const Tile *v = isStore ? &val(op.operand(1)) : nullptr;
  double pad = op.strAttr("padding") == "nan" ? NAN : 0.0;
  if (!isStore) {
    if (isFloat(d))
      r.f.assign(n, pad);
    else
      r.i.assign(n, 0);
  }
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k;
    for (int dim = (int)rank - 1; dim >= 0; --dim) {
      idx[dim] = rem % block[dim];
      rem /= block[dim];
    }
    bool inside = true;
    int64_t offset = 0;
    for (size_t dim = 0; dim < rank; ++dim) {
      int64_t coord = bp.i[1 + 2 * rank + dim] + idx[dim];
      if (check[dim] && (coord < 0 || coord >= bp.i[1 + dim]))
        inside = false;
      offset += coord * bp.i[1 + rank + dim];
    }
    if (!inside)
      continue;
    uint64_t addr = (uint64_t)(bp.i[0] + offset * bytes);
    if (isStore)
      writeElement(op, addr, d, *v, k);
    else
      readElement(op, addr, d, r, k);
  }
  if (!isStore)
    val(op.result()) = std::move(r);
}

// --- tile-wide

void Program::execReduce(const Op &op) {
  const Type &t = op.operand(0)->type;
  const Tile &x = val(op.operand(0));
  int axis = (int)op.intAttr("axis");
  auto [outer, n, inner] = linesAlong(t, axis);
  DType d = t.dtype;
  bool fl = isFloat(d);
  Tile r;
  int64_t count = outer * inner;
  if (op.kind == OpKind::ArgMax || op.kind == OpKind::ArgMin) {
    bool isMax = op.kind == OpKind::ArgMax;
    r.i.resize(count);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t best = 0;
        for (int64_t k = 1; k < n; ++k) {
          size_t a = (o * n + k) * inner + in, b = (o * n + best) * inner + in;
          bool better = fl ? (isMax ? x.f[a] > x.f[b] : x.f[a] < x.f[b])
                           : (isMax ? lessThan(x.i[b], x.i[a], d) : lessThan(x.i[a], x.i[b], d));
          if (better)
            best = k;
        }
        r.i[o * inner + in] = best;
      }
    val(op.result()) = std::move(r);
    return;
  }
  if (fl)
    r.f.resize(count);
  else
    r.i.resize(count);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      size_t first = (o * n) * inner + in;
      if (fl) {
        double acc = x.f[first];
        for (int64_t k = 1; k < n; ++k) {
          double v = x.f[(o * n + k) * inner + in];
          acc = op.kind == OpKind::ReduceSum   ? acc + v
                : op.kind == OpKind::ReduceMax ? std::fmax(acc, v)
                                               : std::fmin(acc, v);
        }
        r.f[o * inner + in] = acc;
      } else {
        int64_t acc = x.i[first];
        for (int64_t k = 1; k < n; ++k) {
          int64_t v = x.i[(o * n + k) * inner + in];
          acc = op.kind == OpKind::ReduceSum   ? (int64_t)((uint64_t)acc + (uint64_t)v)
                : op.kind == OpKind::ReduceMax ? (lessThan(acc, v, d) ? v : acc)
                                               : (lessThan(v, acc, d) ? v : acc);
        }
        r.i[o * inner + in] = acc;
      }
    }
  if (fl)
    roundFloats(r.f, d);
  else
    wrapInts(r.i, d);
  val(op.result()) = std::move(r);
}

// The combine region of `op` on `count` pairs at once: its scalar-typed ops
// run on whole tiles. Values it uses from outside the region (scalars) are
// spread to `count` elements meanwhile.
std::vector<Tile> Program::runCombine(const Op &op, std::vector<Tile> lhs, std::vector<Tile> rhs,
                                      size_t count) {
  const Block &body = *op.regions[0];
  size_t k = lhs.size();
  for (size_t i = 0; i < k; ++i) {
    val(body.args[i].get()) = std::move(lhs[i]);
    val(body.args[k + i].get()) = std::move(rhs[i]);
  }
  std::unordered_set<const Value *> inside;
  for (const auto &a : body.args)
    inside.insert(a.get());
  std::vector<std::pair<const Value *, Tile>> saved;
  for (const auto &inner : body.ops) {
    for (const Value *v : inner->operands)
      if (!inside.count(v) && std::none_of(saved.begin(), saved.end(),
                                           [&](const auto &s) { return s.first == v; })) {
        Tile &t = val(v);
        saved.push_back({v, t});
        if (!t.f.empty())
          t.f.assign(count, t.f[0]);
        if (!t.i.empty())
          t.i.assign(count, t.i[0]);
      }
    for (const auto &r : inner->results)
      inside.insert(r.get());
  }
  regionCount_ = count;
  const Op *yield = nullptr;
  try {
    yield = runBlock(body);
  } catch (...) {
    regionCount_ = 0;
    throw;
  }
  regionCount_ = 0;
  for (auto &[v, t] : saved)
    val(v) = std::move(t);
  std::vector<Tile> out;
  for (const Value *v : yield->operands)
    out.push_back(val(v));
  return out;
}

// tl.reduce with a combine function: pairs along the axis combined as a tree
// (element 2j with 2j+1, level by level), every line of a level in one run.
void Program::execReduceWith(const Op &op) {
  const Type &t = op.operand(0)->type;
  int axis = (int)op.intAttr("axis");
  Lines lines = linesAlong(t, axis);
  int64_t outer = lines.outer, n = lines.n, inner = lines.inner;
  std::vector<Tile> xs;
  for (const Value *v : op.operands)
    xs.push_back(val(v));
  for (; n > 1; n /= 2) {
    std::vector<Tile> lo(xs.size()), hi(xs.size());
    size_t count = (size_t)(outer * (n / 2) * inner);
    for (size_t i = 0; i < xs.size(); ++i) {
      bool fl = holdsFloat(op.operand((int)i)->type);
      auto split = [&](auto &src, auto &a, auto &b) {
        a.reserve(count);
        b.reserve(count);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < n / 2; ++j)
            for (int64_t in = 0; in < inner; ++in) {
              a.push_back(src[(o * n + 2 * j) * inner + in]);
              b.push_back(src[(o * n + 2 * j + 1) * inner + in]);
            }
      };
      if (fl)
        split(xs[i].f, lo[i].f, hi[i].f);
      else
        split(xs[i].i, lo[i].i, hi[i].i);
    }
    xs = runCombine(op, std::move(lo), std::move(hi), count);
  }
  for (size_t i = 0; i < xs.size(); ++i)
    val(op.result((int)i)) = std::move(xs[i]);
}

// tl.associative_scan with a combine function: Hillis-Steele steps, each one
// run of the region over every element that has a partner d before it (after
// it, from the end when reversed).
void Program::execScanWith(const Op &op) {
  const Type &t = op.operand(0)->type;
  int axis = (int)op.intAttr("axis");
  bool reverse = op.intAttr("reverse") != 0;
  Lines lines = linesAlong(t, axis);
  int64_t outer = lines.outer, n = lines.n, inner = lines.inner;
  std::vector<Tile> xs;
  for (const Value *v : op.operands)
    xs.push_back(val(v));
  auto at = [&](int64_t o, int64_t j, int64_t in) {
    return (size_t)((o * n + (reverse ? n - 1 - j : j)) * inner + in);
  };
  for (int64_t d = 1; d < n; d *= 2) {
    size_t count = (size_t)(outer * (n - d) * inner);
    std::vector<Tile> before(xs.size()), self(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      auto gather = [&](auto &src, auto &a, auto &b) {
        a.reserve(count);
        b.reserve(count);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = d; j < n; ++j)
            for (int64_t in = 0; in < inner; ++in) {
              a.push_back(src[at(o, j - d, in)]);
              b.push_back(src[at(o, j, in)]);
            }
      };
      if (holdsFloat(op.operand((int)i)->type))
        gather(xs[i].f, before[i].f, self[i].f);
      else
        gather(xs[i].i, before[i].i, self[i].i);
    }
    std::vector<Tile> combined = runCombine(op, std::move(before), std::move(self), count);
    for (size_t i = 0; i < xs.size(); ++i) {
      size_t k = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = d; j < n; ++j)
          for (int64_t in = 0; in < inner; ++in, ++k) {
            if (holdsFloat(op.operand((int)i)->type))
              xs[i].f[at(o, j, in)] = combined[i].f[k];
            else
              xs[i].i[at(o, j, in)] = combined[i].i[k];
          }
    }
  }
  for (size_t i = 0; i < xs.size(); ++i)
    val(op.result((int)i)) = std::move(xs[i]);
}

// Triton's bitonic network on each line of the last dim, step by step as the
// GPU runs it: in stage s (1..L) and step j (s-1..0) each element x at index i
// meets y at i ^ 2^j and becomes y where (x > y) != (flip ^ bit j of i), flip
// being bit s of i before the last stage and `descending` in it.
void Program::execSort(const Op &op) {
  const Type &t = op.operand(0)->type;
  Tile r = val(op.operand(0));
  int64_t n = t.shape.back(), lines = t.numel() / n;
  int bits = 0;
  while ((int64_t{1} << bits) < n)
    ++bits;
  bool descending = op.intAttr("descending") != 0, mergeOnly = op.intAttr("merge_only") != 0;
  bool fl = holdsFloat(t);
  DType d = t.dtype;
  auto greater = [&](size_t a, size_t b) {
    return fl ? r.f[a] > r.f[b] : lessThan(r.i[b], r.i[a], d);
  };
  for (int s = mergeOnly ? bits : 1; s <= bits; ++s)
    for (int j = s - 1; j >= 0; --j)
      for (int64_t line = 0; line < lines; ++line)
        for (int64_t i = 0; i < n; ++i) {
          if (i >> j & 1)
            continue; // each pair once, from its left element
          size_t a = (size_t)(line * n + i), b = a + ((size_t)1 << j);
          bool flip = s < bits ? (i >> s & 1) : descending;
          bool takeLeft = greater(a, b) != flip;      // the left element becomes y
          bool takeRight = greater(b, a) != !flip;    // the right one becomes x
          if (fl) {
            double x = r.f[a], y = r.f[b];
            r.f[a] = takeLeft ? y : x;
            r.f[b] = takeRight ? x : y;
          } else {
            int64_t x = r.i[a], y = r.i[b];
            r.i[a] = takeLeft ? y : x;
            r.i[b] = takeRight ? x : y;
          }
        }
  val(op.result()) = std::move(r);
}

void Program::execGather(const Op &op) {
  const Type &src = op.operand(0)->type, &out = op.result()->type;
  const Tile &x = val(op.operand(0)), &index = val(op.operand(1));
  int axis = (int)op.intAttr("axis"), rank = out.rank();
  std::vector<int64_t> strides = stridesOf(src.shape), idx(rank, 0);
  bool fl = holdsFloat(src);
  Tile r;
  if (fl)
    r.f.resize(out.numel());
  else
    r.i.resize(out.numel());
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t at = index.i[k];
    if (at < 0 || at >= src.shape[axis])
      fail(op, "tl.gather(): index " + std::to_string(at) + " is outside the source's " +
                   std::to_string(src.shape[axis]) + " elements along axis " +
                   std::to_string(axis));
    int64_t from = 0;
    for (int d = 0; d < rank; ++d)
      from += (d == axis ? at : idx[d]) * strides[d];
    if (fl)
      r.f[k] = x.f[from];
    else
      r.i[k] = x.i[from];
    for (int d = rank - 1; d >= 0 && ++idx[d] == out.shape[d]; --d)
      idx[d] = 0;
  }
  val(op.result()) = std::move(r);
}

void Program::execHistogram(const Op &op) {
  const Tile &x = val(op.operand(0));
  const Tile *mask = op.operands.size() > 1 ? &val(op.operand(1)) : nullptr;
  int64_t bins = op.result()->type.shape[0];
  Tile r;
  r.i.assign(bins, 0);
  for (size_t k = 0; k < x.i.size(); ++k)
    if ((!mask || mask->i[k]) && x.i[k] >= 0 && x.i[k] < bins)
      ++r.i[x.i[k]];
  val(op.result()) = std::move(r);
}

void Program::execCumSum(const Op &op) {
  const Type &t = op.operand(0)->type;
  Tile r = val(op.operand(0));
  int axis = (int)op.intAttr("axis");
  bool reverse = op.intAttr("reverse") != 0;
  auto [outer, n, inner] = linesAlong(t, axis);
  bool fl = isFloat(t.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double facc = 0;
      int64_t iacc = 0;
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = reverse ? n - 1 - s : s;
        size_t at = (o * n + k) * inner + in;
        if (fl) {
          facc = roundFloat(facc + r.f[at], t.dtype);
          r.f[at] = facc;
        } else {
          iacc = wrapInt((int64_t)((uint64_t)iacc + (uint64_t)r.i[at]), t.dtype);
          r.i[at] = iacc;
        }
      }
    }
  val(op.result()) = std::move(r);
}

void Program::execDot(const Op &op) {
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  const Tile &A = val(op.operand(0)), &B = val(op.operand(1)), &C = val(op.operand(2));
  int rank = at.rank();
  int64_t batch = rank == 3 ? at.shape[0] : 1;
  int64_t M = at.shape[rank - 2], K = at.shape[rank - 1], N = bt.shape[rank - 1];
  Tile r;
  if (isFloat(at.dtype)) {
    bool tf32 = op.strAttr("input_precision") == "tf32" && at.dtype == DType::F32;
    std::vector<double> a = A.f, b = B.f;
    if (tf32) {
      for (auto &x : a)
        x = roundToTf32(x);
      for (auto &x : b)
        x = roundToTf32(x);
    }
    r.f = isFloat(rt.dtype) ? C.f : std::vector<double>(C.i.begin(), C.i.end());
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t m = 0; m < M; ++m) {
        double *row = &r.f[(bi * M + m) * N];
        for (int64_t k = 0; k < K; ++k) {
          double av = a[(bi * M + m) * K + k];
          const double *brow = &b[(bi * K + k) * N];
          for (int64_t nn = 0; nn < N; ++nn)
            row[nn] += av * brow[nn];
        }
      }
    roundFloats(r.f, rt.dtype);
  } else {
    r.i = C.i;
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
          int64_t av = A.i[(bi * M + m) * K + k];
          for (int64_t nn = 0; nn < N; ++nn)
            r.i[(bi * M + m) * N + nn] += av * B.i[(bi * K + k) * N + nn];
        }
    wrapInts(r.i, rt.dtype);
  }
  val(op.result()) = std::move(r);
}

void Program::execBroadcast(const Op &op) {
  const Type &from = op.operand(0)->type, &to = op.result()->type;
  const Tile &x = val(op.operand(0));
  std::vector<int64_t> inStrides = stridesOf(from.shape);
  for (int k = 0; k < from.rank(); ++k)
    if (from.shape[k] == 1)
      inStrides[k] = 0;
  int64_t n = to.numel();
  int rank = to.rank();
  std::vector<int64_t> idx(rank, 0);
  Tile r;
  bool fl = holdsFloat(from);
  if (fl)
    r.f.resize(n);
  else
    r.i.resize(n);
  int64_t src = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (fl)
      r.f[k] = x.f[src];
    else
      r.i[k] = x.i[src];
    for (int dim = rank - 1; dim >= 0; --dim) { // odometer increment
      src += inStrides[dim];
      if (++idx[dim] < to.shape[dim])
        break;
      src -= inStrides[dim] * to.shape[dim];
      idx[dim] = 0;
    }
  }
  val(op.result()) = std::move(r);
}

void Program::execTrans(const Op &op) {
  const Type &from = op.operand(0)->type, &to = op.result()->type;
  const Tile &x = val(op.operand(0));
  std::vector<int64_t> order = op.intsAttr("order");
  std::vector<int64_t> inStrides = stridesOf(from.shape);
  int rank = to.rank();
  std::vector<int64_t> strides(rank);
  for (int k = 0; k < rank; ++k)
    strides[k] = inStrides[order[k]];
  int64_t n = to.numel();
  std::vector<int64_t> idx(rank, 0);
  Tile r;
  bool fl = holdsFloat(from);
  if (fl)
    r.f.resize(n);
  else
    r.i.resize(n);
  int64_t src = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (fl)
      r.f[k] = x.f[src];
    else
      r.i[k] = x.i[src];
    for (int dim = rank - 1; dim >= 0; --dim) {
      src += strides[dim];
      if (++idx[dim] < to.shape[dim])
        break;
      src -= strides[dim] * to.shape[dim];
      idx[dim] = 0;
    }
  }
  val(op.result()) = std::move(r);
}

// --- control flow

void Program::execFor(const Op &op) {
  int64_t lb = val(op.operand(0)).i[0], ub = val(op.operand(1)).i[0], step = val(op.operand(2)).i[0];
  const Block &body = *op.regions[0];
  std::vector<Tile> carried = operandsOf(op, 3);
  if (step == 0)
    fail(op, "a loop's step is zero, so it would never end");
  DType ivType = body.args[0]->type.dtype;
  for (int64_t iv = lb; step > 0 ? iv < ub : iv > ub; iv = wrapInt(iv + step, ivType)) {
    val(body.args[0].get()).i.assign(1, iv);
    for (size_t k = 0; k < carried.size(); ++k)
      val(body.args[k + 1].get()) = std::move(carried[k]);
    const Op *yield = runBlock(body);
    carried = operandsOf(*yield);
    if (step > 0 && iv > ub - step)
      break; // the next step would pass ub (and might wrap)
    if (step < 0 && iv < ub - step)
      break;
  }
  for (size_t k = 0; k < carried.size(); ++k)
    val(op.result(k)) = std::move(carried[k]);
}

void Program::execIf(const Op &op) {
  bool cond = val(op.operand(0)).i[0] != 0;
  const Op *yield = runBlock(*op.regions[cond ? 0 : 1]);
  std::vector<Tile> results = operandsOf(*yield);
  for (size_t k = 0; k < results.size(); ++k)
    val(op.result(k)) = std::move(results[k]);
}

void Program::execWhile(const Op &op) {
  const Block &before = *op.regions[0], &after = *op.regions[1];
  std::vector<Tile> carried = operandsOf(op);
  while (true) {
    for (size_t k = 0; k < carried.size(); ++k)
      val(before.args[k].get()) = std::move(carried[k]);
    const Op *cond = runBlock(before);
    std::vector<Tile> forwarded = operandsOf(*cond, 1);
    if (!val(cond->operand(0)).i[0]) {
      for (size_t k = 0; k < forwarded.size(); ++k)
        val(op.result(k)) = std::move(forwarded[k]);
      return;
    }
    for (size_t k = 0; k < forwarded.size(); ++k)
      val(after.args[k].get()) = std::move(forwarded[k]);
    const Op *yield = runBlock(after);
    carried = operandsOf(*yield);
  }
}

std::mutex printMutex;

void Program::execPrint(const Op &op) {
  std::lock_guard<std::mutex> lock(printMutex);
  std::string prefix = op.strAttr("prefix");
  bool hex = op.intAttr("hex") != 0;
  for (size_t a = 0; a < op.operands.size(); ++a) {
    const Type &t = op.operand(a)->type;
    const Tile &x = val(op.operand(a));
    int64_t n = t.numel();
    for (int64_t k = 0; k < n; ++k) {
      std::cout << "pid (" << pid_[0] << ", " << pid_[1] << ", " << pid_[2] << ") idx (" << k
                << ") " << prefix << (op.operands.size() > 1 ? "(operand " + std::to_string(a) + ")" : "")
                << ": ";
      if (isFloat(t.dtype))
        std::cout << x.f[k];
      else if (hex)
        std::cout << "0x" << std::hex << x.i[k] << std::dec;
      else
        std::cout << x.i[k];
      std::cout << "\n";
    }
  }
  std::cout.flush();
}

void Program::execAssert(const Op &op) {
  const Tile &c = val(op.operand(0));
  for (size_t k = 0; k < c.i.size(); ++k)
    if (!c.i[k]) {
      std::ostringstream msg;
      msg << "device assertion failed in program (" << pid_[0] << ", " << pid_[1] << ", " << pid_[2]
          << ") at index " << k;
      std::string text = op.strAttr("message");
      if (!text.empty())
        msg << ": " << text;
      fail(op, msg.str());
    }
}

void Program::exec(const Op &op) {
  switch (op.kind) {
  case OpKind::Constant: {
    const Type &t = op.result()->type;
    Tile r;
    if (holdsFloat(t))
      r.f.assign(countOf(t), roundFloat(op.floatAttr("value"), t.dtype));
    else
      r.i.assign(countOf(t), wrapInt(op.intAttr("value"), t.dtype));
    val(op.result()) = std::move(r);
    return;
  }
  case OpKind::ProgramId:
    val(op.result()).i.assign(1, pid_[op.intAttr("axis")]);
    return;
  case OpKind::NumPrograms:
    val(op.result()).i.assign(1, launch_.grid[op.intAttr("axis")]);
    return;
  case OpKind::MakeRange: {
    Tile r;
    for (int64_t v = op.intAttr("start"); v < op.intAttr("end"); ++v)
      r.i.push_back(v);
    val(op.result()) = std::move(r);
    return;
  }
  case OpKind::Splat: {
    const Tile &x = val(op.operand(0));
    int64_t n = op.result()->type.numel();
    Tile r;
    if (holdsFloat(op.result()->type))
      r.f.assign(n, x.f[0]);
    else
      r.i.assign(n, x.i[0]);
    val(op.result()) = std::move(r);
    return;
  }
  case OpKind::Broadcast:
    execBroadcast(op);
    return;
  case OpKind::ExpandDims:
  case OpKind::Reshape:
    val(op.result()) = val(op.operand(0));
    return;
  case OpKind::Trans:
    execTrans(op);
    return;
  case OpKind::Cast:
    execCast(op);
    return;
  case OpKind::Bitcast:
    if (isPointer(op.result()->type.dtype))
      val(op.result()) = val(op.operand(0));
    else
      execBitcast(op);
    return;
  case OpKind::IntToPtr:
  case OpKind::PtrToInt: {
    Tile r = val(op.operand(0));
    wrapInts(r.i, op.result()->type.dtype);
    val(op.result()) = std::move(r);
    return;
  }
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::IDiv:
  case OpKind::IRem:
  case OpKind::FRem:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Min:
  case OpKind::Max:
  case OpKind::UMulHi:
  case OpKind::Pow:
  case OpKind::Atan2:
  case OpKind::CmpEq:
  case OpKind::CmpNe:
  case OpKind::CmpLt:
  case OpKind::CmpLe:
  case OpKind::CmpGt:
  case OpKind::CmpGe:
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Erf:
  case OpKind::Select:
  case OpKind::Fma:
  case OpKind::AddPtr:
    execElementwise(op);
    return;
  case OpKind::Load:
    execLoad(op);
    return;
  case OpKind::Store:
    execStore(op);
    return;
  case OpKind::MakeBlockPtr: {
    Tile r;
    for (auto *v : op.operands)
      r.i.push_back(val(v).i[0]);
    val(op.result()) = std::move(r);
    return;
  }
  case OpKind::Advance: {
    Tile r = val(op.operand(0));
    size_t rank = op.operands.size() - 1;
    for (size_t k = 0; k < rank; ++k)
      r.i[1 + 2 * rank + k] += val(op.operand(k + 1)).i[0];
    val(op.result()) = std::move(r);
    return;
  }
  case OpKind::LoadBlock:
    execBlockAccess(op, false);
    return;
  case OpKind::StoreBlock:
    execBlockAccess(op, true);
    return;
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    execReduce(op);
    return;
  case OpKind::Gather:
    execGather(op);
    return;
  case OpKind::Histogram:
    execHistogram(op);
    return;
  case OpKind::ReduceWith:
    execReduceWith(op);
    return;
  case OpKind::ScanWith:
    execScanWith(op);
    return;
  case OpKind::Sort:
    execSort(op);
    return;
  case OpKind::CumSum:
    execCumSum(op);
    return;
  case OpKind::Dot:
    execDot(op);
    return;
  case OpKind::For:
    execFor(op);
    return;
  case OpKind::If:
    execIf(op);
    return;
  case OpKind::While:
    execWhile(op);
    return;
  case OpKind::Print:
    execPrint(op);
    return;
  case OpKind::GdcWait: // launches run one after another here
  case OpKind::GdcLaunchDependents:
    return;
  case OpKind::Assert:
    execAssert(op);
    return;
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
    return;
  case OpKind::AtomicRMW:
  case OpKind::AtomicCAS:
    execAtomic(op);
    return;
  case OpKind::AtomicLoad:
  case OpKind::AtomicStore:
  case OpKind::AtomicPoll:
    execAtomicAccess(op);
    return;
  case OpKind::InlineAsm:
    fail(op, "tl.inline_asm_elementwise runs PTX assembly, which only the NVIDIA backend can "
             "run; launch the kernel on CUDA tensors");
  case OpKind::ConvertLayout: // GPU-level: only on a GPU backend's copy
  case OpKind::WarpSpecialize:
  case OpKind::Produce:
    throw std::logic_error("GPU-level op " + std::string(op.info().mnemonic) +
                           " reached the CPU backend");
  }
}

} // namespace

void launch(const Function &fn, const Launch &launch) {
  int64_t total = launch.grid[0] * launch.grid[1] * launch.grid[2];
  if (total <= 0)
    return;
  int threads = launch.numThreads > 0 ? launch.numThreads
                                      : (int)std::max(1u, std::thread::hardware_concurrency());
  threads = (int)std::min<int64_t>(threads, total);
  const std::unordered_set<const Op *> unchecked = accessesThroughRunTimePointers(fn);
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex errorMutex;
  std::string error;
  auto worker = [&] {
    Program program(fn, launch, unchecked);
    while (!stop.load(std::memory_order_relaxed)) {
      int64_t k = next.fetch_add(1);
      if (k >= total)
        return;
      int64_t x = k % launch.grid[0], y = (k / launch.grid[0]) % launch.grid[1],
              z = k / (launch.grid[0] * launch.grid[1]);
      try {
        program.run(x, y, z);
      } catch (const std::exception &e) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (error.empty())
          error = e.what();
        stop = true;
      }
    }
  };
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back(worker);
    for (auto &t : pool)
      t.join();
  }
  if (!error.empty())
    throw KernelError(error);
}

} // namespace tilec::cpu
