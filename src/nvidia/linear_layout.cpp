// Linear layouts: construction, slicing, and the register-only conversion test.
#include "nvidia/linear_layout.h"

#include <cstring>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <sstream>
#include <typeinfo>

#include "support/diagnostics.h"

namespace tilec::nvidia {

namespace {

Coords unit(int rank, int dim, int64_t value) {
  Coords c(rank, 0);
  c[dim] = value;
  return c;
}

bool isZero(const Coords &c) {
  for (int64_t v : c)
    if (v)
      return false;
  return true;
}

void xorInto(Coords &acc, const Coords &c) {
  for (size_t d = 0; d < acc.size(); ++d)
    acc[d] ^= c[d];
}

int log2Exact(int64_t v) {
  int bits = 0;
  while ((int64_t{1} << bits) < v)
    ++bits;
  return bits;
}

// Adds bases for `count` bits of threads (or registers) along the dims in
// `dims` order, doubling each dim's coverage until it spans the shape; bits
// left over get zero bases (copies).
void distribute(std::vector<Coords> &out, int bits, const std::vector<int> &dims,
                const std::vector<int64_t> &shape, std::vector<int64_t> &covered) {
  int rank = (int)shape.size();
  out.reserve(out.size() + bits);
  for (int dim : dims)
    while (bits > 0 && covered[dim] < shape[dim]) {
      out.push_back(unit(rank, dim, covered[dim]));
      covered[dim] *= 2;
      --bits;
    }
  for (; bits > 0; --bits)
    out.push_back(Coords(rank, 0));
}

// Room in `out` for as many bases as `l` has.
void reserveBases(LinearLayout &out, const LinearLayout &l) {
  out.regs.reserve(l.regs.size());
  out.lanes.reserve(l.lanes.size());
  out.warps.reserve(l.warps.size());
}

std::vector<int> fastestFirst(int rank) {
  std::vector<int> dims;
  for (int d = rank - 1; d >= 0; --d)
    dims.push_back(d);
  return dims;
}

// Registers cover whatever lanes and warps left uncovered, fastest dims first.
void fillRegisters(LinearLayout &l, std::vector<int64_t> &covered,
                   const std::vector<int> &order) {
  for (int d : order)
    while (covered[d] < l.shape[d]) {
      l.regs.push_back(unit(l.rank(), d, covered[d]));
      covered[d] *= 2;
    }
}

} // namespace

Coords LinearLayout::regCoords(int64_t reg) const {
  Coords c(shape.size(), 0);
  for (size_t b = 0; b < regs.size(); ++b)
    if (reg >> b & 1)
      xorInto(c, regs[b]);
  return c;
}

int64_t LinearLayout::threadBits(int dim) const {
  int64_t bits = 0;
  for (const std::vector<Coords> *bases : {&lanes, &warps})
    for (const Coords &c : *bases)
      bits |= c[dim];
  return bits;
}

unsigned LinearLayout::replicatedLaneMask() const {
  unsigned mask = 0;
  for (size_t b = 0; b < lanes.size(); ++b)
    if (isZero(lanes[b]))
      mask |= 1u << b;
  return mask;
}

unsigned LinearLayout::replicatedWarpMask() const {
  unsigned mask = 0;
  for (size_t b = 0; b < warps.size(); ++b)
    if (isZero(warps[b]))
      mask |= 1u << b;
  return mask;
}

size_t LinearLayout::hash() const {
  size_t h = shape.size();
  auto mix = [&](int64_t v) { h = h * 1000003u ^ (size_t)v; };
  for (int64_t s : shape)
    mix(s);
  for (const std::vector<Coords> *bases : {&regs, &lanes, &warps}) {
    mix((int64_t)bases->size());
    for (const Coords &c : *bases)
      for (int64_t v : c)
        mix(v);
  }
  return h;
}

// Built by appending: the lowering keys its caches by this text.
std::string LinearLayout::str() const {
  std::string os;
  auto list = [&](const char *name, const std::vector<Coords> &bases) {
    os += name;
    os += "=[";
    for (size_t b = 0; b < bases.size(); ++b) {
      os += b ? " (" : "(";
      for (size_t d = 0; d < bases[b].size(); ++d) {
        if (d)
          os += ",";
        os += std::to_string(bases[b][d]);
      }
      os += ")";
    }
    os += "]";
  };
  os += "#linear<";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d)
      os += "x";
    os += std::to_string(shape[d]);
  }
  os += " ";
  list("reg", regs);
  os += " ";
  list("lane", lanes);
  os += " ";
  list("warp", warps);
  os += ">";
  return os;
}

