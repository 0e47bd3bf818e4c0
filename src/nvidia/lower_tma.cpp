// TMA copies of a pipeline's stages (sm_90): one thread copies each stage's
// tiles of tensor descriptors and block pointers with cp.async.bulk.tensor, straight into
// the swizzled tiles the dots read; an mbarrier per stage counts the bytes
// landed, and every thread waits on it. No thread computes addresses or
// bounds: the tensor map (encoded by the launcher) holds them, and the copy
// zero-fills what lies out of bounds. Stores the coalescing pass marked go the
// other way: the threads write the tile to shared memory, one thread copies
// it out, and TMA drops what lies out of bounds.
#include "nvidia/allocate_shared.h"
#include "nvidia/lowering.h"

#include <algorithm>

#include "ir/pointer_origins.h"

namespace tilec::nvidia {

const Op *blockPtrOrigin(const Value *v) {
  while (v->def && v->def->kind == OpKind::Advance)
    v = v->def->operand(0);
  if (v->def)
    return v->def->kind == OpKind::MakeBlockPtr ? v->def : nullptr;
  const Block *body = v->owner;
  if (!body || !body->parent || body->parent->kind != OpKind::For || v->index == 0)
    return nullptr;
  const Value *next = body->terminator()->operand(v->index - 1);
  while (next->def && next->def->kind == OpKind::Advance)
    next = next->def->operand(0);
  return next == v ? blockPtrOrigin(body->parent->operand(2 + v->index)) : nullptr;
}

namespace {

// The integers a ScalarProgram keeps (in 32 or 64 bits).
bool programInteger(DType d) {
  return d == DType::I32 || d == DType::U32 || d == DType::I64 || d == DType::U64;
}

ScalarStep::Width widthOf(DType d) {
  return d == DType::I32 ? ScalarStep::S32 : d == DType::U32 ? ScalarStep::U32 : ScalarStep::W64;
}

// Appends the steps that compute scalar `v` from the kernel's arguments
// and the grid (sums, differences and products of arguments, constants and
// num_programs, casts between integers, pointer offsets); false when `v`
// needs anything else (a program id).
bool scalarProgram(const Function &fn, const Value *v, ScalarProgram &out) {
  if (out.size() > 64 || v->type.isTensor())
    return false;
  DType d = v->type.dtype;
  bool integer = programInteger(d);
  if (!integer && d != DType::Ptr)
    return false;
  if (!v->def) {
    if (v->owner != fn.body.get())
      return false;
    out.push_back({ScalarStep::Arg, widthOf(d), (int64_t)v->index});
    return true;
  }
  const Op &op = *v->def;
  switch (op.kind) {
  case OpKind::Constant:
    if (!integer)
      return false;
    out.push_back({ScalarStep::Const, widthOf(d), op.intAttr("value")});
    return true;
  case OpKind::NumPrograms:
    out.push_back({ScalarStep::Grid, widthOf(d), op.intAttr("axis")});
    return true;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
    if (!integer || !scalarProgram(fn, op.operand(0), out) ||
        !scalarProgram(fn, op.operand(1), out))
      return false;
    out.push_back({op.kind == OpKind::Add   ? ScalarStep::Add
                   : op.kind == OpKind::Sub ? ScalarStep::Sub
                                            : ScalarStep::Mul,
                   widthOf(d), 0});
    return true;
  case OpKind::Cast: {
    if (!integer || !programInteger(op.operand(0)->type.dtype) ||
        !scalarProgram(fn, op.operand(0), out))
      return false;
    out.push_back({ScalarStep::Cast, widthOf(d), 0});
    return true;
  }
  case OpKind::AddPtr: { // base + offset * element bytes
    if (!scalarProgram(fn, op.operand(0), out) || !scalarProgram(fn, op.operand(1), out))
      return false;
    out.push_back({ScalarStep::Cast, ScalarStep::W64, 0});
    out.push_back({ScalarStep::Const, ScalarStep::W64, dtypeBytes(v->type.pointee)});
    out.push_back({ScalarStep::Mul, ScalarStep::W64, 0});
    out.push_back({ScalarStep::Add, ScalarStep::W64, 0});
    return true;
  }
  default:
    return false;
  }
}

// Each swizzle-wide column block of `tile` (elements of `bytes`) as one TMA
// copy: `copy(first column, shared address)`, from column `col` and `smem`.
template <typename F>
void forEachColumnBlock(Lowering &L, const SharedTile &tile, int bytes, const std::string &col,
                        const std::string &smem, F &&copy) {
  for (int64_t c = 0; c < tile.rowBytes / tile.swizzle; ++c) {
    std::string x = c ? L.opReg("add.u32", RegClass::B32, {col, imm(c * tile.swizzle / bytes)})
                      : col;
    std::string at =
        c ? L.opReg("add.u32", RegClass::B32, {smem, imm(c * tile.rows * tile.swizzle)}) : smem;
    copy(x, at);
  }
}

} // namespace

int64_t evaluate(const ScalarProgram &program, const uint64_t *args, size_t numArgs,
                 const int64_t grid[3]) {
  std::vector<int64_t> stack;
  auto wrap = [](int64_t v, ScalarStep::Width w) {
    return w == ScalarStep::S32 ? (int64_t)(int32_t)v
           : w == ScalarStep::U32 ? (int64_t)(uint32_t)v
                                  : v;
  };
  for (const ScalarStep &s : program) {
    if (s.kind == ScalarStep::Arg || s.kind == ScalarStep::Const || s.kind == ScalarStep::Grid) {
      if ((s.kind == ScalarStep::Arg && (s.value < 0 || (size_t)s.value >= numArgs)) ||
          (s.kind == ScalarStep::Grid && (s.value < 0 || s.value > 2)))
        throw std::invalid_argument("a tensor map's program is malformed");
      int64_t v = s.kind == ScalarStep::Arg    ? (int64_t)args[s.value]
                  : s.kind == ScalarStep::Grid ? grid[s.value]
                                               : s.value;
      stack.push_back(wrap(v, s.width));
      continue;
    }
    if (stack.empty() || (s.kind != ScalarStep::Cast && stack.size() < 2))
      throw std::invalid_argument("a tensor map's program is malformed");
    if (s.kind == ScalarStep::Cast) {
      stack.back() = wrap(stack.back(), s.width);
      continue;
    }
    // Wrapping arithmetic, as the kernel's integers wrap.
    uint64_t b = (uint64_t)stack.back();
    stack.pop_back();
    uint64_t a = (uint64_t)stack.back();
    uint64_t r = s.kind == ScalarStep::Add ? a + b : s.kind == ScalarStep::Sub ? a - b : a * b;
    stack.back() = wrap((int64_t)r, s.width);
  }
  if (stack.size() != 1)
    throw std::invalid_argument("a tensor map's program is malformed");
  return stack.back();
}

// The terms coefficient * stride that integer offset `v` sums, each stride
// one the launcher computes; false for any other form.
static bool offsetTerms(const Function &fn, const Value *v, std::vector<TmaBase::Term> &out) {
  if (!v->def || v->type.isTensor() || !programInteger(v->type.dtype))
    return false;
  const Op &op = *v->def;
  switch (op.kind) {
  case OpKind::Add:
    return offsetTerms(fn, op.operand(0), out) && offsetTerms(fn, op.operand(1), out);
  case OpKind::Cast: // (offsets widened to 64 bits)
    return dtypeBits(op.operand(0)->type.dtype) <= dtypeBits(v->type.dtype) &&
           offsetTerms(fn, op.operand(0), out);
  case OpKind::Mul:
    for (int k = 0; k < 2; ++k) {
      ScalarProgram stride;
      const Value *c = op.operand(k);
      if (!c->type.isTensor() && programInteger(c->type.dtype) &&
          scalarProgram(fn, op.operand(1 - k), stride)) {
        out.push_back({c, op.operand(1 - k)});
        return true;
      }
    }
    return false;
  default:
    return false;
  }
}

std::optional<TmaBase> tmaBase(const Function &fn, const Value *base) {
  TmaBase out;
  for (const Value *v = base;; v = v->def->operand(0)) {
    ScalarProgram host;
    if (scalarProgram(fn, v, host)) {
      out.host = v;
      break;
    }
    if (!v->def || v->def->kind != OpKind::AddPtr || !offsetTerms(fn, v->def->operand(1), out.terms))
      return std::nullopt;
  }
  if (out.terms.size() > 3) // (a map has at most 5 dims)
    return std::nullopt;
  return out;
}

bool tmaTransposed(const Value *blockPtr) {
  const Op *origin = blockPtrOrigin(blockPtr);
  return origin && origin->intsAttr("order") == std::vector<int64_t>{0, 1};
}

bool tmaMovable(const Function &fn, const AxisInfoMap &info, const Value *blockPtr, int bytes) {
  const Op *origin = blockPtrOrigin(blockPtr);
  const std::vector<int64_t> &shape = blockPtr->type.blockShape;
  if (!origin || origin->operands.size() != 7 || shape.size() != 2)
    return false;
  // A 2-D tile in lines of at most 256 rows (a copy's box), its rows and
  // their bytes powers of two (a swizzled shared tile).
  int row = tmaTransposed(blockPtr) ? 1 : 0, column = 1 - row;
  int64_t rows = shape[row], columns = shape[column];
  if (rows % 8 || rows > 256 || (rows & (rows - 1)) || columns * bytes < 16 ||
      (columns & (columns - 1)))
    return false;
  // TMA needs a 16-byte aligned base, 16-byte multiples as strides and a
  // unit stride along the rows.
  std::optional<BlockPtrInfo> bp = blockPtrInfo(info, blockPtr);
  if (!bp || !bp->unitStride[column] || bp->baseDivisibility % 16 ||
      bp->strideDivisibility[row] * bytes % 16)
    return false;
  // The launcher computes the base, sizes and strides as the kernel does,
  // the base but for terms whose coefficients the copies name (16-byte
  // multiples as strides too).
  for (int k = 1; k < 5; ++k) {
    ScalarProgram program;
    if (!scalarProgram(fn, origin->operand(k), program))
      return false;
  }
  std::optional<TmaBase> base = tmaBase(fn, origin->operand(0));
  if (!base)
    return false;
  for (const TmaBase::Term &t : base->terms)
    if (axisInfoOf(info, t.stride).dims[0].divisibility * bytes % 16)
      return false;
  return true;
}

static bool sameTensorMap(const TensorMapParam &a, const TensorMapParam &b) {
  auto sameSteps = [](const ScalarProgram &x, const ScalarProgram &y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto &s, const auto &t) {
      return s.kind == t.kind && s.width == t.width && s.value == t.value;
    });
  };
  return a.rank == b.rank && a.elementBytes == b.elementBytes && a.box == b.box &&
         a.swizzle == b.swizzle &&
         std::equal(a.fields.begin(), a.fields.end(), b.fields.begin(), b.fields.end(), sameSteps);
}

