// Prints Tile IR as text. One op a line:
//   %r0, %r1 = mnemonic(%a, %b) {name = value, ...} : type0, type1 {
//   ^(%arg: type, ...):
//     ...ops of the region, one level deeper...
//   } else {            (`} do {` for while; other ops: `} {`)
//   }
// Attribute values: 5, 1.5, 1e+20, inf, -inf, nan, [1, 0], "text". Floats always read
// back as floats and round-trip exactly. Locations are not printed.
#include "ir/printer.h"

#include "support/text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tilec {

static std::string valueName(const Value *v) {
  return v->id >= 0 ? "%" + std::to_string(v->id) : "%?";
}

static std::string attrText(const Attr &attr) {
  if (auto *i = std::get_if<int64_t>(&attr))
    return std::to_string(*i);
  if (auto *f = std::get_if<double>(&attr))
    return formatFloat(*f);
  if (auto *s = std::get_if<std::string>(&attr))
    return quoteString(*s);
  std::string out = "[";
  const auto &list = std::get<std::vector<int64_t>>(attr);
  for (size_t i = 0; i < list.size(); ++i)
    out += (i ? ", " : "") + std::to_string(list[i]);
  return out + "]";
}

template <typename T, typename F> static std::string joined(const T &items, F &&text) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + text(items[i]);
  return out;
}

std::string printOp(const Op &op) {
  std::string out;
  if (!op.results.empty())
    out += joined(op.results, [](const auto &r) { return valueName(r.get()); }) + " = ";
  out += op.info().mnemonic;
  out += "(" + joined(op.operands, [](const Value *v) { return valueName(v); }) + ")";
  if (!op.attrs.empty())
    out += " {" +
           joined(op.attrs, [](const auto &a) { return a.first + " = " + attrText(a.second); }) +
           "}";
  if (!op.results.empty())
    out += " : " + joined(op.results, [](const auto &r) { return r->type.str(); });
  return out;
}

static std::string typedValues(const std::vector<std::unique_ptr<Value>> &values) {
  return joined(values, [](const auto &v) { return valueName(v.get()) + ": " + v->type.str(); });
}

// The word between the regions of an op with several: `} else {`, `} do {`.
static const char *regionSeparator(OpKind kind) {
  switch (kind) {
  case OpKind::If:
    return "} else {";
  case OpKind::While:
    return "} do {";
  default:
    return "} {";
  }
}

static void printBlock(std::ostringstream &out, const Block &block, int depth);

static void printOpTree(std::ostringstream &out, const Op &op, int depth) {
  std::string indent(2 * depth, ' ');
  out << indent << printOp(op);
  for (size_t i = 0; i < op.regions.size(); ++i) {
    out << (i == 0 ? " {" : regionSeparator(op.kind)) << "\n";
    const Block &region = *op.regions[i];
    if (!region.args.empty())
      out << indent << "^(" << typedValues(region.args) << "):\n";
    printBlock(out, region, depth + 1);
    out << indent;
  }
  if (!op.regions.empty())
    out << "}";
  out << "\n";
}

static void printBlock(std::ostringstream &out, const Block &block, int depth) {
  for (const auto &op : block.ops)
    printOpTree(out, *op, depth);
}

std::string printFunction(Function &fn) {
  fn.renumber();
  std::ostringstream out;
  out << "func @" << fn.name << "(" << typedValues(fn.body->args) << ") {\n";
  printBlock(out, *fn.body, 1);
  out << "}\n";
  return out.str();
}

} // namespace tilec
