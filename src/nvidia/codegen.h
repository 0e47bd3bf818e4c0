// The NVIDIA backend's entry: Tile IR after the passes → one PTX module with
// one kernel, and what launching it needs.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace tilec::nvidia {

struct GpuOptions {
  std::string arch = "sm_90a"; // sm_80, sm_86, sm_89, sm_90, sm_90a, ...
  int numWarps = 4;
  int numStages = 3;
  bool enableFpFusion = true; // let ptxas contract a*b+c into fma
  bool debug = false;         // device_assert and assert checked (else dropped, as in Triton)
  int maxRegisters = 0;       // maxnreg: registers per thread at most (0: ptxas decides)
  // TMA stores stage their tile in shared memory of their own and return
  // while the copy reads it (the next store of it, or the kernel's end,
  // waits); off: in the scratch, waiting for the read (less shared memory).
  bool deferTmaStores = true;
  // Warp-specialize where no loop asks: each outermost loop that holds a
  // pipelined loop, as if tl.range(warp_specialize=True) marked it (the
  // autotuner's variant of a config; tilec's own launch option).
  bool warpSpecializeLoops = false;
  // How the kernel is launched (Triton keeps these with the compile options too).
  bool launchPdl = false;         // programmatic dependent launch (tl.extra.cuda.gdc_*)
  bool launchCooperative = false; // a cooperative grid: all blocks resident at once
};

// How one runtime argument is passed: its PTX parameter type.
enum class ParamKind { U32, U64, F32, F64 };

// One step of a postfix program that computes a scalar from the kernel's
// runtime arguments at launch; every result is kept as its type keeps it
// (`width`: 64 bits, or 32 signed or unsigned, to which it wraps).
struct ScalarStep {
  enum Kind { Arg, Const, Add, Sub, Mul, Cast, Grid } kind = Const;
  enum Width { W64, S32, U32 } width = W64;
  int64_t value = 0; // Arg: the argument's index; Const: the value; Grid: the axis
};
using ScalarProgram = std::vector<ScalarStep>;
// The value of `program` for a launch's runtime arguments (their bits, in
// order) and grid. Throws std::invalid_argument for a malformed program.
int64_t evaluate(const ScalarProgram &program, const uint64_t *args, size_t numArgs,
                 const int64_t grid[3]);

// A tensor map (CUtensorMap) for TMA copies (cp.async.bulk.tensor) from a
// tensor descriptor or block pointer whose base, sizes and strides the kernel
// computes from its arguments alone: the launcher computes them too, encodes
// the map and passes it as a 128-byte parameter after the runtime arguments.
struct TensorMapParam {
  int rank = 2;
  int elementBytes = 2;
  std::vector<ScalarProgram> fields; // the base (bytes), each size, each stride (elements)
  std::vector<int64_t> box;          // elements of one copy along each dim, outermost first
  int swizzle = 0;                   // bytes: 0 (none), 32, 64 or 128
};

struct PtxKernel {
  std::string name;
  std::string ptx;
  std::vector<ParamKind> params; // one per runtime argument of the kernel
  std::vector<TensorMapParam> tensorMaps; // parameters after those
  int numThreads = 128;
  int sharedBytes = 0; // dynamic shared memory the launch must give
  int stagingBytes = 0; // of which deferred TMA stores' own tiles (GpuOptions::deferTmaStores)
  double ms = 0;       // time taken to emit
};

// The target's compute capability from its name: "sm_90a" → 90.
int archNumber(const std::string &arch);

// The GPU passes emitPtx runs, in order, on its copy of a kernel; and one of
// them by name ("gpu-assign-layouts", "gpu-coalesce", "gpu-propagate-layouts",
// "gpu-remove-conversions"), for golden tests. Throws std::invalid_argument for an unknown name.
void runGpuPasses(Function &fn, const GpuOptions &opts);
void runGpuPass(Function &fn, const std::string &name, const GpuOptions &opts);

// Lowers a verified, passed Function. Throws CompileError for what the
// target cannot run (naming the op's line), InternalError for compiler bugs.
PtxKernel emitPtx(const Function &fn, const GpuOptions &opts);
// The kernel as emitPtx lowers it, after the GPU passes, with its encodings
// and GPU ops, as text (asm["tilegpu"]; printed only when asked for).
std::string gpuIr(const Function &fn, const GpuOptions &opts);

} // namespace tilec::nvidia