std::vector<int64_t> tmaBox(const SharedTile &t, int bytes) { return {t.rows, t.swizzle / bytes}; }

// The size of a map's dim of a base term: its coordinates are the kernel's
// (at most this), and nothing past them is ever copied.
constexpr int64_t kTermDimSize = 0x7fffffff;

std::string Lowering::tensorMapAddress(const Value *blockPtr, const SharedTile &tile, int bytes) {
  const Op *origin = blockPtrOrigin(blockPtr);
  auto it = tensorMapAddrs_.find(origin);
  if (it != tensorMapAddrs_.end()) {
    const TensorMapParam &m = tensorMaps_[it->second.first];
    std::vector<int64_t> box(m.rank - 2, 1);
    for (int64_t b : tmaBox(tile, bytes))
      box.push_back(b);
    if (m.box != box || m.elementBytes != bytes)
      throw std::logic_error("a block pointer's TMA copies of two different boxes");
    return it->second.second;
  }
  TensorMapParam m;
  TmaBase base = *tmaBase(fn, origin->operand(0)); // tmaMovable checked every field
  int terms = (int)base.terms.size();
  m.rank = 2 + terms;
  m.elementBytes = bytes;
  auto field = [&](const Value *v) {
    m.fields.emplace_back();
    scalarProgram(fn, v, m.fields.back());
  };
  // The base; the sizes, then the strides, outermost dim first: the terms',
  // then the block's (a transposed copy's map sees those two swapped).
  field(base.host);
  bool swap = tmaTransposed(blockPtr);
  for (int t = terms - 1; t >= 0; --t)
    m.fields.push_back({{ScalarStep::Const, ScalarStep::W64, kTermDimSize}});
  field(origin->operand(swap ? 2 : 1));
  field(origin->operand(swap ? 1 : 2));
  for (int t = terms - 1; t >= 0; --t)
    field(base.terms[t].stride);
  field(origin->operand(swap ? 4 : 3));
  field(origin->operand(swap ? 3 : 4));
  m.box.assign(terms, 1);
  for (int64_t b : tmaBox(tile, bytes))
    m.box.push_back(b);
  m.swizzle = tile.swizzle == 16 ? 0 : tile.swizzle;
  // Another block pointer computed alike (a warp-specialized producer's
  // copy of the consumers') shares its map.
  for (auto &[other, param] : tensorMapAddrs_)
    if (sameTensorMap(tensorMaps_[param.first], m))
      return (tensorMapAddrs_[origin] = param).second;
  std::string name = paramName(fn.body->args.size() + tensorMaps_.size());
  tensorMaps_.push_back(m);
  // The kernel parameter's generic address: TMA reads the map in param space.
  std::string addr = b.reg(RegClass::B64);
  b.emitPrologue("mov.b64 " + addr + ", " + name);
  b.emitPrologue("cvta.param.u64 " + addr + ", " + addr);
  tensorMapAddrs_[origin] = {tensorMaps_.size() - 1, addr};
  return addr;
}

