"""The era5-pds key layout: ``{YYYY}/{MM}/data/{variable}.nc``."""

from __future__ import annotations

import re
import string
from pathlib import Path

from pangeo_hpc import config
from pangeo_hpc.errors import DataNotFoundError, InputError
from pangeo_hpc.inputs.periods import Month, month_ranges, months

#: the file ``demo-data`` writes at the root of a tree it made (and only there)
MANIFEST = "demo-manifest.json"


def _is_demo_tree(root: str | Path) -> bool:
    """Whether ``root`` is a tree that ``demo-data`` made (its manifest is there)."""
    return (Path(root) / MANIFEST).is_file()


def _demo_call(
    root: str | Path, start: Month, end: Month, variable: str = "sea_surface_temperature"
) -> tuple[str, list[str]]:
    """The call of :func:`pangeo_hpc.demo.generate` that adds ``start`` to ``end`` of
    ``variable`` to the demo tree ``root`` with the settings it was made with (from its
    manifest), and the words of the ``demo-data`` command that does the same."""
    import json

    try:
        settings = json.loads((Path(root) / MANIFEST).read_text()).get("settings", {})
    except (OSError, ValueError, AttributeError):
        settings = {}
    given = {"start": str(start), "end": str(end)}
    words = ["demo-data", "--out", str(root)]
    for key in ("resolution", "frequency", "seed", "trend"):
        if settings.get(key) is not None:
            given[key] = settings[key]
            words += [f"--{key}", str(settings[key])]
    words += ["--start", str(start), "--end", str(end)]
    if variable != "sea_surface_temperature":  # the default
        given["variables"] = variable
        words += ["--variables", variable]
    spec = ", ".join(f"{k}={v!r}" for k, v in given.items())
    return f"pangeo_hpc.demo.generate({str(root)!r}, pangeo_hpc.demo.DemoSpec({spec}))", words


def month_path(root: str | Path, variable: str, month: Month, *, layout: str | None = None) -> Path:
    """Path of one month's file under ``root``.

    Parameters
    ----------
    root : str | Path
        The tree's folder.
    variable : str
        The variable's name.
    month : Month
        The month.
    layout : str | None, optional
        The path layout (default: ``pangeo-hpc.data.layout``).

    Returns
    -------
    Path
        The file's path.

    Examples
    --------
    >>> # layout {year}/{month}/data/{variable}.nc
    >>> print(month_path("/data/era5", "t2m", Month(2008, 1)))
    /data/era5/2008/01/data/t2m.nc
    """
    pattern = config.get("data.layout", layout)
    return Path(root) / pattern.format(year=month.year, month=month.month, variable=variable)


def _layout_regex(pattern: str) -> re.Pattern[str]:
    """A regex of the layout: ``year``, ``month`` and ``variable`` as named groups."""
    fields = {
        "year": r"(?P<year>\d{4})",
        "month": r"(?P<month>\d{2})",
        "variable": r"(?P<variable>[^/]+)",
    }
    parts = []
    for literal, name, _spec, _conv in string.Formatter().parse(pattern):
        parts.append(re.escape(literal))
        if name is not None:
            if name not in fields:
                raise InputError(
                    f"data.layout {pattern!r} names {{{name}}}: use year, month and variable"
                )
            parts.append(fields[name] if f"(?P<{name}>" not in "".join(parts) else f"(?P={name})")
    return re.compile("".join(parts) + "$")


def key_month(
    key: str, variable: str | None = None, *, layout: str | None = None
) -> tuple[Month, str] | None:
    """The month and variable of a file's path relative to the tree's root, if it follows
    the layout (and is of ``variable``, when given); else ``None``.

    Parameters
    ----------
    key : str
        A path relative to the root.
    variable : str | None, optional
        A variable's name, or ``None`` for any.
    layout : str | None, optional
        The path layout (default: ``pangeo-hpc.data.layout``).

    Returns
    -------
    tuple[Month, str] | None
        The month and variable, or ``None``.

    Examples
    --------
    >>> key_month("2008/01/data/t2m.nc")
    (Month(year=2008, month=1), 't2m')
    >>> key_month("2008/01/data/t2m.nc", "tp") is None
    True
    """
    match = _layout_regex(config.get("data.layout", layout)).match(key)
    if match is None:
        return None
    month = int(match["month"])
    if not 1 <= month <= 12 or (variable is not None and match["variable"] != variable):
        return None
    return Month(int(match["year"]), month), match["variable"]


def find_files(
    root: str | Path, variable: str, start: object, end: object, *, layout: str | None = None
) -> list[Path]:
    """The files of ``variable`` for every month from ``start`` to ``end``.

    Parameters
    ----------
    root : str | Path
        The tree's folder.
    variable : str
        The variable's name.
    start : object
        First month.
    end : object
        Last month.
    layout : str | None, optional
        The path layout (default: ``pangeo-hpc.data.layout``).

    Returns
    -------
    list[Path]
        One file per month.

    Raises
    ------
    DataNotFoundError
        When the root does not exist, holds no such variable, or months are missing; the
        message lists what is there and how to make it.

    Examples
    --------
    >>> import tempfile
    >>> from pangeo_hpc.inputs.periods import months
    >>> tmp = tempfile.TemporaryDirectory()
    >>> for m in months("2008-01", "2008-02"):
    ...     month_path(tmp.name, "t2m", m).parent.mkdir(parents=True)
    ...     _ = month_path(tmp.name, "t2m", m).write_bytes(b"")
    >>> [str(p.relative_to(tmp.name)) for p in find_files(tmp.name, "t2m", "2008-01", "2008-02")]
    ['2008/01/data/t2m.nc', '2008/02/data/t2m.nc']
    >>> tmp.cleanup()
    """
    root = Path(root)
    wanted = months(start, end)
    if not root.is_dir():
        call = "pangeo_hpc.demo.generate(DIR)"
        raise DataNotFoundError(
            f"data directory {str(root)!r} does not exist: pass source= with the root of your "
            f"era5-pds tree (for synthetic demo data: `make demo`, or {call})",
            param="source",
            commands={call: ["demo-data", "--out", "DIR"]},
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
        # synthetic months only for a tree of synthetic data, never mixed into real data
        commands = dict(
            [_demo_call(root, missing[0], missing[-1], variable)] if _is_demo_tree(root) else []
        )
        more = "".join(f", or generate them with {call}" for call in commands)
        raise DataNotFoundError(
            f"{len(missing)} of {len(wanted)} months of {variable!r} are missing under "
            f"{str(root)!r} ({month_ranges(missing)}): choose a period that exists with "
            f"start=/end={more}",
            param=("start", "end"),
            commands=commands,
        )
    return paths
