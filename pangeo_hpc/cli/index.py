"""Verb ``index``: byte-range indexes of the NetCDF4 objects under an S3 prefix."""

from __future__ import annotations

import argparse

from pangeo_hpc.cli.common import (
    Verb,
    add_cluster_args,
    add_s3_args,
    running_cluster_from,
    s3_options_from,
)
from pangeo_hpc.cli.progress import step_progress


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", help="s3://bucket[/prefix] of a tree in the era5-pds layout")
    p.add_argument("--variable", help="only this variable's monthly files (default: all .nc)")
    p.add_argument(
        "--start", help="first month, YYYY-MM (without --variable: every variable's files)"
    )
    p.add_argument("--end", help="last month, YYYY-MM (default: the last there is)")
    p.add_argument("--rebuild", action="store_true", help="index again even if up to date")
    add_s3_args(p)
    add_cluster_args(p)


def _index(a: argparse.Namespace) -> int:
    from pangeo_hpc.io.references import build_index, claim_cache
    from pangeo_hpc.io.s3_objects import objects_to_index

    opts = s3_options_from(a, a.url)
    stamps = objects_to_index(a.url, opts, variable=a.variable, start=a.start, end=a.end)
    claim_cache()  # before a cluster starts
    print(f"index: {len(stamps)} objects under {a.url}")
    with running_cluster_from(a) as (_cluster, client):
        progress = step_progress("index", "objects")
        report = build_index(stamps, opts, rebuild=a.rebuild, client=client, progress=progress)
    print(report.summary())
    return 0 if not report.failed else 1


VERBS = [
    Verb(
        "index",
        "build byte-range indexes of NetCDF4 objects on S3",
        "Index where every compressed chunk lies in the NetCDF4/HDF5 objects under an S3 "
        "prefix (kerchunk), in parallel on Dask workers. Recipes and open_era5 reading s3:// "
        "use the indexes automatically; an index is rebuilt only when its object changes "
        "(ETag, size).",
        _index_args,
        _index,
    ),
]
