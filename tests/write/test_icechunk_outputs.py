"""``--format icechunk``: a recipe's result as one commit to an Icechunk repository, local
or on a real SeaweedFS; read back, it equals the ``result.nc`` of the same run; a month
added to the data adds one commit, the earlier snapshot still gives the earlier answer;
a run that changes nothing adds none; a foreign folder is refused untouched; a run that
fails before its commit leaves the branch where it was.

Wrong writers these tests were seen to fail on: one that commits the computed result
rather than the Dataset as ``result.nc`` holds it (no CF encoding, no ``Conventions``:
test_a_month_added_is_one_commit_and_the_old_snapshot_keeps_its_answer), and one that
compares a re-run's result with the tip by its values only, so that a changed attribute
is dropped (test_a_rerun_that_changes_nothing_adds_no_commit)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import icechunk
import pytest
import xarray as xr

from pangeo_hpc.batch import run_recipe
from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.demo import generate
from pangeo_hpc.errors import InputError
from pangeo_hpc.s3 import icechunk_access
from pangeo_hpc.s3 import options as s3
from pangeo_hpc.write import icechunk_out
from tests.support.cli import run_cli
from tests.support.s3env import ensure_bucket
from tests.support.trees import TEST_SPEC

RECIPE = "era5-sst-mean"
#: attributes that say when and by which command a result was made: they differ by design
MADE = {"history"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Two months of demo SST; a test adds a third."""
    root = tmp_path / "era5"
    generate(root, replace(TEST_SPEC, start="2000-01", end="2000-02"), workers=1)
    return root


def _run(root: Path, out: object, end: str, fmt: str = "icechunk", **kw) -> object:
    return run_recipe(
        load(RECIPE), data=root, start="2000-01", end=end, out=out, fmt=fmt, workers=1, **kw
    )


def _local(path: Path) -> icechunk.Repository:
    return icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))


def _read(repo: icechunk.Repository, snapshot: str | None = None) -> xr.Dataset:
    session = (
        repo.readonly_session("main")
        if snapshot is None
        else repo.readonly_session(snapshot_id=snapshot)
    )
    return xr.open_zarr(session.store, consolidated=False).load()


def _assert_same(a: xr.Dataset, b: xr.Dataset) -> None:
    """The same values, coordinates, encodings' effect and attributes but :data:`MADE`."""
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert {k: v for k, v in a.attrs.items() if k not in MADE} == {
        k: v for k, v in b.attrs.items() if k not in MADE
    }
    for name in a.variables:
        assert a[name].attrs == b[name].attrs, name


def _netcdf(root: Path, out: Path, end: str) -> xr.Dataset:
    """A fresh run's ``result.nc`` (no cache), as a reader opens it."""
    _run(root, out, end, fmt="netcdf", cache=False)
    with xr.open_dataset(out / "result.nc") as ds:
        return ds.load()


def test_a_month_added_is_one_commit_and_the_old_snapshot_keeps_its_answer(tree, tmp_path):
    repo_dir = tmp_path / "repo"
    first = _run(tree, repo_dir, "2000-02").summary["outputs"]
    repo = _local(repo_dir)
    one = list(repo.ancestry(branch="main"))
    assert [s.id for s in one] == [first["snapshot"], "1CECHNKREP0F1RSTCMT0"]
    assert one[0].message == (
        f"{RECIPE}: 2000-01-01 to 2000-02-29, sea_surface_temperature from {tree}"
    )
    assert one[0].metadata["written_by"].startswith("pangeo-hpc")
    assert one[0].metadata["recipe"] == RECIPE
    assert one[0].metadata["inputs"]["period"] == ["2000-01-01", "2000-02-29"]
    assert one[0].metadata["provenance"]["inputs"]["sha256"]
    answer_one = _netcdf(tree, tmp_path / "nc-1", "2000-02")
    _assert_same(_read(repo), answer_one)
    assert _read(repo).attrs["Conventions"].startswith("CF-")

    generate(tree, replace(TEST_SPEC, start="2000-03", end="2000-03"), workers=1)
    second = _run(tree, repo_dir, "2000-03")
    assert second.summary["reads"]["files_reused"] == 2  # incremental: January and February
    repo = _local(repo_dir)
    two = list(repo.ancestry(branch="main"))
    assert [s.id for s in two] == [second.summary["outputs"]["snapshot"], *[s.id for s in one]]
    assert "2000-01-01 to 2000-03-31" in two[0].message
    _assert_same(_read(repo), _netcdf(tree, tmp_path / "nc-2", "2000-03"))
    assert _read(repo)["global_mean_series"].size == 3  # a month more
    # the first snapshot still gives the first answer
    _assert_same(_read(repo, first["snapshot"]), answer_one)


