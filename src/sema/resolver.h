// How sema learns what a global name in a kernel means: the Python side (or
// the CLI) answers through this interface.
#pragma once

#include <memory>
#include <string>

#include "sema/values.h"

namespace tilec {

struct GlobalBinding {
  enum Kind {
    Unknown,    // not a global: sema tries Python builtins, then reports it undefined
    Module,     // module: "triton", "triton.language", "triton.language.math", "libdevice"
    JitFunction, // fn
    Constexpr,  // value
    Builtin,    // module + "." + name of a tl function imported directly (from triton.language import exp)
    PythonObject // description: a Python function or object that is not @jit and not constexpr
  } kind = Unknown;
  std::string module;
  std::string name;
  ConstValue value;
  std::shared_ptr<JitFunctionRef> fn;
  std::string description;
};

class Resolver {
public:
  virtual ~Resolver() = default;
  virtual GlobalBinding lookup(const std::string &name) = 0;
};

} // namespace tilec
