"""GRPO loss (ratio 1): hand-computed cases, KL, masking, aggregation and gradient flow."""

import math

import pytest
import torch

from pods.core.losses import policy_loss, token_logprobs


def test_token_logprobs_matches_log_softmax():
    logits = torch.randn(2, 3, 5)
    ids = torch.randint(0, 5, (2, 3))
    expected = torch.log_softmax(logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(token_logprobs(logits, ids), expected, atol=1e-6)


@pytest.mark.parametrize("temperature", [0.5, 0.9, 1.0, 1.3])
def test_token_logprobs_at_a_temperature_are_log_softmax_of_scaled_logits(temperature):
    logits = torch.randn(2, 3, 7, dtype=torch.bfloat16)
    ids = torch.randint(0, 7, (2, 3))
    expected = torch.log_softmax(logits.float() / temperature, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    got = token_logprobs(logits, ids, temperature=temperature)
    assert got.dtype == torch.float32 and torch.allclose(got, expected, atol=1e-6)
    if temperature != 1.0:
        assert not torch.allclose(got, token_logprobs(logits, ids), atol=1e-3)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        token_logprobs(logits, ids, temperature=0.0)


def test_on_policy_loss_value_and_gradient():
    """Ratio 1: loss = -mean_seq(A); d loss / d logp_t = -A / (B * T_seq)."""
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.1]], requires_grad=True)
    adv = torch.tensor([2.0, -1.0])
    mask = torch.ones(2, 2)
    loss, metrics = policy_loss(logp, adv, mask)
    assert loss.item() == pytest.approx(-(2.0 - 1.0) / 2)
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-0.5, -0.5], [0.25, 0.25]]))
    assert metrics == {"completion_tokens": 4.0}


def test_kl_term_k3_and_beta_zero_equals_no_kl():
    logp = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    ref = torch.tensor([[-1.0, -2.0]])
    mask = torch.ones(1, 2)
    adv = torch.tensor([0.5])
    base, _ = policy_loss(logp, adv, mask)
    zero, m0 = policy_loss(logp, adv, mask, ref_logp=ref, beta=0.0)
    with_kl, m = policy_loss(logp, adv, mask, ref_logp=ref, beta=0.1)
    kl_tokens = [0.0, math.exp(-1) + 1 - 1]  # exp(d) - d - 1 with d = ref - logp
    # at beta = 0 the reference log-probs are measured (the KL is logged, rl.reference_pass) but not in the loss
    assert zero.item() == base.item() and m0["kl"] == pytest.approx(sum(kl_tokens) / 2)
    assert m["kl"] == pytest.approx(sum(kl_tokens) / 2)
    assert with_kl.item() == pytest.approx(base.item() + 0.1 * sum(kl_tokens) / 2)
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(logp, adv, mask, beta=0.1)


