// The Python extension module tilec._C: compile a kernel, run it on the CPU,
// the disk cache of GPU kernels, and the developer entry points (AST dump, IR
// passes) the tests use.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings/launcher.h"
#include "cpu/executor.h"
#include "ir/pointer_origins.h"
#include "frontend/ast.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "nvidia/linear_layout.h"
#include "passes/pipeline.h"
#include "runtime/assembler.h"
#include "runtime/compiler.h"
#include "runtime/cuda_driver.h"
#include "runtime/disk_cache.h"
#include "runtime/gpu_kernel.h"

namespace nb = nanobind;
using namespace tilec;

namespace {

ConstValue toConst(nb::handle obj) {
  if (obj.is_none())
    return ConstValue::none();
  if (nb::isinstance<nb::bool_>(obj))
    return ConstValue::boolean(nb::cast<bool>(obj));
  if (nb::isinstance<nb::int_>(obj)) {
    try {
      return ConstValue::integer(nb::cast<int64_t>(obj));
    } catch (const std::exception &) {
      throw std::invalid_argument("constexpr integer " + nb::cast<std::string>(nb::str(obj)) +
                                  " does not fit in 64 bits");
    }
  }
  if (nb::isinstance<nb::float_>(obj))
    return ConstValue::floating(nb::cast<double>(obj));
  if (nb::isinstance<nb::str>(obj))
    return ConstValue::string(nb::cast<std::string>(obj));
  if (nb::hasattr(obj, "_tilec_dtype")) {
    std::string name = nb::cast<std::string>(obj.attr("_tilec_dtype"));
    bool isPtr = name.rfind("ptr:", 0) == 0;
    auto d = dtypeFromName(isPtr ? name.substr(4) : name);
    if (name.rfind("unsupported:", 0) == 0)
      throw std::invalid_argument(unsupportedDTypeReason(name.substr(12)));
    if (!d)
      throw std::invalid_argument("unknown dtype " + name);
    return ConstValue::dtype(isPtr ? Type::pointer(*d) : Type::scalar(*d));
  }
  if (nb::isinstance<nb::tuple>(obj) || nb::isinstance<nb::list>(obj)) {
    std::vector<ConstValue> elems;
    for (nb::handle h : obj)
      elems.push_back(toConst(h));
    return ConstValue::tuple(std::move(elems));
  }
  throw std::invalid_argument("a kernel cannot use a value of type " +
                              nb::cast<std::string>(nb::str(obj.type())) + " as a constexpr");
}

SourcePtr makeSource(const std::string &text, const std::string &filename, int firstLine) {
  auto s = std::make_shared<Source>();
  s->text = text;
  s->filename = filename;
  s->firstLine = firstLine;
  return s;
}

// Answers global names by calling a Python function of one argument that
// returns None or a tagged tuple (see tilec/jit.py, _Resolver).
class PyResolver : public Resolver {
public:
  explicit PyResolver(nb::object fn) : fn_(std::move(fn)) {}
  ~PyResolver() override {
    nb::gil_scoped_acquire gil;
    fn_.reset();
  }

