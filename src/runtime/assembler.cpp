// PTX → cubin: runs ptxas as a child process (posix_spawn, no shell, output
// through a pipe, temp files removed in every case) or nvJitLink through
// dlopen, and reads register and spill counts from the tool's verbose output.
#include "runtime/assembler.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tilec {
namespace {

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

bool isExecutable(const std::string &path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

std::string searchPath(const std::string &tool) {
  std::string path = env("PATH");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = std::min(path.find(':', start), path.size());
    std::string dir = path.substr(start, end - start);
    if (!dir.empty() && isExecutable(dir + "/" + tool))
      return dir + "/" + tool;
    start = end + 1;
  }
  return "";
}

std::string locatePtxas() {
  if (std::string forced = env("TILEC_PTXAS"); isExecutable(forced))
    return forced;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string home = env(var);
    if (!home.empty() && isExecutable(home + "/bin/ptxas"))
      return home + "/bin/ptxas";
  }
  if (std::string onPath = searchPath("ptxas"); !onPath.empty())
    return onPath;
  if (isExecutable("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda/bin/ptxas";
  return "";
}

std::string systemError(const std::string &what) { return what + ": " + std::strerror(errno); }

bool writeAll(int fd, const std::string &data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

// The PTX input and cubin output of one ptxas run, in $TMPDIR (or /tmp);
// both removed by the destructor, whatever happened.
class TempFiles {
public:
  explicit TempFiles(const std::string &ptx) {
    std::string dir = env("TMPDIR").empty() ? "/tmp" : env("TMPDIR");
    std::string pattern = dir + "/tilec-XXXXXX.ptx";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = mkostemps(name.data(), 4, O_CLOEXEC);
    if (fd < 0)
      throw AssemblerError(systemError("cannot create a temporary file in " + dir));
    ptxPath = name.data();
    cubinPath = ptxPath.substr(0, ptxPath.size() - 4) + ".cubin";
    bool written = writeAll(fd, ptx);
    bool closed = close(fd) == 0;
    if (written && closed)
      return;
    std::string error = systemError("cannot write " + ptxPath);
    unlink(ptxPath.c_str()); // the destructor will not run
    throw AssemblerError(error);
  }
  ~TempFiles() {
    if (!ptxPath.empty())
      unlink(ptxPath.c_str());
    if (!cubinPath.empty())
      unlink(cubinPath.c_str());
  }
  TempFiles(const TempFiles &) = delete;
  TempFiles &operator=(const TempFiles &) = delete;

  std::string ptxPath, cubinPath;
};

struct ProcessResult {
  int status = 0;     // the raw waitpid status
  std::string output; // stdout and stderr, interleaved
};

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return out;
    out.append(buf, size_t(n));
  }
}

// Runs args[0] with args, no shell; captures stdout and stderr together.
ProcessResult runProcess(const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw AssemblerError(systemError("cannot create a pipe for " + args[0]));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    throw AssemblerError("cannot run " + args[0] + ": " + std::strerror(err));
  }
  ProcessResult result;
  result.output = readAll(fds[0]);
  close(fds[0]);
  while (waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void replaceAll(std::string &s, const std::string &from, const std::string &to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

// The integer that ends just before `end` in `line`, or -1.
int numberBefore(const std::string &line, size_t end) {
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1])))
    --begin;
  return begin == end ? -1 : std::atoi(line.substr(begin, end - begin).c_str());
}

// Reads "Used N registers" and "N bytes stack frame" (the most over all
// functions) and "N bytes spill stores" / "N bytes spill loads" (summed) from
// ptxas -v style output.
void parseStats(const std::string &log, Assembled &out) {
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    size_t used = line.find("Used ");
    size_t regs = line.find(" registers", used);
    if (used != std::string::npos && regs != std::string::npos)
      out.numRegs = std::max(out.numRegs, numberBefore(line, regs));
    size_t frame = line.find(" bytes stack frame");
    if (frame != std::string::npos)
      out.stackBytes = std::max(out.stackBytes, numberBefore(line, frame));
    for (const char *marker : {" bytes spill stores", " bytes spill loads"}) {
      size_t at = line.find(marker);
      if (at != std::string::npos)
        out.spillBytes += std::max(0, numberBefore(line, at));
    }
  }
}

// The lines of a failed run worth showing: errors, warnings and fatal ones.
std::string errorLines(const std::string &log) {
  std::istringstream lines(log);
  std::string line, kept;
  while (std::getline(lines, line)) {
    bool useful = line.find("error") != std::string::npos ||
                  line.find("fatal") != std::string::npos ||
                  line.find("warning") != std::string::npos;
    if (useful)
      kept += line + "\n";
  }
  return kept.empty() ? log : kept;
}

