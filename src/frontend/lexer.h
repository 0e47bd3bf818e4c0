// The tokenizer for kernel sources: Python tokens, with NEWLINE/INDENT/DEDENT for the layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/diagnostics.h"

namespace tilec {

enum class TokKind {
  Name,    // an identifier that is not a keyword
  Keyword, // `if`, `def`, `True`, ...
  Op,      // an operator or delimiter: `+`, `//=`, `(`, `->`, ...
  Int,     // intValue (intTooLarge when it does not fit in uint64)
  Float,   // floatValue
  Str,     // text holds the decoded value
  Newline, // the end of a logical line
  Indent,  // the start of a deeper indented block
  Dedent,  // the end of an indented block
  End,     // the end of the source
};

struct Token {
  TokKind kind = TokKind::End;
  std::string text; // the spelling of a name, keyword, operator or number; a string's value
  Span span;
  uint64_t intValue = 0;
  bool intTooLarge = false;
  double floatValue = 0;
  bool fstring = false; // an f-string: lexed (a decorator may hold one), refused as an expression
};

// Splits the whole source into tokens. The indentation of the first non-blank line is the base
// level; the result ends with a Newline, the Dedents back to the base level, and End. Throws
// CompileError on malformed input (bad numbers, unterminated strings, unbalanced brackets,
// inconsistent dedents, `:=`).
std::vector<Token> tokenize(const SourcePtr &source);

// Whether `word` is a reserved Python keyword (soft keywords such as `match` are not).
bool isKeyword(const std::string &word);

} // namespace tilec
