"""rclone mounts: where rclone keeps the bytes it has fetched (its VFS cache)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pangeo_hpc.storage.detect import FsInfo


def _rclone_args(mount_point: str) -> list[str] | None:
    """Command line of the ``rclone mount`` process serving ``mount_point``."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        if args and os.path.basename(args[0]) == "rclone" and "mount" in args[1:3]:
            if any(os.path.realpath(a) == mount_point for a in args[2:] if a.startswith("/")):
                return args
    return None


def _option(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


@dataclass
class RcloneCache:
    """The VFS cache of one rclone mount (``--vfs-cache-mode full``).

    Attributes
    ----------
    mount_point : Path
        Where the bucket is mounted.
    cache_dir : Path
        rclone's ``--cache-dir``.
    bucket : str
        The bucket (and prefix) mounted.

    Examples
    --------
    >>> from pathlib import Path
    >>> cache = RcloneCache(Path("/mnt/era5"), Path.home() / ".cache/rclone", "era5-pds")
    >>> cache.bucket
    'era5-pds'
    """

    mount_point: Path
    cache_dir: Path
    bucket: str = ""
    _root: Path | None = field(default=None, repr=False)

    @classmethod
    def for_mount(cls, info: FsInfo) -> RcloneCache | None:
        """The cache of the rclone mount ``info`` describes, from the command line of its rclone
        process; ``None`` when that is not found.

        Parameters
        ----------
        info : FsInfo
            A mount, as :func:`~pangeo_hpc.storage.detect.detect` describes it.

        Returns
        -------
        RcloneCache or None
            The cache, or ``None``.

        Examples
        --------
        >>> from pangeo_hpc.storage.detect import detect
        >>> cache = RcloneCache.for_mount(detect("/mnt/era5"))  # an rclone mount  # doctest: +SKIP
        >>> cache.cache_dir  # rclone's --cache-dir  # doctest: +SKIP
        """
        args = _rclone_args(info.mount_point)
        if args is None:
            return None
        cache = _option(args, "--cache-dir") or os.path.expanduser("~/.cache/rclone")
        remote = args[args.index("mount") + 1]
        bucket = remote.rpartition(":")[2].strip("/")  # ":s3,opts:BUCKET/prefix" -> path
        return cls(Path(info.mount_point), Path(cache), bucket)

    def data_file(self, path: Path) -> Path | None:
        """The cache file that holds (part of) ``path``, if rclone has fetched any of it.

        rclone 1.60 keeps the bytes in ``CACHE/vfs/REMOTE/BUCKET/PATH``: a sparse file of the
        object's size whose allocated blocks are the ranges it has downloaded (an on-the-fly
        remote's name is ``:s3{HASH}``).

        Parameters
        ----------
        path : Path
            A file below the mount point.

        Returns
        -------
        Path | None
            The cache file, or ``None``.

        Examples
        --------
        >>> from pathlib import Path
        >>> data = Path("rc/cache/vfs/:s3abc/era5-pds/2019/a.nc")
        >>> data.parent.mkdir(parents=True); _ = data.write_bytes(b"x" * 8192)
        >>> Path("rc/mnt/2019").mkdir(parents=True)
        >>> cache = RcloneCache(Path("rc/mnt").resolve(), Path("rc/cache"), "era5-pds")
        >>> print(cache.data_file(Path("rc/mnt/2019/a.nc")))
        rc/cache/vfs/:s3abc/era5-pds/2019/a.nc
        >>> cache.data_file(Path("rc/mnt/2019/b.nc")) is None
        True
        """
        rel = Path(os.path.realpath(path)).relative_to(self.mount_point)
        if self._root is None:
            vfs = self.cache_dir / "vfs"
            remotes = [r / self.bucket for r in vfs.iterdir()] if vfs.is_dir() else []
            roots = [r for r in remotes if r.is_dir()]
            if len(roots) != 1:
                return None  # nothing cached yet (or several remotes: cannot tell)
            self._root = roots[0]
        candidate = self._root / rel
        return candidate if candidate.exists() else None

    def cached_bytes(self, path: Path, size: int) -> int:
        """Bytes of ``path`` present in the cache (its data file is sparse).

        Parameters
        ----------
        path : Path
            A file below the mount point.
        size : int
            Its size.

        Returns
        -------
        int
            Bytes.

        Examples
        --------
        >>> from pathlib import Path
        >>> data = Path("rc2/cache/vfs/:s3abc/era5-pds/2019/a.nc")
        >>> data.parent.mkdir(parents=True); _ = data.write_bytes(b"x" * 8192)
        >>> Path("rc2/mnt/2019").mkdir(parents=True)
        >>> cache = RcloneCache(Path("rc2/mnt").resolve(), Path("rc2/cache"), "era5-pds")
        >>> cache.cached_bytes(Path("rc2/mnt/2019/a.nc"), 8192)
        8192
        """
        data = self.data_file(path)
        if data is None:
            return 0
        return min(data.stat().st_blocks * 512, size)
