// A fake libcuda.so.1 for testing src/runtime/cuda_driver.cpp without a GPU:
// the entry points it resolves, with one or more pretend devices
// (FAKE_CUDA_DEVICES, default 1; 0 makes cuInit fail with NO_DEVICE), host
// memory for device memory, and a record of what was called (fake_stats).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>

namespace {

struct LaunchAttr {
  int id;
  char pad[4];
  union {
    char raw[64];
    int flag;
    unsigned dims[3];
  } value;
};
struct LaunchConfig {
  unsigned grid[3], block[3], shared;
  void *stream;
  LaunchAttr *attrs;
  unsigned numAttrs;
};

int contexts[8];
int modules, functions;
thread_local void *current = nullptr;
std::set<uint64_t> allocations;

int numDevices() {
  const char *n = std::getenv("FAKE_CUDA_DEVICES");
  return n ? std::atoi(n) : 1;
}

} // namespace

// What the test reads back (through dlsym "fake_stats").
struct FakeStats {
  int retains, setCurrents, unloads, launches, launchExes;
  unsigned grid[3], block, shared;
  int maxDynamicShared;
  int attrIds[4], attrFlags[4];
  unsigned clusterDims[3];
  unsigned numAttrs;
  float firstParam;
};
extern "C" {
FakeStats fake_stats;
}

extern "C" {
int cuInit(unsigned) { return numDevices() > 0 ? 0 : 100; }
int cuGetErrorName(int e, const char **s) {
  switch (e) {
  case 0:
    *s = "CUDA_SUCCESS";
    return 0;
  case 1:
    *s = "CUDA_ERROR_INVALID_VALUE";
    return 0;
  case 100:
    *s = "CUDA_ERROR_NO_DEVICE";
    return 0;
  case 218:
    *s = "CUDA_ERROR_INVALID_PTX";
    return 0;
  case 500:
    *s = "CUDA_ERROR_NOT_FOUND";
    return 0;
  }
  *s = nullptr;
  return 1;
}
int cuGetErrorString(int e, const char **s) {
  switch (e) {
  case 1:
    *s = "invalid argument";
    return 0;
  case 100:
    *s = "no CUDA-capable device is detected";
    return 0;
  case 218:
    *s = "a PTX JIT compilation failed";
    return 0;
  case 500:
    *s = "named symbol not found";
    return 0;
  }
  *s = nullptr;
  return 1;
}
int cuDeviceGetCount(int *n) {
  *n = numDevices();
  return 0;
}
int cuDeviceGet(int *d, int i) {
  *d = i;
  return i < numDevices() ? 0 : 1;
}
int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU", len);
  return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  switch (attr) {
  case 75:
    *v = 9;
    break; // major
  case 76:
    *v = 0;
    break; // minor
  case 16:
    *v = 132;
    break; // SMs
  case 10:
    *v = 32;
    break; // warp size
  case 97:
    *v = 232448;
    break; // opt-in shared per block
  default:
    *v = 1000 + attr;
  }
  return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int d) {
  fake_stats.retains++;
  *ctx = &contexts[d];
  return 0;
}
int cuCtxGetCurrent(void **ctx) {
  *ctx = current;
  return 0;
}
int cuCtxSetCurrent(void *ctx) {
  fake_stats.setCurrents++;
  current = ctx;
  return 0;
}
int cuCtxGetDevice(int *d) {
  *d = int(static_cast<int *>(current) - contexts);
  return 0;
}
int cuCtxSynchronize() { return 0; }
int cuStreamSynchronize(void *) { return 0; }
int cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts, void **vals) {
  if (std::strncmp(static_cast<const char *>(image), "bad", 3) != 0) {
    *m = &modules;
    return 0;
  }
  for (unsigned i = 0; i < n; ++i)
    if (opts[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
      std::strcpy(static_cast<char *>(vals[i]), "ptxas application ptx input, line 3; error");
  return 218;
}
int cuModuleGetFunction(void **f, void *, const char *name) {
  *f = &functions;
  return std::strcmp(name, "missing") == 0 ? 500 : 0;
}
int cuModuleUnload(void *) {
  fake_stats.unloads++;
  return 0;
}
int cuFuncGetAttribute(int *v, int attr, void *) {
  *v = attr == 4 ? 40 : attr == 1 ? 1024 : attr == 0 ? 768 : 0;
  return 0;
}
int cuFuncSetAttribute(void *, int attr, int v) {
  if (attr == 8)
    fake_stats.maxDynamicShared = v;
  return 0;
}
int cuLaunchKernel(void *, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned, unsigned,
                   unsigned shared, void *, void **params, void **) {
  fake_stats.launches++;
  unsigned g[3] = {gx, gy, gz};
  std::memcpy(fake_stats.grid, g, sizeof(g));
  fake_stats.block = bx;
  fake_stats.shared = shared;
  std::memcpy(&fake_stats.firstParam, params[0], sizeof(float));
  return 0;
}
int cuLaunchKernelEx(const LaunchConfig *c, void *, void **, void **) {
  fake_stats.launchExes++;
  std::memcpy(fake_stats.grid, c->grid, sizeof(c->grid));
  fake_stats.block = c->block[0];
  fake_stats.shared = c->shared;
  fake_stats.numAttrs = c->numAttrs;
  for (unsigned i = 0; i < c->numAttrs && i < 4; ++i) {
    fake_stats.attrIds[i] = c->attrs[i].id;
    fake_stats.attrFlags[i] = c->attrs[i].value.flag;
    if (c->attrs[i].id == 4)
      std::memcpy(fake_stats.clusterDims, c->attrs[i].value.dims, sizeof(unsigned[3]));
  }
  return 0;
}
int cuPointerGetAttribute(void *data, int attr, uint64_t ptr) {
  if (attr != 9 || !allocations.count(ptr))
    return 1;
  *static_cast<int *>(data) = 0;
  return 0;
}
int cuMemAlloc_v2(uint64_t *p, size_t n) {
  *p = uint64_t(uintptr_t(std::malloc(n)));
  allocations.insert(*p);
  return 0;
}
int cuMemFree_v2(uint64_t p) {
  allocations.erase(p);
  std::free(reinterpret_cast<void *>(uintptr_t(p)));
  return 0;
}
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
  std::memcpy(reinterpret_cast<void *>(uintptr_t(d)), s, n);
  return 0;
}
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
  std::memcpy(d, reinterpret_cast<void *>(uintptr_t(s)), n);
  return 0;
}
}
