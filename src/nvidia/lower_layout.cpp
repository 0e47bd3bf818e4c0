// Where elements live: thread coordinates, shared-memory addresses, layout
// conversions, and the ops that only change a tensor's shape.
#include <algorithm>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = (int)shape.size() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

int64_t flatOf(const Coords &c, const std::vector<int64_t> &strides) {
  int64_t f = 0;
  for (size_t d = 0; d < c.size(); ++d)
    f += c[d] * strides[d];
  return f;
}

} // namespace

int storageBytes(DType d) {
  switch (regClassOf(d)) {
  case RegClass::Pred:
    return 1;
  case RegClass::B16:
    return 2;
  case RegClass::B32:
  case RegClass::F32:
    return 4;
  case RegClass::B64:
  case RegClass::F64:
    return 8;
  }
  return 4;
}

std::string Lowering::threadCoord(const LinearLayout *l, int dim) {
  auto key = std::make_pair(l, dim);
  auto it = threadCoords_.find(key);
  if (it != threadCoords_.end())
    return it->second;
  auto splits = [&](const std::vector<Coords> &bases) {
    return std::any_of(bases.begin(), bases.end(), [&](const Coords &c) { return c[dim] != 0; });
  };
  if (!splits(l->lanes) && !splits(l->warps)) // every thread's part is 0
    return threadCoords_[key] = knownConstant(RegClass::B32, 0);
  // Each step writes a register of its own: a coordinate nothing reads is
  // then dropped whole with the dead instructions.
  std::string acc;
  auto add = [&](const std::vector<Coords> &bases, const std::string &index) {
    for (size_t bit = 0; bit < bases.size(); ++bit) {
      int64_t v = bases[bit][dim];
      if (!v)
        continue;
      std::string t = b.reg(RegClass::B32), term = b.reg(RegClass::B32);
      b.emitPrologue("bfe.u32 " + t + ", " + index + ", " + imm(bit) + ", 1");
      b.emitPrologue("mul.lo.u32 " + term + ", " + t + ", " + imm(v));
      if (acc.empty()) {
        acc = term;
        continue;
      }
      std::string sum = b.reg(RegClass::B32);
      b.emitPrologue("xor.b32 " + sum + ", " + acc + ", " + term);
      acc = sum;
    }
  };
  add(l->lanes, lane);
  add(l->warps, warp);
  threadCoords_[key] = acc;
  return acc;
}

std::string Lowering::elementCoord(const LinearLayout *l, int dim, int r) {
  std::string base = threadCoord(l, dim);
  int64_t c = l->regCoords(r)[dim];
  if (!c)
    return base;
  if (std::optional<int64_t> t = knownValue(base))
    return knownConstant(RegClass::B32, *t ^ c);
  // Bits no thread sets: XOR is addition, and an add lets ptxas fold the
  // constant into the addresses computed from it (immediate offsets).
  if ((c & l->threadBits(dim)) == 0)
    return opReg("add.s32", RegClass::B32, {base, imm(c)});
  return opReg("xor.b32", RegClass::B32, {base, imm(c)});
}

std::string Lowering::ownerPredicate(const LinearLayout *l) {
  auto it = owners_.find(l);
  if (it != owners_.end())
    return it->second;
  unsigned laneMask = l->replicatedLaneMask(), warpMask = l->replicatedWarpMask();
  std::string p;
  if (laneMask || warpMask) {
    std::string t = b.reg(RegClass::B32), w = b.reg(RegClass::B32);
    p = b.reg(RegClass::Pred);
    b.emitPrologue("and.b32 " + t + ", " + lane + ", " + imm(laneMask));
    b.emitPrologue("and.b32 " + w + ", " + warp + ", " + imm(warpMask));
    b.emitPrologue("or.b32 " + t + ", " + t + ", " + w);
    b.emitPrologue("setp.eq.u32 " + p + ", " + t + ", 0");
  }
  owners_[l] = p;
  return p;
}

