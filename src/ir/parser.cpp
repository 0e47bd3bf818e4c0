// Reads the text form of Tile IR (as printer.cpp writes it) back into a Function.
// A recursive-descent parser over characters, one function per grammar rule;
// value names may be any `%word`, defined before use, visible in nested regions.
// `//` comments are skipped. Errors are CompileErrors located in the IR text.
#include "ir/parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace tilec {

namespace {

bool isWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The keyword between an op's regions; the printer writes the same ones.
const char *regionSeparator(OpKind kind) {
  switch (kind) {
  case OpKind::If:
    return "else";
  case OpKind::While:
    return "do";
  default:
    return "";
  }
}

// A name as written, and where.
struct Named {
  std::string name;
  size_t begin, end;
};

class IRParser {
public:
  IRParser(const std::string &text, const std::string &filename, const EncodingParser &encodings)
      : encodings_(encodings) {
    auto src = std::make_shared<Source>();
    src->filename = filename;
    src->text = text;
    src_ = src;
    lineStarts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        lineStarts_.push_back(i + 1);
  }

  std::unique_ptr<Function> parse();

private:
  SourcePtr src_;
  const EncodingParser &encodings_;
  std::unordered_map<std::string, std::shared_ptr<const Encoding>> aliases_;
  size_t pos_ = 0;
  std::vector<size_t> lineStarts_;
  std::vector<std::unordered_map<std::string, Value *>> scopes_;

  // --- characters, locations and errors
  const std::string &text() const { return src_->text; }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text().size() ? text()[pos_ + ahead] : '\0';
  }
  SourceLoc locAt(size_t pos) const;
  Location location(size_t begin, size_t end) const;
  size_t tokenEnd(size_t begin) const;
  [[noreturn]] void error(size_t begin, size_t end, const std::string &message) const;
  [[noreturn]] void errorHere(const std::string &message);
  void skipSpace();
  bool accept(const char *punct);
  void expect(const char *punct, const std::string &context);
  Named word();
  Named expectWord(const std::string &what);
  int64_t dim();

  // --- values and scopes
  Named valueName();
  void define(const Named &name, Value *value);
  Value *use(const Named &name);

  // --- grammar rules
  void typedValues(Block &block);
  Type type();
  Type elementType();
  void aliasDefinitions();
  std::shared_ptr<const Encoding> encoding();
  DType scalarDType();
  void block(Block &block, bool withArgs);
  void op(Block &block);
  std::vector<Named> resultNames();
  std::vector<Value *> operandList();
  bool atAttrDict(const OpInfo &info);
  using Attrs = std::vector<std::pair<std::string, Attr>>;
  void attrDict(Attrs &attrs);
  Attr attrValue();
  Attr number();
  std::string stringLiteral();
  std::vector<Type> typeList();
  void regions(Op &op, const Named &mnemonic);
};

SourceLoc IRParser::locAt(size_t pos) const {
  size_t line = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), pos) - lineStarts_.begin();
  return SourceLoc{(int)line, (int)(pos - lineStarts_[line - 1]) + 1};
}

Location IRParser::location(size_t begin, size_t end) const {
  return Location{src_, Span{locAt(begin), locAt(std::max(end, begin + 1))}};
}

// The end of the token starting at `begin`: a word, or one character.
size_t IRParser::tokenEnd(size_t begin) const {
  size_t end = begin;
  while (end < text().size() && isWordChar(text()[end]))
    ++end;
  return end > begin ? end : begin + 1;
}

void IRParser::error(size_t begin, size_t end, const std::string &message) const {
  fail(location(begin, end), message);
}

void IRParser::errorHere(const std::string &message) {
  skipSpace();
  if (pos_ >= text().size())
    error(pos_, pos_ + 1, message + ", found end of input");
  error(pos_, tokenEnd(pos_), message);
}

void IRParser::skipSpace() {
  while (pos_ < text().size()) {
    char c = text()[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '/' && peek(1) == '/') {
      while (pos_ < text().size() && text()[pos_] != '\n')
        ++pos_;
    } else {
      return;
    }
  }
}

