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

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tilec {

// Everything appends to one string: the text is built once, not from
// pieces copied into each other.
static void appendValue(std::string &out, const Value *v) {
  if (v->id < 0) {
    out += "%?";
    return;
  }
  char text[16] = {'%'};
  out.append(text, std::to_chars(text + 1, text + sizeof text, v->id).ptr);
}

static void appendInt(std::string &out, int64_t v) {
  char text[24];
  out.append(text, std::to_chars(text, text + sizeof text, v).ptr);
}

// items[0], items[1], ... each appended by `append(out, item)`.
template <typename T, typename F>
static void appendJoined(std::string &out, const T &items, F &&append) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      out += ", ";
    append(out, items[i]);
  }
}

static void appendAttr(std::string &out, const Attr &attr) {
  if (auto *i = std::get_if<int64_t>(&attr)) {
    appendInt(out, *i);
  } else if (auto *f = std::get_if<double>(&attr)) {
    out += formatFloat(*f);
  } else if (auto *s = std::get_if<std::string>(&attr)) {
    out += quoteString(*s);
  } else {
    out += '[';
    appendJoined(out, std::get<std::vector<int64_t>>(attr),
                 [](std::string &o, int64_t v) { appendInt(o, v); });
    out += ']';
  }
}

static void appendOp(std::string &out, const Op &op) {
  if (!op.results.empty()) {
    appendJoined(out, op.results, [](std::string &o, const auto &r) { appendValue(o, r.get()); });
    out += " = ";
  }
  out += op.info().mnemonic;
  out += '(';
  appendJoined(out, op.operands, [](std::string &o, const Value *v) { appendValue(o, v); });
  out += ')';
  if (!op.attrs.empty()) {
    out += " {";
    appendJoined(out, op.attrs, [](std::string &o, const auto &a) {
      o += a.first;
      o += " = ";
      appendAttr(o, a.second);
    });
    out += '}';
  }
  if (!op.results.empty()) {
    out += " : ";
    appendJoined(out, op.results, [](std::string &o, const auto &r) { r->type.appendTo(o); });
  }
}

std::string printOp(const Op &op) {
  std::string out;
  appendOp(out, op);
  return out;
}

static void appendTypedValues(std::string &out, const std::vector<std::unique_ptr<Value>> &values) {
  appendJoined(out, values, [](std::string &o, const auto &v) {
    appendValue(o, v.get());
    o += ": ";
    v->type.appendTo(o);
  });
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

static void appendBlock(std::string &out, const Block &block, int depth);

static void appendOpTree(std::string &out, const Op &op, int depth) {
  out.append(2 * depth, ' ');
  appendOp(out, op);
  for (size_t i = 0; i < op.regions.size(); ++i) {
    out += i == 0 ? " {" : regionSeparator(op.kind);
    out += '\n';
    const Block &region = *op.regions[i];
    if (!region.args.empty()) {
      out.append(2 * depth, ' ');
      out += "^(";
      appendTypedValues(out, region.args);
      out += "):\n";
    }
    appendBlock(out, region, depth + 1);
    out.append(2 * depth, ' ');
  }
  if (!op.regions.empty())
    out += '}';
  out += '\n';
}

static void appendBlock(std::string &out, const Block &block, int depth) {
  for (const auto &op : block.ops)
    appendOpTree(out, *op, depth);
}

std::string printFunction(Function &fn) {
  fn.renumber();
  std::string out = "func @" + fn.name + "(";
  appendTypedValues(out, fn.body->args);
  out += ") {\n";
  appendBlock(out, *fn.body, 1);
  out += "}\n";
  return out;
}

} // namespace tilec
