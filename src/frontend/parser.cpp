// The recursive-descent parser for the kernel subset of Python: tokens to the AST of ast.h.
// Each parse function handles one grammar rule, written in a comment above it.
#include <algorithm>
#include <initializer_list>
#include <mutex>
#include <unordered_map>

#include "frontend/ast.h"
#include "frontend/lexer.h"

namespace tilec {

namespace {

struct BinOpToken {
  const char *text;
  BinOpKind op;
};

const BinOpToken kAugAssignOps[] = {
    {"+=", BinOpKind::Add},     {"-=", BinOpKind::Sub},       {"*=", BinOpKind::Mul},
    {"/=", BinOpKind::Div},     {"//=", BinOpKind::FloorDiv}, {"%=", BinOpKind::Mod},
    {"**=", BinOpKind::Pow},    {"@=", BinOpKind::MatMul},    {"<<=", BinOpKind::LShift},
    {">>=", BinOpKind::RShift}, {"&=", BinOpKind::BitAnd},    {"|=", BinOpKind::BitOr},
    {"^=", BinOpKind::BitXor}};

// Statements that begin with these keywords are outside the kernel subset.
const std::pair<const char *, const char *> kUnsupportedStatements[] = {
    {"class", "class definitions"},          {"def", "nested function definitions"},
    {"@", "nested function definitions"},    {"async", "'async' functions and statements"},
    {"with", "'with' statements"},           {"try", "'try' statements"},
    {"import", "'import' statements"},
    {"from", "'import' statements"},         {"global", "'global' declarations"},
    {"nonlocal", "'nonlocal' declarations"}, {"del", "'del' statements"},
};

// Bound the recursion of the parser and of every later walk over the tree, so that absurd input
// cannot exhaust the stack.
const int kMaxExprDepth = 1000; // nested calls of the recursive expression rules
const int kMaxExprHeight = 500; // nodes on the longest path from an expression's root
const int kMaxStmtDepth = 200;  // nested compound statements, 'elif' clauses included

bool isLayout(TokKind kind) {
  return kind == TokKind::Newline || kind == TokKind::Indent || kind == TokKind::Dedent ||
         kind == TokKind::End;
}

// How an expression that cannot be assigned to is named in errors.
std::string describeForAssignment(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Call:
    return "a function call";
  case ExprKind::Int:
  case ExprKind::Float:
  case ExprKind::Str:
    return "a literal";
  case ExprKind::Bool:
    return e.boolValue ? "True" : "False";
  case ExprKind::None:
    return "None";
  case ExprKind::Compare:
    return "a comparison";
  case ExprKind::IfExp:
    return "a conditional expression";
  case ExprKind::Tuple:
    return "a tuple";
  case ExprKind::List:
    return "a list";
  case ExprKind::Name:
  case ExprKind::Attribute:
  case ExprKind::Subscript:
  case ExprKind::BinOp:
  case ExprKind::UnaryOp:
  case ExprKind::BoolOp:
  case ExprKind::Slice:
    break;
  }
  return "an expression";
}

bool isSingleTarget(const Expr &e) {
  return e.kind == ExprKind::Name || e.kind == ExprKind::Attribute || e.kind == ExprKind::Subscript;
}

class Parser {
public:
  explicit Parser(const SourcePtr &source) : source_(source), toks_(tokenize(source)) {}
  std::unique_ptr<FunctionDef> parse() { return function(); }

private:
  // Token cursor.
  const Token &tok() const { return toks_[pos_]; }
  const Token &peekTok(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool is(TokKind kind) const { return tok().kind == kind; }
  // (Compared in place: every level of the expression grammar asks this of
  // each token, and a library compare costs a strlen and a call each time.)
  static bool isWord(const Token &t, const char *s) {
    if (t.kind != TokKind::Op && t.kind != TokKind::Keyword)
      return false;
    size_t i = 0;
    for (; s[i]; ++i)
      if (i == t.text.size() || t.text[i] != s[i])
        return false;
    return i == t.text.size();
  }
  bool equal(const char *s) const { return isWord(tok(), s); }
  const Token &next();
  bool consume(const char *s);
  void expect(const char *s, const std::string &message);
  SourceLoc start() const { return tok().span.begin; }
  Span spanFrom(SourceLoc begin) const { return Span{begin, prevEnd_}; }
  ExprPtr newExpr(ExprKind kind, SourceLoc begin) const {
    return std::make_unique<Expr>(kind, spanFrom(begin));
  }
  StmtPtr newStmt(StmtKind kind, SourceLoc begin) const {
    return std::make_unique<Stmt>(kind, spanFrom(begin));
  }
  bool startsExpr() const;
  ExprPtr checkHeight(ExprPtr e);

  // Errors.
  [[noreturn]] void errorAt(const Span &span, const std::string &message) const;
  [[noreturn]] void error(const Token &t, const std::string &message) const;
  [[noreturn]] void unsupported(const Token &t, const std::string &what) const;
  void rejectComprehension(const char *what) const;
  void checkTarget(const Expr &e) const;

  // Function definition.
  std::unique_ptr<FunctionDef> function();
  bool decorators();
  void params(FunctionDef &fn);
  Param param();
  void checkParam(const FunctionDef &fn, const Param &p) const;
  static void takeDocstring(FunctionDef &fn);

  // Statements.
  std::vector<StmtPtr> block(const std::string &what);
  void statement(std::vector<StmtPtr> &out);
  void rejectStatement() const;
  bool isMatchStatement() const;
  void simpleStatements(std::vector<StmtPtr> &out);
  StmtPtr simpleStatement();
  StmtPtr ifStatement();
  StmtPtr forStatement();
  StmtPtr whileStatement();
  std::vector<StmtPtr> loopBody(const std::string &what);
  StmtPtr returnStatement();
  StmtPtr assertStatement();
  StmtPtr raiseStatement();
  StmtPtr jumpStatement(StmtKind kind);
  StmtPtr expressionStatement();
  StmtPtr annotatedAssignment(SourceLoc begin, ExprPtr target);
  StmtPtr augmentedAssignment(SourceLoc begin, ExprPtr target, BinOpKind op);

  // Expressions.
  ExprPtr exprList();
  ExprPtr targetList();
  ExprPtr expr();
  ExprPtr orTest();
  ExprPtr andTest();
  ExprPtr boolOp(ExprPtr (Parser::*operand)(), const char *word, BoolOpKind op);
  ExprPtr notTest();
  ExprPtr comparison();
  bool compareOp(CmpOpKind &op);
  ExprPtr bitOr();
  ExprPtr bitXor();
  ExprPtr bitAnd();
  ExprPtr shift();
  ExprPtr sum();
  ExprPtr term();
  ExprPtr leftAssoc(ExprPtr (Parser::*operand)(), std::initializer_list<BinOpToken> ops);
  ExprPtr factor();
  ExprPtr power();
  ExprPtr primary();
  ExprPtr attribute(ExprPtr value, SourceLoc begin);
  ExprPtr call(ExprPtr func, SourceLoc begin);
  void argument(Expr &call);
  ExprPtr subscript(ExprPtr value, SourceLoc begin);
  ExprPtr slice();
  ExprPtr atom();
  ExprPtr literal();
  ExprPtr keywordAtom();
  ExprPtr operatorAtom();
  ExprPtr strings();
  ExprPtr parenthesized();
  ExprPtr list();
  [[noreturn]] void braces();

  // Counts the nesting of recursive rules while one of them runs; fails past `limit`.
  class DepthGuard {
  public:
    DepthGuard(Parser &p, int &depth, int limit, const char *message) : depth_(depth) {
      if (++depth_ > limit)
        p.error(p.tok(), message);
    }
    DepthGuard(const DepthGuard &) = delete;
    ~DepthGuard() { --depth_; }

  private:
    int &depth_;
  };
  DepthGuard exprGuard() {
    return DepthGuard(*this, exprDepth_, kMaxExprDepth, "expression is too deeply nested");
  }
  DepthGuard stmtGuard() {
    return DepthGuard(*this, stmtDepth_, kMaxStmtDepth,
                      "too many nested blocks and 'elif' clauses");
  }

  SourcePtr source_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  SourceLoc prevEnd_{1, 1}; // the end of the last token consumed, layout tokens aside
  int loopDepth_ = 0;
  int exprDepth_ = 0;
  int stmtDepth_ = 0;
  std::unordered_map<const Expr *, int> heights_; // of the nodes with children
};

// ---- Token cursor and errors ----

const Token &Parser::next() {
  const Token &t = toks_[pos_];
  if (t.kind != TokKind::End)
    ++pos_;
  if (!isLayout(t.kind))
    prevEnd_ = t.span.end;
  return t;
}

bool Parser::consume(const char *s) {
  if (!equal(s))
    return false;
  next();
  return true;
}

void Parser::expect(const char *s, const std::string &message) {
  if (!consume(s))
    error(tok(), message);
}

// Whether the current token can begin an expression (starred ones included, to reject them).
bool Parser::startsExpr() const {
  const Token &t = tok();
  switch (t.kind) {
  case TokKind::Name:
  case TokKind::Int:
  case TokKind::Float:
  case TokKind::Str:
    return true;
  case TokKind::Keyword:
    for (const char *w : {"not", "lambda", "await", "yield", "True", "False", "None"})
      if (isWord(t, w))
        return true;
    return false;
  case TokKind::Op:
    for (const char *w : {"(", "[", "{", "-", "+", "~", "*", "**", "..."})
      if (isWord(t, w))
        return true;
    return false;
  case TokKind::Newline:
  case TokKind::Indent:
  case TokKind::Dedent:
  case TokKind::End:
    return false;
  }
  return false;
}

void Parser::errorAt(const Span &span, const std::string &message) const {
  fail(Location{source_, span}, message);
}

void Parser::error(const Token &t, const std::string &message) const { errorAt(t.span, message); }

void Parser::unsupported(const Token &t, const std::string &what) const {
  error(t, "unsupported Python construct: " + what + " are not allowed in a kernel");
}

void Parser::rejectComprehension(const char *what) const {
  if (equal("for") || (equal("async") && isWord(peekTok(), "for")))
    unsupported(tok(), what);
}

// target = NAME | attribute | subscript | "(" targets ")" | "[" targets "]"
void Parser::checkTarget(const Expr &e) const {
  if (isSingleTarget(e))
    return;
  if (e.kind != ExprKind::Tuple && e.kind != ExprKind::List)
    errorAt(e.span, "cannot assign to " + describeForAssignment(e));
  for (const ExprPtr &elt : e.elts)
    checkTarget(*elt);
}

// Records the height of a node built from parsed children; fails when it is too tall.
ExprPtr Parser::checkHeight(ExprPtr e) {
  int height = 0;
  auto see = [&](const ExprPtr &child) {
    if (!child)
      return;
    auto it = heights_.find(child.get());
    height = std::max(height, it == heights_.end() ? 1 : it->second);
  };
  see(e->a);
  see(e->b);
  see(e->c);
  for (const ExprPtr &elt : e->elts)
    see(elt);
  for (const Keyword &k : e->keywords)
    see(k.value);
  if (height + 1 > kMaxExprHeight)
    errorAt(e->span, "expression is too deeply nested");
  heights_[e.get()] = height + 1;
  return e;
}

// ---- Function definition ----

// function = decorator* "def" NAME "(" params ")" ("->" expr)? ":" block
std::unique_ptr<FunctionDef> Parser::function() {
  bool decorated = decorators();
  if (equal("async") || equal("class"))
    unsupported(tok(), equal("class") ? "class definitions" : "'async' functions and statements");
  if (!equal("def"))
    error(tok(), decorated ? "expected 'def' after the decorators"
                           : "expected a function definition ('def')");
  auto fn = std::make_unique<FunctionDef>();
  SourceLoc begin = start();
  next();
  if (!is(TokKind::Name))
    error(tok(), "expected a function name after 'def'");
  fn->name = next().text;
  fn->span = spanFrom(begin);
  expect("(", "expected '(' after the function name");
  params(*fn);
  expect(")", "expected ',' or ')' after a parameter");
  if (consume("->"))
    fn->returns = expr();
  expect(":", "expected ':' after the function signature");
  fn->body = block("the function definition");
  takeDocstring(*fn);
  if (!is(TokKind::End))
    error(tok(), "unexpected code after the end of the function");
  return fn;
}

// decorator = "@" <tokens up to the end of the line>
// Decorators are skipped: the caller has already applied them.
bool Parser::decorators() {
  bool any = false;
  while (equal("@")) {
    any = true;
    next();
    if (is(TokKind::Newline))
      error(tok(), "expected an expression after '@'");
    while (!is(TokKind::Newline) && !is(TokKind::End))
      next();
    next();
  }
  return any;
}

// params = (param ("," param)* ","?)?
void Parser::params(FunctionDef &fn) {
  while (!equal(")")) {
    Param p = param();
    checkParam(fn, p);
    fn.params.push_back(std::move(p));
    if (!consume(","))
      return;
  }
}

// param = NAME (":" expr)? ("=" expr)?
Param Parser::param() {
  if (equal("*") || equal("**"))
    error(tok(), "variadic parameters are not supported in kernels");
  if (equal("/"))
    error(tok(), "positional-only parameters ('/') are not supported in kernels");
  if (!is(TokKind::Name))
    error(tok(), "expected a parameter name");
  Param p;
  SourceLoc begin = start();
  p.name = next().text;
  if (consume(":"))
    p.annotation = expr();
  if (consume("="))
    p.defaultValue = expr();
  p.span = spanFrom(begin);
  return p;
}

void Parser::checkParam(const FunctionDef &fn, const Param &p) const {
  for (const Param &q : fn.params)
    if (q.name == p.name)
      errorAt(p.span, "duplicate parameter '" + p.name + "'");
  if (!p.defaultValue && !fn.params.empty() && fn.params.back().defaultValue)
    errorAt(p.span, "parameter without a default follows parameter with a default");
}

void Parser::takeDocstring(FunctionDef &fn) {
  if (fn.body.empty())
    return;
  const Stmt &first = *fn.body.front();
  if (first.kind != StmtKind::Expr || first.value->kind != ExprKind::Str)
    return;
  fn.docstring = first.value->name;
  fn.body.erase(fn.body.begin());
}

// ---- Statements ----

// block = simple_stmts | NEWLINE INDENT statement+ DEDENT
std::vector<StmtPtr> Parser::block(const std::string &what) {
  std::vector<StmtPtr> body;
  if (!is(TokKind::Newline)) {
    simpleStatements(body);
    return body;
  }
  next();
  if (!is(TokKind::Indent))
    error(tok(), "expected an indented block after " + what);
  next();
  while (!is(TokKind::Dedent) && !is(TokKind::End))
    statement(body);
  next();
  return body;
}

// statement = if_stmt | for_stmt | while_stmt | simple_stmts
void Parser::statement(std::vector<StmtPtr> &out) {
  if (is(TokKind::Indent))
    error(tok(), "unexpected indent");
  rejectStatement();
  if (equal("if"))
    out.push_back(ifStatement());
  else if (equal("for"))
    out.push_back(forStatement());
  else if (equal("while"))
    out.push_back(whileStatement());
  else
    simpleStatements(out);
}

// Fails on statements outside the kernel subset, and on clauses without their statement.
void Parser::rejectStatement() const {
  for (const auto &entry : kUnsupportedStatements)
    if (equal(entry.first))
      unsupported(tok(), entry.second);
  if (isMatchStatement())
    unsupported(tok(), "'match' statements");
  for (const char *clause : {"elif", "else", "except", "finally"})
    if (equal(clause))
      error(tok(), std::string("unexpected '") + clause + "'");
}

// `match` is a soft keyword: a line that starts with it and ends with ':' is a match statement.
bool Parser::isMatchStatement() const {
  if (!is(TokKind::Name) || tok().text != "match")
    return false;
  size_t i = pos_ + 1;
  while (i < toks_.size() && toks_[i].kind != TokKind::Newline)
    ++i;
  return i > pos_ + 1 && isWord(toks_[i - 1], ":");
}

// simple_stmts = simple_stmt (";" simple_stmt)* ";"? NEWLINE
void Parser::simpleStatements(std::vector<StmtPtr> &out) {
  for (;;) {
    out.push_back(simpleStatement());
    if (!consume(";") || is(TokKind::Newline))
      break;
  }
  if (!is(TokKind::Newline))
    error(tok(), "expected a newline or ';' after the statement");
  next();
}

// simple_stmt = "pass" | "break" | "continue" | return_stmt | assert_stmt | raise_stmt
//             | expr_stmt
StmtPtr Parser::simpleStatement() {
  rejectStatement();
  if (equal("pass"))
    return jumpStatement(StmtKind::Pass);
  if (equal("break"))
    return jumpStatement(StmtKind::Break);
  if (equal("continue"))
    return jumpStatement(StmtKind::Continue);
  if (equal("return"))
    return returnStatement();
  if (equal("assert"))
    return assertStatement();
  if (equal("raise"))
    return raiseStatement();
  return expressionStatement();
}

// if_stmt = ("if" | "elif") expr ":" block (if_stmt_from_elif | "else" ":" block)?
StmtPtr Parser::ifStatement() {
  DepthGuard guard = stmtGuard();
  SourceLoc begin = start();
  std::string keyword = next().text;
  ExprPtr test = expr();
  expect(":", "expected ':' after '" + keyword + "' condition");
  std::vector<StmtPtr> body = block("'" + keyword + "'");
  std::vector<StmtPtr> orelse;
  if (equal("elif")) {
    orelse.push_back(ifStatement());
  } else if (consume("else")) {
    expect(":", "expected ':' after 'else'");
    orelse = block("'else'");
  }
  StmtPtr s = newStmt(StmtKind::If, begin);
  s->test = std::move(test);
  s->body = std::move(body);
  s->orelse = std::move(orelse);
  return s;
}

// for_stmt = "for" target_list "in" exprlist ":" block
StmtPtr Parser::forStatement() {
  DepthGuard guard = stmtGuard();
  SourceLoc begin = start();
  next();
  ExprPtr target = targetList();
  checkTarget(*target);
  expect("in", "expected 'in' after the 'for' target");
  ExprPtr iter = exprList();
  expect(":", "expected ':' after 'for' iterable");
  std::vector<StmtPtr> body = loopBody("'for'");
  StmtPtr s = newStmt(StmtKind::For, begin);
  s->target = std::move(target);
  s->test = std::move(iter);
  s->body = std::move(body);
  return s;
}

// while_stmt = "while" expr ":" block
StmtPtr Parser::whileStatement() {
  DepthGuard guard = stmtGuard();
  SourceLoc begin = start();
  next();
  ExprPtr test = expr();
  expect(":", "expected ':' after 'while' condition");
  std::vector<StmtPtr> body = loopBody("'while'");
  StmtPtr s = newStmt(StmtKind::While, begin);
  s->test = std::move(test);
  s->body = std::move(body);
  return s;
}

// The block of a loop, which may not have an `else` clause.
std::vector<StmtPtr> Parser::loopBody(const std::string &what) {
  ++loopDepth_;
  std::vector<StmtPtr> body = block(what);
  --loopDepth_;
  if (equal("else"))
    unsupported(tok(), "'else' clauses on " + what + " loops");
  return body;
}

// return_stmt = "return" exprlist?
StmtPtr Parser::returnStatement() {
  SourceLoc begin = start();
  next();
  ExprPtr value = startsExpr() ? exprList() : nullptr;
  StmtPtr s = newStmt(StmtKind::Return, begin);
  s->value = std::move(value);
  return s;
}

// assert_stmt = "assert" expr ("," expr)?
StmtPtr Parser::assertStatement() {
  SourceLoc begin = start();
  next();
  ExprPtr test = expr();
  ExprPtr msg = consume(",") ? expr() : nullptr;
  StmtPtr s = newStmt(StmtKind::Assert, begin);
  s->test = std::move(test);
  s->msg = std::move(msg);
  return s;
}

// raise_stmt = "raise" (expr ("from" expr)?)?
StmtPtr Parser::raiseStatement() {
  SourceLoc begin = start();
  next();
  StmtPtr s = newStmt(StmtKind::Raise, begin);
  if (!is(TokKind::Newline) && !equal(";")) {
    s->value = expr();
    if (consume("from"))
      s->msg = expr();
  }
  return s;
}

// pass_stmt = "pass";  break_stmt = "break";  continue_stmt = "continue"
StmtPtr Parser::jumpStatement(StmtKind kind) {
  const Token &t = next();
  if (kind != StmtKind::Pass && loopDepth_ == 0)
    error(t, "'" + t.text + "' outside a loop");
  return newStmt(kind, t.span.begin);
}

// expr_stmt = exprlist (":" expr ("=" exprlist)? | augop exprlist | ("=" exprlist)*)
StmtPtr Parser::expressionStatement() {
  SourceLoc begin = start();
  ExprPtr first = exprList();
  if (equal(":"))
    return annotatedAssignment(begin, std::move(first));
  for (const BinOpToken &aug : kAugAssignOps)
    if (equal(aug.text))
      return augmentedAssignment(begin, std::move(first), aug.op);
  if (!equal("=")) {
    StmtPtr s = newStmt(StmtKind::Expr, begin);
    s->value = std::move(first);
    return s;
  }
  std::vector<ExprPtr> targets;
  targets.push_back(std::move(first));
  while (consume("="))
    targets.push_back(exprList());
  ExprPtr value = std::move(targets.back());
  targets.pop_back();
  for (const ExprPtr &target : targets)
    checkTarget(*target);
  StmtPtr s = newStmt(StmtKind::Assign, begin);
  s->targets = std::move(targets);
  s->value = std::move(value);
  return s;
}

// ann_assign = target ":" expr ("=" exprlist)?
StmtPtr Parser::annotatedAssignment(SourceLoc begin, ExprPtr target) {
  if (!isSingleTarget(*target))
    errorAt(target->span, "only a single name, attribute or subscript can be annotated");
  next();
  ExprPtr annotation = expr();
  ExprPtr value = consume("=") ? exprList() : nullptr;
  StmtPtr s = newStmt(StmtKind::AnnAssign, begin);
  s->targets.push_back(std::move(target));
  s->annotation = std::move(annotation);
  s->value = std::move(value);
  return s;
}

// aug_assign = target augop exprlist
// augop = "+=" | "-=" | "*=" | "/=" | "//=" | "%=" | "**=" | "@=" | "<<=" | ">>=" | "&=" | ...
StmtPtr Parser::augmentedAssignment(SourceLoc begin, ExprPtr target, BinOpKind op) {
  if (!isSingleTarget(*target))
    errorAt(target->span, "'" + tok().text + "' needs a name, attribute or subscript on its left");
  next();
  ExprPtr value = exprList();
  StmtPtr s = newStmt(StmtKind::AugAssign, begin);
  s->targets.push_back(std::move(target));
  s->op = op;
  s->value = std::move(value);
  return s;
}

// ---- Expressions ----

// exprlist = expr ("," expr)* ","?     (a comma makes a Tuple)
ExprPtr Parser::exprList() {
  SourceLoc begin = start();
  ExprPtr first = expr();
  if (!equal(","))
    return first;
  std::vector<ExprPtr> elts;
  elts.push_back(std::move(first));
  while (consume(",") && startsExpr())
    elts.push_back(expr());
  ExprPtr tuple = newExpr(ExprKind::Tuple, begin);
  tuple->elts = std::move(elts);
  return checkHeight(std::move(tuple));
}

// target_list = primary ("," primary)* ","?     (a comma makes a Tuple)
ExprPtr Parser::targetList() {
  SourceLoc begin = start();
  ExprPtr first = primary();
  if (!equal(","))
    return first;
  std::vector<ExprPtr> elts;
  elts.push_back(std::move(first));
  while (consume(",") && startsExpr())
    elts.push_back(primary());
  ExprPtr tuple = newExpr(ExprKind::Tuple, begin);
  tuple->elts = std::move(elts);
  return checkHeight(std::move(tuple));
}

// expr = or_test ("if" or_test "else" expr)?
ExprPtr Parser::expr() {
  DepthGuard guard = exprGuard();
  if (equal("lambda"))
    unsupported(tok(), "lambda expressions");
  SourceLoc begin = start();
  ExprPtr body = orTest();
  if (!consume("if"))
    return body;
  ExprPtr test = orTest();
  expect("else", "expected 'else' in the conditional expression");
  ExprPtr orelse = expr();
  ExprPtr e = newExpr(ExprKind::IfExp, begin);
  e->a = std::move(test);
  e->b = std::move(body);
  e->c = std::move(orelse);
  return checkHeight(std::move(e));
}

// or_test = and_test ("or" and_test)*
ExprPtr Parser::orTest() { return boolOp(&Parser::andTest, "or", BoolOpKind::Or); }

// and_test = not_test ("and" not_test)*
ExprPtr Parser::andTest() { return boolOp(&Parser::notTest, "and", BoolOpKind::And); }

// One BoolOp holds all the operands of a chain of the same operator.
ExprPtr Parser::boolOp(ExprPtr (Parser::*operand)(), const char *word, BoolOpKind op) {
  SourceLoc begin = start();
  ExprPtr first = (this->*operand)();
  if (!equal(word))
    return first;
  std::vector<ExprPtr> elts;
  elts.push_back(std::move(first));
  while (consume(word))
    elts.push_back((this->*operand)());
  ExprPtr e = newExpr(ExprKind::BoolOp, begin);
  e->boolop = op;
  e->elts = std::move(elts);
  return checkHeight(std::move(e));
}

// not_test = "not" not_test | comparison
ExprPtr Parser::notTest() {
  DepthGuard guard = exprGuard();
  if (!equal("not"))
    return comparison();
  SourceLoc begin = start();
  next();
  ExprPtr operand = notTest();
  ExprPtr e = newExpr(ExprKind::UnaryOp, begin);
  e->unop = UnaryOpKind::Not;
  e->a = std::move(operand);
  return checkHeight(std::move(e));
}

// comparison = bitor (compop bitor)*
ExprPtr Parser::comparison() {
  SourceLoc begin = start();
  ExprPtr first = bitOr();
  CmpOpKind op;
  if (!compareOp(op))
    return first;
  ExprPtr e = std::make_unique<Expr>(ExprKind::Compare, Span{});
  e->a = std::move(first);
  do {
    e->cmpops.push_back(op);
    e->elts.push_back(bitOr());
  } while (compareOp(op));
  e->span = spanFrom(begin);
  return checkHeight(std::move(e));
}

// compop = "==" | "!=" | "<" | "<=" | ">" | ">=" | "is" "not"? | "not"? "in"
bool Parser::compareOp(CmpOpKind &op) {
  static const std::pair<const char *, CmpOpKind> kSimple[] = {
      {"==", CmpOpKind::Eq}, {"!=", CmpOpKind::NotEq}, {"<", CmpOpKind::Lt}, {"<=", CmpOpKind::LtE},
      {">", CmpOpKind::Gt},  {">=", CmpOpKind::GtE},   {"in", CmpOpKind::In}};
  for (const auto &entry : kSimple) {
    if (consume(entry.first)) {
      op = entry.second;
      return true;
    }
  }
  if (consume("is")) {
    op = consume("not") ? CmpOpKind::IsNot : CmpOpKind::Is;
    return true;
  }
  if (equal("not") && isWord(peekTok(), "in")) {
    next();
    next();
    op = CmpOpKind::NotIn;
    return true;
  }
  return false;
}

// bitor = bitxor ("|" bitxor)*
ExprPtr Parser::bitOr() { return leftAssoc(&Parser::bitXor, {{"|", BinOpKind::BitOr}}); }

// bitxor = bitand ("^" bitand)*
ExprPtr Parser::bitXor() { return leftAssoc(&Parser::bitAnd, {{"^", BinOpKind::BitXor}}); }

// bitand = shift ("&" shift)*
ExprPtr Parser::bitAnd() { return leftAssoc(&Parser::shift, {{"&", BinOpKind::BitAnd}}); }

// shift = sum (("<<" | ">>") sum)*
ExprPtr Parser::shift() {
  return leftAssoc(&Parser::sum, {{"<<", BinOpKind::LShift}, {">>", BinOpKind::RShift}});
}

// sum = term (("+" | "-") term)*
ExprPtr Parser::sum() {
  return leftAssoc(&Parser::term, {{"+", BinOpKind::Add}, {"-", BinOpKind::Sub}});
}

// term = factor (("*" | "/" | "//" | "%" | "@") factor)*
ExprPtr Parser::term() {
  return leftAssoc(&Parser::factor, {{"*", BinOpKind::Mul},
                                     {"/", BinOpKind::Div},
                                     {"//", BinOpKind::FloorDiv},
                                     {"%", BinOpKind::Mod},
                                     {"@", BinOpKind::MatMul}});
}

// A left-associative chain of binary operators from `ops` between operands.
ExprPtr Parser::leftAssoc(ExprPtr (Parser::*operand)(), std::initializer_list<BinOpToken> ops) {
  SourceLoc begin = start();
  ExprPtr lhs = (this->*operand)();
  for (;;) {
    auto hit =
        std::find_if(ops.begin(), ops.end(), [&](const BinOpToken &op) { return equal(op.text); });
    if (hit == ops.end())
      return lhs;
    next();
    ExprPtr rhs = (this->*operand)();
    ExprPtr e = newExpr(ExprKind::BinOp, begin);
    e->binop = hit->op;
    e->a = std::move(lhs);
    e->b = std::move(rhs);
    lhs = checkHeight(std::move(e));
  }
}

// factor = ("+" | "-" | "~") factor | power
ExprPtr Parser::factor() {
  DepthGuard guard = exprGuard();
  UnaryOpKind op;
  if (equal("-"))
    op = UnaryOpKind::Neg;
  else if (equal("+"))
    op = UnaryOpKind::Pos;
  else if (equal("~"))
    op = UnaryOpKind::Invert;
  else
    return power();
  SourceLoc begin = start();
  next();
  ExprPtr operand = factor();
  ExprPtr e = newExpr(ExprKind::UnaryOp, begin);
  e->unop = op;
  e->a = std::move(operand);
  return checkHeight(std::move(e));
}

// power = primary ("**" factor)?
ExprPtr Parser::power() {
  if (equal("await"))
    unsupported(tok(), "'await' expressions");
  SourceLoc begin = start();
  ExprPtr base = primary();
  if (!consume("**"))
    return base;
  ExprPtr exponent = factor();
  ExprPtr e = newExpr(ExprKind::BinOp, begin);
  e->binop = BinOpKind::Pow;
  e->a = std::move(base);
  e->b = std::move(exponent);
  return checkHeight(std::move(e));
}

// primary = atom ("." NAME | "(" args ")" | "[" slices "]")*
ExprPtr Parser::primary() {
  SourceLoc begin = start();
  ExprPtr e = atom();
  for (;;) {
    if (equal("."))
      e = attribute(std::move(e), begin);
    else if (equal("("))
      e = call(std::move(e), begin);
    else if (equal("["))
      e = subscript(std::move(e), begin);
    else
      return e;
  }
}

// attribute = primary "." NAME
ExprPtr Parser::attribute(ExprPtr value, SourceLoc begin) {
  next();
  if (!is(TokKind::Name))
    error(tok(), "expected an attribute name after '.'");
  std::string name = next().text;
  ExprPtr e = newExpr(ExprKind::Attribute, begin);
  e->name = std::move(name);
  e->a = std::move(value);
  return checkHeight(std::move(e));
}

// call = primary "(" (arg ("," arg)* ","?)? ")"
ExprPtr Parser::call(ExprPtr func, SourceLoc begin) {
  next();
  ExprPtr e = std::make_unique<Expr>(ExprKind::Call, Span{});
  e->a = std::move(func);
  while (!equal(")")) {
    argument(*e);
    if (!consume(","))
      break;
  }
  expect(")", "expected ',' or ')' after a call argument");
  e->span = spanFrom(begin);
  return checkHeight(std::move(e));
}

// arg = NAME "=" expr | expr
void Parser::argument(Expr &call) {
  SourceLoc begin = start();
  if (is(TokKind::Name) && isWord(peekTok(), "=")) {
    std::string name = next().text;
    next();
    ExprPtr value = expr();
    for (const Keyword &k : call.keywords)
      if (k.name == name)
        errorAt(spanFrom(begin), "keyword argument '" + name + "' repeated");
    call.keywords.push_back(Keyword{name, std::move(value), spanFrom(begin)});
    return;
  }
  ExprPtr value = expr();
  rejectComprehension("generator expressions");
  if (equal("="))
    error(tok(), "expected a parameter name before '=' in a keyword argument");
  if (!call.keywords.empty())
    errorAt(value->span, "positional argument follows keyword argument");
  call.elts.push_back(std::move(value));
}

// subscript = primary "[" slice ("," slice)* ","? "]"     (several make a Tuple)
ExprPtr Parser::subscript(ExprPtr value, SourceLoc begin) {
  next();
  SourceLoc indexBegin = start();
  ExprPtr index = slice();
  if (equal(",")) {
    std::vector<ExprPtr> elts;
    elts.push_back(std::move(index));
    while (consume(",") && !equal("]"))
      elts.push_back(slice());
    index = newExpr(ExprKind::Tuple, indexBegin);
    index->elts = std::move(elts);
    index = checkHeight(std::move(index));
  }
  expect("]", "expected ',' or ']' after a subscript");
  ExprPtr e = newExpr(ExprKind::Subscript, begin);
  e->a = std::move(value);
  e->b = std::move(index);
  return checkHeight(std::move(e));
}

// slice = expr | expr? ":" expr? (":" expr?)?
ExprPtr Parser::slice() {
  SourceLoc begin = start();
  ExprPtr lower = equal(":") ? nullptr : expr();
  if (!consume(":"))
    return lower;
  auto part = [&]() { return equal(":") || equal(",") || equal("]") ? nullptr : expr(); };
  ExprPtr upper = part();
  ExprPtr step = consume(":") ? part() : nullptr;
  ExprPtr e = newExpr(ExprKind::Slice, begin);
  e->a = std::move(lower);
  e->b = std::move(upper);
  e->c = std::move(step);
  return checkHeight(std::move(e));
}

// atom = NAME | NUMBER | STRING+ | "True" | "False" | "None" | paren | list
ExprPtr Parser::atom() {
  switch (tok().kind) {
  case TokKind::Name: {
    SourceLoc begin = start();
    std::string name = next().text;
    ExprPtr e = newExpr(ExprKind::Name, begin);
    e->name = std::move(name);
    return e;
  }
  case TokKind::Int:
  case TokKind::Float:
    return literal();
  case TokKind::Str:
    return strings();
  case TokKind::Keyword:
    return keywordAtom();
  case TokKind::Op:
    return operatorAtom();
  case TokKind::Newline:
  case TokKind::Indent:
  case TokKind::Dedent:
  case TokKind::End:
    break;
  }
  error(tok(), "expected an expression");
}

// number = INT | FLOAT
ExprPtr Parser::literal() {
  const Token &t = next();
  ExprPtr e = newExpr(t.kind == TokKind::Int ? ExprKind::Int : ExprKind::Float, t.span.begin);
  e->intValue = t.intValue;
  e->intTooLarge = t.intTooLarge;
  e->floatValue = t.floatValue;
  return e;
}

// keyword_atom = "True" | "False" | "None"
ExprPtr Parser::keywordAtom() {
  if (equal("yield"))
    unsupported(tok(), "'yield' expressions");
  if (equal("lambda"))
    unsupported(tok(), "lambda expressions");
  if (equal("await"))
    unsupported(tok(), "'await' expressions");
  bool isBool = equal("True") || equal("False");
  if (!isBool && !equal("None"))
    error(tok(), "expected an expression");
  const Token &t = next();
  ExprPtr e = newExpr(isBool ? ExprKind::Bool : ExprKind::None, t.span.begin);
  e->boolValue = t.text == "True";
  return e;
}

// operator_atom = paren | list     (braces, '*', '**' and '...' are rejected)
ExprPtr Parser::operatorAtom() {
  if (equal("("))
    return parenthesized();
  if (equal("["))
    return list();
  if (equal("{"))
    braces();
  if (equal("*"))
    unsupported(tok(), "starred expressions");
  if (equal("**"))
    unsupported(tok(), "'**' unpacking expressions");
  if (equal("..."))
    unsupported(tok(), "'...' (Ellipsis) literals");
  error(tok(), "expected an expression");
}

// strings = STRING+     (adjacent literals are concatenated)
ExprPtr Parser::strings() {
  SourceLoc begin = start();
  std::string value;
  while (is(TokKind::Str)) {
    if (tok().fstring)
      error(tok(), "f-strings are not supported in kernels");
    value += next().text;
  }
  ExprPtr e = newExpr(ExprKind::Str, begin);
  e->name = std::move(value);
  return e;
}

// paren = "(" ")" | "(" expr ")" | "(" expr "," (expr ("," expr)* ","?)? ")"
ExprPtr Parser::parenthesized() {
  SourceLoc begin = start();
  next();
  if (consume(")"))
    return newExpr(ExprKind::Tuple, begin);
  ExprPtr first = expr();
  rejectComprehension("generator expressions");
  if (consume(")"))
    return first;
  if (!equal(","))
    error(tok(), "expected ',' or ')' in parentheses");
  std::vector<ExprPtr> elts;
  elts.push_back(std::move(first));
  while (consume(",") && !equal(")"))
    elts.push_back(expr());
  expect(")", "expected ',' or ')' in a tuple");
  ExprPtr e = newExpr(ExprKind::Tuple, begin);
  e->elts = std::move(elts);
  return checkHeight(std::move(e));
}

// list = "[" (expr ("," expr)* ","?)? "]"
ExprPtr Parser::list() {
  SourceLoc begin = start();
  next();
  std::vector<ExprPtr> elts;
  while (!equal("]")) {
    elts.push_back(expr());
    if (elts.size() == 1)
      rejectComprehension("list comprehensions");
    if (!consume(","))
      break;
  }
  expect("]", "expected ',' or ']' in a list");
  ExprPtr e = newExpr(ExprKind::List, begin);
  e->elts = std::move(elts);
  return checkHeight(std::move(e));
}

// braces = "{" ... "}"     (dict and set displays and comprehensions, all rejected)
void Parser::braces() {
  const Token &open = next();
  if (equal("}") || equal("**"))
    unsupported(open, "dict literals");
  expr();
  if (consume(":")) {
    expr();
    rejectComprehension("dict comprehensions");
    unsupported(open, "dict literals");
  }
  rejectComprehension("set comprehensions");
  unsupported(open, "set literals");
}

} // namespace

std::unique_ptr<FunctionDef> parseFunction(const SourcePtr &source) {
  return Parser(source).parse();
}

std::shared_ptr<const FunctionDef> parsedFunction(const SourcePtr &source) {
  // Compiles run on several threads at once (the GIL is released around them).
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const FunctionDef>> trees;
  std::string key =
      source->filename + '\n' + std::to_string(source->firstLine) + '\n' + source->text;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = trees.find(key); it != trees.end())
      return it->second;
  }
  std::shared_ptr<const FunctionDef> tree = parseFunction(source);
  std::lock_guard<std::mutex> lock(mutex);
  if (trees.size() >= 1024) // a process that makes kernels from generated text without end
    trees.clear();
  return trees.emplace(std::move(key), std::move(tree)).first->second;
}

} // namespace tilec
