"""The options every case takes (--repeat, --quick, --cache, --workers, --source)."""

from __future__ import annotations

import argparse
import os
from typing import Any


def parser(doc: str | None, **defaults: Any) -> argparse.ArgumentParser:
    """The options every case takes: --repeat, --quick, --cache, --workers."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--repeat",
        type=int,
        help=f"timed runs per case (default {defaults.get('repeat', 3)}; --quick 1)",
    )
    p.add_argument("--quick", action="store_true", help="small data, one run: checks the wiring")
    p.add_argument(
        "--cache",
        default=defaults.get("cache", "warm,cold"),
        help="page-cache states to time, comma separated: warm, cold (default %(default)s)",
    )
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="Dask worker processes")
    return p


def add_source(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--source TREE`` (an existing era5-pds tree of daily SST, read, never written) and
    ``--period A..B`` (its months)."""
    p.add_argument("--source", default=default, help="an existing era5-pds tree of SST to read")
    p.add_argument("--period", default="2000-01..2019-12", help="months of --source, A..B")


def finish_args(a: argparse.Namespace, default_repeat: int = 3) -> argparse.Namespace:
    if a.repeat is None:
        a.repeat = 1 if a.quick else default_repeat
    a.caches = [c.strip() for c in a.cache.split(",") if c.strip()]
    bad = set(a.caches) - {"warm", "cold"}
    if bad:
        raise SystemExit(f"--cache {a.cache!r}: choose from warm, cold (e.g. --cache warm)")
    return a
