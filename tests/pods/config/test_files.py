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
