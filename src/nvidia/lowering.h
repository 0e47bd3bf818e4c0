// The state of lowering one Function to PTX, shared by the lower_*.cpp files
// (one per op family). Each Tile IR value becomes a TVal: a scalar (one
// register, the same in every thread) or a distributed tensor (one register
// per register bit pattern of its linear layout).
#pragma once

#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "nvidia/axis_info.h"
#include "nvidia/codegen.h"
#include "nvidia/linear_layout.h"
#include "nvidia/pipeline_loops.h"
#include "nvidia/ptx_builder.h"

namespace tilec::nvidia {

struct TVal {
  TVal() = default;
  TVal(const LinearLayout *l, std::vector<std::string> r, bool u = false)
      : layout(l), regs(std::move(r)), uniform(u) {}

  const LinearLayout *layout = nullptr; // null: a scalar
  std::vector<std::string> regs;
  bool uniform = false; // every element the same register (a splat): any layout is free
  // A tile a pipelined loop copied to shared memory, in the layout the dot
  // reads: the register holding its address (and no registers of elements).
  std::string sharedTile;
  bool isTensor() const { return layout != nullptr; }
};

// A value's address in shared memory: a base register and a byte offset.
struct SharedAddr {
  std::string base;
  int64_t offset = 0;
  std::string str() const {
    return "[" + base + (offset ? "+" + std::to_string(offset) : "") + "]";
  }
};

// TMA (lower_tma.cpp). Whether block pointer `blockPtr`'s tiles, of elements
// of `bytes`, can move by TMA on sm_90: 2-D, at most 256 rows, a 16-byte
// aligned base and strides, a unit stride along the rows, and a base, sizes
// and strides the launcher can compute from the arguments. The rows of a
// column-major block pointer (order (0, 1): K seen transposed) run along its
// dim 1: its copies land transposed, a [shape[1]][shape[0]] tile (tmaTransposed).
bool tmaMovable(const Function &fn, const AxisInfoMap &info, const Value *blockPtr, int bytes);
bool tmaTransposed(const Value *blockPtr);
// A block pointer's base as a tensor map takes it: a pointer the launcher
// computes (`host`), plus up to three terms coefficient * stride whose
// strides it computes and whose coefficients only the kernel knows (a
// program's batch and head, as attention kernels offset their base): each
// term an outer dim of the map, of that stride, copied at that coordinate.
struct TmaBase {
  struct Term {
    const Value *coefficient, *stride;
  };
  const Value *host = nullptr;
  std::vector<Term> terms; // innermost first (the order of the copies' coordinates)
};
std::optional<TmaBase> tmaBase(const Function &fn, const Value *base);
// Whether block store `store` can go out by TMA (tmaMovable, of a value of
// 2- or 4-byte elements held in registers of that width, at most 64 KiB).
bool tmaStorable(const Function &fn, const AxisInfoMap &info, const Op &store);
// Whether memory TMA store `store` writes may be read (or signalled through
// an atomic) later in the kernel: then the store must land before the kernel
// goes on, not only have read its tile.
bool storeMayBeReadBack(const Function &fn, const Op &store);
// Whether TMA store `store` returns before its copy has read its tile, which
// is then its own (GpuOptions::deferTmaStores; a store in a loop that nothing
// reads back).
bool deferredTmaStore(const Function &fn, const GpuOptions &opts, const Op &store);
// The box of one copy of shared tile `t`: its rows, one swizzle-wide column block.
std::vector<int64_t> tmaBox(const SharedTile &t, int bytes);
// The make_block_ptr block pointer `v` comes from, through advances and
// loops that carry it advanced: its base, sizes and strides are `v`'s.
const Op *blockPtrOrigin(const Value *v);

// One load of a pipelined loop (pipeline_loads.cpp), as pipelineLoops marked
// it: copied into the tile a dot reads, or (`value`) into a row-major buffer.
struct PipelinedLoad : CopyAddress {
  // Offsets computed from the induction variable (CopyAddress::offsetSlices):
  // by dim, the pointer's own offset they are added to.
  std::map<int, std::string> offsetBases;
  SharedTile tile;                   // as the dot reads it (operandTiles)
  bool transposed = false;           // the tile holds the value transposed ([N][K] B)
  const LinearLayout *layout = nullptr; // the layout the copies are issued in
  int64_t slotBytes = 0, offset = 0; // one stage's bytes; the first stage's place
  int bytes = 0, vec = 1; // element bytes; elements per copy
  TVal next;              // the (block) pointer of the next iteration to copy
  // A load no dot reads (attention backward's m and D rows): copied into a
  // row-major buffer in its own layout, each thread reading back what it copied.
  bool value = false;
  std::string tensorMap;  // TMA copies: the generic address of the descriptor's tensor map
};

class Lowering;

// How a warp-specialized block splits its registers (setmaxnreg): the
// kernel's maxnreg, then what the producer keeps and each consumer thread
// takes (0: no split, every thread may hold 255).
struct WarpRegisters {
  int maxnreg = 0, producer = 0, consumers = 0;
};
WarpRegisters warpRegisters(int consumerWarps, int64_t sharedBytes);

// The ring a warp-specialized kernel's producer fills and its ws_ring loops
// read (gpu.warp_specialize; lower_warp_specialize.cpp): `stages` slots of
// `slotBytes`, each with a `full` mbarrier (the producer's copies complete it)
// and an `empty` one (every consumer thread arrives once done with the slot).
struct WarpRing {
  int stages = 0;
  int64_t slotBytes = 0;
  std::string data;              // the shared address of slot 0
  int64_t fullAt = 0, emptyAt = 0; // full[0] and empty[0], in bytes past it
  // `[...]` of the full or empty mbarrier of the slot in register `slot`.
  std::string full(Lowering &L, const std::string &slot) const;
  std::string empty(Lowering &L, const std::string &slot) const;
  // Each side's own: the next slot it fills or reads, and the parity of the
  // slot's full barrier phase that fill completes.
  std::string slot, phase;
};

struct Pipeline {
  std::vector<PipelinedLoad> loads; // the dot operands the loop loads
  const Op *dot = nullptr;          // the asynchronous dot (asyncDot)
  bool genericReads = false;        // a dot reads the stages with ldmatrix
  int stages = 0;
  // On sm_90: every load is a host tensor descriptor's tile, copied by one
  // thread with TMA (cp.async.bulk.tensor); each stage's copies complete an
  // mbarrier (the stage's 8 bytes at `barriers` past the stages), waited on
  // with the parity `phase`, which flips each time the read slot wraps.
  bool tma = false;
  int64_t barriers = 0;
  std::string phase;
  // A ws_ring loop: the producer copies its tiles into the kernel's WarpRing,
  // whose slot and phase it reads; where the copies ahead would go out, the
  // previous iteration's slot is freed instead (from the second iteration on:
  // `notFirst`), and the last one after the loop.
  bool ws = false;
  std::string notFirst;
  // wgmma runs asynchronously across iterations (a loop with one dot, both
  // operands pipelined): it updates the loop-carried accumulator in place,
  // waits only for the previous iteration's group, and the next stage's
  // copies are issued at the end of the iteration, once every warpgroup is
  // done reading the slot they overwrite.
  bool asyncDot = false;
  // The asynchronous dot's accumulator starts again where `reset` is true (a
  // flattened loop's first k step of a tile: select(reset, zeros, carried)):
  // its first wgmma then ignores the registers instead of a select zeroing them.
  const Value *reset = nullptr;
  // The ifs of the body that read the asynchronous dot's result (a flattened
  // loop's epilogue): each waits for the dot first.
  std::set<const Op *> drains;
  // A flattened loop (flatten_loops.cpp) splits its induction variable into
  // q = iv / n (the outer iteration: a persistent kernel's tile) and
  // r = iv % n. The copies keep q and r of the next iteration they copy and
  // step them on instead of dividing; the scalars the copies compute from q
  // alone (the tile's offsets) are kept too, computed again only when q moves.
  struct Flat {
    const Op *div = nullptr, *rem = nullptr;
    std::vector<const Op *> tileOps;      // the copies' scalar ops computed from q alone
    std::vector<const Value *> kept;      // those the copies' other ops read
    std::vector<TVal> values;             // their values for the next iteration copied
    std::vector<const LinearLayout *> layouts; // (tensors) the layout the copies read each in
    std::string q, r;                     // that iteration's q and r
    std::string bodyQ, bodyR;             // the body's own iteration's, stepped (no division)
  };
  std::unique_ptr<Flat> flat;
  // The carried scalars the copies compute from, each stepped by a
  // loop-invariant amount: (that amount, its value for the next iteration copied).
  // In the order the loop carries them (the PTX must not depend on addresses).
  struct ByIndex {
    bool operator()(const Value *a, const Value *b) const { return a->index < b->index; }
  };
  std::map<const Value *, std::pair<const Value *, std::string>, ByIndex> stepped;
  // Dots (wgmma, f32) whose accumulator the loop carries and reads again only
  // after a synchronous wgmma of the next iteration (attention's p @ v): they
  // run on while the loop goes on, accumulating straight into the carried
  // registers (which carried value: the map's), and that wgmma's wait covers
  // them. With any, the next stage's copies go out once that wait is done
  // (issueAfterSyncDot), else at the iteration's end.
  std::map<const Op *, int> deferred;
  // Loop-carried (block) pointers that only the copied loads read: the loop
  // no longer advances them (the copies keep their own), nor moves them.
  std::set<int> frozen;
  int64_t step = 0;
  std::string base; // the address of its stages (shared_stages; the ring's for ws)
  std::string readSlot, writeSlot, ub, iv;
  const Value *ivValue = nullptr; // the loop's induction variable
  bool waited = false;
  bool issued = false; // this iteration's copies ahead went out (after the first synchronous dot)
};

// The shared tiles a tensor-core dot reads its operands from: A as [M][K];
// B as [K][N] (16-bit types) or [N][K] (the others).
struct OperandTiles {
  SharedTile a, b;
  bool bKRows = true;
};
OperandTiles operandTiles(const Op &dot);

// The accumulator layout a dot gets on the tensor cores of this target:
// wgmma's (sm_90a, f16/bf16, shapes it takes), else mma.sync's; null for the
// FMA path. Decided once, by assignLayouts, which puts it in the dot's type.
std::shared_ptr<const LayoutEncoding> accumulatorEncoding(const Op &dot, const GpuOptions &opts);
std::optional<LinearLayout> wgmmaAccumulatorLayout(const Op &dot, const GpuOptions &opts);
// Whether the tensor cores accumulate `dot` in f16 (f16 operands, f16 result), in
// f16x2 registers: adjacent columns of the accumulator layout packed in pairs.
bool halfAccumulator(const Op &dot);

class Lowering;
// An f32 rounded to tf32 as the CPU backend rounds it: nearest, ties to even.
std::string roundToTf32(Lowering &L, const std::string &f);

// Bytes an element of `d` takes in shared memory: its register's width
// (storeShared and loadShared move whole registers; lower_layout.cpp).
int storageBytes(DType d);
// The ld/st type suffix for elements of `d` in memory (lower_memory.cpp).
const char *memType(DType d);
// Packs elements narrower than 4 bytes into 32-bit words (lower_memory.cpp).
std::vector<std::string> packWords(Lowering &L, const std::vector<std::string> &elems, DType d);
// `v` (of type d) from another lane: shfl.sync in `mode` (bfly: lane ^ k; up:
// lane - k; down: lane + k; a lane past the warp keeps its own value).
std::string shuffle(Lowering &L, const std::string &v, DType d, const char *mode, int k);
// Unpacks 32-bit words into the elements of a type narrower than 4 bytes.
std::vector<std::string> unpackWords(Lowering &L, const std::vector<std::string> &words, DType d);
// The 16-bit halves (low, high) of a word, in fresh registers, and a word of
// two halves: the word they were split from where they were (lower_memory.cpp).
std::pair<std::string, std::string> splitWord(Lowering &L, const std::string &w);
std::string joinHalves(Lowering &L, const std::string &lo, const std::string &hi);
// The word splitWord split into `lo` and `hi`, or null.
const std::string *splitFrom(const Lowering &L, const std::string &lo, const std::string &hi);
class Lowering;
struct TVal;
// Block pointers (lower_memory.cpp): elements per access of `access` (a
// load_block or store_block) in layout `l`; and the addresses and in-bounds
// mask of the elements of `l` that block pointer `blockPtr` (its registers)
// covers, of the first element of each vector of `vec`.
int blockVectorWidth(const AxisInfoMap &info, const Op &access, const LinearLayout *l, DType d);
void blockAddresses(Lowering &L, const Op &access, const TVal &blockPtr, const LinearLayout *l,
                    int vec, TVal &ptr, TVal &mask, bool &masked);
// Elements per access that axis info proves contiguous, aligned and equally
// masked for a load or store through `ptrValue` in `layout` (null: a scalar
// pointer) (lower_memory.cpp).
int vectorWidth(const AxisInfoMap &info, const Value *ptrValue, const LinearLayout *layout, DType d,
                const Value *mask);
// How many leading registers of `l` hold consecutive elements of its last dim
// (of dim `dim`); the dim its first register steps along (vectorDim).
int contiguousRegisters(const LinearLayout &l);
int contiguousRegisters(const LinearLayout &l, int dim);
int vectorDim(const LinearLayout &l);

// The narrowest element a kernel loads or stores (at most 4 bytes), and the
// elements per thread along the fastest dim of its default blocked layouts:
// 16 bytes of that element, at most what the block leaves each thread.
int minAccessBytes(const Function &fn);
int defaultVector(const std::vector<int64_t> &shape, int minAccessBytes, int numWarps);
// The blocked layout of a tensor no pass gave one, with defaultVector's vectors.
LinearLayout defaultBlockedLayout(const std::vector<int64_t> &shape, int minAccessBytes,
                                  int numWarps);
// Whether tensor `v` is computed only from ranges, splats, constants,
// broadcasts, views and pure elementwise math (cheap to compute again in
// another layout); `memo` keeps the answers.
bool recomputable(const Value *v, std::unordered_map<const Value *, bool> &memo, int depth = 0);
// The layout the lowering holds tensor `v` in: its type's encoding, which
// every tensor has from gpu-complete-layouts on.
const LinearLayout &encodedLayout(const Value *v);

class Lowering {
public:
  // `axisInfo`: analyzeAxisInfo(fn), computed once for the passes after the
  // last that changes values and for the lowering.
  Lowering(const Function &fn, const GpuOptions &opts, AxisInfoMap axisInfo);
  PtxKernel run();