  GlobalBinding lookup(const std::string &name) override {
    nb::gil_scoped_acquire gil;
    nb::object r = fn_(name);
    GlobalBinding g;
    if (r.is_none())
      return g;
    nb::tuple t = nb::cast<nb::tuple>(r);
    std::string tag = nb::cast<std::string>(t[0]);
    if (tag == "module") {
      g.kind = GlobalBinding::Module;
      g.module = nb::cast<std::string>(t[1]);
    } else if (tag == "constexpr") {
      g.kind = GlobalBinding::Constexpr;
      g.value = toConst(t[1]);
    } else if (tag == "builtin") {
      g.kind = GlobalBinding::Builtin;
      g.module = nb::cast<std::string>(t[1]);
      g.name = nb::cast<std::string>(t[2]);
    } else if (tag == "jit") {
      g.kind = GlobalBinding::JitFunction;
      g.fn = std::make_shared<JitFunctionRef>();
      g.fn->source = makeSource(nb::cast<std::string>(t[1]), nb::cast<std::string>(t[2]),
                                nb::cast<int>(t[3]));
      g.fn->name = nb::cast<std::string>(t[4]);
      g.fn->resolver = std::make_shared<PyResolver>(nb::borrow<nb::object>(t[5]));
    } else {
      g.kind = GlobalBinding::PythonObject;
      g.description = nb::cast<std::string>(t[1]);
    }
    return g;
  }

private:
  nb::object fn_;
};

KernelParam toParam(nb::handle spec) {
  nb::tuple t = nb::cast<nb::tuple>(spec);
  std::string kind = nb::cast<std::string>(t[0]);
  KernelParam p;
  if (kind == "constexpr") {
    p.kind = KernelParam::Constexpr;
    p.value = toConst(t[1]);
    return p;
  }
  auto dtypeAt = [&](size_t i) {
    auto d = dtypeFromName(nb::cast<std::string>(t[i]));
    if (!d)
      throw std::invalid_argument("unknown dtype " + nb::cast<std::string>(t[i]));
    return *d;
  };
  if (kind == "ptr") {
    p.kind = KernelParam::Pointer;
    p.dtype = dtypeAt(1);
    p.divisibility = nb::cast<int>(t[2]);
  } else if (kind == "int") {
    p.kind = KernelParam::Int;
    p.dtype = dtypeAt(1);
    p.divisibility = nb::cast<int>(t[2]);
  } else if (kind == "float") {
    p.kind = KernelParam::Float;
    p.dtype = dtypeAt(1);
  } else if (kind == "bool") {
    p.kind = KernelParam::Bool;
    p.dtype = DType::I1;
  } else if (kind == "tuple") { // ("tuple", (element specs...))
    p.kind = KernelParam::Tuple;
    for (nb::handle e : nb::cast<nb::tuple>(t[1]))
      p.elems.push_back(toParam(e));
  } else if (kind == "desc") { // ("desc", pointee, alignment, block_shape, padding[, sizes' and
                                //  strides' divisibility, unit strides])
    p.kind = KernelParam::Descriptor;
    p.dtype = dtypeAt(1);
    p.divisibility = nb::cast<int>(t[2]);
    for (nb::handle d : nb::cast<nb::tuple>(t[3]))
      p.blockShape.push_back(nb::cast<int64_t>(d));
    p.padding = nb::cast<std::string>(t[4]);
    if (t.size() > 6) { // (..., divisibility of sizes and strides, unit strides)
      for (nb::handle d : nb::cast<nb::tuple>(t[5]))
        p.dimDivisibility.push_back(nb::cast<int>(d));
      for (nb::handle u : nb::cast<nb::tuple>(t[6]))
        p.unitStrides.push_back(nb::cast<bool>(u));
    }
  } else {
    throw std::invalid_argument("unknown parameter kind " + kind);
  }
  return p;
}

std::shared_ptr<CompiledKernel> compile(const std::string &text, const std::string &filename,
                                        int firstLine, nb::list specs, nb::object resolver,
                                        const std::string &target) {
  std::vector<KernelParam> params;
  for (nb::handle h : specs)
    params.push_back(toParam(h));
  auto res = std::make_shared<PyResolver>(std::move(resolver));
  return compileKernel(makeSource(text, filename, firstLine), res, std::move(params), target);
}

// `memory`: (begin, end, argument name, writable) of each tensor argument.
void launchCpu(const CompiledKernel &k, std::tuple<int64_t, int64_t, int64_t> grid,
               nb::list args, std::vector<std::tuple<uint64_t, uint64_t, std::string, bool>> memory,
               int numThreads) {
  cpu::Launch l;
  l.grid = {std::get<0>(grid), std::get<1>(grid), std::get<2>(grid)};
  const Block &body = *k.fn->body;
  if (nb::len(args) != body.args.size())
    throw std::invalid_argument("the kernel takes " + std::to_string(body.args.size()) +
                                " runtime arguments, got " + std::to_string(nb::len(args)));
  for (size_t i = 0; i < body.args.size(); ++i) {
    cpu::ArgValue v;
    if (isFloat(body.args[i]->type.dtype))
      v.f = nb::cast<double>(args[i]);
    else if (nb::isinstance<nb::float_>(args[i]))
      throw std::invalid_argument("argument '" + k.fn->argNames[i] + "' must be an integer");
    else
      v.i = (int64_t)nb::cast<uint64_t>(nb::int_(args[i]) & nb::int_(0xFFFFFFFFFFFFFFFFull));
    l.args.push_back(v);
  }
  for (auto &[begin, end, name, writable] : memory)
    l.memory.push_back({begin, end, name, writable});
  l.numThreads = numThreads;
  nb::gil_scoped_release release;
  cpu::launch(*k.fn, l);
}

std::shared_ptr<GpuKernel> toGpu(const CompiledKernel &k, const std::string &arch, int numWarps,
                                 int numStages, bool enableFpFusion, bool debug, bool assemble,
                                 int maxRegisters, bool launchPdl, bool launchCooperative,
                                 bool deferTmaStores, bool warpSpecializeLoops) {
  nvidia::GpuOptions o;
  o.arch = arch;
  o.numWarps = numWarps;
  o.numStages = numStages;
  o.enableFpFusion = enableFpFusion;
  o.debug = debug;
  o.maxRegisters = maxRegisters;
  o.launchPdl = launchPdl;
  o.launchCooperative = launchCooperative;
  o.deferTmaStores = deferTmaStores;
  o.warpSpecializeLoops = warpSpecializeLoops;
  return compileForGpu(k, o, assemble);
}

// Python ints (any sign, up to 64 bits) and floats as the bits a launch passes.
std::vector<uint64_t> argBits(nb::list args) {
  std::vector<uint64_t> out;
  out.reserve(nb::len(args));
  for (nb::handle h : args) {
    if (nb::isinstance<nb::float_>(h)) {
      double d = nb::cast<double>(h);
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      out.push_back(bits);
    } else {
      out.push_back(nb::cast<uint64_t>(nb::int_(h) & nb::int_(0xFFFFFFFFFFFFFFFFull)));
    }
  }
  return out;
}

void launchGpu(GpuKernel &k, std::tuple<int64_t, int64_t, int64_t> grid, nb::list args,
               uint64_t stream, int device) {
  std::vector<uint64_t> bits = argBits(args);
  nb::gil_scoped_release release;
  k.launch({std::get<0>(grid), std::get<1>(grid), std::get<2>(grid)}, bits, (void *)stream,
           device);
}

nb::dict deviceProperties(int device) {
  const cuda::DeviceProps &p = cuda::deviceProps(device);
  nb::dict d;
  d["name"] = p.name;
  d["major"] = p.major;
  d["minor"] = p.minor;
  d["multiprocessor_count"] = p.multiprocessorCount;
  d["max_shared_mem"] = p.maxSharedMemPerBlockOptin;
  d["max_shared_mem_per_block"] = p.maxSharedMemPerBlock;
  d["max_shared_mem_per_multiprocessor"] = p.maxSharedMemPerMultiprocessor;
  d["max_num_regs"] = p.maxRegistersPerBlock;
  d["max_regs_per_multiprocessor"] = p.maxRegistersPerMultiprocessor;
  d["warpSize"] = p.warpSize;
  d["max_threads_per_block"] = p.maxThreadsPerBlock;
  d["sm_clock_rate"] = p.clockRateKHz;
  d["mem_clock_rate"] = p.memClockRateKHz;
  d["mem_bus_width"] = p.memBusWidth;
  d["l2_cache_size"] = p.l2CacheSize;
  return d;
}

nb::bytes asBytes(const std::string &s) { return nb::bytes(s.data(), s.size()); }

std::string bytesOf(nb::bytes b) { return std::string(b.c_str(), b.size()); }

std::string hashBytes(nb::bytes b) { return hashHex(bytesOf(b)); }

std::shared_ptr<GpuKernel> kernelFromBytes(nb::bytes b) { return gpuKernelFromBytes(bytesOf(b)); }

std::shared_ptr<GpuKernel> loadCached(const std::string &key) {
  nb::gil_scoped_release release; // file I/O: other threads may compile meanwhile
  return loadGpuKernel(key);
}

void bindDiskCache(nb::module_ &m) {
  m.def("cache_dir", &cacheDir, "the disk cache's directory; '' when it is disabled");
  m.def("hash_hex", &hashBytes, nb::arg("data"));
  m.def("hash_hex", &hashHex, nb::arg("data"),
        "a 128-bit digest of bytes or of a str's UTF-8, as 32 hex digits");
  m.def("load_gpu_kernel", &loadCached, nb::arg("key"),
        "the kernel stored under key, or None (missing, disabled or unreadable)");
  m.def("store_gpu_kernel", &storeGpuKernel, nb::arg("key"), nb::arg("kernel"),
        "stores the kernel under key; False when nothing was written");
  m.def("gpu_kernel_from_bytes", &kernelFromBytes, nb::arg("data"),
        "GpuKernel.to_bytes() read back; None for anything else");
}

std::string dumpAstText(const std::string &text, const std::string &filename) {
  return dumpAst(*parseFunction(makeSource(text, filename, 1)));
}

// Runs Tile IR passes by name; names starting "gpu-" are the NVIDIA backend's
// passes (on `arch` with `numWarps`), which run after the others.
std::string runPassesText(const std::string &text, const std::vector<std::string> &passes,
                          const std::string &filename, const std::string &arch, int numWarps) {
  EncodingParser layouts = [](const std::string &e) -> std::shared_ptr<const Encoding> {
    return nvidia::parseLayoutEncoding(e);
  };
  std::unique_ptr<Function> fn = parseIR(text, filename, layouts);
  fn->renumber(); // so the verifier's messages show the ids printed IR would
  // GPU IR (tensors with layouts) read back is verified as the backend's
  bool gpuText = false;
  walk(*fn->body, [&](Op *op) {
    for (auto &r : op->results)
      gpuText |= r->type.encoding != nullptr;
  });
  verify(*fn, gpuText);
  std::vector<std::string> portable, gpu;
  for (const std::string &p : passes)
    (p.rfind("gpu-", 0) == 0 ? gpu : portable).push_back(p);
  runPasses(*fn, portable);
  nvidia::GpuOptions opts;
  opts.arch = arch;
  opts.numWarps = numWarps;
  for (const std::string &p : gpu)
    nvidia::runGpuPass(*fn, p, opts);
  verify(*fn, /*gpuLevel=*/gpuText || !gpu.empty());
  return printFunction(*fn);
}

} // namespace