bool IRParser::accept(const char *punct) {
  skipSpace();
  if (text().compare(pos_, std::char_traits<char>::length(punct), punct) != 0)
    return false;
  pos_ += std::char_traits<char>::length(punct);
  return true;
}

void IRParser::expect(const char *punct, const std::string &context) {
  if (!accept(punct))
    errorHere(std::string("expected '") + punct + "' " + context);
}

Named IRParser::word() {
  skipSpace();
  size_t begin = pos_;
  while (pos_ < text().size() && isWordChar(text()[pos_]))
    ++pos_;
  return Named{text().substr(begin, pos_ - begin), begin, pos_};
}

Named IRParser::expectWord(const std::string &what) {
  Named w = word();
  if (w.name.empty())
    errorHere("expected " + what);
  return w;
}

// dim := [0-9]+   (positive; no space inside a type)
int64_t IRParser::dim() {
  size_t begin = pos_;
  while (isDigit(peek()))
    ++pos_;
  if (pos_ == begin)
    error(begin, tokenEnd(begin), "expected a dimension");
  errno = 0;
  int64_t d = std::strtoll(text().c_str() + begin, nullptr, 10);
  if (errno == ERANGE || d <= 0)
    error(begin, pos_, "dimension must be a positive 64-bit integer");
  return d;
}

// value-name := '%' [A-Za-z0-9_]+
Named IRParser::valueName() {
  skipSpace();
  size_t begin = pos_;
  if (!accept("%"))
    errorHere("expected a value name like '%0'");
  if (!isWordChar(peek()))
    error(begin, pos_ + 1, "expected a value name after '%'");
  Named w = word();
  return Named{"%" + w.name, begin, w.end};
}

void IRParser::define(const Named &name, Value *value) {
  for (const auto &scope : scopes_)
    if (scope.count(name.name))
      error(name.begin, name.end, "redefinition of value '" + name.name + "'");
  scopes_.back()[name.name] = value;
}

Value *IRParser::use(const Named &name) {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->find(name.name);
    if (it != scope->end())
      return it->second;
  }
  error(name.begin, name.end, "use of undefined value '" + name.name + "'");
}

// typed-values := '(' [value-name ':' type (',' value-name ':' type)*] ')'
// Defines each as an argument of `block`.
void IRParser::typedValues(Block &block) {
  expect("(", "before the argument list");
  if (accept(")"))
    return;
  do {
    Named name = valueName();
    expect(":", "after the argument name");
    define(name, block.addArg(type()));
  } while (accept(","));
  expect(")", "after the argument list");
}

// scalar-dtype := i1 | i8 | ... | f32 | f64   (not a pointer)
DType IRParser::scalarDType() {
  Named w = expectWord("a scalar element type");
  auto d = dtypeFromName(w.name);
  if (!d || isPointer(*d))
    error(w.begin, w.end, "unknown element type '" + w.name + "'");
  return *d;
}

// element := '!ptr' '<' scalar-dtype '>'
//          | '!blockptr' '<' scalar-dtype ',' dim ('x' dim)* '>' | scalar-dtype
Type IRParser::elementType() {
  skipSpace();
  if (!accept("!"))
    return Type::scalar(scalarDType());
  Named kind = expectWord("'ptr' or 'blockptr' after '!'");
  if (kind.name != "ptr" && kind.name != "blockptr")
    error(kind.begin, kind.end, "expected 'ptr' or 'blockptr' after '!'");
  expect("<", "after '!" + kind.name + "'");
  DType pointee = scalarDType();
  if (kind.name == "ptr") {
    expect(">", "after the pointee type");
    return Type::pointer(pointee);
  }
  expect(",", "after the pointee type");
  skipSpace();
  std::vector<int64_t> block = {dim()};
  while (peek() == 'x') {
    ++pos_;
    block.push_back(dim());
  }
  expect(">", "after the block shape");
  return Type::blockPointer(pointee, block);
}