std::string Lowering::sharedAt(int64_t offset) {
  auto [it, fresh] = sharedAt_.try_emplace(offset);
  if (fresh) { // in the prologue: defined wherever it is first asked for
    it->second = b.reg(RegClass::B32);
    b.emitPrologue("mov.u32 " + it->second + ", tilec_smem");
    if (offset)
      b.emitPrologue("add.u32 " + it->second + ", " + it->second + ", " + imm(offset));
  }
  return it->second;
}

void Lowering::useBuffer(int64_t offset, int64_t bytes) {
  sharedEnd_ = std::max(sharedEnd_, offset + bytes);
}

std::string Lowering::sharedBase() { return sharedAt(scratchAt_); }

void Lowering::needShared(int64_t bytes) {
  sharedBase();
  if (bytes > 0)
    useBuffer(scratchAt_, bytes);
}

Lowering::TileThread Lowering::tileThread(const LinearLayout *l, const SharedTile &t,
                                          int bytes) {
  auto key = std::make_tuple(intern(*l), t.rows, t.rowBytes, bytes);
  auto it = tileThreads_.find(key);
  if (it != tileThreads_.end())
    return it->second;
  TileThread th;
  th.reg = b.reg(RegClass::B32);
  b.emitPrologue("mov.u32 " + th.reg + ", 0");
  auto add = [&](const std::vector<Coords> &bases, const std::string &index) {
    for (size_t bit = 0; bit < bases.size(); ++bit) {
      int64_t off = t.offset(bases[bit][0], bases[bit][1] * bytes);
      if (!off)
        continue;
      th.mask |= off;
      std::string x = b.reg(RegClass::B32);
      b.emitPrologue("bfe.u32 " + x + ", " + index + ", " + imm(bit) + ", 1");
      b.emitPrologue("mul.lo.u32 " + x + ", " + x + ", " + imm(off));
      b.emitPrologue("xor.b32 " + th.reg + ", " + th.reg + ", " + x);
    }
  };
  add(l->lanes, lane);
  add(l->warps, warp);
  tileThreads_[key] = th;
  return th;
}

SharedAddr Lowering::tileAddress(const std::string &base, const TileThread &th, int64_t c,
                                 std::map<std::pair<std::string, int64_t>, std::string> &cache) {
  // The thread part sets only bits of th.mask: c's other bits add to it without
  // carries, as an immediate offset.
  int64_t mixed = c & th.mask;
  auto key = std::make_pair(base, mixed);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::string x = mixed ? opReg("xor.b32", RegClass::B32, {th.reg, imm(mixed)}) : th.reg;
    it = cache.emplace(key, opReg("add.u32", RegClass::B32, {base, x})).first;
  }
  return SharedAddr{it->second, c & ~th.mask};
}

int64_t Lowering::tileRegOffset(const LinearLayout *l, int r, const SharedTile &t,
                                int bytes) const {
  Coords rc = l->regCoords(r);
  return t.offset(rc[0], rc[1] * bytes);
}

void Lowering::barrier() {
  // (Once a warp-specialized kernel's roles split, its consumers alone.)
  b.emit(barrierThreads_ ? "bar.sync 1, " + imm(barrierThreads_) : std::string("bar.sync 0"));
}

void Lowering::scratchBarrier() {
  OpBarrier &op = opBarrier_;
  if (!op.scratch) {
    b.comment(std::string("a use of the scratch gpu-insert-barriers did not model: ") +
              (op.op ? op.op->info().mnemonic : "?"));
    barrier();
    unmodeled_ = true;
    return;
  }
  if (op.used || op.mark > 0)
    barrier();
  op.mark = 0;
  op.used = true;
}

void Lowering::endScratch() {
  if (unmodeled_)
    barrier();
  unmodeled_ = false;
}

void Lowering::bufferBarrier() {
  if (opBarrier_.mark != 0 || unmodeled_)
    barrier();
  opBarrier_.mark = 0;
  unmodeled_ = false;
}

