"""A run whose answer is on disk already: served from its previous result, as a build
system skips a target that is up to date.

The rules first:

* A run records a **run key** in its ``summary.json`` (:data:`KEY`): the SHA-256 of
  everything its outputs depend on. That is the recipe as read (its YAML mapping, and the
  bytes of each user module a ``function:`` step names beside it), the stamp of every input
  file (:class:`~pangeo_hpc.inputs.stamps.Stamp`: device, inode, size, mtime and ctime, as
  the state cache and the scan cache compare them) found as the run finds them (the
  ``files:`` glob expanded again, the months of the era5-pds tree's period), the stamp of
  every file a step option names (a regridding's target grid), the run's options (data,
  period, format, figure format, cluster options), the whole Dask configuration (so every
  ``pangeo-hpc`` default and override), and the code
  (:func:`~pangeo_hpc.batch.chains.code_identity.run_code`: every file of the package,
  Python's and the libraries' versions).
* The same command again computes the key with ``os.stat`` and hashing only (no NumPy,
  xarray or Dask array: about 0.05 s) and **serves** the folder's answer, printing the
  same lines from ``summary.json``, only when the recorded key is equal **and** the folder
  holds exactly the files that run wrote, each of the size and SHA-256 recorded
  (:func:`~pangeo_hpc.write.records.result_changes`, the rule by which the write guard
  replaces a result). A result a user edited is therefore never served; the run goes on
  and the guard refuses to replace it, as it always did.
* Anything else is a **miss**, never a wrong answer: another key, no key, an unreadable or
  truncated ``summary.json``, a file that changed, an option that names a folder, a file on
  a FUSE mount (whose ctime and inode say nothing), a ``store:``, S3 data or output, several
  datasets, a ``function:`` from the Python path (its module's imports are not seen),
  a site profile. The run then runs as it would have, and records its key.

What the key does not see is what the state cache does not see either
(:mod:`~pangeo_hpc.batch.chains.code_identity`): a user function's imports of other user
modules, and data a user function reads from elsewhere than its arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dask.config

from pangeo_hpc import config
from pangeo_hpc.batch.chains.code_identity import run_code
from pangeo_hpc.batch.pipeline.answer_text import summary_text
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import months
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io.fingerprint import needs_fingerprint
from pangeo_hpc.io.globbing import expand
from pangeo_hpc.io.layout import month_path
from pangeo_hpc.write.guard import folder_in, is_url
from pangeo_hpc.write.records import result_changes

__all__ = ["KEY", "default_out", "read_from", "result_files", "run_key", "served"]

#: the entry of ``summary.json`` that holds the run key
KEY = "run_key"
#: the key's own format: a change of what goes into it misses every old key
_VERSION = 1


class _NoKey(Exception):
    """This run cannot be keyed (the reason is the message): it is never served."""


def run_key(
    doc: Any,
    recipe: str | os.PathLike[str],
    *,
    data: str | os.PathLike[str] | None = None,
    start: str | None = None,
    end: str | None = None,
    fmt: str | None = None,
    plot_format: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> str | None:
    """The run key of a recipe's run (see the module's description), or ``None`` when the
    run cannot be keyed and so is never served.

    Parameters
    ----------
    doc : Any
        The recipe's YAML mapping as read
        (:func:`~pangeo_hpc.batch.chains.recipe_yaml.read_yaml`).
    recipe : path
        The recipe's file (user modules are found beside it).
    data, start, end, fmt, plot_format : optional
        As given to :func:`~pangeo_hpc.batch.pipeline.execute.run_recipe`.
    options : mapping, optional
        Every other option of the run that may change its outputs (cluster, workers, ...):
        JSON-able values.

    Returns
    -------
    str or None
        The SHA-256 (hex), or ``None``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.chains.recipe_yaml import read_yaml
    >>> from pangeo_hpc.batch.pipeline.reuse import run_key
    >>> _ = Path("keyed-2000-01.nc").write_bytes(bytes(10))
    >>> recipe = ["name: keyed", "description: K", "steps: [{time_mean: {}}]",
    ...           "dataset: {variable: t2m, files: keyed-*.nc}"]
    >>> _ = Path("keyed.yaml").write_text("\\n".join(recipe))
    >>> key = run_key(read_yaml(Path("keyed.yaml")), "keyed.yaml")
    >>> _ = Path("keyed-2000-01.nc").write_bytes(bytes(20))  # the data changed
    >>> len(key), key == run_key(read_yaml(Path("keyed.yaml")), "keyed.yaml")
    (64, False)
    """
    try:
        _dataset(doc)  # one dataset, not a store
        parts = [
            _VERSION,
            run_code(),
            os.path.abspath(recipe),
            _canonical(doc),
            sorted(_user_modules(doc, Path(recipe).parent)),
            [s.fields for s in _inputs(doc, data, start, end)],
            [s.fields for s in _named_files(doc)],
            [_abs(data), start, end, fmt, plot_format, _canonical(options or {})],
            _canonical(dask.config.config),
        ]
    except (_NoKey, InputError, OSError, ValueError, TypeError):
        return None
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def default_out(doc: Any) -> Path | None:
    """Where a recipe's run writes without ``out``: ``<output.root>/<name>``.

    Parameters
    ----------
    doc : Any
        The recipe's YAML document as read.

    Returns
    -------
    Path or None
        The folder; ``None`` for a recipe without a name that is a label (its run says
        why).

    Examples
    --------
    >>> import dask
    >>> from pangeo_hpc.batch.pipeline.reuse import default_out
    >>> with dask.config.set({"pangeo-hpc.output.root": "results"}):
    ...     print(default_out({"name": "era5-sst-mean"}))
    results/era5-sst-mean
    """
    try:
        return folder_in(config.get("output.root"), str(doc["name"]), what="name")
    except (InputError, KeyError, TypeError):
        return None


def result_files(summary: Mapping[str, Any]) -> list[str]:
    """The files of a result folder besides its ``summary.json``, as that summary names
    them (``outputs``: the data, the figure and the report).

    Parameters
    ----------
    summary : Mapping
        A result's ``summary.json``, as read.

    Returns
    -------
    list of str
        The data's, the figure's and the report's file names.

    Raises
    ------
    KeyError, TypeError
        When ``summary`` names no outputs (not a result of this package).

    Examples
    --------
    >>> outputs = {"data": "result.nc", "plot": "plot.svg", "report": "report.html",
    ...            "summary": "summary.json"}
    >>> result_files({"outputs": outputs})
    ['result.nc', 'plot.svg', 'report.html']
    """
    outputs = summary["outputs"]
    return [outputs[k] for k in ("data", "plot", "report")]


def served(out: str | os.PathLike[str] | None, key: str | None) -> dict[str, Any] | None:
    """The ``summary.json`` of the result folder ``out`` if it can be served for ``key``:
    its recorded key is ``key`` and the folder holds exactly the files it records, as
    written; else ``None`` (a miss).

    Parameters
    ----------
    out : path or None
        The run's output folder (``None``, an URL: a miss).
    key : str or None
        :func:`run_key`'s answer (``None``: a miss).

    Returns
    -------
    dict or None
        The folder's ``summary.json``, or ``None`` when it cannot be served.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.reuse import served
    >>> served("results/not-yet", "ab" * 32) is None  # a miss: the run runs
    True
    """
    if key is None or out is None or is_url(str(out)):
        return None
    folder = Path(out)
    try:
        summary = json.loads((folder / "summary.json").read_text())
        if not isinstance(summary, dict) or summary.get(KEY) != key:
            return None
        names = {p.name for p in folder.iterdir()}
        wanted = {*result_files(summary), "summary.json"}
        if names != wanted or result_changes(folder, names) != "":
            return None
        summary_text(summary)  # every entry its lines need is there
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None
    return summary


def read_from(doc: Any, data: str | os.PathLike[str] | None) -> str | None:
    """What a run of the one-dataset recipe ``doc`` reads, as its write guard is given it
    (:func:`~pangeo_hpc.batch.pipeline.steps.open_inputs`' ``root``): the ``files:`` glob,
    the folder its listed files share, else the data tree (``data``, else config's).

    Parameters
    ----------
    doc : Any
        The recipe's YAML mapping as read.
    data : path, optional
        The run's ``--data``.

    Returns
    -------
    str or None
        The glob or folder.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.reuse import read_from
    >>> read_from({"dataset": {"files": "model/*.nc"}}, "data/era5")
    'model/*.nc'
    """
    dataset = doc.get("dataset") if isinstance(doc, dict) else None
    files = dataset.get("files") if isinstance(dataset, dict) else None
    if isinstance(files, list) and files:
        return os.path.commonpath([os.path.abspath(str(f)) for f in files])
    if files is not None:
        return str(files)
    root = data or config.get("data.root")
    return None if root is None else os.fspath(root)


def _canonical(value: Any) -> Any:
    """``value`` as JSON-able data, the same in every process (``repr`` of anything else:
    a date of the YAML; a value whose ``repr`` names its address makes every key new)."""
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def _abs(path: str | os.PathLike[str] | None) -> str | None:
    if path is None or is_url(str(path)):
        return None if path is None else str(path)
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


def _dataset(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or "datasets" in doc:
        raise _NoKey("several datasets")
    dataset = doc.get("dataset")
    if not isinstance(dataset, dict) or dataset.get("store") is not None:
        raise _NoKey("a store, or no dataset")
    return dataset


def _stamp(path: str) -> Stamp:
    """A local file's stamp; a folder, a missing file or a file on a FUSE mount: no key."""
    stamp = Stamp.of_file(path)
    if not os.path.isfile(stamp.path) or needs_fingerprint(stamp):
        raise _NoKey(f"{path!r}: not a local file that keeps its ctime")
    return stamp


def _inputs(doc: Any, data: Any, start: str | None, end: str | None) -> list[Stamp]:
    """The stamps of the files the run reads, found as the run finds them: the glob
    expanded (:func:`~pangeo_hpc.io.globbing.expand`), or every month of the period of
    each variable under the tree (:func:`~pangeo_hpc.io.layout.month_path`)."""
    dataset = _dataset(doc)
    files = dataset.get("files")
    if files is not None:
        return [_stamp(p) for p in expand(list(files) if isinstance(files, list) else files)]
    root = data or config.get("data.root")
    if root is None or is_url(str(root)):
        raise _NoKey("S3 data")
    one, many = dataset.get("variable"), dataset.get("variables")
    variables = [one] if many is None else many
    first, last = start or dataset.get("start"), end or dataset.get("end")
    if not isinstance(variables, list) or first is None or last is None:
        raise _NoKey("no variables or period")
    return [
        _stamp(str(month_path(_abs(root), str(v), m)))  # type: ignore[arg-type]
        for v in variables
        for m in months(str(first), str(last))
    ]


def _steps(doc: dict[str, Any]) -> Iterator[Any]:
    yield from doc.get("steps") or []
    results = doc.get("results") or {}
    for chain in results.values() if isinstance(results, dict) else ():
        yield from chain or []


def _user_modules(doc: Any, folder: Path) -> list[list[str]]:
    """``[module, SHA-256 of its file]`` of each ``function:`` step's module, which must
    be a file beside the recipe (:func:`~pangeo_hpc.batch.chains.chain.user_function`
    finds it there first; one from the Python path: no key)."""
    found = []
    for step in _steps(doc):
        if isinstance(step, dict) and "function" in step:
            module = str(step["function"]).split(":")[0]
            local = folder / f"{module.replace('.', '/')}.py"
            if not local.is_file():
                raise _NoKey(f"function from the Python path: {module}")
            found.append([module, hashlib.sha256(local.read_bytes()).hexdigest()])
    return found


def _named_files(doc: Any) -> list[Stamp]:
    """The stamps of the files a step option names (a target grid's file): any text
    option that is the path of something that exists."""
    stamps = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, list):
            for v in value:
                visit(v)
        elif isinstance(value, str) and value and os.path.exists(os.path.expanduser(value)):
            stamps.append(_stamp(os.path.expanduser(value)))

    for step in _steps(doc):
        visit(step)
    return stamps
