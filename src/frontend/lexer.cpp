// The tokenizer for kernel sources: layout tokens, names, numbers, strings and operators.
#include "frontend/lexer.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace tilec {

namespace {

constexpr std::string_view kKeywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

// Longest first, so that the first match is the longest one.
constexpr std::string_view kOperators[] = {
    "**=", "//=", ">>=", "<<=", "...", "**", "//", "<<", ">>", "<=", ">=", "==",
    "!=",  "->",  ":=",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "@=",
    "+",   "-",   "*",   "/",   "%",   "@",  "&",  "|",  "^",  "~",  "<",  ">",
    "(",   ")",   "[",   "]",   "{",   "}",  ",",  ":",  ".",  ";",  "="};

// The entries of `table` by their first byte, in table order: a lookup
// compares only the few that can match.
template <size_t N>
std::array<std::vector<std::string_view>, 128> byFirstByte(const std::string_view (&table)[N]) {
  std::array<std::vector<std::string_view>, 128> out;
  for (std::string_view s : table)
    out[(unsigned char)s[0] & 127].push_back(s);
  return out;
}

const int kTabWidth = 8;
const size_t kMaxBrackets = 200;
const size_t kMaxIndents = 100;

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

int digitValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z')
    return c - 'A' + 10;
  return 99;
}

// Whether `word` spells a string prefix (r, u, b, f and their valid pairs, any case).
bool isStringPrefix(const std::string &word) {
  std::string lower;
  for (char c : word)
    lower += (char)(c | 0x20);
  for (const char *p : {"r", "u", "b", "f", "br", "rb", "fr", "rf"})
    if (lower == p)
      return true;
  return false;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

// Parses digits (no underscores) in `base`; sets `tooLarge` on uint64 overflow.
uint64_t parseUnsigned(const std::string &digits, int base, bool &tooLarge) {
  uint64_t value = 0;
  tooLarge = false;
  for (char c : digits) {
    uint64_t d = (uint64_t)digitValue(c);
    if (value > (UINT64_MAX - d) / (uint64_t)base)
      tooLarge = true;
    value = value * (uint64_t)base + d;
  }
  return tooLarge ? 0 : value;
}

class Lexer {
public:
  explicit Lexer(const SourcePtr &source) : source_(source), text_(source->text) {}
  std::vector<Token> run();

private:
  struct Bracket {
    char open;
    Span span;
  };

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  SourceLoc here() const { return {line_, col_}; }
  void advance(size_t n = 1);
  [[noreturn]] void error(SourceLoc begin, SourceLoc end, const std::string &message) const;
  [[noreturn]] void errorHere(const std::string &message) const;
  Token &emit(TokKind kind, std::string text, SourceLoc begin);
  bool needsNewline() const;

  void startLine();
  void indentTo(int width, SourceLoc at);
  void newline();
  void continuation();
  void name();
  void number();
  void radixNumber(SourceLoc begin);
  void scanDigits(std::string &out, int base, const char *what);
  void string(SourceLoc begin, const std::string &prefix);
  void escape(std::string &out, bool bytes);
  uint32_t hexEscape(int count, const char *what);
  void octalEscape(std::string &out, bool bytes);
  void op();
  void bracket(const std::string &text, SourceLoc begin);
  void invalidCharacter();
  void finish();

  const SourcePtr &source_;
  const std::string &text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  bool atLineStart_ = true;
  std::vector<int> indents_;
  std::vector<Bracket> brackets_;
  std::vector<Token> out_;
};

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && !atEnd(); ++i, ++pos_) {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
  }
}

void Lexer::error(SourceLoc begin, SourceLoc end, const std::string &message) const {
  fail(Location{source_, Span{begin, end}}, message);
}

void Lexer::errorHere(const std::string &message) const {
  error(here(), SourceLoc{line_, col_ + 1}, message);
}

Token &Lexer::emit(TokKind kind, std::string text, SourceLoc begin) {
  Token tok;
  tok.kind = kind;
  tok.text = std::move(text);
  tok.span = Span{begin, here()};
  out_.push_back(std::move(tok));
  return out_.back();
}

// A Newline ends a logical line only when the line has a token of its own.
bool Lexer::needsNewline() const {
  if (out_.empty())
    return false;
  TokKind last = out_.back().kind;
  return last != TokKind::Newline && last != TokKind::Indent && last != TokKind::Dedent;
}

