"""The cache of partial states: whole entries, private folders, LRU, and every way it breaks.

Real files throughout: a real tmpfs that fills up, two real processes sharing one folder,
a folder chowned to another user (as root), the CLI's ``cache`` verb in this process.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import dask.config
import numpy as np
import pytest

from pangeo_hpc.batch.incremental.keys import entry_key, stamp_files
from pangeo_hpc.batch.incremental.state_cache import CacheWarning, StateCache
from pangeo_hpc.cli import main as cli
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.write.outputs import remove_file
from tests.support.needs import CI, need_root
from tests.support.paths import ROOT


def _state(i: int, n: int = 16) -> dict[str, np.ndarray]:
    """The partial state of 'file' ``i``: a sum, a count and the time of its first step."""
    return {
        "sum": np.full((n, n), float(i) + 0.25),
        "count": np.arange(i + 1, dtype="int32"),
        "first": np.array([f"2000-{(i % 12) + 1:02d}-01"], dtype="datetime64[ns]"),
    }


def _key(i: int) -> str:
    return entry_key([Stamp(f"/data/{i:04d}.nc", 100 + i, mtime_ns=i)], "chain")


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns, p.lstat().st_mode)
        for p in sorted(root.rglob("*"))
    }


# --------------------------------------------------------------------------------------------
# entries and keys


def test_put_get_round_trip(tmp_path):
    cache = StateCache(tmp_path / "states")
    arrays = _state(3)
    meta = {"recipe": "era5-sst-mean", "result": "mean", "files": ["/d/a.nc"], "n": 2}
    assert cache.get(_key(3)) is None  # a miss, and no folder made for it
    assert not (tmp_path / "states").exists()
    assert cache.put(_key(3), arrays, meta)
    got, got_meta = cache.get(_key(3))
    assert got_meta == meta
    assert set(got) == set(arrays)
    for name, expected in arrays.items():
        assert got[name].dtype == expected.dtype, name
        np.testing.assert_array_equal(got[name], expected)
    assert got["first"][0] == np.datetime64("2000-04-01", "ns")
    assert cache.get(_key(4)) is None
    # a second writer of the same key replaces it, whole
    assert cache.put(_key(3), _state(3), {"recipe": "again"})
    assert cache.get(_key(3))[1] == {"recipe": "again"}
    with pytest.raises(ValueError, match="not an entry key"):
        cache.get("../../etc/passwd")
    with pytest.raises(ValueError, match="'x' of a cached state holds Python objects"):
        cache.put(_key(5), {"x": np.array([{"a": 1}], dtype=object)}, {})


def test_a_touched_file_changes_only_its_own_key(tmp_path):
    a, b = tmp_path / "2000-01.nc", tmp_path / "2000-02.nc"
    a.write_bytes(b"x" * 100)
    b.write_bytes(b"y" * 100)
    os.utime(a, ns=(1_000_000_000, 1_000_000_000))
    os.utime(b, ns=(2_000_000_000, 2_000_000_000))
    sa, sb = stamp_files([str(a), str(b)])
    st = a.stat()
    assert sa == Stamp(
        str(a), 100, 1_000_000_000, st.st_ctime_ns, st.st_ino, st.st_dev, etag=None, version=None
    )
    keys = {p: entry_key([s], "c1") for p, s in (("a", sa), ("b", sb))}
    assert len(set(keys.values())) == 2 and all(len(k) == 64 for k in keys.values())
    assert entry_key([sa, sb], "c1") == entry_key([sb, sa], "c1")  # order of listing
    assert entry_key([sa], "c2") != keys["a"]  # another chain

    os.utime(a, ns=(1_000_000_001, 1_000_000_001))  # touched: mtime one nanosecond later
    sa2, sb2 = stamp_files([str(a), str(b)])
    assert entry_key([sa2], "c1") != keys["a"]
    assert entry_key([sb2], "c1") == keys["b"]
    a.write_bytes(b"x" * 101)  # rewritten, one byte longer, and its old mtime put back
    os.utime(a, ns=(1_000_000_001, 1_000_000_001))
    (sa3,) = stamp_files([str(a)])
    assert sa3.size == 101 and entry_key([sa3], "c1") != entry_key([sa2], "c1")
    # a relative path is the same file as its absolute one
    rel = os.path.relpath(b)
    assert stamp_files([rel]) == [sb]


def test_a_file_rewritten_with_its_size_and_mtime_put_back_has_another_key(tmp_path):
    """``touch -r``, ``cp -p``, ``rsync -t``: only ctime (rewrite in place) or the inode
    (a copy renamed over it) tells; a stamp of size and mtime alone would not."""
    a = tmp_path / "2000-01.nc"
    a.write_bytes(b"x" * 100)
    (before,) = stamp_files([str(a)])
    with a.open("r+b") as f:  # in place: the same inode
        f.write(b"y")
    os.utime(a, ns=(before.mtime_ns, before.mtime_ns))
    (inplace,) = stamp_files([str(a)])
    for _ in range(500):  # the kernel's ctime clock is coarse (a tick): until it moves
        if inplace.ctime_ns != before.ctime_ns:
            break
        time.sleep(0.01)
        os.utime(a, ns=(before.mtime_ns, before.mtime_ns))  # sets ctime to now
        (inplace,) = stamp_files([str(a)])
    assert (inplace.size, inplace.mtime_ns, inplace.inode) == (
        before.size, before.mtime_ns, before.inode,
    )  # fmt: skip
    assert inplace.ctime_ns != before.ctime_ns
    assert entry_key([inplace], "c") != entry_key([before], "c")

    copy = tmp_path / "copy.nc"
    copy.write_bytes(b"z" * 100)
    os.utime(copy, ns=(before.mtime_ns, before.mtime_ns))
    os.replace(copy, a)  # a copy with the same size and mtime, renamed over it
    (replaced,) = stamp_files([str(a)])
    assert (replaced.size, replaced.mtime_ns) == (before.size, before.mtime_ns)
    assert replaced.inode != inplace.inode
    assert entry_key([replaced], "c") not in {entry_key([s], "c") for s in (before, inplace)}


def test_s3_objects_are_stamped_by_size_etag_and_version(monkeypatch):
    from pangeo_hpc.s3.options import S3Options

    heads = []

    class FakeS3:  # what s3fs's info() returns for an object (one HEAD, not the dir cache)
        def info(self, path, refresh=False):
            heads.append((path, refresh))
            return {"size": 42, "ETag": '"abc"', "VersionId": "v1", "type": "file"}

    monkeypatch.setattr(S3Options, "filesystem", lambda self: FakeS3())
    (s,) = stamp_files(["s3://era5-pds/2000/01/data/sst.nc"], S3Options())
    assert s == Stamp("s3://era5-pds/2000/01/data/sst.nc", 42, etag='"abc"', version="v1")
    assert heads == [("s3://era5-pds/2000/01/data/sst.nc", True)]
    other = Stamp(s.path, 42, etag='"abd"', version="v1")
    older = Stamp(s.path, 42, etag='"abc"', version="v0")
    assert len({entry_key([x], "c") for x in (s, other, older)}) == 3


# --------------------------------------------------------------------------------------------
# the folder: private, this user's, this package's


def test_the_folder_is_0700_and_entries_0600(tmp_path):
    folder = tmp_path / "cache" / "states"
    cache = StateCache(folder)
    assert cache.put(_key(1), _state(1), {})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    entry = folder / f"{_key(1)}.npz"
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == [".pangeo-hpc.json", entry.name]


def test_a_folder_others_may_write_is_refused(tmp_path):
    folder = tmp_path / "states"
    StateCache(folder).put(_key(1), _state(1), {})
    folder.chmod(0o777)
    before = _snapshot(tmp_path)
    with pytest.raises(InputError, match=r"states' is owned by .* with mode 0777.*chmod 700 "):
        StateCache(folder)
    folder.chmod(0o770)  # group-writable: refused too
    with pytest.raises(InputError, match="mode 0770"):
        StateCache(folder)
    folder.chmod(0o777)
    assert _snapshot(tmp_path) == before


def test_a_folder_of_another_user_is_refused(tmp_path):
    need_root("chown to another user")
    folder = tmp_path / "states"
    StateCache(folder).put(_key(1), _state(1), {})
    os.chown(folder, 65534, 65534)  # nobody, mode still 0700
    before = _snapshot(tmp_path)
    with pytest.raises(InputError, match=r"owned by (nobody \()?uid 65534.* mode 0700"):
        StateCache(folder)
    assert _snapshot(tmp_path) == before


def test_a_folder_of_a_users_files_is_refused(tmp_path):
    folder = tmp_path / "thesis"
    folder.mkdir(mode=0o700)
    (folder / "thesis.tex").write_text("\\chapter{Results}\n")
    (folder / "notes.npz").write_bytes(b"mine")
    before = _snapshot(tmp_path)
    with pytest.raises(InputError, match="holds files that pangeo-hpc did not write"):
        StateCache(folder)
    assert _snapshot(tmp_path) == before


def test_a_folder_another_run_is_claiming_right_now_is_not_refused(tmp_path):
    """Two runs start on a new cache at once: one finds the other's temporary marker (or an
    entry's temporary file) before the marker is in place, and goes on."""
    folder = tmp_path / "states"
    folder.mkdir(mode=0o700)
    (folder / ".pangeo-hpc.json.k2j4x9.tmp").write_text("{")
    (folder / f".{_key(2)}.npz.a8d7f1.tmp").write_bytes(b"PK")
    cache = StateCache(folder)
    assert cache.put(_key(1), _state(1), {"i": 1})
    assert cache.get(_key(1))[1] == {"i": 1}
    assert [e.key for e in cache.entries()] == [_key(1)]  # temporary files are no entries