std::string Lowering::tmaLeader() {
  if (tmaLeader_.empty()) {
    tmaLeader_ = b.reg(RegClass::Pred);
    b.emitPrologue("setp.eq.u32 " + tmaLeader_ + ", " + tid + ", 0");
  }
  return tmaLeader_;
}

static std::string stageBarrier(Lowering &L, const Pipeline &p, const std::string &slot) {
  if (p.ws)
    return L.ring.full(L, slot);
  std::string at = L.opReg("mad.lo.u32", RegClass::B32, {slot, "8", p.base});
  return L.opReg("add.u32", RegClass::B32, {at, imm(p.barriers)});
}

Lowering::TmaCoordinates Lowering::tmaCoordinates(const Value *blockPtr, const TVal &bp) {
  TmaCoordinates at;
  bool swap = tmaTransposed(blockPtr); // (its map sees the block's dims swapped)
  at.row = opReg("cvt.u32.u64", RegClass::B32, {bp.regs[swap ? 6 : 5]});
  at.col = opReg("cvt.u32.u64", RegClass::B32, {bp.regs[swap ? 5 : 6]});
  std::optional<TmaBase> base = tmaBase(fn, blockPtrOrigin(blockPtr)->operand(0));
  for (const TmaBase::Term &t : base->terms) {
    std::string c = val(t.coefficient).regs[0];
    if (dtypeBits(t.coefficient->type.dtype) == 64)
      c = opReg("cvt.u32.u64", RegClass::B32, {c});
    at.outer += ", " + c;
    ++at.rank;
  }
  return at;
}

