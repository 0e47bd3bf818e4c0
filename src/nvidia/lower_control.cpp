// Structured control flow (for, if, while) as branches over uniform scalar
// conditions, loop-carried values as registers the loop rewrites, and the
// debugging ops (device printf through vprintf, asserts in debug mode).
#include <algorithm>
#include <array>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

std::string moveInstr(RegClass rc) { return std::string("mov") + regType(rc); }

// Fresh registers shaped like `v`, holding its values.
TVal copyInto(Lowering &L, const TVal &v, DType d) {
  TVal out{v.layout, {}};
  out.regs.reserve(v.regs.size());
  std::string mov = moveInstr(regClassOf(d));
  for (const std::string &r : v.regs) {
    out.regs.push_back(L.newReg(d));
    L.b.emitWith(mov, out.regs.back(), std::array<std::string_view, 1>{r});
  }
  return out;
}

// Fresh registers for control-flow result `v`, which `from` flows into: a
// tensor's in its layout; a scalar's as many as `from` has (a block
// pointer's base, shape, strides and offsets).
TVal freshRegisters(Lowering &L, const Value *v, const TVal &from) {
  TVal out{v->type.isTensor() ? L.layoutFor(v) : nullptr, {}};
  size_t n = out.layout ? (size_t)out.layout->numRegs() : from.regs.size();
  for (size_t r = 0; r < n; ++r)
    out.regs.push_back(L.newReg(v->type.dtype));
  return out;
}

} // namespace

// Writes `values` (converted to the targets' layouts) into the registers of
// `targets`, all read before any is written.
static void parallelMove(Lowering &L, const std::vector<TVal> &targets,
                         const std::vector<const Value *> &values) {
  std::vector<TVal> staged;
  std::vector<bool> inPlace; // already in the target's registers (an accumulator wgmma updates)
  for (size_t k = 0; k < values.size(); ++k) {
    const TVal &now = L.val(values[k]);
    inPlace.push_back(now.layout == targets[k].layout && now.regs == targets[k].regs);
    if (inPlace.back()) {
      staged.emplace_back();
      continue;
    }
    DType d = values[k]->type.dtype;
    TVal v = targets[k].isTensor() ? L.convert(L.val(values[k]), d, targets[k].layout)
                                   : L.val(values[k]);
    staged.push_back(copyInto(L, v, d));
  }
  for (size_t k = 0; k < values.size(); ++k) {
    if (inPlace[k])
      continue;
    RegClass rc = regClassOf(values[k]->type.dtype);
    for (size_t r = 0; r < targets[k].regs.size(); ++r)
      L.b.emit(moveInstr(rc) + " " + targets[k].regs[r] + ", " + staged[k].regs[r]);
  }
}

static std::vector<const Value *> operandsFrom(const Op &op, size_t from) {
  return std::vector<const Value *>(op.operands.begin() + from, op.operands.end());
}

// Whether a loop may carry `v` (bound to `init`) in its own registers: the
// result of an earlier loop or if (registers of its own, as no other value
// has them) that nothing else reads. A causal attention's second loop takes
// the first's accumulators so, not copying 100s of registers between them.
bool Lowering::ownsRegisters(const Value *v, const TVal &init) {
  if (!v->def || (v->def->kind != OpKind::For && v->def->kind != OpKind::If) ||
      useCount(uses(), v) != 1 || init.uniform || init.regs != val(v).regs)
    return false;
  std::vector<std::string_view> regs(init.regs.begin(), init.regs.end());
  std::sort(regs.begin(), regs.end());
  return std::all_of(regs.begin(), regs.end(),
                     [](std::string_view r) { return !r.empty() && r[0] == '%'; }) &&
         std::adjacent_find(regs.begin(), regs.end()) == regs.end();
}