// type := 'tensor' '<' (dim 'x')+ element '>' | element
Type IRParser::type() {
  skipSpace();
  size_t begin = pos_;
  if (text().compare(pos_, 7, "tensor<") != 0)
    return elementType();
  pos_ += 7;
  std::vector<int64_t> shape;
  do {
    shape.push_back(dim());
    if (peek() != 'x')
      error(pos_, tokenEnd(pos_), "expected 'x' after a tensor dimension");
    ++pos_;
  } while (isDigit(peek()));
  if (peek() == 't' && text().compare(pos_, 6, "tensor") == 0)
    error(begin, pos_ + 6, "a tensor's element type cannot be a tensor");
  Type t = elementType().withShape(shape);
  if (accept(","))
    t = t.withEncoding(encoding());
  expect(">", "to close the tensor type");
  return t;
}

// encoding := '#' word ('<' ... '>' | )     (inline, or an alias defined ahead)
std::shared_ptr<const Encoding> IRParser::encoding() {
  skipSpace();
  size_t begin = pos_;
  if (!accept("#"))
    errorHere("expected a layout encoding ('#...') after ','");
  Named name = word();
  if (name.name.empty())
    errorHere("expected the layout's name after '#'");
  if (peek() != '<') {
    auto it = aliases_.find("#" + name.name);
    if (it == aliases_.end())
      error(begin, name.end, "unknown layout alias '#" + name.name + "'");
    return it->second;
  }
  int depth = 0;
  do {
    if (pos_ >= text().size())
      error(begin, pos_, "unclosed layout encoding");
    depth += peek() == '<' ? 1 : peek() == '>' ? -1 : 0;
    ++pos_;
  } while (depth > 0);
  std::string written = text().substr(begin, pos_ - begin);
  std::shared_ptr<const Encoding> e = encodings_ ? encodings_(written) : nullptr;
  if (!e)
    error(begin, pos_,
          encodings_ ? "not a layout encoding this backend reads: " + written
                     : "layout encodings need a backend to read them");
  return e;
}

// alias-definitions := ('#' word '=' encoding)*     (ahead of the function)
void IRParser::aliasDefinitions() {
  skipSpace();
  while (peek() == '#') {
    size_t begin = pos_;
    ++pos_;
    Named name = word();
    if (name.name.empty() || aliases_.count("#" + name.name))
      error(begin, std::max(name.end, begin + 1),
            name.name.empty() ? "expected an alias name after '#'"
                              : "layout alias '#" + name.name + "' defined twice");
    expect("=", "after the alias name");
    aliases_["#" + name.name] = encoding();
    skipSpace();
  }
}

// block := ['^' typed-values ':'] op* '}'     (after its '{')
void IRParser::block(Block &block, bool withArgs) {
  scopes_.emplace_back();
  if (withArgs && accept("^")) {
    typedValues(block);
    expect(":", "after the block arguments");
  }
  while (!accept("}")) {
    if (pos_ >= text().size())
      errorHere("expected '}' to close the block");
    op(block);
  }
  scopes_.pop_back();
}

// results := value-name (',' value-name)* '='
std::vector<Named> IRParser::resultNames() {
  std::vector<Named> names;
  skipSpace();
  if (peek() != '%')
    return names;
  do
    names.push_back(valueName());
  while (accept(","));
  expect("=", "after the result names");
  return names;
}

// operands := '(' [value-name (',' value-name)*] ')'
std::vector<Value *> IRParser::operandList() {
  std::vector<Value *> operands;
  expect("(", "before the operands");
  if (accept(")"))
    return operands;
  do
    operands.push_back(use(valueName()));
  while (accept(","));
  expect(")", "after the operands");
  return operands;
}

// A '{' starts an attribute dict when the op has no regions, or when `name =`
// follows it; otherwise it starts a region.
bool IRParser::atAttrDict(const OpInfo &info) {
  skipSpace();
  if (peek() != '{')
    return false;
  if (info.numRegions == 0)
    return true;
  size_t save = pos_;
  ++pos_;
  bool isAttr = !word().name.empty() && accept("=");
  pos_ = save;
  return isAttr;
}

