"""The leaderboard's protocol: arms, tiers, each run's train.py and evaluation overrides, and when a run is done.

    arms = resolve_arms(["grpo", "pods", "maxr:rl.n=64 rl.m=16 rl.rule=max_reward"])   # name -> Arm
    tier = TIERS["cpu"].quick() ;  cfg = arm_config(tier, arm, seed=0)                   # composed and checked
    train_overrides(tier, arm, seed, runs_dir, model_dir)   # train.py's arguments: the same budget for every arm
    evaluate_both(run_dir, tier)                            # eval_results.json (sampled) + eval_greedy.json

Contract: every arm of a tier runs on the same budget (rl.token_budget: tokens with rl.token_budget_weight = the
tier's w, or modelled seconds on the tier's profile, rl.budget_cost=seconds; `tier.meter` prices a run's rows the
same way), checkpoints at the same budget points (rl.save_tokens) and is evaluated on the same held-out problems with the
same evaluation seeds; seed s gives every arm the same prompt stream and warm start. An arm that sets a key the tier
sets for every arm is a ConfigError (the tier would override it silently). An arm whose `needs` key is refused by
the config checks (not wired in the loop yet) is unavailable, reported, never faked; any other refused arm is a
ConfigError. docs/leaderboard.md.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from pods.config.checks import validate
from pods.config.files import compose, quote
from pods.core import profiles
from pods.core.reference import runs_reference
from pods.core.timing import Meter
from pods.errors import ConfigError
from pods.evaluation import evaluate_run


@dataclass(frozen=True)
class Arm:
    label: str  # the table's name
    overrides: tuple[str, ...]  # train.py overrides on top of the tier's
    needs: str | None = None  # a config key this arm uses that a build may not wire yet (then: unavailable)
    prompts_factor: int = 1  # prompts per step: this many times the tier's (CPPO's allocation draws B / (1 - P))


ARMS = {  # the lab's names (docs/rules.md); the published setting each reproduces: docs/leaderboard.md
    "grpo": Arm("GRPO 16/16", ("rl.n=16", "rl.m=16", "rl.rule=none")),
    "grpo-ds": Arm("GRPO 16/16 + DS", ("rl.n=16", "rl.m=16", "rl.rule=none", "rl.dynamic_sampling=true")),
    "pods": Arm("PODS 64->16", ("rl.n=64", "rl.m=16", "rl.rule=max_variance")),
    "pods-ds": Arm("PODS 64->16 + DS", ("rl.n=64", "rl.m=16", "rl.rule=max_variance", "rl.dynamic_sampling=true")),
    "random": Arm("random 64->16 (control)", ("rl.n=64", "rl.m=16", "rl.rule=random")),
    "greso": Arm("GRESO (GRPO 16/16 + DS)", ("rl.n=16", "rl.m=16", "rl.rule=none", "rl.dynamic_sampling=true",
                                             "rl.prompt_rule=greso")),
    # CPPO's GSM8K recipe: G = 16, pruning rate 1/2 over the whole batch, 2 x the prompts (trained: B x 16, as GRPO)
    "cppo": Arm("CPPO 16, half pruned over 2x the prompts", ("rl.n=16", "rl.m=8", "rl.rule=cppo", "rl.rule_scope=batch",
                                                             "rl.advantage_over=drawn"), prompts_factor=2),
    "reinforce-ada": Arm("Reinforce-Ada (ada, balanced 16 of <= 64, global mean)",
                         ("rl.n=64", "rl.m=16", "rl.rule=balanced", "rl.allocation=ada",
                          "rl.allocation_options={round_n: 16}", "rl.advantage_over=drawn", "rl.scale_rewards=none"),
                         needs="rl.allocation"),
    "gfpo": Arm("GFPO length 64->16", ("rl.n=64", "rl.m=16", "rl.rule=gfpo_length")),
}
BASELINE = "grpo"
W_CPU = 1.7  # update s per trained token / generation s per generated token, demo on 2 cores (docs/leaderboard.md)
W_GPU = 2.1  # the same, fitted to the paper's GSM8K step rates on an L40S (docs/leaderboard.md)


@dataclass(frozen=True)
class Tier:
    name: str
    overrides: tuple[str, ...]  # the tier's train.py overrides (experiment, model, ...)
    budget: float  # per run, in `cost`'s unit: tokens generated + weight x tokens trained, or modelled seconds
    points: int  # budget points (checkpoints, evaluations) after the warm start
    seeds: int
    weight: float  # w of the token cost
    dataset: str  # held-out dataset of the evaluation
    eval_size: int | None  # held-out problems (None: the whole test split)
    draws: int  # samples per problem for sampled pass@1
    max_tokens: int  # evaluation tokens per answer
    cuda: bool  # validate the arms as on a GPU machine
    gpu: str | None = None  # the memory preflight's GPU
    cost: str = "tokens"  # tokens | seconds (modelled on `profile`: pods.core.timing)
    profile: str | None = None  # the machine profile of cost=seconds (None: the tier's machine's, for_machine)
    budgets: tuple[tuple[str, float], ...] = ()  # (cost, budget) of each cost the tier knows a budget for
    # seconds of one run = fixed + per x budget, budget in `cost`'s unit (CPU seconds on a CPU tier, GPU hours'
    # seconds on a GPU tier); None: not measured
    run_seconds: tuple[float, float] | None = None
    spread: float | None = None  # seed-to-seed SD of a paired difference to GRPO, greedy, points (measured)

    def budget_in(self, cost: str) -> float | None:
        """The tier's budget in `cost`'s unit (None: it has none)."""
        return dict(self.budgets).get(cost)

    def meter(self, reference: bool = False) -> Meter:
        """A run's cost function on this tier (reference: the run makes a reference pass)."""
        if self.cost == "seconds":
            return Meter(constants=profiles.load(self.profile).constants, reference=reference)
        return Meter(weight=self.weight)

    def quick(self) -> Tier:
        """A first look: a fifth of the budget, 4 points, 3 seeds, 500 problems."""
        return dataclasses.replace(self, name=f"{self.name}-quick", budget=self.budget / 5, points=4, seeds=3,
                                   eval_size=min(self.eval_size or 500, 500),
                                   budgets=tuple((c, b / 5) for c, b in self.budgets))


