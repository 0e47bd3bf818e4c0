// Atomics (tl.atomic_add ... tl.atomic_cas) as PTX atom instructions, one per
// element, run by the one thread that owns the element (a scalar atomic by
// thread 0); the old values reach the threads holding copies of an element
// through shared memory. Float max and min, which atom lacks, use the order
// of the bits: max of a non-negative float is atom.max.s32 of its bits, of a
// negative one atom.min.u32 (and the reverse for min), as Triton does; f16 and
// bf16 max and min, which atom lacks too, loop on atom.cas.b16.
// atomic_load/store are ld.acquire / st.release (or .relaxed) by the owner, so
// that every copy of a value agrees; atomic_poll spins on ld by the owner.
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

// The atom type suffix for `kind` on elements of `d` (see checkAtomicType in sema).
std::string atomType(const std::string &kind, DType d) {
  int bits = dtypeBits(d);
  if (kind == "and" || kind == "or" || kind == "xor" || kind == "xchg" || kind == "cas")
    return bits == 64 ? ".b64" : bits == 32 ? ".b32" : ".b16";
  if (d == DType::F16)
    return ".noftz.f16";
  if (d == DType::BF16)
    return ".noftz.bf16";
  if (d == DType::F32 || d == DType::F64)
    return d == DType::F32 ? ".f32" : ".f64";
  if (kind == "add")
    return bits == 64 ? ".u64" : ".u32";
  return std::string(isUnsigned(d) ? ".u" : ".s") + std::to_string(bits);
}

} // namespace