  // --- shared by every op family
  PtxBuilder b;
  const Function &fn;
  GpuOptions opts;
  int arch;
  bool printfDeclared = false; // vprintf is declared once per module
  int printStrings = 0;
  AxisInfoMap axisInfo;
  std::string tid, lane, warp; // b32 registers set in the prologue
  // The 32-bit word each pair of 16-bit registers (%h<n>, %h<n+1>) was
  // unpacked from, by n; empty where none. Packing the pair again reuses the
  // word. Each half is written once, where unpacked.
  std::vector<std::string> unpackedFrom;

  [[noreturn]] void unsupported(const Op &op, const std::string &what);
  TVal &val(const Value *v);
  void bind(const Value *v, TVal t) { values_[v] = std::move(t); }
  const LinearLayout *intern(const LinearLayout &l);
  // The layout of `v`'s encoding (the passes gave every tensor one), interned.
  const LinearLayout *layoutFor(const Value *v);
  void keepEncodings(const Op &op);
  std::string newReg(DType d) { return b.reg(regClassOf(d)); }
  // Emits `instr dst, srcs...` into a new register of type `d`.
  std::string op1(std::string_view instr, DType d, std::string_view a);
  std::string op2(std::string_view instr, DType d, std::string_view a, std::string_view c);
  std::string op3(std::string_view instr, DType d, std::string_view a, std::string_view c,
                  std::string_view e);
  std::string opReg(std::string_view instr, RegClass rc,
                    std::initializer_list<std::string_view> srcs);
  std::string opReg(std::string_view instr, RegClass rc, const std::vector<std::string> &srcs);
  std::string constantReg(DType d, double fv, int64_t iv);
  // A fresh register set to 0, for an instruction to write (an atomic's old
  // value): not a known value, unlike constantReg's.
  std::string zeroedReg(DType d);
  // Integers and predicates known while lowering (constants, coordinates
  // along dims no thread splits): compares, selects and min/max with an
  // identity on them fold instead of being emitted per register.
  std::optional<int64_t> knownValue(const std::string &reg) const;
  // A register holding `v`, one per value and class, set in the prologue.
  std::string knownConstant(RegClass rc, int64_t v);