def test_a_rerun_that_changes_nothing_adds_no_commit(tree, tmp_path):
    repo_dir = tmp_path / "repo"
    first = _run(tree, repo_dir, "2000-02").summary["outputs"]["snapshot"]
    again = _run(tree, repo_dir, "2000-02").summary["outputs"]
    assert again["snapshot"] == first
    assert again["unchanged"].startswith(f"the result equals snapshot {first}'s")
    assert len(list(_local(repo_dir).ancestry(branch="main"))) == 2
    # a changed attribute is a change: a recipe whose description (the title) differs
    spec = replace(load(RECIPE), description="Another title.")
    run_recipe(spec, data=tree, start="2000-01", end="2000-02", out=repo_dir, fmt="icechunk",
               workers=1)  # fmt: skip
    repo = _local(repo_dir)
    assert len(list(repo.ancestry(branch="main"))) == 3
    assert _read(repo).attrs["title"] == "Another title."


def test_a_run_failing_before_its_commit_leaves_the_branch_as_it_was(tree, tmp_path, monkeypatch):
    repo_dir = tmp_path / "repo"
    first = _run(tree, repo_dir, "2000-01").summary["outputs"]["snapshot"]
    before = _read(_local(repo_dir))
    seen = []

    def fail(session) -> None:
        seen.append(session.has_uncommitted_changes)  # the write had started
        raise RuntimeError("a step failed after the write started")

    monkeypatch.setattr(icechunk_out, "BEFORE_COMMIT", [fail])
    with pytest.raises(RuntimeError, match="after the write started"):
        _run(tree, repo_dir, "2000-02")
    assert seen == [True]
    repo = _local(repo_dir)
    assert next(s.id for s in repo.ancestry(branch="main")) == first
    _assert_same(_read(repo), before)
    # a new repository whose first commit fails: nothing at all
    with pytest.raises(RuntimeError, match="after the write started"):
        _run(tree, tmp_path / "new", "2000-01")
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["era5", "repo"]


def test_a_folder_holding_anything_else_is_refused_untouched(tree, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's file")
    r = run_cli(RECIPE, "--data", str(tree), "--start", "2000-01", "--end", "2000-01",
                "--format", "icechunk", "--out", str(mine), "--workers", "1", "--no-progress",
                cwd=tmp_path)  # fmt: skip
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "holds files that pangeo-hpc did not write" in lines[0], r.stderr
    assert "notes.txt" in lines[0]
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert (mine / "notes.txt").read_text() == "a user's file"
    states = Path(os.environ["DASK_PANGEO_HPC__CACHE__FOLDER"])  # refused before any read
    assert not states.exists() or not any(states.iterdir())
    # a repository a user made (its tip not ours), and a result folder of ours
    theirs = tmp_path / "theirs"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(theirs)))
    before = sorted(str(p.relative_to(theirs)) for p in theirs.rglob("*"))
    with pytest.raises(InputError, match="holds files that pangeo-hpc did not write"):
        _run(tree, theirs, "2000-01")
    assert sorted(str(p.relative_to(theirs)) for p in theirs.rglob("*")) == before
    assert len(list(repo.ancestry(branch="main"))) == 1
    _run(tree, tmp_path / "result", "2000-01", fmt="netcdf")
    with pytest.raises(InputError, match="holds a result output of pangeo-hpc, not a icechunk"):
        _run(tree, tmp_path / "result", "2000-01")
    # the data tree itself
    with pytest.raises(InputError, match="is the input"):
        _run(tree, tree, "2000-01")


