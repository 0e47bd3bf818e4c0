// Reads the text form of Tile IR back into a Function.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ir/ir.h"

namespace tilec {

// A backend's reader of its layout encodings (`#kind<...>`, as Encoding::str
// writes them): null for text it does not take.
using EncodingParser = std::function<std::shared_ptr<const Encoding>(const std::string &text)>;

// Throws CompileError (located in the IR text, file name `filename`) on bad
// input. GPU IR (encodings, and their aliases ahead of the function) needs
// `encodings`.
std::unique_ptr<Function> parseIR(const std::string &text, const std::string &filename = "<ir>",
                                  const EncodingParser &encodings = nullptr);

} // namespace tilec
