// The CUDA driver through dlopen: the few driver types, enum values and entry
// points tilec needs are declared here (values from cuda.h, never included),
// resolved once from libcuda.so.1, and wrapped so that every call is checked.
#include "runtime/cuda_driver.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include <dlfcn.h>

namespace tilec::cuda {
namespace {

// Driver types: opaque handles and plain integers.
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0; // CUDA_SUCCESS

// CUdevice_attribute values (CU_DEVICE_ATTRIBUTE_...).
constexpr int kAttrMaxThreadsPerBlock = 1;             // ..._MAX_THREADS_PER_BLOCK
constexpr int kAttrMaxSharedPerBlock = 8;              // ..._MAX_SHARED_MEMORY_PER_BLOCK
constexpr int kAttrWarpSize = 10;                      // ..._WARP_SIZE
constexpr int kAttrMaxRegistersPerBlock = 12;          // ..._MAX_REGISTERS_PER_BLOCK
constexpr int kAttrClockRate = 13;                     // ..._CLOCK_RATE (kHz)
constexpr int kAttrMultiprocessorCount = 16;           // ..._MULTIPROCESSOR_COUNT
constexpr int kAttrMemoryClockRate = 36;               // ..._MEMORY_CLOCK_RATE (kHz)
constexpr int kAttrGlobalMemoryBusWidth = 37;          // ..._GLOBAL_MEMORY_BUS_WIDTH (bits)
constexpr int kAttrL2CacheSize = 38;                   // ..._L2_CACHE_SIZE (bytes)
constexpr int kAttrComputeCapabilityMajor = 75;        // ..._COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;        // ..._COMPUTE_CAPABILITY_MINOR
constexpr int kAttrMaxSharedPerMultiprocessor = 81;    // ..._MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
constexpr int kAttrMaxRegistersPerMultiprocessor = 82; // ..._MAX_REGISTERS_PER_MULTIPROCESSOR
constexpr int kAttrMaxSharedPerBlockOptin = 97;        // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

// CUfunction_attribute values.
constexpr int kFuncMaxThreadsPerBlock = 0;    // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
constexpr int kFuncSharedSizeBytes = 1;       // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
constexpr int kFuncLocalSizeBytes = 3;        // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
constexpr int kFuncNumRegs = 4;               // CU_FUNC_ATTRIBUTE_NUM_REGS
constexpr int kFuncMaxDynamicSharedBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

// CUjit_option values.
constexpr int kJitInfoLogBuffer = 3;           // CU_JIT_INFO_LOG_BUFFER
constexpr int kJitInfoLogBufferSizeBytes = 4;  // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
constexpr int kJitErrorLogBuffer = 5;          // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6; // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES

// CUlaunchAttributeID values (CU_LAUNCH_ATTRIBUTE_...).
constexpr int kLaunchCooperative = 2;                     // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
constexpr int kLaunchClusterDimension = 4;                // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
constexpr int kLaunchProgrammaticStreamSerialization = 6; // ..._PROGRAMMATIC_STREAM_SERIALIZATION

constexpr int kPointerDeviceOrdinal = 9; // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL

constexpr int kStaticSharedLimit = 48 * 1024; // usable without opting in
constexpr size_t kJitLogBytes = 16 * 1024;
constexpr int kMaxDevices = 64;

// CUlaunchAttribute: an id, padding to 8 bytes, then a 64-byte value union.
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char raw[64];
    void *align; // the driver's union holds pointers
    int flag;
    unsigned dims[3];
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute layout");

// CUlaunchConfig.
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(LaunchConfig) == 56, "CUlaunchConfig layout");

// The entry points, resolved from libcuda.so.1.
struct Api {
  CUresult (*init)(unsigned);
  CUresult (*getErrorName)(CUresult, const char **);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*devicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxGetCurrent)(CUcontext *);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*ctxGetDevice)(CUdevice *);
  CUresult (*ctxSynchronize)();
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*funcGetAttribute)(int *, int, CUfunction);
  CUresult (*funcSetAttribute)(CUfunction, int, int);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **, void **);
  CUresult (*launchKernelEx)(const LaunchConfig *, CUfunction, void **, void **); // optional
  CUresult (*pointerGetAttribute)(void *, int, CUdeviceptr);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*streamSynchronize)(CUstream);
  // (map, data type, rank, address, sizes, byte strides, box, element strides,
  // interleave, swizzle, L2 promotion, out-of-bounds fill); optional
  CUresult (*tensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *,
                                   const uint64_t *, const unsigned *, const unsigned *, int, int,
                                   int, int);
};

