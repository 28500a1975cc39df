"""The era5-pds key layout: ``{YYYY}/{MM}/data/{variable}.nc``."""

from __future__ import annotations

from pathlib import Path

from . import config
from .errors import DataNotFoundError, InputError
from .periods import Month, months


def month_path(root: str | Path, variable: str, month: Month, *, layout: str | None = None) -> Path:
    """Path of one month's file under ``root``."""
    pattern = config.get("data.layout", layout)
    return Path(root) / pattern.format(year=month.year, month=month.month, variable=variable)


def find_files(
    root: str | Path, variable: str, start: object, end: object, *, layout: str | None = None
) -> list[Path]:
    """The files of ``variable`` for every month from ``start`` to ``end``.

    Raises
    ------
    DataNotFoundError
        When the root does not exist, holds no such variable, or months are missing; the
        message lists what is there and how to make it.
    """
    root = Path(root)
    wanted = months(start, end)
    if not root.is_dir():
        raise DataNotFoundError(
            f"data directory {str(root)!r} does not exist: pass --data DIR, or create demo "
            f"data with `python -m pangeo_hpc.run demo-data --out {root}`"
        )
    paths = [month_path(root, variable, m, layout=layout) for m in wanted]
    missing = [m for m, p in zip(wanted, paths, strict=True) if not p.is_file()]
    if len(missing) == len(wanted):
        present = sorted({p.stem for p in root.glob("*/*/data/*.nc")})
        if present and variable not in present:
            raise DataNotFoundError(
                f"variable {variable!r} is not in {str(root)!r}: it holds {present}"
            )
    if missing:
        raise DataNotFoundError(
            f"{len(missing)} of {len(wanted)} months of {variable!r} are missing under "
            f"{str(root)!r} ({_ranges(missing)}): choose a period that exists with "
            f"--start/--end, or generate it with `python -m pangeo_hpc.run demo-data "
            f"--out {root} --start {missing[0]} --end {missing[-1]}`"
        )
    return paths


def _ranges(ms: list[Month]) -> str:
    """Compress a sorted list of months into ``2008-01..2008-05, 2009-02``."""
    if not ms:
        raise InputError("no months")
    out: list[str] = []
    first = prev = ms[0]
    for m in [*ms[1:], None]:
        if m is not None and m == prev.next():
            prev = m
            continue
        out.append(str(first) if first == prev else f"{first}..{prev}")
        if m is not None:
            first = prev = m
    return ", ".join(out)
