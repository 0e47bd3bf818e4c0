"""The C++ lexer and parser, through the AST dump (one node per line)."""

import textwrap

import pytest

import tilec
from tilec import _C


def dump(body, params="x"):
    src = f"def k({params}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    return _C.dump_ast(src)


def value_of(body):
    """The dump of the value of the single assignment in `body`."""
    lines = dump(body).splitlines()
    return next(line.strip()[len("value "):] for line in lines if line.strip().startswith("value"))


def test_whole_function_dump():
    src = textwrap.dedent('''\
        @triton.jit(do_not_specialize=[1])
        def k(x_ptr, n, BLOCK: tl.constexpr = 128):
            """doc"""
            for i in tl.range(0, n, 2):
                c += i
            return a, b
        ''')
    assert _C.dump_ast(src) == textwrap.dedent("""\
        FunctionDef k @2:1
          docstring "doc"
          Param x_ptr @2:7
          Param n @2:14
          Param BLOCK @2:17 annotation=(Attribute constexpr (Name tl)) default=(Int 128)
          For @4:5
            target (Name i)
            iter (Call (Attribute range (Name tl)) args=[(Int 0), (Name n), (Int 2)])
            body
              AugAssign += @5:9
                target (Name c)
                value (Name i)
          Return @6:5
            value (Tuple (Name a) (Name b))
        """)


@pytest.mark.parametrize("literal,expected", [
    ("0x1F", "(Int 31)"), ("0o17", "(Int 15)"), ("0b101", "(Int 5)"), ("1_000", "(Int 1000)"),
    ("1.5", "(Float 1.5)"), (".5", "(Float 0.5)"), ("1.", "(Float 1.0)"), ("1e-3", "(Float 0.001)"),
    ("2.5E+2", "(Float 2.5e+02)"), ("True", "(Bool True)"), ("None", "(None)"),
])
def test_number_forms(literal, expected):
    assert value_of(f"y = {literal}\n") == expected


def test_precedence_and_associativity():
    assert value_of("y = -a ** 2 * b + c\n") == (
        "(BinOp + (BinOp * (UnaryOp - (BinOp ** (Name a) (Int 2))) (Name b)) (Name c))")
    assert value_of("y = a - b - c\n") == "(BinOp - (BinOp - (Name a) (Name b)) (Name c))"
    assert value_of("y = a ** b ** c\n") == "(BinOp ** (Name a) (BinOp ** (Name b) (Name c)))"
    assert value_of("y = a & b | c ^ d\n") == (
        "(BinOp | (BinOp & (Name a) (Name b)) (BinOp ^ (Name c) (Name d)))")
    assert value_of("y = not a == b and c\n") == (
        "(BoolOp and (UnaryOp not (Compare (Name a) == (Name b))) (Name c))")


def test_chained_comparison_and_conditional_expression():
    assert value_of("y = p if a < b <= 3 else q\n") == (
        "(IfExp test=(Compare (Name a) < (Name b) <= (Int 3)) body=(Name p) orelse=(Name q))")


def test_subscripts_with_none_and_slices():
    assert value_of("y = x[:, None]\n") == "(Subscript (Name x) (Tuple (Slice) (None)))"
    assert value_of("y = x[None, :]\n") == "(Subscript (Name x) (Tuple (None) (Slice)))"


def test_line_continuation_and_comments():
    body = "y = f(1,  # comment\n      key=2) \\\n    + 3\n"
    assert value_of(body) == "(BinOp + (Call (Name f) args=[(Int 1)] kwargs=[key=(Int 2)]) (Int 3))"


def test_adjacent_strings_concatenate():
    assert value_of("y = 'ab' \"cd\"\n") == '(Str "abcd")'


def test_indented_source_of_a_method():
    src = "    def k(self):\n        return 1\n"
    assert _C.dump_ast(src).splitlines()[0] == "FunctionDef k @1:5"