Api api;
std::once_flag loadOnce;
bool loadOk = false;
std::string loadFailure;
int numDevices = 0;
std::atomic<bool> exiting{false};

std::array<std::atomic<CUcontext>, kMaxDevices> primaryContexts;
std::mutex retainMutex;

std::string describe(CUresult code) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.getErrorName)
    api.getErrorName(code, &name);
  if (api.getErrorString)
    api.getErrorString(code, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(code);
  if (text)
    s += " (" + std::string(text) + ")";
  return s;
}

inline void check(CUresult r, const char *call) {
  if (r != kSuccess)
    throw DriverError(call, r);
}

// Resolves every entry point; returns the first required one that is missing.
std::string resolveAll(void *lib) {
  std::string missing;
  auto need = [&](const char *name, auto &fn) {
    void *p = dlsym(lib, name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    if (!p && missing.empty())
      missing = name;
  };
  need("cuInit", api.init);
  need("cuGetErrorName", api.getErrorName);
  need("cuGetErrorString", api.getErrorString);
  need("cuDeviceGetCount", api.deviceGetCount);
  need("cuDeviceGet", api.deviceGet);
  need("cuDeviceGetName", api.deviceGetName);
  need("cuDeviceGetAttribute", api.deviceGetAttribute);
  need("cuDevicePrimaryCtxRetain", api.devicePrimaryCtxRetain);
  need("cuCtxGetCurrent", api.ctxGetCurrent);
  need("cuCtxSetCurrent", api.ctxSetCurrent);
  need("cuCtxGetDevice", api.ctxGetDevice);
  need("cuCtxSynchronize", api.ctxSynchronize);
  need("cuModuleLoadDataEx", api.moduleLoadDataEx);
  need("cuModuleGetFunction", api.moduleGetFunction);
  need("cuModuleUnload", api.moduleUnload);
  need("cuFuncGetAttribute", api.funcGetAttribute);
  need("cuFuncSetAttribute", api.funcSetAttribute);
  need("cuLaunchKernel", api.launchKernel);
  need("cuPointerGetAttribute", api.pointerGetAttribute);
  need("cuMemAlloc_v2", api.memAlloc);
  need("cuMemFree_v2", api.memFree);
  need("cuMemcpyHtoD_v2", api.memcpyHtoD);
  need("cuMemcpyDtoH_v2", api.memcpyDtoH);
  need("cuStreamSynchronize", api.streamSynchronize);
  // Optional (drivers before CUDA 11.8 lack it): resolved without complaint.
  api.launchKernelEx =
      reinterpret_cast<decltype(api.launchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
  api.tensorMapEncodeTiled = reinterpret_cast<decltype(api.tensorMapEncodeTiled)>(
      dlsym(lib, "cuTensorMapEncodeTiled"));
  return missing;
}

void markExiting() { exiting.store(true); }

bool loadDriver(std::string &why) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    why = std::string("cannot load the CUDA driver: ") + (err ? err : "libcuda.so.1");
    return false;
  }
  std::string missing = resolveAll(lib);
  if (!missing.empty()) {
    why = "libcuda.so.1 has no " + missing + " (driver too old?)";
    return false;
  }
  if (CUresult r = api.init(0); r != kSuccess) {
    why = DriverError("cuInit", r).what();
    return false;
  }
  if (CUresult r = api.deviceGetCount(&numDevices); r != kSuccess) {
    why = DriverError("cuDeviceGetCount", r).what();
    return false;
  }
  if (numDevices == 0) {
    why = "the CUDA driver reports no device";
    return false;
  }
  // Kernels destroyed by static destructors after this must not call into a
  // driver that may be tearing itself down.
  std::atexit(markExiting);
  return true;
}

void requireDriver() {
  std::string why;
  if (!available(&why))
    throw DriverError("CUDA driver not available: " + why);
}

void checkDevice(int device) {
  if (device >= 0 && device < numDevices && device < kMaxDevices)
    return;
  throw DriverError("invalid CUDA device " + std::to_string(device) + " (there are " +
                    std::to_string(numDevices) + ")");
}

