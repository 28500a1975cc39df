"""A cached answer equals a fresh one under every edit a user can make (issue 27).

The state cache's key holds the data's identity (device, inode, size, mtime, ctime) and the
code's (pangeo-hpc's sources and version, the libraries' versions, a user function's
source). Each edit below is one a user makes: values corrected in place with the mtime put
back (``cp -p``, ``rsync -t``, ``touch -r``), a file replaced by a copy with the same size
and mtime, a user function's body changed, a step's option changed, a variable added to a
file, pangeo-hpc's own kernel changed in an editable install. After each, a cached run must
give the ``--no-cache`` answer. The property test is shown to fail with the old key
(size and mtime; step names and options only).
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import yaml
from distributed import Client, LocalCluster

from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental import splitting
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.batch.pipeline.steps import compute, open_inputs
from pangeo_hpc.inputs.stamps import Stamp
from tests.support.paths import ROOT

YEARS = (2000, 2001, 2002, 2003)
STEPS_MODULE = """
def scale(da):
    return da * {factor}


scale.step_by_step = True
"""


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=1, threads_per_worker=2, processes=False) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _write_year(path: Path, year: int) -> None:
    """A year of daily SST on a 10-degree grid, uncompressed (a rewrite of its values in
    place keeps the file's size, as a corrected re-publication does)."""
    days = np.arange(np.datetime64(f"{year}-01-01"), np.datetime64(f"{year + 1}-01-01"))
    lat = np.arange(-85.0, 90.0, 10.0)
    lon = np.arange(0.0, 360.0, 10.0)
    rng = np.random.default_rng(year)
    values = (
        290
        + 10 * np.cos(np.deg2rad(lat))[None, :, None]
        + rng.normal(size=(days.size, lat.size, lon.size))
    )
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", days.size)
        nc.createDimension("lat", lat.size)
        nc.createDimension("lon", lon.size)
        t = nc.createVariable("time", "f8", ("time",))
        t.setncatts(
            {"units": "days since 2000-01-01", "calendar": "standard", "standard_name": "time"}
        )
        t[:] = (days - np.datetime64("2000-01-01")).astype(int)
        for name, v, units in (("lat", lat, "degrees_north"), ("lon", lon, "degrees_east")):
            var = nc.createVariable(name, "f4", (name,))
            var.units = units
            var[:] = v
        sst = nc.createVariable("sst", "f4", ("time", "lat", "lon"), contiguous=True)
        sst.setncatts({"units": "K", "standard_name": "sea_surface_temperature"})
        sst[:] = values


def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for year in YEARS:
        _write_year(folder / f"sst_{year}.nc", year)
    return folder


def _recipe(folder: Path, data: Path, *, months=None, user=False, area_first=False) -> Path:
    steps: list = [{"function": "mysteps:scale"}] if user else []
    if months:
        steps.append({"select_months": list(months)})
    reduce = (
        [{"area_mean": {}}, {"time_mean": {}}]
        if area_first
        else [{"time_mean": {}}, {"area_mean": {}}]
    )
    doc = {
        "name": "keyed",
        "dataset": {"variable": "sst", "files": str(data / "sst_*.nc")},
        "steps": steps + reduce,
    }
    path = folder / "keyed.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _values(result: xr.Dataset) -> np.ndarray:
    """Every number of the result's variables (not their bounds)."""
    names = sorted(v for v in result.data_vars if result[v].dtype.kind == "f")
    return np.concatenate([np.ravel(result[v].values) for v in names])


def _keep_times(path: Path, edit) -> None:
    """Run ``edit(path)``, then put its atime and mtime back (``touch -r``)."""
    st = path.stat()
    edit(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _add(path: Path, delta: float) -> None:
    with netCDF4.Dataset(path, "r+") as nc:
        nc["sst"][:] = nc["sst"][:] + delta


def rewrite_in_place(data: Path, rng: random.Random) -> str:
    path = data / f"sst_{rng.choice(YEARS)}.nc"
    before = path.stat()
    _keep_times(path, lambda p: _add(p, rng.choice([-3.0, 1.5, 10.0])))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size, before.st_mtime_ns, before.st_ino,
    )  # fmt: skip
    return f"values of {path.name} rewritten in place, size and mtime kept"


def replace_by_a_copy(data: Path, rng: random.Random) -> str:
    path = data / f"sst_{rng.choice(YEARS)}.nc"
    before = path.stat()
    copy = path.with_suffix(".tmp")
    shutil.copy2(path, copy)
    _add(copy, rng.choice([-2.0, 4.0]))
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(copy, path)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    return f"{path.name} replaced by an edited copy, size and mtime kept"


def add_a_variable(data: Path, rng: random.Random) -> str:
    path = data / f"sst_{rng.choice(YEARS)}.nc"

    def add(p: Path) -> None:
        with netCDF4.Dataset(p, "r+") as nc:
            name = f"extra{len(nc.variables)}"
            nc.createVariable(name, "f4", ("lat",))[:] = 1.0

    _keep_times(path, add)
    return f"a variable added to {path.name}, mtime kept"


EDITS = {"rewrite": rewrite_in_place, "replace": replace_by_a_copy, "variable": add_a_variable}


class Scenario:
    """A recipe folder with a user function, a step option and four yearly files."""

    def __init__(self, tmp_path: Path) -> None:
        self.folder = tmp_path
        self.data = _dataset(tmp_path)
        self.factor = 1.0
        self.months = [1, 2, 3, 4, 5, 6]
        self.cache = StateCache(tmp_path / "cache")
        self._write()

    def _write(self) -> None:
        (self.folder / "mysteps.py").write_text(STEPS_MODULE.format(factor=self.factor))
        self.recipe = _recipe(self.folder, self.data, months=self.months, user=True)

    def edit(self, kind: str, rng: random.Random) -> str:
        if kind == "function":
            self.factor = rng.choice([f for f in (0.5, 1.0, 2.0, 3.0) if f != self.factor])
            self._write()
            return f"the user function's body changed to x * {self.factor}"
        if kind == "option":
            self.months = sorted(rng.sample(range(1, 13), rng.randint(1, 6)))
            self._write()
            return f"select_months changed to {self.months}"
        return EDITS[kind](self.data, rng)

    def answers(self, client) -> tuple[np.ndarray, np.ndarray]:
        """The cached run's answer and the fresh (``cache=False``) one."""
        spec = load(self.recipe)
        cached = compute(open_inputs(spec), client, cache=self.cache)
        fresh = compute(open_inputs(spec), client, cache=False)
        return _values(cached.result), _values(fresh.result)


KINDS = ["rewrite", "replace", "function", "option", "variable"]


def _mismatches(scenario: Scenario, client, kinds: list[str], rng: random.Random) -> list[str]:
    scenario.answers(client)  # every state cached
    wrong = []
    for kind in kinds:
        what = scenario.edit(kind, rng)
        cached, fresh = scenario.answers(client)
        if not np.allclose(cached, fresh, rtol=1e-6, atol=0):
            wrong.append(f"after {what}: cached {cached} != fresh {fresh}")
    return wrong


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_a_cached_answer_equals_a_fresh_one_after_any_sequence_of_edits(seed, client, tmp_path):
    rng = random.Random(seed)
    kinds = [rng.choice(KINDS) for _ in range(7)]
    kinds += [k for k in KINDS if k not in kinds]  # every kind at least once
    assert _mismatches(Scenario(tmp_path), client, kinds, rng) == []


def test_the_property_fails_with_a_key_of_size_and_mtime(client, tmp_path, monkeypatch):
    """The old key (path, size, mtime): a rewrite in place with the mtime put back, and a copy
    renamed over the file, keep the stale state. The property test sees it."""
    monkeypatch.setattr(Stamp, "fields", property(lambda s: [s.path, s.size, s.mtime_ns, s.etag]))
    wrong = _mismatches(Scenario(tmp_path), client, ["rewrite", "replace"], random.Random(0))
    assert len(wrong) == 2, wrong


def test_the_property_fails_with_a_chain_hash_of_names_and_options(client, tmp_path, monkeypatch):
    """The old chain hash (step names and options, no code): an edited user function keeps
    the stale states. The property test sees it."""
    monkeypatch.setattr(splitting, "function_code", lambda fn: "same")
    wrong = _mismatches(Scenario(tmp_path), client, ["function"], random.Random(0))
    assert len(wrong) == 1, wrong


# --------------------------------------------------------------------------------------------
# the two reproductions of issue 27, as a user runs them: the command line, a fresh process


def _cli(*args: str, cwd: Path, pythonpath: Path = ROOT, name: str | None = None) -> float:
    """Run the recipe through ``python -m pangeo_hpc.run``; its one answer (the area mean).
    Its output folder is ``name`` in ``cwd`` (default: the next ``outN``)."""
    out = cwd / (name or f"out{len(list(cwd.glob('out*')))}")
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    r = subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", *args, "--out", str(out), "--no-progress"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    with xr.open_dataset(out / "result.nc") as ds:
        return float(_values(ds)[0])


@pytest.mark.slow
def test_a_file_rewritten_in_place_with_its_mtime_put_back_is_read_again(tmp_path):
    data = _dataset(tmp_path)
    recipe = str(_recipe(tmp_path, data))
    first = _cli(recipe, cwd=tmp_path)
    _keep_times(data / "sst_2001.nc", lambda p: _add(p, 10.0))
    with ThreadPoolExecutor(2) as pool:  # at once: the cached run and the uncached one
        cached = pool.submit(_cli, recipe, cwd=tmp_path, name="again")
        uncached = pool.submit(_cli, recipe, "--no-cache", cwd=tmp_path, name="fresh")
        again, fresh = cached.result(), uncached.result()
    assert again == pytest.approx(fresh, rel=1e-6)
    assert again == pytest.approx(first + 10.0 / len(YEARS), rel=1e-4)  # a quarter of the days


@pytest.mark.slow
def test_an_edited_user_function_misses_its_old_states(tmp_path):
    data = _dataset(tmp_path)
    recipe = str(_recipe(tmp_path, data, user=True))
    (tmp_path / "mysteps.py").write_text(STEPS_MODULE.format(factor=1.0))
    first = _cli(recipe, cwd=tmp_path)
    (tmp_path / "mysteps.py").write_text(STEPS_MODULE.format(factor=2.0))
    again = _cli(recipe, cwd=tmp_path)
    assert again == pytest.approx(2 * first, rel=1e-6)


#: appended to a copy of pangeo_hpc/recipes/means.py: area_mean adds one (a changed kernel)
CHANGED_KERNEL = """

_unchanged_area_mean = area_mean


@functools.wraps(_unchanged_area_mean)
def area_mean(da, *args, **kwargs):
    out = _unchanged_area_mean(da, *args, **kwargs)
    return (out + 1.0).assign_attrs(out.attrs)
"""


@pytest.mark.slow
def test_a_changed_kernel_of_the_package_misses_its_old_states(tmp_path):
    """An editable install whose recipe function changed: the states it made before are
    not reused (the key holds a hash of the package's sources)."""
    copy = tmp_path / "src"
    shutil.copytree(
        ROOT / "pangeo_hpc", copy / "pangeo_hpc", ignore=shutil.ignore_patterns("__pycache__")
    )
    data = _dataset(tmp_path)
    recipe = str(_recipe(tmp_path, data, area_first=True))  # area_mean before the reduction
    first = _cli(recipe, cwd=tmp_path, pythonpath=copy)
    means = copy / "pangeo_hpc" / "recipes" / "means.py"
    text = means.read_text()
    if "\nimport functools\n" not in text:
        text = text.replace(
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\nimport functools\n",
            1,
        )
    means.write_text(text + CHANGED_KERNEL)
    again = _cli(recipe, cwd=tmp_path, pythonpath=copy)
    assert again == pytest.approx(first + 1.0, rel=1e-6)


# --------------------------------------------------------------------------------------------
# a FUSE mount, where ctime and inode do not follow the file: the content fingerprint


@pytest.mark.s3
def test_on_an_rclone_mount_a_rewrite_in_place_is_seen_by_the_fingerprint(
    fuse, client, tmp_path, monkeypatch
):
    """Measured on rclone's mount: ctime is the mtime and the inode comes from the path, so
    a rewrite in place with the mtime put back leaves size, mtime, ctime and inode as they
    were; only the fingerprint tells. A remount and a first read change nothing (no false
    miss)."""
    from pangeo_hpc.io import fingerprint
    from tests.support.servers import FolderMount

    data = _dataset(tmp_path)
    mnt = tmp_path / "mnt"
    recipe = load(_recipe(tmp_path, mnt))
    cache = StateCache(tmp_path / "cache")
    changed = "sst_2002.nc"
    with FolderMount(data, mnt, tmp_path / "rclone-cache"):
        before = fingerprint.stamp(str(mnt / changed))
        assert before.fingerprint is not None  # a FUSE mount: fingerprinted
        compute(open_inputs(recipe), client, cache=cache)
    with FolderMount(data, mnt, tmp_path / "rclone-cache"):  # mounted again
        assert fingerprint.stamp(str(mnt / changed)) == before
        _keep_times(data / changed, lambda p: _add(p, 10.0))
        after = fingerprint.stamp(str(mnt / changed))
        # what the mount shows of the rewritten file is what it showed before, but for the
        # fingerprint (rclone 1.60 as Debian ships it)
        assert dataclasses.replace(after, fingerprint=None) == dataclasses.replace(
            before, fingerprint=None
        )
        assert after.fingerprint != before.fingerprint
        cached = compute(open_inputs(recipe), client, cache=cache)
        fresh = compute(open_inputs(recipe), client, cache=False)
        assert cached.reads.files_read == 1
        np.testing.assert_allclose(_values(cached.result), _values(fresh.result), rtol=1e-6)

        # without the fingerprint the stale state is taken: this test can fail
        monkeypatch.setattr(fingerprint, "needs_fingerprint", lambda stamp: False)
        compute(open_inputs(recipe), client, cache=cache)  # states keyed without it
        _keep_times(data / changed, lambda p: _add(p, 10.0))
        stale = compute(open_inputs(recipe), client, cache=cache)
        fresh = compute(open_inputs(recipe), client, cache=False)
        assert stale.reads.files_read == 0
        assert not np.allclose(_values(stale.result), _values(fresh.result), rtol=1e-6)


# --------------------------------------------------------------------------------------------
# option values given through the Python API: keyed by their whole content


def _boxes(north: float):
    import regionmask

    box = np.array([[0.0, -north], [100.0, -north], [100.0, north], [0.0, north]])
    return regionmask.Regions([box], names=["box"], abbrevs=["B"], name="mine")


def test_regions_with_the_same_names_and_other_vertices_miss_their_old_states(client, tmp_path):
    """``select_region(regions=...)`` from the Python API: two ``Regions`` that print alike
    (same names, other vertices) select other cells. Their ``str`` in the key (the old chain
    hash) served the narrow box's states for the wide one: 299.81 K, where a fresh run
    gives 298.21 K."""
    from pangeo_hpc.batch.chains.recipe_yaml import from_dict

    data = _dataset(tmp_path)
    cache = StateCache(tmp_path / "cache")
    narrow, wide = _boxes(20.0), _boxes(70.0)
    assert str(narrow) == str(wide)

    def spec(regions):
        steps = [{"select_region": {"name": "B", "regions": regions}}, {"time_mean": {}},
                 {"area_mean": {}}]  # fmt: skip
        doc = {"name": "regions", "dataset": {"variable": "sst", "files": str(data / "*.nc")},
               "steps": steps}  # fmt: skip
        return from_dict(doc, tmp_path / "regions.yaml")

    first = _values(compute(open_inputs(spec(narrow)), client, cache=cache).result)
    cached = _values(compute(open_inputs(spec(wide)), client, cache=cache).result)
    fresh = _values(compute(open_inputs(spec(wide)), client, cache=False).result)
    assert abs(first - fresh).max() > 1.0, (first, fresh)  # the two regions' answers differ
    np.testing.assert_allclose(cached, fresh, rtol=1e-6)


def test_an_option_without_a_stable_identity_is_not_cached():
    """An option Dask can only tell apart by identity (a lock, say) cannot key a state: the
    chain is not split by file, and the run says why."""
    import threading

    from pangeo_hpc.batch.chains.chain import parse_steps

    steps = [{"select_region": {"name": "B", "regions": threading.Lock()}}, {"time_mean": {}}]
    why = splitting.split(parse_steps(steps, "steps"))
    assert why == (
        "steps[0] (select_region): a lock option whose content Dask cannot hash, so its "
        "states cannot be keyed"
    )
