// Checks the CUDA driver wrapper on a machine without a GPU (or without
// libcuda): available() says why not, and every other entry point fails with
// a DriverError that repeats the reason instead of crashing. With
// TILEC_TEST_FAKE_DRIVER=1 and tests/cpp/fake_libcuda.cpp built as
// libcuda.so.1 on LD_LIBRARY_PATH, it checks the loaded paths against the
// fake. On a machine with a GPU it loads and launches a tiny PTX kernel.
#include "runtime/cuda_driver.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <dlfcn.h>

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string &what) {
  (ok ? passed : failed)++;
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
}

// `fn` must throw a DriverError whose message contains `needle`.
void expectDriverError(const std::function<void()> &fn, const std::string &needle,
                       const std::string &what) {
  try {
    fn();
    check(false, what + " (no exception)");
  } catch (const tilec::cuda::DriverError &e) {
    bool ok = std::strstr(e.what(), needle.c_str()) != nullptr;
    check(ok, what + ": " + e.what());
  }
}

void testWithoutDevice(const std::string &why) {
  using namespace tilec::cuda;
  check(!why.empty(), "available() gives a reason: " + why);
  std::string again;
  check(!available(&again) && again == why, "available() is stable");
  expectDriverError([] { deviceCount(); }, why, "deviceCount throws");
  expectDriverError([] { currentDevice(); }, why, "currentDevice throws");
  expectDriverError([] { makeCurrent(0); }, why, "makeCurrent throws");
  expectDriverError([] { deviceProps(0); }, why, "deviceProps throws");
  expectDriverError([] { loadKernel(0, "not a cubin", "k", 0); }, why, "loadKernel throws");
  expectDriverError([] { memAlloc(16); }, why, "memAlloc throws");
  expectDriverError([] { synchronize(); }, why, "synchronize throws");
  check(pointerDevice(0x1000) == -1, "pointerDevice is -1 without a driver");
  DriverError plain("a message");
  check(std::string(plain.what()) == "a message" && plain.code() == 0, "DriverError(message)");
}

const char *kAddOnePtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry add_one(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd2], %f2;
  ret;
}
)";

void testWithDevice() {
  using namespace tilec::cuda;
  const DeviceProps &p = deviceProps(0);
  check(p.multiprocessorCount > 0 && p.warpSize == 32, "deviceProps: " + p.name);
  auto k = loadKernel(0, kAddOnePtx, "add_one", 0);
  check(k->numRegs > 0 && k->maxThreadsPerBlock > 0, "loadKernel reads attributes");
  uint64_t buf = memAlloc(4);
  float x = 41.0f;
  copyToDevice(buf, &x, 4);
  void *params[] = {&buf};
  launch(*k, 1, 1, 1, 32, 0, nullptr, params);
  synchronize();
  copyToHost(&x, buf, 4);
  check(x == 42.0f, "launch adds one");
  check(pointerDevice(buf) == 0 && pointerDevice(uint64_t(uintptr_t(&x))) == -1, "pointerDevice");
  memFree(buf);
  expectDriverError([] { loadKernel(0, ".version 8.0\n.target sm_80\nbogus;", "k", 0); },
                    "cuModuleLoadDataEx failed", "bad PTX gives the JIT log");
  expectDriverError([&] { loadKernel(0, kAddOnePtx, "missing", 0); }, "missing",
                    "unknown kernel name");
  expectDriverError([] { loadKernel(0, kAddOnePtx, "add_one", 1 << 30); }, "dynamic shared",
                    "too much shared memory");
}

// Mirrors the struct in fake_libcuda.cpp.
struct FakeStats {
  int retains, setCurrents, unloads, launches, launchExes;
  unsigned grid[3], block, shared;
  int maxDynamicShared;
  int attrIds[4], attrFlags[4];
  unsigned clusterDims[3];
  unsigned numAttrs;
  float firstParam;
};

const FakeStats &fakeStats() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return *static_cast<FakeStats *>(dlsym(lib, "fake_stats"));
}

