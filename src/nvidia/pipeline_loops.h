// The software pipelining pass (pipeline_loops.cpp), and the analysis of a
// loop's loads it shares with the lowering that carries its decisions out
// (pipeline_loads.cpp).
#pragma once

#include <map>
#include <set>
#include <vector>

#include "ir/ir.h"
#include "nvidia/axis_info.h"
#include "nvidia/codegen.h"
#include "nvidia/linear_layout.h"

namespace tilec::nvidia {

// Decides, for each for loop of `fn`, which loads are copied to shared memory
// num_stages-1 iterations ahead (a loop without tensor-core dots only where
// tl.range(num_stages=) asks), and records it in the IR:
//   for:             pipeline_stages (>= 2), pipeline_tma (1: every copy by TMA)
//   load/load_block: pipeline_copy (1: the tile of a dot operand, 2: a value no dot reads)
//   load_block:      resident_copy (1: outside the loops whose wgmma dots alone read it,
//                    copied by TMA straight into the tile they read)
//   dot:             pipeline_async (1: runs on across iterations),
//                    pipeline_deferred (k: accumulates into carried value k past the iteration)
void pipelineLoops(Function &fn, const GpuOptions &opts);
// The same, with analyzeAxisInfo(fn) given.
void pipelineLoops(Function &fn, const GpuOptions &opts, const AxisInfoMap &info);

// How the address of a load of loop `forOp` moves, so that copies can compute
// it for a later iteration: a pointer tensor the loop carries and advances by
// a loop-invariant offset, or one it computes from the induction variable;
// a block pointer it carries and advances by loop-invariant amounts, or one
// it advances from a loop-invariant block pointer at offsets that move with
// the loop (a tensor descriptor's).
struct CopyAddress {
  const Op *load = nullptr;
  int carried = 0;              // which loop-carried value is its (block) pointer; -1: none
  const Value *delta = nullptr; // pointers: what the loop adds each iteration
  // Block pointers: what each iteration adds to each dim's offset (null:
  // nothing); for a load at moving offsets from a loop-invariant block pointer
  // (a tensor descriptor's), that pointer and each dim's first offset, a sum
  // of scalars.
  std::vector<const Value *> deltas;
  const Value *base = nullptr;
  std::vector<std::vector<const Value *>> starts;
  // Offsets computed from the induction variable otherwise (k * BLOCK_K): by
  // dim, the body's ops they are computed from, recomputed for each iteration
  // copied.
  std::map<int, std::vector<const Op *>> offsetSlices;
  std::vector<const Op *> maskSlice; // the body's ops the mask is computed from
  // A pointer tensor the body computes from the induction variable (a_ptr +
  // (k * BK + rk) * stride): the ops it is computed from, recomputed for each
  // copied iteration; empty for a carried one.
  std::vector<const Op *> ptrSlice;
  bool block() const { return load->kind == OpKind::LoadBlock; }
};
// Fills `a` for `load`, a load or load_block of `forOp`'s body; false when its
// address cannot be computed ahead.
bool copyAddress(const Op &forOp, const Op &load, CopyAddress &a);

// The amount a loop adds to carried scalar `v` each iteration, when its
// yield is v + (something loop-invariant); else null.
const Value *carriedStep(const Block &body, const Value *v);

// The tensor-core dots of a loop body whose operands are 16 bits or
// narrower, or that run on wgmma (tf32 too), and the loads of the body they
// read (directly, or through a trans), in the order the dots read them.
struct OperandUse {
  const Op *dot;
  int operand;
  bool viaTrans;
};
struct LoopDots {
  std::vector<const Op *> dots;
  std::vector<const Op *> loads;
  std::map<const Op *, std::vector<OperandUse>> uses;
};
LoopDots loopDots(const Block &body);
// The bytes one stage of a copied tile takes: whole KiB, where swizzle
// patterns start (the consumers' stages and a warp-specialized producer's
// ring slots must agree on it).
int64_t stageSlotBytes(const SharedTile &tile);
// The bytes one stage of a load no dot reads takes (pipeline_copy = 2): its
// row-major buffer, in whole 128-byte lines.
int64_t valueSlotBytes(const Op &load);
// The bytes one stage of pipelined loop `forOp` (pipeline_stages >= 2) takes:
// the slots of its copied loads, one after another.
int64_t pipelineStageBytes(const Op &forOp);
// Whether `dot` runs on wgmma (its accumulator has the wgmma layout); on
// the tensor cores (wgmma's or mma.sync's layout; else on the CUDA cores).
bool isWgmmaDot(const Op &dot);
bool isTensorCoreDot(const Op &dot);
// The k elements an fp8 wgmma dot with an f32 accumulator sums on the tensor
// cores before adding them to the accumulator in f32, as Triton does for its
// max_num_imprecise_acc (0: one instruction's); 0 when it sums all of K in
// place (the default). Such a dot waits for its sums: it never runs on.
int64_t impreciseSumSpan(const Op &dot);
// The shared tile a use reads; true when it holds the loaded value transposed.
bool tileOfUse(const OperandUse &u, SharedTile &tile);

// The select(splat(c), zeros, carried) that `dot` accumulates into, read by
// the dot alone (a flattened loop starting a tile's accumulator again); else null.
const Op *resetAccumulator(const Op &dot, const UseCounts &counts);
// Whether `dot`'s result is read by the yield once and otherwise only inside
// ifs after it in `body` (which go to `drains`).
bool readLaterOnlyInIfs(const Block &body, const Op &dot, const UseCounts &counts,
                        std::set<const Op *> &drains);

} // namespace tilec::nvidia
