// The tilec command line tool: checks what the compiler does with a file.
//   tilec --dump-ast kernel.py      prints the syntax tree of one function
//   tilec --passes=fold,cse x.tir   parses Tile IR, runs passes, prints it
#include <fstream>
#include <iostream>
#include <sstream>

#include "frontend/ast.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"

using namespace tilec;

static std::string readFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

static std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty())
      out.push_back(item);
  return out;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: tilec --dump-ast FILE.py | tilec --passes=P1,P2 FILE.tir\n";
    return 2;
  }
  std::string mode = argv[1], path = argv[2];
  try {
    std::string text = readFile(path);
    if (mode == "--dump-ast") {
      auto src = std::make_shared<Source>();
      src->filename = path;
      src->text = text;
      std::cout << dumpAst(*parseFunction(src));
      return 0;
    }
    if (mode.rfind("--passes=", 0) == 0) {
      auto fn = parseIR(text, path);
      verify(*fn);
      runPasses(*fn, split(mode.substr(9)));
      verify(*fn);
      std::cout << printFunction(*fn);
      return 0;
    }
    std::cerr << "unknown mode " << mode << "\n";
    return 2;
  } catch (const std::exception &e) {
    std::cerr << e.what();
    return 1;
  }
}