void testContexts(const FakeStats &s) {
  using namespace tilec::cuda;
  check(deviceCount() == 1 && currentDevice() == 0, "one device, no context yet");
  makeCurrent(0);
  makeCurrent(0);
  check(s.retains == 1 && s.setCurrents == 1, "makeCurrent retains and sets once");
  std::thread([] { makeCurrent(0); }).join();
  check(s.retains == 1 && s.setCurrents == 2, "another thread sets, does not retain again");
  expectDriverError([] { makeCurrent(1); }, "invalid CUDA device 1", "device out of range");
  const DeviceProps &p = deviceProps(0);
  check(p.name == "Fake GPU" && p.major == 9 && p.multiprocessorCount == 132 &&
            p.maxSharedMemPerBlockOptin == 232448 && &p == &deviceProps(0),
        "deviceProps read once and cached");
}

void testLoad(const FakeStats &s) {
  using namespace tilec::cuda;
  auto k = loadKernel(0, "ptx", "k", 0);
  check(k->numRegs == 40 && k->staticShared == 1024 && k->maxThreadsPerBlock == 768 &&
            s.maxDynamicShared == 0,
        "loadKernel reads attributes, leaves the shared limit alone");
  auto big = loadKernel(0, "ptx", "k", 100 * 1024);
  check(s.maxDynamicShared == 100 * 1024, "loadKernel raises the dynamic shared limit");
  expectDriverError([] { loadKernel(0, "ptx", "k", 232448); },
                    "needs 232448 bytes of dynamic shared memory, but Fake GPU (device 0) "
                    "allows at most 231424",
                    "shared memory over the opt-in limit");
  expectDriverError([] { loadKernel(0, "bad ptx", "k", 0); },
                    "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation "
                    "failed)\nptxas application ptx input, line 3; error",
                    "JIT error log in the message");
  int unloads = s.unloads;
  expectDriverError([] { loadKernel(0, "ptx", "missing", 0); },
                    "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (named symbol not found)\n"
                    "no kernel named 'missing'",
                    "unknown kernel");
  check(s.unloads == unloads + 1, "module unloaded when loadKernel throws");
  big.reset();
  check(s.unloads == unloads + 2, "module unloaded with the last shared_ptr");
}

void testLaunch(const FakeStats &s) {
  using namespace tilec::cuda;
  auto k = loadKernel(0, "ptx", "k", 0);
  float x = 1.5f;
  void *params[] = {&x};
  launch(*k, 3, 2, 1, 128, 4096, nullptr, params);
  check(s.launches == 1 && s.grid[0] == 3 && s.grid[1] == 2 && s.block == 128 && s.shared == 4096 &&
            s.firstParam == 1.5f,
        "launch passes grid, block, shared, params");
  launchWithAttributes(*k, 1, 1, 1, 32, 0, nullptr, params, false, false, nullptr);
  check(s.launches == 2 && s.launchExes == 0, "no attributes: plain launch");
  int cluster[3] = {2, 1, 1};
  launchWithAttributes(*k, 4, 1, 1, 64, 0, nullptr, params, true, true, cluster);
  check(s.launchExes == 1 && s.numAttrs == 3 && s.attrIds[0] == 2 && s.attrFlags[0] == 1 &&
            s.attrIds[1] == 6 && s.attrFlags[1] == 1 && s.attrIds[2] == 4 &&
            s.clusterDims[0] == 2 && s.clusterDims[1] == 1 && s.grid[0] == 4 && s.block == 64,
        "cuLaunchKernelEx gets cooperative, PDL and cluster attributes");
  const int n = 1000000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    launch(*k, 1, 1, 1, 32, 0, nullptr, params);
  std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  std::printf("launch overhead against the fake driver: %.1f ns\n", took.count() / n);
}

void testMemory() {
  using namespace tilec::cuda;
  uint64_t buf = memAlloc(8);
  double in = 3.25, out = 0;
  copyToDevice(buf, &in, 8);
  synchronize();
  copyToHost(&out, buf, 8);
  check(out == 3.25 && pointerDevice(buf) == 0 && pointerDevice(12345) == -1,
        "memory helpers and pointerDevice");
  memFree(buf);
}

void testFakeDriver() {
  const FakeStats &s = fakeStats();
  testContexts(s);
  testLoad(s);
  testLaunch(s);
  testMemory();
}

} // namespace

int main() {
  std::string why;
  bool up = tilec::cuda::available(&why);
  bool fake = std::getenv("TILEC_TEST_FAKE_DRIVER") != nullptr;
  if (fake && !up)
    check(why.find("CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)") !=
              std::string::npos,
          "cuInit's error in the reason");
  if (up && fake)
    testFakeDriver();
  else if (up)
    testWithDevice();
  else
    testWithoutDevice(why);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
