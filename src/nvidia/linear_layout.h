// Linear layouts: where each element of a distributed tensor lives. A layout
// maps the bits of (register, lane, warp) to tensor coordinates, linearly over
// GF(2): the element in register r of lane l of warp w has the coordinates
// XOR-ed together from one basis vector per set bit of r, l and w. Blocked,
// sliced, transposed and reshaped layouts are all instances, and whether a
// conversion between two layouts needs shared memory is computable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/types.h"
#include "nvidia/rank_vector.h"

namespace tilec::nvidia {

// Tensor coordinates, one per dim (rank_vector.h): a layout holds dozens of
// them and layouts are copied often.
using Coords = RankVector<int64_t>;

struct LinearLayout {
  std::vector<int64_t> shape; // powers of 2
  std::vector<Coords> regs;   // basis of register bit i
  std::vector<Coords> lanes;  // 5 bases, one per lane bit (zero: lanes hold copies)
  std::vector<Coords> warps;  // log2(num_warps) bases

  int numRegs() const { return 1 << regs.size(); }
  int rank() const { return (int)shape.size(); }
  // The coordinates of register `reg` in lane 0 of warp 0.
  Coords regCoords(int64_t reg) const;
  // Lane and warp bits whose basis is zero: threads differing there hold copies.
  unsigned replicatedLaneMask() const;
  // The bits any lane or warp sets along `dim`: a register coordinate free of
  // them adds to the thread's (the XOR of disjoint bits).
  int64_t threadBits(int dim) const;
  unsigned replicatedWarpMask() const;
  bool operator==(const LinearLayout &o) const {
    return shape == o.shape && regs == o.regs && lanes == o.lanes && warps == o.warps;
  }
  bool operator!=(const LinearLayout &o) const { return !(*this == o); }
  size_t hash() const; // equal layouts hash alike
  std::string str() const;
};

// Triton's blocked layout: `vec` contiguous elements of the fastest dim per
// thread, lanes then warps along the fastest dims first, the rest wrapped into
// registers. `order` lists the dims fastest first (empty: the last dim first,
// row-major). Where the tensor is smaller than the block, threads hold copies.
LinearLayout blockedLayout(const std::vector<int64_t> &shape, int vec, int numWarps,
                           std::vector<int> order = {});

// The layout a scan along `axis` runs in: the line cut into contiguous runs,
// one per thread (registers: the lowest register bits), the runs spread over
// the lowest lane bits, then the lowest warp bits; threads left over spread
// over the other dims, and registers hold the rest of those. Runs are at least
// `minRun` long (the sort's: more of its steps stay in registers).
LinearLayout scanLayout(const std::vector<int64_t> &shape, int axis, int numWarps,
                        int64_t minRun = 1);

// The layout of a reduction's result along `axis`: registers along the axis
// are dropped, lanes and warps along it come to hold copies.
LinearLayout sliceLayout(const LinearLayout &l, int axis);
// For each register of `l`, the register of sliceLayout(l, axis) it folds into.
std::vector<int> sliceRegisterMap(const LinearLayout &l, int axis);

LinearLayout expandDimsLayout(const LinearLayout &l, int axis);
// `l` seen from a tensor of `shape` whose size-1 dims are broadcast in `l`
// (what a broadcast to `l` reads its operand in without moving data).
LinearLayout projectLayout(const LinearLayout &l, const std::vector<int64_t> &shape);
// `l` with its zero register bases dropped: each element once per thread
// (a register-only conversion gives back the copies).
LinearLayout withoutRegisterCopies(const LinearLayout &l);
// Result dim i is operand dim order[i].
LinearLayout transLayout(const LinearLayout &l, const std::vector<int64_t> &order);
// Row-major order kept: each basis is re-read as a flat index.
LinearLayout reshapeLayout(const LinearLayout &l, const std::vector<int64_t> &shape);

// When every element `dst` puts in a thread is already in that thread under
// `src` (after size-1 dims of src are broadcast), the source register each
// destination register takes; empty when data must move between threads.
std::vector<int> registerOnlyConversion(const LinearLayout &src, const LinearLayout &dst);

// A linear layout as a tensor type's encoding: `kind` says which unit it
// feeds ("mma": mma.sync's accumulator, "wgmma": the warpgroup MMA's).
// Printed #mma<...> or #wgmma<...> with the layout's bases.
struct LayoutEncoding final : Encoding {
  LayoutEncoding(std::string k, LinearLayout l) : kind(std::move(k)), layout(std::move(l)) {}
  const std::string kind;
  const LinearLayout layout;
  // Printed once (IR text prints it with every tensor type of the layout).
  const std::string &str() const override;
  bool equals(const Encoding &o) const override;

private:
  mutable std::string text_;
};
// The type's encoding if it is a LayoutEncoding, else null.
const LayoutEncoding *layoutEncoding(const Type &t);
// A LayoutEncoding from its text (`#kind<8x16 reg=[(0,1)] lane=[...] warp=[...]>`,
// as str() writes it), for reading GPU IR back; null if the text is not one.
std::shared_ptr<const LayoutEncoding> parseLayoutEncoding(const std::string &text);

// A 2-D tile in shared memory as ldmatrix and wgmma read it, a linear map
// over GF(2) like the layouts above: from the bits of (row, byte in the row)
// to the byte offset. Rows are cut into column blocks of `swizzle` bytes (32,
// 64 or 128; 16: plain rows), each block stored as `rows` lines of `swizzle`
// bytes one after another; within every 128 bytes of a block the 16-byte
// chunks are XOR-ed with the line's place among eight (offset bits 7-9 into
// bits 4-6), so that eight rows read at one column hit eight bank groups.
// This is the canonical K-major (or MN-major) swizzled layout of wgmma.
struct SharedTile {
  int64_t rows = 0, rowBytes = 0;
  int swizzle = 16;
  std::vector<int64_t> rowBasis, byteBasis; // the offset of each bit
  int64_t bytes() const { return rows * rowBytes; }
  int64_t offset(int64_t row, int64_t byte) const;
};
// The widest swizzle a row of `rowBytes` (a power of 2, at least 16) allows.
SharedTile sharedTile(int64_t rows, int64_t rowBytes);

} // namespace tilec::nvidia
