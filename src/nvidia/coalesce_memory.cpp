// The coalescing pass, as Triton's: the addresses of a load or store are
// ordered by how far axis info proves them contiguous along each dim, and the
// access gets a blocked layout with that order, each thread holding a vector
// along the most contiguous dim. A load gets the layout as the encoding of
// its result, so that its users (a trans, a dot reading it) know it. A
// store's value is moved into the layout by a gpu.convert_layout, so that a
// dot's accumulator, whose fragments are narrow, goes out in 16-byte vectors;
// a value already in the layout makes the conversion free. A conversion that
// moves data goes through shared memory whole, so values over 64 KiB are
// stored in their own layout instead.
// Block pointers get the same, ordered by a dim of unit stride, else by their
// make_block_ptr's order. On sm_90 a block store TMA can copy out (tmaStorable)
// is marked `tma` instead and keeps its value's layout: the threads only write
// the tile to shared memory, in whatever layout they hold it.
#include "nvidia/coalesce_memory.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "nvidia/assign_layouts.h"
#include "nvidia/axis_info.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

constexpr int64_t kMaxConvertBytes = 64 * 1024;

// Dims from the most contiguous to the least; ties keep the last dim first.
std::vector<int> contiguityOrder(const AxisInfo &info) {
  std::vector<int> order(info.dims.size());
  std::iota(order.rbegin(), order.rend(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return info.dims[a].contiguity > info.dims[b].contiguity; });
  return order;
}

// A block pointer's dims from the most contiguous: a dim of unit stride
// first, then make_block_ptr's order (row-major where its origin is unknown).
std::vector<int> blockOrder(const AxisInfoMap &info, const Value *blockPtr) {
  int rank = (int)blockPtr->type.blockShape.size();
  std::vector<int> order(rank);
  std::iota(order.rbegin(), order.rend(), 0);
  std::optional<BlockPtrInfo> bp = blockPtrInfo(info, blockPtr);
  if (!bp)
    return order;
  if ((int)bp->order.size() == rank)
    order.assign(bp->order.begin(), bp->order.end());
  for (int d = 0; d < rank; ++d)
    if (bp->unitStride[d]) {
      order.erase(std::find(order.begin(), order.end(), d));
      order.insert(order.begin(), d);
      break;
    }
  return order;
}

// A store's value moved into the access layout `e`, unless too big to move whole.
void convertStoredValue(Op *store, int operand, const std::shared_ptr<LayoutEncoding> &e) {
  Value *value = store->operand(operand);
  bool fits = value->type.isTensor() &&
              value->type.numel() * storageBytes(value->type.dtype) <= kMaxConvertBytes;
  if (fits && !value->type.sameEncoding(value->type.withEncoding(e)))
    store->operands[operand] = convertBefore(store, value, e);
}

using Users = std::unordered_map<const Value *, std::vector<const Op *>>;

// Whether `v` is only read as a dot's A or B, directly or transposed: a tile
// bound for shared memory, whose layout in registers nothing else sees.
bool onlyDotOperand(const Users &users, const Value *v) {
  auto it = users.find(v);
  if (it == users.end())
    return false;
  for (const Op *user : it->second) {
    if (user->kind == OpKind::Trans && onlyDotOperand(users, user->result()))
      continue;
    if (user->kind != OpKind::Dot || user->operand(2) == v)
      return false;
  }
  return true;
}

} // namespace

void coalesceMemory(Function &fn, const GpuOptions &opts) {
  AxisInfoMap info = analyzeAxisInfo(fn);
  int minBytes = minAccessBytes(fn);
  std::vector<Op *> accesses, blockAccesses;
  Users users;
  walk(*fn.body, [&](Op *op) {
    if ((op->kind == OpKind::Load || op->kind == OpKind::Store) && op->operand(0)->type.isTensor())
      accesses.push_back(op);
    if (op->kind == OpKind::LoadBlock || op->kind == OpKind::StoreBlock)
      blockAccesses.push_back(op);
    for (const Value *v : op->operands)
      users[v].push_back(op);
  });
  // Every access's vector is 16 bytes of the function's narrowest element, so
  // that values of one shape share a layout; a dot operand's tile takes
  // 16 bytes of its own (fp32 tiles of an fp16-out matmul: 32 bytes a thread
  // copied as two vectors 32 bytes apart read each sector twice).
  auto accessBytes = [&](const Op *op) {
    bool load = op->kind == OpKind::LoadBlock || op->kind == OpKind::Load;
    return load && onlyDotOperand(users, op->result()) ? dtypeBytes(op->operand(0)->type.pointee)
                                                       : minBytes;
  };
  // Block pointers: the layout always goes into the types (the lowering has no other).
  bool tma = archNumber(opts.arch) >= 90;
  for (Op *op : blockAccesses) {
    if (op->kind == OpKind::StoreBlock && tma && tmaStorable(fn, info, *op)) {
      op->setAttr("tma", int64_t(1));
      continue;
    }
    const std::vector<int64_t> &shape = op->operand(0)->type.blockShape;
    auto e = std::make_shared<LayoutEncoding>(
        "blocked", blockedLayout(shape, defaultVector(shape, accessBytes(op), opts.numWarps),
                                 opts.numWarps, blockOrder(info, op->operand(0))));
    if (op->kind == OpKind::LoadBlock)
      op->result()->type = op->result()->type.withEncoding(e);
    else
      convertStoredValue(op, 1, e);
  }
  for (Op *op : accesses) {
    const Type &ptr = op->operand(0)->type;
    std::vector<int> order = contiguityOrder(axisInfoOf(info, op->operand(0)));
    auto e = std::make_shared<LayoutEncoding>(
        "blocked", blockedLayout(ptr.shape, defaultVector(ptr.shape, accessBytes(op), opts.numWarps),
                                 opts.numWarps, order));
    if (op->kind == OpKind::Load) {
      op->result()->type = op->result()->type.withEncoding(e);
      continue;
    }
    convertStoredValue(op, 1, e);
  }
}

} // namespace tilec::nvidia
