"""Count the objects and bytes below an S3 prefix, in total and per sub-prefix.

The listing itself (parallel over disjoint prefixes, interleaved) is
:mod:`pangeo_hpc.s3.listing`; this module adds up what it finds, per row of the breakdown.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import format_bytes
from pangeo_hpc.s3.listing import Lister, ObjectInfo, Progress, list_objects, listing, scan
from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.tables import RULE, text_table

# the listing it builds on comes with it (they lived here before pangeo_hpc.s3.listing)
__all__ = ["Inventory", "ObjectInfo", "PrefixTotals", "inventory", "list_objects"]

#: the label of objects that sit directly at the prefix given (not below a sub-prefix)
TOP = "(top)"


@dataclass(frozen=True, slots=True)
class PrefixTotals:
    """Objects and bytes below one prefix of an :class:`Inventory`.

    Attributes
    ----------
    prefix : str
        Relative to the inventory's prefix, with a trailing ``/`` (``"1979/"``); ``""``
        for the objects directly at the inventory's prefix.
    objects, bytes : int
        Counted below ``prefix`` (or, for a prefix shallower than the inventory's ``depth``,
        directly in it: the deeper ones have rows of their own).

    Examples
    --------
    >>> PrefixTotals("1979/", objects=12, bytes=4_000_000)
    PrefixTotals(prefix='1979/', objects=12, bytes=4000000)
    """

    prefix: str
    objects: int
    bytes: int


@dataclass(slots=True)
class Inventory:
    """What :func:`inventory` found below ``s3://bucket/prefix``.

    Attributes
    ----------
    url : str
        The ``s3://`` URL listed.
    objects, bytes : int
        In total.
    prefixes : list of PrefixTotals
        The breakdown, sorted by prefix: each object is counted once, under its first
        ``depth`` path segments below the URL (objects directly at the URL under ``""``).
    depth : int
        Levels of the breakdown.
    seconds : float
        Wall time of the listing.
    requests : int
        LIST requests made (pages of up to 1,000 keys and prefixes).
    concurrency : int
        LIST requests allowed in flight.
    tasks : int
        Prefixes listed fully, in parallel, after discovery.

    Examples
    --------
    >>> inv = Inventory("s3://era5-pds/2019", objects=3, bytes=3000,
    ...                 prefixes=[PrefixTotals("01/", 2, 2000), PrefixTotals("02/", 1, 1000)],
    ...                 depth=1, seconds=0.5, requests=2, concurrency=8, tasks=2)
    >>> inv.objects, [p.prefix for p in inv.prefixes]
    (3, ['01/', '02/'])
    """

    url: str
    objects: int
    bytes: int
    prefixes: list[PrefixTotals]
    depth: int
    seconds: float
    requests: int
    concurrency: int
    tasks: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The inventory as plain data (what :meth:`to_json` writes).

        Returns
        -------
        dict
            ``url``, ``objects``, ``bytes``, ``depth``, ``seconds``, ``requests``,
            ``concurrency``, ``tasks`` and ``prefixes``: ``{prefix: {"objects": n,
            "bytes": b}}`` with ``""`` for the objects directly at the URL.

        Examples
        --------
        >>> inv = Inventory("s3://era5-pds/2019", objects=2, bytes=2000,
        ...                 prefixes=[PrefixTotals("01/", 2, 2000)],
        ...                 depth=1, seconds=0.5, requests=1, concurrency=8, tasks=1)
        >>> inv.to_dict()["prefixes"]
        {'01/': {'objects': 2, 'bytes': 2000}}
        """
        return {
            "url": self.url,
            "objects": self.objects,
            "bytes": self.bytes,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "concurrency": self.concurrency,
            "tasks": self.tasks,
            "prefixes": {p.prefix: {"objects": p.objects, "bytes": p.bytes} for p in self.prefixes},
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> inv = Inventory("s3://era5-pds/2019", objects=2, bytes=2000,
        ...                 prefixes=[PrefixTotals("01/", 2, 2000)],
        ...                 depth=1, seconds=0.5, requests=1, concurrency=8, tasks=1)
        >>> print(inv.to_json())
        {
          "url": "s3://era5-pds/2019",
          "objects": 2,
        ...
        }
        """
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_table(self) -> str:
        """A text table: one row per prefix (objects, bytes, human-readable size), totals.

        Returns
        -------
        str
            Lines ending with a totals line and how long the listing took.

        Examples
        --------
        >>> inv = Inventory("s3://era5-pds/2019", objects=3, bytes=3000,
        ...                 prefixes=[PrefixTotals("01/", 2, 2000), PrefixTotals("02/", 1, 1000)],
        ...                 depth=1, seconds=0.5, requests=2, concurrency=8, tasks=2)
        >>> print(inv.to_table())
        s3://era5-pds/2019
        prefix  objects  bytes      size
        ------  -------  -----  --------
        01/           2  2,000  1.95 kiB
        02/           1  1,000  0.98 kiB
        ------  -------  -----  --------
        total         3  3,000  2.93 kiB
        listed in 0.50 s: 2 LIST requests, 2 prefixes in parallel (concurrency 8)
        """
        rows = [
            (p.prefix or TOP, f"{p.objects:,}", f"{p.bytes:,}", format_bytes(p.bytes))
            for p in self.prefixes
        ]
        total = ("total", f"{self.objects:,}", f"{self.bytes:,}", format_bytes(self.bytes))
        head = ("prefix", "objects", "bytes", "size")
        table = text_table([head, RULE, *rows, RULE, total], right=(False, True, True, True))
        out = [f"{self.url}", *table]
        out.append(
            f"listed in {self.seconds:.2f} s: {self.requests:,} LIST requests, "
            f"{self.tasks:,} prefixes in parallel (concurrency {self.concurrency})"
        )
        return "\n".join(out) + "\n"


def inventory(
    url: str,
    opts: S3Options | None = None,
    *,
    depth: int = 1,
    concurrency: int | None = None,
    progress: Progress | None = None,
) -> Inventory:
    """Count the objects and bytes below ``s3://bucket[/prefix]``, in total and per prefix.

    Parameters
    ----------
    url : str
        ``s3://BUCKET`` or ``s3://BUCKET/PREFIX`` (whole path segments, as in
        :func:`pangeo_hpc.s3.listing.list_objects`).
    opts : S3Options, optional
        Endpoint, credentials, region; default :meth:`S3Options.resolve`.
    depth : int
        Path segments below ``url`` that make a row of the breakdown: 1 gives ``1979/``,
        ``1980/``, ...; 2 gives ``1979/01/``, ... (and ``1979/`` for the objects directly in
        it). 0: totals only.
    concurrency : int, optional
        LIST requests in flight at once; default ``pangeo-hpc.s3.list-concurrency`` (64).
    progress : callable, optional
        Called with the number of objects counted so far, after each batch.

    Returns
    -------
    Inventory
        Totals, the per-prefix breakdown, the wall time and the number of LIST requests.

    Raises
    ------
    InputError
        As :func:`pangeo_hpc.s3.listing.list_objects`, and for a negative ``depth``.

    Examples
    --------
    >>> inv = inventory("s3://era5-pds", S3Options(anon=True))  # doctest: +SKIP
    >>> print(inv.to_table())                                    # doctest: +SKIP
    """
    if depth < 0:
        raise InputError(f"depth {depth} is negative: use 0 (totals only), 1, 2, ...")
    totals: dict[str, list[int]] = {}

    def group(key: str, root: str) -> str:
        """The row of an object: its first ``depth`` folders below ``root``."""
        folders = key[len(root) + 1 if root else 0 :].split("/")[:-1][:depth]
        return "".join(f + "/" for f in folders)

    def add(row: str, objects: int, nbytes: int) -> None:
        cell = totals.setdefault(row, [0, 0])
        cell[0] += objects
        cell[1] += nbytes

    def body(lister: Lister, root: str) -> Inventory:
        started = time.perf_counter()

        def take(prefix: str | None, batch: Any) -> None:
            if prefix is None:  # from discovery, at most `depth` levels down: each its row
                for o in batch:
                    add(group(o["path"], root), 1, o["size"])
            else:  # a fully listed prefix, `depth` or more levels down: all in one row
                add(group(prefix + "/", root), batch.num_rows, int(batch["size"].to_numpy().sum()))

        # Arrow batches: sizes are summed without a Python object per key (20 % less CPU
        # than lists of dicts, measured on 100,000 keys)
        tasks = scan(lister, root, depth, take, arrow=True)
        rows = [PrefixTotals(p, n, b) for p, (n, b) in sorted(totals.items())]
        return Inventory(
            url=url,
            objects=sum(r.objects for r in rows),
            bytes=sum(r.bytes for r in rows),
            prefixes=rows if depth > 0 else [],
            depth=depth,
            seconds=time.perf_counter() - started,
            requests=lister.requests,
            concurrency=lister.concurrency,
            tasks=tasks,
        )

    return listing(url, opts, concurrency, progress, body)