// The address of register r's element in a row-major copy of the tensor
// whose dim d has stride strides[d] (0 for a broadcast dim).
SharedAddr Lowering::sharedAddress(const LinearLayout *l, int r,
                                   const std::vector<int64_t> &strides, int bytes, int64_t start) {
  // This thread's part of the address, computed once per layout and strides.
  auto key = std::make_tuple(intern(*l), bytes, sharedBase(), strides);
  auto it = sharedThreadAddrs_.find(key);
  std::string threadAddr;
  if (it != sharedThreadAddrs_.end()) {
    threadAddr = it->second;
  } else {
    std::string flat = b.reg(RegClass::B32);
    b.emitPrologue("mov.u32 " + flat + ", 0");
    for (int d = 0; d < l->rank(); ++d) {
      if (!strides[d])
        continue;
      b.emitPrologue("mad.lo.u32 " + flat + ", " + threadCoord(l, d) + ", " + imm(strides[d]) +
                     ", " + flat);
    }
    threadAddr = b.reg(RegClass::B32);
    b.emitPrologue("mad.lo.u32 " + threadAddr + ", " + flat + ", " + imm(bytes) + ", " +
                   sharedBase());
    sharedThreadAddrs_[key] = threadAddr;
  }
  // Where register and thread bits of every dim are disjoint (blocked and MMA
  // layouts), coordinates add, and so do addresses: an immediate offset.
  Coords rc = l->regCoords(r);
  bool disjoint = true;
  for (int d = 0; d < l->rank(); ++d)
    disjoint &= (rc[d] & l->threadBits(d)) == 0;
  if (disjoint)
    return SharedAddr{threadAddr, flatOf(rc, strides) * bytes + start};
  std::string flat = opReg("mov.u32", RegClass::B32, {"0"});
  for (int d = 0; d < l->rank(); ++d)
    if (strides[d])
      flat = opReg("mad.lo.u32", RegClass::B32, {elementCoord(l, d, r), imm(strides[d]), flat});
  std::string addr = opReg("mad.lo.u32", RegClass::B32, {flat, imm(bytes), sharedBase()});
  return SharedAddr{addr, start};
}

SharedAddr Lowering::sharedElement(const LinearLayout *l, int r, int bytes, int64_t start) {
  return sharedAddress(l, r, rowMajorStrides(l->shape), bytes, start);
}

void Lowering::storeShared(const SharedAddr &a, DType d, const std::string &v) {
  switch (regClassOf(d)) {
  case RegClass::Pred: {
    std::string t = opReg("selp.u32", RegClass::B32, {"1", "0", v});
    b.emit("st.shared.u8 " + a.str() + ", " + t);
    return;
  }
  case RegClass::B16:
    b.emit("st.shared.b16 " + a.str() + ", " + v);
    return;
  case RegClass::B32:
    b.emit("st.shared.b32 " + a.str() + ", " + v);
    return;
  case RegClass::B64:
    b.emit("st.shared.b64 " + a.str() + ", " + v);
    return;
  case RegClass::F32:
    b.emit("st.shared.f32 " + a.str() + ", " + v);
    return;
  case RegClass::F64:
    b.emit("st.shared.f64 " + a.str() + ", " + v);
    return;
  }
}

std::string Lowering::loadShared(const SharedAddr &a, DType d) {
  switch (regClassOf(d)) {
  case RegClass::Pred: {
    std::string t = opReg("ld.shared.u8", RegClass::B32, {a.str()});
    return opReg("setp.ne.u32", RegClass::Pred, {t, "0"});
  }
  case RegClass::B16:
    return op1("ld.shared.b16", d, a.str());
  case RegClass::B32:
    return op1("ld.shared.b32", d, a.str());
  case RegClass::B64:
    return op1("ld.shared.b64", d, a.str());
  case RegClass::F32:
    return op1("ld.shared.f32", d, a.str());
  case RegClass::F64:
    return op1("ld.shared.f64", d, a.str());
  }
  return "";
}

