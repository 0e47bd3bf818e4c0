// Reductions and scans. A reduction combines registers along the axis in
// each thread, then lanes with butterfly shuffles, then warps through shared
// memory; its result lives in the slice of the operand's layout. A scan runs
// in scanLayout: each thread scans its run of the line, lanes scan the runs'
// totals with shuffles (Hillis-Steele), warps add the totals of the warps
// before them through shared memory.
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool computesInF32(DType d) { return isFloat(d) && d != DType::F32 && d != DType::F64; }

} // namespace

// `v` from another lane: shfl.sync in `mode` (bfly: lane ^ k; up: lane - k;
// down: lane + k; a lane past the warp keeps its own value).
static std::string shuffle(Lowering &L, const std::string &v, DType d, const char *mode, int k) {
  std::string clamp = std::string(mode) == "up" ? "0" : "31";
  auto shfl = [&](const std::string &w) {
    return L.opReg(std::string("shfl.sync.") + mode + ".b32", RegClass::B32,
                   {w, imm(k), clamp, "-1"});
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

static std::string shuffleXor(Lowering &L, const std::string &v, DType d, int mask) {
  return shuffle(L, v, d, "bfly", mask);
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
  DType d = t.dtype, acc = computesInF32(d) ? DType::F32 : d;
  int axis = (int)op.intAttr("axis");
  bool reverse = op.intAttr("reverse") != 0;
  const LinearLayout *l = intern(scanLayout(t.shape, axis, opts.numWarps));
  TVal x = convert(val(op.operand(0)), d, l);
  auto bitsAlong = [&](const std::vector<Coords> &bases) {
    int n = 0;
    while (n < (int)bases.size() && bases[n][axis] != 0)
      ++n;
    return n;
  };
  int run = 1 << bitsAlong(l->regs), laneBits = bitsAlong(l->lanes),
      warpBits = bitsAlong(l->warps);
  int groups = l->numRegs() / run;
  auto add = [&](const std::string &a, const std::string &c) {
    return binary(op, OpKind::Add, acc, a, c);
  };
  std::vector<std::string> v;
  for (const std::string &r : x.regs)
    v.push_back(acc == d ? r : toF32(r, d));

  // 1. each thread's run, in order (from its end when reversed)
  for (int g = 0; g < groups; ++g)
    for (int s = 1; s < run; ++s) {
      int r = g * run + (reverse ? run - 1 - s : s), prev = reverse ? r + 1 : r - 1;
      v[r] = add(v[prev], v[r]);
    }
  std::vector<std::string> prefix(groups); // what the runs before this one add up to
  std::string hasPrefix;                    // whether there are any
  // 2. lanes along the line: inclusive scan of the runs' totals, then the one before
  if (laneBits > 0) {
    int lanesAlong = 1 << laneBits;
    std::string laneAt = opReg("and.b32", RegClass::B32, {lane, imm(lanesAlong - 1)});
    const char *mode = reverse ? "down" : "up";
    std::vector<std::string> incl(groups);
    for (int g = 0; g < groups; ++g)
      incl[g] = v[g * run + (reverse ? 0 : run - 1)];
    for (int k = 1; k < lanesAlong; k *= 2) {
      std::string ok = reverse ? opReg("setp.lt.u32", RegClass::Pred, {laneAt, imm(lanesAlong - k)})
                               : opReg("setp.ge.u32", RegClass::Pred, {laneAt, imm(k)});
      for (int g = 0; g < groups; ++g)
        incl[g] = select(acc, ok, add(shuffle(*this, incl[g], acc, mode, k), incl[g]), incl[g]);
    }
    hasPrefix = reverse ? opReg("setp.lt.u32", RegClass::Pred, {laneAt, imm(lanesAlong - 1)})
                        : opReg("setp.ge.u32", RegClass::Pred, {laneAt, "1"});
    for (int g = 0; g < groups; ++g)
      prefix[g] = shuffle(*this, incl[g], acc, mode, 1);

    // 3. warps along the line: each warp's total (its last lane's) through shared memory
    if (warpBits > 0) {
      int slots = 1 << warpBits, bytes = storageBytes(acc);
      int64_t lines = 1;
      for (int dim = 0; dim < t.rank(); ++dim)
        if (dim != axis)
          lines *= t.shape[dim];
      needShared(lines * slots * bytes);
      std::string warpAt = opReg("and.b32", RegClass::B32, {warp, imm(slots - 1)});
      std::string last = opReg("setp.eq.u32", RegClass::Pred,
                               {laneAt, imm(reverse ? 0 : lanesAlong - 1)});
      std::vector<std::string> lineAddr(groups);
      for (int g = 0; g < groups; ++g) {
        std::string line = constantReg(DType::I32, 0, 0);
        for (int dim = 0; dim < t.rank(); ++dim)
          if (dim != axis && t.shape[dim] > 1)
            line = opReg("mad.lo.u32", RegClass::B32,
                         {line, imm(t.shape[dim]), elementCoord(l, dim, g * run)});
        lineAddr[g] = opReg("mad.lo.u32", RegClass::B32,
                            {line, imm((int64_t)slots * bytes), sharedBase()});
      }
      b.comment("scan: the warps' totals");
      barrier();
      std::string skip = b.newLabel("scan_totals");
      b.emit("@!" + last + " bra " + skip);
      for (int g = 0; g < groups; ++g)
        storeShared(SharedAddr{opReg("mad.lo.u32", RegClass::B32, {warpAt, imm(bytes), lineAddr[g]}),
                               0},
                    acc, incl[g]);
      b.label(skip);
      barrier();
      std::string before = b.reg(RegClass::Pred); // any warp before this one
      b.emit("setp.ne.u32 " + before + ", 0, 0");
      std::vector<std::string> warpSum(groups);
      for (int i = 0; i < slots; ++i) { // in the line's order
        int s = reverse ? slots - 1 - i : i;
        // slot s comes before this warp: s < warpAt (from the end: s > warpAt)
        std::string take = reverse ? opReg("setp.lt.u32", RegClass::Pred, {warpAt, imm(s)})
                                   : opReg("setp.gt.u32", RegClass::Pred, {warpAt, imm(s)});
        for (int g = 0; g < groups; ++g) {
          std::string total = loadShared(SharedAddr{lineAddr[g], (int64_t)s * bytes}, acc);
          std::string sum = warpSum[g].empty() ? total
                                               : select(acc, before, add(warpSum[g], total), total);
          warpSum[g] = warpSum[g].empty() ? select(acc, take, total, total)
                                          : select(acc, take, sum, warpSum[g]);
        }
        before = opReg("or.pred", RegClass::Pred, {before, take});
      }
      for (int g = 0; g < groups; ++g)
        prefix[g] = select(acc, hasPrefix,
                           select(acc, before, add(warpSum[g], prefix[g]), prefix[g]), warpSum[g]);
      hasPrefix = opReg("or.pred", RegClass::Pred, {hasPrefix, before});
    }
  }
  // 4. each element: the runs before its own, then its own run up to it
  TVal out{l, std::vector<std::string>(l->numRegs())};
  for (int r = 0; r < l->numRegs(); ++r) {
    std::string s = v[r];
    if (!hasPrefix.empty())
      s = select(acc, hasPrefix, add(prefix[r / run], s), s);
    out.regs[r] = acc == d ? normalize(s, d) : fromF32(s, d);
  }
  bind(op.result(), out);
}

} // namespace tilec::nvidia