def test_remove_file_removes_only_entries_of_a_state_cache(tmp_path):
    from pangeo_hpc.batch.incremental.cache_folder import is_entry as _is_entry

    cache = StateCache(tmp_path / "states")
    cache.put(_key(1), _state(1), {})
    entry = cache.folder / f"{_key(1)}.npz"
    mine = tmp_path / f"{_key(1)}.npz"  # an entry's name, outside a marked folder
    mine.write_bytes(b"mine")
    with pytest.raises(InputError, match="not written by pangeo-hpc.*nothing was changed"):
        remove_file(mine, ours=_is_entry, flag="pangeo-hpc.cache.folder")
    assert mine.read_bytes() == b"mine"
    assert remove_file(entry, ours=_is_entry, flag="pangeo-hpc.cache.folder") is True
    assert remove_file(entry, ours=_is_entry, flag="pangeo-hpc.cache.folder") is False


# --------------------------------------------------------------------------------------------
# eviction


def test_least_recently_used_entries_are_evicted(tmp_path):
    cache = StateCache(tmp_path / "states", max_bytes=10**9)
    for i in range(3):
        assert cache.put(_key(i), _state(i), {"i": i})
    one = cache.size() // 3
    now = time.time()
    for i in range(3):  # stored an hour, 50 and 40 minutes ago: 0 is the oldest
        os.utime(cache.folder / f"{_key(i)}.npz", (now - 3600 + 600 * i, now - 3600 + 600 * i))
    assert [e.meta["i"] for e in cache.entries()] == [2, 1, 0]
    assert cache.get(_key(0)) is not None  # read now: the most recently used
    assert [e.meta["i"] for e in cache.entries()] == [0, 2, 1]
    cache.max_bytes = 3 * one + one // 2  # room for three
    assert cache.put(_key(3), _state(3), {"i": 3})
    left = {e.meta["i"] for e in cache.entries()}
    assert left == {0, 2, 3}, "entry 1 was the least recently used"
    assert cache.size() <= cache.max_bytes
    later = time.time() + 60  # 3 used after 0 (the clock may not tick between them)
    os.utime(cache.folder / f"{_key(3)}.npz", (later, later))
    cache.max_bytes = one + one // 2
    assert cache.evict() == 2
    assert [e.meta["i"] for e in cache.entries()] == [3]
    cache.max_bytes = 100  # smaller than any entry: the one just stored stays, alone
    assert cache.put(_key(4), _state(4), {"i": 4})
    assert [e.meta["i"] for e in cache.entries()] == [4]


