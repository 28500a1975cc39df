"""The identity of an input file: one :class:`Stamp` for every cache that depends on a file.

A cache entry made from a file is valid for exactly the version of the file it was made
from. Which fields say "the same version" is decided here once, for the state cache
(:mod:`pangeo_hpc.batch.incremental.state_cache`), the catalog's scan cache
(:mod:`pangeo_hpc.io.scan_cache`) and the byte-range indexes of S3 objects
(:mod:`pangeo_hpc.io.references`), so that the weakest check never guards the cache whose
staleness costs most (a wrong answer). The fields are those git's index compares:

* **local files**: device, inode, size, mtime and ctime (nanoseconds). A file rewritten in
  place with its mtime put back (``touch -r``, ``cp -p``, ``rsync -t``, ``wget -N``) has a
  new ctime: the kernel sets it at every write and no user call can set it back. A file
  replaced by a copy has a new inode (and ctime).
* **S3 objects**: size, ETag and version id (where the bucket keeps versions). An object
  written again has a new ETag (and version).
* **files on FUSE mounts** (rclone, s3fs, ...), where ctime is the mtime and the inode a
  number made from the path: a content fingerprint besides
  (:mod:`pangeo_hpc.io.fingerprint`).

The path is part of the identity: the same bytes at another path are another file (a
cached state never outlives a rename; a false miss is a re-read, a false hit a wrong
answer). A stamp is made where a file is first looked at (the catalog's ``stat`` or the
bucket listing) and carried with the dataset (``encoding["source_stamps"]``), never made
twice per run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Stamp"]


@dataclass(frozen=True, slots=True)
class Stamp:
    """What identifies one version of one file or object.

    Attributes
    ----------
    path : str
        An absolute local path, or ``s3://bucket/key``.
    size : int
        Bytes.
    mtime_ns, ctime_ns, inode, device : int or None
        A local file's ``os.stat`` fields; ``None`` for an S3 object.
    etag, version : str or None
        An S3 object's ETag and version id; ``None`` for a local file (and ``version`` for
        a bucket without versioning).
    fingerprint : str or None
        A digest of the file's storage map and sampled bytes, for a file on a file system
        that does not keep ctime and inode (FUSE: :mod:`pangeo_hpc.io.fingerprint`);
        ``None`` elsewhere.

    Examples
    --------
    >>> s = Stamp.of_object("s3://bucket/tas.nc", 1024, '"9b2cf535f27731c974343645a3985328"')
    >>> s.size, s.etag, s.inode
    (1024, '"9b2cf535f27731c974343645a3985328"', None)
    """

    path: str
    size: int
    mtime_ns: int | None = None
    ctime_ns: int | None = None
    inode: int | None = None
    device: int | None = None
    etag: str | None = None
    version: str | None = None
    fingerprint: str | None = None

    @classmethod
    def of_stat(cls, path: str | os.PathLike[str], st: os.stat_result) -> Stamp:
        """The stamp of the local file ``path`` whose ``os.stat`` is ``st``.

        Parameters
        ----------
        path : str | os.PathLike[str]
            A local file.
        st : os.stat_result
            Its ``os.stat``.

        Returns
        -------
        Stamp
            The stamp.

        Examples
        --------
        >>> import os, pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "tas.nc")
        ...     _ = pathlib.Path(path).write_bytes(b"1234")
        ...     stamp = Stamp.of_stat(path, os.stat(path))
        >>> stamp.size, stamp.inode is not None, stamp.etag
        (4, True, None)
        """
        return cls(
            os.fspath(path),
            int(st.st_size),
            mtime_ns=int(st.st_mtime_ns),
            ctime_ns=int(st.st_ctime_ns),
            inode=int(st.st_ino),
            device=int(st.st_dev),
        )

    @classmethod
    def of_file(cls, path: str | os.PathLike[str]) -> Stamp:
        """The stamp of the local file ``path`` now (made absolute, links kept).

        Parameters
        ----------
        path : str | os.PathLike[str]
            A local file.

        Returns
        -------
        Stamp
            The stamp.

        Raises
        ------
        FileNotFoundError
            If it does not exist.

        Examples
        --------
        >>> import os, pathlib, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "tas.nc")
        ...     _ = pathlib.Path(path).write_bytes(b"1234")
        ...     stamp = Stamp.of_file(path)
        >>> stamp.path == path, stamp.size, stamp.ctime_ns > 0
        (True, 4, True)
        """
        local = os.path.abspath(os.path.expanduser(os.fspath(path)))
        return cls.of_stat(local, os.stat(local))

    @classmethod
    def of_object(cls, url: str, size: int, etag: str | None, version: str | None = None) -> Stamp:
        """The stamp of the S3 object ``url`` from a listing or a HEAD request.

        Parameters
        ----------
        url : str
            The object's ``s3://`` URL.
        size : int
            Its size.
        etag : str | None
            Its ETag, or ``None``.
        version : str | None, optional
            Its version id, or ``None``.

        Returns
        -------
        Stamp
            The stamp.

        Examples
        --------
        >>> Stamp.of_object("s3://bucket/tas.nc", 1024, '"abc"', version="v1").fields
        ['s3://bucket/tas.nc', 1024, None, None, None, None, '"abc"', 'v1', None]
        """
        return cls(
            url,
            int(size),
            etag=None if etag is None else str(etag),
            version=None if version is None else str(version),
        )

    @property
    def identity(self) -> list[Any]:
        """Every field but the path, as a JSON-able list (what a cache entry stores and
        compares when it is filed under the path already)."""
        return [
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.inode,
            self.device,
            self.etag,
            self.version,
            self.fingerprint,
        ]

    @property
    def fields(self) -> list[Any]:
        """The path and :attr:`identity`: what a cache key holds of this file."""
        return [self.path, *self.identity]