void Lowering::copyTileByTma(const std::string &go, const std::string &map,
                             const TmaCoordinates &at, const SharedTile &tile, int bytes,
                             const std::string &dst, const std::string &bar) {
  forEachColumnBlock(*this, tile, bytes, at.col, dst,
                     [&](const std::string &x, const std::string &to) {
                       b.emit((go.empty() ? "" : "@" + go + " ") + "cp.async.bulk.tensor." +
                              std::to_string(at.rank) +
                              "d.shared::cluster.global.mbarrier::complete_tx::bytes [" + to +
                              "], [" + map + ", {" + x + ", " + at.row + at.outer + "}], [" +
                              bar + "]");
                     });
}

void Lowering::initTmaBarriers(Pipeline &p) {
  for (PipelinedLoad &l : p.loads)
    l.tensorMap = tensorMapAddress(l.load->operand(0), l.tile, l.bytes);
  std::string leader = tmaLeader();
  for (int s = 0; s < p.stages; ++s)
    b.emit("@" + leader + " mbarrier.init.shared::cta.b64 [" + stageBarrier(*this, p, imm(s)) +
           "], 1");
  b.emit("fence.mbarrier_init.release.cluster"); // seen by the copies' complete_tx
  barrier();
  p.phase = b.reg(RegClass::B32);
  b.emit("mov.u32 " + p.phase + ", 0");
}

