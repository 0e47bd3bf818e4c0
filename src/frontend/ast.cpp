// How the AST's operators are spelled in Python source.
#include "frontend/ast.h"

namespace tilec {

const char *spelling(BinOpKind op) {
  switch (op) {
  case BinOpKind::Add:
    return "+";
  case BinOpKind::Sub:
    return "-";
  case BinOpKind::Mul:
    return "*";
  case BinOpKind::Div:
    return "/";
  case BinOpKind::FloorDiv:
    return "//";
  case BinOpKind::Mod:
    return "%";
  case BinOpKind::Pow:
    return "**";
  case BinOpKind::MatMul:
    return "@";
  case BinOpKind::LShift:
    return "<<";
  case BinOpKind::RShift:
    return ">>";
  case BinOpKind::BitAnd:
    return "&";
  case BinOpKind::BitOr:
    return "|";
  case BinOpKind::BitXor:
    return "^";
  }
  return "?";
}

const char *spelling(UnaryOpKind op) {
  switch (op) {
  case UnaryOpKind::Neg:
    return "-";
  case UnaryOpKind::Pos:
    return "+";
  case UnaryOpKind::Invert:
    return "~";
  case UnaryOpKind::Not:
    return "not";
  }
  return "?";
}

const char *spelling(CmpOpKind op) {
  switch (op) {
  case CmpOpKind::Eq:
    return "==";
  case CmpOpKind::NotEq:
    return "!=";
  case CmpOpKind::Lt:
    return "<";
  case CmpOpKind::LtE:
    return "<=";
  case CmpOpKind::Gt:
    return ">";
  case CmpOpKind::GtE:
    return ">=";
  case CmpOpKind::Is:
    return "is";
  case CmpOpKind::IsNot:
    return "is not";
  case CmpOpKind::In:
    return "in";
  case CmpOpKind::NotIn:
    return "not in";
  }
  return "?";
}

} // namespace tilec