std::vector<Token> Lexer::run() {
  for (;;) {
    if (atLineStart_ && brackets_.empty())
      startLine();
    atLineStart_ = false;
    while (peek() == ' ' || peek() == '\t' || peek() == '\f' || peek() == '\r')
      advance();
    if (atEnd())
      break;
    char c = peek();
    if (c == '#') {
      while (!atEnd() && peek() != '\n')
        advance();
    } else if (c == '\n') {
      newline();
    } else if (c == '\\') {
      continuation();
    } else if (isIdentStart(c)) {
      name();
    } else if (isDigit(c) || (c == '.' && isDigit(peek(1)))) {
      number();
    } else if (c == '\'' || c == '"') {
      string(here(), "");
    } else {
      op();
    }
  }
  finish();
  return std::move(out_);
}

// Measures the indentation of a new line and emits Indent/Dedent; blank and comment-only lines
// are left alone.
void Lexer::startLine() {
  int width = 0;
  while (peek() == ' ' || peek() == '\t' || peek() == '\f') {
    char c = peek();
    width = c == ' ' ? width + 1 : c == '\t' ? (width / kTabWidth + 1) * kTabWidth : 0;
    advance();
  }
  char c = peek();
  bool blank = atEnd() || c == '#' || c == '\n' || (c == '\r' && peek(1) == '\n');
  if (!blank)
    indentTo(width, here());
}

void Lexer::indentTo(int width, SourceLoc at) {
  if (indents_.empty())
    indents_.push_back(width);
  if (width > indents_.back()) {
    if (indents_.size() > kMaxIndents)
      error(at, at, "too many levels of indentation");
    indents_.push_back(width);
    emit(TokKind::Indent, "", at);
    return;
  }
  while (width < indents_.back()) {
    indents_.pop_back();
    if (indents_.empty() || width > indents_.back())
      error(at, at, "unindent does not match any outer indentation level");
    emit(TokKind::Dedent, "", at);
  }
}

void Lexer::newline() {
  if (brackets_.empty() && needsNewline()) {
    SourceLoc end = out_.back().span.end;
    out_.push_back(Token{TokKind::Newline, "", Span{end, SourceLoc{end.line, end.col + 1}}});
  }
  advance();
  atLineStart_ = brackets_.empty();
}

// A backslash joins the next line to this one.
void Lexer::continuation() {
  SourceLoc begin = here();
  advance();
  if (peek() == '\r' && peek(1) == '\n')
    advance();
  if (atEnd())
    error(begin, here(), "unexpected end of file after line continuation character");
  if (peek() != '\n')
    error(begin, here(), "unexpected character after line continuation character");
  advance();
}

void Lexer::name() {
  SourceLoc begin = here();
  size_t start = pos_;
  while (isIdentChar(peek()))
    advance();
  std::string word = text_.substr(start, pos_ - start);
  if ((peek() == '\'' || peek() == '"') && isStringPrefix(word))
    return string(begin, word);
  TokKind kind = isKeyword(word) ? TokKind::Keyword : TokKind::Name; // (before word moves)
  emit(kind, std::move(word), begin);
}

// Reads digits of `base` with single underscores between them into `out`.
void Lexer::scanDigits(std::string &out, int base, const char *what) {
  for (;;) {
    if (peek() == '_') {
      advance();
      if (digitValue(peek()) >= base)
        errorHere(std::string("invalid ") + what + " literal");
    }
    if (digitValue(peek()) >= base)
      return;
    out += peek();
    advance();
  }
}