// How many registers of `l` from each multiple of it on move through shared
// memory as one access: a run along the last dim (row-major there, so
// contiguous and aligned), of at most 16 bytes; 16-bit ones in pairs at least.
static int sharedRun(const LinearLayout &l, DType d) {
  RegClass rc = regClassOf(d);
  if (rc == RegClass::Pred)
    return 1;
  int bytes = storageBytes(d);
  int run = std::min(contiguousRegisters(l, l.rank() - 1), 16 / bytes);
  // Every other basis keeps a run's start aligned: none moves within a run.
  auto aligned = [&](int n) {
    for (size_t i = 0; i < l.regs.size(); ++i)
      if ((1 << i) >= n && (l.regs[i].back() & (n - 1)))
        return false;
    for (const std::vector<Coords> *bases : {&l.lanes, &l.warps})
      for (const Coords &c : *bases)
        if (c.back() & (n - 1))
          return false;
    return true;
  };
  while (run > 1 && !aligned(run))
    run /= 2;
  return run * bytes < 4 ? 1 : run;
}

// The vector type suffix of `n` words (1: none) of class `rc`.
static std::string sharedVectorType(int n, RegClass rc) {
  std::string v = n > 1 ? ".v" + std::to_string(n) : "";
  switch (rc) {
  case RegClass::F32:
    return v + ".f32";
  case RegClass::F64:
    return v + ".f64";
  case RegClass::B64:
    return v + ".b64";
  default:
    return v + ".b32";
  }
}

// Stores registers regs[r..r+n) (consecutive elements) at `a`, as one access.
void Lowering::storeSharedRun(const SharedAddr &a, DType d, const std::vector<std::string> &regs,
                              int r, int n) {
  RegClass rc = regClassOf(d);
  std::vector<std::string> words;
  for (int i = 0; i < n; i += rc == RegClass::B16 ? 2 : 1)
    words.push_back(rc == RegClass::B16 ? joinHalves(*this, regs[r + i], regs[r + i + 1])
                                        : regs[r + i]);
  std::string list = words.size() == 1 ? words[0] : regList(words);
  b.emit("st.shared" + sharedVectorType((int)words.size(), rc) + " " + a.str() + ", " + list);
}

// Loads n consecutive elements from `a` as one access, into registers of `d`.
std::vector<std::string> Lowering::loadSharedRun(const SharedAddr &a, DType d, int n) {
  RegClass rc = regClassOf(d);
  bool half = rc == RegClass::B16;
  RegClass wordClass = half ? RegClass::B32 : rc;
  std::vector<std::string> words;
  for (int i = 0; i < (half ? n / 2 : n); ++i)
    words.push_back(b.reg(wordClass));
  std::string list = words.size() == 1 ? words[0] : regList(words);
  b.emit("ld.shared" + sharedVectorType((int)words.size(), wordClass) + " " + list + ", " +
         a.str());
  if (!half)
    return words;
  std::vector<std::string> out;
  for (const std::string &w : words) {
    auto [lo, hi] = splitWord(*this, w);
    out.push_back(lo);
    out.push_back(hi);
  }
  return out;
}

// The swizzled tile a 2-D conversion goes through (rows of at least 16
// bytes): a row-major buffer puts the rows an accumulator's lanes hold on the
// same banks (an 8-way conflict on every store of a matmul's epilogue); the
// tile's 16-byte chunks move with the row, so neither side conflicts and runs
// of up to 16 bytes stay whole. None for other shapes and for predicates.
std::optional<SharedTile> Lowering::conversionTile(const LinearLayout &from, DType d) {
  auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
  int64_t bytes = storageBytes(d);
  if (from.rank() != 2 || regClassOf(d) == RegClass::Pred || from.shape[0] < 2 ||
      !pow2(from.shape[0]) || !pow2(from.shape[1]) || from.shape[1] * bytes < 16)
    return std::nullopt;
  return sharedTile(from.shape[0], from.shape[1] * bytes);
}

