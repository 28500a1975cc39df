"""Plain-text tables: the one renderer behind every aligned table the package prints.

A bucket inventory, a storage survey, a plan and a list of files give their cells as
strings (each formats its own numbers) and get aligned lines back.
"""

from __future__ import annotations

from collections.abc import Sequence

#: a row that is a rule: dashes as wide as each column
RULE = None


def text_table(
    rows: Sequence[Sequence[str] | None],
    *,
    right: Sequence[bool],
    widths: Sequence[int] = (),
    sep: str | Sequence[str] = "  ",
) -> list[str]:
    """Rows of cells as aligned lines of text.

    Parameters
    ----------
    rows : sequence of sequences of str, or :data:`RULE`
        The cells, a header first if there is one; :data:`RULE` (``None``) draws a line of
        dashes under each column.
    right : sequence of bool
        Per column: right-aligned (numbers) or left-aligned (names).
    widths : sequence of int, optional
        Least width per column (the first ``len(widths)`` columns); every column is at
        least as wide as its widest cell.
    sep : str or sequence of str
        What goes between columns: one string for every gap, or one per gap.

    Returns
    -------
    list of str
        One line per row, trailing blanks removed.

    Examples
    --------
    >>> print("\\n".join(text_table([("name", "n"), RULE, ("a", "10")], right=(False, True))))
    name   n
    ----  --
    a     10
    """
    cells = [r for r in rows if r is not RULE]
    n = len(right)  # rows and gaps of another length fail in zip(strict=True)
    gaps = [sep] * (n - 1) if isinstance(sep, str) else list(sep)
    least = [*widths, *[0] * (n - len(widths))]
    width = [max([least[i], *(len(r[i]) for r in cells)]) for i in range(n)]

    def line(row: Sequence[str] | None) -> str:
        if row is RULE:
            padded = ["-" * w for w in width]
            joints = [" " * len(g) for g in gaps]
        else:
            padded = [
                f"{c:>{w}}" if r else f"{c:<{w}}" for c, w, r in zip(row, width, right, strict=True)
            ]
            joints = gaps
        out = padded[0]
        for joint, cell in zip(joints, padded[1:], strict=True):
            out += joint + cell
        return out.rstrip()

    return [line(r) for r in rows]


__all__ = ["RULE", "text_table"]
