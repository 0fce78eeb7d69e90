"""The selection lab in PODSTrainer (pods/integrations/trl: lab_settings.py, rounds.py, books.py), one process:
settings checked at construction with train.py's sentences, the same choices as train.py on the same rewards,
the rollout ledger across a resume, the cost ledger and the token budget, the completions log.

    uv run pytest tests/pods/integrations/test_trl_lab.py      (~1 min on 2 cores: tiny-Qwen2 runs of 1-3 steps)

"The same rewards": both trainers score with `Scripted`, whose value depends only on the prompt and on how many of
its rollouts were scored before; so where the two make the same choices they see the same rewards, step after step.
The sweep over every rule and the 2-process run are in the slow tier.
"""

import dataclasses
import os
import random
from collections import Counter

import pyarrow.dataset as pds
import pytest
import torch

if not torch.cuda.is_available():  # TRL 1.15 patches in a Triton kernel; interpret it on CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

from datasets import Dataset
from transformers import TrainerCallback

from pods.analysis.replay import replay
from pods.backends.tiny import byte_tokenizer, tiny_causal_lm
from pods.config.aliases import CONFIG_ALIASES
from pods.config.fields import declared
from pods.config.schema import TrainConfig
from pods.core.cost import spent
from pods.core.ledger_index import OFF, read_back
from pods.errors import CheckpointError
from pods.integrations.trl import PODSConfig, PODSTrainer
from pods.integrations.trl.lab_settings import LAB
from pods.integrations.trl.resume import Plan, check_ledger
from pods.run import prepare, sampler, trainer

from helpers import patch_task, skip_reward_check, tiny_cfg

P, N, M, B = 5, 8, 4, 2  # prompts, n, m, prompts per step (train.py's tiny_cfg); step 3 starts a second epoch
STEPS = 4
COMPARED = ["step", "round", "slot", "group", "prompt", "position", "status", "n", "reward", "reward/digits",
            "accuracy", "kept"]  # not lengths and entropies: the two models write other completions


def scripted_value(i: int, c: int) -> float:
    """The c-th rollout of prompt i: right with chance (0, 1/4, 1/2, 3/4, 1)[i % 5], a small spread of credit."""
    rate, u = (0.0, 0.25, 0.5, 0.75, 1.0)[i % 5], random.Random(i * 100_003 + c).random()
    v = random.Random(i * 7_919 + c + 1).random()
    return 1.0 + 0.1 * v if u < rate else -0.1 * v


class Scripted:
    """Rewards by (prompt, rollouts of it scored so far): for train.py's `score` and as TRL's reward `digits`."""

    def __init__(self):
        self.seen = Counter()

    def values(self, idx) -> list[float]:
        out = []
        for i in idx:
            out.append(scripted_value(int(i), self.seen[int(i)]))
            self.seen[int(i)] += 1
        return out

    def score(self, texts, answers, cols, reward_cfg):  # pods.run.sampler.score's signature
        r = torch.tensor(self.values(cols["idx"]))
        return r, {"digits": r}

    def reward(self):
        def digits(completions, idx, **kwargs):
            return self.values(idx)

        return digits


def prompts(tok, count=P):
    rng = random.Random(0)
    pairs = [(rng.randrange(100), rng.randrange(100)) for _ in range(count)]
    return [f"{a}+{b}=" for a, b in pairs], [str(a + b) for a, b in pairs]


def train_py(tmp_path, monkeypatch, kw: dict):
    """train.py's ledger of a 3-step run with the TRL settings `kw` (as train.py keys, through the alias table)."""
    tok = byte_tokenizer()
    texts, answers = prompts(tok)
    ids = [tok.encode(t, add_special_tokens=False) for t in texts]
    patch_task(monkeypatch)
    skip_reward_check(monkeypatch)
    monkeypatch.setattr(prepare, "load_prompts", lambda cfg, tokenizer, examples=None: (ids, answers,
                                                                                         {"idx": list(range(P))}))
    monkeypatch.setattr(sampler, "score", Scripted().score)
    overrides = [f"{CONFIG_ALIASES[k].target if k in CONFIG_ALIASES else k}={_hydra(v)}" for k, v in kw.items()]
    return ledger(trainer.train(tiny_cfg(tmp_path / "train_py", f"rl.max_steps={STEPS}", *overrides)))


