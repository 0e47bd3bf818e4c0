// tl.sort: Triton's bitonic network along the last dim, in a layout that puts
// a run of the line in each thread's registers, then lanes, then warps. A step
// pairing index bit j finds the partner in another register, with a butterfly
// shuffle, or through shared memory, by where bit j lives; each element then
// takes its partner where (x > y) != (flip ^ x-is-right), as the CPU backend does.
#include <map>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

void Lowering::lowerSort(const Op &op) {
  const Type &t = op.operand(0)->type;
  DType d = t.dtype;
  int axis = t.rank() - 1, bits = 0;
  while ((int64_t{1} << bits) < t.shape[axis])
    ++bits;
  bool descending = op.intAttr("descending") != 0, mergeOnly = op.intAttr("merge_only") != 0;
  const LinearLayout *l = layoutFor(op.result()); // the scan layout, in runs of 8
  std::vector<std::string> v = convert(val(op.operand(0)), d, l).regs;
  auto along = [&](const std::vector<Coords> &bases) {
    int n = 0;
    while (n < (int)bases.size() && bases[n][axis] != 0)
      ++n;
    return n;
  };
  int regBits = along(l->regs), laneBits = along(l->lanes);
  // Index bit k of register r's element: a constant for register bits ("0"/"1"
  // as a known value), else a predicate on the lane or warp (computed once).
  std::map<int, std::string> threadBit;
  auto known = [&](int k) { return k < regBits; };
  auto bitOf = [&](int k, int r) { return (r >> k) & 1; };
  auto threadPred = [&](int k) {
    auto it = threadBit.find(k);
    if (it != threadBit.end())
      return it->second;
    bool inLane = k < regBits + laneBits;
    std::string bit = opReg("bfe.u32", RegClass::B32,
                            {inLane ? lane : warp, imm(inLane ? k - regBits : k - regBits - laneBits),
                             "1"});
    return threadBit[k] = opReg("setp.ne.u32", RegClass::Pred, {bit, "0"});
  };
  int bytes = storageBytes(d);
  for (int s = mergeOnly ? bits : 1; s <= bits; ++s)
    for (int j = s - 1; j >= 0; --j) {
      // the partners, from the values before this step
      std::vector<std::string> partner(v.size());
      if (known(j)) {
        for (size_t r = 0; r < v.size(); ++r)
          partner[r] = v[r ^ ((size_t)1 << j)];
      } else if (j < regBits + laneBits) {
        for (size_t r = 0; r < v.size(); ++r)
          partner[r] = shuffle(*this, v[r], d, "bfly", 1 << (j - regBits));
      } else { // across warps: through shared memory, the partner 2^j elements away
        needShared(t.numel() * bytes);
        scratchBarrier();
        for (size_t r = 0; r < v.size(); ++r)
          storeShared(sharedElement(l, (int)r, bytes), d, v[r]);
        barrier();
        std::string right = threadPred(j);
        for (size_t r = 0; r < v.size(); ++r) {
          SharedAddr a = sharedElement(l, (int)r, bytes);
          int64_t step = (int64_t{1} << j) * bytes;
          std::string ahead = opReg("add.u32", RegClass::B32, {a.base, imm(a.offset + step)});
          std::string behind = opReg("add.u32", RegClass::B32, {a.base, imm(a.offset - step)});
          partner[r] = loadShared(
              SharedAddr{opReg("selp.b32", RegClass::B32, {behind, ahead, right}), 0}, d);
        }
      }
      for (size_t r = 0; r < v.size(); ++r) {
        std::string gt = compare(OpKind::CmpGt, d, v[r], partner[r]);
        // want = flip ^ isRight, known at compile time where both bits are
        bool flipKnown = s == bits || known(s), rightKnown = known(j);
        int flip = s == bits ? (int)descending : known(s) ? bitOf(s, (int)r) : 0;
        std::string take;
        if (flipKnown && rightKnown) {
          take = (flip ^ bitOf(j, (int)r)) ? opReg("not.pred", RegClass::Pred, {gt}) : gt;
        } else {
          std::string want = !rightKnown ? threadPred(j) : "";
          if (!flipKnown)
            want = want.empty() ? threadPred(s)
                                : opReg("xor.pred", RegClass::Pred, {want, threadPred(s)});
          int constant = (flipKnown ? flip : 0) ^ (rightKnown ? bitOf(j, (int)r) : 0);
          if (constant)
            want = opReg("not.pred", RegClass::Pred, {want});
          take = opReg("xor.pred", RegClass::Pred, {gt, want});
        }
        v[r] = select(d, take, partner[r], v[r]);
      }
    }
  bind(op.result(), TVal{l, v});
}

} // namespace tilec::nvidia
