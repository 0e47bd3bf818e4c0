// tl.dot on Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a) for
// f16, bf16 (k 16), tf32 (f32 operands with input_precision "tf32", k 8; f32
// accumulator) and fp8 e4m3/e5m2 (k 32, f32 accumulator); 8-bit integer dots
// stay on mma.sync, measured faster than synchronous wgmma. A warpgroup (4
// consecutive warps) multiplies a 64 x n tile per instruction, reading A
// ([M][K], K-major; or, 8- and 16-bit, from registers) and B ([K][N],
// N-major, or [N][K], K-major; other than 16-bit only K-major) from the same
// swizzled shared tiles mma.sync reads (SharedTile is wgmma's canonical
// layout), described by 64-bit matrix descriptors. Warpgroups split M first,
// then N; the accumulator layout is the instruction's: in each warp the 16x8
// pattern of mma.sync, repeated along n, warp w of a group on rows 16w.
#include <cstdio>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

struct WgmmaTiling {
  int64_t M, N, K;
  int64_t groupsM, groupsN; // warpgroups along M and N
  int64_t groupN;           // columns per warpgroup
  int64_t instrN;           // n of one instruction (at most 256)
  int64_t instrK;           // k of one instruction: 32 bytes of A's row
};

bool isFp8(DType d) { return d == DType::F8E4M3 || d == DType::F8E5M2; }

const char *wgmmaType(DType d) {
  switch (d) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "tf32";
  case DType::F8E4M3:
    return "e4m3";
  default:
    return "e5m2";
  }
}

// Whether wgmma can run the dot and how warpgroups split it; M == 0 when not.
WgmmaTiling wgmmaTiling(const Op &dot, const GpuOptions &opts) {
  WgmmaTiling t{};
  const Type &at = dot.operand(0)->type, &bt = dot.operand(1)->type, &rt = dot.result()->type;
  bool half = (at.dtype == DType::F16 || at.dtype == DType::BF16) && at.dtype == bt.dtype &&
              (rt.dtype == DType::F32 || rt.dtype == at.dtype);
  bool fp8 = isFp8(at.dtype) && isFp8(bt.dtype) && rt.dtype == DType::F32;
  bool tf32 = at.dtype == DType::F32 && bt.dtype == DType::F32 && rt.dtype == DType::F32 &&
              dot.strAttr("input_precision") == "tf32";
  if (opts.arch != "sm_90a" || at.rank() != 2 || !(half || fp8 || tf32) || opts.numWarps % 4)
    return t;
  int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1], groups = opts.numWarps / 4;
  int64_t instrK = 32 / dtypeBytes(at.dtype);
  if (M % 64 || K % instrK || N < 16)
    return t;
  int64_t groupsM = std::min(groups, M / 64), groupsN = groups / groupsM;
  int64_t groupN = N / groupsN;
  // A warpgroup's columns of B ([K][N], 16-bit) start at a whole swizzle block.
  if (groupN < 8 || (half && (groupN * 2) % sharedTile(K, N * 2).swizzle))
    return t;
  return {M, N, K, groupsM, groupsN, groupN, std::min<int64_t>(groupN, 256), instrK};
}

Coords rc(int64_t r, int64_t c) { return {r, c}; }

// Registers: (col+1, row+8), the n8 blocks of a group's columns, then the
// repeats along M; lanes as in mma.sync; warps: rows 16 and 32 within a
// group, then groups along M, then along N.
LinearLayout wgmmaAccumulator(const WgmmaTiling &t) {
  LinearLayout l;
  l.shape = {t.M, t.N};
  l.regs = {rc(0, 1), rc(8, 0)};
  for (int64_t n = 8; n < t.groupN; n *= 2)
    l.regs.push_back(rc(0, n));
  for (int64_t m = 64 * t.groupsM; m < t.M; m *= 2)
    l.regs.push_back(rc(m, 0));
  l.lanes = {rc(0, 2), rc(0, 4), rc(1, 0), rc(2, 0), rc(4, 0)};
  l.warps = {rc(16, 0), rc(32, 0)};
  for (int64_t g = 1; g < t.groupsM; g *= 2)
    l.warps.push_back(rc(64 * g, 0));
  for (int64_t g = 1; g < t.groupsN; g *= 2)
    l.warps.push_back(rc(0, t.groupN * g));
  return l;
}

int swizzleMode(int swizzle) { return swizzle == 128 ? 1 : swizzle == 64 ? 2 : 3; }