def test_the_cli_prints_the_snapshot_and_why_a_rerun_adds_no_commit(tree, tmp_path):
    out = tmp_path / "repo"
    argv = (RECIPE, "--data", str(tree), "--start", "2000-01", "--end", "2000-01",
            "--format", "icechunk", "--out", str(out), "--workers", "1", "--no-progress")  # fmt: skip
    r = run_cli(*argv, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tip = next(iter(_local(out).ancestry(branch="main")))
    assert f"icechunk: {out} branch main snapshot {tip.id}" in r.stdout.splitlines()
    assert json.dumps(tip.metadata["answer"])  # the answer, as summary.json holds it
    again = run_cli(*argv, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"icechunk: {out} branch main snapshot {tip.id} (no new commit: the result " in (
        again.stdout
    )
    assert len(list(_local(out).ancestry(branch="main"))) == 2


BUCKET = "icechunk-out"


@pytest.fixture
def aws(aws_chain):
    """The server through the AWS chain, the bucket; the server's options and a client."""
    client = ensure_bucket(aws_chain, BUCKET)
    return s3.S3Options(endpoint_url=aws_chain.endpoint_url), client


@pytest.mark.s3
def test_on_s3_a_month_is_one_commit_and_a_failed_first_run_leaves_nothing(
    aws, tree, tmp_path, monkeypatch
):
    opts, client = aws
    url = f"s3://{BUCKET}/{tmp_path.name}/repo"
    first = _run(tree, url, "2000-02", s3=opts).summary["outputs"]["snapshot"]
    repo = icechunk.Repository.open(icechunk_access.storage(url, opts))
    _assert_same(_read(repo), answer_one := _netcdf(tree, tmp_path / "nc-1", "2000-02"))
    generate(tree, replace(TEST_SPEC, start="2000-03", end="2000-03"), workers=1)
    second = _run(tree, url, "2000-03", s3=opts).summary["outputs"]["snapshot"]
    repo = icechunk.Repository.open(icechunk_access.storage(url, opts))
    assert [s.id for s in repo.ancestry(branch="main")][:2] == [second, first]
    _assert_same(_read(repo), _netcdf(tree, tmp_path / "nc-2", "2000-03"))
    _assert_same(_read(repo, first), answer_one)
    # read back as docs/user-guide/icechunk-outputs.md says, keys from the environment
    documented = icechunk.s3_storage(
        bucket=BUCKET, prefix=f"{tmp_path.name}/repo", endpoint_url=opts.endpoint_url,
        allow_http=True, force_path_style=True, from_env=True, region="us-east-1",
    )  # fmt: skip
    _assert_same(_read(icechunk.Repository.open(documented)), _read(repo))

    def fail(session) -> None:
        raise RuntimeError("a step failed after the write started")

    monkeypatch.setattr(icechunk_out, "BEFORE_COMMIT", [fail])
    with pytest.raises(RuntimeError):
        _run(tree, url, "2000-03", s3=opts)
    repo = icechunk.Repository.open(icechunk_access.storage(url, opts))
    assert next(iter(repo.ancestry(branch="main"))).id == second
    new = f"s3://{BUCKET}/{tmp_path.name}/new"
    with pytest.raises(RuntimeError):
        _run(tree, new, "2000-01", s3=opts)
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{tmp_path.name}/new/")
    assert listed.get("KeyCount", 0) == 0
    # a prefix holding a user's object: refused, the object kept
    client.put_object(Bucket=BUCKET, Key=f"{tmp_path.name}/mine/data.csv", Body=b"1,2\n")
    with pytest.raises(InputError, match="no Icechunk repository of pangeo-hpc"):
        _run(tree, f"s3://{BUCKET}/{tmp_path.name}/mine", "2000-01", s3=opts)
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{tmp_path.name}/mine/")
    assert [o["Key"] for o in listed["Contents"]] == [f"{tmp_path.name}/mine/data.csv"]


#: a run killed (SIGKILL) after it made a new repository on S3, before its first commit
KILLED_BEFORE_COMMIT = """
import os, signal, sys
import numpy as np, xarray as xr
from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.write import icechunk_out

icechunk_out.BEFORE_COMMIT.append(lambda session: os.kill(os.getpid(), signal.SIGKILL))
ds = xr.Dataset({"tas": (("lat", "lon"), np.zeros((2, 3)))})
icechunk_out.commit_dataset(sys.argv[1], ds, message="killed", metadata={},
                            s3=S3Options(endpoint_url=sys.argv[2]))
"""


@pytest.mark.s3
def test_on_s3_a_repository_left_by_a_killed_run_is_made_again(aws, tree, tmp_path):
    """A run killed between the repository's creation and its first commit leaves a
    repository without a commit of ours: its claim beside the prefix says it is ours, so
    the next run removes it and commits; a repository a user made, with no claim, is
    refused as before. (Without the claim, the next run refused the killed run's
    repository as "no Icechunk repository of pangeo-hpc".)"""
    import subprocess
    import sys

    from pangeo_hpc.write.s3_claim import claim_key
    from pangeo_hpc.write.s3_guard import S3Target

    opts, client = aws
    url = f"s3://{BUCKET}/{tmp_path.name}/killed"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_COMMIT, url, opts.endpoint_url],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    claim = claim_key(S3Target.of(url, opts))
    client.head_object(Bucket=BUCKET, Key=claim)  # the claim is there
    left = icechunk.Repository.open(icechunk_access.storage(url, opts))
    assert len(list(left.ancestry(branch="main"))) == 1  # the initial snapshot alone

    done = _run(tree, url, "2000-02", s3=opts).summary["outputs"]
    repo = icechunk.Repository.open(icechunk_access.storage(url, opts))
    history = [s.id for s in repo.ancestry(branch="main")]
    assert history[0] == done["snapshot"] and len(history) == 2
    _assert_same(_read(repo), _netcdf(tree, tmp_path / "nc", "2000-02"))
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{tmp_path.name}/")
    assert claim not in [o["Key"] for o in listed["Contents"]]  # dropped after the commit

    mine = f"s3://{BUCKET}/{tmp_path.name}/users"
    icechunk.Repository.create(icechunk_access.storage(mine, opts.for_writing()))
    with pytest.raises(InputError, match="no Icechunk repository of pangeo-hpc"):
        _run(tree, mine, "2000-02", s3=opts)
    assert icechunk.Repository.exists(icechunk_access.storage(mine, opts))
