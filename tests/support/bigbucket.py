"""A bucket of 100,228 small objects in the era5-pds layout, made once and kept between runs.

Listing benchmarks and tests need a bucket big enough that listing takes a while (S3 answers
1,000 keys per LIST request: about 100 pages here), but writing 100,000 objects takes a
minute or more on a small machine. So the bucket lives in a SeaweedFS data folder that
outlives the test session (``~/.cache/pangeo-hpc/test-seaweedfs``, or the folder named by
``PANGEO_HPC_TEST_S3_CACHE``); each session starts a server on it, on free ports, and
writes the objects only if the marker object ``_SUCCESS`` is missing or from another
layout. A lock file keeps two sessions from running servers on the same folder at once.

The layout (:func:`layout`) is a pure function of the constants below, so tests know every
key and size without asking the server::

    README.txt, index.html, _SUCCESS                       3 objects at the top
    {year}/manifest.json                                   25 years, 1995-2019
    {year}/{month:02d}/checksums.md5                       300 months
    {year}/{month:02d}/data/var{j:03d}.nc                  333 per month: 99,900

Sizes are 1-64 bytes, from the key's CRC-32.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import os
import shutil
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.support.servers import SeaweedFS

__all__ = [
    "BUCKET",
    "MARKER",
    "cache_dir",
    "ensure_bucket",
    "layout",
    "persistent_server",
]

#: the bucket's name
BUCKET = "inventory-100k"
#: years of the layout (each with 12 months)
YEARS = range(1995, 2020)
#: data objects per month
PER_MONTH = 333
#: written last; its text names the layout, so that a changed layout is rebuilt
MARKER = "_SUCCESS"
#: bump when the layout changes
VERSION = 1
#: puts in flight while filling the bucket (16 to 64 measured the same here: ~1,350/s)
PUT_CONCURRENCY = 32


def _size(key: str) -> int:
    return 1 + zlib.crc32(key.encode()) % 64


def _data_keys() -> list[str]:
    keys = ["README.txt", "index.html"]
    for year in YEARS:
        keys.append(f"{year}/manifest.json")
        for month in range(1, 13):
            keys.append(f"{year}/{month:02d}/checksums.md5")
            keys += [f"{year}/{month:02d}/data/var{j:03d}.nc" for j in range(PER_MONTH)]
    return keys


def marker_text() -> bytes:
    """The content of :data:`MARKER` for this layout."""
    keys = _data_keys()
    nbytes = sum(_size(k) for k in keys)
    return f"pangeo-hpc listing test bucket v{VERSION}: {len(keys)} + 1 objects, {nbytes} bytes\n".encode()


def layout() -> dict[str, int]:
    """Every key of the bucket and its size in bytes, the marker included.

    Returns
    -------
    dict
        ``{key: size}`` (100,228 entries).
    """
    out = {k: _size(k) for k in _data_keys()}
    out[MARKER] = len(marker_text())
    return out


def body(key: str, size: int) -> bytes:
    """The bytes stored under ``key``: the key repeated, cut to ``size``."""
    unit = key.encode() + b"\n"
    return (unit * (size // len(unit) + 1))[:size]


def cache_dir() -> Path:
    """Where the server's data are kept between runs (``PANGEO_HPC_TEST_S3_CACHE`` overrides)."""
    env = os.environ.get("PANGEO_HPC_TEST_S3_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pangeo-hpc" / "test-seaweedfs"


def _store(server: SeaweedFS, bucket: str):  # -> obstore.store.S3Store
    from obstore.store import S3Store

    return S3Store(
        bucket,
        endpoint=server.endpoint_url,
        access_key_id=server.key,
        secret_access_key=server.secret,
        region="us-east-1",
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )


def ensure_bucket(server: SeaweedFS, bucket: str = BUCKET) -> float:
    """Make ``bucket`` hold exactly :func:`layout`, unless its marker says it does.

    Objects missing or of the wrong size are written (:data:`PUT_CONCURRENCY` at a time),
    others are deleted, and the marker is written last, so an interrupted run is completed
    by the next one.

    Parameters
    ----------
    server
        A running server.
    bucket
        The bucket's name.

    Returns
    -------
    float
        Seconds spent writing; 0.0 when the bucket was complete.
    """
    import obstore

    store = _store(server, bucket)
    want = marker_text()
    try:
        if bytes(obstore.get(store, MARKER).bytes()) == want:
            return 0.0
    except FileNotFoundError:  # what obstore raises for a missing key
        pass
    except Exception as exc:  # a new data folder: no bucket yet
        if "NoSuchBucket" not in str(exc):
            raise
    started = time.monotonic()
    fs = server.filesystem()
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    have = {o["path"]: o["size"] for batch in obstore.list(store, chunk_size=10_000) for o in batch}
    sizes = layout()
    del sizes[MARKER]
    todo = [k for k, n in sizes.items() if have.get(k) != n]
    extra = [k for k in have if k not in sizes]

    def put(key: str) -> None:
        obstore.put(store, key, body(key, sizes[key]))

    if todo:
        # the first write to a new bucket makes SeaweedFS grow its volumes: alone
        put(todo[0])
        # threads, not obstore's asyncio API: see pangeo_hpc.s3.listing
        with concurrent.futures.ThreadPoolExecutor(PUT_CONCURRENCY) as pool:
            for _ in pool.map(put, todo[1:]):
                pass
    if extra:
        obstore.delete(store, extra)
        _drop_empty_folders(server, bucket, extra, sizes)
    obstore.put(store, MARKER, want)
    return time.monotonic() - started


def _folders(keys: Iterable[str]) -> set[str]:
    return {k.rsplit("/", i)[0] for k in keys for i in range(1, k.count("/") + 1)}


def _drop_empty_folders(
    server: SeaweedFS, bucket: str, deleted: list[str], kept: Iterable[str]
) -> None:
    """SeaweedFS keeps the folder of a deleted object, and lists it as an object ``dir/`` of
    0 bytes; delete those of the folders of ``deleted`` that hold nothing of ``kept``
    (through boto3: obstore would send ``dir`` for ``dir/``)."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        aws_access_key_id=server.key,
        aws_secret_access_key=server.secret,
        region_name="us-east-1",
    )
    for folder in sorted(_folders(deleted) - _folders(kept), key=lambda f: -f.count("/")):
        client.delete_object(Bucket=bucket, Key=folder + "/")


class _PersistentSeaweedFS(SeaweedFS):
    """A SeaweedFS whose data folder is reused: the master's state of the last run (kept in
    a folder named after its old port) is dropped, the volumes and filer metadata are kept."""

    def start(self):  # type: ignore[override]
        if self.log_path.is_file() and self.log_path.stat().st_size > 64 << 20:
            self.log_path.unlink()  # weed.log grows by every run
        for old_log in self.workdir.glob("weed.*.log.*"):  # weed's glog files of earlier runs
            old_log.unlink(missing_ok=True)
        if self.data_dir.is_dir():
            for old in self.data_dir.glob("m[0-9]*"):
                if old.is_dir() and old.name[1:].isdigit():
                    shutil.rmtree(old, ignore_errors=True)
        return super().start()


@contextlib.contextmanager
def _locked(path: Path, timeout: float) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fd:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    fd.seek(0)
                    raise TimeoutError(
                        f"{path} is locked by another run (pid {fd.read().strip() or '?'}) for "
                        f"more than {timeout:.0f} s; set PANGEO_HPC_TEST_S3_CACHE to another folder"
                    ) from None
                time.sleep(0.5)  # poll interval for the other run's lock
        fd.seek(0)
        fd.truncate()
        fd.write(str(os.getpid()))
        fd.flush()
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def persistent_server(
    workdir: Path | None = None, *, lock_timeout: float = 600.0
) -> Iterator[SeaweedFS]:
    """A SeaweedFS on ``workdir`` (default :func:`cache_dir`) with the bucket complete.

    Parameters
    ----------
    workdir
        The folder kept between runs.
    lock_timeout
        Seconds to wait for another run that uses the same folder.

    Yields
    ------
    SeaweedFS
        The running server; its ``creation_seconds`` attribute tells how long filling the
        bucket took (0.0 if it was complete).
    """
    workdir = workdir or cache_dir()
    with _locked(workdir / "lock", lock_timeout), _PersistentSeaweedFS(workdir) as server:
        server.creation_seconds = ensure_bucket(server)  # type: ignore[attr-defined]
        yield server
