"""requirements/lock.txt (``make lock``; what ``make`` installs) satisfies pyproject.toml.

A lower bound raised in pyproject.toml above the locked version, a new dependency not in the
lock, or a lock edited by hand fail here before they fail an install on a fresh machine.
"""

from __future__ import annotations

import re

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.support.envfiles import normalise
from tests.support.paths import ROOT

LOCK = ROOT / "requirements" / "lock.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)==([^\s;]+)\s*(?:;\s*(.+))?$")


def _environment(python: str) -> dict[str, str]:
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }


def locked(python: str) -> dict[str, str]:
    """Name -> pinned version of the lock's lines that apply on Linux with ``python``."""
    env, out = _environment(python), {}
    for line in LOCK.read_text().splitlines():
        m = _PIN.match(line)
        if m and (m.group(3) is None or Marker(m.group(3)).evaluate(env)):
            name = normalise(m.group(1))
            assert name not in out, f"{name} pinned twice for Python {python}"
            out[name] = m.group(2)
    return out


def wanted() -> list[Requirement]:
    """pyproject.toml's requirements: the runtime ones and every extra's."""
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in meta["dependencies"]]
    for group in meta["optional-dependencies"].values():
        reqs += [Requirement(r) for r in group if normalise(Requirement(r).name) != "pangeo-hpc"]
    return reqs


def problems(pins: dict[str, str], reqs: list[Requirement], python: str) -> list[str]:
    """What of ``reqs`` the pins ``pins`` do not satisfy with ``python``, one line each."""
    env, out = _environment(python), []
    for req in reqs:
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = normalise(req.name)
        if name not in pins:
            out.append(f"{name} ({req}) is not in {LOCK.name}")
        elif pins[name] not in SpecifierSet(str(req.specifier), prereleases=True):
            out.append(f"{LOCK.name} pins {name}=={pins[name]}, outside pyproject's {req}")
    return out


@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
def test_the_lock_satisfies_pyproject(python):
    pins = locked(python)
    assert len(pins) > 100, f"{LOCK} looks empty for Python {python}"
    assert problems(pins, wanted(), python) == [], "run `make lock`"


def test_the_check_finds_a_raised_bound_and_a_new_dependency():
    """The check above is not vacuous: a lower bound raised past the pinned version and a
    dependency the lock lacks are each named."""
    pins = locked("3.11")
    reqs = [*wanted(), Requirement(f"numpy>{pins['numpy']}"), Requirement("not-locked>=1")]
    found = problems(pins, reqs, "3.11")
    assert len(found) == 2 and "numpy" in found[0] and "not-locked" in found[1], found
