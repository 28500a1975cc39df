"""Verbs for storage: hydration, warmup, stage."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from ..errors import InputError
from .common import _byte_progress, _Parser, _positive_int


def _hydration(argv: Sequence[str]) -> int:
    from ..storage import hydration

    p = _Parser(
        prog="hydration",
        description="How much of a tree is loaded on a lazily "
        "loading file system (FSx for Lustre, rclone mount, any cache).",
    )
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="the full per-file report as JSON")
    p.add_argument("--files", action="store_true", help="one line per file")
    a = p.parse_args(argv)
    report = hydration(a.path)
    if a.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    if a.files:
        for f in report.files:
            print(f"{f.state:9s} {f.loaded:>14d} / {f.size:<14d} {f.path}")
    print(report.summary())
    return 0


def _warmup(argv: Sequence[str]) -> int:
    from ..storage import warmup

    p = _Parser(
        prog="warmup",
        description="Load the bytes of lazily loaded files before a "
        "job reads them (read-through, or lfs hsm_restore on Lustre as root).",
    )
    p.add_argument("path")
    p.add_argument("--workers", type=_positive_int, help="parallel reads (default 8)")
    p.add_argument(
        "--hsm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use lfs hsm_restore (default: on Lustre as root)",
    )
    a = p.parse_args(argv)
    report = warmup(a.path, workers=a.workers, hsm=a.hsm, progress=_byte_progress("warmup"))
    print(report.summary())
    return 0 if not report.failed else 1


def _stage(argv: Sequence[str]) -> int:
    from ..storage.stage import stage

    p = _Parser(
        prog="stage",
        description="Copy an S3 prefix or a folder to a Lustre or "
        "local folder in parallel: byte ranges, checksums, striping, resumable.",
    )
    p.add_argument("src", help="s3://bucket/prefix or a folder")
    p.add_argument("dst", help="destination folder")
    p.add_argument("--threads", type=_positive_int, default=8)
    p.add_argument("--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:8333")
    p.add_argument("--anon", action="store_true", help="no credentials (public buckets)")
    a = p.parse_args(argv)
    opts: dict = {}
    if a.src.startswith("s3://"):
        opts = {"anon": a.anon}
        if a.endpoint_url:
            opts["client_kwargs"] = {"endpoint_url": a.endpoint_url}
    elif a.anon or a.endpoint_url:
        raise InputError("--anon and --endpoint-url apply to s3:// sources only")
    report = stage(
        a.src, a.dst, storage_options=opts, threads=a.threads, progress=_byte_progress("stage")
    )
    print(report.summary())
    return 0 if not report.failed else 1
