"""Prompt rules: which prompts of a candidate pool to generate for (and train on), from a per-prompt history.

    rule = make_prompt_rule("greso", num_prompts=P)          # PROMPT_RULES[name](num_prompts=P, **params)
    pos = rule.choose(candidates, k, generator)              # [C] dataset indices -> [K <= k] positions, before generation
    rule.update(prompts, correct)                            # [B], [B, n] accuracy 0/1 of every generated group
                                                             # (NaN: a rollout an allocation rule did not draw)
    keep = rule.keep(rewards)                                # [G, n] -> [G] bool, after generation (group filter)
    state = rule.state_dict(); rule.load_state_dict(state)   # plain tensors and numbers: the checkpoint's

Contract: `choose` returns ascending positions into `candidates` (filters: the first k not skipped; selectors
(`selects`): exactly min(k, C), so they need a pool of more than k to choose from); all its randomness comes from `generator`, so the same history and generator state give
the same choice (kill -9 and resume). `update` is called once per step with every group generated that step.
`keep` filters the step's generated groups (RAGEN's SNR filter acts there). Papers and code: docs/rules.md.
"""

from __future__ import annotations

import math

import torch

from pods.core.registry import lookup, registrar

PROMPT_RULES: dict[str, type["PromptRule"]] = {}


prompt_rule = registrar(PROMPT_RULES)  # @prompt_rule("band") where a rule is implemented


def make_prompt_rule(name: str, num_prompts: int, **params) -> "PromptRule":
    """PROMPT_RULES[name](num_prompts, **params); a ValueError names the nearest rule or the bad parameter."""
    cls = lookup("prompt rule", name, PROMPT_RULES)
    try:
        return cls(num_prompts, **params)
    except TypeError as err:
        raise ValueError(f"prompt rule {name!r}: {err}") from None


@prompt_rule("none")
class PromptRule:
    """Every candidate, in order (today's behaviour); no history. Subclasses override what they change."""

    version = 1
    selects = False  # True: `choose` picks k of a larger pool (rl.prompt_pool >= 2); False: it walks the stream

    def __init__(self, num_prompts: int):
        if isinstance(num_prompts, bool) or not isinstance(num_prompts, int) or num_prompts < 1:
            raise ValueError(f"num_prompts must be the dataset size, an integer >= 1, got {num_prompts!r}")
        self.num_prompts = num_prompts

    def choose(self, candidates: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """[C] dataset indices -> int64 [K] ascending positions into candidates, K <= k."""
        return torch.arange(min(k, len(self._check(candidates))))

    def update(self, prompts: torch.Tensor, correct: torch.Tensor, epoch: int | None = None) -> None:
        """Record [B] prompts' [B, n] accuracy (0/1 or bool; NaN pads rows of fewer rollouts) for the step; epoch:
        the data epoch, if known."""

    def keep(self, rewards: torch.Tensor) -> torch.Tensor:
        """[G, n] rewards of the step's generated groups -> [G] bool, the groups to train on."""
        return torch.ones(rewards.shape[0], dtype=torch.bool)

    def state_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "num_prompts": self.num_prompts, **self._state()}

    def load_state_dict(self, state: dict) -> None:
        mine = (self.name, self.version, self.num_prompts)
        theirs = (state.get("name"), state.get("version"), state.get("num_prompts"))
        if mine != theirs:
            raise ValueError(f"prompt rule state is for (rule, version, prompts) = {theirs}, this run has {mine}: "
                             "resume with the run's rl.prompt_rule and dataset, or start a new run")
        self._load({k: v for k, v in state.items() if k not in ("name", "version", "num_prompts")})

    def _state(self) -> dict:
        return {}

    def _load(self, state: dict) -> None:
        pass

    def _check(self, prompts: torch.Tensor) -> torch.Tensor:
        prompts = torch.as_tensor(prompts, dtype=torch.long).flatten()
        if len(prompts) and (prompts.min() < 0 or prompts.max() >= self.num_prompts):
            raise ValueError(f"prompt indices must be in 0..{self.num_prompts - 1} (the dataset), "
                             f"got {prompts.min().item()}..{prompts.max().item()}")
        return prompts

    def _pass_rates(self, prompts, correct) -> tuple[torch.Tensor, torch.Tensor]:
        prompts, correct = self._check(prompts), torch.as_tensor(correct).float()
        if correct.dim() != 2 or correct.shape[0] != len(prompts):
            raise ValueError(f"correct must be [B, n] for the B={len(prompts)} prompts, got {tuple(correct.shape)}")
        return prompts, correct.nanmean(dim=1)  # [B], [B] (NaN: a rollout an allocation rule did not draw)


