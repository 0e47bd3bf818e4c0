// User-facing compile errors: a message anchored at a source location, printed
// as `file:line:col: error: message`, the source line and a caret.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tilec {

// One kernel source text: a function's code cut out of a Python file.
// `firstLine` is the file line of the text's line 1, so errors name file lines.
struct Source {
  std::string filename;
  std::string text;
  int firstLine = 1;

  // The text of 1-based line `line` of `text`, without its newline.
  std::string lineText(int line) const;
};
using SourcePtr = std::shared_ptr<const Source>;

// A position in a Source: 1-based line and column of the text.
struct SourceLoc {
  int line = 0;
  int col = 0;
};

// A half-open range of source, as the parser saw it.
struct Span {
  SourceLoc begin;
  SourceLoc end;
};

// Where a diagnostic points: the source and the span inside it.
struct Location {
  SourcePtr source;
  Span span;
  int fileLine() const { return source ? source->firstLine + span.begin.line - 1 : 0; }
};

// A user error in a kernel. `notes` hold the call chain when the error is
// inside an inlined @jit function ("in call to 'helper' from here").
class CompileError : public std::runtime_error {
public:
  CompileError(Location loc, std::string message);

  const Location &location() const { return loc_; }
  const std::string &message() const { return message_; }
  void addNote(Location loc, std::string note);

  // The full text: every location line, its source line and a caret.
  std::string formatted() const { return text_; }
  const char *what() const noexcept override { return text_.c_str(); }

private:
  Location loc_;
  std::string message_;
  std::vector<std::pair<Location, std::string>> notes_;
  std::string text_;
};

[[noreturn]] void fail(const Location &loc, const std::string &message);

} // namespace tilec

namespace tilec {

// A compiler bug, never a user error: the message says what invariant broke.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

} // namespace tilec

#define TILEC_ASSERT(cond, msg)                                                                    \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      throw ::tilec::InternalError(std::string("internal error: ") + (msg) + " (" __FILE__ ":" +  \
                                   std::to_string(__LINE__) + ")");                                \
  } while (0)
