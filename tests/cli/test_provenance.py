"""A result says what it is made of: the command that reproduces it, its inputs with their
stamps, its steps and code; and ``provenance`` says whether those still hold (issue 27)."""

from __future__ import annotations

import json
import os
import shlex

import numpy as np
import pytest
import xarray as xr

from tests.support.cli import run_cli, run_clis


def _numbers(folder):
    with xr.open_dataset(folder / "result.nc") as ds:
        return {v: ds[v].values for v in ds.data_vars if ds[v].dtype.kind == "f"}, dict(ds.attrs)


@pytest.mark.slow
def test_a_result_records_its_inputs_steps_and_code_and_its_command_reproduces_it(
    demo_copy, tmp_path
):
    r = run_cli(
        "era5-sst-mean", "--data", str(demo_copy), "--start", "2000-01", "--end", "2000-03",
        "--out", str(tmp_path / "a"), "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    prov = json.loads((tmp_path / "a" / "summary.json").read_text())["provenance"]
    files = prov["inputs"]["files"]
    assert [os.path.basename(os.path.dirname(os.path.dirname(f["path"]))) for f in files] == [
        "01", "02", "03",
    ]  # fmt: skip
    first = os.stat(files[0]["path"])
    assert (files[0]["size"], files[0]["inode"], files[0]["ctime_ns"]) == (
        first.st_size, first.st_ino, first.st_ctime_ns,
    )  # fmt: skip
    assert prov["steps"]["global_mean"] == [["area_mean", {}], ["time_mean", {}]]
    assert prov["states"] == {"cached": 0, "computed": 3}
    values, attrs = _numbers(tmp_path / "a")
    assert attrs["pangeo_hpc_inputs_sha256"] == prov["inputs"]["sha256"]
    assert attrs["pangeo_hpc_code_sha256"] == prov["code"]["pangeo-hpc"]
    assert prov["command"] in attrs["history"]

    # the recorded command, run as written (into another folder), gives the same numbers
    # (at once with `provenance` on the first result, which only reads it)
    words = shlex.split(prov["command"])
    assert words[:3] == ["python", "-m", "pangeo_hpc.run"]
    again, shown = run_clis(
        (*words[3:], "--out", str(tmp_path / "b"), "--no-progress"),
        ("provenance", str(tmp_path / "a")),
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    values_b, _ = _numbers(tmp_path / "b")
    assert values_b.keys() == values.keys()
    for name in values:
        np.testing.assert_array_equal(values_b[name], values[name])

    assert shown.returncode == 0, shown.stderr
    assert f"command: {prov['command']}" in shown.stdout
    assert "steps of global_mean: area_mean() -> time_mean()" in shown.stdout
    assert "now: inputs the same; code the same" in shown.stdout

    changed = files[1]["path"]
    st = os.stat(changed)
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    later = run_cli("provenance", str(tmp_path / "a"), cwd=tmp_path)
    assert "now: inputs 1 changed, 0 gone; code the same" in later.stdout
    assert f"changed since: {changed}" in later.stdout


def test_provenance_of_a_folder_without_a_summary_is_one_line_and_exit_2(tmp_path):
    r = run_cli("provenance", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: result {str(tmp_path)!r} has no summary.json: give a result folder a run "
        "wrote (results/RECIPE, or its --out)"
    ]