TIERS = {
    # GRPO 16/16 spends ~1,290 x (1 + w) = 3,500 per demo step: 1.2 M is about its 340 steps. The first 1,024
    # training problems only, for every arm: the runs meet each prompt again (GRPO: ~5 epochs), as on GSM8K,
    # so a history-based prompt rule (GRESO) has histories to act on
    # run_seconds: 80 CPU s a run at 1.2 M, 32 at --quick's 240,000 (training, evaluation, start-up; 2 cores,
    # docs/leaderboard.md); spread: the median over arms at 10 seeds (2.6 at --quick's 3 seeds)
    "cpu": Tier("cpu", ("experiment=demo", "dataset.limit=1024"), budget=1.2e6, points=10, seeds=5, weight=W_CPU, dataset="arithmetic",
                eval_size=1000, draws=2, max_tokens=6, cuda=False, budgets=(("tokens", 1.2e6),), run_seconds=(20.0, 5e-5),
                spread=2.1),
    # the paper's 6 h on an L40S, modelled (l40s-unsloth: what a step costs there, from its counts); in tokens:
    # ~2,900 GRPO steps x 16 completions x ~250 tokens x (1 + w); run_seconds: a run trains about its budget of
    # modelled seconds (the evaluation not counted)
    "gpu": Tier("gpu", ("experiment=gsm8k_main",), budget=21600, points=12, seeds=5, weight=W_GPU, dataset="gsm8k",
                eval_size=None, draws=1, max_tokens=512, cuda=True, gpu="L40S", cost="seconds",
                profile="l40s-unsloth", budgets=(("seconds", 21600), ("tokens", 36e6)), run_seconds=(0.0, 1.0)),
}


T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}  # Student t's 97.5 % quantile by degrees of freedom