// A's registers as wgmma takes them from registers, when A (a value in
// registers) lies in the layout of an accumulator of A's shape; empty
// otherwise. Per k step and repeat along M, four b32 registers: rows g and
// g+8 of the warp's 16 (lane = 4g + t), first of the step's lower half of
// columns, then of its upper half. 16-bit A holds columns 2t, 2t+1 (then 8
// on), as the accumulator does: pairs of its registers. 8-bit A holds 4t..4t+3
// (then 16 on); the accumulator gives lane t columns 2t, 2t+1 of each 8, so
// each register gathers two pairs from lanes 2(t&1) and 2(t&1)+1 of the quad.
std::vector<std::string> registerOperandA(Lowering &L, const Op &op, const WgmmaTiling &t) {
  const TVal &a = L.val(op.operand(0));
  if (dtypeBytes(op.operand(0)->type.dtype) == 4)
    return {}; // (tf32 A from registers holds columns t and t+4: not an accumulator's pairs)
  WgmmaTiling asAcc = t;
  asAcc.N = asAcc.groupN = t.K;
  if (!a.isTensor() || a.uniform || !a.sharedTile.empty() ||
      *a.layout != wgmmaAccumulator(asAcc))
    return {};
  std::vector<std::string> words;
  if (dtypeBytes(op.operand(0)->type.dtype) == 2) {
    for (size_t r = 0; r + 1 < a.regs.size(); r += 2)
      words.push_back(joinHalves(L, a.regs[r], a.regs[r + 1]));
    return words;
  }
  // Registers of the accumulator layout: (col+1, row+8, then 8-column blocks
  // along K, then repeats along M). pairs(h, j): the two bytes of row half h,
  // block j, packed into the low half of a b32.
  auto reg = [&](int64_t rep, int64_t h, int64_t j, int c) {
    return a.regs[rep * 2 * t.K / 8 * 2 + j * 4 + h * 2 + c];
  };
  std::string quad = L.opReg("and.b32", RegClass::B32, {L.lane, imm(~3)});
  std::string odd = L.opReg("and.b32", RegClass::B32, {L.lane, "1"});
  std::string from0 = L.opReg("mad.lo.u32", RegClass::B32, {odd, "2", quad});
  std::string from1 = L.opReg("or.b32", RegClass::B32, {from0, "1"});
  // Lanes t >= 2 take the pairs of the odd block of each word.
  std::string high = L.opReg("setp.gt.u32", RegClass::Pred,
                             {L.opReg("and.b32", RegClass::B32, {L.lane, "3"}), "1"});
  std::string select = L.opReg("selp.b32", RegClass::B32, {"0x7632", "0x5410", high});
  for (int64_t rep = 0; rep < t.M / (64 * t.groupsM); ++rep)
    for (int64_t kk = 0; kk < t.K; kk += 32)
      for (int64_t q = 0; q < 2; ++q)
        for (int64_t h = 0; h < 2; ++h) {
          // Bytes: pair of block kk/8 + 2q, then pair of the next block.
          int64_t j = kk / 8 + 2 * q;
          std::string x = L.opReg("mov.b32", RegClass::B32,
                                  {"{" + reg(rep, h, j, 0) + ", " + reg(rep, h, j, 1) + "}"});
          std::string y = L.opReg("mov.b32", RegClass::B32,
                                  {"{" + reg(rep, h, j + 1, 0) + ", " + reg(rep, h, j + 1, 1) + "}"});
          std::string w = L.opReg("prmt.b32", RegClass::B32, {x, y, "0x6420"});
          std::string s0 = L.opReg("shfl.sync.idx.b32", RegClass::B32, {w, from0, "31", "-1"});
          std::string s1 = L.opReg("shfl.sync.idx.b32", RegClass::B32, {w, from1, "31", "-1"});
          words.push_back(L.opReg("prmt.b32", RegClass::B32, {s0, s1, select}));
        }
  return words;
}

} // namespace

std::optional<LinearLayout> wgmmaAccumulatorLayout(const Op &dot, const GpuOptions &opts) {
  WgmmaTiling t = wgmmaTiling(dot, opts);
  if (!t.M)
    return std::nullopt;
  return wgmmaAccumulator(t);
}

// `v` before the layout conversions it went through (a constant's cost nothing).
static const Value *throughConversions(const Value *v) {
  while (v->def && v->def->kind == OpKind::ConvertLayout)
    v = v->def->operand(0);
  return v;
}

