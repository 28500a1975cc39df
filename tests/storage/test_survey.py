"""The storage survey on real parts: this machine's disk and tmpfs, a SeaweedFS S3 server, an
rclone FUSE mount of it, and the CLI. Counts are asserted exactly, timings never (they only
have to be positive).

Page-cache residency is asserted exactly where it is zero (a drop leaves nothing, and only
our own reads bring pages back). Elsewhere only bounds: the kernel may evict cached pages at any
moment, and on this kind of VM it does so without memory pressure (DAMON's proactive
``pageout`` scheme in ``/sys/kernel/mm/damon``); a warm read then finds 99 % cached, not 100.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import dask
import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3 import options as s3
from pangeo_hpc.storage import detect, pagecache
from pangeo_hpc.storage.survey import ReadSpeed, plot, read_speed, survey, table
from tests.support.cli import run_cli
from tests.support.needs import missing
from tests.support.paths import ROOT
from tests.support.s3env import aws_environment
from tests.support.servers import RcloneMount, free_port, publish_tree

MiB = 1 << 20
#: a small tree: relative path -> size (random bytes); sorted order is the order listed here
TREE = {
    "a/1.nc": 3 * MiB,
    "a/2.nc": MiB + 5,
    "b/c/3.nc": 2 * MiB,
    "empty.nc": 0,
}
TOTAL = sum(TREE.values())
BUCKET = "survey-test"


def _tree(root: Path) -> Path:
    for rel, size in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(os.urandom(size))
    (root / "link.nc").symlink_to(root / "a/1.nc")  # not followed: read once only
    return root


def _fincore(path: Path) -> int:
    """Resident bytes as util-linux's fincore counts them (an independent check), at most
    the file's size (fincore counts whole pages)."""
    tool = shutil.which("fincore")
    if tool is None:
        missing("fincore", "apt-get install util-linux-extra (ci/install-system.sh as root)")
    out = subprocess.run(
        [tool, "--bytes", "--noheadings", "--raw", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return min(int(out.split()[0]), path.stat().st_size)


# ----- the page cache


def _resident(fd: int, path: Path) -> int:
    """resident_bytes, checked against fincore just before and just after (pages can only
    go in between: nothing reads the file)."""
    before = _fincore(path)
    got = pagecache.resident_bytes(fd)
    after = _fincore(path)
    assert got is not None and before >= got >= after
    return got


def test_page_cache_residency_and_drop_agree_with_fincore(tmp_path):
    path = tmp_path / "f.nc"
    size = 4 * MiB + 123
    path.write_bytes(os.urandom(size))  # dirty pages: drop must write them back first
    fd = os.open(path, os.O_RDONLY)
    try:
        os.read(fd, 8 * MiB)
        assert 0 < _resident(fd, path) <= size
        pagecache.drop(fd)
        assert _resident(fd, path) == 0
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead: just what is read
        os.pread(fd, MiB, MiB)
        assert 0 < _resident(fd, path) <= MiB
    finally:
        os.close(fd)
    empty = tmp_path / "empty.nc"
    empty.touch()
    fd = os.open(empty, os.O_RDONLY)
    try:
        assert pagecache.resident_bytes(fd) == 0
    finally:
        os.close(fd)


def test_read_through_and_drop_file(tmp_path):
    """The helpers the warm-up, the survey, the calibration and the benchmarks share: a file
    just written (dirty pages) is dropped all the same; reading it through brings it all."""
    path = tmp_path / "f.nc"
    size = 3 * MiB + 5
    path.write_bytes(os.urandom(size))
    pagecache.drop_file(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _resident(fd, path) == 0
        assert pagecache.read_through(path, block_size=MiB) == size
        assert _resident(fd, path) == size
        pagecache.drop_file(str(path))
        assert _resident(fd, path) == 0
    finally:
        os.close(fd)


# ----- local files


def test_cold_then_warm_read_of_a_folder(tmp_path):
    root = _tree(tmp_path / "data")
    cold = read_speed(root)
    assert (cold.files, cold.bytes, cold.cached) == (4, TOTAL, 0)  # every page was dropped
    assert cold.cold and cold.seconds > 0 and cold.mb_per_s > 0 and not cold.failed
    assert cold.kind == detect(root).kind and cold.label == cold.path == str(root)
    assert cold.method == "8 threads, 16 MiB reads, page cache dropped"
    assert 0 < sum(_fincore(root / rel) for rel in TREE) <= TOTAL  # the read cached them
    warm = read_speed(root, cold=False, threads=2, block_size="1MiB")
    assert (warm.files, warm.bytes, warm.cold) == (4, TOTAL, False)
    assert 0 < warm.cached <= TOTAL  # not dropped: what the cold read left (less if evicted)
    assert warm.method == "2 threads, 1 MiB reads, page cache as found"
    again = read_speed(root)
    assert again.cached == 0  # cold drops what the warm read left


def test_whole_files_in_sorted_order_up_to_max_bytes(tmp_path):
    root = _tree(tmp_path / "data")
    assert read_speed(root, max_bytes="3MiB").bytes == 3 * MiB  # a/1.nc fills it
    two = read_speed(root, max_bytes=3 * MiB + 1)  # not yet full: a/2.nc is read whole
    assert (two.files, two.bytes) == (2, 4 * MiB + 5)
    with dask.config.set({"pangeo-hpc.storage.survey-bytes": "4MiB"}):
        assert read_speed(root).bytes == 4 * MiB + 5
    one = read_speed(root / "b/c/3.nc")
    assert (one.files, one.bytes) == (1, 2 * MiB)


def test_tmpfs_cannot_be_read_cold_and_says_so():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        (Path(d) / "x.nc").write_bytes(os.urandom(MiB))
        r = read_speed(d)
    assert r.kind == "tmpfs" and r.cached == MiB  # its pages are the storage: nothing dropped
    assert "cold, 100 % cached" in table([r])


def test_survey_labels_table_and_plot(tmp_path):
    root = _tree(tmp_path / "data")
    results = survey({"disk": root, "one file": root / "a/2.nc"}, max_bytes="1GB")
    assert [r.label for r in results] == ["disk", "one file"]
    assert [r.bytes for r in results] == [TOTAL, MiB + 5]
    text = table(results).splitlines()
    assert text[0].split() == ["label", "kind", "files", "GB", "s", "MB/s", "cache"]
    assert text[2].split()[:4] == ["disk", results[0].kind, "4", "0.01"]
    assert text[3].startswith("one file ") and text[3].endswith("cold")
    assert text[0].index("cache") == text[2].index("cold") == text[3].index("cold")  # aligned
    assert [r.path for r in survey([str(root)])] == [str(root)]
    assert survey(root)[0].label == str(root)  # one path, not its characters

    from matplotlib.figure import Figure

    ax = plot(results, Figure().add_subplot())
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        f"disk\n({results[0].kind}, cold)",
        f"one file\n({results[1].kind}, cold)",
    ]
    assert [p.get_width() for p in ax.patches] == pytest.approx([r.mb_per_s for r in results])
    assert ax.get_xlabel() == "read throughput (MB/s)"

    import matplotlib.pyplot as plt

    ax = plot(results)  # a new figure, as in a notebook
    try:
        assert len(ax.patches) == 2
    finally:
        plt.close(ax.figure)

    d = results[0].to_dict()
    assert d["label"] == "disk" and d["bytes"] == TOTAL and d["failed"] == []
    assert d["mb_per_s"] == pytest.approx(results[0].mb_per_s, abs=1e-3)
    assert json.loads(json.dumps(d)) == d


def test_table_of_nothing_read_and_of_failures():
    r = ReadSpeed("/nfs/x", "nfs", 0, 0, 0.0, True, "m", 8, MiB, failed=[("/nfs/x/a.nc", "gone")])
    assert (r.label, r.mb_per_s) == ("/nfs/x", 0.0)
    lines = table([r]).splitlines()
    assert lines[2].split() == ["/nfs/x", "nfs", "0", "0.00", "0.00", "0", "cold"]
    assert lines[3] == "/nfs/x: /nfs/x/a.nc: gone"


def test_errors_name_the_value_and_the_fix(tmp_path):
    with pytest.raises(InputError, match=r"path '.*nope' does not exist: give a folder"):
        read_speed(tmp_path / "nope")
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(InputError, match=r"folder '.*empty' holds no files: give a folder"):
        read_speed(tmp_path / "empty")
    (tmp_path / "a.nc").write_bytes(b"x")
    with pytest.raises(InputError, match=r"max_bytes='1XB' is not a size: write it like 150GB"):
        read_speed(tmp_path, max_bytes="1XB")
    with pytest.raises(InputError, match=r"block_size=0 must be at least one byte"):
        read_speed(tmp_path, block_size=0)
    with pytest.raises(InputError, match=r"threads=0 is not a positive whole number"):
        read_speed(tmp_path, threads=0)
    with pytest.raises(InputError, match="no paths to survey"):
        survey([])
    # every path is checked before any is read
    with pytest.raises(InputError, match=r"path '.*missing' does not exist"):
        survey({"ok": tmp_path, "bad": tmp_path / "missing"})
    with pytest.raises(InputError, match=r"'bucket!' in 's3://bucket!/x' is not a bucket name"):
        survey([tmp_path, "s3://bucket!/x"])


def test_an_unreadable_file_is_a_one_line_error(tmp_path):
    """Root reads any file; as root the CLI runs without the capabilities that allow it."""
    (tmp_path / "a.nc").write_bytes(b"x" * 100)
    secret = tmp_path / "b.nc"
    secret.write_bytes(b"y" * 100)
    secret.chmod(0)
    cmd = [sys.executable, "-m", "pangeo_hpc.run", "survey", str(tmp_path)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:  # running as root: without it, nothing drops the rights
            missing("setpriv", "apt-get install util-linux")
        caps = "-dac_override,-dac_read_search"
        cmd = [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", "--", *cmd]
    else:
        with pytest.raises(InputError, match=r"cannot read '.*b.nc': permission denied"):
            read_speed(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"error: cannot read {str(secret)!r}: permission denied: fix its permissions "
        "(chmod a+r) or survey a folder you can read"
    ]


# ----- the CLI


def test_cli_table_json_and_plot(tmp_path):
    root = _tree(tmp_path / "data")
    out = tmp_path / "out"
    out.mkdir()
    r = run_cli(
        "survey",
        f"disk={root}",
        str(root / "a"),
        "--bytes",
        "1GB",
        "--threads",
        "2",
        "--json",
        str(out / "survey.json"),
        "--plot",
        str(out / "survey.png"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["label", "kind", "files", "GB", "s", "MB/s", "cache"]
    assert lines[2].split()[:3] == ["disk", detect(root).kind, "4"]
    assert lines[3].split()[:3] == [str(root / "a"), detect(root).kind, "2"]
    assert lines[4:] == [f"written {out / 'survey.json'}", f"written {out / 'survey.png'}"]
    doc = json.loads((out / "survey.json").read_text())
    assert [(d["label"], d["files"], d["bytes"], d["threads"]) for d in doc["results"]] == [
        ("disk", 4, TOTAL, 2),
        (str(root / "a"), 2, 4 * MiB + 5, 2),
    ]
    assert (out / "survey.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in out.iterdir()) == ["survey.json", "survey.png"]  # no temps

    warm = run_cli("survey", str(root), "--warm", "--bytes", "3MiB", cwd=tmp_path)
    assert warm.returncode == 0 and re.search(r" warm, \d+ % cached\n", warm.stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/nope"], r"error: path '.*nope' does not exist: give a folder, file or s3://"),
        (["{tmp}", "--bytes", "lots"], r"--bytes: 'lots' is not a size: write it like 150GB"),
        (["{tmp}", "--threads", "0"], r"--threads: '0' is not a positive whole number"),
        (["{tmp}", "--anon"], r"--anon apply to s3:// sources only"),
        (["x={tmp}", "x={tmp}"], r"label 'x' is given twice"),
        (["{tmp}/a.nc", "--json", "{tmp}/no/x.json"], r"folder '.*no' of --json .* does not exist"),
        (
            ["{tmp}/a.nc", "--plot", "{tmp}/x.txt"],
            r"--plot '.*x.txt' does not end in an image format",
        ),
        (["{tmp}", "--json", "{tmp}/x.json"], r"--json '.*x.json' lies inside the input"),
        ([], r"the following arguments are required"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, monkeypatch, args, message):
    """The CLI's main() in this process (two seconds of start-up saved per case), without
    its signal handlers, which would stay installed in pytest's process."""
    from pangeo_hpc.cli import main as run

    monkeypatch.setattr(run, "_interruptible", lambda: None)
    (tmp_path / "a.nc").write_bytes(b"x")
    code = run.main(["survey", *(a.format(tmp=tmp_path) for a in args)])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and re.search(message, err), err
    assert out == ""  # nothing measured before the input was checked


# ----- S3 (SeaweedFS) and an rclone mount of it


@pytest.fixture(scope="module")
def bucket(seaweedfs, tmp_path_factory) -> Path:
    """TREE in s3://survey-test/pds; the local copy is returned."""
    src = _tree(tmp_path_factory.mktemp("survey-src"))
    (src / "link.nc").unlink()
    publish_tree(seaweedfs.storage_options(), src, BUCKET, "pds")
    return src


@pytest.fixture
def aws(monkeypatch, seaweedfs, tmp_path):
    """Credentials through the AWS chain (environment, also for CLIs started), no CA bundle."""
    aws_environment(monkeypatch, seaweedfs, tmp_path)
    yield s3.S3Options.resolve(endpoint_url=seaweedfs.endpoint_url)
    s3.forget_clients()


@pytest.mark.s3
def test_s3_objects_whole_and_in_ranged_gets(bucket, aws):
    url = f"s3://{BUCKET}/pds"
    r = read_speed(url, s3_options=aws, block_size="1MiB", threads=4)
    assert (r.path, r.kind, r.files, r.bytes, r.cached, r.cold) == (url, "s3", 4, TOTAL, None, True)
    assert r.method == "4 threads, GETs of up to 1 MiB (obstore)" and r.seconds > 0
    part = read_speed(f"{url}/a", s3_options=aws, max_bytes=MiB)  # whole objects, sorted
    assert (part.files, part.bytes) == (1, 3 * MiB)
    assert table([r]).splitlines()[2].split()[-1] == "cold"


@pytest.mark.s3
def test_s3_errors_name_the_value_and_the_fix(bucket, aws, seaweedfs):
    with pytest.raises(InputError, match=r"bucket of 's3://no-such-bucket/x' does not exist"):
        read_speed("s3://no-such-bucket/x", s3_options=aws)
    with pytest.raises(InputError, match=r"no objects below 's3://survey-test/nope': check"):
        read_speed(f"s3://{BUCKET}/nope", s3_options=aws)
    anon = s3.S3Options(endpoint_url=seaweedfs.endpoint_url, anon=True)
    with pytest.raises(InputError, match=r"access to .* denied .*drop anon=True"):
        read_speed(f"s3://{BUCKET}/pds", s3_options=anon)
    down = s3.S3Options(endpoint_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(InputError, match=r"S3 endpoint http://127.0.0.1:\d+ does not answer"):
        read_speed(f"s3://{BUCKET}/pds", s3_options=down)


@pytest.mark.s3
def test_cli_local_and_s3_side_by_side(bucket, aws, seaweedfs, tmp_path):
    r = run_cli(
        "survey",
        f"local={bucket}",
        f"S3=s3://{BUCKET}/pds",
        "--endpoint-url",
        seaweedfs.endpoint_url,
        "--json",
        str(tmp_path / "s.json"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    rows = [line.split()[:3] for line in r.stdout.splitlines()[2:4]]
    assert rows == [["local", detect(bucket).kind, "4"], ["S3", "s3", "4"]]
    doc = json.loads((tmp_path / "s.json").read_text())
    assert [d["bytes"] for d in doc["results"]] == [TOTAL, TOTAL]
    assert seaweedfs.secret not in (tmp_path / "s.json").read_text()
    bad = run_cli(
        "survey", "s3://no-such-bucket", "--endpoint-url", seaweedfs.endpoint_url, cwd=tmp_path
    )
    assert (
        bad.returncode == 2
        and "error: bucket of 's3://no-such-bucket' does not exist" in bad.stderr
    )


def _mount(seaweedfs, tmp_path: Path, name: str) -> RcloneMount:
    """s3://survey-test/pds mounted with rclone, with an empty cache of its own."""
    return RcloneMount.of(
        seaweedfs, f"{BUCKET}/pds", tmp_path / f"{name}-mnt", tmp_path / f"{name}-cache"
    )


@pytest.mark.s3
def test_rclone_mount(bucket, seaweedfs, fuse, tmp_path):
    with _mount(seaweedfs, tmp_path, "survey") as mount:
        r = read_speed(mount.mountpoint)
        assert (r.kind, r.files, r.bytes, r.cached) == ("fuse.rclone", 4, TOTAL, 0)
        assert mount.cached_bytes("a/1.nc") == 3 * MiB  # the bytes went through rclone's cache


@pytest.mark.s3
def test_a_file_that_vanishes_is_reported_and_the_others_read(bucket, seaweedfs, fuse, tmp_path):
    fs = seaweedfs.filesystem()
    key = f"{BUCKET}/pds/b/c/3.nc"
    saved = fs.cat_file(key)
    with _mount(seaweedfs, tmp_path, "vanish") as mount:
        mnt = Path(mount.mountpoint)
        assert len(list(mnt.rglob("*.nc"))) == 4  # listed while the object still exists
        fs.rm(key)  # deleted behind rclone's back: the mount still lists it
        try:
            r = read_speed(mnt)
        finally:
            fs.pipe_file(key, saved)
    assert [p for p, _ in r.failed] == [str(mnt / "b/c/3.nc")], r.failed
    assert "errno" in r.failed[0][1]  # rclone answers EIO: the object is gone
    assert (r.files, r.bytes) == (3, TOTAL - 2 * MiB)
    assert f"{mnt}: {mnt / 'b/c/3.nc'}: " in table([r])
