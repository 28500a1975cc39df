"""environment.yml (conda-forge) lists what pyproject.toml lists, with the same lower bounds."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: PyPI name -> conda-forge name, where they differ
CONDA_NAME = {"netCDF4": "netcdf4", "matplotlib": "matplotlib-base"}
_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(.*)$")


def _parse(req: str) -> tuple[str, str]:
    m = _REQ.match(req)
    assert m, req
    return m.group(1).lower(), m.group(2).replace(" ", "")


def _pyproject() -> dict[str, str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = meta["dependencies"] + meta["optional-dependencies"]["test"]
    out = {}
    for r in reqs:
        name, bound = _parse(r)
        out[CONDA_NAME.get(r.split(">")[0].split("[")[0].strip(), name).lower()] = bound
    return out


def _conda(path: Path) -> dict[str, str]:
    deps = yaml.safe_load(path.read_text())["dependencies"]
    out = {}
    for d in deps:
        if isinstance(d, dict):  # the pip: section
            for r in d["pip"]:
                if not r.startswith("-"):
                    name, bound = _parse(r)
                    out[name] = bound
        else:
            name, bound = _parse(d)
            out[name] = bound
    return out


@pytest.mark.parametrize("path", ["environment.yml"])
def test_environment_matches_pyproject(path):
    conda = _conda(ROOT / path)
    for name, bound in _pyproject().items():
        assert name in conda, f"{path} lacks {name} (pyproject.toml has {name}{bound})"
        assert conda[name] == bound, f"{path}: {name}{conda[name]} but pyproject.toml: {bound}"
    extra = set(conda) - set(_pyproject()) - {"python", "pip", "cdo"}
    assert not extra, f"{path} lists {sorted(extra)}, which pyproject.toml does not"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert conda["python"] == requires