def test_elif_is_a_nested_if():
    lines = dump("if a:\n    pass\nelif b:\n    pass\nelse:\n    pass\n").splitlines()
    assert [line.strip().split(" @")[0] for line in lines if line.strip().startswith("If")] == [
        "If", "If"]


@pytest.mark.parametrize("body,message", [
    ("try:\n    pass\nexcept E:\n    pass\n", "unsupported Python construct: 'try'"),
    ("import os\n", "unsupported Python construct"),
    ("y = [i for i in r]\n", "unsupported Python construct"),
    ("y = {1: 2}\n", "unsupported Python construct"),
    ("y = 1j\n", "complex numbers are not supported"),
    ("y = f'{x}'\n", "f-strings are not supported"),
    ("y = 'abc\n", "unterminated string literal"),
    ("if x\n    pass\n", "expected ':'"),
])
def test_syntax_errors(body, message):
    with pytest.raises(_C.CompilationError, match=message):
        dump(body)


def test_compilation_error_is_the_public_class():
    assert issubclass(tilec.CompilationError, Exception)


def test_an_fstring_in_a_decorator_is_skipped_with_it():
    """Decorators are applied by Python before tilec sees the kernel: an f-string
    there is fine; one in the kernel's body is not."""
    src = '@decorate(name=f"tl.{kind}int{width}")\ndef k(x):\n    return x\n'
    assert _C.dump_ast(src).splitlines()[0].startswith("FunctionDef k")
    with pytest.raises(_C.CompilationError, match="f-strings are not supported"):
        _C.dump_ast('def k(x):\n    y = f"{x}"\n')


def _exec_kernel(text, filename):
    """The @jit kernel `k` that exec() of `text` makes, as if from `filename`."""
    scope = {"tilec": tilec, "tl": tilec.language}
    exec(compile(text, filename, "exec"), scope)
    return scope["k"]


def test_a_parsed_tree_serves_only_its_own_text():
    """A compile reuses the tree of a text parsed before (kernels, the helpers
    they call): only for the same text, file and first line. A kernel made
    again with another body from the same place runs its new body, and one
    that does not parse fails every time, at its line."""
    import torch

    template = ("@tilec.jit\ndef helper(x):\n    return x {op} 3\n\n"
                "@tilec.jit\ndef k(x_ptr, y_ptr, n, B: tl.constexpr):\n"
                "    o = tl.arange(0, B)\n"
                "    tl.store(y_ptr + o, helper(tl.load(x_ptr + o, mask=o < n)), mask=o < n)\n")
    x = torch.randn(37)
    for op, expected in [("+", x + 3), ("*", x * 3), ("+", x + 3), ("-", x - 3)]:
        y = torch.zeros(37)
        _exec_kernel(template.format(op=op), "<generated>")[(1,)](x, y, 37, B=64)
        torch.testing.assert_close(y, expected)
    broken = "@tilec.jit\ndef k(x_ptr, n):\n    y = [i for i in range(n)]\n"
    for _ in range(2):
        with pytest.raises(tilec.CompilationError, match=r"<broken>:3:.*unsupported"):
            _exec_kernel(broken, "<broken>")[(1,)](x, 37)


def test_the_ir_before_passes_is_made_when_read():
    """asm['tileir-sema'], the Tile IR as sema built it (before common
    subexpressions are merged), is not printed by a compile but when first read."""
    import torch

    k = _exec_kernel("@tilec.jit\ndef k(x_ptr, n, B: tl.constexpr):\n"
                     "    o = tl.arange(0, B)\n"
                     "    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)\n",
                     "<sema>")
    compiled = k[(1,)](torch.zeros(40), 40, B=32)
    assert "tileir-sema" in compiled.asm and not dict.__contains__(compiled.asm, "tileir-sema")
    before, after = compiled.asm["tileir-sema"], compiled.asm["tileir"]
    assert before.count("cmp_lt(") == 2 and after.count("cmp_lt(") == 1
    assert compiled.asm["tileir-sema"] is before
