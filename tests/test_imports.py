"""Importing pangeo_hpc changes nothing in the importing process: the matplotlib backend a
notebook or ``MPLBACKEND`` chose stays, and no logging filter or handler is installed.

Each check runs in a fresh interpreter. The libraries pangeo_hpc imports are imported
first (some, such as distributed, configure their own loggers at import: not ours to
judge), then the state is taken, then pangeo_hpc and every module in it is imported, and
the state is taken again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import ROOT

#: prints the modules (not pangeo_hpc's) that importing all of pangeo_hpc brings in
WHAT_IT_IMPORTS = """
import importlib, json, pkgutil, sys
before = set(sys.modules)
import pangeo_hpc
for m in pkgutil.walk_packages(pangeo_hpc.__path__, "pangeo_hpc."):
    importlib.import_module(m.name)
new = sorted(n for n in set(sys.modules) - before if n.split(".")[0] != "pangeo_hpc")
print(json.dumps(new))
"""

#: imports those modules, then all of pangeo_hpc, and prints the state before and after
BEFORE_AND_AFTER = """
import contextlib, importlib, json, logging, pkgutil, sys

for name in json.loads(sys.argv[1]):
    with contextlib.suppress(Exception):  # a few are not importable by name (aliases)
        importlib.import_module(name)


def state():
    import matplotlib

    loggers = {"(root)": logging.getLogger()}
    loggers.update(
        (name, logger)
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    )
    installed = {
        name: sorted(repr(x) for x in [*logger.handlers, *logger.filters])
        for name, logger in loggers.items()
        if logger.handlers or logger.filters
    }
    return {"backend": matplotlib.get_backend(), "logging": installed}


before = state()
import pangeo_hpc

modules = [m.name for m in pkgutil.walk_packages(pangeo_hpc.__path__, "pangeo_hpc.")]
for name in modules:
    importlib.import_module(name)
print(json.dumps({"before": before, "after": state(), "modules": modules}))
"""


def _python(code: str, *args: str, **env: str) -> str:
    r = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_importing_everything_changes_no_backend_and_no_logging():
    imported = json.loads(_python(WHAT_IT_IMPORTS, MPLBACKEND="svg"))
    assert "matplotlib.pyplot" not in imported  # figures are drawn without pyplot
    out = json.loads(_python(BEFORE_AND_AFTER, json.dumps(imported), MPLBACKEND="svg"))
    assert {"pangeo_hpc.write.figures", "pangeo_hpc.cli.progress"} <= set(out["modules"])
    assert out["before"]["backend"] == "svg"  # what the user chose
    assert out["after"]["backend"] == "svg"
    assert out["after"]["logging"] == out["before"]["logging"]
