// tl.dot on the tensor cores with mma.sync (sm_80+). The accumulator lives in
// the MMA layout: each warp owns a (M/warpsM) x (N/warpsN) tile made of 16x8
// instruction tiles. A goes to shared memory row-major ([M][K]) and B
// transposed ([N][K]), each row padded by 16 bytes so that ldmatrix reads
// them without bank conflicts; ldmatrix gives every operand fragment, for
// 16-, 32- and 8-bit elements alike (an 8x8 matrix of b16 is 8 rows of 16 bytes).
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

struct MmaKind {
  const char *shape = nullptr; // "m16n8k16"
  const char *types = nullptr; // "f32.f16.f16.f32"
  int kInst = 0;               // K of one instruction
  bool integer = false;
  bool tf32 = false;
};

MmaKind mmaKindOf(DType a, DType b, DType out, const std::string &precision, int arch) {
  MmaKind k;
  if (a != b)
    return k;
  if (a == DType::F16 && (out == DType::F32 || out == DType::F16))
    return {"m16n8k16", "f32.f16.f16.f32", 16};
  if (a == DType::BF16 && (out == DType::F32 || out == DType::BF16))
    return {"m16n8k16", "f32.bf16.bf16.f32", 16};
  if (a == DType::F32 && out == DType::F32 && precision == "tf32")
    return {"m16n8k8", "f32.tf32.tf32.f32", 8, false, true};
  if ((a == DType::I8 || a == DType::U8) && out == DType::I32)
    return {"m16n8k32", a == DType::I8 ? "s32.s8.s8.s32" : "s32.u8.u8.s32", 32, true};
  if (arch >= 89 && (a == DType::F8E4M3 || a == DType::F8E5M2) && out == DType::F32)
    return {"m16n8k32", a == DType::F8E4M3 ? "f32.e4m3.e4m3.f32" : "f32.e5m2.e5m2.f32", 32};
  return k;
}

struct Tiling {
  int64_t M, N, K, warpsM, warpsN, warpM, warpN;
};

Tiling tile(int64_t M, int64_t N, int64_t K, int numWarps) {
  int64_t wm = 1, wn = 1;
  while (wm * wn < numWarps) {
    int64_t unitsM = M / 16 / wm, unitsN = N / 8 / wn;
    if (unitsM >= unitsN && unitsM > 1)
      wm *= 2;
    else if (unitsN > 1)
      wn *= 2;
    else
      break;
  }
  return {M, N, K, wm, wn, M / wm, N / wn};
}

Coords rc(int64_t r, int64_t c) { return {r, c}; }

// The accumulator layout of a tiling: per warp, registers (col+1, row+8),
// then repeats along N, then along M; lanes (col 2, col 4, row 1, 2, 4).
LinearLayout accumulatorLayout(const Tiling &t, int numWarps) {
  LinearLayout l;
  l.shape = {t.M, t.N};
  l.regs = {rc(0, 1), rc(8, 0)};
  for (int64_t n = 8; n < t.warpN; n *= 2)
    l.regs.push_back(rc(0, n));
  for (int64_t m = 16; m < t.warpM; m *= 2)
    l.regs.push_back(rc(m, 0));
  l.lanes = {rc(0, 2), rc(0, 4), rc(1, 0), rc(2, 0), rc(4, 0)};
  for (int64_t w = 1; w < t.warpsM; w *= 2)
    l.warps.push_back(rc(t.warpM * w, 0));
  for (int64_t w = 1; w < t.warpsN; w *= 2)
    l.warps.push_back(rc(0, t.warpN * w));
  while ((int)(1u << l.warps.size()) < numWarps)
    l.warps.push_back(rc(0, 0));
  return l;
}

} // namespace

const LinearLayout *Lowering::mmaLayout(const Op &dot) {
  const Type &at = dot.operand(0)->type, &bt = dot.operand(1)->type, &rt = dot.result()->type;
  if (at.rank() != 2)
    return nullptr;
  MmaKind k = mmaKindOf(at.dtype, bt.dtype, rt.dtype, dot.strAttr("input_precision"), arch);
  int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1];
  if (!k.shape || M % 16 || N % 8 || K % k.kInst)
    return nullptr;
  return intern(accumulatorLayout(tile(M, N, K, opts.numWarps), opts.numWarps));
}

const LinearLayout *Lowering::preferredLayout(const Value *v, int depth) {
  const Op *def = v->def;
  if (!def || depth > 8)
    return nullptr;
  if (def->kind == OpKind::Dot)
    return mmaLayout(*def);
  if (!def->has(ELEMENTWISE))
    return nullptr;
  for (const Value *operand : def->operands)
    if (const LinearLayout *l = preferredLayout(operand, depth + 1))
      return l;
  return nullptr;
}

