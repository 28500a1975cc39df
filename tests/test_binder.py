"""binder/: the environment, postBuild and start that binder (repo2docker) uses.

repo2docker cannot run here (no conda channel, no Docker registry), so each part is checked
on its own: environment.yml against pyproject.toml, the scripts for what repo2docker
needs of them, start by running it, and postBuild by running it as binder would, in a
fresh venv (uv from requirements/lock.txt in place of conda) with a fresh home folder,
then using what it built.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import xarray as xr
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from pangeo_hpc.demo import DemoSpec
from tests.support.envfiles import (
    CONDA_NAME,
    normalise,
    pyproject_requirements,
    read_conda_env,
    requires_python,
)
from tests.support.known import known_index
from tests.support.needs import missing
from tests.support.paths import ROOT

BINDER = ROOT / "binder"
SCRIPTS = ["postBuild", "start"]
#: the dashboard link binder's Dask config gives, as distributed fills it in
HUB_LINK = "{JUPYTERHUB_SERVICE_PREFIX}proxy/{port}/status"


def postbuild_commands() -> dict[str, dict[str, str]]:
    """``python -m pangeo_hpc.run VERB --opt value ...`` lines of postBuild:
    verb -> {option: value}, with bash's quotes removed (``$HOME`` stays as written)."""
    text = re.sub(r"\\\n\s*", " ", (BINDER / "postBuild").read_text())
    out = {}
    for line in text.splitlines():
        if line.startswith("python -m pangeo_hpc.run "):
            verb, *args = shlex.split(line, comments=True)[3:]
            assert len(args) % 2 == 0, f"postBuild: expected --option value pairs in {line!r}"
            out[verb] = dict(zip(args[::2], args[1::2], strict=True))
    return out


# -- environment.yml ------------------------------------------------------------------------


def test_environment_lists_the_runtime_dependencies():
    env = read_conda_env(BINDER / "environment.yml").all
    wanted = pyproject_requirements()  # runtime and optional features: binder runs no tests
    missing = [f"{n}{b}" for n, b in wanted.items() if n not in env]
    assert not missing, f"binder/environment.yml lacks {missing} (pyproject.toml has them)"
    for name, bound in wanted.items():
        assert env[name] == bound, (
            f"binder/environment.yml: {name}{env[name]} but pyproject.toml: {name}{bound}"
        )
    extra = sorted(set(env) - set(wanted) - {"python", "pip"})
    assert not extra, f"binder/environment.yml lists {extra}, which pyproject.toml does not"


def test_environment_pins_python_as_repo2docker_reads_it():
    bound = read_conda_env(BINDER / "environment.yml").conda["python"]
    # repo2docker picks its base environment from `python=X.Y` only (its PYTHON_REGEX);
    # a range leaves the default one, and the solver then has to change Python
    m = re.fullmatch(r"=(\d+\.\d+)", bound)
    assert m, f"binder/environment.yml: python{bound}: write python=X.Y, e.g. python=3.11"
    assert Version(m.group(1)) in SpecifierSet(requires_python()), (
        f"binder/environment.yml: python{bound} but pyproject.toml requires {requires_python()}"
    )


def test_environment_pip_section_holds_only_what_conda_forge_lacks():
    binder = read_conda_env(BINDER / "environment.yml")
    root = read_conda_env(ROOT / "environment.yml")  # names the packages conda-forge lacks
    assert binder.channels == ["conda-forge"]
    assert set(binder.pip) == set(root.pip) & set(pyproject_requirements())
    assert "pip" in binder.conda, "a pip: section needs pip among the conda packages"
    # postBuild installs the package; a local requirement (-e .) would make repo2docker
    # copy the repository before building the environment, rebuilding it on every commit
    assert binder.pip_other == [], f"binder/environment.yml pip: {binder.pip_other}"


# -- the scripts -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_is_strict_executable_bash(name):
    path = BINDER / name
    text = path.read_text()
    assert text.startswith(("#!/usr/bin/env bash\n", "#!/bin/bash")), f"binder/{name}: shebang"
    assert re.search(r"^set -euo pipefail$", text, re.M), f"binder/{name}: set -euo pipefail"
    assert os.access(path, os.X_OK), f"binder/{name} is not executable: chmod +x binder/{name}"
    subprocess.run(["bash", "-n", str(path)], check=True)
    # binder builds from git: the mode there counts (core.fileMode=false would lose it)
    staged = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-s", f"binder/{name}"],
        capture_output=True,
        text=True,
    ).stdout
    if staged:
        assert staged.startswith("100755"), (
            f"git holds binder/{name} as not executable: git update-index --chmod=+x binder/{name}"
        )


