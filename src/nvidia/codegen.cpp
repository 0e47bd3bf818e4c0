// The NVIDIA backend's driver: kernel parameters, the op dispatch, and the
// PTX module around the lowered body.
#include "nvidia/codegen.h"

#include <cctype>
#include <chrono>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "cpu/numerics.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "nvidia/allocate_shared.h"
#include "nvidia/assign_layouts.h"
#include "nvidia/coalesce_memory.h"
#include "nvidia/complete_layouts.h"
#include "nvidia/insert_barriers.h"
#include "nvidia/lowering.h"
#include "nvidia/pipeline_loops.h"
#include "nvidia/propagate_layouts.h"
#include "nvidia/remove_conversions.h"
#include "nvidia/warp_specialize.h"
#include "passes/pipeline.h"

namespace tilec::nvidia {

int archNumber(const std::string &arch) {
  size_t at = arch.find_first_of("0123456789");
  if (at == std::string::npos)
    return 0;
  return std::atoi(arch.c_str() + at);
}

Lowering::Lowering(const Function &f, const GpuOptions &o, AxisInfoMap info)
    : fn(f), opts(o), axisInfo(std::move(info)) {
  arch = archNumber(opts.arch);
}

int minAccessBytes(const Function &fn) {
  int bytes = 4;
  walk(*fn.body, [&](Op *op) {
    if (op->kind == OpKind::Load || op->kind == OpKind::Store || op->kind == OpKind::LoadBlock ||
        op->kind == OpKind::StoreBlock)
      bytes = std::min(bytes, dtypeBytes(op->operand(0)->type.pointee));
  });
  return bytes;
}

int defaultVector(const std::vector<int64_t> &shape, int minAccessBytes, int numWarps) {
  int64_t numel = 1;
  for (int64_t s : shape)
    numel *= s;
  int64_t threads = 32 * (int64_t)numWarps;
  return (int)std::min<int64_t>(16 / minAccessBytes, std::max<int64_t>(1, numel / threads));
}

LinearLayout defaultBlockedLayout(const std::vector<int64_t> &shape, int minAccessBytes,
                                  int numWarps) {
  return blockedLayout(shape, defaultVector(shape, minAccessBytes, numWarps), numWarps);
}

const LinearLayout &encodedLayout(const Value *v) {
  const LayoutEncoding *e = layoutEncoding(v->type);
  TILEC_ASSERT(e, "a tensor without a layout after gpu-complete-layouts");
  return e->layout;
}

void Lowering::unsupported(const Op &op, const std::string &what) {
  throw CompileError(op.loc, what + " is not supported on " + opts.arch);
}

TVal &Lowering::val(const Value *v) {
  auto it = values_.find(v);
  TILEC_ASSERT(it != values_.end(), "a value is used before the NVIDIA lowering defined it");
  return it->second;
}

const LinearLayout *Lowering::intern(const LinearLayout &l) {
  if (interned_.count(&l))
    return &l;
  size_t h = l.hash();
  for (auto [it, end] = internedByHash_.equal_range(h); it != end; ++it)
    if (*it->second == l)
      return it->second;
  layouts_.push_back(l);
  interned_.insert(&layouts_.back());
  internedByHash_.emplace(h, &layouts_.back());
  return &layouts_.back();
}

const LinearLayout *Lowering::layoutFor(const Value *v) { return intern(encodedLayout(v)); }

std::string Lowering::opReg(std::string_view instr, RegClass rc,
                            std::initializer_list<std::string_view> srcs) {
  std::string d = b.reg(rc);
  b.emitWith(instr, d, srcs);
  return d;
}

std::string Lowering::opReg(std::string_view instr, RegClass rc,
                            const std::vector<std::string> &srcs) {
  std::string d = b.reg(rc);
  b.emitWith(instr, d, srcs);
  return d;
}

std::string Lowering::op1(std::string_view instr, DType d, std::string_view a) {
  return opReg(instr, regClassOf(d), {a});
}
std::string Lowering::op2(std::string_view instr, DType d, std::string_view a,
                          std::string_view c) {
  return opReg(instr, regClassOf(d), {a, c});
}
std::string Lowering::op3(std::string_view instr, DType d, std::string_view a,
                          std::string_view c, std::string_view e) {
  return opReg(instr, regClassOf(d), {a, c, e});
}

std::string Lowering::constantReg(DType d, double fv, int64_t iv) {
  std::string r;
  switch (regClassOf(d)) {
  case RegClass::Pred:
    r = opReg("setp.ne.u32", RegClass::Pred, {imm(iv != 0), "0"});
    known_[r] = iv != 0;
    return r;
  case RegClass::F32:
    return op1("mov.f32", d, immF32(fv));
  case RegClass::F64:
    return op1("mov.f64", d, immF64(fv));
  case RegClass::B16: { // raw bits of an f16, bf16 or fp8, rounded as the CPU backend rounds
    int64_t bits = (int64_t)cpu::floatToBits(cpu::roundFloat(fv, d), d);
    r = op1("mov.b16", d, imm(bits));
    known_[r] = bits;
    return r;
  }
  case RegClass::B32:
    r = op1("mov.b32", d, imm((int32_t)iv));
    known_[r] = (int32_t)iv;
    return r;
  case RegClass::B64:
    r = op1("mov.b64", d, imm(iv));
    known_[r] = iv;
    return r;
  }
  return "";
}

std::string Lowering::zeroedReg(DType d) {
  std::string r = constantReg(d, 0, 0);
  known_.erase(r);
  return r;
}

std::optional<int64_t> Lowering::knownValue(const std::string &reg) const {
  auto it = known_.find(reg);
  if (it == known_.end())
    return std::nullopt;
  return it->second;
}

std::string Lowering::knownConstant(RegClass rc, int64_t v) {
  auto key = std::make_pair(rc, v);
  auto it = knownConstants_.find(key);
  if (it != knownConstants_.end())
    return it->second;
  std::string r = b.reg(rc);
  if (rc == RegClass::Pred)
    b.emitPrologue("setp.ne.u32 " + r + ", " + imm(v != 0) + ", 0");
  else
    b.emitPrologue(std::string("mov") + regType(rc) + " " + r + ", " + imm(v));
  known_[r] = v;
  return knownConstants_[key] = r;
}

const UseCounts &Lowering::uses() {
  if (!uses_)
    uses_ = countUses(*fn.body);
  return *uses_;
}

void Lowering::lowerBlock(const Block &block) {
  size_t staged = residentStaged_.size();
  int64_t scratchAt = scratchAt_;
  for (auto &op : block.ops) {
    scratchAt_ = op->intAttr("scratch_offset", scratchAt_); // (gpu-allocate-shared)
    // gpu-insert-barriers modeled the scratch of ops with a mark but no
    // control regions (a loop's own conversions are its own).
    OpBarrier outer = opBarrier_;
    const Attr *mark = op->attr("barrier_before");
    opBarrier_ = OpBarrier{mark ? (int)op->intAttr("barrier_before") : -1,
                           mark && !holdsControl(*op), false, op.get()};
    if (!skipped.count(op.get()) && !readLater.count(op.get())) {
      lowerOp(*op);
      keepEncodings(*op);
      endScratch();
    }
    // The pass counted on this barrier: an op that wrote nothing after all
    // (or was not lowered) still orders what came before it.
    if (opBarrier_.mark == 1)
      barrier();
    opBarrier_ = outer;
  }
  // Tiles staged in this block serve no code after it (control may reach that
  // code without passing the staging).
  for (; residentStaged_.size() > staged; residentStaged_.pop_back())
    residentOperands_.erase(residentStaged_.back());
  scratchAt_ = scratchAt;
}

// The layout passes' decisions hold: a result lowered in another layout than
// its type's encoding is moved into it (ops whose lowering picks its own).
void Lowering::keepEncodings(const Op &op) {
  for (auto &r : op.results) {
    const LayoutEncoding *e = layoutEncoding(r->type);
    auto it = values_.find(r.get());
    if (!e || it == values_.end() || !it->second.isTensor() || !it->second.sharedTile.empty())
      continue;
    const LinearLayout *want = intern(e->layout);
    if (it->second.layout != want)
      it->second = convert(it->second, r->type.dtype, want);
  }
}

// Whether an op converts to or from fp8 (sm_89's cvt does; bit moves do not).
static bool convertsFp8(const Op &op) {
  auto fp8 = [](const Value *v) {
    return v->type.dtype == DType::F8E4M3 || v->type.dtype == DType::F8E5M2;
  };
  bool computes = op.has(ELEMENTWISE) || op.kind == OpKind::Dot || op.kind == OpKind::CumSum ||
                  (op.kind >= OpKind::ReduceSum && op.kind <= OpKind::ArgMin);
  if (!computes || op.kind == OpKind::Bitcast || op.kind == OpKind::Select)
    return false;
  // e5m2 widens by a shift on any target
  if (op.kind == OpKind::Cast && op.operand(0)->type.dtype == DType::F8E5M2 && !fp8(op.result()))
    return false;
  for (const Value *v : op.operands)
    if (fp8(v))
      return true;
  return !op.results.empty() && fp8(op.result());
}

void Lowering::lowerOp(const Op &op) {
  if (arch < 89 && convertsFp8(op))
    unsupported(op, "fp8 arithmetic and conversions (they need sm_89 or newer)");
  switch (op.kind) {
  case OpKind::Constant: {
    const Type &t = op.result()->type;
    std::string r = constantReg(t.dtype, op.floatAttr("value"), op.intAttr("value"));
    TVal v;
    v.layout = t.isTensor() ? layoutFor(op.result()) : nullptr;
    v.regs.assign(t.isTensor() ? v.layout->numRegs() : 1, r);
    v.uniform = t.isTensor();
    bind(op.result(), v);
    return;
  }
  case OpKind::ProgramId:
  case OpKind::NumPrograms: {
    static const char *const kAxis[] = {"x", "y", "z"};
    std::string special = (op.kind == OpKind::ProgramId ? "%ctaid." : "%nctaid.") +
                          std::string(kAxis[op.intAttr("axis")]);
    bind(op.result(), TVal{nullptr, {op1("mov.u32", DType::I32, special)}});
    return;
  }
  case OpKind::MakeRange:
  case OpKind::Splat:
  case OpKind::Broadcast:
  case OpKind::ExpandDims:
  case OpKind::Reshape:
  case OpKind::Trans:
  case OpKind::ConvertLayout:
    lowerShape(op);
    return;
  case OpKind::WarpSpecialize:
    lowerWarpSpecialize(op);
    return;
  case OpKind::Produce:
    lowerProduce(op);
    return;
  case OpKind::Cast:
  case OpKind::Bitcast:
  case OpKind::IntToPtr:
  case OpKind::PtrToInt:
    lowerCast(op);
    return;
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::IDiv:
  case OpKind::IRem:
  case OpKind::FRem:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Min:
  case OpKind::Max:
  case OpKind::UMulHi:
  case OpKind::Pow:
  case OpKind::Atan2:
  case OpKind::CmpEq:
  case OpKind::CmpNe:
  case OpKind::CmpLt:
  case OpKind::CmpLe:
  case OpKind::CmpGt:
  case OpKind::CmpGe:
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Erf:
  case OpKind::Select:
  case OpKind::Fma:
  case OpKind::AddPtr:
    lowerElementwise(op);
    return;
  case OpKind::Load:
  case OpKind::LoadBlock:
    if (auto it = pipelinedLoads.find(&op); it != pipelinedLoads.end()) {
      pipelinedLoad(*it->second, op, it->second->iv);
      return;
    }
    if (op.kind == OpKind::Load)
      lowerLoad(op);
    else
      lowerLoadBlock(op);
    return;
  case OpKind::AtomicRMW:
  case OpKind::AtomicCAS:
  case OpKind::AtomicLoad:
  case OpKind::AtomicStore:
  case OpKind::AtomicPoll:
    lowerAtomic(op);
    return;
  case OpKind::InlineAsm:
    lowerInlineAsm(op);
    return;
  case OpKind::Store:
    lowerStore(op);
    return;
  case OpKind::MakeBlockPtr:
  case OpKind::Advance:
    lowerBlockPtr(op);
    return;
  case OpKind::StoreBlock:
    lowerStoreBlock(op);
    return;
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    lowerReduce(op);
    return;
  case OpKind::ReduceWith:
    lowerReduceWith(op);
    return;
  case OpKind::ScanWith:
    lowerScanWith(op);
    return;
  case OpKind::Sort:
    lowerSort(op);
    return;
  case OpKind::Gather:
    lowerGather(op);
    return;
  case OpKind::Histogram:
    lowerHistogram(op);
    return;
  case OpKind::CumSum:
    lowerCumSum(op);
    return;
  case OpKind::Dot:
    lowerDot(op);
    return;
  case OpKind::For:
    lowerFor(op);
    return;
  case OpKind::If:
    lowerIf(op);
    return;
  case OpKind::While:
    lowerWhile(op);
    return;
  case OpKind::Print:
    lowerPrint(op);
    return;
  case OpKind::GdcWait: // griddepcontrol is sm_90's; before it, launches never overlap
    if (arch >= 90)
      b.emit("griddepcontrol.wait");
    return;
  case OpKind::GdcLaunchDependents:
    if (arch >= 90)
      b.emit("griddepcontrol.launch_dependents");
    return;
  case OpKind::Assert:
    lowerAssert(op);
    return;
  case OpKind::Return:
    emitReturn();
    return;
  case OpKind::Yield:
  case OpKind::Condition:
    return; // read by the op that owns the region
  }
}

namespace {

struct Placeholder {
  std::string_view name;
  std::string value;
};

// `text` with each placeholder (a TILEC_ name the lowering wrote where it did
// not know the value yet) replaced, in one pass. A placeholder alone on its
// line whose value is empty takes its line with it.
std::string fillPlaceholders(std::string text, const std::vector<Placeholder> &values) {
  if (text.find("TILEC_") == std::string::npos)
    return text; // (most kernels: no copy)
  std::string out;
  out.reserve(text.size());
  size_t from = 0;
  for (size_t at; (at = text.find("TILEC_", from)) != std::string::npos;) {
    out.append(text, from, at - from);
    size_t end = at;
    while (end < text.size() && (std::isupper((unsigned char)text[end]) || text[end] == '_'))
      ++end;
    std::string_view name(text.data() + at, end - at);
    const Placeholder *found = nullptr;
    for (const Placeholder &p : values)
      if (p.name == name)
        found = &p;
    if (!found)
      throw std::logic_error("PTX placeholder without a value: " + std::string(name));
    bool wholeLine = at > 0 && text[at - 1] == '\t' && end < text.size() && text[end] == '\n';
    if (found->value.empty() && wholeLine) {
      out.pop_back(); // the line's tab
      ++end;          // and its newline
    }
    out += found->value;
    from = end;
  }
  out.append(text, from, std::string::npos);
  return out;
}

ParamKind paramKindOf(DType d) {
  switch (d) {
  case DType::F32:
    return ParamKind::F32;
  case DType::F64:
    return ParamKind::F64;
  case DType::I64:
  case DType::U64:
  case DType::Ptr:
  case DType::BlockPtr:
    return ParamKind::U64;
  default:
    return ParamKind::U32;
  }
}

const char *paramType(ParamKind k) {
  static const char *const kNames[] = {".u32", ".u64", ".f32", ".f64"};
  return kNames[(int)k];
}

} // namespace

PtxKernel Lowering::run() {
  auto start = std::chrono::steady_clock::now();
  PtxKernel out;
  out.name = fn.name;
  out.numThreads = 32 * opts.numWarps;
  tid = b.reg(RegClass::B32);
  lane = b.reg(RegClass::B32);
  warp = b.reg(RegClass::B32);
  b.emitPrologue("mov.u32 " + tid + ", %tid.x");
  b.emitPrologue("and.b32 " + lane + ", " + tid + ", 31");
  b.emitPrologue("shr.u32 " + warp + ", " + tid + ", 5");

  std::ostringstream params;
  const Block &body = *fn.body;
  for (size_t k = 0; k < body.args.size(); ++k) {
    const Value *arg = body.args[k].get();
    ParamKind kind = paramKindOf(arg->type.dtype);
    out.params.push_back(kind);
    std::string name = paramName(k);
    params << (k ? ",\n" : "") << "\t.param " << paramType(kind) << " " << name;
    std::string r;
    if (arg->type.dtype == DType::I1) {
      std::string w = b.reg(RegClass::B32);
      b.emitPrologue("ld.param.u32 " + w + ", [" + name + "]");
      r = b.reg(RegClass::Pred);
      b.emitPrologue("setp.ne.u32 " + r + ", " + w + ", 0");
    } else {
      r = newReg(arg->type.dtype);
      b.emitPrologue(std::string("ld.param") + paramType(kind) + " " + r + ", [" + name + "]");
    }
    bind(arg, TVal{nullptr, {r}});
  }
  // The buffers gpu-allocate-shared placed (the scratch's extent is the
  // lowering's), and how many of their bytes are deferred TMA stores' tiles.
  int64_t stagingBytes = 0;
  walk(*fn.body, [&](Op *op) {
    for (SharedRange r : ownedShared(*op)) {
      useBuffer(r.offset, r.bytes);
      if (op->kind == OpKind::StoreBlock)
        stagingBytes += r.bytes;
    }
  });
  deferUntilRead(body);
  lowerBlock(body);
  if (!body.terminator() || body.terminator()->kind != OpKind::Return)
    emitReturn();
  out.numThreads = 32 * (opts.numWarps + producerWarps_);

  for (size_t k = 0; k < tensorMaps_.size(); ++k) // after the runtime arguments
    params << (body.args.empty() && !k ? "" : ",\n") << "\t.param .align 64 .b8 "
           << paramName(body.args.size() + k) << "[128]";
  out.tensorMaps = tensorMaps_;
  std::string text = b.functionBody();
  std::ostringstream ptx;
  ptx << "//\n// Generated by tilec for " << opts.arch << "\n//\n\n"
      << ".version " << (fp8MmaSync_ ? "8.4" : "8.0") // 8.4: mma.sync on fp8 operands
      << "\n.target " << opts.arch << "\n.address_size 64\n\n";
  ptx << b.globals();
  // Dynamic shared memory, as gpu-allocate-shared laid it out.
  if (!sharedAt_.empty())
    ptx << ".extern .shared .align 1024 .b8 tilec_smem[];\n";
  out.sharedBytes = (int)sharedEnd_;
  WarpRegisters split;
  if (producerWarps_ && opts.maxRegisters == 0)
    split = warpRegisters(opts.numWarps, out.sharedBytes);
  auto setmaxnreg = [&](const char *action, int n) {
    return split.maxnreg ? "setmaxnreg." + std::string(action) + ".sync.aligned.u32 " +
                               std::to_string(n) + ";"
                         : std::string();
  };
  text = fillPlaceholders(
      std::move(text), {{"TILEC_CONSUMER_REGISTERS", setmaxnreg("inc", split.consumers)},
             {"TILEC_PRODUCER_REGISTERS", setmaxnreg("dec", split.producer)},
             // Before each ret, once a deferred store exists: its copy has read its tile.
             {"TILEC_BULK_READS_DONE",
              stagingBytes ? "@" + tmaLeader_ + " cp.async.bulk.wait_group.read 0;" : ""}});
  ptx << "\n.visible .entry " << fn.name << "(\n"
      << params.str() << "\n)\n.maxntid " << out.numThreads << ", 1, 1\n";
  if (opts.maxRegisters > 0 || split.maxnreg > 0)
    ptx << ".maxnreg " << (opts.maxRegisters > 0 ? opts.maxRegisters : split.maxnreg) << "\n";
  // The body joins the header as a string: a stream would copy it as it grows.
  out.ptx = ptx.str();
  out.ptx.reserve(out.ptx.size() + text.size() + 4);
  out.ptx += "{\n";
  out.ptx += text;
  out.ptx += "}\n";
  out.stagingBytes = (int)stagingBytes;
  out.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

namespace {

struct GpuPass {
  const char *name;
  void (*run)(Function &, const GpuOptions &);
};

// The GPU pipeline, in order: each pass decides one kind of thing for the lowering.
const GpuPass kGpuPasses[] = {
    {"gpu-assign-layouts", assignLayouts},         // tensor-core accumulators
    {"gpu-coalesce", coalesceMemory},              // memory accesses
    {"gpu-propagate-layouts", propagateLayouts},   // everything computed from those
    {"gpu-complete-layouts", completeLayouts},     // the rest, as the lowering computes them
    {"gpu-remove-conversions", removeConversions}, // the conversions that move nothing
    {"gpu-pipeline-loops", pipelineLoops},         // the loads copied ahead, the dots run on
    {"gpu-warp-specialize", warpSpecialize},       // a producer warpgroup issues the copies
    {"gpu-allocate-shared", allocateShared},       // the buffers' offsets, the scratch's start
    {"gpu-insert-barriers", insertBarriers},       // a barrier where a write may meet an access
};

} // namespace

void runGpuPasses(Function &fn, const GpuOptions &opts) {
  for (const GpuPass &pass : kGpuPasses)
    pass.run(fn, opts);
}

void runGpuPass(Function &fn, const std::string &name, const GpuOptions &opts) {
  for (const GpuPass &pass : kGpuPasses)
    if (name == pass.name) {
      pass.run(fn, opts);
      return;
    }
  throw std::invalid_argument("unknown GPU pass '" + name + "'");
}

// A copy of `fn` through every GPU pass; `info`, its axis info.
static std::unique_ptr<Function> throughGpuPasses(const Function &fn, const GpuOptions &opts,
                                                  AxisInfoMap &info) {
  std::unique_ptr<Function> gpu = cloneFunction(fn); // the passes rewrite the copy
  bool dump = irDumpRequested();
  for (const GpuPass &pass : kGpuPasses) {
    if (std::string_view(pass.name) == "gpu-pipeline-loops") {
      info = analyzeAxisInfo(*gpu);
      pipelineLoops(*gpu, opts, info);
    } else {
      pass.run(*gpu, opts);
    }
    if (dump)
      std::cerr << "// -----// IR after " << pass.name << " (" << fn.name << ", " << opts.arch
                << ", " << opts.numWarps << " warps) //----- //\n"
                << printFunction(*gpu) << std::flush;
  }
  return gpu;
}

// The f32 accumulator elements each consumer thread of one warpgroup holds
// for the wgmma dots of a warp-specialized kernel's ring loops (0: the kernel
// is not warp-specialized); above kConsumerAccumulators they and the values
// around them do not fit in the registers setmaxnreg leaves it.
constexpr int64_t kConsumerAccumulators = 128;
static int64_t consumerAccumulators(Function &gpu) {
  int64_t elements = 0;
  walk(*gpu.body, [&](Op *ws) {
    if (ws->kind != OpKind::WarpSpecialize)
      return;
    walk(*ws->regions[0], [&](Op *loop) {
      if (!loop->intAttr("ws_ring"))
        return;
      for (const Op *dot : loopDots(*loop->regions[0]).dots)
        elements += std::max<int64_t>(1, dot->result()->type.numel() / 128);
    });
  });
  return elements;
}

// A copy of `fn` through every GPU pass, as emitPtx lowers it: with the
// options it lowers for (`used`) and the copy's axis info.
namespace {
struct PassedKernel {
  std::unique_ptr<Function> fn;
  AxisInfoMap info;
  GpuOptions used;
};
} // namespace

// The lowering only translates: every tensor value must carry the layout
// the passes chose for it.
static void requireLayouts(Function &fn) {
  auto check = [](const Value *v, const Op &at) {
    TILEC_ASSERT(!v->type.isTensor() || layoutEncoding(v->type),
                 "a tensor of '" + std::string(opInfo(at.kind).mnemonic) +
                     "' has no layout after the GPU passes");
  };
  walk(*fn.body, [&](Op *op) {
    for (auto &r : op->results)
      check(r.get(), *op);
    for (auto &region : op->regions)
      for (auto &arg : region->args)
        check(arg.get(), *op);
  });
}

static PassedKernel passedKernel(const Function &fn, const GpuOptions &opts) {
  if (opts.numWarps < 1 || opts.numWarps > 32 || (opts.numWarps & (opts.numWarps - 1)))
    throw std::invalid_argument("num_warps must be a power of 2 from 1 to 32, got " +
                                std::to_string(opts.numWarps));
  if (archNumber(opts.arch) < 80)
    throw std::invalid_argument("target " + opts.arch +
                                " is not supported: tilec needs sm_80 or newer");
  // The pipelining pass only marks ops: the axis info of the values it sees
  // is the lowering's too.
  PassedKernel out;
  out.fn = throughGpuPasses(fn, opts, out.info);
  out.used = opts;
  // One consumer warpgroup whose ring loops' accumulators would not fit in
  // its registers: the rows split over two consumer warpgroups, the layouts
  // laid out for 8 warps (as Triton partitions a warp-specialized kernel's
  // data), where the kernel still warp-specializes so.
  if (opts.numWarps == 4 && consumerAccumulators(*out.fn) > kConsumerAccumulators) {
    GpuOptions wide = opts;
    wide.numWarps = 8;
    AxisInfoMap wideInfo;
    std::unique_ptr<Function> split = throughGpuPasses(fn, wide, wideInfo);
    if (consumerAccumulators(*split) > 0) {
      out.fn = std::move(split);
      out.info = std::move(wideInfo);
      out.used = wide;
    }
  }
  verify(*out.fn, /*gpuLevel=*/true);
  requireLayouts(*out.fn);
  return out;
}

PtxKernel emitPtx(const Function &fn, const GpuOptions &opts) {
  auto start = std::chrono::steady_clock::now();
  PassedKernel passed = passedKernel(fn, opts);
  PtxKernel out = Lowering(*passed.fn, passed.used, std::move(passed.info)).run();
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::string gpuIr(const Function &fn, const GpuOptions &opts) {
  return printFunction(*passedKernel(fn, opts).fn);
}

} // namespace tilec::nvidia