def _hydra(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def trl_args(out, **kw) -> PODSConfig:
    base = dict(output_dir=str(out), num_generations=N, pods_m=M, per_device_train_batch_size=B * N,
                gradient_accumulation_steps=1, use_cpu=True, report_to=[], save_strategy="no", max_steps=3,
                max_completion_length=3, learning_rate=1e-2, seed=0, logging_steps=1, pods_ledger=True,
                temperature=1.0)
    return PODSConfig(**{**base, **kw})


def trl_run(out, reward, callbacks=(), resume=None, num_prompts=P, **kw) -> PODSTrainer:
    tok = byte_tokenizer()
    texts, answers = prompts(tok, num_prompts)
    data = Dataset.from_dict({"prompt": texts, "answer": answers, "idx": list(range(num_prompts))})
    t = PODSTrainer(model=tiny_causal_lm(tok, seed=0), reward_funcs=[reward], args=trl_args(out, **kw),
                    train_dataset=data, processing_class=tok, callbacks=list(callbacks))
    t.train(resume_from_checkpoint=resume)
    return t


def ledger(run_dir):
    return pds.dataset(run_dir / "ledger").to_table().to_pandas().sort_values(["step", "round", "slot"])


def same_rows(a, b) -> None:
    assert len(a) == len(b) > 0
    for col in [c for c in COMPARED if c in a]:
        left, right = [_plain(v) for v in a[col]], [_plain(v) for v in b[col]]
        assert left == right, col


def _plain(v):
    return [round(float(x), 5) for x in v] if hasattr(v, "__len__") and not isinstance(v, str) else v


# ----------------------------------------------------------------------------- settings


def test_every_lab_setting_mirrors_its_train_py_key():
    defaults = {key: f.default for key, f, _ in declared(TrainConfig)}
    for name, (key, default, _) in LAB.items():
        assert CONFIG_ALIASES[name].target == key  # the alias table, read from schema.py's `trl` metadata
        assert default == defaults[key] or name == "pods_ledger", name  # PODSTrainer writes no files unasked
    fields = {f.name for f in dataclasses.fields(PODSConfig)}
    assert set(LAB) <= fields and {a for a in CONFIG_ALIASES if a.startswith("pods_")} <= fields


@pytest.mark.parametrize("kw, message", [
    (dict(pods_prompt_rule="gresso"), r"^unknown pods_prompt_rule 'gresso'; did you mean greso\? valid: none, band"),
    (dict(pods_allocation="greso"), r"pods_allocation=greso: greso is a prompt rule, not a allocation rule: set "
                                    r"pods_prompt_rule=greso"),
    (dict(pods_allocation_options={"screen": 2}), r"pods_allocation_options=\{'screen': 2\} is given but "
                                                  r"pods_allocation=none"),
    (dict(pods_allocation="ada", pods_rule="none", pods_m=N), r"pods_allocation=ada leaves prompts with unequal "
                                                             r"numbers of rollouts, so pods_rule=none"),
    (dict(pods_m_schedule="linear"), r"needs a horizon: set pods_m_horizon \(steps\) or max_steps"),
    (dict(pods_prompt_pool=0), r"^pods_prompt_pool must be an integer >= 1, got 0$"),
    (dict(pods_ledger=True, prompt_repeats=2), r"prompt_repeats=2 repeats TRL's sampler's prompts"),
    (dict(pods_allocation="speed", loss_type="grpo"), r"pods_allocation=speed trains a varying number of groups"),
    (dict(pods_allocation="ada", use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=True,
          vllm_importance_sampling_correction=False), r"vllm_enable_sleep_mode=True puts colocated vLLM to sleep"),
    (dict(pods_token_mask="entropy_top", top_entropy_quantile=0.5), r"set one of them"),
    (dict(pods_rule_scope="batch"), r"pods_rule_scope=batch ranks rollouts across the whole batch, which "
                                    r"pods_rule=max_variance does not"),
    (dict(pods_advantage_over="all"), r"^unknown pods_advantage_over 'all'; valid: kept, drawn$"),
], ids=["unknown-rule", "other-hook-kind", "options-without-rule", "compat", "no-horizon", "bound", "prompt-repeats",
        "row-mean-loss", "vllm-sleep", "two-token-masks", "batch-scope-rule", "advantage-over"])
def test_bad_lab_settings_get_train_py_sentences_in_trl_names(tmp_path, kw, message):
    with pytest.raises(ValueError, match=message):
        trl_args(tmp_path, max_steps=-1, **kw)


# ----------------------------------------------------------------------------- the same choices as train.py

FAST = dict(pods_prompt_rule="greso", pods_allocation="ada", pods_allocation_options={"round_n": 4},
            pods_rule="random")


def test_trl_and_train_py_make_the_same_choices_on_the_same_rewards(tmp_path, monkeypatch):
    """A prompt rule (its generator), an allocation rule's rounds and the `random` rule's draws, row for row."""
    ours = train_py(tmp_path, monkeypatch, FAST)
    t = trl_run(tmp_path / "trl", Scripted().reward(), max_steps=STEPS, **FAST)
    theirs = ledger(tmp_path / "trl")
    assert "reward/digits" in theirs
    same_rows(ours, theirs)
    assert "skipped" in set(theirs.status)  # GRESO skipped a prompt of the second epoch
    assert replay([tmp_path / "trl"], ["random", "greso"])[0]["agreement"] == 1.0  # its own rule, replayed
    row = t.state.log_history[-2]  # the last step's TRL log: the cost ledger's counts and running totals
    assert row["cost/rounds"] >= 2 and row["cost/tokens_generated_total"] == sum(
        sum(x) for x in theirs.length) and row["cost/rollouts_trained"] == B * M


SWEEP = {  # every rule whose choices depend only on the rewards and the seeds (docs/multi-gpu.md "The lab")
    **{rule: dict(pods_rule=rule) for rule in ("max_variance", "max_reward", "random", "percentile", "cppo",
                                               "balanced")},
    "none (m = n)": dict(pods_rule="none", pods_m=N),
    "band": dict(pods_prompt_rule="band", pods_prompt_rule_options={"low": 0.1, "high": 0.9}),
    "greso": dict(pods_prompt_rule="greso"),
    "mopps": dict(pods_prompt_rule="mopps", pods_prompt_pool=2),
    "snr_top_p": dict(pods_prompt_rule="snr_top_p"),
    "snr_top_k": dict(pods_prompt_rule="snr_top_k", pods_prompt_rule_options={"fraction": 0.5}),
    "speed": dict(pods_allocation="speed", pods_allocation_options={"screen": 2}),
    "ada": dict(pods_allocation="ada", pods_allocation_options={"round_n": 4}, pods_rule="balanced"),
    "ada_positive": dict(pods_allocation="ada_positive", pods_allocation_options={"round_n": 4}),
    "ada within a budget": dict(pods_allocation="ada", pods_allocation_options={"round_n": 4},
                                pods_allocation_budget=20),
    "m schedule": dict(pods_m_schedule="linear", pods_m_end=N, pods_m_horizon=3),
    "dynamic sampling": dict(pods_dynamic_sampling=True, pods_max_generation_rounds=3),
    "dynamic sampling, top_up": dict(pods_dynamic_sampling=True, pods_max_generation_rounds=2,
                                     pods_short_batch="top_up", pods_dynamic_sampling_metric="total"),
    "cppo over the batch": dict(pods_rule="cppo", pods_rule_scope="batch", pods_advantage_over="drawn"),
    "ada, advantages over drawn": dict(pods_allocation="ada", pods_allocation_options={"round_n": 4},
                                       pods_rule="balanced", pods_advantage_over="drawn", scale_rewards="none"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SWEEP))
def test_every_deterministic_rule_makes_train_pys_choices(tmp_path, monkeypatch, name):
    kw = SWEEP[name]
    ours = train_py(tmp_path, monkeypatch, kw)
    trl_run(tmp_path / "trl", Scripted().reward(), max_steps=STEPS, **kw)
    same_rows(ours, ledger(tmp_path / "trl"))


# ----------------------------------------------------------------------------- resume, budget, logs


class CrashAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt  # as a kill after checkpoint-<step>: the step in progress never finishes


def text_reward(completions, **kwargs):  # a reward of the text itself: the same completions, the same rewards
    return [float(sum(map(ord, c)) % 3 == 0) for c in completions]


def test_a_resumed_lab_run_equals_the_uninterrupted_one(tmp_path):
    kw = dict(FAST, save_strategy="steps", save_steps=1, max_completion_length=4)
    whole = trl_run(tmp_path / "a", text_reward, **kw)
    with pytest.raises(KeyboardInterrupt):
        trl_run(tmp_path / "b", text_reward, callbacks=[CrashAt(2)], **kw)
    assert (tmp_path / "b/checkpoint-2/lab.pt").is_file()
    resumed = trl_run(tmp_path / "b", text_reward, resume=str(tmp_path / "b/checkpoint-2"), **kw)
    a, b = ledger(tmp_path / "a"), ledger(tmp_path / "b")
    same_rows(a, b)
    assert [list(x) for x in a["reward/text_reward"]] == [list(x) for x in b["reward/text_reward"]]
    assert [list(x) for x in a.length] == [list(x) for x in b.length] and b.step.tolist() == a.step.tolist()
    assert all(torch.equal(p, q) for p, q in zip(whole.model.parameters(), resumed.model.parameters()))
    assert whole._pods_books.totals == resumed._pods_books.totals  # the cost ledger continued from the checkpoint


def test_a_resume_reads_the_ledger_back_as_train_py_does(tmp_path):
    """Resumed from an earlier checkpoint: the later steps' rows go and are recorded again (each step once); a
    checkpoint that recorded another ledger's id is refused before training and by the command's plan, nothing
    changed; resumed with the ledger off, the index records the steps as a gap."""
    kw = dict(FAST, save_strategy="steps", save_steps=2, max_steps=3)
    trl_run(tmp_path, text_reward, **kw)
    first = ledger(tmp_path)
    assert sorted(set(first.step)) == [1, 2, 3]
    trl_run(tmp_path, text_reward, resume=str(tmp_path / "checkpoint-2"), **kw)
    same_rows(first, ledger(tmp_path))  # step 3 dropped, then recorded again: once
    assert read_back(tmp_path / "ledger").problems() == []

    lab = tmp_path / "checkpoint-2" / "lab.pt"
    torch.save({**torch.load(lab, weights_only=True), "ledger_id": "0123456789abcdef"}, lab)
    files = {p: p.read_bytes() for p in (tmp_path / "ledger").rglob("*") if p.is_file()}
    refused = r"is another run's ledger: it records ledger id \w+ \(this run's checkpoint recorded 0123456789abcdef\)"
    with pytest.raises(CheckpointError, match=refused + r".*or set trl\.pods_ledger=false"):
        check_ledger(tmp_path, Plan("resume", tmp_path / "checkpoint-2", 2), {"trl": {"pods_ledger": True}})
    with pytest.raises(CheckpointError, match=refused + r".*or set pods_ledger=false"):
        trl_run(tmp_path, text_reward, resume=str(tmp_path / "checkpoint-2"), **kw)
    assert {p: p.read_bytes() for p in (tmp_path / "ledger").rglob("*") if p.is_file()} == files

    trl_run(tmp_path, text_reward, resume=str(tmp_path / "checkpoint-2"), **{**kw, "pods_ledger": False})
    held = read_back(tmp_path / "ledger")
    assert held.gaps() == [(3, None, OFF)] and held.problems() == [] and sorted(set(ledger(tmp_path).step)) == [1, 2]


def test_cppo_over_the_batch_with_advantages_over_every_drawn_rollout(tmp_path):
    """pods_rule_scope=batch keeps the B x m rollouts of largest |A| of the whole step; pods_advantage_over=drawn:
    their advantages are (r - mean) / (std + 1e-4) over each prompt's n drawn (TRL's scale_rewards=group)."""
    import pandas

    trl_run(tmp_path, text_reward, max_steps=1, log_completions=True, pods_rule="cppo", pods_rule_scope="batch",
            pods_advantage_over="drawn", max_completion_length=6)
    table = pandas.read_parquet(tmp_path / "completions" / "completions_00001.parquet")
    r = torch.tensor(table.text_reward.to_numpy()).view(B, N)  # the step's one round, group-major
    want = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)  # [B, N]
    kept = torch.tensor(table.pods_kept.to_numpy()).view(B, N)
    got = torch.tensor(table.advantage.to_numpy()).view(B, N)
    assert int(kept.sum()) == B * M and torch.allclose(got[kept], want[kept].double(), atol=1e-5)
    top = want.abs().flatten().sort(descending=True).values[:B * M]  # the batch's largest |A| (ties: any)
    assert torch.allclose(want[kept].abs().sort(descending=True).values, top)
    rows = ledger(tmp_path)
    assert sorted(len(k) for k in rows.kept) == sorted(int(c) for c in kept.sum(1))  # each group's own