def test_postbuild_demo_data_suits_the_notebooks():
    cmds = postbuild_commands()
    demo, lab = cmds["demo-data"], cmds["lab-config"]
    assert demo["--out"] == "$HOME/data/era5-demo"
    assert lab["--data"] == demo["--out"], "lab-config --data must name demo-data's --out"
    assert lab["--link"] == HUB_LINK
    # the notebooks compute a trend in K/decade and a Nino3.4 index over every month
    (y0, m0), (y1, m1) = (map(int, demo[k].split("-")) for k in ("--start", "--end"))
    months = (y1 - y0) * 12 + m1 - m0 + 1
    assert months >= 5 * 12, f"postBuild's demo data has {months} months: the trend needs 5 years"
    assert float(demo["--resolution"]) >= 1.0, "a coarse grid keeps binder's build quick"


def run_start(home: Path, *cmd: str, **env: str) -> subprocess.CompletedProcess:
    """``binder/start CMD`` with nothing but PATH, HOME and ``env`` in its environment."""
    return subprocess.run(
        [str(BINDER / "start"), *cmd],
        env={"PATH": os.environ["PATH"], "HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def start_env(home: Path, **env: str) -> dict[str, str]:
    r = run_start(home, "env", **env)
    assert r.returncode == 0, r.stderr
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


def test_start_runs_its_command_with_the_environment(tmp_path):
    env = start_env(tmp_path, JUPYTERHUB_SERVICE_PREFIX="/user/ana/")
    assert env["HDF5_USE_FILE_LOCKING"] == "FALSE"
    assert env["HOME"] == str(tmp_path)
    assert env["JUPYTERHUB_SERVICE_PREFIX"] == "/user/ana/"
    assert "DASK_DISTRIBUTED__DASHBOARD__LINK" not in env  # postBuild's link applies
    assert "DASK_PANGEO_HPC__CLUSTER__WORKERS" not in env  # no CPU_LIMIT: the package decides


def test_start_execs_its_command(tmp_path):
    # exec: the command replaces start, so its parent is this process and its exit code
    # is start's (the notebook server is then PID 1's child, and gets its signals)
    r = run_start(tmp_path, "sh", "-c", "echo $PPID; exit 7")
    assert r.returncode == 7
    assert int(r.stdout) == os.getpid()


def test_start_links_dashboards_to_root_outside_jupyterhub(tmp_path):
    env = start_env(tmp_path)
    assert env["DASK_DISTRIBUTED__DASHBOARD__LINK"] == "/proxy/{port}/status"


@pytest.mark.parametrize(
    ("cpu_limit", "workers"),
    [("2.0", "2"), ("4", "4"), ("0.5", "1"), ("08", "8"), ("", None), ("unlimited", None)],
)
def test_start_sizes_local_clusters_by_cpu_limit(tmp_path, cpu_limit, workers):
    env = start_env(tmp_path, CPU_LIMIT=cpu_limit)
    assert env.get("DASK_PANGEO_HPC__CLUSTER__WORKERS") == workers


def test_start_keeps_a_chosen_worker_count(tmp_path):
    env = start_env(tmp_path, CPU_LIMIT="8", DASK_PANGEO_HPC__CLUSTER__WORKERS="3")
    assert env["DASK_PANGEO_HPC__CLUSTER__WORKERS"] == "3"


def test_start_worker_count_reaches_the_package_config(tmp_path):
    code = "from pangeo_hpc import config; print(config.get('cluster.workers'))"
    r = run_start(tmp_path, sys.executable, "-c", code, CPU_LIMIT="2.0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2"


def test_start_hints_when_the_demo_data_is_missing(tmp_path):
    r = run_start(tmp_path, "true")
    assert r.returncode == 0
    hint = r.stderr.strip()
    assert hint.count("\n") == 0 and f"no demo data in {tmp_path}/data/era5-demo" in hint
    # the command it gives is postBuild's
    command = shlex.split(hint[hint.index("python -m pangeo_hpc.run") :])
    demo = postbuild_commands()["demo-data"]
    options = [word for pair in demo.items() for word in pair]
    assert command == ["python", "-m", "pangeo_hpc.run", "demo-data", *options]

    (tmp_path / "data" / "era5-demo").mkdir(parents=True)
    assert run_start(tmp_path, "true").stderr == ""


# -- postBuild, run as binder runs it (a fresh venv, filled as conda fills it) -----------------


@dataclass
class Build:
    """What postBuild built: a venv, a home folder, and the repository copy it ran in."""

    repo: Path
    venv: Path
    home: Path
    seconds: float
    output: str

    @property
    def data(self) -> Path:
        return self.home / "data" / "era5-demo"

    def env(self, **extra: str) -> dict[str, str]:
        """This machine's environment with the venv first on PATH and the new home: no
        Dask, Python or Jupyter settings of the test run leak in (pip's settings do)."""
        keep = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DASK_", "PYTHON", "VIRTUAL_ENV", "CONDA", "JUPYTER", "XDG_"))
        }
        path = f"{self.venv / 'bin'}{os.pathsep}{os.environ['PATH']}"
        return {**keep, "PATH": path, "HOME": str(self.home), **extra}

    def run(self, *cmd: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        """``binder/start CMD`` in the home folder, as a binder session starts its kernels."""
        r = subprocess.run(
            [str(self.repo / "binder" / "start"), *cmd],
            cwd=self.home,  # not the repository: the package must come from the venv
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert r.returncode == 0, f"{shlex.join(cmd)}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r

    def python(self, code: str, **env: str) -> Any:
        """Run ``code`` with the venv's Python (through start); it prints one JSON value."""
        return json.loads(self.run(str(self.venv / "bin" / "python"), "-c", code, **env).stdout)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """``python -m pangeo_hpc.run ARGS`` with the venv's Python (through start)."""
        return self.run(str(self.venv / "bin" / "python"), "-m", "pangeo_hpc.run", *args)


def copy_work_tree(dest: Path) -> None:
    """The repository's files as a clone has them, plus files not committed yet (so that
    a developer tests what they have), without ignored ones (.venv, data, results)."""
    r = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"{ROOT} is not a git work tree: {r.stderr.strip()}")
    for name in filter(None, r.stdout.split("\0")):
        src = ROOT / name
        if src.is_file():  # tracked files deleted in the work tree are left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def binder_environment_requirements() -> list[str]:
    """binder/environment.yml's packages (but Python and pip) as PyPI requirements: what
    repo2docker's conda step puts into the environment before postBuild runs."""
    pypi_name = {conda: pypi for pypi, conda in CONDA_NAME.items()}
    env = read_conda_env(BINDER / "environment.yml").all
    return [f"{pypi_name.get(n, n)}{b}" for n, b in env.items() if n not in ("python", "pip")]


def fill_like_conda(venv: Path) -> None:
    """Install binder/environment.yml's packages into ``venv`` as repo2docker's conda step
    does before postBuild: here by uv at requirements/lock.txt's versions, from uv's cache
    (binder reuses its cached environment layer the same way). Not the package itself."""
    r = subprocess.run(
        ["bash", str(ROOT / "ci" / "uv.sh"), sys.prefix, "pip", "install", "--quiet",
         "--python", str(venv / "bin" / "python"), "-c", str(ROOT / "requirements" / "lock.txt"),
         *binder_environment_requirements()],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert r.returncode == 0, f"binder/environment.yml's packages:\n{r.stderr[-3000:]}"


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """postBuild run once, from the root of a copy of the repository, with a fresh venv's
    bin first on PATH and a fresh home folder, after the venv got binder/environment.yml's
    packages as conda would give them (:func:`fill_like_conda`): pip then builds and
    installs only pangeo-hpc, as on binder (a build backend from PyPI). Measured back to
    back on this machine under load: 264 s, against 650 s when pip fetched every
    dependency from PyPI."""
    try:  # the build backend, from the package index postBuild's pip will use
        probe = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", "hatchling", "--retries", "1"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        problem = probe.returncode and (probe.stderr.strip().splitlines() or ["?"])[-1]
    except subprocess.TimeoutExpired:
        problem = "no answer in 120 s"
    if problem:
        missing("the package index (PyPI)", f"postBuild's pip install needs it: {problem}")
    base = tmp_path_factory.mktemp("binder")
    repo, venv, home = base / "repo", base / "venv", base / "home"
    copy_work_tree(repo)
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    fill_like_conda(venv)
    build = Build(repo, venv, home, 0.0, "")
    t0 = time.perf_counter()
    r = subprocess.run(
        [str(repo / "binder" / "postBuild")],
        cwd=repo,
        env=build.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    build.seconds = time.perf_counter() - t0
    build.output = r.stdout
    assert r.returncode == 0, f"binder/postBuild failed ({r.returncode}):\n{r.stdout[-5000:]}"
    print(f"\nbinder/postBuild in a fresh venv: {build.seconds:.0f} s")
    return build


@pytest.mark.slow
def test_postbuild_installs_the_package_into_the_environment(build):
    got = build.python(
        "import json, pangeo_hpc, sys; print(json.dumps([pangeo_hpc.__file__, sys.prefix]))"
    )
    module, prefix = got
    assert Path(prefix) == build.venv
    assert Path(module).is_relative_to(build.venv), f"pangeo_hpc imported from {module}"


@pytest.mark.slow
def test_binder_environment_leaves_postbuild_only_the_package_to_install(build):
    # everything '.[all]' needs came with binder/environment.yml (conda's step): a package
    # missing there would be fetched by postBuild's pip, on every binder build
    installed = [
        line.removeprefix("Successfully installed ").split()
        for line in build.output.splitlines()
        if line.startswith("Successfully installed ")
    ]
    assert len(installed) == 1, build.output[-3000:]
    names = [normalise(word.rsplit("-", 1)[0]) for word in installed[0]]
    assert names == ["pangeo-hpc"], f"postBuild's pip installed {installed[0]}"


@pytest.mark.slow
def test_postbuild_writes_demo_data_the_package_reads(build):
    demo = postbuild_commands()["demo-data"]
    assert (build.data / "demo-manifest.json").is_file()
    # the tree as `hydration` walks it: every file there and readable
    report = json.loads(build.cli("hydration", str(build.data), "--json").stdout)
    files = sorted(build.data.glob("*/*/data/sea_surface_temperature.nc"))
    assert report["counts"]["loaded"] == report["files"] >= len(files) > 0
    # ... and as the notebooks open it: config data.root (lab-config), every month
    got = build.python(
        "import json; from pangeo_hpc import config, open_era5\n"
        "ds = open_era5('sea_surface_temperature', source=config.get('data.root'))\n"
        "t = ds.time0.values\n"
        "print(json.dumps([config.get('data.root'), len(ds.encoding['source_files']),"
        " str(t[0])[:7], str(t[-1])[:7], ds.sizes['lat'], ds.sizes['lon']]))"
    )
    root, n, first, last, nlat, nlon = got
    assert Path(root) == build.data
    assert n == len(files)
    assert (first, last) == (demo["--start"], demo["--end"])
    res = float(demo["--resolution"])
    assert (nlat, nlon) == (round(180 / res) + 1, round(360 / res))


@pytest.mark.slow
def test_postbuild_dask_config_links_dashboards_through_the_hub(build):
    config = build.home / ".config" / "dask" / "pangeo-hpc-lab.yaml"
    assert config.is_file(), f"lab-config wrote no {config}:\n{build.output[-2000:]}"
    code = (
        "import importlib, json, urllib.request\n"
        "import dask\n"
        "from distributed.utils import format_dashboard_link\n"
        "from pangeo_hpc import get_cluster\n"
        "factory = dask.config.get('labextension.factory')\n"
        "cls = getattr(importlib.import_module(factory['module']), factory['class'])\n"
        "with get_cluster('local', workers=1) as cluster:\n"
        "    port = cluster.scheduler_info['services']['dashboard']\n"
        "    status = urllib.request.urlopen(f'http://127.0.0.1:{port}/status').status\n"
        "    print(json.dumps({'link': format_dashboard_link('127.0.0.1', 8787),\n"
        "        'cluster': cluster.dashboard_link, 'port': port, 'status': status,\n"
        "        'factory': cls.__name__}))\n"
    )
    got = build.python(code, JUPYTERHUB_SERVICE_PREFIX="/user/ana/")
    assert got["link"] == "/user/ana/proxy/8787/status"
    # a real cluster's link names the port its dashboard answers on
    assert got["cluster"] == f"/user/ana/proxy/{got['port']}/status"
    assert got["status"] == 200
    assert got["factory"] == "LocalCluster"  # dask-labextension's "+ NEW" can start it
    # outside JupyterHub (the image under docker), start links to JupyterLab's root
    root = build.python(
        "import json; from distributed.utils import format_dashboard_link\n"
        "print(json.dumps(format_dashboard_link('127.0.0.1', 8787)))"
    )
    assert root == "/proxy/8787/status"


@pytest.mark.slow
def test_postbuild_demo_data_gives_the_notebooks_answers(build, tmp_path):
    # the trend and Nino3.4 of notebook 4, as the batch recipe computes them
    demo = postbuild_commands()["demo-data"]
    build.cli(
        "era5-sst-trend", "--data", str(build.data), "--start", demo["--start"],
        "--end", demo["--end"], "--workers", "2", "--no-progress", "--out", str(tmp_path / "trend"),
    )  # fmt: skip
    answer = json.loads((tmp_path / "trend" / "summary.json").read_text())["answer"]
    assert answer["global_mean_trend"]["value"] == pytest.approx(0.2, rel=0.05)
    # the known Nino3.4 index of the data postBuild makes (standard box, tests/support/known.py):
    # noise moves the std by about 5e-4 of it (seen: 0.7051 K, known 0.7055 K), the summary
    # rounds to 1e-4 K; 1 % holds both, and Nino3 or a box moved by 10 degrees is 4 to 12 %
    # off in std (and far off in phase)
    spec = DemoSpec(
        resolution=float(demo["--resolution"]), start=demo["--start"], end=demo["--end"]
    )
    days = pd.date_range(f"{demo['--start']}-01", f"{demo['--end']}-31", freq="D").values
    nino34 = xr.open_dataset(tmp_path / "trend" / "result.nc").nino34
    assert float(nino34.std()) == pytest.approx(known_index(spec, days).std(), rel=0.01)
