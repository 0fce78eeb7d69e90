"""pods trl (pods/commands/trl.py, scripts/train_trl.py): presets (the paper's 8-GPU pair), schedule sizing, and CPU runs that finish and rerun.

    uv run pytest tests/pods/commands/test_trl.py     (~40 s: tiny Qwen2, arithmetic task)

Kill-and-resume runs (1 and 2 processes) are in test_trl_resume.py.
"""

import json
import math
from pathlib import Path

import pytest

from pods.commands import trl as train_trl
from pods.errors import ConfigError

from helpers import exits

ROOT = Path(__file__).resolve().parents[3]
PRESETS = ROOT / "config" / "trl"
TINY = PRESETS / "tiny-cpu.yaml"
QUICK = ["model=tiny", "train_steps=2", "dataset.limit=256", "eval.limit=8", "trl.eval_steps=1", "trl.save_steps=1",
         "trl.per_device_train_batch_size=32"]


def test_a_preset_is_composed_by_hydra_by_name_or_from_a_file_of_your_own(tmp_path):
    assert train_trl.preset_file("tiny-cpu", None) == TINY
    assert train_trl.load_preset(TINY, ["train_steps=7"]) == train_trl.load_preset(str(TINY), ["++train_steps=7"])
    mine = tmp_path / "mine.yaml"  # its defaults list finds config/trl's presets after its own folder
    mine.write_text("defaults: [tiny-cpu, _self_]\ntrain_steps: 3\ntrl: {seed: 5}\n")
    cfg = train_trl.load_preset(mine, ["trl.save_steps=4", "+overwrite=true"])
    tiny = train_trl.load_preset(TINY)
    assert cfg == {**tiny, "train_steps": 3, "overwrite": True, "trl": {**tiny["trl"], "seed": 5, "save_steps": 4}}
    vllm, paper = (train_trl.load_preset(PRESETS / f"pods-qwen2.5-3b{s}.yaml") for s in ("-vllm", ""))
    assert {k: v for k, v in vllm["trl"].items() if paper["trl"].get(k) != v} == {
        "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
        "vllm_importance_sampling_correction": False}  # its defaults list: the paper preset, then its own keys
    with pytest.raises(ConfigError, match="did you mean preset=tiny-cpu"):
        train_trl.preset_file("tiny-cpy", None)


def test_preset_checks():
    cfg = train_trl.load_preset(TINY, ["train_steps=7"])
    assert cfg["train_steps"] == 7 and cfg["algorithm"] == "pods"
    assert train_trl.run_name(cfg) == "trl-pods-n16-m4-ga1-s0"
    assert train_trl.load_preset(TINY, ["trl.eval_strategy=no"])["trl"]["eval_strategy"] == "no"  # not False
    for overrides, message in [(["algorithm=ppo"], "pods, grpo_ga"),
                               (["accuracy_reward=gsm8k"], "not among the rewards"),
                               (["algorithm=grpo_ga"], "remove the trl.pods_"),
                               (["trl.max_steps=3"], "either train_steps or trl.max_steps"),
                               (["train_steps=forever"], "train_steps must be"),
                               (["max_train_minutes=3"], "unknown keys \\['max_train_minutes'\\]")]:
        with pytest.raises(ValueError, match=message):
            train_trl.load_preset(TINY, overrides)


@pytest.fixture(scope="module")
def presets(tmp_path_factory):
    d = tmp_path_factory.mktemp("presets")
    (d / "sgd.yaml").write_text("defaults: [tiny-cpu, _self_]\nalgorithm: sgd\n")  # a config/trl preset's keys
    (d / "old.yaml").write_text("base: tiny-cpu.yaml\nalgorithm: pods\n")  # before presets were Hydra configs
    (d / "broken.yaml").write_text("algorithm: pods\ntrl: {num_generations: [\n")
    return d