  // --- thread coordinates (lower_layout.cpp)
  // This thread's part of the coordinate along `dim` of layout `l` (XOR it
  // with regCoords(r)[dim] for register r); computed once, in the prologue.
  std::string threadCoord(const LinearLayout *l, int dim);
  // This thread's element coordinate along `dim` for register `r` (b32).
  std::string elementCoord(const LinearLayout *l, int dim, int r);
  // Whether this thread holds the first copy of its elements (stores only once).
  std::string ownerPredicate(const LinearLayout *l);
  // Shared memory: the scratch's address (where gpu-allocate-shared put the
  // op being lowered's) and the bytes a step needs there; the address
  // `offset` bytes into the dynamic buffer; a buffer the allocation placed.
  std::string sharedBase();
  void needShared(int64_t bytes);
  std::string sharedAt(int64_t offset);
  void useBuffer(int64_t offset, int64_t bytes);
  void barrier();
  // Barriers before shared-memory writes, where gpu-insert-barriers put them
  // (barrier_before on the op being lowered). scratchBarrier() starts each
  // use of the scratch: the op's mark before its first use, a barrier before
  // any later one (the op reads what it wrote). A use the pass did not model
  // (an op without a mark, a loop's own conversions) gets a barrier before
  // it and, from endScratch(), one after it, so that it leaves nothing
  // pending where the pass saw nothing. bufferBarrier() comes before an op's
  // first write to a buffer of its own (stages, resident tiles, the ring).
  void scratchBarrier();
  void endScratch();
  void bufferBarrier();
  // The shared address of register r's element when the tensor is stored
  // row-major with `bytes` per element from `start`.
  SharedAddr sharedElement(const LinearLayout *l, int r, int bytes, int64_t start = 0);
  void storeShared(const SharedAddr &a, DType d, const std::string &v);
  std::string loadShared(const SharedAddr &a, DType d);
  // Runs of n consecutive elements (registers r.. of `regs`) as one access.
  void storeSharedRun(const SharedAddr &a, DType d, const std::vector<std::string> &regs, int r,
                      int n);
  std::vector<std::string> loadSharedRun(const SharedAddr &a, DType d, int n);

