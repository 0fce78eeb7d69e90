"""pods.core.lab_checks: the selection lab's settings that cannot act are refused, with what to set."""

import pytest

from pods.core.lab_checks import lab_problems

from helpers import compose


@pytest.mark.parametrize("overrides, message", [
    (["rl.prompt_pool=4"], "rl.prompt_pool=4 offers a selector more candidates than it picks, but "
                           "rl.prompt_rule=none takes the prompts in stream order, so the pool changes nothing"),
    (["rl.prompt_rule=snr_top_p", "rl.prompt_pool=2"], "rl.prompt_rule=snr_top_p filters the step's groups after "
                                                       "generation"),
    (["rl.prompt_rule=greso", "rl.prompt_pool=2"], "rl.prompt_rule=greso walks the stream, skipping the prompts it"),
    (["rl.prompt_rule=mopps"], "rl.prompt_rule=mopps picks rl.prompts_per_step prompts of the rl.prompt_pool x "
                               "rl.prompts_per_step candidates it is offered; with rl.prompt_pool=1 it is offered "
                               "exactly those it must pick and chooses nothing: set rl.prompt_pool >= 2"),
], ids=["pool-without-rule", "pool-with-group-filter", "pool-with-filter", "mopps-without-pool"])
def test_a_pool_that_cannot_act_is_refused(overrides, message):
    assert any(message in p for p in lab_problems(compose(overrides).rl))


def test_mopps_with_a_pool_and_a_filter_without_one_are_fine():
    assert lab_problems(compose(["rl.prompt_rule=mopps", "rl.prompt_pool=16"]).rl) == []
    assert lab_problems(compose(["rl.prompt_rule=greso"]).rl) == []