LinearLayout blockedLayout(const std::vector<int64_t> &shape, int vec, int numWarps,
                           std::vector<int> order) {
  LinearLayout l;
  l.shape = shape;
  int rank = (int)shape.size();
  std::vector<int64_t> covered(rank, 1);
  if (order.empty())
    order = fastestFirst(rank);
  distribute(l.regs, log2Exact(vec), {order[0]}, shape, covered);
  while (!l.regs.empty() && isZero(l.regs.back()))
    l.regs.pop_back(); // a vector longer than the dim: no registers of copies
  distribute(l.lanes, 5, order, shape, covered);
  distribute(l.warps, log2Exact(numWarps), order, shape, covered);
  fillRegisters(l, covered, order);
  return l;
}

LinearLayout scanLayout(const std::vector<int64_t> &shape, int axis, int numWarps,
                        int64_t minRun) {
  LinearLayout l;
  l.shape = shape;
  int rank = (int)shape.size();
  std::vector<int64_t> covered(rank, 1);
  int64_t threads = 32 * (int64_t)numWarps;
  minRun = std::min(minRun, shape[axis]);
  while (covered[axis] * threads < shape[axis] || covered[axis] < minRun) { // a run per thread
    l.regs.push_back(unit(rank, axis, covered[axis]));
    covered[axis] *= 2;
  }
  std::vector<int> dims = {axis};
  for (int d : fastestFirst(rank))
    if (d != axis)
      dims.push_back(d);
  distribute(l.lanes, 5, dims, shape, covered);
  distribute(l.warps, log2Exact(numWarps), dims, shape, covered);
  fillRegisters(l, covered, fastestFirst(rank));
  return l;
}

namespace {

// (Of a basis, or of a layout's shape.)
template <class Dims> Dims dropDim(const Dims &c, int axis) {
  Dims out;
  for (int d = 0; d < (int)c.size(); ++d)
    if (d != axis)
      out.push_back(c[d]);
  return out;
}

} // namespace

LinearLayout sliceLayout(const LinearLayout &l, int axis) {
  LinearLayout out;
  out.shape = dropDim(l.shape, axis);
  reserveBases(out, l);
  for (const Coords &b : l.regs)
    if (b[axis] == 0)
      out.regs.push_back(dropDim(b, axis));
  for (const Coords &b : l.lanes)
    out.lanes.push_back(dropDim(b, axis));
  for (const Coords &b : l.warps)
    out.warps.push_back(dropDim(b, axis));
  return out;
}

std::vector<int> sliceRegisterMap(const LinearLayout &l, int axis) {
  std::vector<int> map(l.numRegs());
  for (int r = 0; r < l.numRegs(); ++r) {
    int out = 0, bit = 0;
    for (size_t b = 0; b < l.regs.size(); ++b) {
      if (l.regs[b][axis] != 0)
        continue;
      if (r >> b & 1)
        out |= 1 << bit;
      ++bit;
    }
    map[r] = out;
  }
  return map;
}

LinearLayout projectLayout(const LinearLayout &l, const std::vector<int64_t> &shape) {
  LinearLayout out = l;
  out.shape = shape;
  for (std::vector<Coords> *bases : {&out.regs, &out.lanes, &out.warps})
    for (Coords &c : *bases)
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] == 1)
          c[d] = 0;
  return out;
}

LinearLayout withoutRegisterCopies(const LinearLayout &l) {
  LinearLayout out = l;
  out.regs.clear();
  for (const Coords &c : l.regs)
    if (!isZero(c))
      out.regs.push_back(c);
  return out;
}

LinearLayout expandDimsLayout(const LinearLayout &l, int axis) {
  auto insert = [&](auto c) { // (a basis, or the shape)
    c.insert(c.begin() + axis, 0);
    return c;
  };
  LinearLayout out;
  out.shape = insert(l.shape);
  out.shape[axis] = 1;
  reserveBases(out, l);
  for (const Coords &b : l.regs)
    out.regs.push_back(insert(b));
  for (const Coords &b : l.lanes)
    out.lanes.push_back(insert(b));
  for (const Coords &b : l.warps)
    out.warps.push_back(insert(b));
  return out;
}

