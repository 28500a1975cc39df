"""Icechunk virtual references to NetCDF4 objects on S3 (``index --format icechunk``).

Where :mod:`pangeo_hpc.io.references` keeps one kerchunk JSON per object (which
chunk lies at which byte range), this writes one Icechunk repository per variable: the
months' objects, read by VirtualiZarr's HDF5 parser (``virtualizarr.parsers.HDFParser``,
metadata only, through obstore), concatenated along time into one virtual dataset and
committed with ``vds.vz.to_icechunk``. The chunks stay where they are; the repository
holds their references (URL, offset, length), the coordinates as native data, and a
virtual chunk container for the bucket, so that ``xr.open_zarr(session.store)`` (or a
recipe's ``store:``, :func:`pangeo_hpc.io.stores.open_any_store`) reads the series as
one Zarr array, each chunk one byte-range request.

A local repository is written under a temporary name beside ``out`` and renamed into
place (:func:`pangeo_hpc.write.outputs.atomic_dir`), marked as this package's, so that a
second ``index`` replaces it whole and nothing else is ever replaced. On S3
(``--out s3://bucket/prefix``: no rename there) the rules are those of
:mod:`pangeo_hpc.write.icechunk_out` for a kind of its own (:data:`KIND`): a new or empty
prefix gets a new repository, removed again if its first commit fails; a repository whose
tip of ``main`` is a commit of ``index`` (its metadata marked,
:func:`~pangeo_hpc.write.icechunk_repo.commit_mark`) gets one commit that replaces its
whole contents, as the local rename does, and Icechunk's commit is the one step that makes
it visible (a failed run leaves the tip where it was); any other object under the prefix is
refused and nothing is written. The snapshot id (new at each build) identifies the
references; the objects' ETags are recorded in the commit's metadata. An object changed
since must be indexed again (as for kerchunk indexes).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pangeo_hpc.errors import InputError, named
from pangeo_hpc.extras import require
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.s3 import icechunk_access
from pangeo_hpc.s3.options import S3Options, is_s3, split_url
from pangeo_hpc.write.icechunk_out import check_repository, s3_repository
from pangeo_hpc.write.icechunk_repo import BRANCH, REFERENCES, commit_mark, tip, tip_is_ours
from pangeo_hpc.write.outputs import atomic_dir, mark_folder

__all__ = ["BEFORE_COMMIT", "KIND", "VirtualReport", "build_icechunk"]

#: the marker kind of a repository of virtual references this package wrote
KIND = REFERENCES
#: called with the writable session once the references are written into it, before the
#: commit: tests fail a run there
BEFORE_COMMIT: list[Callable[[Any], None]] = []


@dataclass
class VirtualReport:
    """What :func:`build_icechunk` wrote: where, from how many objects, its snapshot.

    Attributes
    ----------
    out : str
        The repository written.
    objects : int
        The objects referenced.
    snapshot : str
        The snapshot id.
    seconds : float
        Time taken.

    Examples
    --------
    >>> print(VirtualReport("s3://bucket/t2m.icechunk", 12, "ABCD1234", 3.2).summary())
    index: Icechunk virtual references to 12 objects in s3://bucket/t2m.icechunk ..., in 3.2 s
    """

    out: str
    objects: int
    snapshot: str
    seconds: float

    def summary(self) -> str:
        """One line for the command line.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> VirtualReport("/scratch/t2m.icechunk", 1, "ABCD", 0.5).summary()
        'index: Icechunk virtual references to 1 objects in /scratch/t2m.icechunk ... in 0.5 s'
        """
        return (
            f"index: Icechunk virtual references to {self.objects} objects in {self.out} "
            f"(snapshot {self.snapshot}), in {self.seconds:.1f} s"
        )


def _virtual(stamp: Stamp, registry: Any, parser: Any) -> Any:
    from virtualizarr import open_virtual_dataset

    return open_virtual_dataset(stamp.path, registry=registry, parser=parser)


def _check_regular(parts: list[Any], stamps: list[Stamp], variable: str, tname: str) -> None:
    """Refuse objects whose chunks cannot form one regular Zarr chunk grid along time:
    each object but the last must hold whole chunks, all of one length (Zarr has no
    chunks of varying length yet; a month of 31 days in chunks of 24 leaves a partial
    one). Checked before anything is written."""
    sizes = [int(p[variable].data.chunks[0]) for p in parts]
    for i, (part, size) in enumerate(zip(parts, sizes, strict=True)):
        steps = part.sizes[tname]
        if size != sizes[0] or (i < len(parts) - 1 and steps % size):
            raise InputError(
                f"{stamps[i].path} holds {steps} steps of {variable!r} in chunks of {size} "
                f"along {tname}: one Zarr array cannot reference chunks that do not tile its "
                "time axis evenly (Zarr's chunk grids are regular); index it with --format "
                "kerchunk, or convert it to Zarr (convert)"
            )


def build_icechunk(
    stamps: list[Stamp],
    opts: S3Options,
    out: str | Path,
    *,
    variable: str,
    source: str,
    flag: str = "out",
) -> VirtualReport:
    """One Icechunk repository at ``out`` of virtual references to ``stamps`` (one object
    per month of ``variable``, in time order), read with ``opts``.

    Parameters
    ----------
    stamps : list of Stamp
        The objects (``s3://`` URLs), from :func:`pangeo_hpc.io.s3_objects.objects_to_index`.
    opts : S3Options
        Endpoint and credentials of the objects (``anon`` for a public bucket); the
        repository's virtual chunk container reaches the bucket with the same endpoint.
        An ``s3://`` ``out`` is written with :meth:`S3Options.for_writing` (never
        anonymously).
    out : str or path
        A new or empty local folder or ``s3://bucket/prefix``, or a repository this
        function wrote there (the module's rules).
    variable : str
        The variable the objects hold (kept alone, with its coordinates).
    source : str
        The ``s3://`` prefix indexed: an input, that ``out`` must not be.
    flag : str
        How the user named ``out``, for messages.

    Returns
    -------
    VirtualReport

    Raises
    ------
    InputError
        For no objects, objects whose chunks do not tile the time axis, or an ``out`` that
        may not be written (an input, a folder or prefix of yours); nothing is written.

    Examples
    --------
    >>> sst, source = "sea_surface_temperature", "s3://era5-pds"
    >>> stamps = objects_to_index(source, opts, variable=sst)  # doctest: +SKIP
    >>> out = "/scratch/sst.icechunk"
    >>> report = build_icechunk(stamps, opts, out, variable=sst, source=source)  # doctest: +SKIP
    """
    require("stores", "Icechunk virtual references")
    import icechunk

    if not stamps:
        raise InputError(f"no objects of {variable!r} under {source}: nothing to index")
    t0 = time.perf_counter()
    remote = is_s3(str(out))
    writes = opts.for_writing()
    if remote:  # before any request to the objects
        out = str(check_repository(str(out), inputs=[source], flag=flag, s3=writes, kind=KIND))
    vds = _virtual_dataset(stamps, opts, variable)
    if not os.environ.get("ICECHUNK_LOG"):  # its warning that a local repository is not
        icechunk.set_logs_filter("error")  # for concurrent commits: this one is private
    prefix = icechunk_access.container_prefix(stamps[0].path)
    containers = {prefix: icechunk_access.virtual_container(prefix, opts)}
    authorize = icechunk_access.credentials([prefix], opts)
    message = f"virtual references to {len(stamps)} objects of {variable} under {source}"
    metadata = {
        **commit_mark(KIND),
        "objects": {s.path: [s.size, s.etag, s.version] for s in stamps},
    }
    if remote:
        check_repository(str(out), inputs=[source], flag=flag, s3=writes, kind=KIND)  # again
        with s3_repository(
            str(out), writes, flag=flag, containers=containers, authorize=authorize
        ) as (repo, created):
            if not created and not tip_is_ours(repo, KIND):  # a user's commit since
                raise InputError(
                    f"{named(flag, str(out))}: the tip of {BRANCH} ({tip(repo).id}) is not "
                    "a commit of pangeo-hpc index: give a new prefix (nothing was changed)"
                )
            snapshot = _commit(repo, vds, message, metadata, replace=not created)
    else:
        with atomic_dir(out, kind=KIND, inputs=[source], flag=flag) as tmp:
            config = icechunk.RepositoryConfig.default()
            config.set_virtual_chunk_container(containers[prefix])
            repo = icechunk.Repository.create(
                icechunk.local_filesystem_storage(str(tmp)),
                config,
                authorize_virtual_chunk_access=authorize,
            )
            snapshot = _commit(repo, vds, message, metadata, replace=False)
            mark_folder(tmp, KIND)
    return VirtualReport(str(out), len(stamps), snapshot, time.perf_counter() - t0)


def _virtual_dataset(stamps: list[Stamp], opts: S3Options, variable: str) -> Any:
    """The objects' virtual datasets (metadata only), checked and concatenated in time."""
    import xarray as xr
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr.parsers import HDFParser

    bucket, _ = split_url(stamps[0].path)
    registry = ObjectStoreRegistry({f"s3://{bucket}": opts.store(bucket)})
    parser = HDFParser()
    with warnings.catch_warnings():  # zlib and shuffle, as HDF5 has them: numcodecs's
        warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr version 3")
        parts = [_virtual(s, registry, parser) for s in stamps]
    tname = parts[0][variable].dims[0]
    keep = [variable, *(c for c in parts[0][variable].coords)]
    parts = [p[[variable]].reset_coords(drop=False)[[v for v in keep if v in p]] for p in parts]
    _check_regular(parts, stamps, variable, tname)
    if len(parts) == 1:  # VirtualiZarr's concat refuses a last partial chunk even alone
        return parts[0]
    return xr.concat(
        parts, dim=tname, coords="minimal", compat="override", combine_attrs="override"
    )


def _commit(repo: Any, vds: Any, message: str, metadata: dict[str, Any], *, replace: bool) -> str:
    """Write ``vds`` to a session of ``repo``'s :data:`BRANCH` and commit it; with
    ``replace``, in place of everything the tip holds (as a rebuilt local repository)."""
    from zarr.core.sync import sync  # zarr's own loop: also inside a running one (Jupyter)

    session = repo.writable_session(BRANCH)
    if replace:
        sync(session.store.clear())
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Numcodecs codecs are not in the Zarr version 3")
        vds.vz.to_icechunk(session.store)
    for hook in BEFORE_COMMIT:
        hook(session)
    return str(session.commit(message, metadata=metadata))
