// Formatting of user-facing compile errors.
#include "support/diagnostics.h"

#include <sstream>

namespace tilec {

std::string Source::lineText(int line) const {
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos)
      return "";
    ++pos;
  }
  size_t end = text.find('\n', pos);
  return text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

static std::string describe(const Location &loc, const std::string &kind,
                            const std::string &message) {
  std::ostringstream out;
  if (!loc.source) {
    out << kind << ": " << message << "\n";
    return out.str();
  }
  out << loc.source->filename << ":" << loc.fileLine() << ":" << loc.span.begin.col << ": "
      << kind << ": " << message << "\n";
  std::string line = loc.source->lineText(loc.span.begin.line);
  out << "    " << line << "\n    ";
  int col = std::max(1, loc.span.begin.col);
  for (int i = 1; i < col && i <= (int)line.size(); ++i)
    out << (line[i - 1] == '\t' ? '\t' : ' ');
  int width = 1;
  if (loc.span.end.line == loc.span.begin.line && loc.span.end.col > col)
    width = loc.span.end.col - col;
  out << "^" << std::string(width - 1, '~') << "\n";
  return out.str();
}

CompileError::CompileError(Location loc, std::string message)
    : std::runtime_error(message), loc_(std::move(loc)), message_(std::move(message)) {
  text_ = describe(loc_, "error", message_);
}

void CompileError::addNote(Location loc, std::string note) {
  text_ += describe(loc, "note", note);
  notes_.emplace_back(std::move(loc), std::move(note));
}

void fail(const Location &loc, const std::string &message) { throw CompileError(loc, message); }

} // namespace tilec
