"""Prompt rules: GRESO and RAGEN's filters against re-implementations of the authors' code (10,000+ cases each),
MoPPS's posterior update, band, and resume: a rule restored from its state_dict chooses as an uninterrupted one."""

import io

import pytest
import torch

from pods.core.prompt_rules import PROMPT_RULES, make_prompt_rule


# --- GRESO (Infini-AI-Lab/GRESO @ a767ef0 = b277843 for verl/: verl/trainer/ttis/presampling_selector.py, ray_trainer.py)
class GresoReference:
    """Their DataProfiler (a per-prompt trace of (epoch, mean reward)) and the trainer's p adaptation, written from
    reading; torch.rand(1) in their skip tests is replaced by the uniform given (u_easy, u_hard)."""

    def __init__(self, p_easy=0.5, p_hard=0.5, target=0.25, wrong=0.1):
        self.trace, self.p_easy, self.p_hard = {}, p_easy, p_hard
        self.t_easy, self.t_hard = target / 3, target * 2 / 3
        self.wrong = wrong  # the reward of a wrong answer: the adaptation counts groups all at it as too hard

    def easy_skip(self, i, u):
        trace = self.trace.get(i, [])
        if not trace:
            return False
        count = 0
        for _, r in reversed(trace):
            if r < 0.98:
                break
            count += 1
        return u < 1 - max(self.p_easy ** count, 0.01)

    def hard_skip(self, i, u):
        trace = self.trace.get(i, [])
        if not trace or trace[-1][1] > 0.11:
            return False
        count = 0
        for _, r in reversed(trace):
            if r > 0.11:
                break
            count += 1
        return u < 1 - max(self.p_hard ** count, 0.01)

    def choose(self, candidates, u):
        return [c for c, i in enumerate(candidates) if not (self.easy_skip(i, u[c][0]) or self.hard_skip(i, u[c][1]))]

    def skip_probabilities(self, i):
        """(easy, hard): the probability their two tests skip prompt i (u < p: the boundary uniform)."""
        return (sum(self.easy_skip(i, u) for u in GRID) / len(GRID), sum(self.hard_skip(i, u) for u in GRID) / len(GRID))

    def update(self, epoch, prompts, rewards):
        """rewards [B][n] on their scale: 1.0 correct, 0.1 wrong (formatted)."""
        for i, row in zip(prompts, rewards):
            self.trace.setdefault(i, []).append((epoch, sum(row) / len(row)))
        easy = sum(max(r) == 1 and min(r) == 1 for r in rewards) / len(rewards)
        hard = sum(max(r) == self.wrong and min(r) == self.wrong for r in rewards) / len(rewards)
        if epoch > 0:
            self.p_hard = max(self.p_hard - 0.01, 0.05) if hard >= self.t_hard else min(self.p_hard + 0.01, 0.95)
            self.p_easy = max(self.p_easy - 0.01, 0.05) if easy >= self.t_easy else min(self.p_easy + 0.01, 0.95)


GRID = [(k + 0.5) / 4000 for k in range(4000)]  # uniforms for skip_probabilities, 1/4000 apart


def simulate_greso(ours, theirs, *, n, steps, wrong, seed=0, P=300, C=64):
    """A run of `steps` steps: C candidates a step, ours and theirs choose with the same uniforms and see the same
    groups (their reward: 1 right, `wrong` wrong); returns (decisions, skipped, groups near all right or wrong)."""
    g = torch.Generator().manual_seed(seed)
    skill = torch.rand(P, generator=g) ** 3 * 1.4  # many all-wrong and all-right prompts, some mixed
    decisions = skipped = near = 0
    for step in range(steps):
        epoch = step * C // P
        cand = torch.randperm(P, generator=g)[:C]
        state = g.get_state()
        pos = ours.choose(cand, C, g)
        u = torch.rand(C, 2, generator=torch.Generator().set_state(state), dtype=torch.float64).tolist()
        assert pos.tolist() == theirs.choose(cand.tolist(), u), f"step {step}"
        decisions, skipped = decisions + C, skipped + C - len(pos)
        prompts = cand[pos]
        correct = (torch.rand(len(prompts), n, generator=g) < skill[prompts].clamp(max=0.995).unsqueeze(1)).float()
        near += int(((correct.mean(1) > 0) & (correct.mean(1) < 0.2)).sum() + ((correct.mean(1) < 1)
                                                                              & (correct.mean(1) > 0.95)).sum())
        ours.update(prompts, correct, epoch=epoch)
        theirs.update(epoch, prompts.tolist(), [[1.0 if c else wrong for c in row] for row in correct.tolist()])
        assert (ours.p_easy, ours.p_hard) == pytest.approx((theirs.p_easy, theirs.p_hard), abs=1e-12)
    return decisions, skipped, near