void Lowering::issueTmaCopies(Pipeline &p, const std::string &slot, const std::string &valid) {
  std::string go = opReg("and.pred", RegClass::Pred, {tmaLeader(), valid});
  // Reads with ldmatrix (the generic proxy) come before the copies' writes.
  if (p.genericReads)
    b.emit("@" + go + " fence.proxy.async.shared::cta");
  std::string bar = stageBarrier(*this, p, slot);
  int64_t bytes = 0;
  for (const PipelinedLoad &l : p.loads)
    bytes += l.tile.bytes();
  b.emit("@" + go + " mbarrier.arrive.expect_tx.shared::cta.b64 _, [" + bar + "], " + imm(bytes));
  for (PipelinedLoad &l : p.loads) {
    std::string dst = opReg("mad.lo.u32", RegClass::B32, {slot, imm(l.slotBytes), p.base});
    dst = opReg("add.u32", RegClass::B32, {dst, imm(l.offset)});
    copyTileByTma(go, l.tensorMap, tmaCoordinates(l.load->operand(0), l.next), l.tile, l.bytes,
                  dst, bar);
  }
}

void Lowering::copyResidentTile(const Op &load) {
  const Value *v = load.result();
  int bytes = dtypeBytes(v->type.dtype);
  bool swap = tmaTransposed(load.operand(0));
  const std::vector<int64_t> &shape = v->type.shape;
  SharedTile tile = swap ? sharedTile(shape[1], shape[0] * bytes)
                         : sharedTile(shape[0], shape[1] * bytes); // as the dots read it
  int64_t at = load.intAttr("shared_tile"), barrierAt = load.intAttr("shared_barrier");
  std::string base = sharedAt(at);
  ResidentCopy &copy = residentCopies_[v];
  copy.barrier = sharedAt(barrierAt);
  copy.waited = false;
  for (const auto &op : load.parent->ops)
    if (op->kind == OpKind::For)
      for (auto [dot, i] : invariantOperands(*op))
        if (dot->operand(i) == v)
          copy.lastReader = op.get();
  std::string map = tensorMapAddress(load.operand(0), tile, bytes);
  std::string leader = tmaLeader();
  b.comment("a loop-invariant dot operand, copied by TMA into its tile");
  bufferBarrier();
  b.emit("@" + leader + " mbarrier.init.shared::cta.b64 [" + copy.barrier + "], 1");
  b.emit("fence.mbarrier_init.release.cluster"); // seen by the copy's complete_tx
  barrier();                                     // and by every thread that waits
  b.emit("@" + leader + " mbarrier.arrive.expect_tx.shared::cta.b64 _, [" + copy.barrier +
         "], " + imm(tile.bytes()));
  copyTileByTma(leader, map, tmaCoordinates(load.operand(0), val(load.operand(0))), tile, bytes,
                base, copy.barrier);
  TVal out{layoutFor(v), {}};
  out.sharedTile = base;
  bind(v, out);
}

