"""Verb ``index``: byte-range indexes of the NetCDF4 objects under an S3 prefix."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pangeo_hpc.cli.common import (
    Verb,
    add_cluster_args,
    add_s3_args,
    running_cluster_from,
    s3_options_from,
)
from pangeo_hpc.cli.progress import step_progress
from pangeo_hpc.errors import InputError

if TYPE_CHECKING:
    from pangeo_hpc.s3.options import S3Options


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="s3://bucket[/prefix] of a tree in the era5-pds layout")
    p.add_argument("--variable", help="only this variable's monthly files (default: all .nc)")
    p.add_argument(
        "--start", help="first month, YYYY-MM (without --variable: every variable's files)"
    )
    p.add_argument("--end", help="last month, YYYY-MM (default: the last there is)")
    p.add_argument("--rebuild", action="store_true", help="index again even if up to date")
    p.add_argument(
        "--format",
        choices=("kerchunk", "icechunk"),
        help="kerchunk: one JSON per object in the index cache, used by s3:// runs "
        "(default, pangeo-hpc.s3.index-format); icechunk: one repository of virtual "
        "references for --variable's series, written to --out (a recipe's store:)",
    )
    p.add_argument(
        "--out",
        help="with --format icechunk: the repository to write, a folder or s3://BUCKET/PREFIX",
    )
    add_s3_args(p)
    add_cluster_args(p)


def _index(a: argparse.Namespace) -> int:
    from pangeo_hpc import config
    from pangeo_hpc.io.references import build_index, claim_cache
    from pangeo_hpc.io.s3_objects import objects_to_index

    opts = s3_options_from(a, a.url)
    fmt = config.get("s3.index-format", a.format)
    if fmt not in ("kerchunk", "icechunk"):
        raise InputError(
            f"pangeo-hpc.s3.index-format {fmt!r} is not kerchunk or icechunk: set one of them"
        )
    if fmt == "icechunk":
        return _index_icechunk(a, opts)
    if a.out is not None:
        raise InputError(
            "--out is for --format icechunk: kerchunk indexes go to the index cache "
            "(pangeo-hpc.s3.index-cache); drop --out, or add --format icechunk"
        )
    stamps = objects_to_index(a.url, opts, variable=a.variable, start=a.start, end=a.end)
    claim_cache()  # before a cluster starts
    print(f"index: {len(stamps)} objects under {a.url}")
    with running_cluster_from(a) as (_cluster, client):
        progress = step_progress("index", "objects")
        report = build_index(stamps, opts, rebuild=a.rebuild, client=client, progress=progress)
    print(report.summary())
    return 0 if not report.failed else 1


def _index_icechunk(a: argparse.Namespace, opts: S3Options) -> int:
    from pangeo_hpc.io.s3_objects import objects_to_index
    from pangeo_hpc.io.virtual_refs import KIND, build_icechunk
    from pangeo_hpc.write.icechunk_out import check_repository

    if a.variable is None or a.out is None:
        raise InputError(
            "--format icechunk writes one repository of a variable's series: give "
            "--variable NAME and --out FOLDER or s3://BUCKET/PREFIX (e.g. --out sst.icechunk)"
        )
    if a.rebuild:
        raise InputError("--rebuild is for kerchunk indexes; --format icechunk builds anew")
    # before any request for the objects; the repository is written with credentials
    out = check_repository(a.out, kind=KIND, inputs=[a.url], flag="--out", s3=opts.for_writing())
    stamps = objects_to_index(a.url, opts, variable=a.variable, start=a.start, end=a.end)
    print(f"index: {len(stamps)} objects under {a.url}")
    report = build_icechunk(stamps, opts, out, variable=a.variable, source=a.url, flag="--out")
    print(report.summary())
    return 0


VERBS = [
    Verb(
        "index",
        "build byte-range indexes of NetCDF4 objects on S3",
        "Index where every compressed chunk lies in the NetCDF4/HDF5 objects under an S3 "
        "prefix (kerchunk), in parallel on Dask workers. Recipes and open_era5 reading s3:// "
        "use the indexes automatically; an index is rebuilt only when its object changes "
        "(ETag, size). With --format icechunk: one Icechunk repository of virtual "
        "references (VirtualiZarr) to a variable's objects, for a recipe's store:.",
        _index_args,
        _index,
    ),
]
