// The launch fast path of a @jit kernel, in C++: binds the call's arguments,
// builds the specialization key, finds the compiled kernel, packs the
// arguments and launches on torch's current stream, with no Python-level
// loop. Anything it does not recognize (a first launch, CPU tensors, an
// unusual argument) returns None, and Python's slow path handles it and
// registers the result here.
#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "bindings/launcher.h"
#include "runtime/gpu_kernel.h"

namespace nb = nanobind;

namespace tilec {

namespace {

// Launch keywords that configure the compile or the launch, not the kernel.
// The largest grid CUDA launches along x, y and z.
const int64_t kGridLimits[3] = {2147483647, 65535, 65535};

const char *const kCompileOptions[] = {"num_warps", "num_stages", "enable_fp_fusion", "debug",
                                       "maxnreg", "warp_specialize_loops"};

bool interpreting() {
  for (const char *name : {"TILEC_INTERPRET", "TRITON_INTERPRET"}) {
    const char *v = std::getenv(name);
    if (v && *v && std::strcmp(v, "0") != 0)
      return true;
  }
  return false;
}

void appendInt(std::string &key, int64_t v) { key.append((const char *)&v, sizeof v); }

// Interned names, made once: lookups with them skip building a string per call.
struct Names {
  PyObject *getDevice = PyUnicode_InternFromString("get_device");
  PyObject *dataPtr = PyUnicode_InternFromString("data_ptr");
  PyObject *dtype = PyUnicode_InternFromString("dtype");
  PyObject *stream = PyUnicode_InternFromString("stream");
};
const Names &names() {
  static const Names *n = new Names(); // kept for the process's life
  return *n;
}

// obj.name() through the method-call protocol, with no bound method made.
PyObject *callMethod(PyObject *obj, PyObject *name) {
  PyObject *args[1] = {obj};
  return PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
}

} // namespace

struct Launcher::Entry {
  nb::object kernel; // the Python CompiledKernel, returned by each launch
  std::shared_ptr<GpuKernel> gpu;
  // Constexpr globals the kernel read: (mapping or cell, name or None, value).
  std::vector<std::tuple<nb::object, nb::object, nb::object>> globals;
};

Launcher::Launcher(std::vector<std::string> names, std::vector<bool> constexprs,
                   std::vector<bool> specialize, nb::list defaults, nb::object noDefault)
    : names_(std::move(names)), constexprs_(std::move(constexprs)),
      specialize_(std::move(specialize)), defaults_(defaults), noDefault_(noDefault) {
  for (const std::string &n : names_)
    nameObjects_.push_back(nb::steal(PyUnicode_InternFromString(n.c_str())));
}

Launcher::~Launcher() = default;

void Launcher::clear() { entries_.clear(); }

// Binds a call to the parameters: positional, then keywords, then defaults.
// False when the call does not fit plainly (Python then reports the error).
bool Launcher::bind(nb::tuple args, nb::dict kwargs, std::vector<nb::handle> &values,
                    nb::dict &options) {
  size_t n = names_.size();
  if (args.size() > n)
    return false;
  values.assign(n, nb::handle());
  for (size_t i = 0; i < args.size(); ++i)
    values[i] = args[i];
  size_t used = 0;
  for (size_t i = args.size(); i < n; ++i) {
    PyObject *v = PyDict_GetItem(kwargs.ptr(), nameObjects_[i].ptr());
    if (v) {
      values[i] = v;
      ++used;
    } else if (!defaults_[i].is(noDefault_)) {
      values[i] = defaults_[i];
    } else {
      return false;
    }
  }
  if (used != kwargs.size()) { // the rest are launch options
    for (auto [k, v] : kwargs) {
      std::string name = nb::cast<std::string>(k);
      size_t at = 0;
      while (at < n && names_[at] != name)
        ++at;
      if (at < args.size())
        return false; // given twice: Python reports it
      if (at == n)
        options[k] = v;
    }
  }
  return true;
}

namespace {

// torch.Tensor and the fast current-stream query, looked up once torch is loaded.
struct Torch {
  PyObject *tensorType = nullptr;
  nb::object rawStream;
  bool ready = false;
  bool load() {
    if (ready)
      return tensorType != nullptr;
    nb::object modules = nb::module_::import_("sys").attr("modules");
    if (!nb::cast<nb::dict>(modules).contains("torch"))
      return false;
    ready = true;
    nb::object torch = modules["torch"];
    tensorType = torch.attr("Tensor").ptr();
    Py_INCREF(tensorType);
    rawStream = nb::getattr(torch.attr("_C"), "_cuda_getCurrentRawStream", nb::none());
    return true;
  }
};
Torch torch;

// tilec's host TensorDescriptor type, once its module is loaded.
PyObject *descriptorType() {
  static PyObject *type = nullptr;
  if (!type) {
    nb::dict modules = nb::borrow<nb::dict>(nb::module_::import_("sys").attr("modules"));
    const char *name = "tilec.tools.tensor_descriptor";
    if (!modules.contains(name))
      return nullptr;
    type = nb::getattr(modules[name], "TensorDescriptor", nb::none()).ptr();
    Py_INCREF(type);
  }
  return type == Py_None ? nullptr : type;
}

// Appends the ints of list `l` to `out`; false unless all are plain ints.
bool intsOf(nb::handle l, std::vector<int64_t> &out) {
  if (!PyList_Check(l.ptr()) && !PyTuple_Check(l.ptr()))
    return false;
  nb::sequence seq = nb::borrow<nb::sequence>(l);
  for (nb::handle v : seq) {
    if (!PyLong_CheckExact(v.ptr()))
      return false;
    int overflow = 0;
    out.push_back(PyLong_AsLongLongAndOverflow(v.ptr(), &overflow));
    if (overflow)
      return false;
  }
  return true;
}

// The value inside a tl.constexpr (ours or Triton's), or the value itself.
nb::object unwrapConstexpr(nb::handle v) {
  PyTypeObject *t = Py_TYPE(v.ptr());
  if (std::strcmp(t->tp_name, "constexpr") == 0 && nb::hasattr(v, "value"))
    return v.attr("value");
  return nb::borrow(v);
}

} // namespace

// The specialization key of one argument, and its runtime bits if it has any.
// False when the fast path does not handle this value.
bool Launcher::keyOf(size_t i, nb::handle v, std::string &key, std::vector<uint64_t> &runtime,
                     int &device) {
  nb::object unwrapped;
  if (constexprs_[i]) {
    unwrapped = unwrapConstexpr(v);
    v = unwrapped;
    if (v.is_none()) {
      key += 'N';
    } else if (PyBool_Check(v.ptr())) {
      key += v.ptr() == Py_True ? 'T' : 'F';
    } else if (PyLong_CheckExact(v.ptr())) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      if (overflow)
        return false;
      key += 'I';
      appendInt(key, x);
    } else if (PyUnicode_CheckExact(v.ptr())) {
      key += 'S';
      key += nb::cast<std::string>(v);
      key += '\0';
    } else if (PyFloat_CheckExact(v.ptr())) {
      key += 'D';
      double d = PyFloat_AsDouble(v.ptr());
      key.append((const char *)&d, sizeof d);
    } else {
      return false;
    }
    return true;
  }
  PyObject *o = v.ptr();
  if (o == Py_None) {
    key += 'N';
    return true;
  }
  if (PyTuple_CheckExact(o)) { // each element in turn, as the slow path flattens them
    key += '(';
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); ++k)
      if (!keyOf(i, nb::handle(PyTuple_GET_ITEM(o, k)), key, runtime, device))
        return false;
    key += ')';
    return true;
  }
  if (PyBool_Check(o)) {
    key += 'b';
    runtime.push_back(o == Py_True);
    return true;
  }
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) // u64 range or beyond: the slow path types it
      return false;
    if (specialize_[i] && x == 1) {
      key += '1';
      return true;
    }
    key += x >= INT32_MIN && x <= INT32_MAX ? 'i' : 'l';
    key += specialize_[i] && x % 16 == 0 ? '6' : '_';
    runtime.push_back((uint64_t)x);
    return true;
  }
  if (PyFloat_CheckExact(o)) {
    key += 'f';
    double d = PyFloat_AsDouble(o);
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    runtime.push_back(bits);
    return true;
  }
  if (!torch.load())
    return false;
  if (!PyObject_TypeCheck(o, (PyTypeObject *)torch.tensorType)) {
    PyObject *desc = descriptorType();
    return desc && PyObject_TypeCheck(o, (PyTypeObject *)desc) &&
           descriptorKey(i, v, key, runtime, device);
  }
  PyObject *devObj = callMethod(o, names().getDevice);
  if (!devObj) {
    PyErr_Clear();
    return false;
  }
  long dev = PyLong_AsLong(devObj);
  Py_DECREF(devObj);
  if (dev < 0 || (device >= 0 && dev != device))
    return false; // CPU tensors, or tensors on two GPUs: the slow path
  device = (int)dev;
  PyObject *ptrObj = callMethod(o, names().dataPtr);
  if (!ptrObj) {
    PyErr_Clear();
    return false;
  }
  uint64_t ptr = PyLong_AsUnsignedLongLong(ptrObj);
  Py_DECREF(ptrObj);
  PyObject *dtype = PyObject_GetAttr(o, names().dtype);
  key += 't';
  appendInt(key, (int64_t)(intptr_t)dtype); // torch dtypes are singletons
  Py_XDECREF(dtype);
  key += ptr % 16 == 0 ? 'A' : 'u';
  runtime.push_back(ptr);
  return true;
}