  // Shared tiles (swizzled, as the tensor cores read them): this thread's
  // part of the offset of layout `l`'s elements of `bytes` each in tile `t`
  // (computed once, in the prologue), and the bits that part may set.
  struct TileThread {
    std::string reg;
    int64_t mask = 0;
  };
  TileThread tileThread(const LinearLayout *l, const SharedTile &t, int bytes);
  // The address base + (thread ^ c): the bits of c the thread part never
  // sets become an immediate; the others are XOR-ed in a register, one per
  // distinct value (cached in `cache` by the caller's scope).
  SharedAddr tileAddress(const std::string &base, const TileThread &th, int64_t c,
                         std::map<std::pair<std::string, int64_t>, std::string> &cache);
  // The offset in tile `t` of register r's element of layout `l`, without the thread's part.
  int64_t tileRegOffset(const LinearLayout *l, int r, const SharedTile &t, int bytes) const;
  // 16-bit tensors whose layout holds 8x8 blocks as the mma fragments do move
  // to and from a tile by whole matrices (stmatrix on sm_90; ldmatrix on every
  // target tilec takes): none where the layout does not (lower_layout.cpp).
  struct MatrixAccess {
    const LinearLayout *rows; // lane bits 0-2: a matrix's row; 3-4: the matrix; regs: the group
    int count;                // matrices per instruction: 1, 2 or 4
    bool trans;               // each matrix's rows run down the tile's columns
    DType d;                  // the elements' type (16-bit)
  };
  std::optional<MatrixAccess> matrixAccess(const LinearLayout &l, DType d);
  void storeMatrices(const std::string &base, const SharedTile &tile, const MatrixAccess &m,
                     const std::vector<std::string> &regs);
  std::vector<std::string> loadMatrices(const std::string &base, const SharedTile &tile,
                                        const MatrixAccess &m);

