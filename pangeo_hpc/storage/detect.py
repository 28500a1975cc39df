"""Which file system a path is on: ``statfs`` magic numbers and ``/proc/self/mountinfo``."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.checks import check_path

#: f_type of statfs(2) -> name (linux/magic.h and the file systems' own headers)
MAGIC = {
    0x0BD00BD0: "lustre",
    0x6969: "nfs",
    0x65735546: "fuse",
    0xEF53: "ext4",
    0x58465342: "xfs",
    0x01021994: "tmpfs",
    0x794C7630: "overlay",
    0x9123683E: "btrfs",
    0x2FC12FC1: "zfs",
    0x47504653: "gpfs",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x19830326: "beegfs",
    0x00C36400: "ceph",
}
#: file systems where HDF5's file locks fail or serialise
NO_LOCKS = ("lustre", "nfs", "fuse", "gpfs", "cifs", "smb2", "beegfs", "ceph")


class _Statfs(ctypes.Structure):
    _fields_ = [
        ("f_type", ctypes.c_long),
        ("f_bsize", ctypes.c_long),
        ("f_blocks", ctypes.c_ulong),
        ("f_bfree", ctypes.c_ulong),
        ("f_bavail", ctypes.c_ulong),
        ("f_files", ctypes.c_ulong),
        ("f_ffree", ctypes.c_ulong),
        ("f_fsid", ctypes.c_int * 2),
        ("f_namelen", ctypes.c_long),
        ("f_frsize", ctypes.c_long),
        ("f_flags", ctypes.c_long),
        ("f_spare", ctypes.c_long * 4),
    ]


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


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    """The C library, found once (``find_library`` runs ldconfig: about a millisecond)."""
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def statfs_magic(path: str | Path) -> int:
    """``f_type`` of ``statfs(path)``.

    Parameters
    ----------
    path : str | Path
        A path that exists.

    Returns
    -------
    int
        The file system's magic number.

    Raises
    ------
    InputError
        When ``path`` cannot be examined.
    """
    libc = _libc()
    buf = _Statfs()
    if libc.statfs(os.fsencode(str(path)), ctypes.byref(buf)) != 0:
        err = ctypes.get_errno()
        raise InputError(f"cannot inspect {str(path)!r}: {os.strerror(err)}")
    return buf.f_type & 0xFFFFFFFF


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, type, source) of every mount, from /proc/self/mountinfo.

    Returns
    -------
    list[tuple[str, str, str]]
        One tuple per mount, in the file's order.
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