LinearLayout transLayout(const LinearLayout &l, const std::vector<int64_t> &order) {
  auto permute = [&](const auto &c) { // (a basis, or the shape)
    std::decay_t<decltype(c)> out(c.size());
    for (size_t i = 0; i < order.size(); ++i)
      out[i] = c[order[i]];
    return out;
  };
  LinearLayout out;
  out.shape = permute(l.shape);
  reserveBases(out, l);
  for (const Coords &b : l.regs)
    out.regs.push_back(permute(b));
  for (const Coords &b : l.lanes)
    out.lanes.push_back(permute(b));
  for (const Coords &b : l.warps)
    out.warps.push_back(permute(b));
  return out;
}

LinearLayout reshapeLayout(const LinearLayout &l, const std::vector<int64_t> &shape) {
  auto flat = [&](const Coords &c) {
    int64_t f = 0;
    for (int d = 0; d < l.rank(); ++d)
      f = f * l.shape[d] + c[d];
    return f;
  };
  auto unflat = [&](int64_t f) {
    Coords c(shape.size());
    for (int d = (int)shape.size() - 1; d >= 0; --d) {
      c[d] = f % shape[d];
      f /= shape[d];
    }
    return c;
  };
  LinearLayout out;
  out.shape = shape;
  reserveBases(out, l);
  for (const Coords &b : l.regs)
    out.regs.push_back(unflat(flat(b)));
  for (const Coords &b : l.lanes)
    out.lanes.push_back(unflat(flat(b)));
  for (const Coords &b : l.warps)
    out.warps.push_back(unflat(flat(b)));
  return out;
}

std::vector<int> registerOnlyConversion(const LinearLayout &src, const LinearLayout &dst) {
  int rank = dst.rank();
  if (src.rank() != rank)
    return {};
  // What dst's coordinates are in src: broadcast dims of src read index 0.
  auto project = [&](Coords c) {
    for (int d = 0; d < rank; ++d)
      if (src.shape[d] == 1)
        c[d] = 0;
    return c;
  };
  for (int d = 0; d < rank; ++d)
    if (src.shape[d] != dst.shape[d] && src.shape[d] != 1)
      return {};
  if (src.lanes.size() != dst.lanes.size() || src.warps.size() != dst.warps.size())
    return {};
  for (size_t b = 0; b < dst.lanes.size(); ++b)
    if (project(dst.lanes[b]) != src.lanes[b])
      return {};
  for (size_t b = 0; b < dst.warps.size(); ++b)
    if (project(dst.warps[b]) != src.warps[b])
      return {};
  // Each register's element as its index in a row-major tensor of src's
  // shape, dims src broadcasts left out. The dims' bits are disjoint there
  // (shapes are powers of 2), so a register's index is the XOR of its
  // bases' indices: no coordinates are built per register.
  std::vector<int64_t> stride(rank, 0);
  for (int64_t d = rank - 1, s = 1; d >= 0; --d) {
    stride[d] = src.shape[d] == 1 ? 0 : s;
    s *= src.shape[d];
  }
  auto index = [&](const Coords &c) {
    int64_t i = 0;
    for (int d = 0; d < rank; ++d)
      i += c[d] * stride[d];
    return i;
  };
  auto indexOf = [&](const std::vector<int64_t> &bases, int r) {
    int64_t i = 0;
    for (size_t b = 0; b < bases.size(); ++b)
      if (r >> b & 1)
        i ^= bases[b];
    return i;
  };
  std::vector<int64_t> srcBases, dstBases;
  for (const Coords &c : src.regs)
    srcBases.push_back(index(c));
  for (const Coords &c : dst.regs)
    dstBases.push_back(index(c));
  // (index, register), the lowest register first where several hold an element.
  std::vector<std::pair<int64_t, int>> where(src.numRegs());
  for (int r = 0; r < src.numRegs(); ++r)
    where[r] = {indexOf(srcBases, r), r};
  std::sort(where.begin(), where.end());
  std::vector<int> map(dst.numRegs());
  for (int r = 0; r < dst.numRegs(); ++r) {
    int64_t i = indexOf(dstBases, r);
    auto it = std::lower_bound(where.begin(), where.end(), std::make_pair(i, -1));
    if (it == where.end() || it->first != i)
      return {};
    map[r] = it->second;
  }
  return map;
}

const std::string &LayoutEncoding::str() const {
  if (text_.empty()) {
    std::string text = layout.str(); // #linear<...>
    text_ = "#" + kind + text.substr(text.find('<'));
  }
  return text_;
}