  // Moves a tensor into layout `to` (through shared memory if threads must
  // exchange elements). A scalar becomes a splat.
  TVal convert(const TVal &v, DType d, const LinearLayout *to);
  std::optional<SharedTile> conversionTile(const LinearLayout &from, DType d);

  // --- numerics (lower_elementwise.cpp)
  // Re-extends an integer computed in 32 bits to its narrow type.
  std::string normalize(const std::string &r, DType d);
  std::string toF32(const std::string &r, DType d);
  std::string fromF32(const std::string &r, DType d, bool rtz = false);
  std::string castScalar(const std::string &r, DType from, DType to, bool rtz);
  // Pointer register `ptr` moved by `offset` (a register of type `od`) elements of `pointee`.
  std::string pointerPlus(const std::string &ptr, std::string offset, DType od, DType pointee);
  std::string binary(const Op &op, OpKind kind, DType d, const std::string &a,
                     const std::string &c);
  std::string unary(const Op &op, OpKind kind, DType d, const std::string &a);
  std::string compare(OpKind kind, DType d, const std::string &a, const std::string &c);
  std::string select(DType d, const std::string &c, const std::string &a, const std::string &e);
  std::string storageMove(DType d, const std::string &r);
  std::string toF32IfNeeded(const std::string &r, DType d);
  // f32 math (lower_math.cpp): accurate to a few ulp, without libdevice.
  std::string mathF32(const Op &op, OpKind kind, const std::string &x);
  std::string mathF64(const Op &op, OpKind kind, const std::string &x);
  std::string powF32(const std::string &x, const std::string &y);
  std::string atan2F32(const std::string &y, const std::string &x);
  std::string powF64(const std::string &x, const std::string &y);
  std::string atan2F64(const std::string &y, const std::string &x);
  // Shared-memory address of register r's element in a row-major copy whose
  // dim d has stride strides[d] (0: a broadcast dim, read at index 0).
  SharedAddr sharedAddress(const LinearLayout *l, int r, const std::vector<int64_t> &strides,
                           int bytes, int64_t start);

