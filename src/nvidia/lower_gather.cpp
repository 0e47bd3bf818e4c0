// Data-dependent indexing through shared memory: tl.gather (the source stored
// row-major, each result element read at its index) and tl.histogram (counts
// kept in shared memory, updated with atom.shared.add by the thread that owns
// each value).
#include <algorithm>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

void Lowering::lowerGather(const Op &op) {
  const Type &st = op.operand(0)->type;
  DType d = st.dtype, id = op.operand(1)->type.dtype;
  int axis = (int)op.intAttr("axis"), rank = st.rank(), bytes = storageBytes(d);
  TVal src = materialize(op.operand(0), layoutFor(op.operand(0)));
  std::vector<int64_t> strides(rank, 1);
  for (int k = rank - 2; k >= 0; --k)
    strides[k] = strides[k + 1] * st.shape[k + 1];
  needShared(strides[0] * st.shape[0] * bytes);
  b.comment("gather along axis " + std::to_string(axis));
  scratchBarrier();
  for (int r = 0; r < src.layout->numRegs(); ++r)
    storeShared(sharedElement(src.layout, r, bytes), d, src.regs[r]);
  barrier();

  const LinearLayout *il = layoutFor(op.result()); // and the indices'
  TVal index = materialize(op.operand(1), il);
  TVal result{il, {}};
  for (int r = 0; r < il->numRegs(); ++r) {
    // The index as a row of the source, clamped into it (Triton leaves an
    // index outside the source undefined; shared memory must not be left).
    std::string at = dtypeBits(id) == 64 ? opReg("cvt.u32.u64", RegClass::B32, {index.regs[r]})
                                         : index.regs[r];
    at = opReg("max.s32", RegClass::B32, {at, "0"});
    at = opReg("min.s32", RegClass::B32, {at, imm(st.shape[axis] - 1)});
    std::string offset = opReg("mul.lo.u32", RegClass::B32, {at, imm(strides[axis] * bytes)});
    for (int dim = 0; dim < rank; ++dim)
      if (dim != axis && st.shape[dim] > 1)
        offset = opReg("mad.lo.u32", RegClass::B32,
                       {elementCoord(il, dim, r), imm(strides[dim] * bytes), offset});
    std::string addr = opReg("add.u32", RegClass::B32, {sharedBase(), offset});
    result.regs.push_back(loadShared(SharedAddr{addr, 0}, d));
  }
  bind(op.result(), result);
}

void Lowering::lowerHistogram(const Op &op) {
  const Type &xt = op.operand(0)->type, &out = op.result()->type;
  int64_t bins = out.shape[0];
  const LinearLayout *l = layoutFor(op.operand(0));
  TVal x = materialize(op.operand(0), l);
  TVal mask = op.operands.size() > 1 ? materialize(op.operand(1), l) : TVal{};
  needShared(bins * 4);
  b.comment("histogram of " + std::to_string(bins) + " bins");
  scratchBarrier();
  // The counts start at zero: each thread clears every threads-th bin.
  int threads = 32 * opts.numWarps;
  for (int64_t first = 0; first < bins; first += threads) {
    std::string bin = opReg("add.u32", RegClass::B32, {tid, imm(first)});
    std::string inside = opReg("setp.lt.u32", RegClass::Pred, {bin, imm(bins)});
    std::string addr = opReg("mad.lo.u32", RegClass::B32, {bin, "4", sharedBase()});
    b.emit("@" + inside + " st.shared.u32 [" + addr + "], 0");
  }
  barrier();
  std::string owner = ownerPredicate(l);
  DType d = xt.dtype;
  for (int r = 0; r < l->numRegs(); ++r) {
    // Counted once (by the element's owner), where 0 <= value < bins and unmasked.
    // As unsigned, a negative value is past every bin.
    bool wide = dtypeBits(d) == 64;
    std::string inside =
        opReg(wide ? "setp.lt.u64" : "setp.lt.u32", RegClass::Pred, {x.regs[r], imm(bins)});
    std::string v = wide ? opReg("cvt.u32.u64", RegClass::B32, {x.regs[r]}) : x.regs[r];
    if (!owner.empty())
      inside = opReg("and.pred", RegClass::Pred, {inside, owner});
    if (!mask.regs.empty())
      inside = opReg("and.pred", RegClass::Pred, {inside, mask.regs[r]});
    std::string addr = opReg("mad.lo.u32", RegClass::B32, {v, "4", sharedBase()});
    b.emit("@" + inside + " red.shared.add.u32 [" + addr + "], 1");
  }
  barrier();
  const LinearLayout *ol = layoutFor(op.result());
  TVal result{ol, {}};
  for (int r = 0; r < ol->numRegs(); ++r) {
    std::string addr =
        opReg("mad.lo.u32", RegClass::B32, {elementCoord(ol, 0, r), "4", sharedBase()});
    result.regs.push_back(loadShared(SharedAddr{addr, 0}, DType::I32));
  }
  bind(op.result(), result);
}

} // namespace tilec::nvidia
