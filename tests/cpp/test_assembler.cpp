// Checks the PTX assembler against the real ptxas (and nvJitLink when it can
// be loaded): cubins for sm_80 and sm_90a, register and spill counts, errors
// that cite the PTX line, no temp files left behind, the TILEC_ASSEMBLER and
// ptxas lookup rules (each in a forked child, since findPtxas caches).
#include "runtime/assembler.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using tilec::Assembled;
using tilec::AssembleOptions;
using tilec::assemblePtx;
using tilec::AssemblerError;

int passed = 0, failed = 0;
std::string tmpDir;

void check(bool ok, const std::string &what) {
  (ok ? passed : failed)++;
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
}

const char *kTinyPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
  ret;
}
)";

const char *kAddPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry add(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, %f1;
  st.global.f32 [%rd2], %f2;
  ret;
}
)";

// Line 6 is wrong.
const char *kBadPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
  foo.bar %r1;
  ret;
}
)";

// 64 volatile loads whose products pair the first with the last: half of them
// are live at once, so a 16-register limit must spill.
std::string pressurePtx() {
  std::string s = ".version 8.0\n.target sm_80\n.address_size 64\n"
                  ".visible .entry pressure(.param .u64 p)\n{\n"
                  "  .reg .b64 %rd<3>;\n  .reg .f32 %f<200>;\n"
                  "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n";
  for (int i = 0; i < 64; ++i)
    s += "  ld.volatile.global.f32 %f" + std::to_string(i) + ", [%rd2+" + std::to_string(4 * i) +
         "];\n";
  s += "  mov.f32 %f100, 0f00000000;\n";
  for (int i = 0; i < 32; ++i)
    s += "  fma.rn.f32 %f" + std::to_string(101 + i) + ", %f" + std::to_string(i) + ", %f" +
         std::to_string(63 - i) + ", %f" + std::to_string(100 + i) + ";\n";
  s += "  st.global.f32 [%rd2], %f132;\n  ret;\n}\n";
  return s;
}

bool isElf(const std::string &bytes) {
  return bytes.compare(0, 4,
                       "\x7f"
                       "ELF") == 0;
}

int filesIn(const std::string &dir) {
  int n = 0;
  DIR *d = opendir(dir.c_str());
  while (dirent *e = d ? readdir(d) : nullptr)
    n += std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0;
  if (d)
    closedir(d);
  return n;
}

// Runs `fn` in a forked child (its environment changes stay there).
bool inChild(const std::function<bool()> &fn) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    bool ok = fn();
    std::fflush(stdout);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Runs this program again as `--child mode arg` with `env` changed: a fresh
// process, so findPtxas looks again.
bool runSelf(const std::vector<std::pair<std::string, std::string>> &env, const std::string &mode,
             const std::string &arg) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto &[name, value] : env)
      setenv(name.c_str(), value.c_str(), 1);
    execl("/proc/self/exe", "test_assembler", "--child", mode.c_str(), arg.c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string errorOf(const std::function<void()> &fn);

// The checks runSelf asks for.
bool childCheck(const std::string &mode, const std::string &arg) {
  if (mode == "ptxas-is")
    return tilec::findPtxas() == arg;
  std::string msg = errorOf([] { assemblePtx(kTinyPtx, "sm_80", {}); });
  return msg.find("exit status 3") != std::string::npos &&
         msg.find("broken on purpose") != std::string::npos;
}

std::string writeScript(const std::string &name, const std::string &body) {
  std::string path = tmpDir + "/" + name;
  FILE *f = std::fopen(path.c_str(), "w");
  std::fputs(body.c_str(), f);
  std::fclose(f);
  chmod(path.c_str(), 0755);
  return path;
}

std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const AssemblerError &e) {
    return e.what();
  }
  return "";
}

void testPtxas() {
  std::string ptxas = tilec::findPtxas();
  check(!ptxas.empty() && access(ptxas.c_str(), X_OK) == 0, "findPtxas: " + ptxas);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    Assembled a = assemblePtx(kTinyPtx, arch, {});
    check(isElf(a.cubin) && a.tool == "ptxas" && a.numRegs >= 0 && a.spillBytes == 0,
          std::string("tiny kernel for ") + arch + ": " + std::to_string(a.cubin.size()) +
              " bytes, " + std::to_string(a.numRegs) + " registers, " + std::to_string(a.ms) +
              " ms");
    Assembled b = assemblePtx(kAddPtx, arch, {});
    check(isElf(b.cubin) && b.numRegs > 0 && b.log.find("Used") != std::string::npos,
          std::string("add kernel for ") + arch + ": " + std::to_string(b.numRegs) + " registers");
  }
  AssembleOptions debug;
  debug.debugInfo = true;
  debug.optLevel = 0;
  check(isElf(assemblePtx(kAddPtx, "sm_80", debug).cubin), "-lineinfo -O0");
  check(filesIn(tmpDir) == 0, "no temp files left after successes");
}