void Lowering::lowerFor(const Op &op) {
  const Block &body = *op.regions[0];
  DType ivType = body.args[0]->type.dtype;
  std::string lb = val(op.operand(0)).regs[0], ub = val(op.operand(1)).regs[0],
              step = val(op.operand(2)).regs[0];
  std::vector<TVal> carried;
  for (size_t k = 3; k < op.operands.size(); ++k) {
    const TVal &now = val(op.operand(k));
    // The carried value's layout is the one the layout passes gave it (an
    // initial value cheap to recompute is computed there).
    TVal init =
        now.isTensor() ? materialize(op.operand(k), layoutFor(body.args[k - 2].get())) : now;
    carried.push_back(ownsRegisters(op.operand(k), init)
                          ? std::move(init)
                          : copyInto(*this, init, op.operand(k)->type.dtype));
  }
  std::string iv = copyInto(*this, TVal{nullptr, {lb}}, ivType).regs[0];
  stageLoopInvariantOperands(op);
  // From the copies before the first iteration to the drain after the last,
  // the scratch is the body's (above the stages).
  int64_t outerScratch = scratchAt_;
  if (!body.ops.empty())
    scratchAt_ = body.ops.front()->intAttr("scratch_offset", scratchAt_);
  std::unique_ptr<Pipeline> pipeline = planPipeline(op);
  if (pipeline) {
    beginPipeline(*pipeline, op, carried); // planPipeline registered its loads
    pipeline->iv = iv;
  }
  waitResidentCopies(op); // (after the first stages' copies went out)
  if (opBarrier_.mark == 1) // (staged and copied nothing after all: the body counts on it)
    bufferBarrier();
  std::string top = b.newLabel("for"), end = b.newLabel("for_end");
  b.label(top);
  std::string s = isUnsigned(ivType) ? (dtypeBits(ivType) == 64 ? ".u64" : ".u32")
                                     : (dtypeBits(ivType) == 64 ? ".s64" : ".s32");
  int sign = 0; // the step's sign, when it is a constant
  if (const Op *def = op.operand(2)->def; def && def->kind == OpKind::Constant)
    sign = def->intAttr("value") > 0 ? 1 : -1;
  std::string go;
  if (sign > 0) {
    go = opReg("setp.lt" + s, RegClass::Pred, {iv, ub});
  } else if (sign < 0) {
    go = opReg("setp.gt" + s, RegClass::Pred, {iv, ub});
  } else {
    std::string up = opReg("setp.lt" + s, RegClass::Pred, {iv, ub});
    std::string down = opReg("setp.gt" + s, RegClass::Pred, {iv, ub});
    std::string positive = opReg("setp.gt" + s, RegClass::Pred, {step, "0"});
    go = select(DType::I1, positive, up, down);
  }
  b.emit("@!" + go + " bra " + end);
  enterRegion();
  bind(body.args[0].get(), TVal{nullptr, {iv}});
  for (size_t k = 0; k < carried.size(); ++k)
    bind(body.args[k + 1].get(), carried[k]);
  if (pipeline && pipeline->flat)
    bindFlatIteration(*pipeline);
  lowerBlock(body);
  std::vector<TVal> moved;
  std::vector<const Value *> yielded;
  for (size_t k = 0; k < carried.size(); ++k)
    if (!pipeline || !pipeline->frozen.count((int)k)) {
      moved.push_back(carried[k]);
      yielded.push_back(body.terminator()->operand(k));
    }
  parallelMove(*this, moved, yielded);
  if (pipeline)
    endIteration(*pipeline);
  b.emit(std::string("add") + s + " " + iv + ", " + iv + ", " + step);
  b.emit("bra.uni " + top);
  b.label(end);
  enterRegion();
  if (pipeline) {
    endPipeline(*pipeline);
    for (PipelinedLoad &l : pipeline->loads)
      pipelinedLoads.erase(l.load);
  }
  scratchAt_ = outerScratch;
  releaseResidentCopies(op);
  for (size_t k = 0; k < carried.size(); ++k)
    bind(op.result((int)k), carried[k]);
}

// Where a region of `ifOp` reads what an asynchronous dot is still writing
// (a flattened loop's epilogue), it first waits for the dot.
void Lowering::waitForAsyncDotIn(const Op &ifOp, const Block &region) {
  for (auto &[load, p] : pipelinedLoads) {
    if (!p->drains.count(&ifOp))
      continue;
    bool reads = false;
    walk(const_cast<Block &>(region), [&](Op *inner) {
      for (const Value *v : inner->operands)
        reads |= v == p->dot->result();
    });
    if (reads) {
      b.emit("wgmma.wait_group.sync.aligned 0");
      return;
    }
  }
}

