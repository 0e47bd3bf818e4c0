// tl.dot on the tensor cores with mma.sync (sm_80+). The accumulator lives in
// the MMA layout: each warp owns a (M/warpsM) x (N/warpsN) tile made of 16x8
// instruction tiles. A goes to shared memory as [M][K] and B as [K][N]
// (16-bit types, read with ldmatrix.trans) or [N][K] (the others), in
// swizzled shared tiles (SharedTile) that ldmatrix reads without bank
// conflicts; ldmatrix gives every operand fragment, for 16-, 32- and 8-bit
// elements alike (an 8x8 matrix of b16 is 8 rows of 16 bytes). On sm_90a,
// f16 and bf16 dots run on wgmma instead (lower_wgmma.cpp).
#include "nvidia/allocate_shared.h"
#include "nvidia/lowering.h"

#include <string_view>

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
  if (a == DType::F16 && out == DType::F16) // accumulates in f16, as Triton does
    return {"m16n8k16", "f16.f16.f16.f16", 16};
  if (a == DType::F16 && out == DType::F32)
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

OperandTiles operandTiles(const Op &dot) {
  const Type &at = dot.operand(0)->type, &bt = dot.operand(1)->type;
  int bytes = dtypeBytes(at.dtype);
  int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1];
  OperandTiles t;
  // 16-bit B goes in as [K][N] (read transposed), unless it arrives with k
  // contiguous in its registers (a K-major view): then as [N][K], as A, so
  // that its rows are copied in whole vectors.
  const LayoutEncoding *be = layoutEncoding(bt);
  bool kContiguous = be && vectorDim(be->layout) == 0 && contiguousRegisters(be->layout, 0) > 1;
  t.bKRows = bytes == 2 && !kContiguous;
  t.a = sharedTile(M, K * bytes);
  t.b = t.bKRows ? sharedTile(K, N * bytes) : sharedTile(N, K * bytes);
  return t;
}

std::shared_ptr<const LayoutEncoding> accumulatorEncoding(const Op &dot, const GpuOptions &opts) {
  if (std::optional<LinearLayout> l = wgmmaAccumulatorLayout(dot, opts))
    return std::make_shared<LayoutEncoding>("wgmma", *l);
  const Type &at = dot.operand(0)->type, &bt = dot.operand(1)->type, &rt = dot.result()->type;
  if (at.rank() != 2)
    return nullptr;
  MmaKind k = mmaKindOf(at.dtype, bt.dtype, rt.dtype, dot.strAttr("input_precision"),
                        archNumber(opts.arch));
  int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1];
  if (!k.shape || M % 16 || N % 8 || K % k.kInst)
    return nullptr;
  return std::make_shared<LayoutEncoding>(
      "mma", accumulatorLayout(tile(M, N, K, opts.numWarps), opts.numWarps));
}

const LinearLayout *Lowering::mmaLayout(const Op &dot) {
  const LayoutEncoding *e = layoutEncoding(dot.result()->type); // set by assignLayouts
  return isTensorCoreDot(dot) ? intern(e->layout) : nullptr;
}

const LinearLayout *Lowering::wgmmaLayout(const Op &dot) {
  const LayoutEncoding *e = layoutEncoding(dot.result()->type);
  return e && e->kind == "wgmma" ? intern(e->layout) : nullptr;
}

