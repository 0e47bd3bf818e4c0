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

std::string shuffle(Lowering &L, const std::string &v, DType d, const char *mode, int k) {
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

// The reduction of k values per element (elems[r]: register r's values in
// layout `in`, of `types`) along `axis` with `combine`: registers along the
// axis in each thread, then lanes with butterfly shuffles, then warps through
// shared memory. Returns the values per register of the slice layout (`out`).
std::vector<Lowering::Values>
Lowering::reduceAlong(const LinearLayout *in, int axis, const std::vector<Values> &elems,
                      const std::vector<DType> &types, const CombineValues &combine,
                      const LinearLayout *&out) {
  size_t k = types.size();
  LinearLayout slice = sliceLayout(*in, axis);
  std::vector<int> map = sliceRegisterMap(*in, axis);
  // 1. registers along the axis, in each thread
  std::vector<Values> parts(slice.numRegs());
  for (int r = 0; r < in->numRegs(); ++r) {
    int j = map[r];
    parts[j] = parts[j].empty() ? elems[r] : combine(parts[j], elems[r]);
  }
  // 2. lanes along the axis
  for (size_t bit = 0; bit < in->lanes.size(); ++bit) {
    if (in->lanes[bit][axis] == 0)
      continue;
    for (Values &p : parts) {
      Values other;
      for (size_t i = 0; i < k; ++i)
        other.push_back(shuffleXor(*this, p[i], types[i], 1 << bit));
      p = combine(p, other);
    }
  }
  // 3. warps along the axis, through shared memory: slot s holds warp s's partials
  std::vector<int> warpBits;
  for (size_t bit = 0; bit < in->warps.size(); ++bit)
    if (in->warps[bit][axis] != 0)
      warpBits.push_back((int)bit);
  out = intern(slice);
  if (warpBits.empty())
    return parts;
  int64_t numel = 1;
  for (int64_t s : slice.shape)
    numel *= s;
  int64_t slots = int64_t{1} << warpBits.size();
  std::vector<int64_t> start(k + 1, 0); // where each value's slots begin
  for (size_t i = 0; i < k; ++i)
    start[i + 1] = start[i] + slots * numel * storageBytes(types[i]);
  needShared(start[k]);
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
  scratchBarrier();
  for (int j = 0; j < out->numRegs(); ++j)
    for (size_t i = 0; i < k; ++i) {
      int bytes = storageBytes(types[i]);
      SharedAddr a = sharedAddress(out, j, strides, bytes, start[i]);
      std::string at = opReg("mad.lo.u32", RegClass::B32, {slot, imm(numel * bytes), a.base});
      storeShared(SharedAddr{at, a.offset}, types[i], parts[j][i]);
    }
  barrier();
  for (int j = 0; j < out->numRegs(); ++j) {
    Values total;
    for (int64_t s = 0; s < slots; ++s) {
      Values p;
      for (size_t i = 0; i < k; ++i) {
        int bytes = storageBytes(types[i]);
        p.push_back(loadShared(sharedAddress(out, j, strides, bytes, start[i] + s * numel * bytes),
                               types[i]));
      }
      total = s ? combine(total, p) : p;
    }
    parts[j] = total;
  }
  return parts;
}

void Lowering::lowerReduce(const Op &op) {
  const TVal &x = val(op.operand(0));
  const Type &t = op.operand(0)->type;
  DType d = t.dtype;
  DType acc = computesInF32(d) ? DType::F32 : d;
  int axis = (int)op.intAttr("axis");
  bool isArg = op.kind == OpKind::ArgMax || op.kind == OpKind::ArgMin;
  const LinearLayout *in = layoutFor(op.operand(0));
  TVal xv = convert(x, d, in);
  // Each element: its value (in f32 for narrower floats) and, for argmax/argmin, its index.
  std::vector<DType> types = {acc};
  if (isArg)
    types.push_back(DType::I32);
  std::vector<Values> elems;
  for (int r = 0; r < in->numRegs(); ++r) {
    elems.push_back({acc == d ? xv.regs[r] : toF32(xv.regs[r], d)});
    if (isArg)
      elems.back().push_back(elementCoord(in, axis, r));
  }
  auto combine = [&](const Values &a, const Values &c) -> Values {
    if (!isArg) {
      OpKind k = op.kind == OpKind::ReduceSum   ? OpKind::Add
                 : op.kind == OpKind::ReduceMax ? OpKind::Max
                                                : OpKind::Min;
      return {binary(op, k, acc, a[0], c[0])};
    }
    bool isMax = op.kind == OpKind::ArgMax;
    std::string better = compare(isMax ? OpKind::CmpGt : OpKind::CmpLt, acc, c[0], a[0]);
    std::string same = compare(OpKind::CmpEq, acc, c[0], a[0]);
    std::string earlier = compare(OpKind::CmpLt, DType::I32, c[1], a[1]);
    std::string tie = opReg("and.pred", RegClass::Pred, {same, earlier});
    std::string take = opReg("or.pred", RegClass::Pred, {better, tie});
    return {select(acc, take, c[0], a[0]), select(DType::I32, take, c[1], a[1])};
  };
  const LinearLayout *out = nullptr;
  std::vector<Values> parts = reduceAlong(in, axis, elems, types, combine, out);
  TVal result{out->rank() ? out : nullptr, {}};
  for (Values &p : parts)
    result.regs.push_back(isArg ? p[1] : (acc == d ? p[0] : fromF32(p[0], d)));
  bind(op.result(), result);
}

// The combine region of `op` on registers: its ops lowered on scalars bound to
// the lhs and rhs values; the yielded registers.
Lowering::Values Lowering::combineRegion(const Op &op, const Values &lhs, const Values &rhs) {
  const Block &body = *op.regions[0];
  size_t k = lhs.size();
  for (size_t i = 0; i < k; ++i) {
    bind(body.args[i].get(), TVal{nullptr, {lhs[i]}});
    bind(body.args[k + i].get(), TVal{nullptr, {rhs[i]}});
  }
  for (const auto &inner : body.ops) {
    if (inner->kind == OpKind::Yield) {
      Values out;
      for (const Value *v : inner->operands)
        out.push_back(val(v).regs[0]);
      return out;
    }
    lowerOp(*inner);
  }
  return {};
}

// Every operand of a reduce_with or scan_with in layout `l`: register r's
// values, one per operand; and their types.
static std::vector<Lowering::Values> operandValues(Lowering &L, const Op &op,
                                                   const LinearLayout *l,
                                                   std::vector<DType> &types) {
  std::vector<Lowering::Values> v(l->numRegs());
  for (const Value *x : op.operands) {
    types.push_back(x->type.dtype);
    TVal t = L.materialize(x, l);
    for (int r = 0; r < l->numRegs(); ++r)
      v[r].push_back(t.regs[r]);
  }
  return v;
}

// Result i of `op` from value i of each register in layout `l` (null: a scalar).
static void bindResults(Lowering &L, const Op &op, const LinearLayout *l,
                        const std::vector<Lowering::Values> &v) {
  for (size_t i = 0; i < op.results.size(); ++i) {
    TVal out{l, {}};
    for (const Lowering::Values &s : v)
      out.regs.push_back(s[i]);
    L.bind(op.result((int)i), out);
  }
}

void Lowering::lowerReduceWith(const Op &op) {
  const LinearLayout *in = layoutFor(op.operand(0));
  std::vector<DType> types;
  std::vector<Values> elems = operandValues(*this, op, in, types);
  auto combine = [&](const Values &a, const Values &c) { return combineRegion(op, a, c); };
  const LinearLayout *out = nullptr;
  std::vector<Values> parts =
      reduceAlong(in, (int)op.intAttr("axis"), elems, types, combine, out);
  bindResults(*this, op, out->rank() ? out : nullptr, parts);
}

// An inclusive scan of k values per element (elems[r]: register r's values in
// scanLayout `l`) along `axis` with `combine` (combine(earlier, later); from
// the end when reversed). Returns the values per register.
std::vector<Lowering::Values> Lowering::scanAlong(const LinearLayout *l, int axis, bool reverse,
                                                  std::vector<Values> v,
                                                  const std::vector<DType> &types,
                                                  const CombineValues &combine) {
  size_t k = types.size();
  auto bitsAlong = [&](const std::vector<Coords> &bases) {
    int n = 0;
    while (n < (int)bases.size() && bases[n][axis] != 0)
      ++n;
    return n;
  };
  int run = 1 << bitsAlong(l->regs), laneBits = bitsAlong(l->lanes),
      warpBits = bitsAlong(l->warps);
  int groups = l->numRegs() / run;
  auto choose = [&](const std::string &p, const Values &a, const Values &c) {
    Values out;
    for (size_t i = 0; i < k; ++i)
      out.push_back(select(types[i], p, a[i], c[i]));
    return out;
  };
  auto shuffled = [&](const Values &a, const char *mode, int delta) {
    Values out;
    for (size_t i = 0; i < k; ++i)
      out.push_back(shuffle(*this, a[i], types[i], mode, delta));
    return out;
  };

  // 1. each thread's run, in order (from its end when reversed)
  for (int g = 0; g < groups; ++g)
    for (int s = 1; s < run; ++s) {
      int r = g * run + (reverse ? run - 1 - s : s), prev = reverse ? r + 1 : r - 1;
      v[r] = combine(v[prev], v[r]);
    }
  std::vector<Values> prefix(groups); // what the runs before this one combine to
  std::string hasPrefix;              // whether there are any
  // 2. lanes along the line: inclusive scan of the runs' totals, then the one before
  if (laneBits > 0) {
    int lanesAlong = 1 << laneBits;
    std::string laneAt = opReg("and.b32", RegClass::B32, {lane, imm(lanesAlong - 1)});
    const char *mode = reverse ? "down" : "up";
    std::vector<Values> incl(groups);
    for (int g = 0; g < groups; ++g)
      incl[g] = v[g * run + (reverse ? 0 : run - 1)];
    for (int d = 1; d < lanesAlong; d *= 2) {
      std::string ok = reverse ? opReg("setp.lt.u32", RegClass::Pred, {laneAt, imm(lanesAlong - d)})
                               : opReg("setp.ge.u32", RegClass::Pred, {laneAt, imm(d)});
      for (int g = 0; g < groups; ++g)
        incl[g] = choose(ok, combine(shuffled(incl[g], mode, d), incl[g]), incl[g]);
    }
    hasPrefix = reverse ? opReg("setp.lt.u32", RegClass::Pred, {laneAt, imm(lanesAlong - 1)})
                        : opReg("setp.ge.u32", RegClass::Pred, {laneAt, "1"});
    for (int g = 0; g < groups; ++g)
      prefix[g] = shuffled(incl[g], mode, 1);

    // 3. warps along the line: each warp's total (its last lane's) through shared memory
    if (warpBits > 0) {
      int slots = 1 << warpBits;
      std::vector<int64_t> at(k + 1, 0); // where each value's totals begin, per line
      for (size_t i = 0; i < k; ++i)
        at[i + 1] = at[i] + (int64_t)slots * storageBytes(types[i]);
      int64_t lines = 1;
      for (int dim = 0; dim < l->rank(); ++dim)
        if (dim != axis)
          lines *= l->shape[dim];
      needShared(lines * at[k]);
      std::string warpAt = opReg("and.b32", RegClass::B32, {warp, imm(slots - 1)});
      std::string last = opReg("setp.eq.u32", RegClass::Pred,
                               {laneAt, imm(reverse ? 0 : lanesAlong - 1)});
      std::vector<std::string> lineAddr(groups);
      for (int g = 0; g < groups; ++g) {
        std::string line = constantReg(DType::I32, 0, 0);
        for (int dim = 0; dim < l->rank(); ++dim)
          if (dim != axis && l->shape[dim] > 1)
            line = opReg("mad.lo.u32", RegClass::B32,
                         {line, imm(l->shape[dim]), elementCoord(l, dim, g * run)});
        lineAddr[g] = opReg("mad.lo.u32", RegClass::B32, {line, imm(at[k]), sharedBase()});
      }
      b.comment("scan: the warps' totals");
      scratchBarrier();
      std::string skip = b.newLabel("scan_totals");
      b.emit("@!" + last + " bra " + skip);
      for (int g = 0; g < groups; ++g)
        for (size_t i = 0; i < k; ++i) {
          int bytes = storageBytes(types[i]);
          std::string a = opReg("mad.lo.u32", RegClass::B32, {warpAt, imm(bytes), lineAddr[g]});
          storeShared(SharedAddr{a, at[i]}, types[i], incl[g][i]);
        }
      b.label(skip);
      barrier();
      std::string before = b.reg(RegClass::Pred); // any warp before this one
      b.emit("setp.ne.u32 " + before + ", 0, 0");
      std::vector<Values> warpSum(groups);
      for (int n = 0; n < slots; ++n) { // in the line's order
        int s = reverse ? slots - 1 - n : n;
        // slot s comes before this warp: s < warpAt (from the end: s > warpAt)
        std::string take = reverse ? opReg("setp.lt.u32", RegClass::Pred, {warpAt, imm(s)})
                                   : opReg("setp.gt.u32", RegClass::Pred, {warpAt, imm(s)});
        for (int g = 0; g < groups; ++g) {
          Values total;
          for (size_t i = 0; i < k; ++i)
            total.push_back(loadShared(
                SharedAddr{lineAddr[g], at[i] + (int64_t)s * storageBytes(types[i])}, types[i]));
          if (warpSum[g].empty()) {
            warpSum[g] = total;
            continue;
          }
          Values sum = choose(before, combine(warpSum[g], total), total);
          warpSum[g] = choose(take, sum, warpSum[g]);
        }
        before = opReg("or.pred", RegClass::Pred, {before, take});
      }
      for (int g = 0; g < groups; ++g)
        prefix[g] = choose(hasPrefix, choose(before, combine(warpSum[g], prefix[g]), prefix[g]),
                           warpSum[g]);
      hasPrefix = opReg("or.pred", RegClass::Pred, {hasPrefix, before});
    }
  }
  // 4. each element: the runs before its own, then its own run up to it
  if (!hasPrefix.empty())
    for (int r = 0; r < l->numRegs(); ++r)
      v[r] = choose(hasPrefix, combine(prefix[r / run], v[r]), v[r]);
  return v;
}

void Lowering::lowerCumSum(const Op &op) {
  const Type &t = op.operand(0)->type;
  DType d = t.dtype, acc = computesInF32(d) ? DType::F32 : d;
  int axis = (int)op.intAttr("axis");
  const LinearLayout *l = layoutFor(op.result()); // the scan layout
  TVal x = convert(val(op.operand(0)), d, l);
  std::vector<Values> v;
  for (const std::string &r : x.regs)
    v.push_back({acc == d ? r : toF32(r, d)});
  auto add = [&](const Values &a, const Values &c) -> Values {
    return {binary(op, OpKind::Add, acc, a[0], c[0])};
  };
  v = scanAlong(l, axis, op.intAttr("reverse") != 0, v, {acc}, add);
  TVal out{l, {}};
  for (const Values &s : v)
    out.regs.push_back(acc == d ? normalize(s[0], d) : fromF32(s[0], d));
  bind(op.result(), out);
}

void Lowering::lowerScanWith(const Op &op) {
  int axis = (int)op.intAttr("axis");
  const LinearLayout *l = layoutFor(op.result()); // the scan layout
  std::vector<DType> types;
  std::vector<Values> v = operandValues(*this, op, l, types);
  auto combine = [&](const Values &a, const Values &c) { return combineRegion(op, a, c); };
  bindResults(*this, op, l, scanAlong(l, axis, op.intAttr("reverse") != 0, v, types, combine));
}

} // namespace tilec::nvidia
