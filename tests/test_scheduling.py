"""tests/conftest.py's scheduling of the slow tier (-n 2 --dist loadgroup): the modules it keeps on one xdist worker
exist and are one work unit each; every other test is a unit of its own."""

from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parent.parent


def test_the_modules_kept_on_one_worker_exist():
    assert [m for m in conftest.ONE_WORKER if not (ROOT / m).is_file()] == []


def test_a_kept_module_is_one_unit_and_any_other_test_its_own(pytestconfig):
    kept = conftest.ONE_WORKER[0]
    assert {conftest.one_worker_module(f"{kept}::test_{x}[{p}]") for x in "ab" for p in "12"} == {kept}
    assert conftest.one_worker_module("tests/test_launchers.py::test_a[1]") is None
    assert conftest.pytest_xdist_make_scheduler(pytestconfig, None) is None  # not --dist loadgroup: xdist's own
