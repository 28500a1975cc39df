"""``make test``'s workers (tests/support/suite_groups.py): every test that uses a service
there is one of on the machine runs in that service's unit of work, with the other modules
of that service, never beside them in another worker."""

from __future__ import annotations

import pytest

from tests.support.suite_groups import MACHINE_WIDE, SERVICES, scope_of, services_of


def test_every_module_using_a_machine_wide_service_is_in_its_unit(request: pytest.FixtureRequest):
    used: dict[str, set[str]] = {}
    for item in request.session.items:
        for service in services_of(item):
            used.setdefault(item.nodeid.split("::", 1)[0], set()).add(service)
    for module, services in used.items():
        assert len(services) == 1, f"{module} uses {sorted(services)}: one worker cannot hold both"
        assert MACHINE_WIDE.get(module) == services.pop(), (
            f"{module} uses a machine-wide service: add it to MACHINE_WIDE "
            "(tests/support/suite_groups.py)"
        )


def test_units_are_a_service_or_a_module():
    assert scope_of("tests/clusters/test_slurm.py::test_x[1]") == "slurm"
    assert scope_of("tests/batch/test_resume.py::test_y") == "slurm"
    assert scope_of("tests/io/test_era5.py::TestA::test_z") == "tests/io/test_era5.py"
    assert set(MACHINE_WIDE.values()) <= set(SERVICES)
