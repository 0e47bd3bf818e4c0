// GPU compilation, the kernel's bytes in the disk cache, and launch.
#include "runtime/gpu_kernel.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "runtime/assembler.h"
#include "runtime/cuda_driver.h"
#include "runtime/disk_cache.h"

namespace tilec {

std::shared_ptr<GpuKernel> compileForGpu(const CompiledKernel &kernel,
                                         const nvidia::GpuOptions &options, bool assemble) {
  auto out = std::make_shared<GpuKernel>();
  nvidia::PtxKernel ptx = nvidia::emitPtx(*kernel.fn, options);
  out->name = ptx.name;
  out->arch = options.arch;
  out->ptx = std::move(ptx.ptx);
  out->params = std::move(ptx.params);
  out->tensorMaps = std::move(ptx.tensorMaps);
  out->numThreads = ptx.numThreads;
  out->sharedBytes = ptx.sharedBytes;
  out->stagingBytes = ptx.stagingBytes;
  out->options = options;
  out->emitMs = ptx.ms;
  if (assemble)
    assembleGpuKernel(*out);
  return out;
}

void assembleGpuKernel(GpuKernel &k) {
  AssembleOptions ao;
  Assembled a = assemblePtx(k.ptx, k.arch, ao);
  k.cubin = std::move(a.cubin);
  k.assembler = a.tool;
  k.numRegs = a.numRegs;
  k.spillBytes = a.spillBytes;
  k.stackBytes = a.stackBytes;
  k.assembleMs = a.ms;
}

// --- bytes for the disk cache ---

namespace {

// Names the layout of the fields below; bump it when they change. (The cache
// key holds a hash of the compiler's binary too, so an entry from another
// build is never read; this only guards against reading arbitrary bytes.)
constexpr const char *kFormat = "tilec-gpu-kernel-6";

char paramCode(nvidia::ParamKind kind) {
  switch (kind) {
  case nvidia::ParamKind::U32:
    return 'i';
  case nvidia::ParamKind::U64:
    return 'l';
  case nvidia::ParamKind::F32:
    return 'f';
  case nvidia::ParamKind::F64:
    return 'd';
  }
  return '?'; // not reached: -Werror=switch makes a new kind add its code above
}

bool paramFromCode(char code, nvidia::ParamKind &kind) {
  // Every kind, as in paramCode's switch.
  for (auto k : {nvidia::ParamKind::U32, nvidia::ParamKind::U64, nvidia::ParamKind::F32,
                 nvidia::ParamKind::F64}) {
    if (paramCode(k) == code) {
      kind = k;
      return true;
    }
  }
  return false;
}

// Doubles as their bit patterns in hex: exact, and free of the C locale's
// decimal point (which Python code may change).
std::string doubleText(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", (unsigned long long)bits);
  return text;
}

// Only what std::to_string and doubleText write: strtoll and strtoull alone
// would take blanks, signs and "0x" and stop at a stray byte.
bool isDigits(const std::string &text, size_t from, bool hex) {
  if (text.size() <= from || text.size() > from + 19)
    return false;
  for (size_t i = from; i < text.size(); ++i)
    if (!(hex ? std::isxdigit((unsigned char)text[i]) : std::isdigit((unsigned char)text[i])))
      return false;
  return true;
}

// The whole of `text` as an int64, or as an int.
bool parseInt64(const std::string &text, int64_t &out) {
  if (!isDigits(text, !text.empty() && text[0] == '-', false))
    return false;
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  out = v;
  return errno == 0;
}

bool parseInt(const std::string &text, int &out) {
  int64_t v;
  if (!parseInt64(text, v) || v < INT_MIN || v > INT_MAX)
    return false;
  out = (int)v;
  return true;
}

bool parseBool(const std::string &text, bool &out) {
  if (text != "0" && text != "1")
    return false;
  out = text == "1";
  return true;
}

bool parseDouble(const std::string &text, double &out) {
  if (text.size() != 16 || !isDigits(text, 0, true))
    return false;
  errno = 0;
  uint64_t b = std::strtoull(text.c_str(), nullptr, 16);
  if (errno != 0)
    return false;
  std::memcpy(&out, &b, 8);
  return true;
}

// Tensor maps as "rank bytes swizzle box... | field | field ..." joined by
// ';', each field's steps as "kind,width,value".
std::string tensorMapsText(const std::vector<nvidia::TensorMapParam> &maps) {
  std::string out;
  for (const nvidia::TensorMapParam &m : maps) {
    out += (out.empty() ? "" : ";") + std::to_string(m.rank) + " " +
           std::to_string(m.elementBytes) + " " + std::to_string(m.swizzle);
    for (int64_t b : m.box)
      out += " " + std::to_string(b);
    for (const nvidia::ScalarProgram &field : m.fields) {
      out += " |";
      for (const nvidia::ScalarStep &step : field)
        out += " " + std::to_string((int)step.kind) + "," + std::to_string((int)step.width) + "," +
               std::to_string(step.value);
    }
  }
  return out;
}

// `text` split at each `sep`.
std::vector<std::string> splitText(const std::string &text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1)
    out.push_back(text.substr(start, at - start));
  out.push_back(text.substr(start));
  return out;
}

bool parseTensorMaps(const std::string &text, std::vector<nvidia::TensorMapParam> &out) {
  out.clear();
  if (text.empty())
    return true;
  for (const std::string &map : splitText(text, ';')) {
    std::vector<std::string> parts = splitText(map, '|');
    std::vector<std::string> head = splitText(parts[0], ' ');
    nvidia::TensorMapParam m;
    if (head.size() < 4 || !parseInt(head[0], m.rank) || !parseInt(head[1], m.elementBytes) ||
        !parseInt(head[2], m.swizzle) || m.rank < 1 || m.rank > 5 ||
        head.size() != 4 + (size_t)m.rank || !head.back().empty() ||
        parts.size() != 2 + 2 * (size_t)m.rank)
      return false;
    for (int d = 0; d < m.rank; ++d) {
      int b;
      if (!parseInt(head[3 + d], b))
        return false;
      m.box.push_back(b);
    }
    for (size_t f = 1; f < parts.size(); ++f) {
      std::vector<std::string> steps = splitText(parts[f], ' ');
      if (steps.size() < 2 || !steps[0].empty())
        return false;
      nvidia::ScalarProgram program;
      for (size_t k = 1; k < steps.size(); ++k) {
        if (steps[k].empty() && k + 1 == steps.size())
          break; // the space before the next '|'
        std::vector<std::string> fields = splitText(steps[k], ',');
        int kind, width;
        int64_t value;
        if (fields.size() != 3 || !parseInt(fields[0], kind) || !parseInt(fields[1], width) ||
            !parseInt64(fields[2], value) || kind < 0 || kind > nvidia::ScalarStep::Grid ||
            width < 0 || width > nvidia::ScalarStep::U32)
          return false;
        program.push_back({(nvidia::ScalarStep::Kind)kind, (nvidia::ScalarStep::Width)width, value});
      }
      m.fields.push_back(std::move(program));
    }
    out.push_back(std::move(m));
  }
  return true;
}

bool parseParams(const std::string &codes, std::vector<nvidia::ParamKind> &out) {
  out.resize(codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    if (!paramFromCode(codes[i], out[i]))
      return false;
  return true;
}

// What no compile produces: a kernel read back with these is not one.
bool isPlausible(const GpuKernel &k) {
  return !k.name.empty() && !k.ptx.empty() && k.arch == k.options.arch && k.numThreads > 0 &&
         k.sharedBytes >= 0 && k.numRegs >= -1 && k.spillBytes >= 0 && k.stackBytes >= 0 &&
         k.options.numWarps > 0 && k.options.numStages >= 0;
}

} // namespace

std::string gpuKernelToBytes(const GpuKernel &k) {
  std::string params;
  for (nvidia::ParamKind p : k.params)
    params += paramCode(p);
  const nvidia::GpuOptions &o = k.options;
  return packFields({
      {"format", kFormat},
      {"name", k.name},
      {"arch", k.arch},
      {"ptx", k.ptx},
      {"cubin", k.cubin},
      {"assembler", k.assembler},
      {"params", params},
      {"tensor_maps", tensorMapsText(k.tensorMaps)},
      {"num_threads", std::to_string(k.numThreads)},
      {"shared_bytes", std::to_string(k.sharedBytes)},
      {"num_regs", std::to_string(k.numRegs)},
      {"spill_bytes", std::to_string(k.spillBytes)},
      {"stack_bytes", std::to_string(k.stackBytes)},
      {"options.arch", o.arch},
      {"options.num_warps", std::to_string(o.numWarps)},
      {"options.num_stages", std::to_string(o.numStages)},
      {"options.enable_fp_fusion", o.enableFpFusion ? "1" : "0"},
      {"options.debug", o.debug ? "1" : "0"},
      {"options.maxnreg", std::to_string(o.maxRegisters)},
      {"options.launch_pdl", o.launchPdl ? "1" : "0"},
      {"options.launch_cooperative_grid", o.launchCooperative ? "1" : "0"},
      {"options.warp_specialize_loops", o.warpSpecializeLoops ? "1" : "0"},
      {"options.defer_tma_stores", o.deferTmaStores ? "1" : "0"},
      {"emit_ms", doubleText(k.emitMs)},
      {"assemble_ms", doubleText(k.assembleMs)},
  });
}

namespace {

// The field names gpuKernelToBytes writes, in order: bytes to read back must
// have exactly these.
const std::vector<std::string> &fieldNames() {
  static const std::vector<std::string> names = [] {
    std::optional<Fields> fields = unpackFields(gpuKernelToBytes(GpuKernel()));
    std::vector<std::string> out;
    for (const auto &field : *fields)
      out.push_back(field.first);
    return out;
  }();
  return names;
}

bool hasFieldNames(const Fields &fields) {
  const std::vector<std::string> &names = fieldNames();
  if (fields.size() != names.size())
    return false;
  for (size_t i = 0; i < names.size(); ++i)
    if (fields[i].first != names[i])
      return false;
  return true;
}

} // namespace

std::shared_ptr<GpuKernel> gpuKernelFromBytes(const std::string &bytes) {
  std::optional<Fields> fields = unpackFields(bytes);
  if (!fields || !hasFieldNames(*fields))
    return nullptr;
  std::map<std::string, std::string> f(fields->begin(), fields->end());
  if (f["format"] != kFormat)
    return nullptr;
  auto k = std::make_shared<GpuKernel>();
  nvidia::GpuOptions &o = k->options;
  k->name = f["name"];
  k->arch = f["arch"];
  k->ptx = f["ptx"];
  k->cubin = f["cubin"];
  k->assembler = f["assembler"];
  o.arch = f["options.arch"];
  bool ok =
      parseParams(f["params"], k->params) && parseTensorMaps(f["tensor_maps"], k->tensorMaps) &&
      parseInt(f["num_threads"], k->numThreads) && parseInt(f["shared_bytes"], k->sharedBytes) &&
      parseInt(f["num_regs"], k->numRegs) && parseInt(f["spill_bytes"], k->spillBytes) &&
      parseInt(f["stack_bytes"], k->stackBytes) && parseInt(f["options.num_warps"], o.numWarps) &&
      parseInt(f["options.num_stages"], o.numStages) &&
      parseBool(f["options.enable_fp_fusion"], o.enableFpFusion) &&
      parseBool(f["options.debug"], o.debug) && parseInt(f["options.maxnreg"], o.maxRegisters) &&
      parseBool(f["options.launch_pdl"], o.launchPdl) &&
      parseBool(f["options.launch_cooperative_grid"], o.launchCooperative) &&
      parseBool(f["options.warp_specialize_loops"], o.warpSpecializeLoops) &&
      parseBool(f["options.defer_tma_stores"], o.deferTmaStores) &&
      parseDouble(f["emit_ms"], k->emitMs) && parseDouble(f["assemble_ms"], k->assembleMs);
  if (!ok || !isPlausible(*k))
    return nullptr;
  return k;
}

std::shared_ptr<GpuKernel> loadGpuKernel(const std::string &key) {
  try {
    std::optional<std::string> bytes = cacheRead(key);
    if (!bytes)
      return nullptr;
    std::shared_ptr<GpuKernel> k = gpuKernelFromBytes(*bytes);
    if (k)
      k->fromCache = true;
    return k;
  } catch (...) { // out of memory: a miss
    return nullptr;
  }
}

bool storeGpuKernel(const std::string &key, const GpuKernel &kernel) {
  try {
    return cacheWrite(key, gpuKernelToBytes(kernel));
  } catch (...) {
    return false;
  }
}

// --- launch ---

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

void GpuKernel::launch(std::array<int64_t, 3> grid, const std::vector<uint64_t> &args, void *stream,
                       int device) {
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
  // Each tensor map from its block pointer's base, sizes and strides,
  // computed from the arguments as the kernel computes them; encoded again
  // only when they changed since the last launch.
  std::vector<cuda::TensorMap> maps(tensorMaps.size());
  if (!maps.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    mapCache_.resize(maps.size());
    for (size_t m = 0; m < tensorMaps.size(); ++m) {
      const nvidia::TensorMapParam &t = tensorMaps[m];
      std::array<int64_t, 11> values{};
      for (size_t f = 0; f < t.fields.size() && f < values.size(); ++f)
        values[f] = nvidia::evaluate(t.fields[f], args.data(), args.size(), grid.data());
      auto &[key, map] = mapCache_[m];
      if (!key || *key != values) {
        map = cuda::encodeTensorMap((uint64_t)values[0], t.elementBytes, t.rank, &values[1],
                                    &values[1 + t.rank], t.box.data(), t.swizzle);
        key = values;
      }
      maps[m] = map;
    }
  }
  for (cuda::TensorMap &map : maps)
    ptrs.push_back(&map);
  cuda::launchWithAttributes(k, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                             numThreads, sharedBytes, stream, ptrs.data(),
                             options.launchCooperative, options.launchPdl, nullptr);
}

} // namespace tilec