void Lexer::number() {
  SourceLoc begin = here();
  size_t start = pos_;
  char radix = (char)(peek(1) | 0x20);
  if (peek() == '0' && (radix == 'x' || radix == 'o' || radix == 'b'))
    return radixNumber(begin);
  std::string digits;
  bool isFloat = false;
  scanDigits(digits, 10, "decimal");
  if (peek() == '.') {
    isFloat = true;
    digits += '.';
    advance();
    if (isDigit(peek()))
      scanDigits(digits, 10, "decimal");
  }
  if (peek() == 'e' || peek() == 'E') {
    isFloat = true;
    digits += 'e';
    advance();
    if (peek() == '+' || peek() == '-') {
      digits += peek();
      advance();
    }
    if (!isDigit(peek()))
      errorHere("invalid decimal literal");
    scanDigits(digits, 10, "decimal");
  }
  if (peek() == 'j' || peek() == 'J') {
    advance();
    error(begin, here(), "complex numbers are not supported");
  }
  if (isIdentChar(peek()))
    errorHere("invalid decimal literal");
  Token &tok =
      emit(isFloat ? TokKind::Float : TokKind::Int, text_.substr(start, pos_ - start), begin);
  if (isFloat) {
    tok.floatValue = std::strtod(digits.c_str(), nullptr);
    return;
  }
  if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos)
    error(begin, here(), "leading zeros in decimal integer literals are not permitted");
  tok.intValue = parseUnsigned(digits, 10, tok.intTooLarge);
}

// 0x, 0o and 0b integers.
void Lexer::radixNumber(SourceLoc begin) {
  size_t start = pos_;
  char radix = (char)(peek(1) | 0x20);
  int base = radix == 'x' ? 16 : radix == 'o' ? 8 : 2;
  const char *what = radix == 'x' ? "hexadecimal" : radix == 'o' ? "octal" : "binary";
  advance(2);
  std::string digits;
  if (peek() == '_')
    advance();
  scanDigits(digits, base, what);
  if (isDigit(peek()))
    errorHere(std::string("invalid digit '") + peek() + "' in " + what + " literal");
  if (digits.empty() || isIdentChar(peek()))
    errorHere(std::string("invalid ") + what + " literal");
  Token &tok = emit(TokKind::Int, text_.substr(start, pos_ - start), begin);
  tok.intValue = parseUnsigned(digits, base, tok.intTooLarge);
}

// A string literal from its opening quote; `begin` is where its prefix starts.
void Lexer::string(SourceLoc begin, const std::string &prefix) {
  auto has = [&](char c) {
    return prefix.find(c) != std::string::npos || prefix.find((char)(c - 32)) != std::string::npos;
  };
  bool fstring = has('f'), raw = has('r') || fstring, bytes = has('b');
  char quote = peek();
  bool triple = peek(1) == quote && peek(2) == quote;
  advance(triple ? 3 : 1);
  const char *unterminated =
      triple ? "unterminated triple-quoted string literal" : "unterminated string literal";
  std::string value;
  for (;;) {
    if (atEnd() || (!triple && peek() == '\n'))
      error(begin, here(), unterminated);
    char c = peek();
    if (c == quote && (!triple || (peek(1) == quote && peek(2) == quote))) {
      advance(triple ? 3 : 1);
      break;
    }
    if (c == '\\' && !raw) {
      escape(value, bytes);
      continue;
    }
    if (c == '\\' && peek(1) != '\0') {
      value += c;
      advance();
      c = peek();
    }
    if (!(c == '\r' && peek(1) == '\n'))
      value += c;
    advance();
  }
  emit(TokKind::Str, std::move(value), begin).fstring = fstring;
}