def _first_kept(kept: torch.Tensor, k: int) -> torch.Tensor:
    """[C] bool -> the ascending positions of the first k True."""
    return kept.nonzero().flatten()[:k]


@prompt_rule("band")
class Band(PromptRule):
    """Online difficulty filtering (arXiv 2504.03380) before generation: skip a prompt whose last pass rate
    lies outside (low, high) (defaults: all right or all wrong last time); never-seen prompts are kept."""

    def __init__(self, num_prompts: int, low: float = 0.0, high: float = 1.0):
        super().__init__(num_prompts)
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"band needs 0 <= low < high <= 1, got low={low}, high={high}")
        self.low, self.high = float(low), float(high)
        self.pass_rate = torch.full((num_prompts,), math.nan)  # [P] last pass rate, NaN: never seen

    def choose(self, candidates, k, generator=None):
        p = self.pass_rate[self._check(candidates)]  # [C]
        return _first_kept(torch.isnan(p) | ((p > self.low) & (p < self.high)), k)

    def update(self, prompts, correct, epoch=None):
        prompts, rate = self._pass_rates(prompts, correct)
        self.pass_rate[prompts] = rate

    def _state(self):
        return {"pass_rate": self.pass_rate.clone()}

    def _load(self, state):
        self.pass_rate = state["pass_rate"].clone().float()


