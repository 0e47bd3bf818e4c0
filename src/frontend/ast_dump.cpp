// Prints the AST as indented text for golden tests: statements one per line, expressions as
// S-expressions.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "frontend/ast.h"
#include "support/text.h"

namespace tilec {

namespace {

const char *stmtName(StmtKind kind) {
  switch (kind) {
  case StmtKind::Expr:
    return "Expr";
  case StmtKind::Assign:
    return "Assign";
  case StmtKind::AnnAssign:
    return "AnnAssign";
  case StmtKind::AugAssign:
    return "AugAssign";
  case StmtKind::If:
    return "If";
  case StmtKind::For:
    return "For";
  case StmtKind::While:
    return "While";
  case StmtKind::Return:
    return "Return";
  case StmtKind::Pass:
    return "Pass";
  case StmtKind::Break:
    return "Break";
  case StmtKind::Continue:
    return "Continue";
  case StmtKind::Assert:
    return "Assert";
  case StmtKind::Raise:
    return "Raise";
  }
  return "?";
}

class Dumper {
public:
  explicit Dumper(bool fullSpans) : fullSpans_(fullSpans) {}
  std::string function(const FunctionDef &fn);

private:
  std::string at(const Span &span) const;
  std::string expr(const Expr &e) const;
  std::string exprBody(const Expr &e) const;
  std::string list(const std::vector<ExprPtr> &elts, const char *sep) const;
  std::string optional(const char *label, const ExprPtr &e) const;
  void line(int depth, const std::string &text);
  void field(int depth, const char *label, const ExprPtr &e);
  void stmts(int depth, const char *label, const std::vector<StmtPtr> &body);
  void stmt(int depth, const Stmt &s);

  bool fullSpans_;
  std::ostringstream out_;
};

std::string Dumper::at(const Span &span) const {
  std::string text = "@" + std::to_string(span.begin.line) + ":" + std::to_string(span.begin.col);
  if (fullSpans_)
    text += "-" + std::to_string(span.end.line) + ":" + std::to_string(span.end.col);
  return text;
}

std::string Dumper::expr(const Expr &e) const {
  std::string text = "(" + exprBody(e);
  if (fullSpans_)
    text += " " + at(e.span);
  return text + ")";
}

std::string Dumper::list(const std::vector<ExprPtr> &elts, const char *sep) const {
  std::string text;
  for (size_t i = 0; i < elts.size(); ++i)
    text += (i ? sep : "") + expr(*elts[i]);
  return text;
}

// " label=(...)" when `e` is present, else nothing.
std::string Dumper::optional(const char *label, const ExprPtr &e) const {
  return e ? std::string(" ") + label + "=" + expr(*e) : "";
}

std::string Dumper::exprBody(const Expr &e) const {
  switch (e.kind) {
  case ExprKind::Name:
    return "Name " + e.name;
  case ExprKind::Int:
    return "Int " + (e.intTooLarge ? std::string("<too large>") : std::to_string(e.intValue));
  case ExprKind::Float:
    return "Float " + formatFloat(e.floatValue);
  case ExprKind::Str:
    return "Str " + quoteString(e.name);
  case ExprKind::Bool:
    return e.boolValue ? "Bool True" : "Bool False";
  case ExprKind::None:
    return "None";
  case ExprKind::Tuple:
    return e.elts.empty() ? "Tuple" : "Tuple " + list(e.elts, " ");
  case ExprKind::List:
    return e.elts.empty() ? "List" : "List " + list(e.elts, " ");
  case ExprKind::BinOp:
    return std::string("BinOp ") + spelling(e.binop) + " " + expr(*e.a) + " " + expr(*e.b);
  case ExprKind::UnaryOp:
    return std::string("UnaryOp ") + spelling(e.unop) + " " + expr(*e.a);
  case ExprKind::BoolOp:
    return std::string("BoolOp ") + (e.boolop == BoolOpKind::And ? "and " : "or ") +
           list(e.elts, " ");
  case ExprKind::Compare: {
    std::string text = "Compare " + expr(*e.a);
    for (size_t i = 0; i < e.cmpops.size(); ++i)
      text += std::string(" ") + spelling(e.cmpops[i]) + " " + expr(*e.elts[i]);
    return text;
  }
  case ExprKind::IfExp:
    return "IfExp" + optional("test", e.a) + optional("body", e.b) + optional("orelse", e.c);
  case ExprKind::Call: {
    std::string text = "Call " + expr(*e.a);
    if (!e.elts.empty())
      text += " args=[" + list(e.elts, ", ") + "]";
    for (size_t i = 0; i < e.keywords.size(); ++i)
      text += (i ? ", " : " kwargs=[") + e.keywords[i].name + "=" + expr(*e.keywords[i].value);
    return e.keywords.empty() ? text : text + "]";
  }
  case ExprKind::Attribute:
    return "Attribute " + e.name + " " + expr(*e.a);
  case ExprKind::Subscript:
    return "Subscript " + expr(*e.a) + " " + expr(*e.b);
  case ExprKind::Slice:
    return "Slice" + optional("lower", e.a) + optional("upper", e.b) + optional("step", e.c);
  }
  return "?";
}

void Dumper::line(int depth, const std::string &text) {
  out_ << std::string(2 * depth, ' ') << text << "\n";
}

void Dumper::field(int depth, const char *label, const ExprPtr &e) {
  if (e)
    line(depth, std::string(label) + " " + expr(*e));
}

void Dumper::stmts(int depth, const char *label, const std::vector<StmtPtr> &body) {
  if (body.empty())
    return;
  line(depth, label);
  for (const StmtPtr &s : body)
    stmt(depth + 1, *s);
}

void Dumper::stmt(int depth, const Stmt &s) {
  std::string head = stmtName(s.kind);
  if (s.kind == StmtKind::AugAssign)
    head += std::string(" ") + spelling(s.op) + "=";
  line(depth, head + " " + at(s.span));
  for (const ExprPtr &target : s.targets)
    field(depth + 1, "target", target);
  field(depth + 1, "target", s.target);
  field(depth + 1, "annotation", s.annotation);
  field(depth + 1, s.kind == StmtKind::For ? "iter" : "test", s.test);
  field(depth + 1, "value", s.value);
  field(depth + 1, "msg", s.msg);
  stmts(depth + 1, "body", s.body);
  stmts(depth + 1, "orelse", s.orelse);
}

std::string Dumper::function(const FunctionDef &fn) {
  line(0, "FunctionDef " + fn.name + " " + at(fn.span));
  for (const ExprPtr &d : fn.decorators)
    field(1, "decorator", d);
  if (!fn.docstring.empty())
    line(1, "docstring " + quoteString(fn.docstring));
  for (const Param &p : fn.params)
    line(1, "Param " + p.name + " " + at(p.span) + optional("annotation", p.annotation) +
                optional("default", p.defaultValue));
  field(1, "returns", fn.returns);
  for (const StmtPtr &s : fn.body)
    stmt(1, *s);
  return out_.str();
}

} // namespace

std::string dumpAst(const FunctionDef &fn) { return Dumper(false).function(fn); }

std::string dumpAstWithSpans(const FunctionDef &fn) { return Dumper(true).function(fn); }

} // namespace tilec
