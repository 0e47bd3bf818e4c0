// The launch fast path of a @jit kernel (see launcher.cpp).
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tilec {

struct GpuKernel;

class Launcher {
public:
  Launcher(std::vector<std::string> names, std::vector<bool> constexprs,
           std::vector<bool> specialize, nanobind::list defaults, nanobind::object noDefault);
  ~Launcher();
  Launcher(const Launcher &) = delete;
  Launcher &operator=(const Launcher &) = delete;
  // Launches when this call's specialization was registered; else None.
  nanobind::object launch(nanobind::object grid, nanobind::tuple args, nanobind::dict kwargs);
  // Registers the kernel the slow path compiled for a call like this one.
  void add(nanobind::tuple args, nanobind::dict kwargs, nanobind::object kernel,
           std::shared_ptr<GpuKernel> gpu, nanobind::list globals);
  void clear();

private:
  struct Entry;
  struct Call {
    std::vector<nanobind::handle> values;
    nanobind::dict options;
    std::string key;
    std::vector<uint64_t> runtime;
    int device = -1;
  };
  bool bind(nanobind::tuple args, nanobind::dict kwargs, std::vector<nanobind::handle> &values,
            nanobind::dict &options);
  bool descriptorKey(size_t i, nanobind::handle d, std::string &key,
                     std::vector<uint64_t> &runtime, int &device);
  bool keyOf(size_t i, nanobind::handle v, std::string &key, std::vector<uint64_t> &runtime,
             int &device);
  bool makeKey(nanobind::tuple args, nanobind::dict kwargs, Call &call);
  static bool globalsUnchanged(const Entry &e);

  std::vector<std::string> names_;
  std::vector<nanobind::object> nameObjects_; // the same, as interned Python strings
  std::vector<bool> constexprs_, specialize_;
  nanobind::list defaults_;
  nanobind::object noDefault_;
  std::unordered_map<std::string, std::unique_ptr<Entry>> entries_;
};

void bindLauncher(nanobind::module_ &m);

} // namespace tilec
