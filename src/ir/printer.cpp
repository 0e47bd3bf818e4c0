// Prints Tile IR as text. One op a line:
//   %r0, %r1 = mnemonic(%a, %b) {name = value, ...} : type0, type1 {
//   ^(%arg: type, ...):
//     ...ops of the region, one level deeper...
//   } else {            (`} do {` for while; other ops: `} {`)
//   }
// Attribute values: 5, 1.5, 1e+20, inf, -inf, nan, [1, 0], "text". Floats always read
// back as floats and round-trip exactly. Locations are not printed.
// A backend's layout encodings are printed once each, as aliases ahead of the
// function (`#blocked0 = #blocked<...>`, in the order they first appear), and
// types name them by alias: GPU IR gives every tensor one.
#include "ir/printer.h"

#include "support/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace tilec {

using Aliases = std::unordered_map<const Encoding *, std::string>;

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

static void appendOp(std::string &out, const Op &op, const Aliases &aliases) {
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
    appendJoined(out, op.results,
                 [&](std::string &o, const auto &r) { r->type.appendTo(o, aliases); });
  }
}

std::string printOp(const Op &op) {
  std::string out;
  appendOp(out, op, Aliases());
  return out;
}

static void appendTypedValues(std::string &out, const std::vector<std::unique_ptr<Value>> &values,
                              const Aliases &aliases) {
  appendJoined(out, values, [&](std::string &o, const auto &v) {
    appendValue(o, v.get());
    o += ": ";
    v->type.appendTo(o, aliases);
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

static void appendBlock(std::string &out, const Block &block, int depth, const Aliases &aliases);

static void appendOpTree(std::string &out, const Op &op, int depth, const Aliases &aliases) {
  out.append(2 * depth, ' ');
  appendOp(out, op, aliases);
  for (size_t i = 0; i < op.regions.size(); ++i) {
    out += i == 0 ? " {" : regionSeparator(op.kind);
    out += '\n';
    const Block &region = *op.regions[i];
    if (!region.args.empty()) {
      out.append(2 * depth, ' ');
      out += "^(";
      appendTypedValues(out, region.args, aliases);
      out += "):\n";
    }
    appendBlock(out, region, depth + 1, aliases);
    out.append(2 * depth, ' ');
  }
  if (!op.regions.empty())
    out += '}';
  out += '\n';
}

static void appendBlock(std::string &out, const Block &block, int depth, const Aliases &aliases) {
  for (const auto &op : block.ops)
    appendOpTree(out, *op, depth, aliases);
}

namespace {

// Names each distinct encoding text #<kind><n>, in the order printing meets
// them, and writes the definitions.
class AliasNamer {
public:
  Aliases aliases;
  std::string definitions;

  void values(const std::vector<std::unique_ptr<Value>> &vs) {
    for (const auto &v : vs)
      name(v->type.encoding.get());
  }
  void block(const Block &b) {
    for (const auto &op : b.ops) {
      values(op->results);
      for (const auto &region : op->regions) {
        values(region->args);
        block(*region);
      }
    }
  }

private:
  std::unordered_map<std::string, std::string> byText_;
  std::unordered_map<std::string, int> perKind_;

  void name(const Encoding *e) {
    if (!e || aliases.count(e))
      return;
    const std::string &text = e->str(); // #kind<...>
    auto [it, fresh] = byText_.emplace(text, std::string());
    if (fresh) {
      std::string kind = text.substr(0, text.find('<'));
      it->second = kind + std::to_string(perKind_[kind]++);
      definitions += it->second + " = " + text + "\n";
    }
    aliases.emplace(e, it->second);
  }
};

} // namespace

std::string printFunction(Function &fn) {
  fn.renumber();
  AliasNamer names;
  names.values(fn.body->args);
  names.block(*fn.body);
  std::string out = names.definitions + "func @" + fn.name + "(";
  appendTypedValues(out, fn.body->args, names.aliases);
  out += ") {\n";
  appendBlock(out, *fn.body, 1, names.aliases);
  out += "}\n";
  return out;
}

} // namespace tilec