@prompt_rule("greso")
class Greso(PromptRule):
    """GRESO (arXiv 2506.02177): skip a prompt with probability 1 - max(p^k, 0.01), k = its streak of consecutive
    easy (pass rate >= easy_at: p_easy) or hard (pass rate <= hard_at: p_hard) groups; p_easy / p_hard move 0.01 per
    step toward target/3 all-correct and 2*target/3 all-wrong groups among those generated, within [min_p, max_p].
    Their thresholds 0.98 / 0.11 are all correct / all wrong for n <= 9 (docs/rules.md)."""

    def __init__(self, num_prompts: int, p_easy: float = 0.5, p_hard: float = 0.5, target_zero_variance: float = 0.25,
                 min_p: float = 0.05, max_p: float = 0.95, step: float = 0.01, floor: float = 0.01,
                 easy_at: float = 0.98, hard_at: float = 0.11):
        super().__init__(num_prompts)
        if not (0 < min_p <= max_p <= 1 and min_p <= p_easy <= max_p and min_p <= p_hard <= max_p):
            raise ValueError(f"greso needs 0 < min_p <= p_easy, p_hard <= max_p <= 1, got min_p={min_p}, "
                             f"p_easy={p_easy}, p_hard={p_hard}, max_p={max_p}")
        if not 0 <= hard_at < easy_at <= 1:
            raise ValueError(f"greso needs 0 <= hard_at < easy_at <= 1 (pass rates: at most hard_at is hard, at least "
                             f"easy_at easy), got hard_at={hard_at}, easy_at={easy_at}")
        self.p_easy, self.p_hard = float(p_easy), float(p_hard)
        self.easy_at, self.hard_at = float(easy_at), float(hard_at)
        self.target_easy, self.target_hard = target_zero_variance / 3, target_zero_variance * 2 / 3
        self.min_p, self.max_p, self.step, self.floor = float(min_p), float(max_p), float(step), float(floor)
        self.easy = torch.zeros(num_prompts, dtype=torch.long)  # [P] consecutive easy groups, latest last
        self.hard = torch.zeros(num_prompts, dtype=torch.long)  # [P] consecutive hard groups
        self.seen = torch.zeros(num_prompts, dtype=torch.bool)

    def skip_probability(self, prompts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[C] -> ([C], [C]): the easy and the hard skip probability of each prompt (0 with no streak)."""
        prompts = self._check(prompts)
        skip = lambda p, k: 1 - torch.clamp(torch.pow(p, k.double()), min=self.floor)  # noqa: E731
        return skip(self.p_easy, self.easy[prompts]), skip(self.p_hard, self.hard[prompts])

    def choose(self, candidates, k, generator=None):
        easy, hard = self.skip_probability(candidates)  # [C] each
        u = torch.rand(len(easy), 2, generator=generator, dtype=torch.float64)  # one draw per test, always
        return _first_kept(~((u[:, 0] < easy) | (u[:, 1] < hard)), k)

    def update(self, prompts, correct, epoch=None):
        prompts, rate = self._pass_rates(prompts, correct)
        had_history = bool(self.seen[prompts].any())
        easy, hard = rate >= self.easy_at, rate <= self.hard_at  # [B] the skip tests' streaks (their thresholds)
        all_right, all_wrong = rate >= 1.0, rate <= 0.0  # [B] the adaptation's counts (theirs: all 1 / all 0.1)
        for b in range(len(prompts)):  # in order: a prompt drawn twice in a step extends its streak twice
            i = prompts[b]
            self.easy[i] = self.easy[i] + 1 if easy[b] else 0
            self.hard[i] = self.hard[i] + 1 if hard[b] else 0
        self.seen[prompts] = True
        if (epoch > 0) if epoch is not None else had_history:  # GRESO adapts from the second epoch on
            move = lambda p, ratio, target: (max(p - self.step, self.min_p) if ratio >= target  # noqa: E731
                                             else min(p + self.step, self.max_p))
            self.p_easy = move(self.p_easy, float(all_right.float().mean()), self.target_easy)
            self.p_hard = move(self.p_hard, float(all_wrong.float().mean()), self.target_hard)

    def _state(self):
        return {"easy": self.easy.clone(), "hard": self.hard.clone(), "seen": self.seen.clone(),
                "p_easy": self.p_easy, "p_hard": self.p_hard}

    def _load(self, state):
        self.easy, self.hard, self.seen = state["easy"].clone(), state["hard"].clone(), state["seen"].clone()
        self.p_easy, self.p_hard = float(state["p_easy"]), float(state["p_hard"])


@prompt_rule("mopps")
class MoPPS(PromptRule):
    """MoPPS (arXiv 2507.04632): a Beta(alpha, beta) posterior of each prompt's pass rate; Thompson-sample a
    rate per candidate and keep the k closest to `target` (their `topk` strategy). update: alpha <- decay *
    alpha + (1 - decay) * prior + pass_rate * n (beta: the failures)."""

    selects = True
    def __init__(self, num_prompts: int, target: float = 0.5, prior_alpha: float = 1.0, prior_beta: float = 1.0,
                 decay: float = 1.0):
        super().__init__(num_prompts)
        if not (0 <= target <= 1 and prior_alpha > 0 and prior_beta > 0 and 0 <= decay <= 1):
            raise ValueError(f"mopps needs target in [0, 1], priors > 0, decay in [0, 1]; got target={target}, "
                             f"prior_alpha={prior_alpha}, prior_beta={prior_beta}, decay={decay}")
        self.target, self.decay = float(target), float(decay)
        self.prior = (float(prior_alpha), float(prior_beta))
        self.alpha = torch.full((num_prompts,), self.prior[0], dtype=torch.float64)  # [P]
        self.beta = torch.full((num_prompts,), self.prior[1], dtype=torch.float64)  # [P]

    def sample(self, candidates: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """[C] -> [C] pass rates drawn from each prompt's posterior, reproducibly from `generator`."""
        candidates = self._check(candidates)
        # torch.distributions.Beta takes no generator; the Gamma sampler under it does: Beta = X / (X + Y)
        x = torch._standard_gamma(self.alpha[candidates], generator=generator)  # [C]
        y = torch._standard_gamma(self.beta[candidates], generator=generator)
        return x / (x + y)

    def choose(self, candidates, k, generator=None):
        theta = self.sample(candidates, generator)  # [C]
        order = torch.sort((theta - self.target) ** 2, stable=True)[1][:k]
        return order.sort()[0]

    def update(self, prompts, correct, epoch=None):
        prompts, rate = self._pass_rates(prompts, correct)
        drawn = (~torch.as_tensor(correct).float().isnan()).sum(dim=1)  # [B] rollouts of each prompt
        for b in range(len(prompts)):  # a prompt twice in a step: both updates, in order
            i, s, n = prompts[b], float(rate[b]), int(drawn[b])
            self.alpha[i] = self.alpha[i] * self.decay + self.prior[0] * (1 - self.decay) + s * n
            self.beta[i] = self.beta[i] * self.decay + self.prior[1] * (1 - self.decay) + (1 - s) * n

    def _state(self):
        return {"alpha": self.alpha.clone(), "beta": self.beta.clone()}

    def _load(self, state):
        self.alpha, self.beta = state["alpha"].clone().double(), state["beta"].clone().double()


def _group_std(rewards: torch.Tensor) -> torch.Tensor:
    r = torch.as_tensor(rewards).float()
    if r.dim() != 2:
        raise ValueError(f"rewards must be [G, n], got {tuple(r.shape)}")
    if not bool(r.isnan().any()):
        return r.std(dim=1) if r.shape[1] > 1 else torch.zeros(r.shape[0])  # [G] RAGEN's reward_variance score
    drawn = ~r.isnan()  # rows of unequal n (an allocation rule): NaN pads, each row's std over its own rollouts
    k = drawn.sum(dim=1)
    dev = torch.where(drawn, r - r.nanmean(dim=1, keepdim=True), 0.0)
    return torch.where(k > 1, (dev.pow(2).sum(dim=1) / (k - 1).clamp(min=1)).sqrt(), 0.0)


@prompt_rule("snr_top_p")
class SNRTopP(PromptRule):
    """RAGEN-2's SNR-aware filter (arXiv 2604.06268), top-p linear mode: drop zero-variance groups, then keep
    the highest-std groups until their std sum reaches p x the total - eps (none if it cannot)."""

    def __init__(self, num_prompts: int, p: float = 0.9, eps: float = 0.01):
        super().__init__(num_prompts)
        if not 0 < p <= 1:
            raise ValueError(f"snr_top_p needs 0 < p <= 1, got {p}")
        self.p, self.eps = float(p), float(eps)

    def keep(self, rewards):
        score = _group_std(rewards)  # [G]
        live = score.abs() > 1e-10
        keep = torch.zeros(len(score), dtype=torch.bool)
        if self.p >= 1.0:
            return live
        s, order = torch.sort(torch.where(live, score, torch.zeros_like(score)), descending=True, stable=True)
        before = torch.cat([s.new_zeros(1), s.cumsum(0)[:-1]])  # [G] sum of the groups above each
        threshold = self.p * float(score[live].sum()) - self.eps
        take = (before < threshold) & (s > 0)  # accumulate while below the threshold
        if float(s[take].sum()) >= threshold:
            keep[order[take]] = True
        return keep


@prompt_rule("snr_top_k")
class SNRTopK(PromptRule):
    """RAGEN's top-k filter: keep the int(fraction x G) groups (at least 1) with the highest reward std."""

    def __init__(self, num_prompts: int, fraction: float = 0.25):
        super().__init__(num_prompts)
        if not 0 < fraction <= 1:
            raise ValueError(f"snr_top_k needs 0 < fraction <= 1, got {fraction}")
        self.fraction = float(fraction)

    def keep(self, rewards):
        score = _group_std(rewards)
        k = max(1, min(int(self.fraction * len(score)), len(score)))
        keep = torch.zeros(len(score), dtype=torch.bool)
        keep[torch.sort(score, descending=True, stable=True)[1][:k]] = True
        return keep