void Lowering::lowerWgmma(const Op &op, const LinearLayout *accLayout) {
  WgmmaTiling t = wgmmaTiling(op, opts);
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type;
  int bytes = dtypeBytes(at.dtype);
  bool tf32 = at.dtype == DType::F32;
  OperandTiles tiles = operandTiles(op);
  b.comment("dot " + at.str() + " x " + bt.str() + " on warpgroup tensor cores (wgmma)");

  Pipeline *async = asyncPipeline(op);
  std::string aBase = stagedOperand(op, 0), bBase = stagedOperand(op, 1);
  // A computed in registers (attention's p) is read from them when it already
  // lies as wgmma reads A: each warpgroup holds whole rows of it.
  std::vector<std::string> aRegs;
  if (aBase.empty() && t.groupsN == 1)
    aRegs = registerOperandA(*this, op, t);
  // A deferred dot runs on past this op: only when it reads no scratch tile.
  Pipeline *deferring = deferringPipeline(op);
  bool deferred = deferring && (!aBase.empty() || !aRegs.empty()) && !bBase.empty();
  // In a pipelined loop the accumulator stays where the loop carries it.
  std::vector<std::string> acc;
  bool fromZero = false; // D = A*B, in fresh registers the first k step does not read
  // fp8 products summed in spans of k, each added in f32 (max_num_imprecise_acc).
  const int64_t span = impreciseSumSpan(op);
  // f32 accumulators, one register per element, or f16 ones packed two to a register.
  bool half = halfAccumulator(op);
  if (async) { // (a reset accumulator: the registers the loop carries)
    acc = val(async->reset ? op.operand(2)->def->operand(2) : op.operand(2)).regs;
  } else if (deferred) {
    acc = val(op.parent->args[deferring->deferred[&op] + 1].get()).regs;
    TVal init = convert(val(op.operand(2)), DType::F32, accLayout);
    for (size_t r = 0; r < acc.size(); ++r)
      if (init.regs[r] != acc[r])
        b.emit("mov.f32 " + acc[r] + ", " + init.regs[r]);
  } else if (accumulatesInPlace(op, accLayout)) {
    acc = val(op.operand(2)).regs;
  } else if ((fromZero = !span && isZeroConstant(throughConversions(op.operand(2))))) {
    for (int64_t r = 0; r < accLayout->numRegs() / (half ? 2 : 1); ++r)
      acc.push_back(b.reg(half ? RegClass::B32 : RegClass::F32));
  } else {
    acc = accumulatorRegisters(op, accLayout, false);
  }
  // (tf32 staged here is rounded to nearest, as the CPU backend rounds it;
  // tiles a pipeline copied reach wgmma raw, which truncates, as Triton's do.)
  stageOperands(op, tiles, aBase, bBase, tf32, !aRegs.empty());

  // This warpgroup's first row of A and first column of B.
  std::string group = opReg("shr.u32", RegClass::B32, {warp, "2"});
  std::string gm = opReg("and.b32", RegClass::B32, {group, imm(t.groupsM - 1)});
  std::string gn = opReg("shr.u32", RegClass::B32, {group, imm(__builtin_ctzll(t.groupsM))});
  // Rows are multiples of 64 and columns of a swizzle block: plain offsets.
  std::string aStart =
      aRegs.empty() ? opReg("mad.lo.u32", RegClass::B32, {gm, imm(tiles.a.offset(64, 0)), aBase})
                    : "";
  // A warpgroup's first column of B: a column block of [K][N], a row of [N][K].
  auto bOffset = [&](int64_t k, int64_t n) {
    return tiles.bKRows ? tiles.b.offset(k, n * bytes) : tiles.b.offset(n, k * bytes);
  };
  std::string bStart = bBase;
  if (t.groupsN > 1)
    bStart = opReg("mad.lo.u32", RegClass::B32, {gn, imm(bOffset(0, t.groupN)), bBase});
  // Descriptor: start address >> 4 (bits 0-13), leading byte offset >> 4
  // (16-29), stride byte offset >> 4 (32-45), swizzle mode (62-63). A
  // (K-major): rows of 8 lines apart by 8 lines; the leading offset unused.
  // B (N-major): blocks of swizzle-width columns apart by K lines, groups of
  // 8 k lines apart by 8 lines.
  // Each instruction's descriptor is the tile's, with the fields, plus its
  // offset into the tile: a small immediate, which ptxas mostly adds with one
  // 64-bit uniform add (a 64-bit immediate takes an add for each half).
  struct Descriptor {
    std::string base; // the start address >> 4, with the fields
    std::string at(int64_t offset, Lowering &L) const {
      return offset ? L.opReg("add.s64", RegClass::B64, {base, imm(offset >> 4)}) : base;
    }
  };
  auto descriptor = [&](const std::string &start, const SharedTile &tile, int64_t leading) {
    uint64_t fields = (uint64_t)(leading >> 4) << 16 | (uint64_t)(8 * tile.swizzle >> 4) << 32 |
                      (uint64_t)swizzleMode(tile.swizzle) << 62;
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)fields);
    std::string s = opReg("bfe.u32", RegClass::B32, {start, "4", "14"});
    return Descriptor{
        opReg("add.s64", RegClass::B64, {opReg("cvt.u64.u32", RegClass::B64, {s}), hex})};
  };
  Descriptor aDesc = aRegs.empty() ? descriptor(aStart, tiles.a, 16) : Descriptor{};
  Descriptor bDesc = descriptor(bStart, tiles.b, tiles.bKRows ? t.K * tiles.b.swizzle : 16);
  std::string accumulate = b.reg(RegClass::Pred);
  b.emit("setp.eq.u32 " + accumulate + ", 0, 0");
  // The first k step's: false where the accumulator starts again (D = A*B).
  std::string accumulateFirst = accumulate;
  if (async && async->reset)
    accumulateFirst = opReg("not.pred", RegClass::Pred, {val(async->reset).regs[0]});
  else if (fromZero || span) // (each span's first, for a span)
    accumulateFirst = opReg("setp.ne.u32", RegClass::Pred, {"0", "0"});

  std::string instr = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(t.instrN) + "k" +
                      std::to_string(t.instrK) + (half ? ".f16." : ".f32.") +
                      wgmmaType(at.dtype) + "." + wgmmaType(bt.dtype);
  int64_t perReg = half ? 2 : 1;
  int64_t repsM = t.M / (64 * t.groupsM), regsPerRep = t.groupN / 2 / perReg;
  // A span's sum: fresh registers its first k step does not read, then added.
  std::vector<std::string> sum;
  for (size_t r = 0; span && r < acc.size(); ++r)
    sum.push_back(b.reg(RegClass::F32));
  auto addSum = [&] {
    b.emit("wgmma.commit_group.sync.aligned");
    b.emit("wgmma.wait_group.sync.aligned 0");
    for (size_t r = 0; r < acc.size(); ++r)
      b.emit("add.f32 " + acc[r] + ", " + acc[r] + ", " + sum[r]);
  };
  b.emit("wgmma.fence.sync.aligned");
  for (int64_t kk = 0; kk < t.K; kk += t.instrK) {
    if (span && kk && kk % span == 0) {
      addSum();
      b.emit("wgmma.fence.sync.aligned"); // (the adds read the registers the next span writes)
    }
    for (int64_t i = 0; i < repsM; ++i)
      for (int64_t n0 = 0; n0 < t.groupN; n0 += t.instrN) {
        int64_t aOff = tiles.a.offset(64 * t.groupsM * i, kk * bytes);
        int64_t bOff = bOffset(kk, n0);
        std::string a;
        if (!aRegs.empty()) {
          auto first = aRegs.begin() + (i * (t.K / t.instrK) + kk / t.instrK) * 4;
          a = regList(std::vector<std::string>(first, first + 4));
        } else {
          a = aDesc.at(aOff, *this);
        }
        std::string bd = bDesc.at(bOff, *this);
        const std::vector<std::string> &into = span ? sum : acc;
        std::vector<std::string> d(into.begin() + i * regsPerRep + n0 / 2 / perReg,
                                   into.begin() + i * regsPerRep + (n0 + t.instrN) / 2 / perReg);
        // Immediates: scale A, scale B, then for 16-bit types (for A in shared
        // memory: transpose A,) transpose B (1: B is [K][N], N-major).
        std::string imms = ", 1, 1";
        if (bytes == 2)
          imms += (aRegs.empty() ? ", 0, " : ", ") + std::string(tiles.bKRows ? "1" : "0");
        std::string scale = (span ? kk % span : kk) == 0 ? accumulateFirst : accumulate;
        b.emit(instr + " " + regList(d) + ", " + a + ", " + bd + ", " + scale + imms);
      }
  }
  if (span) {
    addSum();
    issueAfterSyncDot(op);
    bindAccumulator(op, accLayout, acc, false);
    return;
  }
  b.emit("wgmma.commit_group.sync.aligned");
  // Asynchronous: the previous iteration's group is done (its slot may be
  // refilled); this one runs on while the loop goes on.
  if (!deferred) // a deferred one is waited for by the loop's next synchronous wgmma
    b.emit(std::string("wgmma.wait_group.sync.aligned ") + (async ? "1" : "0"));
  if (!deferred && !async)
    issueAfterSyncDot(op);
  bindAccumulator(op, accLayout, acc, false);
}

} // namespace tilec::nvidia