def test_masking_ignores_padding():
    logp = torch.tensor([[-1.0, -3.0, 99.0], [-2.0, 77.0, 55.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    adv = torch.tensor([1.0, 1.0])
    loss, _ = policy_loss(logp, adv, mask)
    loss.backward()
    assert logp.grad[0, 2] == 0 and logp.grad[1, 1] == 0 and logp.grad[1, 2] == 0
    padded_changed = logp.detach().clone()
    padded_changed[0, 2] = -50.0
    loss2, _ = policy_loss(padded_changed, adv, mask)
    assert loss2.item() == pytest.approx(loss.item())


def test_sequence_vs_token_aggregation():
    logp = torch.zeros(2, 3, requires_grad=True)
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    adv = torch.tensor([1.0, 2.0])
    seq, _ = policy_loss(logp, adv, mask, aggregation="sequence")
    tok, _ = policy_loss(logp, adv, mask, aggregation="token")
    assert seq.item() == pytest.approx(-(1.0 + 2.0) / 2)
    assert tok.item() == pytest.approx(-(1.0 + 3 * 2.0) / 4)
    with pytest.raises(ValueError, match="valid: sequence, token"):
        policy_loss(logp, adv, mask, aggregation="mean")


@pytest.mark.parametrize("aggregation", ["sequence", "token"])
def test_micro_batches_with_denominator_match_full_batch_gradient(aggregation):
    torch.manual_seed(0)
    logp = torch.randn(4, 5, requires_grad=True)
    mask = (torch.rand(4, 5) > 0.3).float()
    mask[:, 0] = 1
    adv = torch.randn(4)
    full, _ = policy_loss(logp, adv, mask, aggregation=aggregation)
    (g_full,) = torch.autograd.grad(full, logp)
    denom = 4 if aggregation == "sequence" else float(mask.sum())
    total = 0
    for sl in (slice(0, 1), slice(1, 4)):
        part, _ = policy_loss(logp[sl], adv[sl], mask[sl], aggregation=aggregation, denominator=denom)
        total = total + part
    (g_parts,) = torch.autograd.grad(total, logp)
    assert torch.allclose(g_full, g_parts, atol=1e-6)
    assert total.item() == pytest.approx(full.item(), abs=1e-6)


def test_gradient_flows_only_through_current_logprobs():
    logp = torch.randn(2, 3, requires_grad=True)
    ref = torch.randn(2, 3, requires_grad=True)
    loss, _ = policy_loss(logp, torch.tensor([1.0, -1.0]), torch.ones(2, 3), ref_logp=ref, beta=0.5)
    loss.backward()
    assert logp.grad is not None and logp.grad.abs().sum() > 0
    assert ref.grad is None


def test_ratio_one_loss_is_the_authors_policy_gradient():
    """-A * exp(logp - logp.detach()) per token, sequence-mean then batch-mean (maxvargrpo_trainer.py:586-588):
    the gradient of sum_t logp_t / T_seq weighted by -A / B, whatever logp's value."""
    torch.manual_seed(1)
    logp = torch.randn(3, 4, requires_grad=True)
    mask = torch.tensor([[1.0, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    adv = torch.tensor([0.7, -1.2, 2.0])
    loss, _ = policy_loss(logp, adv, mask)
    assert loss.item() == pytest.approx(-adv.mean().item(), abs=1e-6)
    loss.backward()
    assert torch.allclose(logp.grad, -(adv / 3).unsqueeze(1) * mask / mask.sum(1, keepdim=True), atol=1e-7)


def test_token_entropy_equals_trls_entropy_from_logits():
    """The ledger's and the token masks' per-token entropy: TRL's own function on the same logits/temperature."""
    from trl.trainer.utils import entropy_from_logits

    from pods.core.losses import token_entropy

    logits = torch.randn(3, 5, 11, generator=torch.Generator().manual_seed(0)) * 3
    for temperature in (1.0, 0.7):
        ours = token_entropy(logits, temperature)
        assert ours.shape == (3, 5)
        assert torch.allclose(ours, entropy_from_logits(logits / temperature), atol=1e-5)
        assert torch.allclose(token_entropy(logits, temperature, chunk_elements=55), ours)  # one row per chunk
    assert torch.allclose(token_entropy(torch.zeros(1, 2, 4)), torch.full((1, 2), float(torch.log(torch.tensor(4.)))))
    live = logits.clone().requires_grad_()  # the update's logits: the entropy must not join their graph
    assert not token_entropy(live).requires_grad and torch.allclose(token_entropy(live), token_entropy(logits))


def test_a_token_mask_drops_the_policy_term_of_its_tokens_and_keeps_the_kl_and_the_counts():
    g = torch.Generator().manual_seed(1)
    logp = (torch.randn(2, 4, generator=g) - 2).requires_grad_()
    ref = logp.detach() + 0.1 * torch.randn(2, 4, generator=g)
    mask = torch.tensor([[1.0, 1, 1, 0], [1, 1, 1, 1]])
    keep = torch.tensor([[True, False, True, False], [False, False, True, True]])
    adv = torch.tensor([1.0, -0.5])
    loss, m = policy_loss(logp, adv, mask, ref_logp=ref, beta=0.1, keep=keep)
    loss.backward()
    # by hand: per sequence, (-adv * keep + beta * k3) summed over the mask, over the mask's length
    delta = (ref - logp.detach()) * mask
    k3 = torch.exp(delta) - delta - 1
    value = (((-adv[:, None] * keep + 0.1 * k3) * mask).sum(1) / mask.sum(1)).mean()
    assert float(loss) == pytest.approx(float(value), rel=1e-6)
    grad_policy = -adv[:, None] * keep * mask / mask.sum(1, keepdim=True) / 2
    grad_kl = 0.1 * (1 - torch.exp(delta)) * mask / mask.sum(1, keepdim=True) / 2
    assert torch.allclose(logp.grad, grad_policy + grad_kl, atol=1e-6)
    assert m["completion_tokens"] == 7 and m["trained_tokens"] == 4