# --------------------------------------------------------------------------------------------
# damage and a full disk


@pytest.mark.parametrize("damage", ["random bytes", "truncated"])
def test_a_damaged_entry_is_ignored_with_a_warning_and_rebuilt(tmp_path, damage):
    cache = StateCache(tmp_path / "states")
    assert cache.put(_key(1), _state(1), {"i": 1})
    entry = cache.folder / f"{_key(1)}.npz"
    whole = entry.read_bytes()
    if damage == "random bytes":
        entry.write_bytes(np.random.default_rng(0).bytes(len(whole)))
    else:  # a crash (without the atomic rename) left the first half
        entry.write_bytes(whole[: len(whole) // 2])
    with pytest.warns(
        CacheWarning, match=rf"{entry.name}' is damaged .*ignored, removed and rebuilt"
    ):
        assert cache.get(_key(1)) is None
    assert not entry.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get(_key(1)) is None  # now a plain miss
        assert cache.put(_key(1), _state(1), {"i": 1})
        arrays, meta = cache.get(_key(1))
    assert meta == {"i": 1}
    np.testing.assert_array_equal(arrays["sum"], _state(1)["sum"])


def test_peek_reads_one_member_and_get_checks_the_seal(tmp_path, monkeypatch):
    """A roll-up's list of files is peeked at twice before a run loads it (B7's update):
    read alone (its CRC-32 checked), never the whole entry hashed for it; the values come
    only from :meth:`get`, sealed."""
    from pangeo_hpc.batch.incremental import entry_bytes

    hashed = []
    check = entry_bytes.payload_offset
    monkeypatch.setattr(
        entry_bytes, "payload_offset", lambda *a, **k: hashed.append(1) or check(*a, **k)
    )
    cache = StateCache(tmp_path / "states")
    state = {**_state(1, n=256), "merged_pieces": np.array(["a", "b"])}
    assert cache.put(_key(1), state, {"i": 1})
    entry = cache.folder / f"{_key(1)}.npz"
    for _ in range(2):
        assert cache.peek(_key(1), "merged_pieces").tolist() == ["a", "b"]
    assert not hashed
    assert cache.get(_key(1))[1] == {"i": 1}
    assert len(hashed) == 1

    whole = entry.read_bytes()
    at = whole.index(np.array(["b"]).tobytes())  # the list's second name, UTF-32
    entry.write_bytes(whole[:at] + np.array(["c"]).tobytes() + whole[at + 4 :])
    assert cache.peek(_key(1), "merged_pieces") is None  # the member's CRC-32
    at = len(whole) // 2  # inside the values: the list still reads, the entry does not
    entry.write_bytes(whole[:at] + bytes([whole[at] ^ 1]) + whole[at + 1 :])
    assert cache.peek(_key(1), "merged_pieces").tolist() == ["a", "b"]
    with pytest.warns(CacheWarning, match="is damaged"):
        assert cache.get(_key(1)) is None


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 256 kB tmpfs (as root), unmounted afterwards."""
    need_root("mounting a tmpfs")
    where = tmp_path / "tiny"
    where.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        if CI:
            pytest.fail(f"mount -t tmpfs failed under CI=true: {r.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_full_disk_turns_caching_off_and_the_run_goes_on(tiny_disk):
    cache = StateCache(tiny_disk / "states")
    assert cache.put(_key(1), _state(1), {"i": 1})  # the folder and one entry fit
    with (tiny_disk / "filler").open("wb", buffering=0) as f:  # then the disk fills up
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == 28  # ENOSPC
    with pytest.warns(CacheWarning) as caught:
        assert cache.put(_key(2), _state(2, n=64), {"i": 2}) is False
        assert cache.put(_key(3), _state(3), {"i": 3}) is False  # at once, no second warning
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert "no space left on device" in str(caught[0].message)
    assert cache.disabled is not None
    assert cache.disabled.startswith(f"no space left on device on {cache.folder}")
    assert "this run is not cached" in cache.disabled
    names = sorted(p.name for p in cache.folder.iterdir())
    assert names == [".pangeo-hpc.json", f"{_key(1)}.npz"], "a temporary file was left"
    assert cache.get(_key(1))[1] == {"i": 1}  # what was stored is still read
    assert cache.get(_key(2)) is None


# --------------------------------------------------------------------------------------------
# two runs at once

_WORKER = """
import sys, time, warnings
from pathlib import Path
import numpy as np
warnings.simplefilter("error")  # a damaged entry seen by a reader would fail this process
from pangeo_hpc.batch.incremental.state_cache import StateCache

folder, me, meeting = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
keys = ["%064x" % (i * 7919) for i in range(8)]

def state(i):
    return {"sum": np.full((64, 64), i + 0.5), "count": np.arange(i + 1, dtype="int32")}

cache = StateCache(folder, max_bytes=4 * 34_000)  # room for four of the eight keys
(meeting / f"ready-{me}").touch()
deadline = time.monotonic() + 60
while not (meeting / "go").exists():  # start together
    assert time.monotonic() < deadline, "never told to go"
    time.sleep(0.005)
rng = np.random.default_rng(me)
hits = 0
for n in range(200):
    i = int(rng.integers(8))
    got = cache.get(keys[i])
    if got is not None:
        arrays, meta = got
        assert meta == {"recipe": "r", "i": i}, (i, meta)
        expected = state(i)
        assert sorted(arrays) == sorted(expected), (i, sorted(arrays))
        for name, value in expected.items():
            assert arrays[name].dtype == value.dtype and np.array_equal(arrays[name], value)
        hits += 1
    assert cache.put(keys[i], state(i), {"recipe": "r", "i": i}), cache.disabled
    if n % 7 == 0:
        cache.evict()
print(hits)
"""


def test_two_runs_share_one_cache_at_once(tmp_path):
    folder = tmp_path / "states"  # new: both processes claim it at once, too
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(folder), str(me), str(meeting)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for me in (0, 1)
    ]
    try:
        deadline = time.monotonic() + 120
        while not all((meeting / f"ready-{me}").exists() for me in (0, 1)):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.02)
        (meeting / "go").touch()
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert err == "", err
        assert int(out) > 0, "no get ever hit: the test did not share anything"
    names = {p.name for p in folder.iterdir()}
    assert ".pangeo-hpc.json" in names
    assert all(n == ".pangeo-hpc.json" or n.endswith(".npz") for n in names), names
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache = StateCache(folder)
        assert cache.entries()
        for e in cache.entries():
            assert cache.get(e.key) is not None


# --------------------------------------------------------------------------------------------
# the cache verb


@pytest.fixture
def main(monkeypatch):
    monkeypatch.setattr(cli, "_interruptible", lambda: None)
    return cli.main


def _point_at(folder: Path, monkeypatch):
    monkeypatch.setenv("DASK_PANGEO_HPC__CACHE__FOLDER", str(folder))
    return dask.config.set({"pangeo-hpc.cache.folder": str(folder)})


def test_cache_verb_lists_sizes_and_clears(tmp_path, monkeypatch, main, capsys):
    folder = tmp_path / "states"
    with _point_at(folder, monkeypatch):
        assert main(["cache", "list"]) == 0  # no folder yet: an empty cache
        assert capsys.readouterr().out == f"total: 0 entries, 0 B, in {folder}\n"
        assert not folder.exists()
        cache = StateCache()
        files = [f"/d/2000/{m:02d}/data/sst.nc" for m in (1, 2, 3)]
        for i, recipe in enumerate(["era5-sst-mean", "era5-sst-mean", "era5-t2m-normals"]):
            meta = {"recipe": recipe, "result": "mean", "files": files[: i + 1]}
            assert cache.put(_key(i), _state(i), meta)
        total = cache.size()

        assert main(["cache", "list"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].split() == ["key", "recipe", "result", "files", "size", "last", "used"]
        body = lines[2:-1]
        assert len(body) == 3
        assert {line.split()[0] for line in body} == {_key(i)[:12] for i in range(3)}
        row = next(line for line in body if line.startswith(_key(2)[:12]))
        assert "era5-t2m-normals" in row and "01/data/sst.nc (3 files)" in row
        row = next(line for line in body if line.startswith(_key(0)[:12]))
        assert " sst.nc " in row
        assert lines[-1].startswith(f"total: 3 entries, {_bytes(total)}, in {folder}")

        assert main(["cache", "list", "--recipe", "era5-sst-mean"]) == 0
        out = capsys.readouterr().out
        assert "era5-t2m-normals" not in out and "total: 2 entries of era5-sst-mean" in out

        assert main(["cache", "size"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"cache: {total} bytes (") and "in 3 entries" in out
        assert str(folder) in out and "limit 10000000000 bytes" in out

        one = next(e.size for e in cache.entries() if e.key == _key(2))
        assert main(["cache", "clear", "--recipe", "era5-t2m-normals"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"cache: removed 1 entry of era5-t2m-normals ({_bytes(one)} freed)")
        assert sorted(e.key for e in cache.entries()) == sorted([_key(0), _key(1)])
        assert main(["cache", "clear"]) == 0
        assert capsys.readouterr().out.startswith("cache: removed 2 entries (")
        assert cache.entries() == [] and (folder / ".pangeo-hpc.json").exists()

        assert main(["cache", "size", "--recipe", "x"]) == 2
        assert "--recipe applies to `cache list` and `cache clear`" in capsys.readouterr().err


def _bytes(n: int) -> str:
    from pangeo_hpc.inputs.sizes import format_bytes

    return format_bytes(n)


def test_cache_clear_never_touches_a_users_folder(tmp_path, monkeypatch, main, capsys):
    thesis = tmp_path / "thesis"
    thesis.mkdir(mode=0o700)
    (thesis / "thesis.tex").write_text("\\chapter{Results}\n")
    (thesis / f"{_key(1)}.npz").write_bytes(b"my own array, named like an entry")
    before = _snapshot(tmp_path)
    with _point_at(thesis, monkeypatch):
        for argv in (["cache", "clear"], ["cache", "clear", "--recipe", "x"], ["cache", "list"]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1, err
            assert f"pangeo-hpc.cache.folder '{thesis}' holds files that pangeo-hpc" in err[0]
            assert "nothing was changed" in err[0]
    assert _snapshot(tmp_path) == before


def test_entries_read_back_as_views_equal_what_numpy_loads(tmp_path):
    """An entry's arrays are views of the bytes read (no copy, no second CRC): every kind a
    state holds comes back equal to ``np.load``'s reading, writable, of its type, aligned."""
    import io

    from pangeo_hpc.batch.incremental import state_cache
    from pangeo_hpc.batch.incremental.entry_bytes import read_entry

    rng = np.random.default_rng(3)
    state = {
        "f8": rng.normal(size=(7, 5)),
        "f4_fortran": np.asfortranarray(rng.normal(size=(3, 4)).astype("f4")),
        "i4": np.arange(11, dtype="i4"),
        "odd": np.arange(3, dtype="u1"),  # shifts the next member's offset off 8 bytes
        "i8_after_odd": np.arange(5, dtype="i8"),
        "empty": np.zeros((0, 3)),
        "scalar": np.array(2.5),
        "names": np.array(["a", "bc"], dtype="<U64"),
        "times": np.array(["2000-01-01", "2000-02-01"], dtype="datetime64[ns]"),
        "flags": np.array([True, False]),
    }
    cache = StateCache(tmp_path / "states")
    assert cache.put(_key(5), state, {"i": 5})
    path = cache.folder / f"{_key(5)}.npz"
    views = read_entry(path, state_cache._HEAD, state_cache._DIGEST)
    blob = path.read_bytes()
    with np.load(io.BytesIO(blob[blob.index(b"PK\x03\x04") :])) as npz:
        assert sorted(views) == sorted(npz.files)
        for name in npz.files:
            got, want = views[name], npz[name]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
            assert got.flags.aligned and got.flags.writeable, name
    assert views["f4_fortran"].flags.f_contiguous
    views["f8"][0, 0] = 99.0  # this process's copy only
    assert cache.get(_key(5))[0]["f8"][0, 0] == state["f8"][0, 0]