  // --- op families
  void lowerBlock(const Block &block);
  void lowerOp(const Op &op);
  void lowerElementwise(const Op &op);
  void lowerCast(const Op &op);
  // `needed` (optional): the registers to compute; the others are left empty.
  TVal computeElementwise(const Op &op, const std::vector<TVal> &operands,
                          const LinearLayout *layout, const std::vector<char> *needed = nullptr);
  TVal computeCast(const Op &op, const TVal &x);
  // Rematerialization (lower_layout.cpp): a value computed only from ranges,
  // splats, broadcasts and elementwise math is recomputed in the layout a
  // consumer wants instead of being moved through shared memory.
  bool rematerializable(const Value *v);
  // registerOnlyConversion of two layouts, remembered for interned ones.
  const std::vector<int> &registerMap(const LinearLayout *from, const LinearLayout *to);
  // `needed` (optional): only those registers are read (a vector's first
  // address); a value computed here for them leaves the others empty.
  TVal materialize(const Value *v, const LinearLayout *to,
                   const std::vector<char> *needed = nullptr);
  // Ops computed only where a load or store reads them (deferUntilRead):
  // lowerBlock passes over them, and each access materializes what it reads.
  std::unordered_set<const Op *> readLater;
  void deferUntilRead(const Block &block);
  bool materializedByAccess(const Op &user, const Value *v);
  // Forgets recomputed values at region boundaries (their registers are
  // defined only inside the region).
  void enterRegion() { materialized_.clear(); }
  void lowerShape(const Op &op);
  void lowerLoad(const Op &op);
  void lowerStore(const Op &op);
  void accessOperands(const Value *ptrValue, const Value *maskValue, const LinearLayout *l,
                      DType d, TVal &ptr, TVal &mask);
  void lowerAtomic(const Op &op);
  void lowerInlineAsm(const Op &op);
  // Reductions (lower_reduce.cpp): k values per element, combined together.
  using Values = std::vector<std::string>;
  using CombineValues = std::function<Values(const Values &, const Values &)>;
  std::vector<Values> reduceAlong(const LinearLayout *in, int axis,
                                  const std::vector<Values> &elems,
                                  const std::vector<DType> &types, const CombineValues &combine,
                                  const LinearLayout *&out);
  Values combineRegion(const Op &op, const Values &lhs, const Values &rhs);
  void lowerReduceWith(const Op &op);
  std::vector<Values> scanAlong(const LinearLayout *l, int axis, bool reverse,
                                std::vector<Values> v, const std::vector<DType> &types,
                                const CombineValues &combine);
  void lowerScanWith(const Op &op);
  void lowerSort(const Op &op);
  void lowerGather(const Op &op);
  void lowerHistogram(const Op &op);
  std::vector<std::string> asmInputRegisters(const std::vector<std::string> &elems, DType d,
                                             const char *letters);
  std::vector<std::string> asmOutputElements(const std::vector<std::string> &regs, DType d,
                                             int pack, const char *letters);
  // How often each value of the kernel is used (computed once).
  const UseCounts &uses();
  bool ownsRegisters(const Value *v, const TVal &init);
  void lowerBlockPtr(const Op &op);
  void lowerLoadBlock(const Op &op);
  void lowerStoreBlock(const Op &op);
  void lowerReduce(const Op &op);
  void lowerCumSum(const Op &op);
  void lowerDot(const Op &op);
  // Tensor cores (lower_mma.cpp): the accumulator layout of a dot that runs
  // there (its type's encoding), else null; and the lowering itself.
  const LinearLayout *mmaLayout(const Op &dot);
  void lowerMma(const Op &op, const LinearLayout *acc);
  // Hopper's warpgroup MMA (lower_wgmma.cpp): the accumulator layout of a
  // dot that runs there, else null; the lowering.
  const LinearLayout *wgmmaLayout(const Op &dot);
  void lowerWgmma(const Op &op, const LinearLayout *acc);
  bool accumulatesInPlace(const Op &dot, const LinearLayout *accLayout);
  // Shared by both: the accumulator copied into fresh f32 (s32) registers of
  // `layout`; the operands staged into their shared tiles where no pipelined
  // loop put them (sets the bases); the result bound from the accumulator.
  std::vector<std::string> accumulatorRegisters(const Op &op, const LinearLayout *layout,
                                                bool integer);
  void stageOperands(const Op &op, const OperandTiles &tiles, std::string &aBase,
                     std::string &bBase, bool roundTf32, bool aInRegisters = false);
  void stageOperand(const Value *v, DType in, const SharedTile &tile, bool transposed,
                    const std::string &base, bool roundTf32);
  void bindAccumulator(const Op &op, const LinearLayout *layout,
                       const std::vector<std::string> &acc, bool integer);
  // Software pipelining of the loads pipelineLoops marked (pipeline_loads.cpp).
  std::unique_ptr<Pipeline> planPipeline(const Op &forOp);
  void beginPipeline(Pipeline &p, const Op &forOp, const std::vector<TVal> &carried);
  void pipelinedLoad(Pipeline &p, const Op &load, const std::string &iv);
  void endIteration(Pipeline &p);
  // TMA (lower_tma.cpp): the address of a block pointer's tensor map (a
  // parameter the launcher encodes); the one thread that issues copies; and a
  // pipeline's barriers, copies and waits.
  // The generic address of the tensor map of block pointer `blockPtr`'s
  // origin, whose copies move `tile` one swizzle-wide column block at a time.
  std::string tensorMapAddress(const Value *blockPtr, const SharedTile &tile, int bytes);
  void lowerTmaStore(const Op &op);
  // `ret`, after the copies of deferred TMA stores have read their tiles.
  void emitReturn();
  // The PTX name of the kernel's parameter k (runtime arguments, then tensor maps).
  std::string paramName(size_t k) const { return fn.name + "_param_" + std::to_string(k); }
  std::string tmaLeader();
  // One TMA copy of `tile` (from `at`) through tensor map `map` into shared
  // `dst`, completing mbarrier `bar`; issued where predicate `go` holds
  // (empty: always).
  // Where a copy of block pointer `blockPtr` (its value `bp`: base, sizes,
  // strides, offsets) starts in its map: the row, the column (b32
  // registers), then the rest of the coordinate list, innermost first (the
  // base terms', tmaBase).
  struct TmaCoordinates {
    std::string row, col, outer;
    size_t rank = 2;
  };
  TmaCoordinates tmaCoordinates(const Value *blockPtr, const TVal &bp);
  void copyTileByTma(const std::string &go, const std::string &map, const TmaCoordinates &at,
                     const SharedTile &tile, int bytes, const std::string &dst,
                     const std::string &bar);
  // A resident_copy load: TMA copies its tile into shared_tile, completing
  // the mbarrier after it; the first loop beside it that reads it waits
  // (waitResidentCopies), the last one invalidates the mbarrier.
  void copyResidentTile(const Op &load);
  void waitResidentCopies(const Op &forOp);
  void releaseResidentCopies(const Op &forOp);
  struct ResidentCopy {
    std::string barrier;
    const Op *lastReader = nullptr;
    bool waited = false;
  };
  std::map<const Value *, ResidentCopy> residentCopies_;
  // Warp specialization (lower_warp_specialize.cpp).
  WarpRing ring;
  void lowerWarpSpecialize(const Op &op);
  void lowerProduce(const Op &op);
  // Every consumer thread frees the slot the iteration before the current
  // one read (where it was one of this loop's: p.notFirst).
  void freePreviousSlot(Pipeline &p);
  // ring.slot one on, ring.phase flipped where it wraps.
  void stepRing();
  // Spins until mbarrier `bar` has completed the phase of parity `parity`.
  void waitBarrier(const std::string &bar, const std::string &parity);
  void initTmaBarriers(Pipeline &p);
  void issueTmaCopies(Pipeline &p, const std::string &slot, const std::string &valid);
  void waitTmaStage(Pipeline &p);
  void releaseTmaBarriers(Pipeline &p);
  // A flattened loop's pipeline (Pipeline::Flat): computes the kept values for
  // q (into fresh registers the first time); steps q and r on one iteration.
  void keepTileValues(Pipeline &p, bool fresh);
  // Fills p.flat->layouts: for each kept tensor, the layout the copies'
  // recomputation asks it in; false where one is asked in none or several.
  bool keptTensorLayouts(Pipeline &p);
  // The bindings of `vs` as they are (none: nullopt), and putting them back:
  // around lowering ops again for another iteration (valueAt, keepTileValues).
  std::vector<std::optional<TVal>> bindingsOf(const std::vector<const Value *> &vs) const;
  void restoreBindings(const std::vector<const Value *> &vs,
                       const std::vector<std::optional<TVal>> &saved);
  void stepFlat(Pipeline &p);
  // Binds the flattened loop body's i / n and i % n to the registers stepped for it.
  void bindFlatIteration(const Pipeline &p);
  // `v` as it is at another iteration, in layout `want` where it can be
  // recomputed there: the ops of `slice` (v's computation in the loop body)
  // lowered again with `ivValue` bound to register `iv`; the bindings of the
  // current iteration are kept.
  // In a flattened loop (Pipeline::Flat), the outer iteration's values come
  // from what the pipeline keeps.
  TVal valueAt(const Value *v, const std::vector<const Op *> &slice, const Pipeline &p,
               const std::string &iv, const LinearLayout *want);
  // The pipeline whose asynchronous dot `dot` is, if any; the one that
  // defers the wait of `dot`, if any.
  Pipeline *asyncPipeline(const Op &dot);
  Pipeline *deferringPipeline(const Op &dot);
  // After a synchronous wgmma of a loop with deferred dots: the previous
  // iteration's deferred dots are done, so the copies ahead go out now,
  // overlapping the rest of the iteration, rather than at its end.
  void issueAfterSyncDot(const Op &dot);
  void endPipeline(Pipeline &p);
  // Loop-invariant dot operands (attention's q) staged once, before the loop,
  // in tiles of their own (where shared_resident puts them); and the shared
  // tile a dot reads operand i from without staging it (a pipelined or
  // resident copy), else empty. A tile serves the rest of the block its loop
  // is in (its staging ran once control got there), not the code after it.
  void stageLoopInvariantOperands(const Op &forOp);
  std::string stagedOperand(const Op &dot, int i);
  std::map<const Op *, Pipeline *> pipelinedLoads;
  // Ops lowerBlock passes over: they only feed the masks of pipelined loads.
  std::set<const Op *> skipped;
  void skipDeadMasks(const Pipeline &p, const Block &body);
  void lowerFor(const Op &op);
  void lowerIf(const Op &op);
  void waitForAsyncDotIn(const Op &ifOp, const Block &region);
  void lowerWhile(const Op &op);
  void lowerPrint(const Op &op);
  void lowerAssert(const Op &op);

