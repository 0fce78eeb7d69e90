"""pods.core.registry: a name is registered once, looked up with the nearest names, its inputs required."""

import pytest

from pods.core.registry import lookup, registrar, require


def _first(x):
    return x


def _second(x):
    return x


def test_a_name_taken_by_another_function_is_refused_naming_both():
    registry, inputs = {}, {}
    register = registrar(registry, inputs)
    register("keep", needs=("lengths",))(_first)
    with pytest.raises(ValueError, match=r"'keep' is registered twice: tests?.*_first and .*_second; rename one"):
        register("keep")(_second)
    assert registry == {"keep": _first} and inputs == {"keep": ("lengths",)}  # the first one stays
    register("keep", needs=("lengths",))(_first)  # the same function again (a reloaded module): fine
    assert registry["keep"] is _first and _first.name == "keep"


def test_lookup_names_the_nearest_and_require_names_the_input():
    registry = {"gfpo_length": _first, "max_variance": _second}
    assert lookup("rollout rule", "gfpo_length", registry) is _first
    with pytest.raises(ValueError, match="unknown rollout rule 'gfpo_lenght'; did you mean 'gfpo_length'"):
        lookup("rollout rule", "gfpo_lenght", registry)
    with pytest.raises(ValueError, match=r"rollout rule 'gfpo_length' needs lengths \(pass lengths=...\)"):
        require("rollout rule", "gfpo_length", ("lengths",), lengths=None)
    require("rollout rule", "gfpo_length", ("lengths",), lengths=[1])


def test_every_registry_of_pods_loads_with_its_names_once():
    from pods.core import allocation, downsample, prompt_rules, token_masks

    for registry in (downsample.RULES, prompt_rules.PROMPT_RULES, allocation.ALLOCATIONS, token_masks.TOKEN_MASKS):
        assert registry and all(obj.name == name for name, obj in registry.items())