@pytest.mark.parametrize("argv, said", [
    (["--preset", "{d}/none.yaml"], "preset {d}/none.yaml does not exist"),
    (["--preset", "{d}/broken.yaml"], "is not valid YAML"),
    (["--preset", str(TINY), "trl=[1"], "cannot parse the overrides ['trl=[1']"),
    (["--preset", str(TINY), "train_steps=-1"],
     "train_steps must be epoch, authors_epoch, a positive integer or null, got -1"),
    (["--preset", "{d}/sgd.yaml"], "algorithm must be one of pods, grpo_ga, got 'sgd'"),
    (["preset=tiny-cpy"], "preset=tiny-cpy: no config/trl/tiny-cpy.yaml (did you mean preset=tiny-cpu?)"),
    (["preset=tiny-cpu", "--preset", str(TINY)], "name one preset: preset=<name> ("),
    (["--preset", "{d}/old.yaml"], "`base: tiny-cpu.yaml` is Hydra's defaults list now: write `defaults: [tiny-cpu, "
                                   "_self_]`"),
    (["--preset", str(TINY), "trl.num_generation=4"],
     "unknown setting(s) trl.num_generation (did you mean trl.num_generations?): PODSConfig"),
], ids=["missing-preset", "broken-yaml", "override-syntax", "bad-train_steps", "bad-algorithm", "unknown-preset",
        "two-presets", "base-key", "unknown-key"])
def test_a_bad_preset_or_override_is_one_message_and_exit_2(presets, capsys, argv, said):
    code, _, err = exits(train_trl.main, [a.replace("{d}", str(presets)) for a in argv], capsys)
    assert code == 2 and said.replace("{d}", str(presets)) in err, err


def test_paper_presets_are_a_pods_grpo_ga_pair():
    pods = train_trl.load_preset(PRESETS / "pods-qwen2.5-3b.yaml")
    ga = train_trl.load_preset(PRESETS / "grpo-ga-qwen2.5-3b.yaml")
    assert train_trl.as_grpo_ga(pods) == ga  # GA = exactly the matching comparison of the PODS run
    t, g = pods["trl"], ga["trl"]
    assert (t["num_generations"], t["pods_m"], t["gradient_accumulation_steps"]) == (128, 32, 4)  # n128-m32-ga4
    assert (g["num_generations"], g["gradient_accumulation_steps"]) == (32, 16)  # n32-m32-ga16
    for kw in (t, g):  # one prompt per process per step: n * ga completions of it, micro-batches of 32
        assert kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"] == 512
        assert kw["num_generations"] * kw["prompt_repeats"] == 512
    assert t["per_device_train_batch_size"] * t["pods_m"] // t["num_generations"] == g["per_device_train_batch_size"]
    assert {k: t[k] for k in ("temperature", "top_k", "loss_type", "use_vllm", "beta", "learning_rate",
                              "lr_scheduler_type", "warmup_steps", "max_completion_length")} == dict(
        temperature=0.9, top_k=50, loss_type="bnpo", use_vllm=False, beta=0.0, learning_rate=2e-5,
        lr_scheduler_type="cosine", warmup_steps=0.1, max_completion_length=1024)
    assert [(r["name"], r["weight"]) for r in pods["rewards"]] == [
        ("openr1_accuracy", 1.0), ("openr1_format", 1.0), ("openr1_tags", 1.0)]
    assert (pods["max_train_seconds"], pods["eval_every_seconds"], pods["train_steps"]) == (2400, 120, "authors_epoch")
    assert pods["dataset"]["system_prompt"].startswith("You are a helpful AI Assistant")
    assert pods["dataset"]["system_prompt"].endswith("<think>\n...\n</think>\n<answer>\n...\n</answer>")


def test_vllm_variants_change_only_generation():
    for name in ("pods", "grpo-ga"):
        paper = train_trl.load_preset(PRESETS / f"{name}-qwen2.5-3b.yaml")
        vllm = train_trl.load_preset(PRESETS / f"{name}-qwen2.5-3b-vllm.yaml")
        changed = {k for k in paper["trl"] if paper["trl"][k] != vllm["trl"].get(k)} | (set(vllm["trl"]) -
                                                                                        set(paper["trl"]))
        assert changed == {"use_vllm", "vllm_mode", "vllm_gpu_memory_utilization",
                           "vllm_importance_sampling_correction"}
        assert vllm["trl"]["vllm_importance_sampling_correction"] is False
        assert {k: v for k, v in paper.items() if k != "trl"} == {k: v for k, v in vllm.items() if k != "trl"}
        assert train_trl.run_name(vllm).endswith("-vllm")
    assert train_trl.as_grpo_ga(train_trl.load_preset(PRESETS / "pods-qwen2.5-3b-vllm.yaml")) == \
        train_trl.load_preset(PRESETS / "grpo-ga-qwen2.5-3b-vllm.yaml")