void Lowering::stageOperand(const Value *v, DType in, const SharedTile &tile, bool transposed,
                            const std::string &base, bool roundTf32) {
  const TVal &x = val(v);
  const LinearLayout *l = layoutFor(v);
  TVal xv = convert(x, in, l);
  int bytes = dtypeBytes(in);
  auto element = [&](const std::string &e) { return roundTf32 ? roundToTf32(*this, e) : e; };
  std::map<std::pair<std::string, int64_t>, std::string> cache;
  if (transposed) // element (k, n) to row n, column k: the same registers, read as [N][K]
    l = intern(transLayout(*l, {1, 0}));
  if (std::optional<MatrixAccess> m = arch >= 90 ? matrixAccess(*l, in) : std::nullopt) {
    storeMatrices(base, tile, *m, xv.regs);
    return;
  }
  // Row-major: runs of registers contiguous along the row go out as vectors
  // (a swizzle moves whole 16-byte chunks, so a run within one stays contiguous).
  TileThread th = tileThread(l, tile, bytes);
  int run = std::min<int>(contiguousRegisters(*l), 16 / bytes);
  if (run * bytes < 4)
    run = 1;
  for (int r = 0; r < l->numRegs(); r += run) {
    SharedAddr a = tileAddress(base, th, tileRegOffset(l, r, tile, bytes), cache);
    std::vector<std::string> elems;
    for (int q = 0; q < run; ++q)
      elems.push_back(element(xv.regs[r + q]));
    if (run == 1) {
      if (bytes == 1)
        b.emit("st.shared.u8 " + a.str() + ", " + elems[0]);
      else
        storeShared(a, roundTf32 ? DType::F32 : in, elems[0]);
      continue;
    }
    std::vector<std::string> words = bytes < 4 ? packWords(*this, elems, in) : elems;
    const char *ty = bytes < 4 || isInteger(in) ? ".b32" : ".f32";
    if (words.size() == 1)
      b.emit(std::string("st.shared") + ty + " " + a.str() + ", " + words[0]);
    else
      b.emit("st.shared.v" + std::to_string(words.size()) + ty + " " + a.str() + ", " +
             regList(words));
  }
}

void Lowering::lowerMma(const Op &op, const LinearLayout *accLayout) {
  if (wgmmaLayout(op)) {
    lowerWgmma(op, accLayout);
    return;
  }
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  DType in = at.dtype, out = rt.dtype;
  MmaKind kind = mmaKindOf(in, bt.dtype, out, op.strAttr("input_precision"), arch);
  int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1];
  Tiling t = tile(M, N, K, opts.numWarps);
  int bytes = dtypeBytes(in);
  OperandTiles tiles = operandTiles(op);
  b.comment("dot " + at.str() + " x " + bt.str() + " on tensor cores (mma." + kind.shape + ")");

  // 1. The accumulator in f32 (or s32) registers of the MMA layout; first, since
  // converting it may use the shared scratch the operands are staged in.
  std::vector<std::string> acc = accumulatesInPlace(op, accLayout)
                                     ? val(op.operand(2)).regs
                                     : accumulatorRegisters(op, accLayout, kind.integer);

  // 2. The operands in shared memory, unless a pipelined loop already copied them there.
  std::string aBase = stagedOperand(op, 0), bBase = stagedOperand(op, 1);
  stageOperands(op, tiles, aBase, bBase, kind.tf32);

  // 3. Per K step: ldmatrix the fragments, then one mma per 16x8 tile. Each
  // lane reads one 16-byte row of an 8x8 matrix: A rows (l&7)+8*((l>>3)&1),
  // k half (l>>4)&1; B [K][N] rows k (l&7)+8*((l>>3)&1), n half (l>>4)&1;
  // B [N][K] rows n (l&7)+8*((l>>4)&1), k half (l>>3)&1.
  int logWarpsM = __builtin_ctzll(t.warpsM), logWarpsN = __builtin_ctzll(t.warpsN);
  auto laneLayout = [&](std::vector<int64_t> shape, std::vector<Coords> lanes, bool rowsFromM,
                        int64_t warpStride, int warpDim) {
    LinearLayout l;
    l.shape = std::move(shape);
    l.lanes = std::move(lanes);
    for (int w = 0; (1 << w) < opts.numWarps; ++w) {
      bool mine = rowsFromM ? w < logWarpsM : w >= logWarpsM && w < logWarpsM + logWarpsN;
      int shift = rowsFromM ? w : w - logWarpsM;
      Coords c{0, 0};
      if (mine)
        c[warpDim] = warpStride << shift;
      l.warps.push_back(c);
    }
    return intern(l);
  };
  int64_t kHalf = 16 / bytes; // elements in 16 bytes
  const LinearLayout *aLanes =
      laneLayout({M, K}, {rc(1, 0), rc(2, 0), rc(4, 0), rc(8, 0), rc(0, kHalf)}, true, t.warpM, 0);
  const LinearLayout *bLanes =
      tiles.bKRows
          ? laneLayout({K, N}, {rc(1, 0), rc(2, 0), rc(4, 0), rc(8, 0), rc(0, 8)}, false, t.warpN, 1)
          : laneLayout({N, K}, {rc(1, 0), rc(2, 0), rc(4, 0), rc(0, kHalf), rc(8, 0)}, false,
                       t.warpN, 0);
  TileThread aThread = tileThread(aLanes, tiles.a, bytes);
  TileThread bThread = tileThread(bLanes, tiles.b, bytes);
  std::map<std::pair<std::string, int64_t>, std::string> cache;
  std::string mma = std::string("mma.sync.aligned.") + kind.shape + ".row.col." + kind.types;
  fp8MmaSync_ |= std::string_view(kind.types).find("e4m3") != std::string_view::npos ||
                 std::string_view(kind.types).find("e5m2") != std::string_view::npos;
  int64_t reps = t.warpM / 16, nreps = t.warpN / 8;
  int per = halfAccumulator(op) ? 2 : 4; // accumulator registers per 16x8 tile: f32/s32, or f16x2
  for (int64_t kk = 0; kk < K; kk += kind.kInst) {
    std::vector<std::vector<std::string>> aFrag(reps), bFrag(nreps);
    for (int64_t i = 0; i < reps; ++i) {
      for (int q = 0; q < 4; ++q)
        aFrag[i].push_back(b.reg(RegClass::B32));
      SharedAddr a = tileAddress(aBase, aThread, tiles.a.offset(i * 16, kk * bytes), cache);
      b.emit("ldmatrix.sync.aligned.m8n8.x4.shared.b16 " + regList(aFrag[i]) + ", " + a.str());
    }
    for (int64_t j = 0; j < nreps; j += 2) {
      std::vector<std::string> regs;
      int count = j + 1 < nreps ? 4 : 2;
      for (int q = 0; q < count; ++q)
        regs.push_back(b.reg(RegClass::B32));
      int64_t c = tiles.bKRows ? tiles.b.offset(kk, j * 8 * bytes) : tiles.b.offset(j * 8, kk * bytes);
      SharedAddr a = tileAddress(bBase, bThread, c, cache);
      b.emit(std::string("ldmatrix.sync.aligned.m8n8.x") + (count == 4 ? "4" : "2") +
             (tiles.bKRows ? ".trans" : "") + ".shared.b16 " + regList(regs) + ", " + a.str());
      bFrag[j] = {regs[0], regs[1]};
      if (count == 4)
        bFrag[j + 1] = {regs[2], regs[3]};
    }
    for (int64_t i = 0; i < reps; ++i)
      for (int64_t j = 0; j < nreps; ++j) {
        std::vector<std::string> d;
        for (int q = 0; q < per; ++q)
          d.push_back(acc[(i * nreps + j) * per + q]);
        std::string ds = regList(d);
        b.emit(mma + " " + ds + ", " + regList(aFrag[i]) + ", " + regList(bFrag[j]) + ", " + ds);
      }
  }
  bindAccumulator(op, accLayout, acc, kind.integer);
}

