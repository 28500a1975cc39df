"""``stage`` checks each copy against its source, and says how: from a real SeaweedFS S3
server (single-part objects: MD5 = ETag; a multipart upload: checksums re-read from disk),
with faults put in where they happen (bytes changed on the way from S3, a write that flips a
bit, an object replaced mid-stage), the S3 options reaching the copy (endpoint, profile,
retries, counted by a throttling proxy), and the counts of many threads."""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import dask
import pytest

from pangeo_hpc import run
from pangeo_hpc.errors import InputError
from pangeo_hpc.s3 import options as s3
from pangeo_hpc.storage import detect
from pangeo_hpc.storage.stage import StageReport, stage
from tests.support.proxy import DelayProxy
from tests.support.s3env import aws_environment

BUCKET = "stage-src"
KIB = 1 << 10
RANGE = 64 * KIB  # small ranges: several per file
MD5 = "size and MD5 = ETag"
MULTIPART = "size and re-read checksum (multipart ETag)"
FOLDER = "size and re-read checksum (folder: no ETag)"


@pytest.fixture(scope="module")
def fs(seaweedfs):
    """An s3fs file system on the server (its own credentials), with the bucket made."""
    fs = seaweedfs.filesystem()
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)
    return fs


@pytest.fixture
def opts(seaweedfs, monkeypatch, tmp_path) -> s3.S3Options:
    """Credentials through the AWS chain (environment); options as a user resolves them."""
    aws_environment(monkeypatch, seaweedfs, tmp_path)
    return s3.S3Options.resolve(endpoint_url=seaweedfs.endpoint_url)


def _publish(fs, prefix: str, files: dict[str, bytes], multipart: tuple[str, ...] = ()) -> str:
    """Upload ``files`` below ``s3://BUCKET/prefix`` (one PUT each, or in 5 MiB parts for
    those named in ``multipart``); returns the URL."""
    for rel, data in files.items():
        path = f"{BUCKET}/{prefix}/{rel}"
        if rel in multipart:
            fs.pipe_file(path, data, chunksize=5 << 20)
        else:
            fs.pipe_file(path, data)
    fs.invalidate_cache()
    return f"s3://{BUCKET}/{prefix}"


def _tree(seed: int) -> dict[str, bytes]:
    """Three files of different sizes, one empty; each test's own bytes."""
    rnd = hashlib.sha256(str(seed).encode()).digest()
    return {
        "2001/01/a.nc": (rnd * (300 * KIB // 32 + 1))[: 300 * KIB + 7],
        "2001/02/b.nc": b"abc",
        "2001/empty.nc": b"",
    }


def _part(dst: Path) -> list[Path]:
    return list(dst.rglob(".*.part"))


@pytest.mark.s3
def test_single_part_objects_are_checked_against_their_etag(fs, opts, tmp_path, capsys):
    files = _tree(1)
    url = _publish(fs, "single", files)
    report = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE, threads=4)
    assert report.files == 3 and not report.failed and report.checks == {MD5: 3}
    for rel, data in files.items():
        assert (tmp_path / "dst" / rel).read_bytes() == data
    assert "checked size and MD5 = ETag for 3 files" in report.summary()
    assert "checksums verified" not in report.summary()
    # the CLI says the same
    assert run.main(["stage", url, str(tmp_path / "cli"), "--endpoint-url", opts.endpoint_url]) == 0
    out = capsys.readouterr().out
    assert "staged 3 files" in out and "checked size and MD5 = ETag for 3 files" in out


@pytest.mark.s3
def test_bytes_changed_on_the_way_are_caught_by_the_etag(fs, opts, tmp_path, monkeypatch):
    """The copy is exactly what was read (a re-read checksum passes), but not the object:
    only the MD5 against the ETag sees it. The file is not put in place."""
    import obstore

    url = _publish(fs, "on-the-way", _tree(2))
    real = obstore.get

    def corrupting(store, key, *, options=None):
        result = real(store, key, options=options)
        if key.endswith("a.nc") and options["range"][0] == RANGE:
            data = bytearray(result.bytes())
            data[5] ^= 0x01
            return SimpleNamespace(bytes=lambda: bytes(data))
        return result

    monkeypatch.setattr(obstore, "get", corrupting)
    report = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE)
    [(name, reason)] = report.failed
    assert name == f"{url}/2001/01/a.nc"
    assert "is not the ETag" in reason and "though the copy is what was read" in reason
    assert not (tmp_path / "dst" / "2001/01/a.nc").exists() and not _part(tmp_path / "dst")
    assert report.files == 2 and report.checks == {MD5: 2}


def _flip_writes_to(name: str, offset: int, monkeypatch) -> list[int]:
    """Make ``os.pwrite`` flip one bit of the range at ``offset`` that it writes into the
    temporary copy of ``name`` (a faulty write path); the offsets flipped."""
    real = os.pwrite
    flipped: list[int] = []

    def pwrite(fd, data, at):
        if at == offset and os.readlink(f"/proc/self/fd/{fd}").endswith(f".{name}.part"):
            data = bytearray(data)
            data[3] ^= 0x10
            flipped.append(at)
        return real(fd, data, at)

    monkeypatch.setattr(os, "pwrite", pwrite)
    return flipped


