// Reductions and scans. A reduction combines registers along the axis in
// each thread, then lanes with butterfly shuffles, then warps through shared
// memory; its result lives in the slice of the operand's layout. A scan runs
// each line sequentially in one thread, in the CPU backend's order.
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool computesInF32(DType d) { return isFloat(d) && d != DType::F32 && d != DType::F64; }

} // namespace

static std::string shuffleXor(Lowering &L, const std::string &v, DType d, int mask) {
  auto shfl = [&](const std::string &w) {
    return L.opReg("shfl.sync.bfly.b32", RegClass::B32, {w, imm(mask), "31", "-1"});
  };
  switch (regClassOf(d)) {
  case RegClass::Pred: {
    std::string w = L.opReg("selp.u32", RegClass::B32, {"1", "0", v});
    return L.opReg("setp.ne.u32", RegClass::Pred, {shfl(w), "0"});
  }
  case RegClass::B16: {
    std::string w = L.opReg("cvt.u32.u16", RegClass::B32, {v});
    return L.opReg("cvt.u16.u32", RegClass::B16, {shfl(w)});
  }
  case RegClass::B32:
    return shfl(v);
  case RegClass::F32:
    return L.opReg("mov.b32", RegClass::F32, {shfl(L.opReg("mov.b32", RegClass::B32, {v}))});
  case RegClass::B64:
  case RegClass::F64: {
    std::string lo = L.b.reg(RegClass::B32), hi = L.b.reg(RegClass::B32);
    L.b.emit("mov.b64 {" + lo + ", " + hi + "}, " + v);
    std::string slo = shfl(lo), shi = shfl(hi);
    return L.opReg("mov.b64", regClassOf(d), {"{" + slo + ", " + shi + "}"});
  }
  }
  return v;
}

namespace {

// One partial result: a value and, for argmax/argmin, its index.
struct Partial {
  std::string v, i;
};

} // namespace