void Lowering::lowerIf(const Op &op) {
  std::string cond = val(op.operand(0)).regs[0];
  std::string otherwise = b.newLabel("else"), end = b.newLabel("endif");
  b.emit("@!" + cond + " bra " + otherwise);
  enterRegion();
  waitForAsyncDotIn(op, *op.regions[0]);
  lowerBlock(*op.regions[0]);
  const Op &thenYield = *op.regions[0]->terminator();
  std::vector<TVal> results;
  for (size_t k = 0; k < thenYield.operands.size(); ++k)
    results.push_back(freshRegisters(*this, op.result((int)k), val(thenYield.operand(k))));
  parallelMove(*this, results, operandsFrom(thenYield, 0));
  b.emit("bra.uni " + end);
  b.label(otherwise);
  enterRegion();
  waitForAsyncDotIn(op, *op.regions[1]);
  lowerBlock(*op.regions[1]);
  parallelMove(*this, results, operandsFrom(*op.regions[1]->terminator(), 0));
  b.label(end);
  enterRegion();
  for (size_t k = 0; k < results.size(); ++k)
    bind(op.result((int)k), results[k]);
}

void Lowering::lowerWhile(const Op &op) {
  const Block &before = *op.regions[0], &after = *op.regions[1];
  std::vector<TVal> carried;
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const Value *init = op.operand(k), *arg = before.args[k].get();
    carried.push_back(copyInto(*this,
                               arg->type.isTensor() ? materialize(init, layoutFor(arg)) : val(init),
                               init->type.dtype));
  }
  std::string top = b.newLabel("while"), end = b.newLabel("while_end");
  b.label(top);
  enterRegion();
  for (size_t k = 0; k < carried.size(); ++k)
    bind(before.args[k].get(), carried[k]);
  lowerBlock(before);
  const Op &cond = *before.terminator();
  std::vector<TVal> forwarded;
  for (size_t k = 1; k < cond.operands.size(); ++k)
    forwarded.push_back(freshRegisters(*this, op.result((int)k - 1), val(cond.operand(k))));
  parallelMove(*this, forwarded, operandsFrom(cond, 1));
  b.emit("@!" + val(cond.operand(0)).regs[0] + " bra " + end);
  for (size_t k = 0; k < forwarded.size(); ++k)
    bind(after.args[k].get(), forwarded[k]);
  lowerBlock(after);
  parallelMove(*this, carried, operandsFrom(*after.terminator(), 0));
  b.emit("bra.uni " + top);
  b.label(end);
  enterRegion();
  for (size_t k = 0; k < forwarded.size(); ++k)
    bind(op.result((int)k), forwarded[k]);
}

// --- printf

namespace {

std::string byteList(const std::string &s) {
  std::string out;
  for (unsigned char c : s)
    out += std::to_string(c) + ", ";
  return out + "0";
}

} // namespace

// Calls vprintf with a format string and 8-byte arguments.
static void emitPrintf(Lowering &L, const std::string &format,
                       const std::vector<std::pair<std::string, RegClass>> &args,
                       const std::string &pred) {
  static const char *kDecl =
      ".extern .func (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0,\n"
      "\t.param .b64 vprintf_param_1\n);\n";
  if (!L.printfDeclared) {
    L.b.global(kDecl);
    L.b.emitPrologue(".local .align 8 .b8 tilec_printf_buf[256]");
    L.printfDeclared = true;
  }
  std::string name = "tilec_fmt_" + std::to_string(++L.printStrings);
  L.b.global(".global .align 1 .b8 " + name + "[" + std::to_string(format.size() + 1) + "] = {" +
             byteList(format) + "};");
  std::string skip = L.b.newLabel("print_skip");
  if (!pred.empty())
    L.b.emit("@!" + pred + " bra " + skip);
  std::string buf = L.opReg("mov.u64", RegClass::B64, {"tilec_printf_buf"});
  for (size_t k = 0; k < args.size(); ++k) {
    auto [r, rc] = args[k];
    std::string slot = "[tilec_printf_buf+" + std::to_string(8 * k) + "]";
    L.b.emit(std::string(rc == RegClass::F64 ? "st.local.f64 " : "st.local.b64 ") + slot + ", " +
             r);
  }
  std::string fmt = L.opReg("mov.u64", RegClass::B64, {name});
  fmt = L.opReg("cvta.global.u64", RegClass::B64, {fmt});
  std::string gbuf = L.opReg("cvta.local.u64", RegClass::B64, {buf});
  L.b.raw("{\n\t.param .b64 p0;\n\tst.param.b64 [p0], " + fmt +
          ";\n\t.param .b64 p1;\n\tst.param.b64 [p1], " + gbuf +
          ";\n\t.param .b32 rv;\n\tcall.uni (rv), vprintf, (p0, p1);\n\t}");
  L.b.label(skip);
}

