"""pods.config.files: the config tree's groups and their options, and a path as a Hydra override value."""

from pods.config.files import compose, composed_groups, groups, quote

VALUES = ["/tmp/a dir/with spaces", "/tmp/it's", '/tmp/a "quote"', "/tmp/back\\slash'", "/tmp/ends in\\",
          "/tmp/${oc.env:HOME}", "/tmp/a,b=c:d [e]", "/tmp/é"]
KEYS = ["output_root", "run_name", "model.name", "dataset.name"]


def test_a_quoted_value_is_read_back_as_exactly_the_text():
    for half in (VALUES[:4], VALUES[4:]):  # two compositions, four keys each
        cfg = compose(["model=tiny", *(f"{k}={quote(v)}" for k, v in zip(KEYS, half))])
        assert [cfg.output_root, cfg.run_name, cfg.model.name, cfg.dataset.name] == half


def test_groups_and_their_options_as_the_files_say():
    found = groups()
    assert {"rule", "model", "dataset", "backend", "experiment", "protocol"} <= set(found)
    assert "max_variance" in found["rule"] and "tiny" in found["model"] and found["hydra"] == []
    assert composed_groups("train") == ["model", "backend", "dataset", "rule", "experiment"]
    assert composed_groups("evaluate") == ["protocol"]


def test_compose_is_hydras_composition_value_for_value_and_error_for_error():
    """compose composes group choices once and applies plain key=value overrides to a copy, as Hydra does after
    composing: held against Hydra's own compose of the whole list, including its refusals."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from pods.config.files import CONFIG_DIR

    def outcome(make):
        try:
            return OmegaConf.to_yaml(make())
        except Exception as err:  # noqa: BLE001 - the refusal itself is compared
            return f"{type(err).__name__}: {err}"

    cases = [["model=tiny", "rl.n=4", "dataset=arithmetic"], ["rl.n=4.5", "experiment=demo", "optim.lr=1e-3"],
             ["model.name=null", "model=tiny", "model.lora.rank=8", "dataset.rewards=[{name: digits, weight: 1}]"],
             ["rl.nn=3"], ["backend.foo=1"], ["rl.n=4,8"], ["+rl.zz=1", "~rl.m"], ["hydra.job.name=x", "rl.n=3"]]
    for overrides in cases:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
            expected = outcome(lambda: hydra_compose(config_name="train", overrides=overrides))
        assert outcome(lambda: compose(overrides)) == expected, overrides
    first = compose(["model=tiny", "rl.n=4"])
    first.rl.n = 99  # each call gets its own copy
    assert compose(["model=tiny", "rl.n=4"]).rl.n == 4
