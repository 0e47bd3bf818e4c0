// The CUDA driver, reached through dlopen("libcuda.so.1") at run time: no CUDA
// header or library is needed to build tilec. Loads modules (cubin or PTX),
// reads device and kernel properties, launches kernels, and offers the few
// memory helpers that tests need. Every driver call is checked; a failure
// throws DriverError naming the call and the driver's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace tilec::cuda {

// A failed driver call, e.g.
// "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
class DriverError : public std::runtime_error {
public:
  // `detail`, when given, follows on the next lines (a JIT log, for instance).
  DriverError(const std::string &call, int code, const std::string &detail = "");
  explicit DriverError(const std::string &message); // not tied to one call
  int code() const { return code_; }                // 0 when not tied to a call

private:
  int code_ = 0;
};

// Loads libcuda.so.1 once (thread-safe), resolves the entry points, calls
// cuInit(0) and reports whether at least one device is there. When not, `why`
// receives the reason. Every other function throws DriverError when this is
// false.
bool available(std::string *why = nullptr);

int deviceCount();
// The device of the calling thread's current context, or 0 if it has none.
int currentDevice();
// Retains `device`'s primary context once and makes it current on the calling
// thread unless it already is; one driver call when it already is.
void makeCurrent(int device);

struct DeviceProps {
  std::string name;
  int major = 0, minor = 0;
  int multiprocessorCount = 0;
  int maxSharedMemPerBlock = 0;
  int maxSharedMemPerBlockOptin = 0;
  int maxSharedMemPerMultiprocessor = 0;
  int maxRegistersPerBlock = 0;
  int maxRegistersPerMultiprocessor = 0;
  int warpSize = 0;
  int maxThreadsPerBlock = 0;
  int clockRateKHz = 0;
  int memClockRateKHz = 0;
  int memBusWidth = 0; // bits
  int l2CacheSize = 0; // bytes
};

// Read once per device, then cached; the reference stays valid.
const DeviceProps &deviceProps(int device);

// A loaded module and its one kernel. The attributes are the driver's.
struct Kernel {
  void *module = nullptr;   // CUmodule
  void *function = nullptr; // CUfunction
  int device = 0;
  int numRegs = 0;
  int localBytes = 0;
  int staticShared = 0;
  int maxThreadsPerBlock = 0;
};

// Loads `image` (a cubin, or PTX text that the driver JIT-compiles, its log
// then in any DriverError) on `device` and looks up kernel `name`. When
// `dynamicSharedBytes` exceeds 48 KiB, raises the kernel's dynamic shared
// memory limit, or throws if the device cannot give that much. The module is
// unloaded when the last shared_ptr goes.
std::shared_ptr<Kernel> loadKernel(int device, const std::string &image, const std::string &name,
                                   int dynamicSharedBytes);

// Launches with blockThreads x 1 x 1 threads per block. `stream` is a CUstream
// (nullptr: the legacy default stream); `params` as for cuLaunchKernel.
void launch(const Kernel &k, unsigned gx, unsigned gy, unsigned gz, unsigned blockThreads,
            unsigned sharedBytes, void *stream, void **params);

// As launch, with launch attributes: a cooperative launch, programmatic
// dependent launch (PDL), and thread block clusters (`clusterDims` may be
// nullptr; dims <= 1 everywhere means no cluster). Uses cuLaunchKernelEx;
// falls back to launch when every attribute is off.
void launchWithAttributes(const Kernel &k, unsigned gx, unsigned gy, unsigned gz,
                          unsigned blockThreads, unsigned sharedBytes, void *stream, void **params,
                          bool cooperative, bool pdl, int clusterDims[3]);

// A TMA tensor map (CUtensorMap), as a kernel parameter takes it.
struct alignas(64) TensorMap {
  uint64_t words[16];
};
// Encodes the tiled tensor map of the `rank`-dim tensor at `base` (every array
// outermost dim first): `sizes` and `strides` in elements (the last stride is
// 1), copied `box` elements at a time into shared memory swizzled by
// `swizzle` bytes (0: none, 32, 64 or 128); out-of-bounds elements read as
// zero. Throws DriverError, with the values, when the driver refuses them.
TensorMap encodeTensorMap(uint64_t base, int elementBytes, int rank, const int64_t *sizes,
                          const int64_t *strides, const int64_t *box, int swizzle);

// Helpers for tests; they use the current context, or device 0's primary one.
uint64_t memAlloc(size_t bytes);
void memFree(uint64_t ptr);
void copyToDevice(uint64_t dst, const void *src, size_t bytes);
void copyToHost(void *dst, uint64_t src, size_t bytes);
void synchronize();
// The device that holds `ptr`, or -1 when it is not device memory (or there is
// no driver); never throws.
int pointerDevice(uint64_t ptr);

} // namespace tilec::cuda