void Lowering::waitResidentCopies(const Op &forOp) {
  if (residentCopies_.empty()) // (most loops: no need to look at their dots)
    return;
  for (auto [dot, i] : invariantOperands(forOp)) {
    auto it = residentCopies_.find(dot->operand(i));
    if (it == residentCopies_.end() || it->second.waited)
      continue;
    waitBarrier(it->second.barrier, "0");
    it->second.waited = true;
  }
}

void Lowering::releaseResidentCopies(const Op &forOp) {
  bool synced = false;
  for (auto it = residentCopies_.begin(); it != residentCopies_.end();) {
    if (it->second.lastReader != &forOp) {
      ++it;
      continue;
    }
    if (!synced) // every thread is done waiting
      barrier();
    synced = true;
    b.emit("@" + tmaLeader() + " mbarrier.inval.shared::cta.b64 [" + it->second.barrier + "]");
    it = residentCopies_.erase(it);
  }
}

void Lowering::waitBarrier(const std::string &bar, const std::string &parity) {
  std::string again = b.newLabel("tma_wait");
  std::string done = b.reg(RegClass::Pred);
  b.label(again);
  b.emit("mbarrier.try_wait.parity.shared::cta.b64 " + done + ", [" + bar + "], " + parity);
  b.emit("@!" + done + " bra " + again);
}

void Lowering::waitTmaStage(Pipeline &p) { waitBarrier(stageBarrier(*this, p, p.readSlot), p.phase); }

void Lowering::releaseTmaBarriers(Pipeline &p) {
  std::string leader = tmaLeader();
  for (int s = 0; s < p.stages; ++s)
    b.emit("@" + leader + " mbarrier.inval.shared::cta.b64 [" + stageBarrier(*this, p, imm(s)) +
           "]");
}

bool tmaStorable(const Function &fn, const AxisInfoMap &info, const Op &store) {
  const Value *value = store.operand(1);
  DType d = value->type.dtype;
  // Elements held in registers of their own width (f16, bf16; 32-bit types)
  // or fp8 (the tile writer packs those bytes, as for wgmma's fp8 operands),
  // in a tile of at most 64 KiB, as the scratch allows.
  bool fp8 = d == DType::F8E4M3 || d == DType::F8E5M2;
  return store.kind == OpKind::StoreBlock && value->type.isTensor() && dtypeBytes(d) <= 4 &&
         (fp8 || (dtypeBytes(d) >= 2 && storageBytes(d) == dtypeBytes(d))) &&
         value->type.numel() * dtypeBytes(d) <= 64 * 1024 &&
         value->type.shape == store.operand(0)->type.blockShape &&
         d == store.operand(0)->type.pointee && !tmaTransposed(store.operand(0)) &&
         tmaMovable(fn, info, store.operand(0), dtypeBytes(d));
}

void Lowering::emitReturn() {
  b.raw("TILEC_BULK_READS_DONE"); // the wait, once the kernel has deferred stores
  b.emit("ret");
}

// Whether `op` is in the body of a loop (a persistent kernel's epilogue).
static bool insideLoop(const Op &op) {
  for (const Block *block = op.parent; block && block->parent; block = block->parent->parent)
    if (block->parent->kind == OpKind::For || block->parent->kind == OpKind::While)
      return true;
  return false;
}

bool deferredTmaStore(const Function &fn, const GpuOptions &opts, const Op &store) {
  // Only a store in a loop gains: the loop goes on while the copy reads the
  // tile. One outside waits before ret all the same, and its tile of its own
  // would only take shared memory (attention's output tile at D=128: one block
  // per SM instead of two).
  return opts.deferTmaStores && store.intAttr("tma") && insideLoop(store) &&
         !storeMayBeReadBack(fn, store);
}