def wall_seconds(tier: Tier, runs: int, jobs: int, cores: int) -> float | None:
    """Estimated wall time of `runs` runs of `tier`, `jobs` at a time, from its measured seconds per run (a CPU tier
    runs min(jobs, cores) at once, a GPU tier one at a time on its GPU); None when the tier has no measurement."""
    if tier.run_seconds is None:
        return None
    fixed, per = tier.run_seconds
    return runs * (fixed + per * tier.budget) / (1 if tier.gpu else max(1, min(jobs, cores)))


def few_seeds(tier: Tier) -> str | None:
    """A warning for fewer than 3 seeds: the 95 % interval's width they imply (t(1): +-9 SDs), else None."""
    if tier.seeds >= 3:
        return None
    k = tier.seeds
    wide = T975[k - 1] / k**0.5
    width = f"; at this tier's measured spread ({tier.spread:g} points) that is +-{wide * tier.spread:.0f} points" \
        if tier.spread else ""
    return (f"warning: {k} seeds: a paired 95 % interval is +-t({k - 1}) x SD / sqrt({k}) = +-{wide:.1f} seed-to-seed "
            f"SDs wide, {wide / (T975[4] / 5**0.5):.0f}x the protocol's 5 seeds{width}; use --seeds 3 or more")


def resolve_arms(specs: list[str]) -> dict[str, Arm]:
    """Arm names (ARMS) or custom arms `name:override override ...`; a ConfigError for an unknown name."""
    arms = {}
    for spec in specs:
        if ":" in spec:
            name, text = spec.split(":", 1)
            if not name or not text.split():
                raise ConfigError(f"arm {spec!r}: a custom arm is NAME:key=value [key=value ...]")
            arms[name] = Arm(name, tuple(text.split()))
        elif spec in ARMS:
            arms[spec] = ARMS[spec]
        else:
            close = difflib.get_close_matches(spec, ARMS, n=2)
            raise ConfigError(f"unknown arm {spec!r}" + (f"; did you mean {' or '.join(close)}?" if close else "")
                              + f" (arms: {', '.join(ARMS)}; or NAME:key=value ... for your own)")
    if BASELINE not in arms:
        raise ConfigError(f"the arms must include {BASELINE!r}: every arm is compared with it, paired by seed")
    return arms


def budget_overrides(tier: Tier) -> list[str]:
    cost = ([f"rl.token_budget_weight={tier.weight:g}"] if tier.cost == "tokens" else
            ["rl.budget_cost=seconds", f"rl.budget_profile={tier.profile}"])
    return ["rl.max_steps=null", "rl.max_time=null", "rl.save_strategy=no", "rl.save_final=true",
            f"rl.token_budget={tier.budget:g}", *cost, f"rl.save_tokens={tier.budget / tier.points:g}"]


def train_overrides(tier: Tier, arm: Arm, seed: int, runs_dir: Path | None, model_dir: Path | None,
                    run_name: str) -> list[str]:
    """train.py's overrides for one arm x seed: the tier, the arm, the budget, the seed, the shared warm start."""
    start = [f"model.name={quote(model_dir)}", "warmstart=null"] if model_dir is not None else []
    out = [f"output_root={quote(runs_dir)}"] if runs_dir is not None else []
    return [*tier.overrides, *arm_overrides(tier, arm), *budget_overrides(tier), f"seed={seed}",
            "logging.samples_every=0", "logging.progress=false", "evaluation=null", *start, *out, f"run_name={run_name}"]


def arm_overrides(tier: Tier, arm: Arm) -> list[str]:
    """The arm's own overrides on the tier: its list, and its prompts per step where it draws more than the tier's."""
    more = [f"rl.prompts_per_step={arm.prompts_factor * tier_prompts(tier)}"] if arm.prompts_factor != 1 else []
    return [*arm.overrides, *more]


@functools.lru_cache(maxsize=None)
def tier_prompts(tier: Tier) -> int:
    """B, the prompts per step of the tier's runs (its composed config)."""
    return int(compose(list(tier.overrides)).rl.prompts_per_step)


