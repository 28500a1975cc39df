"""rclone mounts: where rclone keeps the bytes it has fetched (its VFS cache)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .detect import FsInfo


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
    """The VFS cache of one rclone mount (``--vfs-cache-mode full``)."""

    mount_point: Path
    cache_dir: Path
    _root: Path | None = field(default=None, repr=False)

    @classmethod
    def for_mount(cls, info: FsInfo) -> RcloneCache | None:
        args = _rclone_args(info.mount_point)
        if args is None:
            return None
        cache = _option(args, "--cache-dir") or os.path.expanduser("~/.cache/rclone")
        return cls(Path(info.mount_point), Path(cache))

    def data_file(self, path: Path) -> Path | None:
        """The cache file that holds (part of) ``path``, if rclone has fetched any of it."""
        rel = Path(os.path.realpath(path)).relative_to(self.mount_point)
        if self._root is None:
            vfs = self.cache_dir / "vfs"
            hits = list(vfs.glob(f"*/{rel}")) + list(vfs.glob(f"*/*/{rel}")) if vfs.is_dir() else []
            if not hits:
                return None
            self._root = Path(str(hits[0])[: -len(str(rel))])
        candidate = self._root / rel
        return candidate if candidate.exists() else None

    def cached_bytes(self, path: Path, size: int) -> int:
        """Bytes of ``path`` present in the cache (its data file is sparse)."""
        data = self.data_file(path)
        if data is None:
            return 0
        return min(data.stat().st_blocks * 512, size)