std::string exitDescription(int status) {
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

int clampedOptLevel(const AssembleOptions &opts) { return std::clamp(opts.optLevel, 0, 3); }

Assembled runPtxas(const std::string &ptxas, const std::string &ptx, const std::string &arch,
                   const AssembleOptions &opts) {
  TempFiles files(ptx);
  std::vector<std::string> args = {ptxas, "-arch=" + arch, "-v",
                                   "-O" + std::to_string(clampedOptLevel(opts))};
  if (opts.maxRegisters > 0)
    args.push_back("--maxrregcount=" + std::to_string(opts.maxRegisters));
  if (opts.debugInfo)
    args.push_back("-lineinfo");
  args.insert(args.end(), {"-o", files.cubinPath, files.ptxPath});
  ProcessResult run = runProcess(args);
  replaceAll(run.output, files.ptxPath, "<ptx>");
  bool ok = WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0;
  if (!ok)
    throw AssemblerError("ptxas failed for " + arch + " (" + exitDescription(run.status) + "):\n" +
                         errorLines(run.output));
  Assembled out;
  out.tool = "ptxas";
  out.cubin = readFile(files.cubinPath);
  out.log = run.output;
  if (out.cubin.empty())
    throw AssemblerError("ptxas wrote no cubin for " + arch + ":\n" + run.output);
  parseStats(out.log, out);
  return out;
}

// --- nvJitLink, declared here (values from nvJitLink.h) ---

using NvJitLinkHandle = void *;
constexpr int kNvJitLinkSuccess = 0;  // NVJITLINK_SUCCESS
constexpr int kNvJitLinkInputPtx = 2; // NVJITLINK_INPUT_PTX

struct NvJitLink {
  int (*create)(NvJitLinkHandle *, uint32_t, const char **);
  int (*destroy)(NvJitLinkHandle *);
  int (*addData)(NvJitLinkHandle, int, const void *, size_t, const char *);
  int (*complete)(NvJitLinkHandle);
  int (*getLinkedCubinSize)(NvJitLinkHandle, size_t *);
  int (*getLinkedCubin)(NvJitLinkHandle, void *);
  int (*getErrorLogSize)(NvJitLinkHandle, size_t *);
  int (*getErrorLog)(NvJitLinkHandle, char *);
  int (*getInfoLogSize)(NvJitLinkHandle, size_t *);
  int (*getInfoLog)(NvJitLinkHandle, char *);
};

void *openNvJitLink() {
  std::vector<std::string> names = {"libnvJitLink.so", "libnvJitLink.so.13", "libnvJitLink.so.12"};
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (!env(var).empty())
      names.push_back(env(var) + "/lib64/libnvJitLink.so");
  names.push_back("/usr/local/cuda/lib64/libnvJitLink.so");
  for (const std::string &name : names)
    if (void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return lib;
  return nullptr;
}

// The library's unversioned names are exported alongside the versioned ones
// (__nvJitLinkCreate_13_0, ...) that nvJitLink.h maps to.
bool resolveNvJitLink(void *lib, NvJitLink &api) {
  bool ok = true;
  auto need = [&](const char *name, auto &fn) {
    void *p = dlsym(lib, name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    ok = ok && p;
  };
  need("nvJitLinkCreate", api.create);
  need("nvJitLinkDestroy", api.destroy);
  need("nvJitLinkAddData", api.addData);
  need("nvJitLinkComplete", api.complete);
  need("nvJitLinkGetLinkedCubinSize", api.getLinkedCubinSize);
  need("nvJitLinkGetLinkedCubin", api.getLinkedCubin);
  need("nvJitLinkGetErrorLogSize", api.getErrorLogSize);
  need("nvJitLinkGetErrorLog", api.getErrorLog);
  need("nvJitLinkGetInfoLogSize", api.getInfoLogSize);
  need("nvJitLinkGetInfoLog", api.getInfoLog);
  return ok;
}

// nullptr when no usable nvJitLink is installed. Loaded once.
const NvJitLink *nvJitLink() {
  static NvJitLink api;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    void *lib = openNvJitLink();
    ok = lib && resolveNvJitLink(lib, api);
  });
  return ok ? &api : nullptr;
}

std::string nvJitLinkResultName(int r) {
  static const char *names[] = {"NVJITLINK_SUCCESS",
                                "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
                                "NVJITLINK_ERROR_MISSING_ARCH",
                                "NVJITLINK_ERROR_INVALID_INPUT",
                                "NVJITLINK_ERROR_PTX_COMPILE",
                                "NVJITLINK_ERROR_NVVM_COMPILE",
                                "NVJITLINK_ERROR_INTERNAL",
                                "NVJITLINK_ERROR_THREADPOOL",
                                "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
                                "NVJITLINK_ERROR_FINALIZE",
                                "NVJITLINK_ERROR_NULL_INPUT",
                                "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
                                "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
                                "NVJITLINK_ERROR_ARCH_MISMATCH",
                                "NVJITLINK_ERROR_OUTDATED_LIBRARY",
                                "NVJITLINK_ERROR_MISSING_FATBIN",
                                "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
                                "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
                                "NVJITLINK_ERROR_LTO_NOT_ENABLED"};
  if (r >= 0 && r < int(std::size(names)))
    return names[r];
  return "nvJitLink error " + std::to_string(r);
}

// One nvJitLink handle, destroyed with the object.
struct Linker {
  const NvJitLink &api;
  NvJitLinkHandle handle = nullptr;
  ~Linker() {
    if (handle)
      api.destroy(&handle);
  }

  std::string log(int (*sizeOf)(NvJitLinkHandle, size_t *),
                  int (*get)(NvJitLinkHandle, char *)) const {
    size_t size = 0;
    if (!handle || sizeOf(handle, &size) != kNvJitLinkSuccess || size == 0)
      return "";
    std::string text(size, '\0');
    if (get(handle, text.data()) != kNvJitLinkSuccess)
      return "";
    text.resize(std::strlen(text.c_str()));
    return text;
  }
};

std::vector<std::string> nvJitLinkOptions(const std::string &arch, const AssembleOptions &opts) {
  std::vector<std::string> options = {"-arch=" + arch, "-verbose",
                                      "-O" + std::to_string(clampedOptLevel(opts))};
  if (opts.maxRegisters > 0)
    options.push_back("-maxrregcount=" + std::to_string(opts.maxRegisters));
  if (opts.debugInfo)
    options.push_back("-lineinfo");
  return options;
}

Assembled runNvJitLink(const NvJitLink &api, const std::string &ptx, const std::string &arch,
                       const AssembleOptions &opts) {
  std::vector<std::string> options = nvJitLinkOptions(arch, opts);
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  Linker link{api};
  int r = api.create(&link.handle, uint32_t(argv.size()), argv.data());
  if (r != kNvJitLinkSuccess)
    throw AssemblerError("nvJitLinkCreate failed for " + arch + ": " + nvJitLinkResultName(r));
  r = api.addData(link.handle, kNvJitLinkInputPtx, ptx.c_str(), ptx.size(), "kernel.ptx");
  if (r == kNvJitLinkSuccess)
    r = api.complete(link.handle);
  Assembled out;
  out.tool = "nvJitLink";
  out.log = link.log(api.getInfoLogSize, api.getInfoLog);
  if (r != kNvJitLinkSuccess)
    throw AssemblerError("nvJitLink failed for " + arch + " (" + nvJitLinkResultName(r) + "):\n" +
                         link.log(api.getErrorLogSize, api.getErrorLog));
  size_t size = 0;
  if ((r = api.getLinkedCubinSize(link.handle, &size)) != kNvJitLinkSuccess)
    throw AssemblerError("nvJitLinkGetLinkedCubinSize failed: " + nvJitLinkResultName(r));
  out.cubin.resize(size);
  if ((r = api.getLinkedCubin(link.handle, out.cubin.data())) != kNvJitLinkSuccess)
    throw AssemblerError("nvJitLinkGetLinkedCubin failed: " + nvJitLinkResultName(r));
  parseStats(out.log, out);
  return out;
}

enum class Tool { Ptxas, NvJitLink, Driver };

std::string lowercase(std::string s) {
  for (char &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The tool to use: the one TILEC_ASSEMBLER forces, else the best one present.
Tool chooseTool() {
  std::string forced = lowercase(env("TILEC_ASSEMBLER"));
  if (forced.empty())
    return !findPtxas().empty() ? Tool::Ptxas : nvJitLink() ? Tool::NvJitLink : Tool::Driver;
  if (forced == "ptxas") {
    if (findPtxas().empty())
      throw AssemblerError("TILEC_ASSEMBLER=ptxas, but no ptxas was found (set TILEC_PTXAS "
                           "or CUDA_HOME, or put ptxas on PATH)");
    return Tool::Ptxas;
  }
  if (forced == "nvjitlink") {
    if (!nvJitLink())
      throw AssemblerError("TILEC_ASSEMBLER=nvjitlink, but libnvJitLink.so could not be loaded");
    return Tool::NvJitLink;
  }
  if (forced == "driver")
    return Tool::Driver;
  throw AssemblerError("TILEC_ASSEMBLER must be ptxas, nvjitlink or driver, not '" + forced + "'");
}

} // namespace

std::string findPtxas() {
  static const std::string path = locatePtxas();
  return path;
}

Assembled assemblePtx(const std::string &ptx, const std::string &arch,
                      const AssembleOptions &opts) {
  auto start = std::chrono::steady_clock::now();
  Assembled out;
  switch (chooseTool()) {
  case Tool::Ptxas:
    out = runPtxas(findPtxas(), ptx, arch, opts);
    break;
  case Tool::NvJitLink:
    out = runNvJitLink(*nvJitLink(), ptx, arch, opts);
    break;
  case Tool::Driver:
    break; // empty cubin: the caller hands the PTX to the driver's JIT
  }
  std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
  out.ms = elapsed.count();
  return out;
}

} // namespace tilec
