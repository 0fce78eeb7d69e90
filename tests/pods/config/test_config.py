"""Config composition (config/*.yaml) and the start-up checks of pods.config.validate."""

import importlib.util
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pods import config as pc
from pods.backends import checks as bc
from pods.config import checks
from pods.config.files import CONFIG_DIR
from pods.config.schema import TrainConfig
from pods.errors import ConfigError
from pods.run.rundir import check_run_dir

from helpers import compose

REAL_REWARD_CHECK = checks.reward_problems  # the autouse fixture below replaces it for speed and isolation
PRESETS = sorted(p.stem for p in (Path(CONFIG_DIR) / "experiment").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _no_reward_registry(monkeypatch):
    monkeypatch.setattr(checks, "reward_problems", lambda data: [])


def errors(cfg, **kw) -> str:
    with pytest.raises(ConfigError) as err:
        checks.validate(cfg, **kw)
    return str(err.value)


def test_defaults_are_the_paper_setting_and_valid():
    cfg = compose([])
    checks.validate(cfg, cuda=False)
    assert (cfg.rl.n, cfg.rl.m, cfg.rl.rule, cfg.rl.temperature) == (64, 16, "max_variance", 0.9)
    assert (cfg.model.lora.rank, cfg.model.lora.alpha, cfg.model.load_in_4bit) == (64, 64, True)
    assert (cfg.optim.lr, cfg.optim.max_grad_norm, cfg.rl.beta, cfg.rl.prompts_per_step) == (5e-6, 0.1, 0.0, 1)
    assert (cfg.rl.save_interval, cfg.rl.max_time, cfg.rl.save_strategy) == (1800, 21600, "time")
    assert (cfg.optim.scheduler, cfg.optim.warmup_ratio) == ("constant", 0.0)  # HF constant: no warm-up
    assert (cfg.rl.scale_rewards, cfg.rl.advantage_std) == ("group", "sample")
    assert pc.algorithm(cfg) == "pods"
    assert pc.run_dir(cfg) == Path("checkpoints/gsm8k-qwen2.5-3b-instruct-pods-max_variance-n64-m16-seed0")


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_composes_and_validates(preset):
    cfg = compose([f"experiment={preset}"])
    checks.validate(cfg, cuda=True)


@pytest.mark.parametrize("preset", [p for p in PRESETS if p not in ("demo", "real_cpu")])  # CPU presets
def test_single_gpu_paper_presets_run_what_the_authors_ran(preset):
    """config/train.yaml + trainer/maxvargrpo_trainer.py of YixuanEvenXu/pods (see docs/algorithms.md)."""
    cfg = compose([f"experiment={preset}"])
    rl, o, lora = cfg.rl, cfg.optim, cfg.model.lora
    assert rl.logprob_temperature is False  # raw logits (maxvargrpo_trainer.py:361-378)
    assert (rl.temperature, rl.top_p, rl.max_prompt_tokens, rl.max_completion_tokens) == (0.9, 1.0, 512, 512)
    assert (rl.prompts_per_step, rl.aggregation, rl.scale_rewards, rl.advantage_std) == (1, "sequence", "group", "sample")
    assert (o.name, o.lr, list(o.betas), o.weight_decay, o.max_grad_norm) == ("adamw_8bit", 5e-6, [0.9, 0.99], 0.1, 0.1)
    assert (o.scheduler, o.warmup_ratio) == ("constant", 0.0)
    assert (lora.rank, lora.alpha, lora.dropout, cfg.model.load_in_4bit) == (64, 64, 0.0, True)
    assert (rl.beta, rl.max_time, rl.save_interval) == ((0.04, 7200, 600) if preset == "llama_main" else (0.0, 21600, 1800))
    prompt = cfg.dataset.system_prompt  # SYSTEM_PROMPT_INSTRUCT, utils/data.py:25-37 at 3fc107e
    assert prompt.startswith("\nYou will be given a math question.\n") and prompt.endswith("Answer here.\n</answer>\n")


TRAINING_YAML = ["train.yaml", "model/*.yaml", "backend/hf.yaml", "dataset/*.yaml", "rule/*.yaml",
                 "hydra/launcher/*.yaml",
                 *(f"experiment/{e}.yaml" for e in ("gsm8k_main", "n_scaling", "m_scaling", "rules", "math_main",
                                                    "llama_main"))]


def test_yaml_has_a_comment_above_every_key():
    paths = [p for pattern in TRAINING_YAML for p in Path(CONFIG_DIR).glob(pattern)]
    assert len(paths) >= 17
    for path in paths:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            s = line.strip()
            if not s or s.startswith("#") or s.startswith("- ") or ":" not in s:
                continue
            above = lines[i - 1].strip() if i else ""
            assert above.startswith("#"), \
                f"{path.name}:{i + 1} key without a comment above: {s}"


@pytest.mark.parametrize("overrides, message", [
    (["rl.n=8", "rl.m=16"], "rl.m=16 > rl.n=8"),
    (["rl.m=1"], "at least 2 kept rollouts"),
    (["rule=none"], "rl.rule=none keeps all rollouts"),
    (["rl.rule=best"], "unknown rl.rule 'best'; valid: max_variance"),
    (["optim.lr=0"], "optim.lr must be a number > 0, got 0"),
    (["rl.max_completion_tokens=-5"], "rl.max_completion_tokens must be an integer >= 1, got -5"),
    (["rl.save_interval=0"], "rl.save_interval must be a number > 0, got 0"),
    (["rl.max_steps=null", "rl.max_time=null"], "never stops"),
    (["rl.algorithm=grpo_ga", "rl.n=8", "rl.m=4"], "grpo_ga trains on all n rollouts in one optimizer step"),
    (["rl.algorithm=sgd"], "unknown rl.algorithm"),
    (["rl.temperature=0"], "rl.logprob_temperature=true divides the logits by rl.temperature, which is 0"),
    (["optim.warmup_ratio=0.01"], "optim.scheduler=constant has no warm-up (as HF's `constant`"),
    (["optim.scheduler=cosine", "optim.warmup_ratio=1.5"], "optim.warmup_ratio must be in [0, 1)"),
    (["optim.scheduler=cosine", "optim.warmup_ratio=-0.1"], "optim.warmup_ratio must be in [0, 1)"),
    (["optim.scheduler=exponential"], "valid: constant, constant_with_warmup, linear, cosine"),
    (["rl.scale_rewards=true"], "unknown rl.scale_rewards True; valid: group, batch, none"),
    (["rl.advantage_std=biased"], "unknown rl.advantage_std 'biased'; valid: sample, population"),
    (["dataset.path=/nonexistent/train.jsonl"], "dataset.path /nonexistent/train.jsonl does not exist"),
    (["rl.save_strategy=epoch"], "unknown rl.save_strategy"),
    (["dataset.name=gsm9k"], "unknown dataset.name 'gsm9k'; valid: "),
    (["dataset.prompt_style=chat"], "unknown dataset.prompt_style 'chat'"),
    (["dataset.shuffle_seed=-1"], "dataset.shuffle_seed must be an integer >= 0 or null, got -1"),
    (["model.dtype=int3"], "unknown model.dtype 'int3'"),
    (["model.cpu_dtype=float16"], "unknown model.cpu_dtype 'float16'; valid: float32, bfloat16"),
    (["dataset.shots=[{question: Q}]"], "dataset.shots[0] must be {question: <text>, completion: <text>}"),
    (["rl.max_nonfinite_steps=0"], "rl.max_nonfinite_steps must be an integer >= 1"),
    (["rl.save_final=false", "rl.save_strategy=steps", "rl.save_steps=100", "rl.max_steps=50"],
     "rl.save_final=false and no checkpoint falls within the run (rl.save_steps=100 > rl.max_steps=50): the "
     "trained model would be thrown away. Set rl.save_final=true, or save more often, or set rl.save_strategy=no"),
    (["rl.save_final=false", "rl.save_interval=3600", "rl.max_time=1800"], "rl.save_interval=3600 > rl.max_time=1800"),
    (["rl.save_strategy=false"], 'YAML reads an unquoted no/off as false: quote it, e.g. "no"'),
    (["rl.budget_cost=seconds"], "rl.budget_cost=seconds needs rl.budget_profile: one of cpu, h100-hf, l40s-unsloth"),
    (["rl.budget_cost=seconds", "rl.budget_profile=l40s-unsloth"],
     "rl.budget_profile: profile 'l40s-unsloth' was measured on backend=unsloth"),
    (["rl.budget_cost=seconds", "rl.budget_profile=l40"], "rl.budget_profile: unknown profile 'l40'; known: "),
    (["rl.budget_profile=cpu"], "rl.budget_profile=cpu prices seconds only: set rl.budget_cost=seconds"),
    (["rl.budget_cost=hours"], "unknown rl.budget_cost 'hours'; valid: tokens, seconds"),
    (["model=tiny", "dataset=arithmetic", "rl.n=8", "rl.m=1"], "rl.m=1: group advantages need at least 2 kept "
                                                               "rollouts"),  # train.py's exit 2: test_bad_inputs.py
    (["rl.budget_cost=seconds", "rl.budget_profile=cpu", "rl.token_budget=100", "rl.token_budget_weight=2"],
     "rl.token_budget_weight=2 weighs tokens, but rl.budget_cost=seconds prices steps on rl.budget_profile"),
    (["rl.token_budget_weight=2"], "rl.token_budget_weight=2 weighs the trained tokens of rl.token_budget and "
                                   "rl.save_tokens, but both are null, so it would be ignored"),
])
def test_bad_values_are_rejected_with_what_to_change(overrides, message):
    assert message in errors(compose(overrides), cuda=False)


# train.py's base for the cases below: the tiny model on arithmetic (run_name r under <tmp>/runs)
TRAIN = ["model=tiny", "dataset=arithmetic", "rl.n=4", "rl.m=2", "rl.max_steps=1", "rl.max_time=null",
         "rl.max_completion_tokens=4", "dataset.limit=64", "logging.progress=false", "optim.name=adamw", "run_name=r"]
# (id, program, overrides with {d} for a folder holding a file `a-file` and a folder `data` with `bad.json`, fragments
# the message holds): each refused by validate, before a model loads or a file is written; train.py turns that
# ConfigError into one message and exit 2 (tests/test_bad_inputs.py runs n-fraction through it)
BAD_VALUES = [
    ("max_steps-fraction", "train.py", ["rl.max_steps=2.5"], ["rl.max_steps must be an integer or null, got 2.5"]),
    ("top_p-0", "train.py", ["rl.top_p=0"], ["rl.top_p must be a number in (0, 1], got 0"]),
    ("top_p-above-1", "train.py", ["rl.top_p=1.5"], ["rl.top_p must be a number in (0, 1], got 1.5"]),
    ("greedy-training", "train.py", ["rl.temperature=0", "rl.logprob_temperature=false"],
     ["rl.temperature=0 samples greedily", "set rl.temperature > 0"]),
    ("warmup-ratio-1", "train.py", ["optim.scheduler=cosine", "optim.warmup_ratio=1"],
     ["optim.warmup_ratio must be in [0, 1)"]),
    ("beta2-1", "train.py", ["optim.betas=[0.9,1.0]"], ["optim.betas must be two numbers in [0, 1)"]),
    ("negative-seed", "train.py", ["seed=-1"], ["seed must be an integer in [0, 4294967295], got -1"]),
    ("limit-0", "train.py", ["dataset.limit=0"], ["dataset.limit must be an integer >= 1 or null, got 0",
                                                  "null keeps every example"]),
    ("run_name-escapes", "train.py", ["run_name=../../x"], ["run_name '../../x' must be a name inside output_root"]),
    ("run_name-absolute", "train.py", ["run_name=/tmp/elsewhere"], ["run_name '/tmp/elsewhere' must be a name inside"]),
    ("run_name-too-long", "train.py", ["run_name=" + "r" * 300],
     ["run_name 'rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr'... is 300 characters long (300 bytes): a directory name holds "
      "at most 255 bytes; choose a shorter run_name=NAME"]),
    ("output_root-file", "train.py", ["output_root={d}/a-file"], ["output_root {d}/a-file is a file, not a directory"]),
    ("bool-as-word", "train.py", ["logging.wandb=maybe"], ["logging.wandb must be true or false, got 'maybe'"]),
    ("list-as-number", "train.py", ["optim.betas=0.9"], ["optim.betas must be a list"]),
    ("m-above-n", "train.py", ["rl.m=8"], ["rl.m=8 > rl.n=4"]),
    ("grpo_ga-m-below-n", "train.py", ["rl.algorithm=grpo_ga"], ["rl.algorithm=grpo_ga trains on all n rollouts in "
                                                                 "one optimizer step (got n=4, m=2): set rl.m=rl.n"]),
    ("dynamic-sampling-word", "train.py", ["rl.dynamic_sampling=maybe"], ["rl.dynamic_sampling must be true or false"]),
    ("generation-rounds-0", "train.py", ["rl.max_generation_rounds=0"],
     ["rl.max_generation_rounds must be an integer in [1, 32], got 0"]),
    ("generation-rounds-unbounded", "train.py", ["rl.max_generation_rounds=1000", "rl.dynamic_sampling=true"],
     ["rl.max_generation_rounds must be an integer in [1, 32], got 1000; each round generates B x n more"]),
    ("generation-rounds-without-dynamic-sampling", "train.py", ["rl.max_generation_rounds=8"],
     ["rl.max_generation_rounds=8: used by dynamic sampling only; set rl.dynamic_sampling=true, or leave "
      "rl.dynamic_sampling_metric, rl.short_batch, rl.max_generation_rounds at their defaults"]),
    ("short-batch-unknown", "train.py", ["rl.dynamic_sampling=true", "rl.short_batch=skip"],
     ["unknown rl.short_batch 'skip'; valid: partial, top_up, error"]),
    ("dynamic-metric-without-dynamic-sampling", "train.py", ["rl.dynamic_sampling_metric=total"],
     ["rl.dynamic_sampling_metric=total: used by dynamic sampling only; set rl.dynamic_sampling=true"]),
    ("prompt-rule-unknown", "train.py", ["rl.prompt_rule=gresso"],
     ["unknown rl.prompt_rule 'gresso'; did you mean greso? valid: none, band, greso"]),
    ("rule-of-another-hook-kind", "train.py", ["rl.prompt_rule=max_variance"],
     ["rl.prompt_rule=max_variance: max_variance is a rollout rule, not a prompt rule: set rl.rule=max_variance"]),
    ("token-mask-as-prompt-rule", "train.py", ["rl.prompt_rule=entropy_top"],
     ["rl.prompt_rule=entropy_top: entropy_top is a token mask, not a prompt rule: set rl.token_mask=entropy_top"]),
    ("prompt-rule-bad-option", "train.py", ["rl.prompt_rule=band", "rl.prompt_rule_options={lo: 0.2}"],
     ["rl.prompt_rule_options: prompt rule 'band'", "unexpected keyword argument 'lo'"]),
    ("allocation-budget-below-one-per-prompt", "train.py", ["rl.allocation=ada", "rl.allocation_budget=0"],
     ["rl.allocation_budget=0 is below one rollout per prompt (rl.prompts_per_step=1)"]),
    ("allocation-budget-below-its-first-round", "train.py",
     ["rl.allocation=speed", "rl.allocation_options={screen: 2}", "rl.allocation_budget=1"],
     ["rl.allocation=speed: allocation 'speed' draws 2 rollouts in its first round for 1 prompts, over the step's "
      "budget of 1: raise the budget or draw fewer prompts"]),
    ("allocation-bad-option", "train.py", ["rl.allocation=speed", "rl.allocation_options={screens: 2}"],
     ["rl.allocation=speed: allocation 'speed'", "unexpected keyword argument 'screens'"]),
    ("allocation-with-nothing-to-allocate", "train.py",
     ["rl.allocation=ada", "rl.allocation_options={round_n: 4}", "rl.m=4"],
     ["rl.allocation=ada with rl.m = rl.n = 4: its first round already draws all n of every prompt"]),
    ("m-schedule-past-n", "train.py", ["rl.m_schedule=linear", "rl.m_end=8"],
     ["rl.m_end=8: the m schedule goes from rl.m=2 to at most rl.n=4"]),
    ("m-schedule-with-rule-none", "train.py", ["rl.m_schedule=linear", "rl.rule=none", "rl.m=4"],
     ["rl.m_schedule=linear changes m, but rl.rule=none needs m = n at every step"]),
    ("token-mask-quantile-0", "train.py", ["rl.token_mask=entropy_top", "rl.token_mask_quantile=0"],
     ["rl.token_mask_quantile must be a number in (0, 1]"]),
    ("samples_every-negative", "train.py", ["logging.samples_every=-1"],
     ["logging.samples_every must be an integer >= 0, got -1; 0: no samples.jsonl"]),
    ("model-missing-dir", "train.py", ["model=qwen2.5-3b-instruct", "model.name=/nonexistent/model"],
     ["model.name '/nonexistent/model': no such directory, and not a hub id"]),
    ("model-dir-without-config", "train.py", ["model=qwen2.5-3b-instruct", "model.name={d}/data"],
     ["model.name {d}/data: a local model is a directory holding config.json"]),
    ("model-architecture-miscounted", "train.py", ["model=qwen2.5-3b-instruct", "model.architecture.layers=35"],
     ["model.architecture: these numbers give 3,008,861,696 parameters, params says 3,085,938,688"]),
    ("demo-evaluation-section", "train.py", ["experiment=demo", "warmstart=null", "evaluation.size=-1"],
     ["evaluation.size must be an integer >= 1, got -1"]),
    ("demo-warmstart-section", "train.py", ["experiment=demo", "warmstart.lr=-1"],
     ["warmstart.lr must be a number > 0, got -1"]),
    ("data-path-on-generated-task", "train.py", ["dataset.path={d}/data/bad.json"],
     ["dataset.path: arithmetic is generated in code and reads no file, so it would be ignored; remove it"]),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad-values")
    (d / "a-file").write_text("not a directory")
    (d / "data").mkdir()
    (d / "data" / "bad.json").write_text("[")
    return d


@pytest.mark.parametrize("case", BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_a_bad_value_is_one_message_naming_the_key_and_what_to_write(case, folder):
    _, _, overrides, fragments = case
    cfg = compose([*TRAIN, f"output_root={folder / 'runs'}", *(o.replace("{d}", str(folder)) for o in overrides)])
    message = errors(cfg, cuda=False)
    for fragment in fragments:
        assert fragment.replace("{d}", str(folder)) in message


def test_all_problems_are_reported_at_once():
    msg = errors(compose(["rl.m=1", "optim.lr=-1"]), cuda=False)
    assert "rl.m=1" in msg and "optim.lr" in msg


def test_unknown_key_in_a_closed_section():
    cfg = compose([])
    OmegaConf.set_struct(cfg, False)
    cfg.rl.nn = 3
    cfg.model.lora.rnk = 3
    msg = errors(cfg, cuda=False)
    assert "unknown key rl.nn" in msg and "unknown key model.lora.rnk" in msg


def test_removed_keys_say_what_replaced_them():
    cfg = compose([])
    OmegaConf.set_struct(cfg, False)
    cfg.rl.epsilon = 0.2
    assert "unknown key rl.epsilon; removed: every batch is trained on once (importance ratio 1)" in errors(cfg, cuda=False)


@pytest.mark.parametrize("overrides, message", [
    (["backend.generation_batch_size=abc"], "backend.generation_batch_size must be an integer or null, got 'abc'"),
    (["+backend.generation_batchsize=4"], "unknown key backend.generation_batchsize; did you mean "
                                          "backend.generation_batch_size?; valid keys: name, generation_batch_size, "
                                          "device"),
    (["backend=vllm", "backend.max_model_len=abc"], "backend.max_model_len must be an integer or null, got 'abc'"),
    (["+backend.max_model_len=2048"], "unknown key backend.max_model_len; a setting of backend=vllm; valid keys: "
                                      "name, generation_batch_size, device"),
    (["backend=unsloth", "backend.gpu_memory_utilization=1.5"],
     "backend.gpu_memory_utilization must be a number in (0, 1], got 1.5"),
    (["backend.name=tpu"], "unknown backend.name 'tpu'; valid: hf, vllm, unsloth"),
])
def test_the_backend_section_is_checked_against_the_chosen_backends_settings(overrides, message):
    """Each backend declares its keys (pods.backends.<name>: its settings, FACTS.settings): one message each."""
    msg = errors(compose(overrides), cuda=False)
    assert msg == f"invalid config:\n  - {message}"


@pytest.mark.parametrize("backend", ["unsloth", "vllm"])
def test_gpu_only_backend_without_cuda_points_at_the_demo(backend, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    cfg = compose([f"backend={backend}"])
    msg = errors(cfg, cuda=False)
    assert "needs a CUDA GPU" in msg and "experiment=demo" in msg
    checks.validate(cfg, cuda=True)


def test_run_name_and_algorithm_derivation():
    grpo = compose(["rl.n=16", "rl.m=16", "seed=3"])
    assert pc.algorithm(grpo) == "grpo" and pc.run_dir(grpo).name.endswith("grpo-n16-m16-seed3")
    ga = compose(["rl.n=64", "rl.m=64", "rl.algorithm=grpo_ga"])
    assert pc.algorithm(ga) == "grpo_ga"
    named = compose(["run_name=mine", "output_root=/tmp/x"])
    assert pc.run_dir(named) == Path("/tmp/x/mine")
    beta = compose(["rl.beta=0.04", "rule=random"])
    assert "pods-random-n64-m16-beta0.04-seed0" in pc.run_dir(beta).name


def test_a_decaying_schedule_cannot_be_resized_on_resume(tmp_path):
    cfg = compose([f"output_root={tmp_path}", "run_name=r", "optim.scheduler=cosine"])
    run = pc.run_dir(cfg)
    run.mkdir()
    OmegaConf.save(cfg, run / "config.yaml", resolve=True)
    check_run_dir(compose([f"output_root={tmp_path}", "run_name=r", "optim.scheduler=cosine"]), run)
    longer = compose([f"output_root={tmp_path}", "run_name=r", "optim.scheduler=cosine", "rl.max_time=43200"])
    with pytest.raises(ConfigError, match=r"rl.max_time: 21600 -> 43200\) would bend the schedule"):
        check_run_dir(longer, run)


def test_output_dir_with_a_different_run_is_refused(tmp_path):
    cfg = compose([f"output_root={tmp_path}", "run_name=r"])
    run = pc.run_dir(cfg)
    run.mkdir()
    OmegaConf.save(cfg, run / "config.yaml", resolve=True)
    check_run_dir(cfg, run)  # same run: fine (resume)
    longer = compose([f"output_root={tmp_path}", "run_name=r", "rl.max_steps=99", "logging.wandb=true"])
    check_run_dir(longer, run)  # run length and logging may change between resumes
    other = compose([f"output_root={tmp_path}", "run_name=r", "rl.n=32"])
    with pytest.raises(ConfigError, match=r"already holds a different run \(changed: rl.n: 64 -> 32\)") as err:
        check_run_dir(other, run)
    assert "delete" not in str(err.value) and "choose another run_name=NAME" in str(err.value)
    assert f"rerun it with its own settings (they are in {run / 'config.yaml'})" in str(err.value)


def test_a_run_saved_before_the_memory_estimate_existed_resumes(tmp_path):
    cfg = compose([f"output_root={tmp_path}", "run_name=r"])
    run = pc.run_dir(cfg)
    run.mkdir()
    old = OmegaConf.to_container(cfg, resolve=True)
    del old["check_memory"], old["model"]["architecture"]  # the keys this version added
    OmegaConf.save(OmegaConf.create(old), run / "config.yaml")
    check_run_dir(compose([f"output_root={tmp_path}", "run_name=r", "check_memory=false"]), run)


def test_saving_nothing_is_allowed_when_explicit_but_never_replaces_logged_metrics(tmp_path):
    explicit = ["rl.save_final=false", "rl.save_strategy=no", "rl.max_steps=5"]
    checks.validate(compose(explicit), cuda=False)
    checks.validate(compose(["rl.save_final=false", "rl.save_steps=5", "rl.save_strategy=steps", "rl.max_steps=5"]),
                cuda=False)  # a save point within the run
    cfg = compose([f"output_root={tmp_path}", "run_name=r", *explicit])
    run = pc.run_dir(cfg)
    run.mkdir()
    OmegaConf.save(cfg, run / "config.yaml", resolve=True)
    check_run_dir(cfg, run)  # nothing logged yet
    (run / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    with pytest.raises(ConfigError, match=r"holds 2 logged steps of a run that saved no checkpoint.*another "
                                             r"run_name=NAME, or set resume=false to train it again"):
        check_run_dir(cfg, run)
    assert (run / "metrics.jsonl").read_text() == '{"step": 1}\n{"step": 2}\n'
    cfg.resume = False  # start over on purpose: allowed (the trainer keeps the old rows aside)
    check_run_dir(cfg, run)


def test_a_moved_project_still_matches_its_warm_started_runs(tmp_path):
    """config.yaml of a warm-started run compares the warm start by its content hash (cache dir name)."""
    cfg = compose(["experiment=demo", f"output_root={tmp_path}", "run_name=r"])
    cfg.model.name = "/old/place/checkpoints/.warmstart/0123abcd"
    run = pc.run_dir(cfg)
    run.mkdir()
    OmegaConf.save(cfg, run / "config.yaml", resolve=True)
    cfg.model.name = "/home/u/.cache/pods/warmstart/0123abcd"  # the project and the cache moved; same warm start
    check_run_dir(cfg, run)
    cfg.model.name = "/home/u/.cache/pods/warmstart/ffffffff"  # another warm start: a different run
    with pytest.raises(ConfigError, match="model.name: '0123abcd' -> 'ffffffff'"):
        check_run_dir(cfg, run)


@pytest.mark.parametrize("preset", ["gsm8k_main", "math_main", "demo"])
def test_reward_names_exist_in_the_registry(preset):
    assert REAL_REWARD_CHECK(compose([f"experiment={preset}"]).dataset) == []
    bad = compose(["dataset.rewards=[{name: nope, weight: 1.0}]", "dataset.accuracy_reward=gsm8k"]).dataset
    problems = " ".join(REAL_REWARD_CHECK(bad))
    assert "nope" in problems and "arithmetic" in problems  # names the valid rewards
    assert "dataset.accuracy_reward 'gsm8k' is not one of dataset.rewards ['nope']" in problems


@pytest.mark.parametrize("preset, key, values", [
    ("gsm8k_main", "rl.n", "16,64"), ("n_scaling", "rl.n", "16,32,64,128,256"), ("m_scaling", "rl.m", "2,4,8,16"),
    ("rules", "rule", "max_variance,max_reward,random"), ("math_main", "rl.n", "8,32"), ("llama_main", "rl.n", "16,64"),
])
def test_study_presets_sweep_the_papers_settings_under_multirun(preset, key, values):
    cfg = compose([f"experiment={preset}"], hydra=True)
    assert str(cfg.hydra.sweeper.params[key]) == values
    for value in values.split(","):  # every swept setting is itself valid
        checks.validate(compose([f"experiment={preset}", f"{key}={value}"]), cuda=True)


@pytest.mark.parametrize("overrides, message", [
    (["rl.n=4.5"], "rl.n must be an integer, got 4.5 (counts are whole numbers)"),  # slipped past m <= n
    (["rl.n=64.0"], "rl.n must be an integer, got 64.0 (write 64)"),
    (["rl.max_steps=2.5"], "rl.max_steps must be an integer or null, got 2.5"),  # ran 3 steps
    (["rl.micro_batch_size='4'"], "rl.micro_batch_size must be an integer, got '4' (a quoted number is a string"),
    (["model.lora.rank=null"], "model.lora.rank must be an integer, got None"),
    (["optim.lr=abc"], "optim.lr must be a finite number, got 'abc'"),
    (["optim.lr=nan"], "optim.lr must be a finite number, got nan"),
    (["logging.wandb=yes"], "logging.wandb must be true or false, got 'yes' (write true or false, unquoted)"),
    (["rl.rule=3"], "unknown rl.rule 3; valid: max_variance"),
    (["rl.save_strategy=false"],
     'unknown rl.save_strategy False; valid: time, steps, no (YAML reads an unquoted no/off'),
    (["optim.betas=0.9"], "optim.betas must be a list, e.g. [a, b], got 0.9"),
    (["dataset.options=3"], "dataset.options must be a mapping, e.g. {key: value}, got 3"),
    (["rl.top_p=0"], "rl.top_p must be a number in (0, 1], got 0"),
    (["rl.top_p=1.5"], "rl.top_p must be a number in (0, 1], got 1.5"),
    (["rl.temperature=0", "rl.logprob_temperature=false"], "rl.temperature=0 samples greedily: the rl.n=64 rollouts"),
    (["rl.temperature=-1"], "rl.temperature must be >= 0, got -1"),
    (["optim.betas=[0.9,1.0]"], "optim.betas must be two numbers in [0, 1) (Adam's beta1, beta2), got [0.9, 1.0]"),
    (["optim.betas=[-0.1,0.9]"], "optim.betas must be two numbers in [0, 1)"),
    (["optim.betas=[0.9]"], "optim.betas must be two numbers in [0, 1)"),
    (["seed=-1"], "seed must be an integer in [0, 4294967295], got -1"),
    (["seed=4294967296"], "seed must be an integer in [0, 4294967295], got 4294967296"),
    (["dataset.limit=0"], "dataset.limit must be an integer >= 1 or null, got 0"),
    (["dataset.limit=-3"], "dataset.limit must be an integer >= 1 or null, got -3"),
    (["dataset.limit=2.5"], "dataset.limit must be an integer or null, got 2.5"),
    (["rl.max_time=0"], "rl.max_time must be a number > 0 or null, got 0"),
    (["optim.weight_decay=-0.1"], "optim.weight_decay must be a number >= 0, got -0.1"),
    (["model.lora.dropout=1.0"], "model.lora.dropout must be a number in [0, 1), got 1.0"),
    (["model=tiny", "model.tiny.heads=3"], "model.tiny: hidden=64 must be a multiple of heads=3"),
    (["run_name=../../x"], "run_name '../../x' must be a name inside output_root"),
    (["run_name=/tmp/elsewhere"], "run_name '/tmp/elsewhere' must be a name inside output_root"),
    (["run_name=''"], "run_name must be a non-empty string or null, got ''"),
    (["run_name=3"], "run_name must be a non-empty string or null, got 3"),
])
def test_values_the_validator_used_to_let_through(overrides, message):
    assert message in errors(compose(overrides), cuda=False)


def test_a_missing_key_is_named():
    cfg = compose([])
    OmegaConf.set_struct(cfg, False)
    del cfg.rl["n"]
    assert "missing key rl.n: add it back" in errors(cfg, cuda=False)


def test_run_names_inside_output_root_are_fine(tmp_path):
    checks.validate(compose([f"output_root={tmp_path}", "run_name=sweep1/run-a"]), cuda=False)
    checks.validate(compose([f"output_root={tmp_path / 'new' / 'dir'}"]), cuda=False)  # created when missing


def test_output_root_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    msg = errors(compose([f"output_root={tmp_path / 'file'}"]), cuda=False)
    assert f"output_root {tmp_path / 'file'} is a file, not a directory" in msg
    msg = errors(compose([f"output_root={tmp_path / 'file' / 'sub'}"]), cuda=False)
    assert "is a file, so the directory cannot be created" in msg
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r").write_text("x")
    assert "run directory" in errors(compose([f"output_root={tmp_path / 'runs'}", "run_name=r"]), cuda=False)


def test_every_int_field_of_the_schema_refuses_a_fraction():
    """Generic: the expected type of every field comes from the dataclass annotations."""
    import dataclasses
    import typing

    def int_keys(schema, prefix=""):
        hints = typing.get_type_hints(schema)
        for f in dataclasses.fields(schema):
            if dataclasses.is_dataclass(hints[f.name]):
                yield from int_keys(hints[f.name], f"{prefix}{f.name}.")
            elif hints[f.name] is int:
                yield prefix + f.name

    keys = list(int_keys(TrainConfig))
    assert {"rl.n", "rl.m", "seed", "model.lora.rank", "model.tiny.hidden", "rl.save_steps"} <= set(keys)
    for key in keys:
        assert f"{key} must be an integer, got 2.5" in errors(compose([f"{key}=2.5"]), cuda=False), key


@pytest.mark.parametrize("overrides, message", [
    (["evaluation.size=-1"], "evaluation.size must be an integer >= 1, got -1"),  # used to evaluate 1999 problems
    (["evaluation.greedy=maybe"], "evaluation.greedy must be true or false, got 'maybe'"),
    (["+evaluation.sizes=3"], "unknown key evaluation.sizes; did you mean evaluation.size?; valid keys: size, draws"),
    (["warmstart.layers=1.5"], "warmstart.layers must be an integer, got 1.5"),
    (["warmstart.lr=-1"], "warmstart.lr must be a number > 0, got -1"),
    (["warmstart.eval_size=0"], "warmstart.eval_size must be an integer >= 1, got 0"),
    (["warmstart.target_greedy=2"], "warmstart.target_greedy must be a number in (0, 1], got 2"),
])
def test_the_demos_open_sections_are_checked_too(overrides, message):
    assert message in errors(compose(["experiment=demo", *overrides]), cuda=False)


def test_model_name_is_tiny_a_local_model_directory_or_a_hub_id(tmp_path, monkeypatch):
    assert bc.model_problems("tiny") == [] and bc.model_problems("Qwen/Qwen2.5-3B-Instruct") == []
    assert bc.model_problems("gpt2") == []  # a hub id without a namespace
    assert "no such directory, and not a hub id" in bc.model_problems("/nonexistent/model")[0]
    assert "no such directory, and not a hub id" in bc.model_problems("runs/a/b")[0]
    assert "a local model is a directory holding config.json" in bc.model_problems(str(tmp_path))[0]
    (tmp_path / "config.json").write_text("{}")
    assert bc.model_problems(str(tmp_path)) == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="offline .HF_HUB_OFFLINE. and not in the local cache"):
        bc.check_offline("pods-test/never-downloaded")
    bc.check_offline(str(tmp_path))  # local: nothing to download
    err = bc.load_error("org/typo", OSError("org/typo is not a local folder and is not a valid model identifier"))
    assert isinstance(err, ConfigError)
    assert "model.name org/typo could not be loaded (OSError: org/typo is not" in str(err)