NB_MODULE(_C, m) {
  m.doc() = "tilec's compiler and runtimes";
  // Kernels defined at module level keep their compiled objects until the
  // interpreter exits; that is not a leak worth a warning on every exit.
  nb::set_leak_warnings(false);
  nb::exception<CompileError>(m, "CompilationError");
  nb::exception<cpu::KernelError>(m, "KernelError", PyExc_RuntimeError);
  nb::exception<InternalError>(m, "InternalError", PyExc_RuntimeError);

  nb::exception<AssemblerError>(m, "AssemblerError", PyExc_RuntimeError);
  nb::exception<cuda::DriverError>(m, "DriverError", PyExc_RuntimeError);

  bindLauncher(m);

  nb::class_<GpuKernel>(m, "GpuKernel")
      .def_ro("name", &GpuKernel::name)
      .def_ro("arch", &GpuKernel::arch)
      .def_ro("ptx", &GpuKernel::ptx)
      .def_prop_ro("cubin", [](const GpuKernel &k) { return asBytes(k.cubin); })
      .def_ro("assembler", &GpuKernel::assembler)
      .def_ro("num_threads", &GpuKernel::numThreads)
      .def_ro("shared", &GpuKernel::sharedBytes)
      .def_ro("staging_bytes", &GpuKernel::stagingBytes)
      .def_ro("n_regs", &GpuKernel::numRegs)
      .def_ro("spill_bytes", &GpuKernel::spillBytes)
      // Triton's n_spills: the local memory a thread uses, in 4-byte words
      .def_prop_ro("n_spills", [](const GpuKernel &k) { return k.stackBytes / 4; })
      .def_prop_ro("tensor_maps",
                   [](const GpuKernel &k) {
                     nb::list out;
                     for (const nvidia::TensorMapParam &m : k.tensorMaps) {
                       nb::dict d;
                       d["element_bytes"] = m.elementBytes;
                       d["box"] = m.box;
                       d["swizzle"] = m.swizzle;
                       out.append(d);
                     }
                     return out;
                   })
      .def_prop_ro("num_stages", [](const GpuKernel &k) { return k.options.numStages; })
      .def_prop_ro("num_warps", [](const GpuKernel &k) { return k.options.numWarps; })
      .def_ro("emit_ms", &GpuKernel::emitMs)
      .def_ro("assemble_ms", &GpuKernel::assembleMs)
      .def_ro("from_cache", &GpuKernel::fromCache)
      .def("to_bytes", [](const GpuKernel &k) { return asBytes(gpuKernelToBytes(k)); })
      .def("assemble",
           [](GpuKernel &k) {
             nb::gil_scoped_release release; // ptxas runs for a while
             assembleGpuKernel(k);
           })
      .def("load", [](GpuKernel &k, int device) { k.loaded(device); })
      .def("launch", &launchGpu, nb::arg("grid"), nb::arg("args"), nb::arg("stream"),
           nb::arg("device"));

  m.def("cuda_available", []() {
    std::string why;
    bool ok = cuda::available(&why);
    return std::make_pair(ok, why);
  });
  m.def("device_count", &cuda::deviceCount);
  m.def("current_device", &cuda::currentDevice);
  m.def("device_properties", &deviceProperties);
  m.def("synchronize", &cuda::synchronize);
  m.def("pointer_device", &cuda::pointerDevice);
  m.def("find_ptxas", &findPtxas);
  m.def("arch_number", &nvidia::archNumber);
  bindDiskCache(m);

  nb::class_<CompiledKernel>(m, "CompiledKernel")
      .def_ro("name", &CompiledKernel::name)
      .def_ro("ir", &CompiledKernel::ir)
      .def_prop_ro("ir_after_sema", &CompiledKernel::irAfterSema)
      .def_ro("compile_ms", &CompiledKernel::compileMs)
      .def_prop_ro("arg_names", [](const CompiledKernel &k) { return k.fn->argNames; })
      .def_prop_ro("depends_on_target",
                   [](const CompiledKernel &k) { return k.fn->dependsOnTarget; })
      .def_prop_ro("stored_args", [](const CompiledKernel &k) { return storedArguments(*k.fn); })
      .def("to_gpu", &toGpu, nb::arg("arch"), nb::arg("num_warps") = 4, nb::arg("num_stages") = 3,
           nb::arg("enable_fp_fusion") = true, nb::arg("debug") = false, nb::arg("assemble") = true,
           nb::arg("maxnreg") = 0, nb::arg("launch_pdl") = false,
           nb::arg("launch_cooperative_grid") = false, nb::arg("defer_tma_stores") = true,
           nb::arg("warp_specialize_loops") = false)
      // asm["tilegpu"] of `gpu`, compiled from this kernel: its GPU passes run again
      .def("gpu_ir", [](const CompiledKernel &k,
                        const GpuKernel &gpu) { return nvidia::gpuIr(*k.fn, gpu.options); })
      .def("launch_cpu", &launchCpu, nb::arg("grid"), nb::arg("args"), nb::arg("memory"),
           nb::arg("num_threads") = 0);

  m.def("compile", &compile, nb::arg("source"), nb::arg("filename"), nb::arg("first_line"),
        nb::arg("params"), nb::arg("resolver"), nb::arg("target") = "cpu");
  m.def("dump_ast", &dumpAstText, nb::arg("source"), nb::arg("filename") = "<string>");
  m.def("run_passes", &runPassesText, nb::arg("ir"), nb::arg("passes"),
        nb::arg("filename") = "<ir>", nb::arg("arch") = "sm_90a", nb::arg("num_warps") = 4);
}