@pytest.mark.s3
def test_a_faulty_write_is_caught_by_the_etag_and_located(fs, opts, tmp_path, monkeypatch):
    url = _publish(fs, "faulty-write", _tree(3))
    with monkeypatch.context() as m:
        flipped = _flip_writes_to("a.nc", RANGE, m)
        report = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE)
    assert flipped == [RANGE]
    [(name, reason)] = report.failed
    assert name == f"{url}/2001/01/a.nc"
    assert "is not the ETag" in reason
    assert f"bytes {RANGE}..{2 * RANGE} differ from those read" in reason
    assert not (tmp_path / "dst" / "2001/01/a.nc").exists() and not _part(tmp_path / "dst")
    # a later stage copies it (the others are skipped)
    again = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE)
    assert again.files == 1 and again.skipped == 2 and not again.failed


@pytest.mark.s3
def test_a_multipart_object_is_checked_by_rereading_and_said_so(fs, opts, tmp_path, monkeypatch):
    big = os.urandom((5 << 20) * 2 + 3 * KIB)  # two 5 MiB parts and a short one
    url = _publish(fs, "multipart", {"m.nc": big, "s.nc": b"single"}, multipart=("m.nc",))
    etag = fs.info(f"{BUCKET}/multipart/m.nc")["ETag"]
    assert etag.strip('"').endswith("-3"), etag  # the server made a multipart ETag
    report = stage(url, tmp_path / "dst", s3=opts, range_size=1 << 20)
    assert report.checks == {MULTIPART: 1, MD5: 1} and not report.failed
    assert (tmp_path / "dst" / "m.nc").read_bytes() == big
    assert f"{MD5} for 1 file, {MULTIPART} for 1 file" in report.summary()
    # a faulty write into it is caught by the re-read, and located
    with monkeypatch.context() as m:
        flipped = _flip_writes_to("m.nc", 1 << 20, m)
        bad = stage(url, tmp_path / "bad", s3=opts, range_size=1 << 20)
    assert flipped == [1 << 20]
    assert bad.failed == [
        (f"{url}/m.nc", f"bytes {1 << 20}..{2 << 20} of the copy, re-read, differ from those read")
    ]
    assert not (tmp_path / "bad" / "m.nc").exists() and not _part(tmp_path / "bad")


@pytest.mark.s3
def test_copies_are_re_read_after_dropping_them_from_the_page_cache(
    fs, opts, tmp_path, monkeypatch
):
    url = _publish(fs, "dropped", _tree(4))
    dropped = []
    real = os.posix_fadvise

    def fadvise(fd, offset, length, advice):
        if advice == os.POSIX_FADV_DONTNEED:
            dropped.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", fadvise)
    report = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE)
    assert sorted(dropped) == [".a.nc.part", ".b.nc.part", ".empty.nc.part"]
    tmpfs = detect(tmp_path).kind == "tmpfs"
    assert report.from_memory == (3 if tmpfs else 0)


@pytest.mark.s3
def test_an_object_replaced_while_staged_is_not_mixed(fs, opts, tmp_path, monkeypatch):
    """Its ranges are asked for with the listed ETag (If-Match): the copy fails, and a
    later stage copies the new object."""
    from pangeo_hpc.s3 import listing

    url = _publish(fs, "replaced", _tree(5))
    key = f"{BUCKET}/replaced/2001/01/a.nc"
    new = os.urandom(len(fs.cat_file(key)))
    real = listing.list_objects

    def list_then_replace(*args, **kwargs):
        found = real(*args, **kwargs)
        fs.pipe_file(key, new)
        return found

    with monkeypatch.context() as m:
        m.setattr(listing, "list_objects", list_then_replace)
        report = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE)
    [(name, reason)] = report.failed
    assert name == f"s3://{key}" and "changed while it was staged" in reason
    assert not (tmp_path / "dst" / "2001/01/a.nc").exists()
    again = stage(url, tmp_path / "dst", s3=opts, range_size=RANGE)
    assert again.files == 1 and again.skipped == 2
    assert (tmp_path / "dst" / "2001/01/a.nc").read_bytes() == new


@pytest.mark.s3
def test_a_changed_object_of_the_same_size_is_staged_again(fs, opts, tmp_path):
    url = _publish(fs, "same-size", _tree(6))
    assert stage(url, tmp_path / "dst", s3=opts).files == 3
    new = bytes(b ^ 0xFF for b in _tree(6)["2001/01/a.nc"])
    _publish(fs, "same-size", {"2001/01/a.nc": new})
    again = stage(url, tmp_path / "dst", s3=opts)
    assert again.files == 1 and again.skipped == 2 and again.checks == {MD5: 1}
    assert (tmp_path / "dst" / "2001/01/a.nc").read_bytes() == new