// A host TensorDescriptor, keyed as _args.specialize specializes it: its
// base tensor, padding and block shape, and which sizes and strides are
// multiples of 16 (strides of 1 too); passed as base, sizes, strides.
bool Launcher::descriptorKey(size_t i, nb::handle d, std::string &key,
                             std::vector<uint64_t> &runtime, int &device) {
  nb::object base = d.attr("base"), padding = d.attr("padding");
  std::vector<int64_t> block, shape, strides;
  if (!PyUnicode_CheckExact(padding.ptr()) || !intsOf(d.attr("block_shape"), block) ||
      !intsOf(d.attr("shape"), shape) || !intsOf(d.attr("strides"), strides) ||
      shape.size() != strides.size() || shape.size() != block.size())
    return false;
  std::string pad = nb::cast<std::string>(padding);
  if (pad != "zero" && pad != "nan")
    return false; // the slow path says why
  key += 'd';
  if (!PyObject_TypeCheck(base.ptr(), (PyTypeObject *)torch.tensorType) ||
      !keyOf(i, base, key, runtime, device))
    return false;
  key += pad[0];
  for (int64_t b : block)
    appendInt(key, b);
  for (size_t k = 0; k < shape.size() + strides.size(); ++k) {
    int64_t v = k < shape.size() ? shape[k] : strides[k - shape.size()];
    bool stride = k >= shape.size();
    key += specialize_[i] && stride && v == 1 ? '1' : specialize_[i] && v % 16 == 0 ? '6' : '_';
    runtime.push_back((uint64_t)v);
  }
  return true;
}

