"""tests/conftest.py's scheduling: the slow tier's (-n 2 --dist loadgroup) modules kept on one xdist worker exist and
are one work unit each, every other test a unit of its own; the modules begun first exist and come first."""

from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parent.parent


def test_the_modules_named_exist():
    assert [m for m in (*conftest.ONE_WORKER, *conftest.FIRST) if not (ROOT / m).is_file()] == []


def test_the_modules_begun_first_come_first_and_the_rest_keeps_its_order():
    class Item:
        def __init__(self, nodeid):
            self.nodeid = nodeid

    ids = ["tests/a.py::t1", f"{conftest.FIRST[1]}::t[x]", "tests/b.py::t2", f"{conftest.FIRST[0]}::t",
           "tests/a.py::t3", f"{conftest.FIRST[1]}::u"]
    items = [Item(i) for i in ids]
    conftest.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == [ids[1], ids[3], ids[5], ids[0], ids[2], ids[4]]


def test_a_kept_module_is_one_unit_and_any_other_test_its_own(pytestconfig):
    kept = conftest.ONE_WORKER[0]
    assert {conftest.one_worker_module(f"{kept}::test_{x}[{p}]") for x in "ab" for p in "12"} == {kept}
    assert conftest.one_worker_module("tests/test_launchers.py::test_a[1]") is None
    assert conftest.pytest_xdist_make_scheduler(pytestconfig, None) is None  # not --dist loadgroup: xdist's own