void Lowering::lowerMma(const Op &op, const LinearLayout *accLayout) {
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  DType in = at.dtype, out = rt.dtype;
  MmaKind kind = mmaKindOf(in, bt.dtype, out, op.strAttr("input_precision"), arch);
  int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1];
  Tiling t = tile(M, N, K, opts.numWarps);
  int bytes = dtypeBytes(in);
  int64_t rowBytes = K * bytes + 16; // padded: ldmatrix rows fall in distinct banks
  int64_t aBytes = M * rowBytes, bStart = (aBytes + 127) / 128 * 128;
  b.comment("dot " + at.str() + " x " + bt.str() + " on tensor cores (mma." + kind.shape + ")");

  // 1. The accumulator in f32 (or s32) registers of the MMA layout; first, since
  // converting it may use the shared scratch the operands are staged in.
  const TVal &c = val(op.operand(2));
  TVal cv = convert(c, out, accLayout);
  DType accType = kind.integer ? DType::I32 : DType::F32;
  std::vector<std::string> acc;
  for (const std::string &r : cv.regs) {
    std::string v = kind.integer ? r : toF32(r, out);
    std::string fresh = newReg(accType);
    b.emit(std::string("mov") + regType(regClassOf(accType)) + " " + fresh + ", " + v);
    acc.push_back(fresh);
  }

  // 2. A as [M][K] in shared memory; B as [K][N] (16-bit types, read with
  // ldmatrix.trans) or [N][K] (the others).
  bool bTrans = bytes == 2;
  int64_t bRowBytes = bTrans ? N * bytes + 16 : rowBytes;
  int64_t bRows = bTrans ? K : N;
  needShared(bStart + bRows * bRowBytes);
  barrier();
  auto element = [&](const std::string &e) { return kind.tf32 ? roundToTf32(*this, e) : e; };
  // Row-major: runs of registers contiguous along the row go out as vectors.
  auto stageRows = [&](const Value *v, int64_t start, int64_t stride) {
    const TVal &x = val(v);
    const LinearLayout *l = x.isTensor() && !x.uniform ? x.layout : defaultLayout(v->type.shape);
    TVal xv = convert(x, in, l);
    int run = std::min<int>(contiguousRegisters(*l), 16 / bytes);
    if (run * bytes < 4)
      run = 1;
    for (int r = 0; r < l->numRegs(); r += run) {
      SharedAddr a = sharedAddress(l, r, {stride / bytes, 1}, bytes, start);
      std::vector<std::string> elems;
      for (int q = 0; q < run; ++q)
        elems.push_back(element(xv.regs[r + q]));
      if (run == 1) {
        if (bytes == 1)
          b.emit("st.shared.u8 " + a.str() + ", " + elems[0]);
        else
          storeShared(a, kind.tf32 ? DType::F32 : in, elems[0]);
        continue;
      }
      std::vector<std::string> words = bytes < 4 ? packWords(*this, elems, in) : elems;
      std::string list = "{";
      for (size_t q = 0; q < words.size(); ++q)
        list += (q ? ", " : "") + words[q];
      list += "}";
      const char *ty = bytes < 4 ? ".b32" : kind.integer ? ".b32" : ".f32";
      if (words.size() == 1)
        b.emit(std::string("st.shared") + ty + " " + a.str() + ", " + words[0]);
      else
        b.emit("st.shared.v" + std::to_string(words.size()) + ty + " " + a.str() + ", " + list);
    }
  };
  // Transposed: element (k, n) of B to row n, column k, one at a time.
  auto stageTransposed = [&](const Value *v, int64_t start) {
    const TVal &x = val(v);
    const LinearLayout *l = x.isTensor() && !x.uniform ? x.layout : defaultLayout(v->type.shape);
    TVal xv = convert(x, in, l);
    std::string base = sharedBase();
    for (int r = 0; r < l->numRegs(); ++r) {
      std::string addr =
          opReg("mad.lo.u32", RegClass::B32, {elementCoord(l, 1, r), imm(rowBytes), base});
      addr = opReg("mad.lo.u32", RegClass::B32, {elementCoord(l, 0, r), imm(bytes), addr});
      SharedAddr a{addr, start};
      if (bytes == 1)
        b.emit("st.shared.u8 " + a.str() + ", " + xv.regs[r]);
      else
        storeShared(a, DType::F32, element(xv.regs[r]));
    }
  };
  // Operands a pipelined loop already copied are read where they are.
  std::string aBase = val(op.operand(0)).sharedTile, bBase = val(op.operand(1)).sharedTile;
  if (aBase.empty())
    stageRows(op.operand(0), 0, rowBytes);
  if (bBase.empty() && bTrans)
    stageRows(op.operand(1), bStart, bRowBytes);
  else if (bBase.empty())
    stageTransposed(op.operand(1), bStart);
  if (aBase.empty() || bBase.empty())
    barrier();
  else
    needShared(0);
  if (!bBase.empty())
    bStart = 0;
  if (aBase.empty())
    aBase = sharedBase();
  if (bBase.empty())
    bBase = sharedBase();

  // 3. Per K step: ldmatrix the fragments, then one mma per 16x8 tile.
  int64_t kHalf = 16 / bytes; // elements in 16 bytes
  int64_t reps = t.warpM / 16, nreps = t.warpN / 8;
  // This lane's ldmatrix row: A rows (l&7)+8*((l>>3)&1), k half (l>>4)&1;
  // B rows (n) (l&7)+8*((l>>4)&1), k half (l>>3)&1.
  std::string warpM = b.reg(RegClass::B32), warpN = b.reg(RegClass::B32);
  {
    std::string wm = opReg("and.b32", RegClass::B32, {warp, imm(t.warpsM - 1)});
    b.emit("mul.lo.u32 " + warpM + ", " + wm + ", " + imm(t.warpM));
    std::string wn = opReg("shr.u32", RegClass::B32, {warp, imm(__builtin_ctzll(t.warpsM))});
    wn = opReg("and.b32", RegClass::B32, {wn, imm(t.warpsN - 1)});
    b.emit("mul.lo.u32 " + warpN + ", " + wn + ", " + imm(t.warpN));
  }
  std::string l7 = opReg("and.b32", RegClass::B32, {lane, "7"});
  std::string bit3 = opReg("bfe.u32", RegClass::B32, {lane, "3", "1"});
  std::string bit4 = opReg("bfe.u32", RegClass::B32, {lane, "4", "1"});
  std::string aRow = opReg("mad.lo.u32", RegClass::B32, {bit3, "8", l7});
  aRow = opReg("add.u32", RegClass::B32, {aRow, warpM});
  std::string aAddr = opReg("mad.lo.u32", RegClass::B32, {aRow, imm(rowBytes), aBase});
  aAddr = opReg("mad.lo.u32", RegClass::B32, {bit4, "16", aAddr});
  std::string bAddr;
  if (bTrans) { // rows k: (l&7) + 8*((l>>3)&1); columns n: 8*((l>>4)&1)
    std::string kRow = opReg("mad.lo.u32", RegClass::B32, {bit3, "8", l7});
    bAddr = opReg("mad.lo.u32", RegClass::B32, {kRow, imm(bRowBytes), bBase});
    std::string nCol = opReg("mad.lo.u32", RegClass::B32, {bit4, "8", warpN});
    bAddr = opReg("mad.lo.u32", RegClass::B32, {nCol, imm(bytes), bAddr});
  } else { // rows n: (l&7) + 8*((l>>4)&1); k half (l>>3)&1
    std::string bRow = opReg("mad.lo.u32", RegClass::B32, {bit4, "8", l7});
    bRow = opReg("add.u32", RegClass::B32, {bRow, warpN});
    bAddr = opReg("mad.lo.u32", RegClass::B32, {bRow, imm(rowBytes), bBase});
    bAddr = opReg("mad.lo.u32", RegClass::B32, {bit3, "16", bAddr});
  }
  auto regList = [](const std::vector<std::string> &r) {
    std::string s = "{";
    for (size_t k = 0; k < r.size(); ++k)
      s += (k ? ", " : "") + r[k];
    return s + "}";
  };
  std::string mma = std::string("mma.sync.aligned.") + kind.shape + ".row.col." + kind.types;
  (void)kHalf;
  for (int64_t kk = 0; kk < K; kk += kind.kInst) {
    int64_t kByte = kk * bytes;
    std::vector<std::vector<std::string>> aFrag(reps), bFrag(nreps);
    for (int64_t i = 0; i < reps; ++i) {
      for (int q = 0; q < 4; ++q)
        aFrag[i].push_back(b.reg(RegClass::B32));
      b.emit("ldmatrix.sync.aligned.m8n8.x4.shared.b16 " + regList(aFrag[i]) + ", [" + aAddr + "+" +
             imm(i * 16 * rowBytes + kByte) + "]");
    }
    for (int64_t j = 0; j < nreps; j += 2) {
      std::vector<std::string> regs;
      int count = j + 1 < nreps ? 4 : 2;
      for (int q = 0; q < count; ++q)
        regs.push_back(b.reg(RegClass::B32));
      int64_t offset =
          bTrans ? bStart + kk * bRowBytes + j * 8 * bytes : bStart + j * 8 * rowBytes + kByte;
      b.emit(std::string("ldmatrix.sync.aligned.m8n8.x") + (count == 4 ? "4" : "2") +
             (bTrans ? ".trans" : "") + ".shared.b16 " + regList(regs) + ", [" + bAddr + "+" +
             imm(offset) + "]");
      bFrag[j] = {regs[0], regs[1]};
      if (count == 4)
        bFrag[j + 1] = {regs[2], regs[3]};
    }
    for (int64_t i = 0; i < reps; ++i)
      for (int64_t j = 0; j < nreps; ++j) {
        std::vector<std::string> d;
        for (int q = 0; q < 4; ++q)
          d.push_back(acc[(i * nreps + j) * 4 + q]);
        std::string ds = regList(d);
        b.emit(mma + " " + ds + ", " + regList(aFrag[i]) + ", " + regList(bFrag[j]) + ", " + ds);
      }
  }

  TVal result{accLayout, {}};
  for (const std::string &a : acc)
    result.regs.push_back(kind.integer ? a : fromF32(a, out));
  bind(op.result(), result);
}

} // namespace tilec::nvidia