bool halfAccumulator(const Op &dot) {
  return dot.operand(0)->type.dtype == DType::F16 && dot.result()->type.dtype == DType::F16;
}

// An f32 accumulator the loop carries and only this dot reads (`acc += dot`
// in a loop) is updated in the carried registers themselves: no copy in, and
// none back at the loop's end.
bool Lowering::accumulatesInPlace(const Op &dot, const LinearLayout *accLayout) {
  const Value *acc = dot.operand(2);
  const Block *body = acc->owner;
  if (!body || body != dot.parent || acc->index == 0 || !body->parent ||
      body->parent->kind != OpKind::For || acc->type.dtype != DType::F32 ||
      dot.result()->type.dtype != DType::F32)
    return false;
  const TVal &v = val(acc);
  return useCount(uses(), acc) == 1 && v.isTensor() && !v.uniform &&
         v.sharedTile.empty() && *v.layout == *accLayout;
}

std::vector<std::string> Lowering::accumulatorRegisters(const Op &op, const LinearLayout *layout,
                                                        bool integer) {
  DType out = op.result()->type.dtype;
  TVal cv = convert(val(op.operand(2)), out, layout);
  std::vector<std::string> acc;
  if (halfAccumulator(op)) { // pairs of adjacent columns (register bit 0) packed as f16x2
    // The dot writes these registers in place, so each is a fresh one: a
    // pair split from a word (joinHalves gives the word back) may be read
    // elsewhere, or fill several pairs (a loaded row broadcast down the rows).
    for (size_t r = 0; r < cv.regs.size(); r += 2) {
      const std::string *word = splitFrom(*this, cv.regs[r], cv.regs[r + 1]);
      acc.push_back(word ? opReg("mov.b32", RegClass::B32, {*word})
                         : joinHalves(*this, cv.regs[r], cv.regs[r + 1]));
    }
    return acc;
  }
  DType accType = integer ? DType::I32 : DType::F32;
  for (const std::string &r : cv.regs) {
    std::string v = integer ? r : toF32(r, out);
    std::string fresh = newReg(accType);
    b.emit(std::string("mov") + regType(regClassOf(accType)) + " " + fresh + ", " + v);
    acc.push_back(fresh);
  }
  return acc;
}

