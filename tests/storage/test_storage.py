"""Storage on this machine's own file systems, and Lustre through a stand-in ``lfs``.

No Lustre can run here (it needs kernel modules and servers): the Lustre tests put
``tests/support/fake_lfs/lfs`` on PATH, which records its calls and answers as Lustre's ``lfs``
does, and make ``detect`` report Lustre for a temporary folder. The rclone tests
(test_lazy_mount.py) exercise a real lazily loading mount.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.storage import detect, hydration, prepare_output, stripe_count, warmup
from pangeo_hpc.storage.detect import FsInfo
from tests.support.paths import FAKE_LFS, ROOT


def test_detect_known_file_systems(tmp_path):
    assert detect("/dev/shm").kind == "tmpfs" and detect("/dev/shm").mount_point == "/dev/shm"
    assert detect("/proc").mount_type == "proc"
    here = detect(tmp_path)
    assert here.kind in ("ext4", "xfs", "overlay", "btrfs", "tmpfs") and not here.locks_unreliable
    with pytest.raises(InputError, match="does not exist"):
        detect(tmp_path / "nope")


def test_hydration_from_allocated_blocks(tmp_path):
    (tmp_path / "loaded.nc").write_bytes(os.urandom(1 << 20))
    with open(tmp_path / "released.nc", "wb") as f:  # sparse: a size, no bytes
        f.truncate(1 << 20)
    with open(tmp_path / "partial.nc", "wb") as f:
        f.truncate(1 << 20)
        f.seek(0)
        f.write(os.urandom(256 << 10))
    report = hydration(tmp_path)
    states = {Path(f.path).name: f.state for f in report.files}
    assert states == {"loaded.nc": "loaded", "released.nc": "released", "partial.nc": "partial"}
    assert report.bytes_total == 3 << 20
    assert (1 << 20) + (256 << 10) <= report.bytes_loaded < (3 << 20)
    assert "3 files (1 released, 1 partial, 1 loaded)" in report.summary()


def test_warmup_reads_everything_and_reports_what_vanished(tmp_path):
    files = []
    for i in range(6):
        p = tmp_path / f"f{i}.nc"
        with open(p, "wb") as f:  # released-looking (sparse) files
            f.truncate(2 << 20)
        files.append(p)
    gone = tmp_path / "gone.nc"
    seen = []

    def progress(done, total, nfiles_done, nfiles):
        seen.append((done, total, nfiles_done, nfiles))
        if nfiles_done == 1:
            files[-1].unlink()  # vanishes during the warm-up

    report = warmup(tmp_path, files=[*files, gone], workers=1, progress=progress)
    assert report.files == 5 and report.bytes == 5 * (2 << 20)
    failed = dict(report.failed)
    assert failed[str(gone)] == "vanished before the warm-up"
    assert failed[str(files[-1])] == "vanished during the warm-up"
    assert seen[-1][2:] == (6, 6) and seen[-1][1] == 6 * (2 << 20)
    assert "2 failed" in report.summary()


def test_warmup_skips_loaded_files(tmp_path):
    (tmp_path / "a.nc").write_bytes(os.urandom(1 << 16))
    report = warmup(tmp_path)
    assert report.skipped == 1 and report.files == 0


@pytest.fixture
def fake_lustre(tmp_path, monkeypatch):
    """A folder that ``detect`` calls Lustre, with the stand-in ``lfs`` on PATH."""
    state = tmp_path / "lfs-state"
    state.mkdir()
    root = tmp_path / "fsx"
    root.mkdir()
    monkeypatch.setenv("FAKE_LFS_STATE", str(state))
    monkeypatch.setenv("PATH", f"{FAKE_LFS}{os.pathsep}{os.environ['PATH']}")

    def fake_detect(path):
        return FsInfo(os.path.realpath(path), "lustre", 0x0BD00BD0, str(root), "lustre", "fsx")

    for mod in ("pangeo_hpc.storage.hydration", "pangeo_hpc.storage.stripe"):
        monkeypatch.setattr(importlib.import_module(mod), "detect", fake_detect)
    return root, state


def _calls(state):
    return [json.loads(line) for line in (state / "calls.log").read_text().splitlines()]


def test_lustre_hydration_and_batched_hsm_restore(fake_lustre, monkeypatch):
    root, state = fake_lustre
    paths = []
    for i in range(2500):
        p = root / f"{i:04d}.nc"
        p.write_bytes(b"x" * 100)
        paths.append(str(p))
    (state / "released").write_text("\n".join(paths[:2300]) + "\n")
    before = hydration(root)
    assert before.method == "lfs hsm_state" and before.counts["released"] == 2300
    assert sum(c[0] == "hsm_state" for c in _calls(state)) == 3  # 1,000 files per call

    monkeypatch.setattr(
        importlib.import_module("pangeo_hpc.storage.warmup").time, "sleep", lambda s: None
    )
    report = warmup(root, hsm=True)
    restores = [c for c in _calls(state) if c[0] == "hsm_restore"]
    assert [len(c) - 1 for c in restores] == [1000, 1000, 300]  # batched, loaded ones skipped
    assert report.files == 2300 and report.skipped == 200 and not report.failed
    assert any(c[0] == "hsm_action" for c in _calls(state))
    assert hydration(root).counts == {"released": 0, "partial": 0, "loaded": 2500, "missing": 0}


def test_hsm_batch_size_is_checked(fake_lustre):
    import dask

    root, state = fake_lustre
    (root / "a.nc").write_bytes(b"x")
    (state / "released").write_text(str(root / "a.nc") + "\n")
    with dask.config.set({"pangeo-hpc.storage.hsm-batch": 20000}):
        with pytest.raises(InputError, match="use 1000 to 5000 files per call"):
            warmup(root, hsm=True)


def test_stripe_counts_and_setstripe(fake_lustre):
    root, state = fake_lustre
    assert stripe_count(300e9) == 300 and stripe_count(300e9, osts=24) == 24
    assert stripe_count(1) == 1 and stripe_count(2.5e9, gb_per_stripe=0.5) == 5
    out = root / "result"
    out.mkdir()
    assert prepare_output(out, int(2.2e9)) == 3
    assert (state / "stripes").read_text().split() == ["-c", "3", str(out)]
    assert prepare_output(out, int(100e9)) == 4  # capped at the 4 OSTs `lfs df` lists


def test_stripe_is_a_no_op_elsewhere(tmp_path):
    assert prepare_output(tmp_path, int(5e9)) is None


def test_cli_hydration_and_warmup(tmp_path):
    (tmp_path / "a.nc").write_bytes(os.urandom(4096))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", "hydration", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["counts"]["loaded"] == 1
    r = subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", "warmup", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_stage_a_folder_in_ranges_resumably(tmp_path):
    from pangeo_hpc.storage.stage import stage

    src = tmp_path / "src"
    (src / "2001" / "01").mkdir(parents=True)
    big = os.urandom(5 << 20)
    (src / "2001" / "01" / "big.nc").write_bytes(big)
    (src / "small.nc").write_bytes(b"abc")
    (src / "empty.nc").write_bytes(b"")
    report = stage(str(src), tmp_path / "dst", range_size=1 << 20, threads=4)
    assert report.files == 3 and not report.failed
    assert (tmp_path / "dst" / "2001" / "01" / "big.nc").read_bytes() == big
    assert (tmp_path / "dst" / "small.nc").read_bytes() == b"abc"
    assert not list((tmp_path / "dst").rglob(".*.part"))
    again = stage(str(src), tmp_path / "dst")
    assert again.files == 0 and again.skipped == 3  # resumes: nothing to copy


def test_stage_errors(tmp_path):
    from pangeo_hpc.storage.stage import stage

    with pytest.raises(InputError, match="does not exist: check the bucket and prefix"):
        stage(str(tmp_path / "nope"), tmp_path / "dst")
    with pytest.raises(InputError, match="must be positive"):
        stage(str(tmp_path), tmp_path / "dst", threads=0)


def test_stage_creates_each_file_with_its_stripes_on_lustre(fake_lustre, tmp_path):
    from pangeo_hpc.storage.stage import stage

    root, state = fake_lustre
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.nc").write_bytes(os.urandom(1000))
    assert stage(str(src), root / "staged").files == 1
    assert (state / "stripes").read_text().split() == [
        "-c",
        "1",
        str(root / "staged" / ".a.nc.part"),
    ]
