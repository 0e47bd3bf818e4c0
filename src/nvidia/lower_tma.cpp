// TMA copies of a pipeline's stages (sm_90): one thread copies each stage's
// tiles of host tensor descriptors with cp.async.bulk.tensor, straight into
// the swizzled tiles the dots read; an mbarrier per stage counts the bytes
// landed, and every thread waits on it. No thread computes addresses or
// bounds: the tensor map (encoded by the launcher) holds them, and the copy
// zero-fills what lies out of bounds.
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool isConstantOne(const Value *v) {
  return v->def && v->def->kind == OpKind::Constant && v->def->intAttr("value") == 1;
}

// The host descriptor's make_block_ptr that `l` loads from, or null.
const Op *hostDescriptor(const PipelinedLoad &l) {
  if (!l.block() || l.carried >= 0 || !l.base || !l.base->def)
    return nullptr;
  const Op *desc = l.base->def;
  return desc->kind == OpKind::MakeBlockPtr && desc->attr("host_descriptor") ? desc : nullptr;
}

// One copy moves a column block of the tile: `rows` lines of `swizzle` bytes.
int64_t copyColumns(const PipelinedLoad &l) { return l.tile.swizzle / l.bytes; }

} // namespace

bool Lowering::tmaCopyable(const PipelinedLoad &l) {
  const Op *desc = hostDescriptor(l);
  if (arch < 90 || !desc || l.transposed)
    return false;
  const std::vector<int64_t> &shape = l.load->result()->type.shape;
  const SharedTile &t = l.tile;
  // A 2-D tile as loaded, in lines of at most 256 rows (a copy's box), each
  // block of lines starting where the swizzle pattern does.
  if (shape.size() != 2 || t.rows != shape[0] || t.rowBytes != shape[1] * l.bytes ||
      t.rows % 8 || t.rows > 256 || desc->operands.size() != 7)
    return false;
  // TMA needs a 16-byte aligned base, 16-byte multiples as strides and a
  // unit stride along the rows: what the descriptor's specialization proved.
  auto multipleOf16 = [&](const Value *v) {
    return v->owner == fn.body.get() && (size_t)v->index < fn.argDivisibility.size() &&
           fn.argDivisibility[v->index] % 16 == 0;
  };
  if (!multipleOf16(desc->operand(0)) || !multipleOf16(desc->operand(3)) ||
      !isConstantOne(desc->operand(4)))
    return false;
  // One tensor map per descriptor: its box must be this tile's.
  int arg = (int)desc->intAttr("host_descriptor");
  for (const TensorMapParam &m : tensorMaps_)
    if (m.arg == arg && (m.box != std::vector<int64_t>{t.rows, copyColumns(l)} ||
                         m.elementBytes != l.bytes))
      return false;
  return true;
}

std::string Lowering::tensorMapAddress(const PipelinedLoad &l) {
  const Op *desc = hostDescriptor(l);
  int arg = (int)desc->intAttr("host_descriptor");
  auto it = tensorMapAddrs_.find(arg);
  if (it != tensorMapAddrs_.end())
    return it->second;
  TensorMapParam m;
  m.arg = arg;
  m.rank = 2;
  m.elementBytes = l.bytes;
  m.box = {l.tile.rows, copyColumns(l)};
  m.swizzle = l.tile.swizzle == 16 ? 0 : l.tile.swizzle;
  std::string name = fn.name + "_param_" + std::to_string(fn.body->args.size() + tensorMaps_.size());
  tensorMaps_.push_back(m);
  // The kernel parameter's generic address: TMA reads the map in param space.
  std::string addr = b.reg(RegClass::B64);
  b.emitPrologue("mov.b64 " + addr + ", " + name);
  b.emitPrologue("cvta.param.u64 " + addr + ", " + addr);
  return tensorMapAddrs_[arg] = addr;
}

std::string Lowering::tmaLeader() {
  if (tmaLeader_.empty()) {
    tmaLeader_ = b.reg(RegClass::Pred);
    b.emitPrologue("setp.eq.u32 " + tmaLeader_ + ", " + tid + ", 0");
  }
  return tmaLeader_;
}

static std::string stageBarrier(Lowering &L, const Pipeline &p, const std::string &slot) {
  std::string at = L.opReg("mad.lo.u32", RegClass::B32, {slot, "8", L.pipelineBase()});
  return L.opReg("add.u32", RegClass::B32, {at, imm(p.barriers)});
}

void Lowering::initTmaBarriers(Pipeline &p) {
  for (PipelinedLoad &l : p.loads)
    l.tensorMap = tensorMapAddress(l);
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
    std::string dst = opReg("mad.lo.u32", RegClass::B32, {slot, imm(l.slotBytes), pipelineBase()});
    dst = opReg("add.u32", RegClass::B32, {dst, imm(l.offset)});
    // Coordinates, innermost first: the block pointer's offsets (after its
    // base, sizes and strides).
    std::string row = opReg("cvt.u32.u64", RegClass::B32, {l.next.regs[5]});
    std::string col = opReg("cvt.u32.u64", RegClass::B32, {l.next.regs[6]});
    int64_t blocks = l.tile.rowBytes / l.tile.swizzle;
    for (int64_t c = 0; c < blocks; ++c) {
      std::string x = c ? opReg("add.u32", RegClass::B32, {col, imm(c * copyColumns(l))}) : col;
      std::string to =
          c ? opReg("add.u32", RegClass::B32, {dst, imm(c * l.tile.rows * l.tile.swizzle)}) : dst;
      b.emit("@" + go +
             " cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [" + to +
             "], [" + l.tensorMap + ", {" + x + ", " + row + "}], [" + bar + "]");
    }
  }
}

void Lowering::waitTmaStage(Pipeline &p) {
  std::string bar = stageBarrier(*this, p, p.readSlot);
  std::string again = b.newLabel("tma_wait");
  std::string done = b.reg(RegClass::Pred);
  b.label(again);
  b.emit("mbarrier.try_wait.parity.shared::cta.b64 " + done + ", [" + bar + "], " + p.phase);
  b.emit("@!" + done + " bra " + again);
}

void Lowering::releaseTmaBarriers(Pipeline &p) {
  std::string leader = tmaLeader();
  for (int s = 0; s < p.stages; ++s)
    b.emit("@" + leader + " mbarrier.inval.shared::cta.b64 [" + stageBarrier(*this, p, imm(s)) +
           "]");
  barrier(); // before the scratch over the stages is written
}

} // namespace tilec::nvidia
