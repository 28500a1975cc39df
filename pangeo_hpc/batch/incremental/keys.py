"""The keys of the state cache: an entry is found by what its value depends on.

An entry's key (:func:`entry_key`) is the SHA-256 of its files' identities
(:class:`~pangeo_hpc.inputs.stamps.Stamp`: path, device, inode, size, mtime and ctime of a
local file, with a content fingerprint on FUSE mounts; size, ETag and version of an S3
object: :func:`stamp_files`) and of the hash of the chain up to the reduction, which holds
the code of its steps (:meth:`~pangeo_hpc.batch.incremental.splitting.Split.chain_hash`),
and of the entries' format. A changed file has another key, so it invalidates only its own
state; nothing is ever looked up by path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io import fingerprint
from pangeo_hpc.s3.options import S3Options, is_s3

__all__ = ["FORMAT", "entry_key", "stamp_files"]

#: the format of entries (in every key: entries of another format are never looked up);
#: 2: stamps with ctime, inode, device, version; 3: sealed with their SHA-256; 4: sealed
#: with their XXH3-128, read as views; 5: a piece of several blocks along time keeps each
#: block's state, and its key holds how its blocks cut it
FORMAT = "pangeo-hpc-state-5"


def stamp_files(paths: Sequence[str], s3: S3Options | None = None) -> list[Stamp]:
    """The identity of each file (``os.stat``), or of each ``s3://`` object (one HEAD
    request each, 32 at a time, never from s3fs's listing cache). A dataset that the
    catalog opened carries its stamps already (``encoding["source_stamps"]``): this is for
    files given otherwise.

    Parameters
    ----------
    paths : sequence of str
        Local paths (made absolute, symbolic links kept) or ``s3://bucket/key`` URLs.
    s3 : S3Options, optional
        How to reach S3; default :meth:`S3Options.resolve`. Unused without ``s3://`` paths.

    Returns
    -------
    list of Stamp
        In the order of ``paths``.

    Raises
    ------
    FileNotFoundError
        For a file that does not exist (local or S3).

    Examples
    --------
    >>> import os
    >>> from pathlib import Path
    >>> from pangeo_hpc.batch.incremental.keys import stamp_files
    >>> _ = Path("2000-01.nc").write_bytes(bytes(10))
    >>> (stamp,) = stamp_files([os.path.abspath("2000-01.nc")])
    >>> stamp.size, stamp.etag, stamp.mtime_ns == os.stat("2000-01.nc").st_mtime_ns
    (10, None, True)
    """
    remote = [p for p in paths if is_s3(p)]
    heads: dict[str, Stamp] = {}
    if remote:
        fs = (s3 or S3Options.resolve()).filesystem()

        def head(url: str) -> Stamp:
            info = fs.info(url, refresh=True)
            etag = info.get("ETag") or info.get("etag")
            return Stamp.of_object(url, info["size"], etag, info.get("VersionId"))

        with ThreadPoolExecutor(max_workers=min(32, len(remote))) as pool:  # HEADs in flight
            heads = dict(zip(remote, pool.map(head, remote), strict=True))
    return [heads[path] if path in heads else fingerprint.stamp(path) for path in paths]


def entry_key(stamps: Sequence[Stamp], chain: str) -> str:
    """The key of the state of ``stamps`` under ``chain``: 64 hex digits (SHA-256).

    The stamps count in the order of their paths (the same files listed otherwise give the
    same key); ``chain`` is the hash of the steps up to the reduction, as the caller
    computes it.

    Parameters
    ----------
    stamps : Sequence[Stamp]
        The stamps of a piece's files.
    chain : str
        The hash of the steps up to the reduction.

    Returns
    -------
    str
        The key.

    Examples
    --------
    >>> a = Stamp("/d/2000-01.nc", 10, mtime_ns=1)
    >>> b = Stamp("/d/2000-02.nc", 10, mtime_ns=2)
    >>> entry_key([a, b], "c") == entry_key([b, a], "c") != entry_key([a, b], "d")
    True
    """
    files = sorted((s.fields for s in stamps), key=json.dumps)
    doc = json.dumps({"format": FORMAT, "chain": chain, "files": files}, separators=(",", ":"))
    return hashlib.sha256(doc.encode()).hexdigest()
