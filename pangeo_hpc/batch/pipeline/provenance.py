"""What a result is made of: its inputs, steps and code, recorded with it and checked later.

Every run writes a ``provenance`` record into ``summary.json`` (:func:`record`) and its
digests into ``result.nc``'s global attributes (:func:`file_attributes`), in the spirit of
ESMValTool's provenance records:

* ``command``: the one command line that reproduces the run (also in ``history``); URLs
  in it and in ``inputs.root`` without their credentials (:func:`~pangeo_hpc.errors.redact`);
* ``inputs``: every input file with its :class:`~pangeo_hpc.inputs.stamps.Stamp` (path,
  size, device, inode, mtime, ctime; ETag and version on S3), and one SHA-256 over them;
  for a Zarr store or Icechunk repository, each month's stamp
  (:mod:`~pangeo_hpc.io.store_chunks`) and ``store``: its URL, kind, and the snapshot id
  and branch of a repository;
* ``steps``: each result's chain, step by step with its options;
* ``code``: the SHA-256 of pangeo-hpc's state-making sources and its libraries' versions
  (:func:`~pangeo_hpc.batch.chains.code_identity.package_code`), and of each user function
  (:func:`~pangeo_hpc.batch.chains.code_identity.function_code`): what the state cache is keyed by;
* ``states``: how many input files' states came from the cache and how many were computed.

:func:`check` compares a record with the files and code as they are now, which
``python -m pangeo_hpc.run provenance RESULT`` prints: a result whose inputs or code have
changed since says so, file by file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pangeo_hpc.batch.chains import chain
from pangeo_hpc.batch.chains.code_identity import function_code, package_code
from pangeo_hpc.batch.chains.recipe_yaml import search_path
from pangeo_hpc.errors import redact
from pangeo_hpc.inputs.stamps import Stamp

__all__ = ["ATTRIBUTE_PREFIX", "check", "command", "file_attributes", "record"]

#: the prefix of the global attributes of ``result.nc`` that carry the digests
ATTRIBUTE_PREFIX = "pangeo_hpc_"


def command(spec: Any, root: Any, period: tuple[str, str]) -> str:
    """The command line that runs ``spec`` again on the same data and months: the recipe
    by name when it is found by name (shipped, or on ``pangeo-hpc.recipes.path``), else by
    its file's absolute path.

    Parameters
    ----------
    spec : Any
        The recipe.
    root : Any
        The data read.
    period : tuple[str, str]
        The first and last month read.

    Returns
    -------
    str
        The command line.

    Examples
    --------
    >>> from pangeo_hpc.batch.chains.recipe_yaml import load
    >>> from pangeo_hpc.batch.pipeline.provenance import command
    >>> command(load("era5-sst-mean"), "data/era5-demo", ("2000-01", "2000-12"))
    'python -m pangeo_hpc.run era5-sst-mean --data data/era5-demo --start 2000-01 --end ...
    """
    recipe = spec.name
    path = getattr(spec, "path", None)
    if path is not None:
        folders = {p.resolve() for p in search_path()}
        if Path(path).resolve().parent not in folders:
            recipe = str(Path(path).resolve())
    words = ["python", "-m", "pangeo_hpc.run", recipe]
    if spec.files is None:
        words += ["--data", str(root)]
    words += ["--start", str(period[0])[:7], "--end", str(period[1])[:7]]
    return shlex.join(words)


def _stamps(dataset: Any) -> list[Stamp]:
    carried = dataset.encoding.get("source_stamps") or {}
    files = dataset.encoding.get("source_files") or []
    return [carried[f] for f in files if f in carried]


def _digest(stamps: list[Stamp]) -> str:
    text = json.dumps([s.fields for s in stamps], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def record(inputs: Any, computed: Any) -> dict[str, Any]:
    """The ``provenance`` of ``summary.json`` for a run (see the module's text).

    Parameters
    ----------
    inputs : Any
        What the run read (its recipe, data root, period and dataset).
    computed : Any
        What it computed (its reads among them).

    Returns
    -------
    dict[str, Any]
        The record.

    Examples
    --------
    >>> from pangeo_hpc.batch import compute, open_inputs
    >>> from pangeo_hpc.batch.pipeline.provenance import record
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> prov = record(inputs, compute(inputs, client))  # doctest: +SKIP
    """
    spec = inputs.spec
    stamps = _stamps(inputs.dataset)
    chains = chain.result_chains(spec)
    user = {s.name: function_code(s.function()) for s in spec.all_steps() if s.is_user}
    reads = computed.reads
    return {
        "command": redact(command(spec, inputs.root, inputs.period)),
        "inputs": {
            "root": redact(str(inputs.root)),
            "sha256": _digest(stamps),
            **(
                {"store": _jsonable(inputs.dataset.encoding["source_store"])}
                if inputs.dataset.encoding.get("source_store")
                else {}
            ),
            "files": [
                {k: v for k, v in dataclasses.asdict(s).items() if v is not None} for s in stamps
            ],
        },
        "steps": {
            name or spec.name: [[s.name, _jsonable(chain.options_of(s))] for s in steps]
            for name, steps in chains.items()
        },
        "code": {"pangeo-hpc": package_code(), "user": user},
        "states": None
        if reads is None or not reads.incremental
        else {"cached": reads.files_reused, "computed": reads.files_read},
    }


def file_attributes(prov: Mapping[str, Any]) -> dict[str, str]:
    """The digests of a record, as global attributes of ``result.nc``.

    Parameters
    ----------
    prov : Mapping[str, Any]
        A record of :func:`record`.

    Returns
    -------
    dict[str, str]
        Attribute name -> value.

    Examples
    --------
    >>> from pangeo_hpc.batch.pipeline.provenance import file_attributes
    >>> prov = {"inputs": {"sha256": "1f" * 32}, "code": {"pangeo-hpc": "c0" * 32},
    ...         "steps": {"global_mean": ["area_mean", "time_mean"]}}
    >>> sorted(file_attributes(prov))
    ['pangeo_hpc_code_sha256', 'pangeo_hpc_inputs_sha256', 'pangeo_hpc_steps']
    """
    p = ATTRIBUTE_PREFIX
    return {
        f"{p}inputs_sha256": prov["inputs"]["sha256"],
        f"{p}code_sha256": prov["code"]["pangeo-hpc"],
        f"{p}steps": json.dumps(prov["steps"], separators=(",", ":"), default=str),
    }


def check(prov: Mapping[str, Any]) -> dict[str, Any]:
    """The record against the files and code now: which input files changed or are gone
    (local files stamped again; S3 objects are not checked, ``s3`` counts them), and
    whether pangeo-hpc's code and libraries are the same.

    Parameters
    ----------
    prov : mapping
        A run's provenance record (``summary.json``'s ``provenance``).

    Returns
    -------
    dict
        ``files`` (how many the record lists), ``changed`` and ``missing`` (their paths),
        ``s3_not_checked`` (a count) and ``code_same`` (bool).

    Examples
    --------
    >>> import json
    >>> from pangeo_hpc.batch.pipeline.provenance import check
    >>> summary = json.load(open("results/sst/summary.json"))  # doctest: +SKIP
    >>> check(summary["provenance"])  # doctest: +SKIP
    """
    from pangeo_hpc.io.fingerprint import stamp

    changed, missing, s3, store = [], [], 0, 0
    for doc in prov["inputs"]["files"]:
        then = Stamp(**doc)
        if prov["inputs"].get("store"):  # months of a store: its snapshot says which
            store += 1
            continue
        if then.etag is not None or then.path.startswith("s3://"):
            s3 += 1
            continue
        try:
            now = stamp(then.path)
        except FileNotFoundError:
            missing.append(then.path)
            continue
        if now.fields != then.fields:
            changed.append(then.path)
    return {
        "files": len(prov["inputs"]["files"]),
        "changed": changed,
        "missing": missing,
        "s3_not_checked": s3,
        "store_not_checked": store,
        "code_same": prov["code"]["pangeo-hpc"] == package_code(),
    }


def _jsonable(options: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps({str(k): v for k, v in options.items()}, default=str))