// The encoding as a LayoutEncoding, or null: the class is final, so its type
// is compared (a dynamic_cast searches the class tree, and the backend asks often).
static const LayoutEncoding *asLayoutEncoding(const Encoding *e) {
  return e && typeid(*e) == typeid(LayoutEncoding) ? static_cast<const LayoutEncoding *>(e)
                                                   : nullptr;
}

bool LayoutEncoding::equals(const Encoding &o) const {
  auto *other = asLayoutEncoding(&o);
  return other && other->kind == kind && other->layout == layout;
}

std::shared_ptr<const LayoutEncoding> parseLayoutEncoding(const std::string &text) {
  size_t at = 0;
  auto number = [&](int64_t &v) {
    size_t start = at;
    bool negative = at < text.size() && text[at] == '-';
    at += negative;
    v = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9')
      v = v * 10 + (text[at++] - '0');
    v = negative ? -v : v;
    return at > start + negative;
  };
  auto literal = [&](const char *s) {
    size_t n = std::strlen(s);
    if (text.compare(at, n, s) != 0)
      return false;
    at += n;
    return true;
  };
  // name=[(c,c,...) (c,...) ...], each basis of `rank` coordinates
  auto bases = [&](const char *name, size_t rank, std::vector<Coords> &out) {
    if (!literal(name) || !literal("=["))
      return false;
    while (!literal("]")) {
      if (!out.empty() && !literal(" "))
        return false;
      if (!literal("("))
        return false;
      Coords c;
      for (size_t d = 0; d < rank; ++d) {
        int64_t v;
        if ((d && !literal(",")) || !number(v))
          return false;
        c.push_back(v);
      }
      if (!literal(")"))
        return false;
      out.push_back(c);
    }
    return true;
  };
  if (!literal("#"))
    return nullptr;
  size_t open = text.find('<');
  if (open == std::string::npos || open == at)
    return nullptr;
  std::string kind = text.substr(at, open - at);
  at = open + 1;
  LinearLayout l;
  do {
    int64_t s;
    if (!number(s) || s <= 0 || (s & (s - 1)))
      return nullptr;
    l.shape.push_back(s);
  } while (literal("x"));
  if (!literal(" ") || !bases("reg", l.shape.size(), l.regs) || !literal(" ") ||
      !bases("lane", l.shape.size(), l.lanes) || !literal(" ") ||
      !bases("warp", l.shape.size(), l.warps) || !literal(">") || at != text.size() ||
      l.lanes.size() != 5)
    return nullptr;
  return std::make_shared<LayoutEncoding>(kind, std::move(l));
}

const LayoutEncoding *layoutEncoding(const Type &t) {
  return asLayoutEncoding(t.encoding.get());
}

SharedTile sharedTile(int64_t rows, int64_t rowBytes) {
  if (rows < 1 || rowBytes < 16 || (rows & (rows - 1)) || (rowBytes & (rowBytes - 1)))
    throw std::logic_error("shared tile of " + std::to_string(rows) + " rows of " +
                           std::to_string(rowBytes) + " bytes");
  SharedTile t;
  t.rows = rows;
  t.rowBytes = rowBytes;
  t.swizzle = (int)std::min<int64_t>(rowBytes, 128);
  int64_t chunks = t.swizzle / 16 - 1; // the chunk bits the swizzle flips
  auto swizzled = [&](int64_t logical) { return logical ^ (((logical >> 7) & chunks) << 4); };
  t.rowBasis.reserve(log2Exact(rows));
  t.byteBasis.reserve(log2Exact(rowBytes));
  for (int64_t r = 1; r < rows; r *= 2)
    t.rowBasis.push_back(swizzled(r * t.swizzle));
  for (int64_t c = 1; c < rowBytes; c *= 2)
    t.byteBasis.push_back(swizzled(c < t.swizzle ? c : c / t.swizzle * rows * t.swizzle));
  return t;
}

int64_t SharedTile::offset(int64_t row, int64_t byte) const {
  int64_t out = 0;
  for (size_t i = 0; i < rowBasis.size(); ++i)
    if (row >> i & 1)
      out ^= rowBasis[i];
  for (size_t i = 0; i < byteBasis.size(); ++i)
    if (byte >> i & 1)
      out ^= byteBasis[i];
  return out;
}

} // namespace tilec::nvidia