// An 8x8 matrix of 16-bit elements, as stmatrix and ldmatrix move it: lane
// 4i + j holds elements 2j and 2j + 1 (register bit 0) of row i, and gives
// the address of row (lane % 8) of matrix lane / 8, 16 contiguous bytes. In
// the transposed form the lane's pair runs down a column instead. Every other
// basis must move by whole matrices, so that a row stays one 16-byte chunk
// of the tile.
std::optional<Lowering::MatrixAccess> Lowering::matrixAccess(const LinearLayout &l, DType d) {
  if (l.rank() != 2 || regClassOf(d) != RegClass::B16 || dtypeBytes(d) != 2 || // (not fp8)
      l.regs.empty() || l.lanes.size() != 5)
    return std::nullopt;
  const std::vector<Coords> rowMajor = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
  const std::vector<Coords> colMajor = {{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}};
  bool trans;
  if (l.regs[0] == Coords{0, 1} && l.lanes == rowMajor)
    trans = false;
  else if (l.regs[0] == Coords{1, 0} && l.lanes == colMajor)
    trans = true;
  else
    return std::nullopt;
  auto whole = [](const Coords &c) { return (c[0] & 7) == 0 && (c[1] & 7) == 0; };
  size_t k = 0; // register bits that pick the matrix
  while (k < 2 && 1 + k < l.regs.size() && whole(l.regs[1 + k]) &&
         l.regs[1 + k] != Coords{0, 0})
    ++k;
  LinearLayout rows{l.shape, {}, {{1, 0}, {2, 0}, {4, 0}, {0, 0}, {0, 0}}, l.warps};
  for (size_t i = 0; i < k; ++i)
    rows.lanes[3 + i] = l.regs[1 + i];
  rows.regs.assign(l.regs.begin() + 1 + k, l.regs.end());
  for (const std::vector<Coords> *bases : {&rows.regs, &rows.warps})
    for (const Coords &c : *bases)
      if (!whole(c))
        return std::nullopt;
  return MatrixAccess{intern(rows), 1 << k, trans, d};
}

static std::string matrixShape(const Lowering::MatrixAccess &m) {
  return ".sync.aligned.m8n8.x" + std::to_string(m.count) + (m.trans ? ".trans" : "") +
         ".shared.b16 ";
}

// Registers `regs` (in the order of the layout matrixAccess read) into `tile` at `base`.
void Lowering::storeMatrices(const std::string &base, const SharedTile &tile,
                             const MatrixAccess &m, const std::vector<std::string> &regs) {
  TileThread th = tileThread(m.rows, tile, 2);
  std::map<std::pair<std::string, int64_t>, std::string> cache;
  for (int g = 0; g < m.rows->numRegs(); ++g) {
    SharedAddr a = tileAddress(base, th, tileRegOffset(m.rows, g, tile, 2), cache);
    auto first = regs.begin() + g * m.count * 2;
    std::vector<std::string> words =
        packWords(*this, std::vector<std::string>(first, first + m.count * 2), m.d);
    b.emit("stmatrix" + matrixShape(m) + a.str() + ", " + regList(words));
  }
}

std::vector<std::string> Lowering::loadMatrices(const std::string &base, const SharedTile &tile,
                                                const MatrixAccess &m) {
  TileThread th = tileThread(m.rows, tile, 2);
  std::map<std::pair<std::string, int64_t>, std::string> cache;
  std::vector<std::string> out;
  for (int g = 0; g < m.rows->numRegs(); ++g) {
    SharedAddr a = tileAddress(base, th, tileRegOffset(m.rows, g, tile, 2), cache);
    std::vector<std::string> words;
    for (int j = 0; j < m.count; ++j)
      words.push_back(b.reg(RegClass::B32));
    b.emit("ldmatrix" + matrixShape(m) + regList(words) + ", " + a.str());
    for (const std::string &e : unpackWords(*this, words, m.d))
      out.push_back(e);
  }
  return out;
}

const std::vector<int> &Lowering::registerMap(const LinearLayout *from, const LinearLayout *to) {
  if (!interned_.count(from) || !interned_.count(to)) { // (an address may be reused)
    scratchMap_ = registerOnlyConversion(*from, *to);
    return scratchMap_;
  }
  auto key = std::make_pair(from, to);
  if (auto it = registerMaps_.find(key); it != registerMaps_.end())
    return it->second;
  return registerMaps_[key] = registerOnlyConversion(*from, *to);
}

