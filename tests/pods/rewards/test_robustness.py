"""Untrusted completions: every verifier returns a score quickly, never hangs or raises.

The bound per completion is generous (CI noise must not flake it); the real timings are in
benchmarks/bench_rewards.py. Run: uv run pytest tests/pods/rewards/test_robustness.py
"""

import threading
import time

import pytest

from pods import rewards
from pods.rewards import math_answer
from pods.rewards.timeout import call_with_limit

# Seconds one adversarial completion may take at most (real numbers: milliseconds, see the benchmark).
BOUND_S = 5.0



@pytest.fixture(scope="module", autouse=True)
def warm_math_verify():
    # importing sympy and warming math-verify is a one-off cost (seconds), not per completion
    math_answer._math_verify_module()


ADVERSARIAL = [
    # a megabyte of text without any answer
    pytest.param("x" * 1_000_000, id="1MB-text"),
    # a megabyte of digits (int() of it would be slow / refused)
    pytest.param("9" * 1_000_000, id="1MB-digits"),
    # 10 000 nested braces inside a box
    pytest.param(r"\boxed{" + "{" * 10_000 + "1" + "}" * 10_000 + "}", id="10k-nested-braces"),
    # 10 000 nested braces inside an answer block, no box
    pytest.param("<answer>" + "{" * 10_000 + "</answer>", id="10k-braces-in-block"),
    # 100 000 unclosed boxes
    pytest.param(r"\boxed{" * 100_000, id="100k-unclosed-boxes"),
    # a huge power tower: one bigint power would never finish
    pytest.param(r"<answer>\boxed{9^{9^{9^{9}}}}</answer>", id="power-tower"),
    # a huge factorial
    pytest.param(r"<answer>\boxed{100000!}</answer>", id="factorial"),
    # symbolic expansion bomb
    pytest.param(r"<answer>\boxed{(x+1)^{100000} - (x-1)^{100000}}</answer>", id="expand-bomb"),
    # malformed LaTeX
    pytest.param(r"<answer>\boxed{\frac{\sqrt{}{}^{_}\left(}</answer>", id="malformed-latex"),
    # unicode, right-to-left marks, emoji, NUL
    pytest.param("<answer>\u202e٣٤ 🧪 \x00 \ufffd</answer>", id="unicode"),
    # tags repeated 50 000 times
    pytest.param("<think><answer>" * 50_000, id="many-tags"),
    # a very long number inside the block
    pytest.param("<answer>" + "1" * 5000 + "." + "2" * 5000 + "</answer>", id="long-number"),
    # a megabyte of newlines (a regex with whitespace on both sides of a newline went cubic here)
    pytest.param("\n" * 1_000_000, id="1MB-newlines"),
    # degenerate loops a megabyte long: one tag per line, one line, a group of lines
    pytest.param("The answer is 2.\n" + "</think>\n" * 120_000, id="1MB-tag-lines"),
    pytest.param("The answer is 2.\n" + "</think>" * 120_000, id="1MB-tag-run"),
    pytest.param("x\n" + "a 1\nb 2\nc 3\nd 4\ne 5\nf 6\ng 7\nh 8\n" * 30_000, id="1MB-group-loop"),
    # inline-maths openers, separators and operators by the hundred thousand
    pytest.param("\\(" * 500_000, id="inline-openers"),
    pytest.param("<answer>1" + "," * 100_000 + "2</answer>", id="commas"),
    pytest.param("<answer>x =" + " " * 100_000 + "- " * 50_000 + "</answer>", id="dangling-operators"),
]


@pytest.mark.parametrize("name", ["gsm8k", "math", "chemistry", "arithmetic", "format", "tags"])
@pytest.mark.parametrize("completion", ADVERSARIAL)
def test_adversarial_completion_scores_quickly(name, completion):
    fn = rewards.get(name)
    start = time.perf_counter()
    scores = fn([completion], ["2"])
    elapsed = time.perf_counter() - start
    assert len(scores) == 1 and 0.0 <= scores[0] <= 1.0
    assert elapsed < BOUND_S, f"{name} took {elapsed:.2f}s"


@pytest.mark.parametrize("name", ["gsm8k", "math", "chemistry", "arithmetic", "format", "tags"])
def test_wrong_types_do_not_raise(name):
    # None / numbers where text is expected score 0, they do not crash training
    assert rewards.get(name)([None, 5], ["1", "1"]) == [0.0, 0.0]


def _spin():
    while True:  # pure Python busy loop that also swallows ordinary exceptions
        try:
            sum(range(1000))
        except Exception:  # noqa: BLE001 - it swallows ordinary exceptions on purpose
            pass


def test_time_limit_interrupts_main_thread():
    start = time.perf_counter()
    assert call_with_limit(_spin, 0.2, default="late") == "late"
    assert time.perf_counter() - start < 3.0
    time.sleep(0.3)  # no stray exception is delivered after the call returned


def test_time_limit_in_worker_threads():
    # signal-based limits only work in the main thread; this one works in any thread
    results = []

    def worker():
        results.append(call_with_limit(_spin, 0.2, default="late"))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == ["late"] * 3


def test_time_limit_passes_results_and_errors_through():
    assert call_with_limit(lambda: 7, 1.0) == 7
    assert call_with_limit(lambda: 7, None) == 7
    with pytest.raises(ZeroDivisionError):
        call_with_limit(lambda: 1 / 0, 1.0)


def test_time_limit_in_forked_child():
    # a forked worker (data loader) gets its own watchdog and still enforces the limit
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    call_with_limit(lambda: 1, 1.0)  # the parent's watchdog thread is running
    with ctx.Pool(1) as pool:
        assert pool.apply(_limited_spin_in_child) == "late"


def _limited_spin_in_child():
    return call_with_limit(_spin, 0.2, default="late")
