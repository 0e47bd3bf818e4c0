// The CPU backend: runs a kernel's Tile IR over its launch grid, the programs
// in parallel on host threads. It is the reference for what a kernel means.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <stdexcept>
#include <vector>

#include "ir/ir.h"

namespace tilec::cpu {

// A runtime argument: an integer or address in `i`, or a float in `f`.
struct ArgValue {
  int64_t i = 0;
  double f = 0;
};

// A range of host memory the kernel may touch: [begin, end), the bytes a
// tensor argument (a view: its offset, shape and strides) can reach.
struct MemoryRange {
  uint64_t begin = 0, end = 0;
  std::string name;     // the argument it belongs to, for messages
  bool writable = true; // false for read-only arrays: a store is an error
};

struct Launch {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<ArgValue> args;        // one per runtime kernel argument
  std::vector<MemoryRange> memory;   // every access must fall in one of these
  int numThreads = 0;                // 0: one per hardware thread
};

// An error while a kernel runs (an access out of bounds, a failed
// device_assert), located at the kernel line that caused it.
class KernelError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Runs `fn` (renumbered) on the grid. Every load and store must fall in one of
// the launch's memory ranges, except those through pointers made at run time
// (pointer tables: see accessesThroughRunTimePointers), which nothing bounds.
// Throws KernelError.
void launch(const Function &fn, const Launch &launch);

} // namespace tilec::cpu
