"""environment.yml (conda-forge) lists what pyproject.toml lists, with the same lower bounds."""

from __future__ import annotations

import pytest

from tests.support.envfiles import pyproject_requirements, read_conda_env, requires_python
from tests.support.paths import ROOT


@pytest.mark.parametrize("path", ["environment.yml"])
def test_environment_matches_pyproject(path):
    conda = read_conda_env(ROOT / path).all
    wanted = pyproject_requirements("test", "docs")
    for name, bound in wanted.items():
        assert name in conda, f"{path} lacks {name} (pyproject.toml has {name}{bound})"
        assert conda[name] == bound, f"{path}: {name}{conda[name]} but pyproject.toml: {bound}"
    extra = set(conda) - set(wanted) - {"python", "pip", "cdo"}
    assert not extra, f"{path} lists {sorted(extra)}, which pyproject.toml does not"
    assert conda["python"] == requires_python()
