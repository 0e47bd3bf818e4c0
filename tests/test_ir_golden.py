"""Golden tests of the Tile IR text form, verifier and passes (tests/ir/*.tir).

Cases are separated by `// -----`. Each may have:
  // RUN: p1,p2        passes to run (none: parse and print; must print back unchanged);
                     gpu-* are the NVIDIA backend's, on the target of
  // TARGET: sm_90a 4  (arch and num_warps; sm_90a and 4 when absent)
  // CHECK: text       must appear, in order, on lines after the previous CHECK's
  // CHECK-NOT: text   must appear nowhere in the output
  // ERROR: text       parsing must fail with this in the message
  // VERIFY-ERROR: text  the verifier must reject the IR with this in the message
"""

import pathlib

import pytest

from tilec import _C

IR_DIR = pathlib.Path(__file__).parent / "ir"


def cases():
    for path in sorted(IR_DIR.glob("*.tir")):
        lines = path.read_text().splitlines()
        start = 0
        for i, line in enumerate(lines + ["// -----"]):
            if line.strip() == "// -----":
                # Blank lines in front keep the case's line numbers those of the file.
                text = "\n" * start + "\n".join(lines[start:i]) + "\n"
                yield pytest.param(path.name, text, id=f"{path.stem}:{start + 1}")
                start = i + 1


def directives(text, name):
    prefix = f"// {name}:"
    return [line.strip()[len(prefix):].strip() for line in text.splitlines()
            if line.strip().startswith(prefix)]


def code_lines(text):
    return [line for line in text.splitlines() if line.strip() and not line.strip().startswith("//")]


@pytest.mark.parametrize("filename,text", list(cases()))
def test_ir_case(filename, text):
    for directive, error in (("ERROR", _C.CompilationError), ("VERIFY-ERROR", _C.InternalError)):
        expected = directives(text, directive)
        if expected:
            with pytest.raises(error) as info:
                _C.run_passes(text, [], filename)
            for e in expected:
                assert e in str(info.value)
            return
    run = directives(text, "RUN")
    passes = [p for p in (run[0].split(",") if run else []) if p]
    target = (directives(text, "TARGET") or ["sm_90a 4"])[0].split()
    out = _C.run_passes(text, passes, filename, arch=target[0], num_warps=int(target[1]))
    checks, check_nots = directives(text, "CHECK"), directives(text, "CHECK-NOT")
    if not passes and not checks:
        assert code_lines(out) == code_lines(text), "the IR did not print back unchanged"
    lines = out.splitlines()
    at = 0
    for c in checks:
        found = next((i for i in range(at, len(lines)) if c in lines[i]), None)
        assert found is not None, f"CHECK not found after line {at}: {c}\n{out}"
        at = found + 1
    for c in check_nots:
        assert c not in out, f"CHECK-NOT found: {c}\n{out}"
    if not any(p.startswith("gpu-") for p in passes):  # layout encodings print, not parse
        assert _C.run_passes(out, []) == out, "printing is not stable"