// printf's format: the user's text with every '%' doubled.
static std::string escapePercent(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

void Lowering::lowerPrint(const Op &op) {
  std::string prefix = escapePercent(op.strAttr("prefix"));
  bool hex = op.intAttr("hex") != 0;
  std::vector<std::string> pid;
  for (const char *axis : {"x", "y", "z"})
    pid.push_back(opReg("cvt.u64.u32", RegClass::B64,
                        {opReg("mov.u32", RegClass::B32, {std::string("%ctaid.") + axis})}));
  for (size_t a = 0; a < op.operands.size(); ++a) {
    const Type &t = op.operand(a)->type;
    const TVal &v = val(op.operand(a));
    std::string fmt = "pid (%lld, %lld, %lld) idx (%lld) " + prefix +
                      (op.operands.size() > 1 ? "(operand " + std::to_string(a) + ")" : "") + ": " +
                      (isFloat(t.dtype) ? "%g"
                       : hex            ? "0x%llx"
                                        : "%lld") +
                      "\n";
    std::string owner =
        v.isTensor() ? ownerPredicate(v.layout) : opReg("setp.eq.u32", RegClass::Pred, {tid, "0"});
    for (size_t r = 0; r < v.regs.size(); ++r) {
      std::string idx = opReg("mov.u64", RegClass::B64, {"0"});
      if (v.isTensor()) {
        int64_t stride = 1;
        for (int d = v.layout->rank() - 1; d >= 0; --d) {
          std::string c = opReg("cvt.u64.u32", RegClass::B64, {elementCoord(v.layout, d, (int)r)});
          idx = opReg("mad.lo.u64", RegClass::B64, {c, imm(stride), idx});
          stride *= v.layout->shape[d];
        }
      }
      std::string e = isFloat(t.dtype) ? castScalar(v.regs[r], t.dtype, DType::F64, false)
                                       : castScalar(v.regs[r], t.dtype, DType::I64, false);
      RegClass rc = isFloat(t.dtype) ? RegClass::F64 : RegClass::B64;
      emitPrintf(*this, fmt,
                 {{pid[0], RegClass::B64},
                  {pid[1], RegClass::B64},
                  {pid[2], RegClass::B64},
                  {idx, RegClass::B64},
                  {e, rc}},
                 owner);
    }
  }
}

void Lowering::lowerAssert(const Op &op) {
  if (!opts.debug)
    return; // as in Triton: device asserts are checked only in debug mode
  const TVal &c = val(op.operand(0));
  std::string text = escapePercent(op.strAttr("message"));
  std::string where = op.loc.source
                          ? op.loc.source->filename + ":" + std::to_string(op.loc.fileLine())
                          : std::string("<kernel>");
  std::string fmt = escapePercent(where) +
                    ": device assertion failed in program (%lld, %lld, %lld)" +
                    (text.empty() ? "" : ": " + text) + "\n";
  std::vector<std::pair<std::string, RegClass>> pid;
  for (const char *axis : {"x", "y", "z"})
    pid.push_back({opReg("cvt.u64.u32", RegClass::B64,
                         {opReg("mov.u32", RegClass::B32, {std::string("%ctaid.") + axis})}),
                   RegClass::B64});
  for (const std::string &r : c.regs) {
    std::string failed = opReg("not.pred", RegClass::Pred, {r});
    emitPrintf(*this, fmt, pid, failed);
    b.emit("@" + failed + " trap");
  }
}

} // namespace tilec::nvidia