  // Memory access of one tensor of addresses (lower_memory.cpp).
  std::vector<std::string> loadElements(const TVal &ptr, DType d, const TVal *mask,
                                        const TVal *other, int vec);
  void storeElements(const TVal &ptr, DType d, const TVal &value, const TVal *mask, int vec);

private:
  std::unordered_map<const Value *, TVal> values_;
  std::deque<LinearLayout> layouts_;
  std::map<std::pair<const LinearLayout *, int>, std::string> threadCoords_;
  std::unordered_map<std::string, int64_t> known_;
  std::map<std::pair<RegClass, int64_t>, std::string> knownConstants_;
  std::map<const LinearLayout *, std::string> owners_;
  // This thread's part of shared addresses, by layout (interned), element
  // bytes, base register and strides; and of tile addresses, by layout, tile
  // rows and row bytes, element bytes.
  std::map<std::tuple<const LinearLayout *, int, std::string, std::vector<int64_t>>, std::string>
      sharedThreadAddrs_;
  std::map<std::tuple<const LinearLayout *, int64_t, int64_t, int>, TileThread> tileThreads_;
  std::unordered_set<const LinearLayout *> interned_; // the addresses intern gave out
  std::unordered_multimap<size_t, const LinearLayout *> internedByHash_;
  std::optional<UseCounts> uses_;
  std::map<std::pair<const Value *, const LinearLayout *>, TVal> materialized_;
  std::unordered_map<const Value *, bool> rematerializable_;
  std::map<std::pair<const LinearLayout *, const LinearLayout *>, std::vector<int>> registerMaps_;
  std::vector<int> scratchMap_; // registerMap's answer for layouts not interned
  // Shared memory: the scratch's offset for the op being lowered
  // (scratch_offset), registers holding addresses in the buffer by offset,
  // and the bytes in use at the most.
  int64_t scratchAt_ = 0;
  // The barrier_before of the op being lowered (lowerBlock sets it per op).
  struct OpBarrier {
    int mark = -1;        // its mark until emitted (-1: none: a barrier at every write)
    bool scratch = false; // the pass modeled its uses of the scratch
    bool used = false;    // it has used the scratch already
    const Op *op = nullptr; // (named in the PTX where a use was not modeled)
  };
  OpBarrier opBarrier_;
  bool unmodeled_ = false; // a use the pass did not model, not yet followed by a barrier
  std::map<int64_t, std::string> sharedAt_;
  int64_t sharedEnd_ = 0;
  std::map<std::pair<const Value *, int>, std::string> residentOperands_;
  std::vector<std::pair<const Value *, int>> residentStaged_; // in staging order
  std::vector<TensorMapParam> tensorMaps_; // the kernel's tensor map parameters
  // Each block pointer's map: its parameter's index and address.
  std::map<const Op *, std::pair<size_t, std::string>> tensorMapAddrs_;
  std::string tmaLeader_;
  // Warp specialization: the producer warps the launch adds, and (once the
  // roles split) the consumer threads a barrier waits for, none else.
  int producerWarps_ = 0;
  int barrierThreads_ = 0;
  // mma.sync on fp8 operands, which needs PTX ISA 8.4. Other kernels say 8.0 (CUDA
  // 12.0), so that older assemblers still take them.
  bool fp8MmaSync_ = false;
};

} // namespace tilec::nvidia
