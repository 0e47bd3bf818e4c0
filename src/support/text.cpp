// Text forms shared by every printer.
#include "support/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tilec {

std::string formatFloat(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  // %g at the fewest digits that read back exactly (to_chars and from_chars:
  // printf's forms without its locale and its cost).
  char buf[64];
  char *end = buf;
  for (int precision = 1; precision <= 17; ++precision) {
    end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, precision).ptr;
    double back = 0;
    std::from_chars(buf, end, back);
    if (back == v)
      break;
  }
  std::string text(buf, end);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string quoteString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

} // namespace tilec
