"""Verbs for S3 buckets: inventory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pangeo_hpc.cli.common import Verb, add_s3_args, positive_int
from pangeo_hpc.cli.progress import count_progress
from pangeo_hpc.errors import InputError


def _depth(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0, e.g. 1")
    return int(text)


def _inventory_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="s3://BUCKET or s3://BUCKET/PREFIX")
    p.add_argument(
        "--depth",
        type=_depth,
        default=1,
        metavar="N",
        help="path levels below the URL per row of the breakdown (default 1; 0: totals only)",
    )
    p.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="LIST requests in flight (default: pangeo-hpc.s3.list-concurrency, 64)",
    )
    p.add_argument(
        "--json",
        metavar="FILE|-",
        help="write the inventory as JSON to FILE (whole or not at all), or to stdout with -; "
        "the table then goes to stderr",
    )
    add_s3_args(p)
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _inventory(a: argparse.Namespace) -> int:
    from pangeo_hpc.s3.options import S3Options
    from pangeo_hpc.storage.inventory import inventory
    from pangeo_hpc.write.guard import check_file
    from pangeo_hpc.write.outputs import write_json

    out: Path | None = None
    if a.json not in (None, "-"):
        out = check_file(a.json, flag="--json")
        if not out.parent.is_dir():
            raise InputError(
                f"folder {str(out.parent)!r} of --json {a.json!r} does not exist: create it "
                "or write to an existing folder (or - for stdout)"
            )
    opts = S3Options.resolve(endpoint_url=a.endpoint_url, anon=a.anon or None)
    show, end = count_progress(f"listing {a.url}")
    try:
        inv = inventory(
            a.url,
            opts,
            depth=a.depth,
            concurrency=a.concurrency,
            progress=None if a.no_progress else show,
        )
    finally:
        end()

    table = sys.stderr if a.json == "-" else sys.stdout
    print(inv.to_table(), end="", file=table)
    if a.json == "-":
        print(inv.to_json(), end="")
    elif out is not None:
        write_json(out, inv.to_dict(), flag="--json")
        print(f"written {out}", file=table)
    if inv.objects == 0:
        print(
            f"note: no objects below {a.url!r}; a prefix matches whole path segments "
            "(s3://b/2019 lists 2019/..., not 2019-old/...)",
            file=sys.stderr,
        )
    return 0


VERBS = [
    Verb(
        "inventory",
        "count the objects and bytes under an S3 prefix",
        "Count the objects and bytes below s3://BUCKET[/PREFIX], in total and per prefix, "
        "with many LIST requests in parallel over disjoint prefixes.",
        _inventory_args,
        _inventory,
    ),
]
