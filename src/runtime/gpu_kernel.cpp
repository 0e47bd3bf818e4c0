// GPU compilation and launch.
#include "runtime/gpu_kernel.h"

#include <cstring>

#include "runtime/assembler.h"
#include "runtime/cuda_driver.h"

namespace tilec {

std::shared_ptr<GpuKernel> compileForGpu(const CompiledKernel &kernel,
                                         const nvidia::GpuOptions &options, bool assemble) {
  auto out = std::make_shared<GpuKernel>();
  nvidia::PtxKernel ptx = nvidia::emitPtx(*kernel.fn, options);
  out->name = ptx.name;
  out->arch = options.arch;
  out->ptx = std::move(ptx.ptx);
  out->params = std::move(ptx.params);
  out->numThreads = ptx.numThreads;
  out->sharedBytes = ptx.sharedBytes;
  out->options = options;
  out->emitMs = ptx.ms;
  if (assemble) {
    AssembleOptions ao;
    Assembled a = assemblePtx(out->ptx, options.arch, ao);
    out->cubin = std::move(a.cubin);
    out->assembler = a.tool;
    out->numRegs = a.numRegs;
    out->spillBytes = a.spillBytes;
    out->assembleMs = a.ms;
  }
  return out;
}

const cuda::Kernel &GpuKernel::loaded(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if ((int)modules_.size() <= device)
    modules_.resize(device + 1);
  if (!modules_[device]) {
    const std::string &image = cubin.empty() ? ptx : cubin;
    modules_[device] = cuda::loadKernel(device, image, name, sharedBytes);
    if (numRegs < 0)
      numRegs = modules_[device]->numRegs;
  }
  return *modules_[device];
}

void GpuKernel::launch(std::array<int64_t, 3> grid, const std::vector<uint64_t> &args,
                       void *stream, int device) {
  if (args.size() != params.size())
    throw std::invalid_argument("the kernel takes " + std::to_string(params.size()) +
                                " runtime arguments, got " + std::to_string(args.size()));
  if (grid[0] * grid[1] * grid[2] == 0)
    return;
  const cuda::Kernel &k = loaded(device);
  // Each argument in the width its parameter has.
  std::vector<uint64_t> storage(args.size());
  std::vector<void *> ptrs(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    switch (params[i]) {
    case nvidia::ParamKind::U32: {
      uint32_t v = (uint32_t)args[i];
      std::memcpy(&storage[i], &v, 4);
      break;
    }
    case nvidia::ParamKind::F32: {
      double d;
      std::memcpy(&d, &args[i], 8);
      float f = (float)d;
      std::memcpy(&storage[i], &f, 4);
      break;
    }
    default:
      storage[i] = args[i];
    }
    ptrs[i] = &storage[i];
  }
  cuda::launch(k, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2], numThreads,
               sharedBytes, stream, ptrs.data());
}

} // namespace tilec
