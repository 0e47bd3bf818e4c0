// PTX text → cubin. Runs ptxas (found through TILEC_PTXAS, CUDA_HOME/CUDA_PATH,
// PATH, /usr/local/cuda), else nvJitLink (dlopen), else leaves the PTX for the
// driver's JIT. TILEC_ASSEMBLER=ptxas|nvjitlink|driver forces one path.
#pragma once

#include <stdexcept>
#include <string>

namespace tilec {

// ptxas or nvJitLink rejected the PTX; the message holds the tool's own error
// lines, which cite PTX line numbers.
class AssemblerError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct AssembleOptions {
  int maxRegisters = 0;   // 0: no limit
  bool debugInfo = false; // -lineinfo
  int optLevel = 3;
};

struct Assembled {
  std::string cubin;  // empty: hand the PTX to the driver's JIT
  std::string tool;   // "ptxas", "nvJitLink" or "" (left for the driver's JIT)
  int numRegs = -1;   // -1 when unknown
  int spillBytes = 0; // spill stores + spill loads, in bytes, over all functions
  int stackBytes = 0; // the largest stack frame: local memory a thread uses, spills included
  std::string log;    // the tool's output (ptxas -v / nvJitLink info log)
  double ms = 0;      // wall time of the whole assembly
};

// The ptxas to run: $TILEC_PTXAS, $CUDA_HOME/bin/ptxas, $CUDA_PATH/bin/ptxas,
// ptxas on $PATH, /usr/local/cuda/bin/ptxas: the first that is executable;
// "" if none. Looked up once.
std::string findPtxas();

// Assembles `ptx` for `arch` ("sm_80", "sm_90a", ...). Throws AssemblerError
// when the tool rejects the PTX or cannot be run (no temp file, spawn failed),
// or when TILEC_ASSEMBLER names a tool that is missing or is not one of
// ptxas, nvjitlink, driver.
Assembled assemblePtx(const std::string &ptx, const std::string &arch,
                      const AssembleOptions &opts = {});

} // namespace tilec