void testSpills() {
  Assembled free = assemblePtx(pressurePtx(), "sm_80", {});
  AssembleOptions tight;
  tight.maxRegisters = 32;
  Assembled spilled = assemblePtx(pressurePtx(), "sm_80", tight);
  check(free.spillBytes == 0 && spilled.numRegs <= 32 && spilled.spillBytes > 0 &&
            free.stackBytes == 0 && spilled.stackBytes > 0,
        "maxRegisters=32 spills: " + std::to_string(free.numRegs) + " registers free, " +
            std::to_string(spilled.numRegs) + " registers and " +
            std::to_string(spilled.spillBytes) + " spill bytes limited");
}

void testErrors() {
  std::string msg = errorOf([] { assemblePtx(kBadPtx, "sm_80", {}); });
  std::printf("  bad PTX says:\n%s", msg.c_str());
  check(msg.find("ptxas failed for sm_80") != std::string::npos &&
            msg.find("line 6; error") != std::string::npos &&
            msg.find("Unknown modifier '.bar'") != std::string::npos &&
            msg.find(tmpDir) == std::string::npos,
        "invalid PTX: AssemblerError citing line 6, no temp path");
  msg = errorOf([] { assemblePtx(kTinyPtx, "sm_12345", {}); });
  check(!msg.empty(), "unknown arch rejected: " + msg.substr(0, msg.find('\n', 40)));
  check(filesIn(tmpDir) == 0, "no temp files left after failures");
}

void testConcurrent() {
  std::vector<std::thread> threads;
  int ok[4] = {};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&ok, i] { ok[i] = isElf(assemblePtx(kAddPtx, "sm_90a", {}).cubin); });
  for (auto &t : threads)
    t.join();
  check(ok[0] && ok[1] && ok[2] && ok[3] && filesIn(tmpDir) == 0, "4 threads at once");
}

void testForcedTools() {
  check(inChild([] {
          setenv("TILEC_ASSEMBLER", "driver", 1);
          Assembled a = assemblePtx(kTinyPtx, "sm_80", {});
          return a.cubin.empty() && a.tool.empty();
        }),
        "TILEC_ASSEMBLER=driver leaves the PTX to the driver");
  check(inChild([] {
          setenv("TILEC_ASSEMBLER", "bogus", 1);
          return errorOf([] {
                   assemblePtx(kTinyPtx, "sm_80", {});
                 }).find("must be ptxas, nvjitlink or driver") != std::string::npos;
        }),
        "TILEC_ASSEMBLER=bogus is an error");
  check(runSelf({{"TILEC_PTXAS", "/nonexistent"},
                 {"CUDA_HOME", "/nonexistent"},
                 {"CUDA_PATH", ""},
                 {"PATH", "/nonexistent"}},
                "ptxas-is", "/usr/local/cuda/bin/ptxas"),
        "findPtxas falls back to /usr/local/cuda/bin/ptxas");
  check(runSelf({{"TILEC_PTXAS", ""}, {"CUDA_HOME", "/usr/local/cuda-13.0"}}, "ptxas-is",
                "/usr/local/cuda-13.0/bin/ptxas"),
        "findPtxas uses CUDA_HOME");
  std::string fake = writeScript("ptxas", "#!/bin/sh\necho 'ptxas fatal   : broken on purpose'"
                                          "\nexit 3\n");
  check(runSelf({{"TILEC_PTXAS", fake}}, "ptxas-is", fake), "TILEC_PTXAS comes first");
  check(runSelf({{"TILEC_PTXAS", fake}}, "failing-ptxas", ""),
        "a failing ptxas gives its output and exit status");
  check(runSelf({{"TILEC_PTXAS", ""}, {"CUDA_HOME", ""}, {"PATH", tmpDir}}, "ptxas-is",
                tmpDir + "/ptxas"),
        "findPtxas searches PATH");
  unlink(fake.c_str());
}

void testNvJitLink() {
  bool ok = inChild([] {
    setenv("TILEC_ASSEMBLER", "nvjitlink", 1);
    std::string err = errorOf([] {
      Assembled a = assemblePtx(kAddPtx, "sm_90a", {});
      std::printf("  nvJitLink: %zu bytes, %d registers, %.1f ms, tool %s\n", a.cubin.size(),
                  a.numRegs, a.ms, a.tool.c_str());
      if (!isElf(a.cubin) || a.tool != "nvJitLink" || a.numRegs <= 0)
        throw AssemblerError("bad nvJitLink result");
    });
    if (err.find("could not be loaded") != std::string::npos) {
      std::printf("  nvJitLink not installed: %s\n", err.c_str());
      return true;
    }
    if (!err.empty())
      return false;
    std::string bad = errorOf([] { assemblePtx(kBadPtx, "sm_80", {}); });
    std::printf("  nvJitLink bad PTX says:\n%s\n", bad.c_str());
    return bad.find("line 6") != std::string::npos;
  });
  check(ok, "TILEC_ASSEMBLER=nvjitlink: cubin, or a clear error when missing");
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 4 && std::string(argv[1]) == "--child")
    return childCheck(argv[2], argv[3]) ? 0 : 1;
  char dir[] = "/tmp/tilec-asm-test-XXXXXX";
  tmpDir = mkdtemp(dir);
  setenv("TMPDIR", tmpDir.c_str(), 1);
  testPtxas();
  testSpills();
  testErrors();
  testConcurrent();
  testForcedTools();
  testNvJitLink();
  rmdir(tmpDir.c_str());
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
