"""Optional extras: without their packages `import pangeo_hpc` and the core work, and each
feature that needs one says which extra installs it.

Each check runs in a fresh interpreter where the packages are hidden (``sys.modules[name] =
None`` makes ``import name`` fail, as if it were not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib

from pangeo_hpc.extras import EXTRAS
from tests.support.envfiles import normalise, parse_requirement
from tests.support.paths import ROOT

#: the top-level modules of each extra's packages and of what they bring (botocore: s3fs)
HIDDEN = {
    "s3": ["s3fs", "obstore", "kerchunk", "arro3", "botocore", "aiobotocore"],
    "stores": ["icechunk", "virtualizarr", "obspec_utils"],
    "lab": ["jupyterlab", "jupyter_server_proxy", "dask_labextension", "hvplot"],
    "demo": ["global_land_mask"],
    "regions": ["regionmask", "geopandas"],
    "plot": ["cartopy"],
    "gateway": ["dask_gateway"],
}


def _run_without(hidden: list[str], code: str, cwd) -> subprocess.CompletedProcess:
    """Run ``code`` in a new Python in which the modules ``hidden`` cannot be imported."""
    shim = f"import sys\nfor _m in {hidden!r}:\n    sys.modules[_m] = None\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", shim + textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_extras_are_those_of_pyproject():
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, modules in EXTRAS.items():
        declared = {parse_requirement(r)[0] for r in groups[extra]}
        assert declared == {normalise(d) for d in modules.values()}, extra
    assert groups["all"] == [f"pangeo-hpc[{','.join(HIDDEN)}]"]
    core = {parse_requirement(r)[0] for r in tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}  # fmt: skip
    assert not core & {normalise(d) for m in EXTRAS.values() for d in m.values()}


def test_the_core_imports_and_runs_without_any_extra(tmp_path):
    """Every module imports; `list` and a local run's first steps work."""
    r = _run_without(
        [m for ms in HIDDEN.values() for m in ms],
        """
        import importlib, pkgutil
        import pangeo_hpc
        names = [m.name for m in pkgutil.walk_packages(pangeo_hpc.__path__, "pangeo_hpc.")]
        for name in names:
            importlib.import_module(name)
        from pangeo_hpc import run
        assert run.main(["list"]) == 0
        print("imported", len(names))
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "era5-sst-mean" in r.stdout and "imported" in r.stdout


def test_s3_data_without_the_s3_extra_names_it(tmp_path):
    r = _run_without(
        ["obstore"],
        """
        from pangeo_hpc import open_era5, run
        from pangeo_hpc.errors import InputError
        try:
            open_era5(source="s3://era5-pds", start="2000-01", end="2000-01")
        except ImportError as exc:
            assert isinstance(exc, InputError), type(exc)
            print("library:", exc)
        code = run.main(["era5-sst-mean", "--data", "s3://era5-pds", "--out", "out"])
        print("exit", code)
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert (
        "library: reading 's3://era5-pds' needs obstore, which is not installed: "
        "pip install 'pangeo-hpc[s3]'" in r.stdout
    )
    assert "exit 2" in r.stdout
    err = r.stderr.strip().splitlines()
    assert err == ["error: " + r.stdout.split("library: ")[1].splitlines()[0]], r.stderr
    assert not (tmp_path / "out").exists()


def test_demo_data_without_the_demo_extra_names_it_and_writes_nothing(tmp_path):
    r = _run_without(
        HIDDEN["demo"],
        """
        from pangeo_hpc import run
        print("exit", run.main(["demo-data", "--out", "tree"]))
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "exit 2" in r.stdout
    assert r.stderr.strip() == (
        "error: demo-data needs global-land-mask, which is not installed: "
        "pip install 'pangeo-hpc[demo]'"
    )
    assert not (tmp_path / "tree").exists()


def test_jupyterlab_without_the_lab_extra_names_it(tmp_path):
    r = _run_without(
        HIDDEN["lab"][:2],
        """
        from pangeo_hpc.lab.setup import start_local_lab
        try:
            start_local_lab(notebook_dir=".")
        except ImportError as exc:
            print(exc)
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "JupyterLab needs jupyterlab, jupyter-server-proxy, which are not installed: "
        "pip install 'pangeo-hpc[lab]'"
    )
