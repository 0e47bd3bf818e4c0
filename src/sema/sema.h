// Sema: lowers a parsed kernel to Tile IR. Resolves names, evaluates
// constexpr expressions, infers types and shapes with Triton's promotion and
// broadcasting rules, and inlines the @jit functions a kernel calls.
#pragma once

#include <memory>
#include <vector>

#include "ir/ir.h"
#include "sema/resolver.h"

namespace tilec {

// How one kernel parameter is specialized for this compile, as Triton does.
struct KernelParam {
  // Descriptor: a host tensor descriptor (TensorDescriptor), passed as its
  // base pointer, then each dim's size and stride (i64).
  // Tuple: a tuple argument, each element specialized on its own (elems).
  enum Kind { Constexpr, Pointer, Int, Float, Bool, Descriptor, Tuple } kind = Int;
  ConstValue value;      // Constexpr: the value baked in
  DType dtype = DType::I32; // Pointer, Descriptor: the pointee; Int: i32, i64 or u64; Float: f32 or f64
  int divisibility = 1;  // Pointer: 16 when 16-byte aligned; Int: 16 when a multiple of 16
  std::vector<int64_t> blockShape; // Descriptor: the tile it loads and stores
  std::string padding = "zero";    // Descriptor: what loads give outside the tensor ("nan")
  // Descriptor: 16 for each size, then stride, that is a multiple of 16; and
  // the strides equal to 1 (then constants in the kernel). Empty: unknown.
  std::vector<int> dimDivisibility;
  std::vector<bool> unitStrides;
  std::vector<KernelParam> elems;  // Tuple
};

// Lowers the function in `source` (one def). `params` holds one entry per
// parameter of the def, in order. Throws CompileError on a user error.
// `target` ("cpu", "sm_80", "sm_90a", ...) answers tl.target_info in the kernel.
std::unique_ptr<Function> lowerKernel(const SourcePtr &source, std::shared_ptr<Resolver> resolver,
                                      const std::vector<KernelParam> &params,
                                      const std::string &target = "cpu");

} // namespace tilec