// attr-dict := '{' [name '=' attr-value (',' name '=' attr-value)*] '}'
void IRParser::attrDict(Attrs &attrs) {
  expect("{", "before the attributes");
  if (accept("}"))
    return;
  do {
    Named name = expectWord("an attribute name");
    for (const auto &a : attrs)
      if (a.first == name.name)
        error(name.begin, name.end, "duplicate attribute '" + name.name + "'");
    expect("=", "after the attribute name");
    attrs.emplace_back(name.name, attrValue());
  } while (accept(","));
  expect("}", "after the attributes");
}

// number := '-'? [0-9]+ ('.' [0-9]*)? ([eE] [+-]? [0-9]+)?   (float if '.' or exponent)
Attr IRParser::number() {
  size_t begin = pos_;
  if (peek() == '-')
    ++pos_;
  if (!isDigit(peek()))
    error(begin, tokenEnd(pos_), "expected an attribute value");
  bool isFloat = false;
  while (isDigit(peek()))
    ++pos_;
  if (peek() == '.') {
    isFloat = true;
    for (++pos_; isDigit(peek());)
      ++pos_;
  }
  if (peek() == 'e' || peek() == 'E') {
    isFloat = true;
    ++pos_;
    if (peek() == '+' || peek() == '-')
      ++pos_;
    if (!isDigit(peek()))
      error(begin, tokenEnd(pos_), "expected digits in the exponent");
    while (isDigit(peek()))
      ++pos_;
  }
  std::string digits = text().substr(begin, pos_ - begin);
  if (isFloat)
    return std::strtod(digits.c_str(), nullptr);
  errno = 0;
  long long v = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE)
    error(begin, pos_, "integer '" + digits + "' does not fit in 64 bits");
  return (int64_t)v;
}

// string := '"' (char | '\"' | '\\' | '\n' | '\t' | '\x' hex hex)* '"'
std::string IRParser::stringLiteral() {
  size_t begin = pos_++;
  std::string out;
  while (peek() != '"') {
    if (pos_ >= text().size() || peek() == '\n')
      error(begin, pos_, "unterminated string");
    char c = text()[pos_++];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = text()[pos_++];
    if (e == '"' || e == '\\')
      out += e;
    else if (e == 'n')
      out += '\n';
    else if (e == 't')
      out += '\t';
    else if (e == 'x' && std::isxdigit((unsigned char)peek()) &&
             std::isxdigit((unsigned char)peek(1))) {
      out += (char)std::strtol(text().substr(pos_, 2).c_str(), nullptr, 16);
      pos_ += 2;
    } else
      error(pos_ - 2, pos_, "unknown escape in string");
  }
  ++pos_;
  return out;
}

// attr-value := int | float | 'inf' | '-inf' | 'nan' | '[' [int (',' int)*] ']' | string
Attr IRParser::attrValue() {
  skipSpace();
  if (peek() == '"')
    return stringLiteral();
  if (accept("-inf"))
    return -HUGE_VAL;
  if (accept("[")) {
    std::vector<int64_t> list;
    if (accept("]"))
      return list;
    do {
      skipSpace();
      size_t begin = pos_;
      Attr item = number();
      if (!std::holds_alternative<int64_t>(item))
        error(begin, pos_, "expected an integer in the list");
      list.push_back(std::get<int64_t>(item));
    } while (accept(","));
    expect("]", "to close the list");
    return list;
  }
  if (isWordChar(peek()) && !isDigit(peek())) {
    Named w = word();
    if (w.name == "inf")
      return HUGE_VAL;
    if (w.name == "nan")
      return std::nan("");
    error(w.begin, w.end, "expected an attribute value, found '" + w.name + "'");
  }
  return number();
}

// types := type (',' type)*
std::vector<Type> IRParser::typeList() {
  std::vector<Type> types;
  do
    types.push_back(type());
  while (accept(","));
  return types;
}