void Lowering::lowerReduce(const Op &op) {
  const TVal &x = val(op.operand(0));
  const Type &t = op.operand(0)->type;
  DType d = t.dtype;
  DType acc = computesInF32(d) ? DType::F32 : d;
  int axis = (int)op.intAttr("axis");
  bool isArg = op.kind == OpKind::ArgMax || op.kind == OpKind::ArgMin;
  const LinearLayout *in = x.isTensor() ? x.layout : defaultLayout(t.shape);
  TVal xv = convert(x, d, in);
  LinearLayout slice = sliceLayout(*in, axis);
  std::vector<int> map = sliceRegisterMap(*in, axis);

  auto combine = [&](const Partial &a, const Partial &c) -> Partial {
    if (!isArg) {
      OpKind k = op.kind == OpKind::ReduceSum   ? OpKind::Add
                 : op.kind == OpKind::ReduceMax ? OpKind::Max
                                                : OpKind::Min;
      return {binary(op, k, acc, a.v, c.v), ""};
    }
    bool isMax = op.kind == OpKind::ArgMax;
    std::string better = compare(isMax ? OpKind::CmpGt : OpKind::CmpLt, acc, c.v, a.v);
    std::string same = compare(OpKind::CmpEq, acc, c.v, a.v);
    std::string earlier = compare(OpKind::CmpLt, DType::I32, c.i, a.i);
    std::string tie = opReg("and.pred", RegClass::Pred, {same, earlier});
    std::string take = opReg("or.pred", RegClass::Pred, {better, tie});
    return {select(acc, take, c.v, a.v), select(DType::I32, take, c.i, a.i)};
  };

  // 1. registers along the axis, in each thread
  std::vector<Partial> parts(slice.numRegs());
  std::vector<bool> started(slice.numRegs(), false);
  for (int r = 0; r < in->numRegs(); ++r) {
    Partial p{acc == d ? xv.regs[r] : toF32(xv.regs[r], d), ""};
    if (isArg)
      p.i = elementCoord(in, axis, r);
    int j = map[r];
    parts[j] = started[j] ? combine(parts[j], p) : p;
    started[j] = true;
  }
  // 2. lanes along the axis
  for (size_t bit = 0; bit < in->lanes.size(); ++bit) {
    if (in->lanes[bit][axis] == 0)
      continue;
    for (Partial &p : parts) {
      Partial other{shuffleXor(*this, p.v, acc, 1 << bit), ""};
      if (isArg)
        other.i = shuffleXor(*this, p.i, DType::I32, 1 << bit);
      p = combine(p, other);
    }
  }
  // 3. warps along the axis, through shared memory
  std::vector<int> warpBits;
  for (size_t bit = 0; bit < in->warps.size(); ++bit)
    if (in->warps[bit][axis] != 0)
      warpBits.push_back((int)bit);
  const LinearLayout *out = intern(slice);
  if (!warpBits.empty()) {
    int64_t numel = 1;
    for (int64_t s : slice.shape)
      numel *= s;
    int64_t slots = int64_t{1} << warpBits.size();
    int vbytes = acc == DType::F64 || regClassOf(acc) == RegClass::B64 ? 8 : 4;
    int64_t valueBytes = slots * numel * vbytes;
    needShared(valueBytes + (isArg ? slots * numel * 4 : 0));
    std::string slot = b.reg(RegClass::B32);
    b.emit("mov.u32 " + slot + ", 0");
    for (size_t j = 0; j < warpBits.size(); ++j) {
      std::string bitv = opReg("bfe.u32", RegClass::B32, {warp, imm(warpBits[j]), "1"});
      bitv = opReg("shl.b32", RegClass::B32, {bitv, imm(j)});
      slot = opReg("or.b32", RegClass::B32, {slot, bitv});
    }
    std::vector<int64_t> strides(slice.rank(), 1);
    for (int dd = slice.rank() - 2; dd >= 0; --dd)
      strides[dd] = strides[dd + 1] * slice.shape[dd + 1];
    barrier();
    for (int j = 0; j < out->numRegs(); ++j) {
      SharedAddr a = sharedAddress(out, j, strides, vbytes, 0);
      std::string at = opReg("mad.lo.u32", RegClass::B32, {slot, imm(numel * vbytes), a.base});
      storeShared(SharedAddr{at, a.offset}, acc, parts[j].v);
      if (isArg) {
        SharedAddr ai = sharedAddress(out, j, strides, 4, valueBytes);
        std::string ati = opReg("mad.lo.u32", RegClass::B32, {slot, imm(numel * 4), ai.base});
        storeShared(SharedAddr{ati, ai.offset}, DType::I32, parts[j].i);
      }
    }
    barrier();
    for (int j = 0; j < out->numRegs(); ++j) {
      Partial total;
      for (int64_t s = 0; s < slots; ++s) {
        SharedAddr a = sharedAddress(out, j, strides, vbytes, s * numel * vbytes);
        Partial p{loadShared(a, acc), ""};
        if (isArg)
          p.i =
              loadShared(sharedAddress(out, j, strides, 4, valueBytes + s * numel * 4), DType::I32);
        total = s ? combine(total, p) : p;
      }
      parts[j] = total;
    }
  }
  TVal result{slice.rank() ? out : nullptr, {}};
  for (Partial &p : parts)
    result.regs.push_back(isArg ? p.i : (acc == d ? p.v : fromF32(p.v, d)));
  bind(op.result(), result);
}

void Lowering::lowerCumSum(const Op &op) {
  const Type &t = op.operand(0)->type;
  DType d = t.dtype;
  int axis = (int)op.intAttr("axis");
  bool reverse = op.intAttr("reverse") != 0;
  const LinearLayout *l = intern(lineInThreadLayout(t.shape, axis, opts.numWarps));
  TVal x = convert(val(op.operand(0)), d, l);
  int64_t n = t.shape[axis];
  TVal out{l, std::vector<std::string>(l->numRegs())};
  for (int64_t line = 0; line < l->numRegs() / n; ++line) {
    std::string sum;
    for (int64_t s = 0; s < n; ++s) {
      int64_t r = line * n + (reverse ? n - 1 - s : s);
      sum = s ? binary(op, OpKind::Add, d, sum, x.regs[r]) : x.regs[r];
      out.regs[r] = sum;
    }
  }
  bind(op.result(), out);
}

} // namespace tilec::nvidia
