"""Shared test fixtures: offline settings and a tiny model + tokenizer built in code."""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRITON_INTERPRET", "1")  # no CUDA here: TRL 1.15's Triton kernel runs interpreted
# measured machine profiles (pods gpu-check --random-weights) go to a folder of this session, never the user's
# ~/.config/pods/profiles, and the user's profiles never change what a test sees
os.environ["PODS_PROFILE_DIR"] = os.path.join(tempfile.mkdtemp(prefix="pods-profiles-"), "profiles")

from pods.cli import quiet_openmp, set_cpu_threads

quiet_openmp()  # before torch loads, as the entry points do; train.py subprocesses inherit it

import pytest  # noqa: E402


def pytest_configure(config):
    """Torch's CPU threads as train.py sets them (PODS_THREADS, else pods.cli.cpu_threads), where tests run: not in
    pytest-xdist's controller, which runs none and so never loads torch (4 s before its workers start)."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", default=None):
        set_cpu_threads()


# Test modules whose tests share an expensive module fixture: the slow tier (-n 2 --dist loadgroup) runs each of them
# whole on one worker, so the fixture is built once (SmolLM2 loaded and sampled; the 2-process TRL launch, which a
# second worker would otherwise wait for). Every other test is a work unit of its own.
ONE_WORKER = ("tests/pods/backends/test_real_model.py", "tests/pods/integrations/test_trl_multiprocess.py")


def one_worker_module(nodeid: str) -> str | None:
    """The module of test `nodeid` when ONE_WORKER keeps it on one worker, else None."""
    module = nodeid.split("::", 1)[0]
    return module if module in ONE_WORKER else None


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: the vLLM tier's venv has no pytest-xdist
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup with the modules of ONE_WORKER as groups. pytest-xdist 3.8 names a test's xdist_group by
    suffixing its node id, which pytest 9.2 no longer reads (pytest-xdist#1386): marks alone group nothing."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling  # only pytest-xdist calls this hook

    class ModuleGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return one_worker_module(nodeid) or super()._split_scope(nodeid)

    return ModuleGroups(config, log)


# Modules begun first: `--dist loadfile` (the default tier) hands whole files to the workers in collection order, so a
# long file collected last (tests/test_bad_inputs.py: its command-line runner starts torch and Hydra, ~20 s) would
# run while the other worker, its queue empty, waits.
FIRST = ("tests/test_bad_inputs.py", "tests/test_evaluate_run.py")


def pytest_collection_modifyitems(items):
    """FIRST's modules ahead of the others; a stable sort, so every other order stays as collected."""
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in FIRST)


@pytest.fixture(scope="session")
def tokenizer():
    from pods.backends.tiny import byte_tokenizer

    return byte_tokenizer()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Qwen2 model and its tokenizer saved to disk."""
    from pods.backends.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("tiny-qwen2"))