// regions := '{' block ('}' keyword? '{' block)*   (keyword: 'else' for if, 'do' for while)
void IRParser::regions(Op &op, const Named &mnemonic) {
  for (size_t i = 0; i < op.regions.size(); ++i) {
    std::string keyword = regionSeparator(op.kind);
    if (i > 0 && !keyword.empty()) {
      Named w = word();
      if (w.name != keyword)
        errorHere("expected '" + keyword + "' before region " + std::to_string(i + 1) + " of '" +
                  mnemonic.name + "'");
    }
    expect("{", "to begin region " + std::to_string(i + 1) + " of '" + mnemonic.name + "'");
    block(*op.regions[i], true);
  }
}

std::string countText(int n, const char *noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// op := [results] mnemonic operands [attr-dict] [':' types] regions
void IRParser::op(Block &block) {
  std::vector<Named> results = resultNames();
  Named mnemonic = expectWord("an op");
  while (peek() == '.') { // a dotted mnemonic: gpu.convert_layout
    ++pos_;
    Named part = expectWord("the rest of the op's name");
    mnemonic.name += "." + part.name;
    mnemonic.end = part.end;
  }
  OpKind kind;
  if (!opKindFromMnemonic(mnemonic.name, &kind))
    error(mnemonic.begin, mnemonic.end, "unknown op '" + mnemonic.name + "'");
  const OpInfo &info = opInfo(kind);
  std::vector<Value *> operands = operandList();
  if (info.numOperands != VARIADIC && (int)operands.size() != info.numOperands)
    error(mnemonic.begin, mnemonic.end,
          "'" + mnemonic.name + "' takes " + countText(info.numOperands, "operand") + ", got " +
              std::to_string(operands.size()));
  Attrs attrs;
  if (atAttrDict(info))
    attrDict(attrs);
  std::vector<Type> types;
  if (accept(":"))
    types = typeList();
  if (types.size() != results.size())
    error(mnemonic.begin, mnemonic.end,
          "'" + mnemonic.name + "' names " + countText(results.size(), "result") + " but gives " +
              countText(types.size(), "result type"));
  if (info.numResults != VARIADIC && (int)results.size() != info.numResults)
    error(mnemonic.begin, mnemonic.end,
          "'" + mnemonic.name + "' has " + countText(info.numResults, "result") + ", got " +
              std::to_string(results.size()));
  Builder builder(&block);
  builder.setLoc(location(results.empty() ? mnemonic.begin : results[0].begin, mnemonic.end));
  Op *op = builder.create(kind, operands, types, info.numRegions);
  for (auto &a : attrs)
    op->setAttr(a.first, std::move(a.second));
  regions(*op, mnemonic);
  for (size_t i = 0; i < results.size(); ++i)
    define(results[i], op->result(i));
}

// function := 'func' '@' name typed-values '{' op* '}'
std::unique_ptr<Function> IRParser::parse() {
  auto fn = std::make_unique<Function>();
  aliasDefinitions();
  Named keyword = word();
  if (keyword.name.empty())
    errorHere("expected 'func'");
  if (keyword.name != "func")
    error(keyword.begin, keyword.end, "expected 'func', found '" + keyword.name + "'");
  expect("@", "before the function name");
  if (!isWordChar(peek()))
    errorHere("expected the function name after '@'");
  fn->name = word().name;
  scopes_.emplace_back();
  typedValues(*fn->body);
  for (size_t i = 0; i < fn->body->args.size(); ++i)
    fn->argNames.push_back("arg" + std::to_string(i));
  expect("{", "to begin the function body");
  block(*fn->body, false);
  skipSpace();
  if (pos_ < text().size())
    errorHere("expected end of input after the function");
  return fn;
}

} // namespace

std::unique_ptr<Function> parseIR(const std::string &text, const std::string &filename,
                                  const EncodingParser &encodings) {
  return IRParser(text, filename, encodings).parse();
}

} // namespace tilec