@pytest.mark.s3
def test_a_named_profile_reaches_the_copy(fs, seaweedfs, opts, tmp_path, monkeypatch):
    url = _publish(fs, "profile", _tree(7))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(
            name
        )  # the clients made with them are forgotten (follow_aws_environment)
    with pytest.raises(InputError, match="no AWS credentials found"):
        stage(url, tmp_path / "none", s3=opts)
    creds = tmp_path / "credentials"
    creds.write_text(
        f"[science]\naws_access_key_id = {seaweedfs.key}\n"
        f"aws_secret_access_key = {seaweedfs.secret}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    with dask.config.set({"pangeo-hpc.s3.profile": "science"}):
        science = s3.S3Options.resolve(endpoint_url=seaweedfs.endpoint_url)
    assert stage(url, tmp_path / "dst", s3=science).files == 3


@pytest.mark.s3
def test_the_endpoint_and_retries_reach_the_copy(fs, seaweedfs, opts, tmp_path, monkeypatch):
    """Through a proxy that answers 503 SlowDown once the listing is done: the GETs of the
    copy go to the endpoint given and are retried ``pangeo-hpc.s3.max-retries`` times."""
    from pangeo_hpc.s3 import listing

    url = _publish(fs, "retries", {"one.nc": b"x" * 1000})
    with DelayProxy(seaweedfs.endpoint_url, delay=0) as proxy:
        via = s3.S3Options.resolve(endpoint_url=proxy.endpoint_url)
        throttle: list[int | None] = []
        real = listing.list_objects

        def list_then_throttle(*args, **kwargs):
            found = real(*args, **kwargs)
            proxy.reset_counts()
            proxy.throttle(*throttle)
            return found

        monkeypatch.setattr(listing, "list_objects", list_then_throttle)
        throttle[:] = [2]
        with dask.config.set({"pangeo-hpc.s3.max-retries": 2}):
            report = stage(url, tmp_path / "dst", s3=via)
        assert report.files == 1 and proxy.throttled == 2
        assert [r.split()[0] for r in proxy.request_lines] == ["GET"] * 3
        throttle[:] = []  # all of them
        with dask.config.set({"pangeo-hpc.s3.max-retries": 1}):
            with pytest.raises(
                InputError,
                match=r"kept throttling requests for 's3://stage-src/retries/one\.nc' \(503 "
                r"SlowDown\) after 1 retries",
            ):
                stage(url, tmp_path / "dst2", s3=via)
        assert proxy.throttled == 2  # the GET and its one retry
        proxy.unthrottle()
    assert not (tmp_path / "dst2" / "one.nc").exists() and not _part(tmp_path / "dst2")


def test_cli_refuses_s3_flags_for_a_folder(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    assert run.main(["stage", str(tmp_path / "src"), str(tmp_path / "dst"), "--anon"]) == 2
    assert "--anon apply to s3:// sources only" in capsys.readouterr().err
    with pytest.raises(InputError, match="is for s3:// sources, and .* is a folder"):
        stage(str(tmp_path / "src"), tmp_path / "dst", s3=s3.S3Options(anon=True))
    with pytest.raises(InputError, match="is not s3://BUCKET\\[/PREFIX\\] or a local folder"):
        stage("gs://bucket/x", tmp_path / "dst")


def test_counts_and_progress_from_many_threads(tmp_path, monkeypatch):
    """Many small files and ranges, 16 threads, a switch between threads as often as the
    interpreter allows: every file and byte is counted once, and progress only grows."""
    src = tmp_path / "src"
    sizes = {f"d{i % 7}/f{i}.nc": (i * 997) % (9 * KIB) for i in range(300)}
    for rel, n in sizes.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(os.urandom(n))
    seen: list[tuple[int, int, int, int]] = []

    def progress(*args: int) -> None:
        time.sleep(0)  # let another thread run between the counts given and their record
        seen.append(args)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        report = stage(str(src), tmp_path / "dst", threads=16, range_size=KIB, progress=progress)
    finally:
        sys.setswitchinterval(old)
    total = sum(sizes.values())
    assert report.files == 300 and report.bytes == total and not report.failed
    assert report.checks == {FOLDER: 300}
    assert seen[-1] == (total, total, 300, 300)
    assert all(a[0] <= b[0] and a[2] <= b[2] for a, b in itertools.pairwise(seen))
    assert {s[2] for s in seen} - {0} == set(range(1, 301))  # each file done once


def test_summary_says_what_was_checked():
    report = StageReport(files=15, bytes=10**9, seconds=2.0, checks={MD5: 12, MULTIPART: 3})
    assert report.summary() == (
        "staged 15 files (1.00 GB) in 2.0 s (500 MB/s); checked size and MD5 = ETag for "
        "12 files, size and re-read checksum (multipart ETag) for 3 files; 0 already there"
    )
