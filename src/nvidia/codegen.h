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
  // How the kernel is launched (Triton keeps these with the compile options too).
  bool launchPdl = false;         // programmatic dependent launch (tl.extra.cuda.gdc_*)
  bool launchCooperative = false; // a cooperative grid: all blocks resident at once
};

// How one runtime argument is passed: its PTX parameter type.
enum class ParamKind { U32, U64, F32, F64 };

// A tensor map (CUtensorMap) for a host tensor descriptor, which the launcher
// encodes from the descriptor's runtime arguments and passes as a 128-byte
// parameter after them; TMA copies (cp.async.bulk.tensor) read it.
struct TensorMapParam {
  int arg = 0;              // the runtime argument of its base; sizes, then strides follow
  int rank = 2;
  int elementBytes = 2;
  std::vector<int64_t> box; // elements of one copy along each dim, outermost first
  int swizzle = 0;          // bytes: 0 (none), 32, 64 or 128
};

struct PtxKernel {
  std::string name;
  std::string ptx;
  std::string gpuIr; // the kernel after the GPU layout passes, with encodings and GPU ops
  std::vector<ParamKind> params; // one per runtime argument of the kernel
  std::vector<TensorMapParam> tensorMaps; // parameters after those
  int numThreads = 128;
  int sharedBytes = 0; // dynamic shared memory the launch must give
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

} // namespace tilec::nvidia