def test_the_token_budget_stops_after_the_first_step_that_reaches_it(tmp_path):
    t = trl_run(tmp_path, text_reward, max_steps=6, pods_token_budget=70.0, pods_token_budget_weight=0.5,
                save_strategy="steps", save_steps=100, pods_ledger=False)
    rows = [r for r in t.state.log_history if "cost/tokens_generated" in r]
    costs = [spent(r, 0.5) for r in rows]
    assert 1 < t.state.global_step < 6 and costs[-1] >= 70.0 > costs[-2]  # train.py's point (pods.run.budget)
    assert (tmp_path / f"checkpoint-{t.state.global_step}").is_dir()  # the last step is saved


@pytest.mark.parametrize("lab", [False, True], ids=["trl-sampler", "lab"])
def test_the_completions_log_shows_what_was_trained(tmp_path, lab):
    import pandas

    kw = dict(FAST) if lab else dict(pods_ledger=False)
    t = trl_run(tmp_path, text_reward, max_steps=1, log_completions=True, **kw)
    table = pandas.read_parquet(tmp_path / "completions" / "completions_00001.parquet")
    kept = table[table.pods_kept]
    assert len(kept) == B * M and table.advantage[~table.pods_kept].isna().all()
    if lab:
        got = t.pods_last_batch
        assert len(table) == int(sum(rnd.drawn().sum() for rnd, _, _ in got["batch"].seen))
        want = sorted(round(float(a), 5) for a in got["advantages"].flatten())
    else:
        assert len(table) == B * N
        want = sorted(round(float(a), 5) for a in t.pods_last_selection["advantages"].flatten())
    assert sorted(round(float(a), 5) for a in kept.advantage) == want