def _key(override: str) -> str:
    """The key an override sets: `key=v`, `+key=v`, `~key`."""
    return override.split("=", 1)[0].lstrip("+~")


def tier_keys(tier: Tier) -> dict[str, str]:
    """{key: override} of what the tier sets for every arm (its overrides, budget, seed, logging, start, output)."""
    return {_key(o): o for o in train_overrides(tier, Arm("", ()), 0, Path("runs"), Path("model"), "run")}


def arm_config(tier: Tier, arm: Arm, name: str):
    """The arm's composed config, checked as train.py checks it (ConfigError naming the arm)."""
    fixed = tier_keys(tier)
    if arm.prompts_factor != 1:  # the arm's own batch: it may not set it too
        fixed["rl.prompts_per_step"] = f"rl.prompts_per_step={arm.prompts_factor * tier_prompts(tier)}"
    clash = [o for o in arm.overrides if _key(o) in fixed]
    if clash:
        raise ConfigError(f"arm {name}: {' '.join(clash)} sets what the {tier.name} tier sets for every arm "
                          f"({' '.join(fixed[_key(o)] for o in clash)}), which would override it without a word: the "
                          "arms are compared on one budget, seeds, data and evaluation. Drop it from the arm (the "
                          "budget: --budget, --points, --weight; seeds: --seeds)")
    try:
        cfg = compose(train_overrides(tier, arm, 0, None, None, name))
    except Exception as err:  # Hydra's composition errors: an unknown key or group option
        raise ConfigError(f"arm {name}: cannot compose its config: {str(err).splitlines()[0]}") from err
    try:
        validate(cfg, cuda=tier.cuda)
    except ConfigError as err:
        raise ConfigError(f"arm {name} ({' '.join(arm.overrides)}): {err}") from err
    return cfg


def eval_overrides(tier: Tier, run_dir: Path, greedy: bool) -> list[str]:
    """config/evaluate.yaml overrides: the same problems and evaluation seeds for every run of the tier."""
    limit = f",limit:{tier.eval_size}" if tier.eval_size else ""
    ov = [f"run_dir={quote(run_dir)}", f"max_tokens={tier.max_tokens}", "seed=1234", "base=true", "examples=0",
          "paper_grader=null", f"datasets=[{{name:{tier.dataset}{limit},format_reward:null}}]"]
    if tier.name.startswith("cpu"):
        ov.append("batch_size=2000")
    if greedy:
        return ov + ["temperature=0", "repeats=1", f"output={run_dir / 'eval_greedy.json'}"]
    return ov + ["temperature=1.0", f"repeats={tier.draws}"]


def evaluate_both(run_dir: Path, tier: Tier) -> None:
    """Sampled pass@1 (eval_results.json) and greedy accuracy (eval_greedy.json) of every checkpoint and the base."""
    for greedy in (False, True):
        evaluate_run(run_dir, compose(eval_overrides(tier, run_dir, greedy), name="evaluate"))


def trained(run_dir: Path, tier: Tier) -> bool:
    """The run has reached the budget and checkpointed it (its last metrics row is at the budget)."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return False
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]
    return bool(rows) and tier.meter(makes_reference(run_dir))(rows[-1]) >= tier.budget and (
        run_dir / f"checkpoint-{rows[-1]['step']}").is_dir()


def makes_reference(run_dir: Path) -> bool:
    """The run makes a reference pass each step (its config.yaml's rl.beta and rl.reference_pass)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return False
    rl = OmegaConf.load(path).rl
    return runs_reference(float(rl.beta), str(rl.get("reference_pass", "auto")))


def evaluated(run_dir: Path) -> bool:
    """Both results files hold the base model and every checkpoint of the run."""
    want = {"base", *(p.name for p in run_dir.glob("checkpoint-*") if p.is_dir())}
    for name in ("eval_results.json", "eval_greedy.json"):
        try:
            if not want <= set(json.loads((run_dir / name).read_text())):
                return False
        except (OSError, ValueError):
            return False
    return True