std::string Lowering::stagedOperand(const Op &dot, int i) {
  const TVal &v = val(dot.operand(i));
  if (!v.sharedTile.empty())
    return v.sharedTile;
  auto it = residentOperands_.find({dot.operand(i), i});
  return it == residentOperands_.end() ? "" : it->second;
}

void Lowering::stageLoopInvariantOperands(const Op &forOp) {
  bool staged = false, async = false;
  std::vector<std::pair<const Op *, int>> operands = invariantOperands(forOp);
  std::vector<int64_t> offsets = forOp.intsAttr("shared_resident"); // (gpu-allocate-shared)
  for (size_t k = 0; k < operands.size() && k < offsets.size(); ++k) {
    auto [dot, i] = operands[k];
    const Value *v = dot->operand(i);
    if (offsets[k] < 0 || residentOperands_.count({v, i}))
      continue;
    const TVal &x = val(v);
    if (!x.isTensor() || x.uniform || !x.sharedTile.empty())
      continue;
    if (!staged) {
      b.comment("loop-invariant dot operands, staged once");
      bufferBarrier();
    }
    OperandTiles tiles = operandTiles(*dot);
    const SharedTile &tile = i == 0 ? tiles.a : tiles.b;
    std::string base = sharedAt(offsets[k]);
    stageOperand(v, dot->operand(0)->type.dtype, tile, i == 1 && !tiles.bKRows, base, false);
    residentOperands_[{v, i}] = base;
    residentStaged_.push_back({v, i});
    staged = true;
    async |= wgmmaLayout(*dot) != nullptr;
  }
  if (!staged)
    return;
  if (async) // the tensor cores read through the async proxy
    b.emit("fence.proxy.async.shared::cta");
  barrier();
}

void Lowering::stageOperands(const Op &op, const OperandTiles &tiles, std::string &aBase,
                             std::string &bBase, bool roundTf32, bool aInRegisters) {
  DType in = op.operand(0)->type.dtype;
  bool staged = (aBase.empty() && !aInRegisters) || bBase.empty();
  int64_t bStart = (tiles.a.bytes() + 1023) / 1024 * 1024;
  if (staged) {
    needShared(bStart + tiles.b.bytes());
    scratchBarrier();
  }
  if (aBase.empty() && !aInRegisters) {
    aBase = sharedBase();
    stageOperand(op.operand(0), in, tiles.a, false, aBase, roundTf32);
  }
  if (bBase.empty()) {
    bBase = opReg("add.u32", RegClass::B32, {sharedBase(), imm(bStart)});
    stageOperand(op.operand(1), in, tiles.b, !tiles.bKRows, bBase, roundTf32);
  }
  if (staged) {
    if (wgmmaLayout(op)) // the tensor cores read through the async proxy
      b.emit("fence.proxy.async.shared::cta");
    barrier();
  } else {
    needShared(0);
  }
}

void Lowering::bindAccumulator(const Op &op, const LinearLayout *layout,
                               const std::vector<std::string> &acc, bool integer) {
  DType out = op.result()->type.dtype;
  TVal result{layout, {}};
  if (halfAccumulator(op)) {
    for (const std::string &a : acc) {
      std::string lo = b.reg(RegClass::B16), hi = b.reg(RegClass::B16);
      b.emit("mov.b32 " + regList({lo, hi}) + ", " + a);
      result.regs.push_back(lo);
      result.regs.push_back(hi);
    }
    bind(op.result(), result);
    return;
  }
  for (const std::string &a : acc)
    result.regs.push_back(integer ? a : fromF32(a, out));
  bind(op.result(), result);
}

} // namespace tilec::nvidia
