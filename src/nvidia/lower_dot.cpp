// tl.dot on the CUDA cores: A and B go to shared memory row-major, then each
// thread accumulates its own output elements over K with FMAs. The path for
// every shape and type; tensor-core lowering takes the shapes it fits.
#include <map>

#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

bool isSmallFloat(DType d) { return isFloat(d) && d != DType::F32 && d != DType::F64; }

} // namespace

// Rounds an f32 to tf32 (10 mantissa bits), to nearest even, as the CPU does.
std::string roundToTf32(Lowering &L, const std::string &f) {
  std::string bits = L.opReg("mov.b32", RegClass::B32, {f});
  std::string lsb = L.opReg("bfe.u32", RegClass::B32, {bits, "13", "1"});
  std::string up = L.opReg("add.u32", RegClass::B32, {lsb, "4095"});
  std::string r = L.opReg("add.u32", RegClass::B32, {bits, up});
  r = L.opReg("and.b32", RegClass::B32, {r, "0xFFFFE000"});
  // NaN and infinity keep their bits
  std::string expo = L.opReg("and.b32", RegClass::B32, {bits, "0x7F800000"});
  std::string special = L.opReg("setp.eq.u32", RegClass::Pred, {expo, "0x7F800000"});
  r = L.opReg("selp.b32", RegClass::B32, {bits, r, special});
  return L.opReg("mov.b32", RegClass::F32, {r});
}

