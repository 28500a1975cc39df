"""Verb ``cache``: the partial states of recipe runs (list, size, clear)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from pangeo_hpc.cli.common import Verb, program_name
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import format_bytes
from pangeo_hpc.tables import RULE, text_table


def _cache_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=("list", "size", "clear"),
        help="list the entries, their total size, or remove them",
    )
    p.add_argument("--recipe", help="list or clear only this recipe's entries")


def _files(meta: dict) -> str:
    """The first file and how many there are: ``2000/01/data/sst.nc (12 files)``; the
    first file is named by what tells it from the others (era5-pds files share names)."""
    files = meta.get("files")
    if not isinstance(files, list) or not files:
        return "-"
    paths = [str(f) for f in files]
    first = Path(paths[0]).name or paths[0]
    if len(paths) == 1:
        return first
    try:
        common = os.path.commonpath(paths)
        shown = os.path.relpath(paths[0], common) if common not in ("", "/") else paths[0]
    except ValueError:  # local paths and URLs mixed
        shown = first
    return f"{shown if shown != '.' else first} ({len(paths)} files)"


def _count(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def _clear_leftovers() -> None:
    """Remove what runs killed on this host left beside their results in ``output.root``
    (:func:`pangeo_hpc.write.leftovers.remove_stale`; a write into a folder does the same
    there, this reaches the folders nothing writes into again)."""
    from pangeo_hpc import config
    from pangeo_hpc.write.leftovers import remove_stale

    root = Path(str(config.get("output.root"))).expanduser()
    left = remove_stale(root)
    if left:
        n = len(left)
        print(f"cache: removed {n} temporar{'y' if n == 1 else 'ies'} of killed runs in {root}")


def _cache(a: argparse.Namespace) -> int:
    from pangeo_hpc.batch.incremental.state_cache import StateCache

    if a.recipe is not None and a.action == "size":
        raise InputError("--recipe applies to `cache list` and `cache clear`, not `cache size`")
    cache = StateCache()
    if a.action == "size":
        entries = cache.entries()
        total = sum(e.size for e in entries)
        print(
            f"cache: {total} bytes ({format_bytes(total)}) in {_count(len(entries))}, "
            f"{cache.folder} (limit {cache.max_bytes} bytes, {format_bytes(cache.max_bytes)})"
        )
        return 0
    if a.action == "clear":
        before = cache.size()
        removed = cache.clear(recipe=a.recipe)
        freed = max(before - cache.size(), 0)
        which = f" of {a.recipe}" if a.recipe else ""
        print(
            f"cache: removed {_count(removed)}{which} ({format_bytes(freed)} freed), {cache.folder}"
        )
        if a.recipe is None:
            _clear_leftovers()
        return 0
    entries = [e for e in cache.entries() if a.recipe is None or e.meta.get("recipe") == a.recipe]
    if entries:
        rows: list[tuple[str, ...] | None] = [
            ("key", "recipe", "result", "files", "size", "last used"),
            RULE,
        ]
        for e in entries:
            rows.append(
                (
                    e.key[:12],
                    str(e.meta.get("recipe", "?")),
                    "(damaged)" if e.damaged else str(e.meta.get("result", "?")),
                    _files(e.meta),
                    format_bytes(e.size),
                    _when(e.last_used),
                )
            )
        for line in text_table(rows, right=(False, False, False, False, True, False)):
            print(line)
    total = sum(e.size for e in entries)
    which = f" of {a.recipe}" if a.recipe else ""
    print(f"total: {_count(len(entries))}{which}, {format_bytes(total)}, in {cache.folder}")
    damaged = sum(e.damaged is not None for e in entries)
    if damaged:
        print(
            f"{_count(damaged)} cannot be read (damaged, or of an earlier version): runs "
            f"ignore and remove them; `{program_name()} cache clear` removes them now"
        )
    return 0


VERBS = [
    Verb(
        "cache",
        "list, size or clear the cached partial states of recipe runs",
        "The partial states of recipe runs, one per input file and chain (sums and counts "
        "of a mean, ...), kept so that a run reads only new or changed files: list them "
        "(PROG cache list [--recipe NAME]), their total size (PROG cache size) or remove "
        "them (PROG cache clear [--recipe NAME]; without --recipe also the temporary folders "
        "that runs killed on this host left in pangeo-hpc.output.root). The folder is "
        "pangeo-hpc.cache.folder, its limit pangeo-hpc.cache.max-size; a missing folder is "
        "an empty cache.",
        _cache_args,
        _cache,
    ),
]
