// Tile IR: SSA values, ops with attributes and nested regions, functions.
// Ops are declared once in ops.def; OpInfo is generated from it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "support/diagnostics.h"
#include "ir/types.h"

namespace tilec {

enum class OpKind {
#define TILEC_OP(name, mnemonic, operands, results, regions, flags) name,
#include "ir/ops.def"
#include "ir/gpu_ops.def"
#undef TILEC_OP
};

enum OpFlag : unsigned {
  PURE = 1u << 0,
  ELEMENTWISE = 1u << 1,
  COMMUTATIVE = 1u << 2,
  INTS = 1u << 3,
  FLOATS = 1u << 4,
  TERMINATOR = 1u << 5,
  EFFECT = 1u << 6,
  PTRS = 1u << 7,
  GPU = 1u << 8, // a GPU-level op (gpu_ops.def)
};
constexpr int VARIADIC = -1;

struct OpInfo {
  const char *mnemonic;
  int numOperands; // or VARIADIC
  int numResults;  // or VARIADIC
  int numRegions;
  unsigned flags;
};
const OpInfo &opInfo(OpKind kind);
// The op with this mnemonic, if any.
bool opKindFromMnemonic(const std::string &mnemonic, OpKind *kind);

// An attribute value: an integer, a float, a list of integers or a string.
using Attr = std::variant<int64_t, double, std::vector<int64_t>, std::string>;

struct Op;
struct Block;

struct Value {
  Type type;
  Op *def = nullptr;      // the op that produces it, or null for a block argument
  Block *owner = nullptr; // the block whose argument it is, or null
  int index = 0;          // result number or argument number
  int id = -1;            // dense number, set by Function::renumber()
};

// A straight list of ops with arguments; ends in a terminator.
struct Block {
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Op>> ops;
  Op *parent = nullptr; // the op this block is a region of; null for a function body

  Value *addArg(Type t);
  Op *terminator() const { return ops.empty() ? nullptr : ops.back().get(); }
};

struct Op {
  OpKind kind;
  std::vector<Value *> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<std::unique_ptr<Block>> regions;
  std::vector<std::pair<std::string, Attr>> attrs; // kept sorted by name
  Location loc;
  Block *parent = nullptr;

  const OpInfo &info() const { return opInfo(kind); }
  bool has(unsigned flag) const { return (info().flags & flag) != 0; }
  Value *result(int i = 0) const { return results[i].get(); }
  Value *operand(int i) const { return operands[i]; }

  void setAttr(const std::string &name, Attr value);
  const Attr *attr(const std::string &name) const;
  int64_t intAttr(const std::string &name, int64_t fallback = 0) const;
  double floatAttr(const std::string &name, double fallback = 0) const;
  std::vector<int64_t> intsAttr(const std::string &name) const;
  std::string strAttr(const std::string &name, const std::string &fallback = "") const;
};

struct Function {
  std::string name;
  std::vector<std::string> argNames; // one per body argument, for messages
  std::vector<int> argDivisibility;  // one per body argument: 16 when specialized as aligned
  std::unique_ptr<Block> body;       // its args are the kernel's runtime arguments
  int numValues = 0;                 // set by renumber()
  // Whether sema answered tl.target_info questions: the IR is then for its
  // compile target only (the CPU, or one GPU architecture).
  bool dependsOnTarget = false;

  Function();
  // Gives every value a dense id in print order; returns how many there are.
  int renumber();
};

// A deep copy: a backend's passes rewrite their own copy of a kernel.
std::unique_ptr<Function> cloneFunction(const Function &fn);
// Appends a copy of `src` (with its regions) to `to`: its operands through
// `map` (values not in it are used as they are), its results and region
// arguments added to `map`.
Op *cloneOp(const Op &src, Block &to, std::unordered_map<const Value *, Value *> &map);

// Creates ops at an insertion point (the end of a block).
class Builder {
public:
  explicit Builder(Block *block = nullptr) : block_(block) {}
  void setBlock(Block *block) { block_ = block; }
  Block *block() const { return block_; }
  void setLoc(Location loc) { loc_ = std::move(loc); }
  const Location &loc() const { return loc_; }

  // Appends a new op with the given operands, result types and number of
  // regions (each gets one empty block).
  Op *create(OpKind kind, std::vector<Value *> operands, std::vector<Type> resultTypes,
             int numRegions = 0);
  Value *create1(OpKind kind, std::vector<Value *> operands, Type resultType) {
    return create(kind, std::move(operands), {std::move(resultType)})->result();
  }
  Value *constInt(int64_t v, Type t);
  Value *constFloat(double v, Type t);

private:
  Block *block_;
  Location loc_;
};

// Walks every op of a block and its regions, parents before children.
template <typename F> void walk(Block &block, F &&fn) {
  for (auto &op : block.ops) {
    fn(op.get());
    for (auto &region : op->regions)
      walk(*region, fn);
  }
}

// Inserts a new op with one result of type `t` before position `at` of `block`.
Op *insertOp(Block &block, size_t at, OpKind kind, std::vector<Value *> operands, Type t,
             const Location &loc);

// Replaces every use of `from` with `to` inside `block` and its regions.
void replaceAllUses(Block &block, Value *from, Value *to);

// How many times each value is an operand: an open-addressed table (the
// passes count every operand of a kernel, and a node per value costs more).
class UseCounts {
public:
  explicit UseCounts(size_t values = 0);
  // The count of `v`, added as 0 if absent (the reference lasts until the next add).
  int &operator[](const Value *v);
  int get(const Value *v) const;

private:
  size_t slot(const Value *v) const;
  std::vector<std::pair<const Value *, int>> slots_; // size a power of 2; null: free
  size_t used_ = 0;
};
// How many times each value is an operand inside `block` and its regions.
UseCounts countUses(const Block &block);
// How many uses `counts` has of `v` (0 when it has none).
int useCount(const UseCounts &counts, const Value *v);

// Whether `v` is defined in `block` or in a region nested in it (an op's
// result or a block argument there).
bool isDefinedIn(const Value *v, const Block &block);

// Whether `v` is a constant (scalar or splat) equal to zero.
bool isZeroConstant(const Value *v);

} // namespace tilec
