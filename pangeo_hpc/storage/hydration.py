"""How much of a tree is really on the file system (hydrated) and how much is only metadata.

FSx for Lustre imports an S3 bucket as metadata: ``ls -l`` shows the size, ``du`` shows 512
bytes, and the bytes come from S3 on first read. The report tells, per file, whether it is
``released`` (no bytes here), ``partial`` or ``loaded``, and the totals:

* on Lustre from ``lfs hsm_state`` (released or not);
* on an rclone FUSE mount from rclone's VFS cache (the bytes it has fetched);
* elsewhere from allocated blocks against the size (``st_blocks`` vs ``st_size``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import format_bytes
from pangeo_hpc.storage.detect import detect
from pangeo_hpc.storage.rclone import RcloneCache

STATES = ("released", "partial", "loaded", "missing")


@dataclass(frozen=True)
class FileState:
    """One file: its size, the bytes present here, and the state that follows.

    Attributes
    ----------
    path : str
        The file.
    size : int
        Its size in bytes.
    loaded : int
        The bytes present on this file system.
    state : {"released", "partial", "loaded", "missing"}
        What follows.

    Examples
    --------
    >>> FileState("/fsx/era5/a.nc", size=100, loaded=40, state="partial")
    FileState(path='/fsx/era5/a.nc', size=100, loaded=40, state='partial')
    """

    path: str
    size: int
    loaded: int
    state: str


@dataclass
class HydrationReport:
    """Per-file states and totals of a tree.

    Attributes
    ----------
    root : str
        The tree.
    filesystem : str
        Its file system's kind.
    method : str
        How the states were read (``lfs hsm_state``, rclone's cache, allocated blocks).
    files : list of FileState
        One per file.

    Examples
    --------
    >>> files = [
    ...     FileState("/fsx/era5/a.nc", 100, 100, "loaded"),
    ...     FileState("/fsx/era5/b.nc", 100, 0, "released"),
    ... ]
    >>> HydrationReport("/fsx/era5", "lustre", "hsm", files).summary()
    '/fsx/era5 (lustre, by hsm): 2 files (1 released, 1 loaded); 100 B of 200 B loaded (50.0 %)'
    """

    root: str
    filesystem: str
    method: str
    files: list[FileState] = field(default_factory=list)

    @property
    def bytes_total(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def bytes_loaded(self) -> int:
        return sum(f.loaded for f in self.files)

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(f.state for f in self.files)
        return {s: c.get(s, 0) for s in STATES}

    def summary(self) -> str:
        """One line: files by state and bytes loaded of bytes total.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> files = [FileState("/fsx/era5/a.nc", 100, 100, "loaded")]
        >>> HydrationReport("/fsx/era5", "lustre", "hsm", files).summary()
        '/fsx/era5 (lustre, by hsm): 1 files (1 loaded); 100 B of 100 B loaded (100.0 %)'
        """
        pct = 100 * self.bytes_loaded / self.bytes_total if self.bytes_total else 100.0
        counts = ", ".join(f"{n} {s}" for s, n in self.counts.items() if n)
        return (
            f"{self.root} ({self.filesystem}, by {self.method}): {len(self.files)} files "
            f"({counts or 'none'}); {format_bytes(self.bytes_loaded)} of "
            f"{format_bytes(self.bytes_total)} loaded ({pct:.1f} %)"
        )

    def to_dict(self) -> dict:
        """The report as plain data (JSON-ready): totals, and each file's state.

        Returns
        -------
        dict
            The data.

        Examples
        --------
        >>> files = [FileState("/fsx/era5/a.nc", 100, 40, "partial")]
        >>> data = HydrationReport("/fsx/era5", "lustre", "hsm", files).to_dict()
        >>> data["bytes_loaded"], data["counts"]["partial"], data["per_file"][0]["state"]
        (40, 1, 'partial')
        """
        return {
            "root": self.root,
            "filesystem": self.filesystem,
            "method": self.method,
            "files": len(self.files),
            "bytes_total": self.bytes_total,
            "bytes_loaded": self.bytes_loaded,
            "counts": self.counts,
            "per_file": [asdict(f) for f in self.files],
        }


def _list_files(path: str | Path) -> list[Path]:
    """Every regular file under ``path`` (or ``path`` itself), sorted."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"path {str(path)!r} does not exist: give a file or folder")
    if p.is_file():
        return [p]
    return sorted(q for q in p.rglob("*") if q.is_file() and not q.is_symlink())


def _state(size: int, loaded: int) -> str:
    if loaded >= size:
        return "loaded"
    return "released" if loaded == 0 else "partial"


def hydration(path: str | Path, files: Iterable[str | Path] | None = None) -> HydrationReport:
    """Hydration of every file under ``path`` (or of ``files``, which lie under it).

    Parameters
    ----------
    path : str or Path
        A folder (or file).
    files : iterable of str or Path, optional
        Only these files, which lie under ``path``.

    Returns
    -------
    HydrationReport
        Each file's state, and the totals.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.nc").write_bytes(b"x" * 8192)
    >>> hydration(d).counts["loaded"]
    1
    """
    info = detect(path)
    paths = [Path(f) for f in files] if files is not None else _list_files(path)
    if info.kind == "lustre" and shutil.which("lfs"):
        return HydrationReport(info.path, info.kind, "lfs hsm_state", _lustre(paths))
    cache = RcloneCache.for_mount(info) if info.mount_type.startswith("fuse.rclone") else None
    if cache is not None:
        states = [_probe(p, lambda q, st: cache.cached_bytes(q, st.st_size)) for p in paths]
        return HydrationReport(
            info.path, f"{info.kind} ({info.mount_type})", "rclone cache", states
        )
    states = [_probe(p, lambda q, st: min(st.st_blocks * 512, st.st_size)) for p in paths]
    return HydrationReport(info.path, info.kind, "allocated blocks", states)


def _probe(p: Path, loaded_of) -> FileState:
    try:
        st = p.stat()
    except FileNotFoundError:
        return FileState(str(p), 0, 0, "missing")
    loaded = loaded_of(p, st)
    return FileState(str(p), st.st_size, loaded, _state(st.st_size, loaded))


def _lustre(paths: list[Path], batch: int = 1000) -> list[FileState]:
    """``lfs hsm_state`` in batches: ``released`` files have no bytes on the OSTs."""
    out: list[FileState] = []
    for i in range(0, len(paths), batch):
        chunk = paths[i : i + batch]
        r = subprocess.run(["lfs", "hsm_state", *map(str, chunk)], capture_output=True, text=True)
        flags = {}
        for line in r.stdout.splitlines():
            name, _, rest = line.partition(": ")
            flags[name] = rest
        for p in chunk:
            try:
                size = p.stat().st_size
            except FileNotFoundError:
                out.append(FileState(str(p), 0, 0, "missing"))
                continue
            released = "released" in flags.get(str(p), "")
            out.append(
                FileState(
                    str(p), size, 0 if released else size, "released" if released else "loaded"
                )
            )
    return out


__all__ = ["FileState", "HydrationReport", "hydration"]
