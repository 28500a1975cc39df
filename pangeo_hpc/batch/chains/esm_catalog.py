"""Datasets of a recipe over several datasets from an ESM collection catalog (the JSON and
CSV files of intake-esm's ``esm_datastore``, as CMIP archives publish them).

.. code-block:: yaml

    datasets:
      catalog: cat.json                # relative: to the recipe's folder
      query: {variable_id: tas, experiment_id: historical}
      by: source_id                    # one dataset per source_id
      start: "1991-01"                 # optional, for each of them
      end: "2014-12"
      era5: {variable: air_temperature_at_2_metres}   # named datasets beside them
      columns_with_iterables: [variable_id]   # optional: columns whose cells are lists

The CSV's rows are kept where every column of ``query`` matches its value, or one of a
list of values, as intake-esm's ``search`` matches them (its ``_search.search``, 2025.12):
the CSV is read as text, as intake-esm reads it; a value with an unescaped ``*``, ``?``,
``^`` or ``$`` is a regular expression found anywhere in the text (``MODEL-*``, ``^CESM``);
``null`` matches a missing value; any other value matches the text it is written as (a
number too: ``version: 20190101`` matches the text ``20190101``, where intake-esm, whose
columns are text, needs it quoted). ``tests/batch/test_esm_catalog_intake.py`` checks that the
files selected are intake-esm's own. Each value of ``by`` among them is a dataset
named after it (characters other than letters, digits and ``_`` become ``_``), whose
``files:`` are the rows' paths (the JSON's ``assets.column_name``; relative paths are
relative to the catalog) and whose variable is the rows' variable column
(``aggregation_control.variable_column_name``, else ``variable_id``). Read without
intake-esm: the two files are plain JSON and CSV.

Columns named in ``columns_with_iterables`` (intake-esm's argument of the same name) hold
a Python list in each cell (``"['tas', 'pr']"``, one file holding several variables),
read as intake-esm reads them (``ast.literal_eval``; an empty cell is an empty list). A
query value selects the rows whose list holds it, as it is written (intake-esm's
``search`` tests membership there: no patterns, no missing value). When the variable
column holds lists, a dataset's variable is the one its rows hold among the query's
values for that column: the query names exactly one. A ``by`` column of lists is refused.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pangeo_hpc.errors import InputError, shown

__all__ = ["KEYS", "catalog_datasets"]

#: the keys of ``datasets:`` that describe a catalog, not a dataset
KEYS = ("catalog", "query", "by", "start", "end", "columns_with_iterables")


def _path(value: Any, folder: Path | None, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise InputError(
            f"{where}: catalog={shown(value)} must be the path of an ESM catalog's JSON"
        )
    path = Path(value).expanduser()
    if not path.is_absolute() and folder is not None and (folder / path).exists():
        path = folder / path
    if not path.is_file():
        raise InputError(f"{where}: catalog {value!r} is not a file: give the catalog's JSON")
    return path


#: characters that make a query value a regular expression (intake-esm's ``is_pattern``)
_WILDCARDS = ("*", "?", "$", "^")


def _matches(column: pd.Series, value: Any) -> np.ndarray:
    """Where the text ``column`` matches one query ``value`` (see the module's description)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return column.isna().to_numpy()
    text = str(value)
    plain = text
    for char in _WILDCARDS:
        plain = plain.replace(f"\\{char}", "")
    if isinstance(value, str) and any(char in plain for char in _WILDCARDS):
        try:
            return column.str.contains(text, regex=True, na=False).to_numpy(bool)
        except re.error as exc:
            raise InputError(
                f"query value {text!r} is not a regular expression ({exc}): escape its "
                "* ? ^ $ with a backslash to match them as they are"
            ) from None
    return (column == text).fillna(False).to_numpy(bool)


def _lists(column: pd.Series, where: str, name: str) -> pd.Series:
    """The cells of a column of lists, each a tuple of its items as text."""

    def one(cell: Any) -> tuple[str, ...]:
        if not isinstance(cell, str) or not cell.strip():
            return ()
        try:
            items = ast.literal_eval(cell)
        except (ValueError, SyntaxError):
            items = None
        if not isinstance(items, list | tuple | set):
            raise InputError(
                f"{where}: the {name} cell {cell!r} of the catalog is not a list such as "
                f"\"['tas', 'pr']\": drop {name} from columns_with_iterables"
            )
        return tuple(str(v) for v in items)

    return column.map(one)


def _iterables(spec: dict[str, Any], where: str) -> list[str]:
    value = spec.get("columns_with_iterables") or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(
            f"{where}: columns_with_iterables={shown(value)} must be a list of column "
            "names, e.g. [variable_id]"
        )
    return value


def catalog_datasets(spec: dict[str, Any], folder: Path | None, where: str) -> dict[str, dict]:
    """The datasets (name -> ``{variable, files, start, end}``) a catalog entry of
    ``datasets:`` makes (see the module's description).

    Parameters
    ----------
    spec : dict[str, Any]
        The catalog entry (``catalog:``, ``query:``, ...).
    folder : Path or None
        The recipe's folder (a relative catalog path is taken from there).
    where : str
        Where the entry is in the recipe, for messages.

    Returns
    -------
    dict[str, dict]
        Name -> dataset.

    Raises
    ------
    InputError
        One line: a catalog that cannot be read, a query column it lacks, a query that
        keeps no row, rows of several variables for one dataset.

    Examples
    --------
    >>> import json
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.chains.esm_catalog import catalog_datasets
    >>> rows = ["source_id,variable_id,path", "A,tas,a.nc", "B,tas,b.nc", "B,pr,c.nc"]
    >>> _ = Path("cat.csv").write_text("\\n".join(rows))
    >>> catalog = {"catalog_file": "cat.csv", "assets": {"column_name": "path"},
    ...            "aggregation_control": {"variable_column_name": "variable_id"}}
    >>> _ = Path("cat.json").write_text(json.dumps(catalog))
    >>> spec = {"catalog": "cat.json", "query": {"variable_id": "tas"}, "by": "source_id"}
    >>> datasets = catalog_datasets(spec, Path("."), "datasets")
    >>> {name: (d["variable"], [Path(f).name for f in d["files"]]) for name, d in datasets.items()}
    {'A': ('tas', ['a.nc']), 'B': ('tas', ['b.nc'])}
    """
    path = _path(spec.get("catalog"), folder, where)
    query, by = spec.get("query") or {}, spec.get("by")
    if not isinstance(query, dict) or not isinstance(by, str):
        raise InputError(
            f"{where}: a catalog needs query: {{column: value, ...}} and by: COLUMN "
            f"(query={shown(query)}, by={shown(by)})"
        )
    try:
        doc = json.loads(path.read_text())
        csv = Path(doc["catalog_file"])
        table = pd.read_csv(csv if csv.is_absolute() else path.parent / csv, dtype=str)
        column = doc["assets"]["column_name"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{where}: catalog {str(path)!r} is not an ESM collection (JSON with "
            f"catalog_file and assets.column_name, and its CSV): {type(exc).__name__}: {exc}"
        ) from None
    variable = (doc.get("aggregation_control") or {}).get("variable_column_name", "variable_id")
    iterables = _iterables(spec, where)
    missing = sorted({*query, by, column, variable, *iterables} - set(table.columns))
    if missing:
        raise InputError(
            f"{where}: catalog {path.name!r} has no column(s) {missing}: it has "
            f"{list(table.columns)}"
        )
    if by in iterables:
        raise InputError(
            f"{where}: by: {by} is a column of lists (columns_with_iterables): group by a "
            "column of single values, e.g. source_id"
        )
    for name in iterables:
        table[name] = _lists(table[name], where, name)
    keep = pd.Series(True, index=table.index)
    for key, value in query.items():
        wanted = value if isinstance(value, list) else [value]
        if key in iterables:  # membership of the value as written, as intake-esm's search
            texts = {str(v) for v in wanted}
            keep &= table[key].map(lambda cell, t=texts: bool(t.intersection(cell)))
        else:
            keep &= np.logical_or.reduce([_matches(table[key], v) for v in wanted])
    rows = table[keep]
    if rows.empty:
        text = [k for k in query if k not in iterables]
        lists = [k for k in text if table[k].str.startswith("[", na=False).any()]
        hint = f" (columns_with_iterables: {lists} if their cells are lists)" if lists else ""
        raise InputError(
            f"{where}: no row of catalog {path.name!r} matches query {shown(query)}: check "
            f"the values (the CSV's columns hold them){hint}"
        )
    out: dict[str, dict] = {}
    for key, group in rows.groupby(by, sort=True):
        name = re.sub(r"\W", "_", str(key))
        if variable in iterables:
            asked = query.get(variable)
            asked = {str(v) for v in (asked if isinstance(asked, list) else [asked])}
            held = {v for cell in group[variable] for v in cell}
            names = sorted(held & asked if variable in query else held)
        else:
            names = sorted(set(group[variable].astype(str)))
        if len(names) != 1:
            raise InputError(
                f"{where}: {by}={key!r} holds variables {names} in catalog {path.name!r}: "
                f"query one {variable}"
            )
        files = [
            p if Path(p).is_absolute() else str(path.parent / p) for p in group[column].astype(str)
        ]
        ds: dict[str, Any] = {"variable": names[0], "files": sorted(files)}
        ds |= {k: str(spec[k]) for k in ("start", "end") if spec.get(k) is not None}
        out[name] = ds
    return out