// One escape sequence of a non-raw string, from its backslash.
void Lexer::escape(std::string &out, bool bytes) {
  SourceLoc begin = here();
  advance();
  char c = peek();
  static const char kSimple[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
  for (const char *p = kSimple; *p; p += 2) {
    if (c == p[0]) {
      out += p[1];
      advance();
      return;
    }
  }
  if (c == '\n') {
    advance();
  } else if (c >= '0' && c <= '7') {
    octalEscape(out, bytes);
  } else if (c == 'x') {
    uint32_t v = hexEscape(2, "\\x");
    bytes ? (void)(out += (char)v) : appendUtf8(out, v);
  } else if ((c == 'u' || c == 'U') && !bytes) {
    uint32_t v = hexEscape(c == 'u' ? 4 : 8, c == 'u' ? "\\u" : "\\U");
    if (v > 0x10FFFF)
      error(begin, here(), "invalid \\U escape: code point out of range");
    appendUtf8(out, v);
  } else if (c == 'N' && !bytes) {
    error(begin, SourceLoc{line_, col_ + 1}, "\\N{...} escapes are not supported in kernels");
  } else {
    out += '\\';
  }
}

// Reads the `count` hex digits after an escape letter.
uint32_t Lexer::hexEscape(int count, const char *what) {
  SourceLoc begin{line_, col_ - 1};
  advance();
  uint32_t value = 0;
  for (int i = 0; i < count; ++i) {
    if (digitValue(peek()) >= 16)
      error(begin, here(), std::string("truncated ") + what + " escape");
    value = value * 16 + (uint32_t)digitValue(peek());
    advance();
  }
  return value;
}

void Lexer::octalEscape(std::string &out, bool bytes) {
  uint32_t value = 0;
  for (int i = 0; i < 3 && peek() >= '0' && peek() <= '7'; ++i) {
    value = value * 8 + (uint32_t)(peek() - '0');
    advance();
  }
  bytes ? (void)(out += (char)value) : appendUtf8(out, value);
}

void Lexer::op() {
  SourceLoc begin = here();
  std::string_view rest = std::string_view(text_).substr(pos_);
  static const auto operators = byFirstByte(kOperators);
  unsigned char first = (unsigned char)rest[0];
  for (std::string_view candidate : operators[first < 128 ? first : 0]) { // (0: none)
    if (rest.substr(0, candidate.size()) != candidate)
      continue;
    advance(candidate.size());
    if (candidate == ":=")
      error(begin, here(),
            "unsupported Python construct: assignment expressions (':=') are not allowed in a "
            "kernel");
    std::string text(candidate);
    bracket(text, begin);
    emit(TokKind::Op, std::move(text), begin);
    return;
  }
  invalidCharacter();
}

// Keeps the stack of open brackets, which suspends the layout tokens.
void Lexer::bracket(const std::string &text, SourceLoc begin) {
  Span span{begin, here()};
  char c = text[0];
  if (text.size() != 1 || !std::strchr("([{)]}", c))
    return;
  if (std::strchr("([{", c)) {
    if (brackets_.size() >= kMaxBrackets)
      error(span.begin, span.end, "too many nested parentheses");
    brackets_.push_back(Bracket{c, span});
    return;
  }
  if (brackets_.empty())
    error(span.begin, span.end, "unmatched '" + text + "'");
  Bracket open = brackets_.back();
  char expected = open.open == '(' ? ')' : open.open == '[' ? ']' : '}';
  if (c != expected)
    error(span.begin, span.end,
          "closing '" + text + "' does not match opening '" + std::string(1, open.open) +
              "' on line " + std::to_string(open.span.begin.line));
  brackets_.pop_back();
}

void Lexer::invalidCharacter() {
  unsigned char c = (unsigned char)peek();
  uint32_t cp = c;
  size_t len = 1;
  if (c >= 0xC0) {
    len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    cp = c & (0x3F >> (len - 1));
    for (size_t i = 1; i < len; ++i)
      cp = (cp << 6) | ((unsigned char)peek(i) & 0x3F);
  }
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", cp);
  std::string shown = (cp >= 0x20 && cp != 0x7F) ? "'" + text_.substr(pos_, len) + "' " : "";
  std::string hint = cp >= 0x80 ? ": only ASCII is allowed outside strings and comments" : "";
  errorHere("invalid character " + shown + "(" + code + ")" + hint);
}

void Lexer::finish() {
  if (!brackets_.empty()) {
    const Bracket &open = brackets_.back();
    error(open.span.begin, open.span.end, "'" + std::string(1, open.open) + "' was never closed");
  }
  SourceLoc at = out_.empty() ? here() : out_.back().span.end;
  if (needsNewline())
    out_.push_back(Token{TokKind::Newline, "", Span{at, SourceLoc{at.line, at.col + 1}}});
  for (size_t i = 1; i < indents_.size(); ++i)
    out_.push_back(Token{TokKind::Dedent, "", Span{at, at}});
  out_.push_back(Token{TokKind::End, "", Span{at, at}});
}

} // namespace

bool isKeyword(const std::string &word) {
  static const auto keywords = byFirstByte(kKeywords);
  if (word.empty() || (unsigned char)word[0] >= 128)
    return false;
  for (std::string_view k : keywords[(unsigned char)word[0]])
    if (word == k)
      return true;
  return false;
}

std::vector<Token> tokenize(const SourcePtr &source) { return Lexer(source).run(); }

} // namespace tilec