CUcontext retainPrimary(int device) {
  std::lock_guard<std::mutex> lock(retainMutex);
  CUcontext ctx = primaryContexts[device].load(std::memory_order_relaxed);
  if (ctx)
    return ctx;
  CUdevice dev = 0;
  check(api.deviceGet(&dev, device), "cuDeviceGet");
  check(api.devicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  primaryContexts[device].store(ctx, std::memory_order_release);
  return ctx;
}

// Makes `device`'s primary context current; `device` is already checked.
inline void bindDevice(int device) {
  CUcontext want = primaryContexts[device].load(std::memory_order_acquire);
  if (!want)
    want = retainPrimary(device);
  CUcontext current = nullptr;
  check(api.ctxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != want)
    check(api.ctxSetCurrent(want), "cuCtxSetCurrent");
}

// Makes sure some context is current: device 0's primary one if none is.
void ensureContext() {
  requireDriver();
  CUcontext current = nullptr;
  check(api.ctxGetCurrent(&current), "cuCtxGetCurrent");
  if (!current)
    bindDevice(0);
}

int deviceAttribute(CUdevice dev, int attribute) {
  int value = 0;
  check(api.deviceGetAttribute(&value, attribute, dev), "cuDeviceGetAttribute");
  return value;
}

DeviceProps readDeviceProps(int device) {
  CUdevice dev = 0;
  check(api.deviceGet(&dev, device), "cuDeviceGet");
  char name[256] = {};
  check(api.deviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  DeviceProps p;
  p.name = name;
  p.major = deviceAttribute(dev, kAttrComputeCapabilityMajor);
  p.minor = deviceAttribute(dev, kAttrComputeCapabilityMinor);
  p.multiprocessorCount = deviceAttribute(dev, kAttrMultiprocessorCount);
  p.maxSharedMemPerBlock = deviceAttribute(dev, kAttrMaxSharedPerBlock);
  p.maxSharedMemPerBlockOptin = deviceAttribute(dev, kAttrMaxSharedPerBlockOptin);
  p.maxSharedMemPerMultiprocessor = deviceAttribute(dev, kAttrMaxSharedPerMultiprocessor);
  p.maxRegistersPerBlock = deviceAttribute(dev, kAttrMaxRegistersPerBlock);
  p.maxRegistersPerMultiprocessor = deviceAttribute(dev, kAttrMaxRegistersPerMultiprocessor);
  p.warpSize = deviceAttribute(dev, kAttrWarpSize);
  p.maxThreadsPerBlock = deviceAttribute(dev, kAttrMaxThreadsPerBlock);
  p.clockRateKHz = deviceAttribute(dev, kAttrClockRate);
  p.memClockRateKHz = deviceAttribute(dev, kAttrMemoryClockRate);
  p.memBusWidth = deviceAttribute(dev, kAttrGlobalMemoryBusWidth);
  p.l2CacheSize = deviceAttribute(dev, kAttrL2CacheSize);
  return p;
}

std::string jitLog(const char *error, const char *info) {
  std::string log = error;
  if (*info)
    log += (log.empty() ? "" : "\n") + std::string(info);
  return log;
}

// cuModuleLoadDataEx with JIT log buffers, so a PTX error carries its log.
CUmodule loadModule(const std::string &image) {
  std::vector<char> info(kJitLogBytes, 0), error(kJitLogBytes, 0);
  int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSizeBytes, kJitErrorLogBuffer,
                   kJitErrorLogBufferSizeBytes};
  void *values[] = {info.data(), reinterpret_cast<void *>(uintptr_t(kJitLogBytes - 1)),
                    error.data(), reinterpret_cast<void *>(uintptr_t(kJitLogBytes - 1))};
  CUmodule module = nullptr;
  // c_str(): PTX text must be NUL-terminated; a cubin ignores the extra byte.
  CUresult r = api.moduleLoadDataEx(&module, image.c_str(), 4, options, values);
  if (r != kSuccess)
    throw DriverError("cuModuleLoadDataEx", r, jitLog(error.data(), info.data()));
  return module;
}

// The shared_ptr deleter: unloads in the module's context, ignoring errors.
void unloadKernel(Kernel *k) noexcept {
  CUcontext ctx = primaryContexts[k->device].load(std::memory_order_acquire);
  if (k->module && ctx && !exiting.load()) {
    CUcontext previous = nullptr;
    api.ctxGetCurrent(&previous);
    if (previous != ctx)
      api.ctxSetCurrent(ctx);
    api.moduleUnload(k->module);
    if (previous != ctx)
      api.ctxSetCurrent(previous);
  }
  delete k;
}

int functionAttribute(CUfunction f, int attribute) {
  int value = 0;
  check(api.funcGetAttribute(&value, attribute, f), "cuFuncGetAttribute");
  return value;
}

void raiseDynamicSharedLimit(const Kernel &k, int bytes) {
  const DeviceProps &props = deviceProps(k.device);
  int limit = props.maxSharedMemPerBlockOptin - k.staticShared;
  if (bytes > limit)
    throw DriverError("kernel needs " + std::to_string(bytes) +
                      " bytes of dynamic shared memory, but " + props.name + " (device " +
                      std::to_string(k.device) + ") allows at most " + std::to_string(limit) +
                      " per block (opt-in limit " +
                      std::to_string(props.maxSharedMemPerBlockOptin) + " minus " +
                      std::to_string(k.staticShared) + " static)");
  check(api.funcSetAttribute(k.function, kFuncMaxDynamicSharedBytes, bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

LaunchAttribute launchAttribute(int id) {
  LaunchAttribute a;
  std::memset(&a, 0, sizeof(a));
  a.id = id;
  return a;
}

bool wantsCluster(const int *dims) { return dims && (dims[0] > 1 || dims[1] > 1 || dims[2] > 1); }

} // namespace

DriverError::DriverError(const std::string &call, int code, const std::string &detail)
    : std::runtime_error(call + " failed: " + describe(code) +
                         (detail.empty() ? "" : "\n" + detail)),
      code_(code) {}

DriverError::DriverError(const std::string &message) : std::runtime_error(message) {}

bool available(std::string *why) {
  std::call_once(loadOnce, [] { loadOk = loadDriver(loadFailure); });
  if (!loadOk && why)
    *why = loadFailure;
  return loadOk;
}

int deviceCount() {
  requireDriver();
  return numDevices;
}

int currentDevice() {
  requireDriver();
  CUcontext current = nullptr;
  check(api.ctxGetCurrent(&current), "cuCtxGetCurrent");
  if (!current)
    return 0;
  CUdevice dev = 0;
  check(api.ctxGetDevice(&dev), "cuCtxGetDevice");
  return dev;
}

void makeCurrent(int device) {
  requireDriver();
  checkDevice(device);
  bindDevice(device);
}

const DeviceProps &deviceProps(int device) {
  requireDriver();
  checkDevice(device);
  static std::mutex mutex;
  static std::map<int, DeviceProps> cache; // node-based: references stay valid
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(device);
  if (it == cache.end())
    it = cache.emplace(device, readDeviceProps(device)).first;
  return it->second;
}

std::shared_ptr<Kernel> loadKernel(int device, const std::string &image, const std::string &name,
                                   int dynamicSharedBytes) {
  makeCurrent(device);
  auto kernel = std::make_unique<Kernel>();
  kernel->device = device;
  kernel->module = loadModule(image);
  std::shared_ptr<Kernel> k(kernel.release(), unloadKernel); // unloads if we throw below
  CUresult r = api.moduleGetFunction(&k->function, k->module, name.c_str());
  if (r != kSuccess)
    throw DriverError("cuModuleGetFunction", r, "no kernel named '" + name + "' in the module");
  k->numRegs = functionAttribute(k->function, kFuncNumRegs);
  k->localBytes = functionAttribute(k->function, kFuncLocalSizeBytes);
  k->staticShared = functionAttribute(k->function, kFuncSharedSizeBytes);
  k->maxThreadsPerBlock = functionAttribute(k->function, kFuncMaxThreadsPerBlock);
  if (dynamicSharedBytes > kStaticSharedLimit)
    raiseDynamicSharedLimit(*k, dynamicSharedBytes);
  return k;
}

void launch(const Kernel &k, unsigned gx, unsigned gy, unsigned gz, unsigned blockThreads,
            unsigned sharedBytes, void *stream, void **params) {
  bindDevice(k.device);
  check(api.launchKernel(k.function, gx, gy, gz, blockThreads, 1, 1, sharedBytes, stream, params,
                         nullptr),
        "cuLaunchKernel");
}

void launchWithAttributes(const Kernel &k, unsigned gx, unsigned gy, unsigned gz,
                          unsigned blockThreads, unsigned sharedBytes, void *stream, void **params,
                          bool cooperative, bool pdl, int clusterDims[3]) {
  bool cluster = wantsCluster(clusterDims);
  if (!cooperative && !pdl && !cluster)
    return launch(k, gx, gy, gz, blockThreads, sharedBytes, stream, params);
  if (!api.launchKernelEx)
    throw DriverError("cuLaunchKernelEx is missing from this driver; it is needed for "
                      "cooperative, PDL or cluster launches (update the driver)");
  LaunchAttribute attrs[3];
  unsigned n = 0;
  if (cooperative) {
    attrs[n] = launchAttribute(kLaunchCooperative);
    attrs[n++].value.flag = 1;
  }
  if (pdl) {
    attrs[n] = launchAttribute(kLaunchProgrammaticStreamSerialization);
    attrs[n++].value.flag = 1;
  }
  if (cluster) {
    attrs[n] = launchAttribute(kLaunchClusterDimension);
    for (int i = 0; i < 3; ++i)
      attrs[n].value.dims[i] = unsigned(clusterDims[i] > 1 ? clusterDims[i] : 1);
    ++n;
  }
  LaunchConfig config{gx, gy, gz, blockThreads, 1, 1, sharedBytes, stream, attrs, n};
  bindDevice(k.device);
  check(api.launchKernelEx(&config, k.function, params, nullptr), "cuLaunchKernelEx");
}

TensorMap encodeTensorMap(uint64_t base, int elementBytes, int rank, const int64_t *sizes,
                          const int64_t *strides, const int64_t *box, int swizzle) {
  requireDriver();
  if (!api.tensorMapEncodeTiled)
    throw DriverError("cuTensorMapEncodeTiled is missing from this driver; TMA copies need "
                      "CUDA 12 or newer (update the driver)");
  TensorMap map{};
  for (int d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return map; // an empty tensor: the kernel copies nothing from it (every copy would be outside)
  // The driver's order: innermost dim first; strides in bytes, but the innermost's.
  uint64_t dims[5], byteStrides[4];
  unsigned boxDims[5], elementStrides[5];
  for (int d = 0; d < rank; ++d) {
    int from = rank - 1 - d;
    dims[d] = (uint64_t)sizes[from];
    boxDims[d] = (unsigned)box[from];
    elementStrides[d] = 1;
    if (d > 0)
      byteStrides[d - 1] = (uint64_t)strides[from] * elementBytes;
  }
  const int dataType = elementBytes == 1 ? 0 : elementBytes == 2 ? 1 : elementBytes == 4 ? 2 : 4;
  const int swizzleMode = swizzle == 32 ? 1 : swizzle == 64 ? 2 : swizzle == 128 ? 3 : 0;
  const int l2Promotion256 = 3;
  CUresult r = api.tensorMapEncodeTiled(&map, dataType, (unsigned)rank, (void *)base, dims,
                                        byteStrides, boxDims, elementStrides, /*interleave=*/0,
                                        swizzleMode, l2Promotion256, /*oobFill zero=*/0);
  if (r != kSuccess) {
    char where[64];
    std::snprintf(where, sizeof where, "tensor at 0x%llx, %d-byte elements", (unsigned long long)base,
                  elementBytes);
    std::string values;
    for (int d = 0; d < rank; ++d)
      values += (d ? ", " : "") + std::to_string(sizes[d]) + "/" + std::to_string(strides[d]) +
                "/" + std::to_string(box[d]);
    throw DriverError("cuTensorMapEncodeTiled", r,
                      std::string(where) + "; size/stride/box per dim: " + values);
  }
  return map;
}

uint64_t memAlloc(size_t bytes) {
  ensureContext();
  CUdeviceptr ptr = 0;
  check(api.memAlloc(&ptr, bytes), "cuMemAlloc_v2");
  return ptr;
}

void memFree(uint64_t ptr) {
  ensureContext();
  check(api.memFree(ptr), "cuMemFree_v2");
}

void copyToDevice(uint64_t dst, const void *src, size_t bytes) {
  ensureContext();
  check(api.memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD_v2");
}

void copyToHost(void *dst, uint64_t src, size_t bytes) {
  ensureContext();
  check(api.memcpyDtoH(dst, src, bytes), "cuMemcpyDtoH_v2");
}

void synchronize() {
  ensureContext();
  check(api.ctxSynchronize(), "cuCtxSynchronize");
}

int pointerDevice(uint64_t ptr) {
  if (!available())
    return -1;
  int ordinal = -1;
  if (api.pointerGetAttribute(&ordinal, kPointerDeviceOrdinal, ptr) != kSuccess)
    return -1;
  return ordinal;
}

} // namespace tilec::cuda