bool Launcher::makeKey(nb::tuple args, nb::dict kwargs, Call &call) {
  if (interpreting() || !bind(args, kwargs, call.values, call.options))
    return false;
  for (size_t i = 0; i < names_.size(); ++i)
    if (!keyOf(i, call.values[i], call.key, call.runtime, call.device))
      return false;
  if (call.device < 0)
    return false; // no GPU tensor: the CPU backend
  if (call.options.size() > 0) {
    for (const char *name : kCompileOptions) {
      PyObject *v = PyDict_GetItemString(call.options.ptr(), name);
      call.key += '|';
      if (v && v != Py_None)
        call.key += nb::cast<std::string>(nb::str(v));
    }
  }
  appendInt(call.key, call.device);
  return true;
}

bool Launcher::globalsUnchanged(const Entry &e) {
  for (auto &[where, name, value] : e.globals) {
    nb::object now;
    if (name.is_none()) {
      PyObject *c = PyCell_Get(where.ptr());
      if (!c)
        return false;
      now = nb::steal(c);
    } else {
      PyObject *v = PyDict_GetItem(where.ptr(), name.ptr());
      if (!v)
        return false;
      now = nb::borrow(v);
    }
    now = unwrapConstexpr(now);
    int same = PyObject_RichCompareBool(now.ptr(), value.ptr(), Py_EQ);
    if (same != 1) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

nb::object Launcher::launch(nb::object grid, nb::tuple args, nb::dict kwargs) {
  Call call;
  if (!makeKey(args, kwargs, call))
    return nb::none();
  auto it = entries_.find(call.key);
  if (it == entries_.end() || !globalsUnchanged(*it->second))
    return nb::none();
  Entry &e = *it->second;
  int64_t g[3] = {1, 1, 1};
  nb::object gridValue = grid;
  if (PyCallable_Check(grid.ptr())) {
    nb::dict meta;
    for (size_t i = 0; i < names_.size(); ++i)
      meta[names_[i].c_str()] = call.values[i];
    for (auto [k, v] : call.options)
      meta[k] = v;
    gridValue = grid(meta);
  }
  if (!PyTuple_Check(gridValue.ptr()) && !PyList_Check(gridValue.ptr())) {
    if (!PyLong_CheckExact(gridValue.ptr()))
      return nb::none();
    g[0] = nb::cast<int64_t>(gridValue);
    if (g[0] < 0 || g[0] > kGridLimits[0])
      return nb::none();
  } else {
    nb::sequence seq = nb::borrow<nb::sequence>(gridValue);
    size_t n = nb::len(seq);
    if (n < 1 || n > 3)
      return nb::none();
    for (size_t k = 0; k < n; ++k) {
      nb::handle d = seq[k];
      if (!PyLong_CheckExact(d.ptr()))
        return nb::none();
      g[k] = nb::cast<int64_t>(d);
      if (g[k] < 0 || g[k] > kGridLimits[k])
        return nb::none(); // the slow path says why
    }
  }
  uint64_t stream;
  PyObject *s = PyDict_GetItem(call.options.ptr(), names().stream);
  if (s && s != Py_None)
    stream = nb::cast<uint64_t>(nb::handle(s));
  else
    stream = nb::cast<uint64_t>(torch.rawStream(call.device));
  {
    nb::gil_scoped_release release;
    e.gpu->launch({g[0], g[1], g[2]}, call.runtime, (void *)stream, call.device);
  }
  return e.kernel;
}

void Launcher::add(nb::tuple args, nb::dict kwargs, nb::object kernel,
                   std::shared_ptr<GpuKernel> gpu, nb::list globals) {
  Call call;
  if (!makeKey(args, kwargs, call))
    return;
  auto e = std::make_unique<Entry>();
  e->kernel = kernel;
  e->gpu = std::move(gpu);
  for (nb::handle h : globals) {
    nb::tuple t = nb::cast<nb::tuple>(h);
    e->globals.emplace_back(nb::borrow(t[0]), nb::borrow(t[1]), nb::borrow(t[2]));
  }
  entries_[call.key] = std::move(e);
}

namespace {

// `kernel[grid]`: calling it launches through the fast path, else through
// `fallback` (JITFunction.run) with grid= added.
struct GridLaunch {
  nb::object launcher, grid, fallback;
  nb::object call(nb::args args, nb::kwargs kwargs) {
    nb::object r = nb::cast<Launcher &>(launcher).launch(grid, nb::tuple(args), kwargs);
    if (!r.is_none())
      return r;
    kwargs["grid"] = grid;
    return fallback(*args, **kwargs);
  }
};

} // namespace

void bindLauncher(nb::module_ &m) {
  nb::class_<GridLaunch>(m, "GridLaunch").def("__call__", &GridLaunch::call);
  nb::class_<Launcher>(m, "Launcher")
      .def(nb::init<std::vector<std::string>, std::vector<bool>, std::vector<bool>, nb::list,
                    nb::object>(),
           nb::arg("names"), nb::arg("constexprs"), nb::arg("specialize"), nb::arg("defaults"),
           nb::arg("no_default"))
      .def("launch", &Launcher::launch, nb::arg("grid"), nb::arg("args"), nb::arg("kwargs"))
      .def("add", &Launcher::add, nb::arg("args"), nb::arg("kwargs"), nb::arg("kernel"),
           nb::arg("gpu"), nb::arg("globals"))
      .def("clear", [](Launcher &l) { l.clear(); })
      .def(
          "bind_grid",
          [](nb::object self, nb::object grid, nb::object fallback) {
            return GridLaunch{self, grid, fallback};
          },
          nb::arg("grid"), nb::arg("fallback"));
}

} // namespace tilec