def test_greso_equals_the_authors_selector_over_a_simulated_run():
    # their n = 8 and reward (1 right, 0.1 wrong): mean >= 0.98 / <= 0.11 are all right / all wrong; 10,880 decisions
    theirs = GresoReference()
    decisions, skipped, _ = simulate_greso(make_prompt_rule("greso", num_prompts=300), theirs, n=8, steps=170,
                                           wrong=0.1)
    assert decisions >= 10_000 and 0.1 < skipped / decisions < 0.9  # the skips were exercised
    assert theirs.p_easy != 0.5 and theirs.p_hard != 0.5  # and the adaptation


def test_greso_thresholds_equal_the_authors_at_n_64():
    # n = 64 on their reward scale: mean reward 0.1 + 0.9 x pass rate, so their 0.98 / 0.11 are pass rates
    # 0.9778 / 0.0111: 63 of 64 right is easy, 1 of 64 not hard; the options take those pass rates
    ours = make_prompt_rule("greso", num_prompts=300, easy_at=(0.98 - 0.1) / 0.9, hard_at=(0.11 - 0.1) / 0.9)
    decisions, skipped, near = simulate_greso(ours, GresoReference(), n=64, steps=120, wrong=0.1, seed=1)
    assert decisions >= 7_000 and 0.1 < skipped / decisions < 0.9 and near > 100  # thresholds met near the ends


def test_greso_defaults_are_their_thresholds_on_a_binary_reward():
    # a 0/1 reward (the demo's): their mean reward is the pass rate, so 0.98 / 0.11 are the defaults as they stand;
    # at n = 64, 63 right is easy and 7 right hard, where "all right" / "all wrong" would have said neither
    ours, theirs = make_prompt_rule("greso", num_prompts=6), GresoReference(wrong=0.0)
    rows = torch.tensor([[1.0] * 64, [1.0] * 63 + [0.0], [1.0] * 62 + [0.0] * 2, [0.0] * 64, [1.0] * 7 + [0.0] * 57,
                         [1.0] * 8 + [0.0] * 56])
    for _ in range(3):
        ours.update(torch.arange(6), rows, epoch=0)
        theirs.update(0, list(range(6)), rows.tolist())
    easy, hard = ours.skip_probability(torch.arange(6))
    assert easy.tolist() == pytest.approx([0.875, 0.875, 0, 0, 0, 0]) and hard.tolist() == pytest.approx(
        [0, 0, 0, 0.875, 0.875, 0])
    for i in range(6):
        assert (float(easy[i]), float(hard[i])) == pytest.approx(theirs.skip_probabilities(i), abs=1e-3)
    with pytest.raises(ValueError, match="0 <= hard_at < easy_at <= 1"):
        make_prompt_rule("greso", num_prompts=2, easy_at=0.1, hard_at=0.5)


def test_greso_skip_probability_follows_the_streak():
    rule = make_prompt_rule("greso", num_prompts=3, p_easy=0.5, p_hard=0.8)
    for _ in range(3):
        rule.update(torch.tensor([0, 1, 2]), torch.tensor([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]]), epoch=0)
    easy, hard = rule.skip_probability(torch.tensor([0, 1, 2]))
    assert easy.tolist() == pytest.approx([1 - 0.5 ** 3, 0, 0]) and hard.tolist() == pytest.approx([0, 1 - 0.8 ** 3, 0])
    rule.update(torch.tensor([0]), torch.tensor([[1.0, 0.0]]), epoch=0)  # a mixed group ends the streak
    assert rule.skip_probability(torch.tensor([0]))[0].item() == 0


