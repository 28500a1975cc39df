"""Which file system a path is on: ``statfs`` magic numbers and ``/proc/self/mountinfo``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.checks import check_path
from pangeo_hpc.inputs.fs_magic import MAGIC, statfs_magic

__all__ = ["MAGIC", "NO_LOCKS", "FsInfo", "detect", "mounts", "statfs_magic"]

#: file systems where HDF5's file locks fail or serialise
NO_LOCKS = ("lustre", "nfs", "fuse", "gpfs", "cifs", "smb2", "beegfs", "ceph")


@dataclass(frozen=True)
class FsInfo:
    """A path's file system: ``kind`` from the magic number, mount point and mount type.

    Attributes
    ----------
    path : str
        The path asked about.
    kind : str
        A name of :data:`MAGIC` (``lustre``, ``nfs``, ``fuse``, ``ext4``, ...) or ``unknown``.
    magic : int
        The file system's magic number (``statfs``).
    mount_point, mount_type, source : str
        The mount that holds the path, from ``/proc/self/mountinfo``.

    Examples
    --------
    >>> from pangeo_hpc.storage.detect import detect
    >>> detect("/fsx/era5").kind  # doctest: +SKIP
    'lustre'
    """

    path: str
    kind: str
    magic: int
    mount_point: str
    mount_type: str
    source: str

    @property
    def locks_unreliable(self) -> bool:
        """True where HDF5 file locking should be off (Lustre, NFS, FUSE, ...)."""
        return self.kind in NO_LOCKS


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, type, source) of every mount, from /proc/self/mountinfo.

    Returns
    -------
    list[tuple[str, str, str]]
        One tuple per mount, in the file's order.

    Examples
    --------
    >>> any(point == "/proc" and kind == "proc" for point, kind, source in mounts())
    True
    """
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            point = left.split()[4].encode().decode("unicode_escape")
            fstype, source = right.split()[:2]
            out.append((point, fstype, source))
    return out


def detect(path: str | Path) -> FsInfo:
    """The file system ``path`` is on.

    Parameters
    ----------
    path : str or Path
        A file or folder.

    Returns
    -------
    FsInfo
        Its file system.

    Examples
    --------
    >>> detect("/proc").kind
    'unknown'
    """
    p = Path(check_path(path))
    if not p.exists():
        raise InputError(f"path {str(path)!r} does not exist: give a file or folder to inspect")
    real = os.path.realpath(p)
    magic = statfs_magic(real)
    best = ("/", "unknown", "unknown")
    for point, fstype, source in mounts():
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(
            best[0]
        ):
            best = (point, fstype, source)
    return FsInfo(real, MAGIC.get(magic, "unknown"), magic, *best)
