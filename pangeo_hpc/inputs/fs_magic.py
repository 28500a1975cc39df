"""Which kind of file system a path is on, from ``statfs(2)``'s magic number: ctypes and
the standard library only, so that a file's stamp (:mod:`pangeo_hpc.io.fingerprint`) asks
it without importing :mod:`pangeo_hpc.storage` (whose survey imports NumPy).
:mod:`pangeo_hpc.storage.detect` adds the mount table."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from pathlib import Path

from pangeo_hpc.errors import InputError

__all__ = ["MAGIC", "statfs_magic"]

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


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    """The C library, found once (``find_library`` runs ldconfig: about a millisecond)."""
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def statfs_magic(path: str | Path) -> int:
    """``f_type`` of ``statfs(path)``.

    Parameters
    ----------
    path : str or Path
        A path that exists.

    Returns
    -------
    int
        The file system's magic number.

    Raises
    ------
    InputError
        When ``path`` cannot be examined.

    Examples
    --------
    >>> hex(statfs_magic("/proc"))  # procfs, on every Linux
    '0x9fa0'
    >>> MAGIC.get(statfs_magic("/scratch/run"))  # "lustre" on Lustre  # doctest: +SKIP
    """
    libc = _libc()
    buf = _Statfs()
    if libc.statfs(os.fsencode(str(path)), ctypes.byref(buf)) != 0:
        err = ctypes.get_errno()
        raise InputError(f"cannot inspect {str(path)!r}: {os.strerror(err)}")
    return buf.f_type & 0xFFFFFFFF
