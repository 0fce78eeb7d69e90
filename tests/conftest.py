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
set_cpu_threads()  # PODS_THREADS, else as pods.cli.cpu_threads chooses (as train.py)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tokenizer():
    from pods.backends.tiny import byte_tokenizer

    return byte_tokenizer()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Qwen2 model and its tokenizer saved to disk."""
    from pods.backends.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("tiny-qwen2"))
