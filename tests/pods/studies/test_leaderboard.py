"""pods.studies.leaderboard: refused arms (one message, exit 2 through `pods leaderboard`, nothing written)."""

import pytest

from pods.commands.leaderboard import main


@pytest.mark.parametrize("arm, message", [
    ("cheap:rl.n=16 rl.m=16 rl.rule=none rl.token_budget=1e5",
     "arm cheap: rl.token_budget=1e5 sets what the cpu tier sets for every arm (rl.token_budget=1.2e+06), which "
     "would override it without a word"),
    ("w:rl.n=16 rl.m=16 rl.rule=none rl.token_budget_weight=3", "(rl.token_budget_weight=1.7)"),
    ("s:rl.n=16 rl.m=16 rl.rule=none seed=5", "Drop it from the arm (the budget: --budget, --points, --weight; "
                                              "seeds: --seeds)"),
], ids=["budget", "weight", "seed"])
def test_an_arm_may_not_set_what_the_tier_sets_for_every_arm(tmp_path, capsys, arm, message):
    out = tmp_path / "board"
    assert main(["--arms", "grpo", arm, "--dry-run", "--out", str(out)], prog="pods leaderboard") == 2
    assert message in capsys.readouterr().err and not out.exists()
