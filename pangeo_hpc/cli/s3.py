"""Verbs for S3 buckets: inventory, cleanup."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pangeo_hpc.cli.common import Verb, add_s3_args, positive_int, s3_options_from
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
        help="write the inventory as JSON to FILE or s3://BUCKET/KEY (whole or not at all), or "
        "to stdout with -; "
        "the table then goes to stderr",
    )
    add_s3_args(p)
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _inventory(a: argparse.Namespace) -> int:
    from pangeo_hpc.storage.inventory import inventory
    from pangeo_hpc.write.outputs import write_json
    from pangeo_hpc.write.targets import check_output_file, output_file

    out: Path | str | None = None
    opts = s3_options_from(a, a.url, always=True)
    writes = opts.for_writing()
    if a.json not in (None, "-"):
        out = check_output_file(a.json, flag="--json", inputs=[a.url], s3=writes)
        if isinstance(out, Path) and not out.parent.is_dir():
            raise InputError(
                f"folder {str(out.parent)!r} of --json {a.json!r} does not exist: create it "
                "or write to an existing folder (or - for stdout)"
            )
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
        with output_file(out, flag="--json", inputs=[a.url], s3=writes) as dest:
            write_json(dest, inv.to_dict(), flag="--json")
        print(f"written {out}", file=table)
    if inv.objects == 0:
        print(
            f"note: no objects below {a.url!r}; a prefix matches whole path segments "
            "(s3://b/2019 lists 2019/..., not 2019-old/...)",
            file=sys.stderr,
        )
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0, e.g. 3600")
    return value


def _cleanup_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="an output prefix s3://BUCKET/PREFIX (a run's --out)")
    p.add_argument(
        "--min-age",
        type=_seconds,
        metavar="SECONDS",
        help="remove only objects older than this (default: pangeo-hpc.s3.cleanup-min-age, "
        "3600), so that a run uploading now keeps its own; 0: all",
    )
    add_s3_args(p)


def _cleanup(a: argparse.Namespace) -> int:
    from pangeo_hpc.write.s3_outputs import cleanup

    # removing objects needs credentials
    opts = s3_options_from(a, a.url, always=True).for_writing()
    removed, foreign = cleanup(a.url, opts, min_age=a.min_age)
    print(f"cleanup: removed {len(removed)} objects of failed or replaced runs under {a.url}")
    if foreign:
        print(
            f"cleanup: left {len(foreign)} objects that pangeo-hpc did not write (first: "
            f"{foreign[0]})",
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
    Verb(
        "cleanup",
        "remove what failed or replaced runs left under an S3 output prefix",
        "Remove the objects of runs written to s3://BUCKET/PREFIX (--out) that its "
        "summary.json does not name: uploads that failed or were killed, and runs replaced "
        "since. Only objects marked as pangeo-hpc's (x-amz-meta-pangeo-hpc) are removed.",
        _cleanup_args,
        _cleanup,
    ),
]