# --- RAGEN (mll-lab-nu/RAGEN @ 0321471 ragen/trainer/rollout_filter.py, _select_top_groups) ---
def ragen_reference(rewards, strategy, value, include_zero, eps=0.01):
    scores = rewards.std(dim=-1).float()  # reward_variance: the in-group std
    idx = torch.arange(len(scores))
    if not include_zero:
        nz = scores.abs() > 1e-10
        scores, idx = scores[nz], idx[nz]
        if idx.numel() == 0:
            return set()
    if strategy == "top_k":
        k = max(min(int(value * rewards.shape[0]), idx.numel()), 1)
        return set(idx[scores.topk(k).indices].tolist())
    if value >= 1.0:
        return set(idx.tolist())
    s, order = torch.sort(scores, descending=True)
    threshold = value * scores.sum() - eps
    cum, count = 0.0, 0
    for x in s:
        if cum >= threshold or x.item() <= 0:
            break
        cum += x.item()
        count += 1
    return set(idx[order[:count]].tolist()) if cum >= threshold else set()


@pytest.mark.parametrize("name,kw,strategy,include_zero", [
    ("snr_top_p", dict(p=0.9), "top_p", False),  # their recommended setting
    ("snr_top_p", dict(p=0.6), "top_p", False),
    ("snr_top_k", dict(fraction=0.25), "top_k", True),
])
def test_snr_filters_equal_ragen_on_500_batches(name, kw, strategy, include_zero):
    g = torch.Generator().manual_seed(4)
    rule = make_prompt_rule(name, num_prompts=1, **kw)
    value = kw.get("p", kw.get("fraction"))
    tie_order = 0
    for case in range(500):
        G, n = int(torch.randint(1, 48, (1,), generator=g)), int(torch.randint(2, 9, (1,), generator=g))
        rewards = (torch.rand(G, n, generator=g) * 3).floor() / 2 if case % 2 else torch.rand(G, n, generator=g)
        rewards[torch.rand(G, generator=g) < 0.3] = 1.0  # zero-variance groups
        got = set(rule.keep(rewards).nonzero().flatten().tolist())
        want = ragen_reference(rewards, strategy, value, include_zero)
        if got != want:  # ties at the cut: their torch.sort (not stable) orders equal stds its own way, pods by index
            std = rewards.std(dim=-1)
            assert len(got) == len(want) and sorted(std[list(got)].tolist()) == sorted(std[list(want)].tolist())
            tie_order += 1
    assert tie_order > 0  # the tie order differs on some tied batches (docs/rules.md), the kept stds never


# --- MoPPS (thu-rllab/MoPPS @ a883f51 recipe/ours/mopps.py) ---
def test_mopps_posterior_update_and_topk_pick_match_theirs():
    rule = make_prompt_rule("mopps", num_prompts=5, decay=0.9)
    alpha, beta = [1.0] * 5, [1.0] * 5
    g = torch.Generator().manual_seed(2)
    for _ in range(20):
        prompts = torch.randperm(5, generator=g)[:3]
        correct = (torch.rand(3, 8, generator=g) < 0.5).float()
        rule.update(prompts, correct)
        for i, s in zip(prompts.tolist(), correct.mean(1).tolist()):  # their train(): n = 8 rollouts
            alpha[i] = alpha[i] * 0.9 + 1.0 * 0.1 + s * 8
            beta[i] = beta[i] * 0.9 + 1.0 * 0.1 + (1 - s) * 8
    assert rule.alpha.tolist() == pytest.approx(alpha) and rule.beta.tolist() == pytest.approx(beta)
    cand = torch.tensor([4, 0, 2, 1])
    theta = rule.sample(cand, torch.Generator().manual_seed(9))
    want = sorted(torch.argsort((theta - 0.5) ** 2)[:2].tolist())  # their topk: the 2 closest to target_mean
    assert rule.choose(cand, 2, torch.Generator().manual_seed(9)).tolist() == want


def test_mopps_samples_follow_the_posterior():
    rule = make_prompt_rule("mopps", num_prompts=2)
    rule.update(torch.tensor([0, 1]), torch.tensor([[1.0] * 8 + [0.0] * 2, [0.0] * 10]))  # Beta(9, 3), Beta(1, 11)
    theta = torch.stack([rule.sample(torch.tensor([0, 1]), torch.Generator().manual_seed(s)) for s in range(2000)])
    assert theta.mean(0).tolist() == pytest.approx([9 / 12, 1 / 12], abs=0.02)


