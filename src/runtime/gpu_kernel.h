// A kernel compiled for an NVIDIA target: the PTX, the cubin when an
// assembler was found, what launching needs, and the launch itself (module
// loaded once per device, arguments packed without Python in the loop); and
// the kernel as bytes in the disk cache, so another process skips ptxas.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nvidia/codegen.h"
#include "runtime/cuda_driver.h"
#include "runtime/compiler.h"

namespace tilec {

namespace cuda {
struct Kernel;
}

struct GpuKernel {
  std::string name, arch, ptx, cubin, assembler; // assembler: ptxas, nvJitLink or "" (driver JIT)
  std::vector<nvidia::ParamKind> params;
  std::vector<nvidia::TensorMapParam> tensorMaps; // encoded at each launch, passed after params
  int numThreads = 0, sharedBytes = 0, numRegs = -1, spillBytes = 0;
  int stackBytes = 0; // local memory a thread uses (Triton's n_spills is a quarter of it)
  int stagingBytes = 0; // deferred TMA stores' tiles, in sharedBytes (compile time only)
  nvidia::GpuOptions options; // as compiled (nvidia::gpuIr prints the kernel again from them)
  double emitMs = 0, assembleMs = 0; // as taken where it was compiled, cached or not
  bool fromCache = false;            // read from the disk cache, not compiled here

  // Loads the module on `device` (once) and returns it.
  const cuda::Kernel &loaded(int device);
  // One launch; `args` holds each runtime argument's bits (ints, pointers,
  // and doubles reinterpreted), in parameter order.
  void launch(std::array<int64_t, 3> grid, const std::vector<uint64_t> &args, void *stream,
              int device);

private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<cuda::Kernel>> modules_; // by device
  // Each tensor map as last encoded, and the base, sizes and strides it was encoded from.
  std::vector<std::pair<std::optional<std::array<int64_t, 11>>, cuda::TensorMap>> mapCache_;
};

// Lowers a compiled kernel to PTX for `options.arch` and, when `assemble`,
// to a cubin. Throws CompileError for what the target cannot run.
std::shared_ptr<GpuKernel> compileForGpu(const CompiledKernel &kernel,
                                         const nvidia::GpuOptions &options, bool assemble);
// Assembles k's PTX (the cubin, registers and spills) when compiled without.
void assembleGpuKernel(GpuKernel &k);

// Every field but the loaded modules and fromCache, as bytes (packFields)
// and back; nullptr for bytes that are not such a kernel, whatever they hold.
std::string gpuKernelToBytes(const GpuKernel &kernel);
std::shared_ptr<GpuKernel> gpuKernelFromBytes(const std::string &bytes);

// The disk cache of compiled kernels (runtime/disk_cache.h). Load gives
// nullptr on a miss, and on an entry that does not read back as a kernel, so
// the caller compiles; store gives false when nothing was written. Neither throws.
std::shared_ptr<GpuKernel> loadGpuKernel(const std::string &key);
bool storeGpuKernel(const std::string &key, const GpuKernel &kernel);

} // namespace tilec
