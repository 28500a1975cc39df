"""How ``make test PYTEST_WORKERS=2`` shares the suite between pytest-xdist workers (``-n 2
--dist loadscope``, the scheduler of ``tests/conftest.py``).

A module's tests run in one worker, in their order: a module fixture is made once, and
test_resume submits its Slurm job when the module starts, so that its minute of time limit
passes while the module's other tests run. The modules that use a service there is one of
on the machine (:data:`MACHINE_WIDE`) run in one worker per service, one after another,
and first, so that the longest of them does not end the run alone. xdist's own
``loadgroup`` cannot do this with pytest 9, whose node ids are no longer rewritable.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

#: the modules whose tests use a service there is one of on the machine (one Slurm, one Grid
#: Engine, the big bucket's server kept in ~/.cache, a browser with JupyterLab), by service;
#: tests/test_suite_groups.py checks every test using one (:data:`SERVICES`) is listed
MACHINE_WIDE = {
    "tests/batch/test_resume.py": "slurm",
    "tests/clusters/test_slurm.py": "slurm",
    "tests/planning/test_multi_slurm.py": "slurm",
    "tests/clusters/test_sge.py": "sge",
    "tests/storage/test_inventory.py": "big_bucket",
    "tests/test_browser.py": "browser",
    "tests/test_browser_offline.py": "browser",
    "tests/write/test_report.py": "browser",
}
#: what makes a test use a service: its fixture or its marker of that name
SERVICES = ("slurm", "sge", "big_bucket", "browser")


def scope_of(nodeid: str) -> str:
    """The unit of work of the test ``nodeid``: its service, else its module."""
    module = nodeid.split("::", 1)[0]
    return MACHINE_WIDE.get(module, module)


def services_of(item: pytest.Item) -> set[str]:
    """The machine-wide services the test ``item`` uses (:data:`SERVICES`)."""
    names = getattr(item, "fixturenames", ())
    return {s for s in SERVICES if s in names or item.get_closest_marker(s) is not None}


class ModuleScheduling(LoadScopeScheduling):
    """xdist's ``loadscope`` with :func:`scope_of`'s units, the machine-wide ones first."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        service = next((s for s in self.workqueue if s in SERVICES), None)
        if service is not None:  # the units in the queue are popped from its front
            self.workqueue.move_to_end(service, last=False)
        super()._assign_work_unit(node)