def test_band_skips_prompts_outside_the_band_and_keeps_unseen_ones():
    rule = make_prompt_rule("band", num_prompts=6, low=0.2, high=0.8)
    rule.update(torch.tensor([0, 1, 2, 3]), torch.tensor([[1.0] * 4, [0.0] * 4, [1.0, 0, 0, 0], [1.0, 1, 0, 0]]))
    assert rule.choose(torch.tensor([0, 1, 2, 3, 4, 5]), 10).tolist() == [2, 3, 4, 5]  # 0.25 and 0.5 in; unseen in
    assert rule.choose(torch.tensor([0, 1, 2, 3, 4, 5]), 2).tolist() == [2, 3]


@pytest.mark.parametrize("name", ["band", "greso", "mopps", "none"])
def test_resume_from_state_dict_gives_the_same_choices(name):
    """A run killed after step 5 and resumed from its checkpoint (rule state + generator state) chooses
    at every later step exactly what the uninterrupted run chose."""
    P, n = 50, 4

    def run(steps, rule, g, data):
        chosen = []
        for _ in range(steps):
            cand = torch.randperm(P, generator=data)[:16]
            pos = rule.choose(cand, 8, g)
            chosen.append(cand[pos].tolist())
            rule.update(cand[pos], (torch.rand(len(pos), n, generator=data) < 0.5).float(), epoch=1)
        return chosen

    straight = run(12, make_prompt_rule(name, num_prompts=P), torch.Generator().manual_seed(1),
                   torch.Generator().manual_seed(2))
    rule, g, data = make_prompt_rule(name, num_prompts=P), torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
    first = run(5, rule, g, data)
    buf = io.BytesIO()
    torch.save({"rule": rule.state_dict(), "g": g.get_state(), "data": data.get_state()}, buf)
    del rule, g
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)  # plain tensors and numbers only
    resumed = make_prompt_rule(name, num_prompts=P)
    resumed.load_state_dict(saved["rule"])
    g, data = torch.Generator(), torch.Generator()
    g.set_state(saved["g"])
    data.set_state(saved["data"])
    assert first + run(7, resumed, g, data) == straight


def test_registry_names_errors_and_state_mismatch():
    assert {"none", "band", "greso", "mopps", "snr_top_p", "snr_top_k"} <= set(PROMPT_RULES)
    with pytest.raises(ValueError, match="did you mean 'greso'"):
        make_prompt_rule("gresso", num_prompts=3)
    with pytest.raises(ValueError, match="prompt rule 'band': .*unexpected keyword argument 'width'"):
        make_prompt_rule("band", num_prompts=3, width=2)
    with pytest.raises(ValueError, match="0 <= low < high <= 1"):
        make_prompt_rule("band", num_prompts=3, low=0.9, high=0.1)
    with pytest.raises(ValueError, match="prompt indices must be in 0..2"):
        make_prompt_rule("greso", num_prompts=3).choose(torch.tensor([5]), 1)
    with pytest.raises(ValueError, match="resume with the run's rl.prompt_rule"):
        make_prompt_rule("greso", num_prompts=3).load_state_dict(make_prompt_rule("mopps", num_prompts=3).state_dict())


def test_rows_of_unequal_n_count_only_the_rollouts_drawn():
    """An allocation rule's groups are NaN-padded: history and group filters see each prompt's own rollouts."""
    nan = float("nan")
    ragged = torch.tensor([[1.0, 0.0, nan, nan], [1.0, 1.0, 1.0, 0.0]])  # 2 and 4 rollouts
    band = make_prompt_rule("band", num_prompts=2)
    band.update(torch.tensor([0, 1]), ragged)
    assert band.pass_rate.tolist() == [0.5, 0.75]
    mopps = make_prompt_rule("mopps", num_prompts=2)
    mopps.update(torch.tensor([0, 1]), ragged)
    assert mopps.alpha.tolist() == [2.0, 4.0] and mopps.beta.tolist() == [2.0, 2.0]  # prior 1 + successes, failures
    greso = make_prompt_rule("greso", num_prompts=2)
    greso.update(torch.tensor([0, 1]), torch.tensor([[1.0, 1.0, nan], [0.0, 0.0, 0.0]]))
    assert greso.easy.tolist() == [1, 0] and greso.hard.tolist() == [0, 1]  # all right / wrong among those drawn
    top = make_prompt_rule("snr_top_k", num_prompts=2, fraction=0.5)  # std of [1, 0] > std of [1, 1, 1, 0]
    assert top.keep(ragged).tolist() == [True, False]