@pytest.mark.bench
def test_ledger_overhead_in_a_trl_step(tmp_path, monkeypatch):
    """The rollout ledger's share of a lab step on lab-cpu.yaml's shape (16 prompts, n = 16 with Reinforce-Ada's
    rounds of 8, m = 4, GRESO; tiny random model): building and buffering the rows (pods/ledger_seconds) and the
    Parquet flushes (before each checkpoint), against TRL's step_time. Printed; docs/multi-gpu.md keeps the numbers."""
    import statistics
    import time

    from pods.core.ledger_writer import Ledger

    flushes = []
    flush = Ledger.flush

    def timed(self):
        start = time.perf_counter()
        flush(self)
        flushes.append(time.perf_counter() - start)

    monkeypatch.setattr(Ledger, "flush", timed)
    steps = 24
    t = trl_run(tmp_path, text_reward, num_prompts=256, max_steps=steps, per_device_train_batch_size=16 * 16,
                num_generations=16,
                pods_rule="balanced", pods_prompt_rule="greso", pods_allocation="ada",
                pods_allocation_options={"round_n": 8}, max_completion_length=6, save_strategy="steps", save_steps=8)
    logs = [r for r in t.state.log_history if "pods/ledger_seconds" in r][2:]  # after warm-up
    record = statistics.median(r["pods/ledger_seconds"] for r in logs)
    step = statistics.median(r["step_time"] for r in logs)
    size = sum(p.stat().st_size for p in (tmp_path / "ledger").glob("*.parquet"))
    print(f"\nledger in a TRL lab step: rows + buffering {1000 * record:.2f} ms ({100 * record / step:.2f} % of a "
          f"{step:.2f} s step); {len(flushes)} flushes, {1000 * sum(flushes) / steps:.2f} ms per step "
          f"({100 * sum(flushes) / steps / step:.2f} %); {size / steps * 1000 / 1e6:.2f} MB per 1,000 steps; "
          f"load {os.getloadavg()[0]:.2f}")


@pytest.mark.parametrize("mask", ["entropy_top", "adv_entropy_top"])
def test_a_token_mask_trains_the_chosen_share_of_tokens(tmp_path, mask):
    t = trl_run(tmp_path, text_reward, max_steps=1, pods_ledger=False, pods_token_mask=mask,
                pods_token_mask_quantile=0.25, max_completion_length=8)
    assert t.top_entropy_quantile == 0.25  # TRL's own mask machinery, fed pods' quantile
    row = next(r for r in t.state.log_history if "cost/tokens_trained" in r)
    kept_tokens = B * M * 8  # the tiny random model rarely stops early; the mask keeps about a quarter
    assert 0 < row["cost/tokens_trained"] < 0.5 * kept_tokens
