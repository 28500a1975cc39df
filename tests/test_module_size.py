"""Small modules with one job each (STYLE.md habit 8; issue 27: no module over 400 lines):
no module of the package holds more than 400 lines of code.

Docstrings and comments are not counted: every public name carries a numpydoc docstring
with parameters, returns and a running example (issue 31), which made 27 modules longer
than 400 lines in all without giving any of them another job (the longest holds 322 lines
of code)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from tests.support.paths import ROOT

LIMIT = 400
#: tokens that are not code
_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENCODING, tokenize.ENDMARKER}  # fmt: skip


def code_lines(source: str) -> int:
    """Lines of ``source`` holding code: not blank, not only a comment, not a docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if isinstance(node, kinds) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _LAYOUT:
            lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docstrings)
    return len(lines)


def test_no_module_holds_more_than_400_lines_of_code():
    sizes = {
        str(path.relative_to(ROOT)): code_lines(path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / "pangeo_hpc").rglob("*.py"))
    }
    assert len(sizes) > 150
    over = {path: n for path, n in sizes.items() if n > LIMIT}
    assert over == {}, f"split these modules by job: {over}"


def test_code_lines_leave_out_docstrings_comments_and_blank_lines():
    source = '''"""Module."""

# a comment
def f(x):
    """F.

    Examples
    --------
    >>> f(1)
    2
    """
    y = (x +
         1)  # trailing comment
    return y
'''
    assert code_lines(source) == 4  # def, the two lines of y, return
    assert code_lines(Path(__file__).read_text()) > 20