void Lowering::lowerAtomic(const Op &op) {
  bool cas = op.kind == OpKind::AtomicCAS, load = op.kind == OpKind::AtomicLoad,
       store = op.kind == OpKind::AtomicStore, poll = op.kind == OpKind::AtomicPoll;
  std::string kind = cas     ? "cas"
                     : load  ? "load"
                     : store ? "store"
                     : poll  ? "poll"
                             : op.strAttr("kind");
  const Type &ptrType = op.operand(0)->type;
  DType d = ptrType.pointee;
  if (d == DType::BF16 && arch < 90 && !load && !store)
    unsupported(op, "atomic_add of bfloat16 (it needs sm_90)");
  std::string order = "." + op.strAttr("sem") + "." + op.strAttr("scope") + ".global";
  // atom spelled as Triton's PTX spells it (ptxas takes the qualifiers in any
  // order): space, scope, semantics; a cas names its semantics before its scope.
  std::string scope = op.strAttr("scope"), sem = op.strAttr("sem");
  std::string head = cas ? "atom.global." + sem + "." + scope + "."
                         : "atom.global." + scope + "." + sem + ".";
  if (kind == "xchg")
    head += "exch";
  else
    head += kind;

  // Every operand in one layout: the result's (the layout passes'); an
  // atomic store's, its value's.
  const LinearLayout *layout = nullptr;
  if (ptrType.isTensor())
    layout = op.results.empty() ? layoutFor(op.operand(1)) : layoutFor(op.result());
  auto in = [&](int k) { return layout ? materialize(op.operand(k), layout) : val(op.operand(k)); };
  int valueAt = cas ? 2 : load ? -1 : 1, maskAt = load ? 1 : store || !cas ? 2 : -1;
  if (poll)
    maskAt = -1;
  TVal ptr = in(0), value = valueAt >= 0 ? in(valueAt) : TVal{};
  TVal cmp = cas ? in(1) : TVal{};
  TVal mask = maskAt >= 0 && (int)op.operands.size() > maskAt ? in(maskAt) : TVal{};
  std::string start; // a poll's time budget starts here
  if (poll && op.operands.size() > 2)
    start = opReg("mov.u64", RegClass::B64, {"%globaltimer"});

  std::string owner =
      layout ? ownerPredicate(layout) : opReg("setp.eq.u32", RegClass::Pred, {tid, "0"});
  bool halfMinMax = (kind == "max" || kind == "min") && (d == DType::F16 || d == DType::BF16);
  bool floatBits = (kind == "max" || kind == "min") && isFloat(d) && !halfMinMax;
  DType bitsType = dtypeBits(d) == 64 ? DType::I64 : DType::I32;
  TVal out{layout, {}};
  for (size_t r = 0; r < ptr.regs.size(); ++r) {
    std::string p = owner;
    if (!mask.regs.empty())
      p = p.empty() ? mask.regs[r] : opReg("and.pred", RegClass::Pred, {p, mask.regs[r]});
    std::string pred = p.empty() ? "" : "@" + p + " ";
    std::string addr = "[" + ptr.regs[r] + "]";
    if (store) {
      std::string v = value.regs[r];
      if (d == DType::I1)
        v = opReg("selp.u32", RegClass::B32, {"1", "0", v});
      b.emit(pred + "st" + order + memType(d) + " " + addr + ", " + v);
      continue;
    }
    if (load) {
      // Masked-off elements read 0; an i1 is a byte in memory.
      std::string dst = zeroedReg(d == DType::I1 ? DType::U32 : d);
      b.emit(pred + "ld" + order + memType(d) + " " + dst + ", " + addr);
      out.regs.push_back(d == DType::I1 ? opReg("setp.ne.u32", RegClass::Pred, {dst, "0"})
                                        : normalize(dst, d));
      continue;
    }
    if (poll) {
      // Read until the value is seen or the budget is spent; a thread that does
      // not own the element skips the loop.
      std::string seen = b.reg(RegClass::Pred), again = b.newLabel("poll"),
                  done = b.newLabel("poll_done");
      b.emit("setp.ne.u32 " + seen + ", 0, 0");
      if (!p.empty())
        b.emit("@!" + p + " bra " + done);
      b.label(again);
      std::string now = zeroedReg(d);
      b.emit("ld" + order + memType(d) + " " + now + ", " + addr);
      b.emit("mov.pred " + seen + ", " +
             compare(OpKind::CmpEq, d, normalize(now, d), value.regs[r]));
      b.emit("@" + seen + " bra " + done);
      if (!start.empty()) {
        std::string elapsed = opReg(
            "sub.u64", RegClass::B64, {opReg("mov.u64", RegClass::B64, {"%globaltimer"}), start});
        std::string spent =
            opReg("setp.ge.u64", RegClass::Pred, {elapsed, val(op.operand(2)).regs[0]});
        b.emit("@" + spent + " bra " + done);
      }
      b.emit("bra " + again);
      b.label(done);
      out.regs.push_back(seen);
      continue;
    }
    std::string old = zeroedReg(d); // masked-off elements return 0
    if (halfMinMax) {
      // atom has no scalar f16/bf16 min or max: compare-and-swap until no other
      // thread changed the element between the read and the swap.
      std::string again = b.newLabel("atomic_minmax"), done = b.newLabel("atomic_minmax_done");
      if (!p.empty())
        b.emit("@!" + p + " bra " + done);
      b.emit("ld.global.b16 " + old + ", " + addr);
      b.label(again);
      std::string want = opReg(std::string(kind == "max" ? "max" : "min") +
                                   (d == DType::BF16 ? ".bf16" : ".f16"),
                               RegClass::B16, {old, value.regs[r]});
      std::string seen = b.reg(RegClass::B16);
      b.emit("atom.global." + scope + "." + sem + ".cas.b16 " + seen + ", " + addr + ", " + old +
             ", " + want);
      std::string changed = opReg("setp.ne.b16", RegClass::Pred, {seen, old});
      b.emit("mov.b16 " + old + ", " + seen);
      b.emit("@" + changed + " bra " + again);
      b.label(done);
    } else if (floatBits) {
      // As integers: non-negative floats order like s32, negative ones reversed like u32.
      std::string bits =
          opReg(dtypeBits(d) == 64 ? "mov.b64" : "mov.b32", regClassOf(bitsType), {value.regs[r]});
      std::string negative = compare(OpKind::CmpLt, bitsType, bits, "0");
      std::string positive = opReg("not.pred", RegClass::Pred, {negative});
      std::string s = std::to_string(dtypeBits(d));
      bool max = kind == "max";
      std::string oldBits = zeroedReg(bitsType);
      for (bool neg : {false, true}) {
        std::string q = neg ? negative : positive;
        if (!p.empty())
          q = opReg("and.pred", RegClass::Pred, {q, p});
        std::string instr = head.substr(0, head.size() - 3) + ((max != neg) ? "max" : "min") +
                            (neg ? ".u" : ".s") + s;
        b.emit("@" + q + " " + instr + " " + oldBits + ", " + addr + ", " + bits);
      }
      b.emit(std::string(dtypeBits(d) == 64 ? "mov.b64 " : "mov.b32 ") + old + ", " + oldBits);
    } else if (cas) {
      b.emit(pred + head + atomType(kind, d) + " " + old + ", " + addr + ", " + cmp.regs[r] + ", " +
             value.regs[r]);
    } else {
      b.emit(pred + head + atomType(kind, d) + " " + old + ", " + addr + ", " + value.regs[r]);
    }
    out.regs.push_back(normalize(old, d));
  }

  if (store)
    return;
  // Threads holding copies of an element (all threads, for a scalar) read the
  // owner's old value back through shared memory, when anything uses it.
  d = op.result()->type.dtype;
  bool replicated = !layout || layout->replicatedLaneMask() || layout->replicatedWarpMask();
  if (poll && !replicated)
    barrier(); // the block waits for every poll
  if (replicated && (poll || useCount(uses(), op.result()) > 0)) {
    int bytes = storageBytes(d);
    int64_t numel = op.result()->type.isTensor() ? op.result()->type.numel() : 1;
    needShared(numel * bytes);
    auto address = [&](size_t r) {
      return layout ? sharedElement(layout, (int)r, bytes) : SharedAddr{sharedBase(), 0};
    };
    scratchBarrier();
    std::string skip = b.newLabel("atomic_copies");
    b.emit("@!" + owner + " bra " + skip);
    for (size_t r = 0; r < out.regs.size(); ++r)
      storeShared(address(r), d, out.regs[r]);
    b.label(skip);
    barrier();
    for (size_t r = 0; r < out.regs.size(); ++r)
      out.regs[r] = loadShared(address(r), d);
  }
  if (!layout)
    out.layout = nullptr;
  bind(op.result(), out);
}

} // namespace tilec::nvidia
