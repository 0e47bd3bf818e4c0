// The syntax tree of the kernel subset of Python. One node struct for
// expressions and one for statements (chibicc style): `kind` says which fields
// are in use. Every node carries the span of source it was parsed from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/diagnostics.h"

namespace tilec {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

enum class ExprKind {
  Name,      // name
  Int,       // intValue (intTooLarge when it does not fit in uint64)
  Float,     // floatValue
  Str,       // name holds the string's value
  Bool,      // boolValue
  None,
  Tuple,     // elts
  List,      // elts
  BinOp,     // a binop b
  UnaryOp,   // unop a
  BoolOp,    // elts joined by boolop (two or more)
  Compare,   // a cmpops[0] elts[0] cmpops[1] elts[1] ...
  IfExp,     // b if a else c
  Call,      // a(elts..., keywords...)
  Attribute, // a.name
  Subscript, // a[b]; several indices make b a Tuple
  Slice,     // a:b:c inside a subscript; missing parts are null
};

enum class BinOpKind { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, MatMul, LShift, RShift, BitAnd, BitOr, BitXor };
enum class UnaryOpKind { Neg, Pos, Invert, Not };
enum class BoolOpKind { And, Or };
enum class CmpOpKind { Eq, NotEq, Lt, LtE, Gt, GtE, Is, IsNot, In, NotIn };

const char *spelling(BinOpKind op);  // "+", "//", ...
const char *spelling(UnaryOpKind op); // "-", "not", ...
const char *spelling(CmpOpKind op);  // "<", "is not", ...

struct Keyword {
  std::string name;
  ExprPtr value;
  Span span;
};

struct Expr {
  ExprKind kind;
  Span span;
  std::string name; // Name id, Attribute name, Str value
  uint64_t intValue = 0;
  bool intTooLarge = false;
  double floatValue = 0;
  bool boolValue = false;
  BinOpKind binop = BinOpKind::Add;
  UnaryOpKind unop = UnaryOpKind::Neg;
  BoolOpKind boolop = BoolOpKind::And;
  std::vector<CmpOpKind> cmpops;
  ExprPtr a, b, c;
  std::vector<ExprPtr> elts;
  std::vector<Keyword> keywords;

  explicit Expr(ExprKind k, Span s) : kind(k), span(s) {}
};

enum class StmtKind {
  Expr,      // value
  Assign,    // targets[0] = targets[1] = ... = value
  AnnAssign, // targets[0]: annotation = value (value may be null)
  AugAssign, // targets[0] op= value
  If,        // if test: body else: orelse (elif is a nested If in orelse)
  For,       // for target in test: body (orelse must be empty)
  While,     // while test: body
  Return,    // return value (null for a bare return; a Tuple for several)
  Pass,
  Break,
  Continue,
  Assert,    // assert test, msg
  Raise,     // raise value (null for a bare raise): an error where sema reaches it
};

struct Stmt {
  StmtKind kind;
  Span span;
  std::vector<ExprPtr> targets;
  ExprPtr value;
  ExprPtr annotation;
  ExprPtr test;
  ExprPtr target;
  ExprPtr msg;
  BinOpKind op = BinOpKind::Add;
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> orelse;

  explicit Stmt(StmtKind k, Span s) : kind(k), span(s) {}
};

struct Param {
  std::string name;
  ExprPtr annotation; // null when absent
  ExprPtr defaultValue; // null when absent
  Span span;
};

struct FunctionDef {
  std::string name;
  std::vector<Param> params;
  std::vector<StmtPtr> body; // the docstring, if any, is removed from here
  std::string docstring;
  ExprPtr returns; // the `-> T` annotation, or null
  std::vector<ExprPtr> decorators;
  Span span; // the `def` line: from `def` to the end of the name
};

// Parses one Python function definition (with its decorators). The text may
// be indented as a whole (a method or nested function); the indentation of the
// first non-blank line is the base. Throws CompileError on a syntax error or a
// construct outside the kernel subset (class, lambda, with, try, import,
// comprehensions, ...), pointing at it.
std::unique_ptr<FunctionDef> parseFunction(const SourcePtr &source);
// The tree of `source`, parsed at its first use in the process and shared by
// every later compile of the same text, file and first line (an autotuner's
// configs, a kernel's specializations, a helper every kernel calls). Errors
// are not kept: a text that does not parse throws each time.
std::shared_ptr<const FunctionDef> parsedFunction(const SourcePtr &source);

// Prints the tree back as indented text, one node per line; for tests.
std::string dumpAst(const FunctionDef &fn);

// The same, with the full span (@line:col-line:col) of every node; for tests of spans.
std::string dumpAstWithSpans(const FunctionDef &fn);

} // namespace tilec