void Lowering::lowerDot(const Op &op) {
  const Type &at = op.operand(0)->type, &bt = op.operand(1)->type, &rt = op.result()->type;
  int rank = at.rank();
  int64_t batch = rank == 3 ? at.shape[0] : 1;
  int64_t M = at.shape[rank - 2], K = at.shape[rank - 1], N = bt.shape[rank - 1];
  DType in = at.dtype, out = rt.dtype;
  bool integer = !isFloat(in);
  DType work =
      integer ? DType::I32 : (in == DType::F64 || out == DType::F64 ? DType::F64 : DType::F32);
  int wbytes = work == DType::F64 ? 8 : 4;
  bool tf32 = in == DType::F32 && op.strAttr("input_precision") == "tf32";
  if (const LinearLayout *mma = mmaLayout(op)) {
    lowerMma(op, mma);
    return;
  }
  const TVal &c = val(op.operand(2));
  const LinearLayout *l = layoutFor(op.result());
  TVal accIn = convert(c, out, l);

  // Operands to shared memory, converted to the working type.
  int64_t aBytes = batch * M * K * wbytes, bBytes = batch * K * N * wbytes;
  int64_t bStart = (aBytes + 15) / 16 * 16;
  needShared(bStart + bBytes);
  b.comment("dot " + at.str() + " x " + bt.str() + " on CUDA cores");
  scratchBarrier();
  auto stage = [&](const TVal &v, DType d, const Type &t, int64_t start) {
    const LinearLayout *vl = v.layout;
    TVal x = convert(v, d, vl);
    for (int r = 0; r < vl->numRegs(); ++r) {
      std::string e = x.regs[r];
      if (integer)
        e = castScalar(e, d, DType::I32, false);
      else if (work == DType::F64)
        e = castScalar(e, d, DType::F64, false);
      else if (isSmallFloat(d))
        e = toF32(e, d);
      if (tf32)
        e = roundToTf32(*this, e);
      storeShared(sharedElement(vl, r, wbytes, start), work, e);
    }
  };
  stage(val(op.operand(0)), in, at, 0);
  stage(val(op.operand(1)), bt.dtype, bt, bStart);
  barrier();

  // Row and column addresses of each output register, shared where equal.
  std::vector<std::string> acc, rowA(l->numRegs()), colB(l->numRegs());
  std::map<std::pair<int64_t, int64_t>, std::string> rows, cols;
  std::string base = sharedBase();
  for (int r = 0; r < l->numRegs(); ++r) {
    std::string e = accIn.regs[r];
    acc.push_back(
        integer ? castScalar(e, out, DType::I32, false)
                : (work == DType::F64 ? castScalar(e, out, DType::F64, false) : toF32(e, out)));
    Coords rc = l->regCoords(r);
    int64_t cb = rank == 3 ? rc[0] : 0;
    auto rowKey = std::make_pair(cb, rc[rank - 2]), colKey = std::make_pair(cb, rc[rank - 1]);
    if (!rows.count(rowKey)) {
      std::string m = elementCoord(l, rank - 2, r);
      if (rank == 3)
        m = opReg("mad.lo.u32", RegClass::B32, {elementCoord(l, 0, r), imm(M), m});
      rows[rowKey] = opReg("mad.lo.u32", RegClass::B32, {m, imm(K * wbytes), base});
    }
    if (!cols.count(colKey)) {
      std::string n = elementCoord(l, rank - 1, r);
      if (rank == 3)
        n = opReg("mad.lo.u32", RegClass::B32, {elementCoord(l, 0, r), imm(K * N), n});
      std::string addr = opReg("mad.lo.u32", RegClass::B32, {n, imm(wbytes), base});
      cols[colKey] = opReg("add.u32", RegClass::B32, {addr, imm(bStart)});
    }
    rowA[r] = rows[rowKey];
    colB[r] = cols[colKey];
    // Loop-carried: each accumulator is a register the loop writes.
    std::string fresh = newReg(work);
    b.emit(std::string("mov") + regType(regClassOf(work)) + " " + fresh + ", " + acc.back());
    acc.back() = fresh;
  }

  // for (k = 0; k < K; k += unroll): acc += A[m][k] * B[k][n]
  int64_t unroll = std::min<int64_t>(K, 8);
  std::string ka = b.reg(RegClass::B32), kb = b.reg(RegClass::B32);
  b.emit("mov.u32 " + ka + ", 0");
  b.emit("mov.u32 " + kb + ", 0");
  std::string loop = b.newLabel("dot_k");
  b.label(loop);
  std::map<std::string, std::string> rowAt, colAt;
  for (auto &[key, r] : rows)
    rowAt[r] = opReg("add.u32", RegClass::B32, {r, ka});
  for (auto &[key, r] : cols)
    colAt[r] = opReg("add.u32", RegClass::B32, {r, kb});
  const char *ld = work == DType::F64 ? "ld.shared.f64"
                   : integer          ? "ld.shared.b32"
                                      : "ld.shared.f32";
  RegClass wc = regClassOf(work);
  for (int64_t u = 0; u < unroll; ++u) {
    std::map<std::string, std::string> aVal, bVal;
    for (int r = 0; r < l->numRegs(); ++r) {
      std::string &av = aVal[rowA[r]], &bv = bVal[colB[r]];
      if (av.empty())
        av = opReg(ld, wc, {"[" + rowAt[rowA[r]] + "+" + imm(u * wbytes) + "]"});
      if (bv.empty())
        bv = opReg(ld, wc, {"[" + colAt[colB[r]] + "+" + imm(u * N * wbytes) + "]"});
      std::string instr = integer ? "mad.lo.s32" : work == DType::F64 ? "fma.rn.f64" : "fma.rn.f32";
      b.emit(instr + " " + acc[r] + ", " + av + ", " + bv + ", " + acc[r]);
    }
  }
  b.emit("add.u32 " + ka + ", " + ka + ", " + imm(unroll * wbytes));
  b.emit("add.u32 " + kb + ", " + kb + ", " + imm(unroll * N * wbytes));
  std::string more = opReg("setp.lt.u32", RegClass::Pred, {ka, imm(K * wbytes)});
  b.emit("@" + more + " bra " + loop);

  TVal result{l, {}};
  for (std::string &a : acc)
    result.regs.push_back(
        integer ? castScalar(a, DType::I32, out, false)
                : (work == DType::F64 ? castScalar(a, DType::F64, out, false) : fromF32(a, out)));
  bind(op.result(), result);
}

} // namespace tilec::nvidia
