"""pods replay (pods/commands/replay.py, scripts/replay.py): a bad rule, m or ledger is one message, exit 2."""

import json

import pytest
import torch

from pods.commands import replay
from pods.core import ledger as fmt
from pods.core.ledger_writer import Ledger

from helpers import exits


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory):
    """Run directories: ok (3 steps of 2 groups, n = 4, m = 2), cut short, a step missing, another format
    version, and one without a ledger."""
    root = tmp_path_factory.mktemp("ledgers")

    def write(name: str, steps):
        led = Ledger(root / name, {"n": 4, "m": 2, "rule": "max_variance", "algorithm": "pods", "seed": 0})
        for s in steps:
            r = torch.tensor([[1.0, 0, 0, 1], [0, 0, 0, 1]])
            led.record(s, fmt.concat_rows([fmt.group_rows(step=s, round_=0, prompts=[0, 1], status=["trained"] * 2,
                                                          total=r, per_fn={"exact": r}, accuracy=r,
                                                          lengths=torch.ones(2, 4), kept=torch.tensor([[0, 1]] * 2))]))
            led.flush()
        led.close()
        return root / name / fmt.DIR

    write("ok", [1, 2, 3])
    cut = sorted(write("cut", [1, 2]).glob("steps-*"))[-1]
    cut.write_bytes(cut.read_bytes()[:100])
    write("gap", [1, 3])
    old = write("old", [1])
    (old / fmt.META).write_text(json.dumps({"format": fmt.FORMAT, "version": 0}))
    (root / "none").mkdir()
    return root


@pytest.mark.parametrize("argv, said", [
    (["ok", "--rule", "max_varaince"], ["--rule max_varaince: no such rollout or prompt rule; did you mean "
                                        "max_variance"]),
    (["ok", "--rule", "random", "--m", "5"], ["--m 5: the recorded groups hold 4 rollouts (n), so m must lie in "
                                              "1..4"]),
    (["cut", "--rule", "random"], ["steps-00000002-00000002.parquet cannot be read", "cut short or damaged"]),
    (["gap", "--rule", "random"], ["{d}/gap/ledger is truncated: step 2 is missing (1 of 3)"]),
    (["old", "--rule", "random"], ["a ledger of format version 0; this pods reads and writes version 1"]),
    (["none", "--rule", "random"], ["{d}/none has no rollout ledger"]),
    (["zz*", "--rule", "random"], ["no run directory with a rollout ledger"]),
], ids=["unknown-rule", "m-above-n", "ledger-cut-short", "ledger-step-missing", "ledger-other-version", "no-ledger",
        "glob-matches-nothing"])
def test_a_bad_rule_m_or_ledger_is_one_message_and_writes_nothing(ledgers, capsys, argv, said):
    before = sorted(p for p in ledgers.rglob("*"))
    code, _, err = exits(replay.main, [str(ledgers / argv[0]), *argv[1:]], capsys)
    assert code == 2 and all(text.replace("{d}", str(ledgers)) in err for text in said), err
    assert sorted(p for p in ledgers.rglob("*")) == before