void Lowering::lowerTmaStore(const Op &op) {
  const Value *value = op.operand(1);
  DType d = value->type.dtype;
  int bytes = dtypeBytes(d); // in memory (an fp8 register holds 16 bits)
  const std::vector<int64_t> &shape = value->type.shape;
  SharedTile tile = sharedTile(shape[0], shape[1] * bytes);
  std::string map = tensorMapAddress(op.operand(0), tile, bytes);
  b.comment("TMA store");
  std::string leader = tmaLeader();
  // A deferred store's tile is its own (shared_staging): only its last copy
  // may still read it.
  const bool deferred = op.attr("shared_staging") != nullptr;
  std::string base;
  if (deferred) {
    int64_t at = op.intAttr("shared_staging");
    base = sharedAt(at);
    // Between two runs of this store, every other deferred store of its
    // block ran once and committed a group: this one's last copy is older
    // than those (subtiled epilogues store twice and wait for neither).
    int others = 0;
    for (const auto &o : op.parent->ops)
      others += o.get() != &op && o->kind == OpKind::StoreBlock && o->attr("shared_staging");
    b.emit("@" + leader + " cp.async.bulk.wait_group.read " + imm(others));
    barrier(); // every thread writes it once that copy has read it
  } else {
    needShared(tile.bytes());
    base = sharedBase();
    scratchBarrier();
  }
  stageOperand(value, d, tile, false, base, false);
  b.emit("fence.proxy.async.shared::cta"); // the copy reads through the async proxy
  barrier();
  TmaCoordinates at = tmaCoordinates(op.operand(0), val(op.operand(0))); // (never transposed)
  forEachColumnBlock(*this, tile, bytes, at.col, base,
                     [&](const std::string &x, const std::string &from) {
                       b.emit("@" + leader + " cp.async.bulk.tensor." + std::to_string(at.rank) +
                              "d.global.shared::cta.bulk_group [" + map + ", {" + x + ", " +
                              at.row + at.outer + "}], [" + from + "]");
                     });
  b.emit("@" + leader + " cp.async.bulk.commit_group");
  if (deferred)
    return; // the copy reads the tile while the kernel goes on
  if (storeMayBeReadBack(fn, op)) { // the writes land, and generic reads after see them
    b.emit("@" + leader + " cp.async.bulk.wait_group 0");
    b.emit("@" + leader + " fence.proxy.async.global");
  } else {
    b.emit("@" + leader + " cp.async.bulk.wait_group.read 0");
  }
  // (A write to these bytes after this waits for the leader: gpu-insert-barriers.)
}

// A load meets the store when their addresses may derive from the same argument.
bool storeMayBeReadBack(const Function &fn, const Op &store) {
  auto origins = [&](const Value *ptr) -> std::optional<PointerOrigins> {
    PointerOrigins o = pointerOrigins(fn, ptr); // block pointers too, through their base
    if (o.madeAtRunTime)
      return std::nullopt;
    return o;
  };
  std::optional<PointerOrigins> written = origins(store.operand(0));
  bool meets = !written;
  walk(*fn.body, [&](Op *op) {
    if (meets)
      return;
    switch (op->kind) {
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS:
    case OpKind::AtomicLoad:
    case OpKind::AtomicStore:
    case OpKind::AtomicPoll:
      meets = true;
      return;
    case OpKind::Load:
    case OpKind::LoadBlock: {
      std::optional<PointerOrigins> read = origins(op->operand(0));
      const std::vector<int> &w = written->arguments;
      meets = !read || std::any_of(read->arguments.begin(), read->arguments.end(), [&](int a) {
                return std::find(w.begin(), w.end(), a) != w.end();
              });
      return;
    }
    default:
      return;
    }
  });
  return meets;
}

} // namespace tilec::nvidia