@pytest.mark.parametrize("name", ["pods-qwen2.5-3b", "grpo-ga-qwen2.5-3b", "pods-qwen2.5-3b-vllm",
                                  "grpo-ga-qwen2.5-3b-vllm"])
def test_paper_presets_make_valid_trl_configs(tmp_path, name):
    import warnings

    from pods.integrations.trl import GRPOGAConfig, PODSConfig

    cfg = train_trl.load_preset(PRESETS / f"{name}.yaml")
    cls = PODSConfig if cfg["algorithm"] == "pods" else GRPOGAConfig
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # e.g. PODS's warning about vLLM's correction over all n
        args = cls(**{**cfg["trl"], "output_dir": str(tmp_path), "use_cpu": True, "bf16": False})  # as on CPU
    assert args.generation_batch_size == 512  # one process: its one prompt x 512 per step
    assert args.steps_per_generation == args.gradient_accumulation_steps  # on-policy: no old log-probs


@pytest.mark.parametrize("path", sorted(PRESETS.glob("*.yaml")) + sorted((ROOT / "config/accelerate").glob("*.yaml")))
def test_preset_has_a_comment_above_every_key(path):
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if s and not s.startswith(("#", "- ")) and ":" in s:
            assert i and lines[i - 1].strip().startswith("#"), f"{path.name}:{i + 1} key without a comment above"


def test_authors_epoch_steps():
    # GSM8K train (7473) on 8 processes: the fork's loader gives ceil(7473 / 8) = 935 batches per process,
    # transformers (pinned by open-r1/setup.py:71, before transformers#37923) floored 935 / ga
    assert train_trl.schedule_kwargs("authors_epoch", 7473, 8, 4) == {"max_steps": 233}  # PODS, ga 4
    assert train_trl.schedule_kwargs("authors_epoch", 7473, 8, 16) == {"max_steps": 58}  # GRPO-GA, ga 16
    assert train_trl.schedule_kwargs("epoch", 7473, 8, 4) == {"max_steps": -1, "num_train_epochs": 1}
    assert train_trl.schedule_kwargs(None, 7473, 8, 4) == {} and train_trl.schedule_kwargs(9, 1, 1, 1)["max_steps"] == 9


def _lr_curve(trainer, steps):
    trainer.create_optimizer_and_scheduler(num_training_steps=steps)
    lrs = []
    for _ in range(steps):
        lrs.append(trainer.lr_scheduler.get_last_lr()[0])
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
    return lrs