TVal Lowering::convert(const TVal &v, DType d, const LinearLayout *to) {
  if (!v.isTensor() || v.uniform)
    return TVal{to, std::vector<std::string>(to->numRegs(), v.regs[0]), true};
  if (v.layout == to || *v.layout == *to)
    return TVal{to, v.regs};
  const std::vector<int> &map = registerMap(v.layout, to);
  if (!map.empty()) {
    TVal out{to, {}};
    out.regs.reserve(map.size());
    for (int r : map)
      out.regs.push_back(v.regs[r]);
    return out;
  }
  // Through shared memory: every thread writes what it holds, then reads
  // what it needs. Size-1 dims of the source are read at index 0.
  int bytes = storageBytes(d);
  const LinearLayout *from = v.layout;
  int64_t numel = 1;
  for (int64_t s : from->shape)
    numel *= s;
  needShared(numel * bytes);
  b.comment("convert " + from->str() + " -> " + to->str());
  scratchBarrier();
  // Register r of layout l lives in the swizzled tile (thread part th), else
  // row-major with strides s.
  std::optional<SharedTile> tile = conversionTile(*from, d);
  std::map<std::pair<std::string, int64_t>, std::string> cache;
  auto address = [&](const LinearLayout *l, const TileThread &th,
                     const std::vector<int64_t> &s, int r) {
    return tile ? tileAddress(sharedBase(), th, tileRegOffset(l, r, *tile, bytes), cache)
                : sharedAddress(l, r, s, bytes, 0);
  };
  std::vector<int64_t> strides = rowMajorStrides(from->shape);
  int run = sharedRun(*from, d);
  std::optional<MatrixAccess> matrices = tile && arch >= 90 ? matrixAccess(*from, d) : std::nullopt;
  TileThread th = tile && !matrices ? tileThread(from, *tile, bytes) : TileThread{};
  if (matrices)
    storeMatrices(sharedBase(), *tile, *matrices, v.regs);
  else
    for (int r = 0; r < from->numRegs(); r += run) {
      SharedAddr a = address(from, th, strides, r);
      if (run == 1)
        storeShared(a, d, v.regs[r]);
      else
        storeSharedRun(a, d, v.regs, r, run);
    }
  barrier();
  std::vector<int64_t> readStrides = strides;
  for (int dim = 0; dim < from->rank(); ++dim)
    if (from->shape[dim] == 1)
      readStrides[dim] = 0;
  TVal out{to, {}};
  out.regs.reserve(to->numRegs());
  // A broadcast last dim is read at one index: no runs along it.
  run = from->shape.back() == 1 ? 1 : sharedRun(*to, d);
  if (tile) {
    if (std::optional<MatrixAccess> m = matrixAccess(*to, d)) {
      TVal out{to, loadMatrices(sharedBase(), *tile, *m)};
      endScratch();
      return out;
    }
    th = tileThread(to, *tile, bytes);
    cache.clear(); // its addresses hold the writers' thread part
  }
  std::map<std::string, std::string> loaded; // registers that are copies read once
  for (int r = 0; r < to->numRegs(); r += run) {
    SharedAddr a = address(to, th, readStrides, r);
    if (run == 1) {
      auto [it, fresh] = loaded.emplace(a.str(), "");
      if (fresh)
        it->second = loadShared(a, d);
      out.regs.push_back(it->second);
      continue;
    }
    for (std::string &e : loadSharedRun(a, d, run))
      out.regs.push_back(e);
  }
  endScratch();
  return out;
}

bool recomputable(const Value *v, std::unordered_map<const Value *, bool> &memo, int depth) {
  if (!v->type.isTensor())
    return true; // a scalar is the same register in every layout
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  const Op *def = v->def;
  bool ok = false;
  if (def && depth < 24) {
    switch (def->kind) {
    case OpKind::Constant:
    case OpKind::MakeRange:
    case OpKind::Splat:
      ok = true;
      break;
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
      ok = recomputable(def->operand(0), memo, depth + 1);
      break;
    default:
      ok = def->has(ELEMENTWISE) && def->has(PURE);
      for (const Value *o : def->operands)
        ok = ok && recomputable(o, memo, depth + 1);
    }
  }
  memo[v] = ok;
  return ok;
}

