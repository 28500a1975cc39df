"""Check a NetCDF file with the CF checker (PyPI ``cfchecker``), offline.

``cfchecks`` wants three XML tables it normally downloads: the CF standard-name table, an
area-type table and a region table. The standard-name table ships in the
``compliance-checker`` wheel (``compliance_checker/data/cf-standard-name-table.xml``); the
other two are only consulted for ``area_type`` and ``region`` values, which our outputs do
not use, so stubs do (shared/notes/cf-checks.md). cfchecker parses units with the UDUNITS-2
C library (through cfunits): Debian ``libudunits2-0``, installed by ci/install-system.sh.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

AREA_TYPES = (
    '<?xml version="1.0"?>\n<area_type_table><version_number>stub</version_number>'
    '<date>n/a</date><entry id="sea"/><entry id="land"/></area_type_table>\n'
)
REGIONS = (
    '<?xml version="1.0"?>\n<standardized_region_list><version_number>stub</version_number>'
    '<date>n/a</date><entry id="global"/></standardized_region_list>\n'
)


@dataclass(frozen=True)
class CFReport:
    """What ``cfchecks`` said about one file."""

    errors: list[str]
    warnings: list[str]
    output: str


def unavailable() -> str | None:
    """Why ``cfchecks`` cannot run here, or ``None`` when it can."""
    if _cfchecks() is None:
        return "cfchecks is not installed (pip install cfchecker: the test extras)"
    try:
        import cfunits  # noqa: F401  (loads libudunits2 at import)
    except Exception as exc:  # cfunits raises OSError or FileNotFoundError without the library
        return (
            f"cfunits cannot load the UDUNITS-2 library ({type(exc).__name__}: {exc}); "
            "Debian: apt-get install libudunits2-0 (ci/install-system.sh)"
        )
    try:
        standard_name_table()
    except FileNotFoundError as exc:
        return f"{exc}"
    return None


def standard_name_table() -> Path:
    """The CF standard-name table of the installed compliance-checker wheel."""
    try:
        path = Path(str(files("compliance_checker") / "data" / "cf-standard-name-table.xml"))
    except ModuleNotFoundError:
        path = Path("compliance_checker-not-installed")
    if not path.is_file():
        raise FileNotFoundError(
            f"no CF standard-name table at {path}: pip install compliance-checker "
            "(the test extras), whose wheel ships one"
        )
    return path


def _cfchecks() -> str | None:
    here = Path(sys.executable).parent / "cfchecks"
    return str(here) if here.is_file() else shutil.which("cfchecks")


def cfchecks(path: Path, tables: Path) -> CFReport:
    """Run ``cfchecks`` on ``path`` with the stub tables written into the folder ``tables``."""
    tables.mkdir(parents=True, exist_ok=True)
    area, region = tables / "area-type-table.xml", tables / "standardized-region-list.xml"
    area.write_text(AREA_TYPES)
    region.write_text(REGIONS)
    exe = _cfchecks()
    assert exe is not None, unavailable()
    cmd = [exe, "-s", str(standard_name_table()), "-a", str(area), "-r", str(region), str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    lines = [line.strip() for line in out.splitlines()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    warnings = [line for line in lines if line.startswith("WARN:")]
    # cfchecks ends with "ERRORS detected: N"; a crash before it must not read as 0 errors
    assert "ERRORS detected:" in out, f"cfchecks did not finish ({r.returncode}):\n{out[-3000:]}"
    return CFReport(errors=errors, warnings=warnings, output=out)