@pytest.mark.parametrize("algorithm", ["pods", "grpo_ga"])
def test_epoch_schedule_is_one_pass_over_the_prompts(tmp_path, algorithm):
    """TRL sizes the schedule from the data loader (not max_steps=1000): one epoch = every prompt once."""
    from pods.integrations.trl.resume import Plan

    overrides = ["model=tiny", "train_steps=epoch", "dataset.options={size: 100}", "trl.prompt_repeats=2",
                 "trl.gradient_accumulation_steps=2", "trl.per_device_train_batch_size=16",
                 "trl.lr_scheduler_type=cosine", "trl.warmup_steps=0.1", f"run_dir={tmp_path}", "eval.limit=4"]
    cfg = train_trl.load_preset(TINY, overrides)
    if algorithm == "grpo_ga":
        cfg = train_trl.as_grpo_ga(cfg)
    trainer = train_trl.build(cfg, tmp_path, Plan("fresh"))
    loader = trainer.get_train_dataloader()
    max_steps = trainer.set_initial_training_values(trainer.args, loader)[-1]
    assert max_steps == 100 // 1  # one prompt (2 groups of 16) per step on one process: 100 steps
    lrs = _lr_curve(trainer, max_steps)
    warm = math.ceil(0.1 * max_steps)  # 10 warm-up steps, then cosine to 0 over the other 90
    peak = cfg["trl"]["learning_rate"]
    assert lrs[0] == 0 and lrs[warm] == pytest.approx(peak) and lrs[warm // 2] == pytest.approx(peak / 2)
    assert lrs[warm + 45] == pytest.approx(peak / 2, rel=1e-3) and lrs[-1] < peak * 1e-3
    authors = train_trl.build({**cfg, "train_steps": "authors_epoch"}, tmp_path / "a", Plan("fresh"))
    ga = cfg["trl"]["gradient_accumulation_steps"]  # 2 (PODS) or 8 (GRPO-GA)
    assert authors.args.max_steps == 100 // ga  # the fork's epoch: ceil(100 prompts / 1 process) // ga


def test_two_step_cpu_run_writes_readable_metrics_and_reruns_as_a_no_op(tmp_path):
    from pods.analysis.loaders import load_run_dir

    trainer, run_dir = train_trl.train(["--preset", str(TINY), f"run_dir={tmp_path}", *QUICK])
    assert trainer.state.global_step == 2 and (run_dir / "config.yaml").is_file()
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]  # one row per step (step 0: the evaluation at start)
    assert all(0.0 <= r["eval/accuracy"] <= 1.0 for r in rows) and all("loss" in r for r in rows[1:])
    assert rows[0]["elapsed_seconds"] == 0.0 and rows[0]["eval_seconds"] > 0
    assert 0 < rows[1]["elapsed_seconds"] < rows[2]["elapsed_seconds"]
    assert all(k in rows[1] for k in ("time/step", "pods/kept_reward", "pods/regrouped", "pods/round", "reward"))
    assert json.loads((run_dir / "finished.json").read_text())["step"] == 2
    assert sorted(p.name for p in run_dir.glob("checkpoint-*")) == ["checkpoint-2"]  # save_total_limit 1
    before = (run_dir / "metrics.jsonl").read_text()
    assert train_trl.train(["--preset", str(TINY), f"run_dir={tmp_path}", *QUICK])[0] is None  # finished: no-op
    assert (run_dir / "metrics.jsonl").read_text() == before
    with pytest.raises(ValueError, match=r"other settings \(trl.learning_rate: 0.0002 -> 0.1\)"):
        train_trl.train(["--preset", str(TINY), f"run_dir={tmp_path}", *QUICK, "trl.learning_rate=0.1"])
    run = load_run_dir(run_dir)  # the analysis scripts read it
    assert run.steps.tolist() == [0, 1, 2] and run.metric("arithmetic", "ans_acc").shape == (3,)
    trainer, _ = train_trl.train(["--preset", str(TINY), f"run_dir={tmp_path}", *QUICK, "train_steps=1",
                                 "overwrite=true"])  # starts over with other settings
    assert trainer.state.global_step == 1
    assert [json.loads(x)["step"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()] == [0, 1]
    assert sorted(p.name for p in run_dir.glob("checkpoint-*")) == ["checkpoint-1"]


@pytest.mark.parametrize("key, bad, train_key", [
    ("pods_prompt_rule", "gresso", "rl.prompt_rule"),  # an unknown rule: the nearest names
    ("pods_prompt_pool", "0", "rl.prompt_pool"),  # a bound (the schema walker's sentence)
    ("pods_ledger", "yes", "logging.ledger"),  # a type
    ("pods_allocation", "greso", "rl.allocation"),  # a name of another hook kind
], ids=["unknown-rule", "bound", "type", "other-hook-kind"])
def test_a_bad_lab_setting_gets_train_pys_sentence_before_any_model_loads(tmp_path, key, bad, train_key):
    from pods.config.checks import validate
    from pods.integrations.trl.lab_settings import in_trl_names

    from helpers import compose

    with pytest.raises(ConfigError) as ours:
        train_trl.load_preset(TINY, [f"++trl.{key}={bad}"])
    with pytest.raises(ConfigError) as theirs:  # the same mistake in train.py
        validate(compose(["model=tiny", f"{train_key}={bad}"]))
    sentence = next(line.strip(" -") for line in str(theirs.value).splitlines() if train_key in line)
    assert in_trl_names(sentence).replace(train_key, f"trl.{key}") in str(ours.value)


def test_a_bad_lab_setting_exits_2(capsys):
    assert train_trl.main(["preset=tiny-cpu", "++trl.pods_allocation=speed", "++trl.loss_type=grpo"]) == 2
    assert "pods_allocation=speed trains a varying number of groups" in capsys.readouterr().err
