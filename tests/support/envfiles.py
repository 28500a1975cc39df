"""The dependency lists of pyproject.toml and of conda environment files, to compare them.

Used by tests/test_environment.py (environment.yml) and tests/test_binder.py
(binder/environment.yml). Names are compared in conda-forge's spelling: PyPI names
lower-cased with ``_`` and ``.`` as ``-``, and :data:`CONDA_NAME` where conda-forge differs.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.support.paths import ROOT

#: PyPI name (normalised) -> conda-forge name, where they differ
#: (dask-gateway-server[local]: conda-forge splits the local backend's SQLAlchemy out)
CONDA_NAME = {
    "matplotlib": "matplotlib-base",
    "xxhash": "python-xxhash",
    "dask-gateway-server": "dask-gateway-server-local",
}
_SELF = re.compile(r"^\s*pangeo[-_.]hpc\s*\[([^\]]*)\]\s*$", re.IGNORECASE)
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_.\-]*)(?:\[[^\]]*\])?\s*(.*)$")


def normalise(name: str) -> str:
    """``netCDF4`` -> ``netcdf4``, ``global_land_mask`` -> ``global-land-mask``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requirement(req: str) -> tuple[str, str]:
    """``"numpy >= 1.26"`` -> ``("numpy", ">=1.26")``; conda's ``"python=3.11"`` ->
    ``("python", "=3.11")``."""
    m = _REQ.match(req)
    assert m, f"not a requirement: {req!r}"
    return normalise(m.group(1)), m.group(2).replace(" ", "")


def pyproject_requirements(*extras: str) -> dict[str, str]:
    """conda-forge name -> lower bound of pyproject.toml's runtime dependencies with every
    optional feature (the extras that ``all`` names: the environment files install them all),
    plus those of the optional-dependency groups ``extras`` (e.g. ``"test"``)."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = meta["optional-dependencies"]
    reqs, todo, seen = list(meta["dependencies"]), ["all", *extras], set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        for req in groups[extra]:
            own = _SELF.match(req)  # "pangeo-hpc[s3,lab,demo]": the package's other extras
            if own:
                todo += [e.strip() for e in own.group(1).split(",")]
            else:
                reqs.append(req)
    out = {}
    for req in reqs:
        name, bound = parse_requirement(req)
        out[CONDA_NAME.get(name, name)] = bound
    return out


def requires_python() -> str:
    """pyproject.toml's ``requires-python``, e.g. ``">=3.11"``."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]


@dataclass(frozen=True)
class CondaEnv:
    """A conda environment file, read."""

    channels: list[str]
    #: name -> version spec of the conda packages
    conda: dict[str, str]
    #: name -> version spec of the ``pip:`` section's requirements
    pip: dict[str, str]
    #: the other lines of the ``pip:`` section: options and local paths (``-e .``)
    pip_other: list[str]

    @property
    def all(self) -> dict[str, str]:
        """conda and pip packages together."""
        return {**self.conda, **self.pip}


def read_conda_env(path: Path) -> CondaEnv:
    """Read a conda ``environment.yml``."""
    doc = yaml.safe_load(path.read_text())
    conda: dict[str, str] = {}
    pip: dict[str, str] = {}
    pip_other: list[str] = []
    for dep in doc["dependencies"]:
        if isinstance(dep, dict):  # the pip: section
            for line in dep["pip"]:
                if _REQ.match(line):
                    name, bound = parse_requirement(line)
                    pip[name] = bound
                else:
                    pip_other.append(line)
        else:
            name, bound = parse_requirement(dep)
            conda[name] = bound
    return CondaEnv(list(doc.get("channels", [])), conda, pip, pip_other)
