// Text forms shared by every printer: floats that read back exactly, quoted
// strings.
#pragma once

#include <string>

namespace tilec {

// The shortest %g form that reads back as the same double, always with a '.'
// or an exponent so it reads back as a float; "nan", "inf", "-inf".
std::string formatFloat(double v);

// `s` in double quotes, with \" \\ \n \t and \xHH escapes.
std::string quoteString(const std::string &s);

} // namespace tilec