bool Lowering::rematerializable(const Value *v) { return recomputable(v, rematerializable_); }

// Whether `user` materializes its operand `v` where it reads it
// (accessOperands): a plain load in the coalescing pass's layout, or a store's
// addresses or mask. A store computes its addresses in its value's layout,
// where its mask, if any, must be recomputable too.
bool Lowering::materializedByAccess(const Op &user, const Value *v) {
  if (user.kind == OpKind::Load)
    return layoutEncoding(user.result()->type) && !user.attr("pipeline_copy") &&
           !user.attr("resident_copy");
  if (user.kind != OpKind::Store || user.operand(1) == v)
    return false;
  return user.operand(0) != v || user.operands.size() < 3 || rematerializable(user.operand(2));
}

void Lowering::deferUntilRead(const Block &body) {
  // Per value, its uses by an access that materializes it or by an op read
  // later itself, in its own block; all of its uses when it qualifies.
  std::unordered_map<const Value *, int> laterUses;
  std::function<void(const Block &)> visit = [&](const Block &block) {
    for (size_t i = block.ops.size(); i-- > 0;) { // users first
      const Op &op = *block.ops[i];
      for (const auto &region : op.regions)
        visit(*region);
      // Constants and splats are one register: nothing to save. (A use in a
      // nested region would recompute it at every iteration.)
      bool later = op.results.size() == 1 && op.regions.empty() &&
                   op.result()->type.isTensor() && op.kind != OpKind::Constant &&
                   op.kind != OpKind::Splat;
      if (later) {
        int n = useCount(uses(), op.result());
        later = n > 0 && laterUses[op.result()] == n && rematerializable(op.result());
      }
      if (later)
        readLater.insert(&op);
      for (const Value *v : op.operands)
        if (v->def && v->def->parent == &block && (later || materializedByAccess(op, v)))
          ++laterUses[v];
    }
  };
  visit(body);
}

TVal Lowering::materialize(const Value *v, const LinearLayout *to,
                           const std::vector<char> *needed) {
  DType d = v->type.dtype;
  // An unbound value (being computed for another iteration: valueAt) is computed here.
  if (values_.count(v) || !rematerializable(v)) {
    const TVal &cur = val(v);
    if (!cur.isTensor() || cur.uniform || *cur.layout == *to ||
        !registerMap(cur.layout, to).empty() || !rematerializable(v))
      return convert(cur, d, to);
  }
  // What was computed here before (in this region) is reused; only the
  // registers still missing are computed.
  auto key = std::make_pair(v, to);
  TVal *known = nullptr;
  std::vector<char> missing;
  if (auto it = materialized_.find(key); it != materialized_.end()) {
    known = &it->second;
    bool any = false;
    for (int r = 0; r < to->numRegs(); ++r) {
      missing.push_back((!needed || (*needed)[r]) && known->regs[r].empty());
      any |= missing.back();
    }
    if (!any)
      return *known;
    needed = &missing;
  }
  const Op &def = *v->def;
  TVal out;
  switch (def.kind) {
  case OpKind::MakeRange: {
    int64_t start = def.intAttr("start");
    out.layout = to;
    for (int r = 0; r < to->numRegs(); ++r) {
      if (needed && !(*needed)[r]) {
        out.regs.emplace_back();
        continue;
      }
      std::string c = elementCoord(to, 0, r);
      out.regs.push_back(start ? opReg("add.s32", RegClass::B32, {c, imm(start)}) : c);
    }
    break;
  }
  case OpKind::Broadcast: {
    // The source once per distinct element of a thread: the registers the
    // projection folds onto others are copies, filled in by the conversion.
    const Value *src = def.operand(0);
    TVal s = materialize(src, intern(withoutRegisterCopies(projectLayout(*to, src->type.shape))));
    out = convert(s, d, to);
    break;
  }
  case OpKind::ExpandDims: {
    int axis = (int)def.intAttr("axis");
    TVal s = materialize(def.operand(0), intern(sliceLayout(*to, axis)), needed);
    out = TVal{to, s.regs};
    break;
  }
  case OpKind::Reshape: { // the same registers, each element at its place in the new shape
    TVal s = materialize(def.operand(0), intern(reshapeLayout(*to, def.operand(0)->type.shape)),
                         needed);
    out = TVal{to, s.regs};
    break;
  }
  default: {
    bool isCast = def.kind == OpKind::Cast || def.kind == OpKind::Bitcast ||
                  def.kind == OpKind::IntToPtr || def.kind == OpKind::PtrToInt;
    if (isCast) // (f32 to f16 rounds registers in pairs)
      needed = nullptr;
    std::vector<TVal> xs;
    for (const Value *o : def.operands)
      xs.push_back(materialize(o, to, needed));
    out = isCast ? computeCast(def, xs[0]) : computeElementwise(def, xs, to, needed);
  }
  }
  if (!known)
    return materialized_[key] = std::move(out);
  for (int r = 0; r < to->numRegs(); ++r)
    if (!out.regs[r].empty() && known->regs[r].empty())
      known->regs[r] = out.regs[r];
  return *known;
}

void Lowering::lowerShape(const Op &op) {
  const Type &t = op.result()->type;
  switch (op.kind) {
  case OpKind::MakeRange: {
    const LinearLayout *l = layoutFor(op.result());
    int64_t start = op.intAttr("start");
    TVal out{l, {}};
    for (int r = 0; r < l->numRegs(); ++r) {
      std::string c = elementCoord(l, 0, r);
      out.regs.push_back(start ? opReg("add.s32", RegClass::B32, {c, imm(start)}) : c);
    }
    bind(op.result(), out);
    return;
  }
  case OpKind::Splat:
    bind(op.result(), convert(val(op.operand(0)), t.dtype, layoutFor(op.result())));
    return;
  case OpKind::Broadcast: {
    const TVal &src = val(op.operand(0));
    const LinearLayout *to = layoutFor(op.result());
    if (src.isTensor() && src.layout->shape == t.shape && !layoutEncoding(t)) {
      bind(op.result(), src);
      return;
    }
    // A source cheap to recompute is computed again where the result's
    // registers need it, rather than moved there through shared memory.
    if (src.isTensor() && !src.uniform && rematerializable(op.operand(0)) &&
        registerOnlyConversion(*src.layout, projectLayout(*to, src.layout->shape)).empty()) {
      bind(op.result(), materialize(op.result(), to));
      return;
    }
    bind(op.result(), convert(src, t.dtype, to));
    return;
  }
  case OpKind::ExpandDims: {
    const TVal &src = val(op.operand(0));
    if (!src.isTensor()) {
      bind(op.result(), convert(src, t.dtype, layoutFor(op.result())));
      return;
    }
    int axis = (int)op.intAttr("axis");
    bind(op.result(), TVal{intern(expandDimsLayout(*src.layout, axis)), src.regs, src.uniform});
    return;
  }
  case OpKind::Reshape: {
    const TVal &src = val(op.operand(0));
    if (!src.isTensor()) {
      bind(op.result(), convert(src, t.dtype, layoutFor(op.result())));
      return;
    }
    bind(op.result(), TVal{intern(reshapeLayout(*src.layout, t.shape)), src.regs});
    return;
  }
  case OpKind::Trans: {
    const TVal &src = val(op.operand(0));
    if (!src.sharedTile.empty()) { // a pipelined copy, already in the tile its dot reads
      bind(op.result(), src);
      return;
    }
    bind(op.result(), TVal{intern(transLayout(*src.layout, op.intsAttr("order"))), src.regs});
    return;
  }
  case OpKind::ConvertLayout: {
    const LayoutEncoding *e = layoutEncoding(t);
    TILEC_ASSERT(e, "convert_layout to a type without a layout encoding");
    bind(op.result(), materialize(op.operand(0), intern(e->layout)));
    return;
  }
  default:
    TILEC_ASSERT(false, "lowerShape got a non-shape op");
  }
}

} // namespace tilec::nvidia
