"""Token masks: entropy_top against TRL 1.15's own GRPOTrainer.get_high_entropy_mask (same inputs, same mask),
adv_entropy_top, and the mask contract."""

import os
from types import SimpleNamespace

import pytest
import torch

if not torch.cuda.is_available():  # TRL 1.15 patches in a Triton kernel; interpret it on CPU
    os.environ.setdefault("TRITON_INTERPRET", "1")

from pods.core.token_masks import TOKEN_MASKS, token_mask


def cases(count, seed=0):
    g = torch.Generator().manual_seed(seed)
    for i in range(count):
        B, T = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(1, 24, (1,), generator=g))
        lengths = torch.randint(0, T + 1, (B,), generator=g)
        mask = torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)  # [B, T] right padding
        entropy = torch.rand(B, T, generator=g) * 3
        if i % 3 == 0:
            entropy = (entropy * 2).floor() / 2  # ties at the cut
        q = [0.2, 0.5, 1.0, float(torch.rand(1, generator=g).clamp(min=0.01))][i % 4]
        yield mask, entropy, q


def test_entropy_top_equals_trl_get_high_entropy_mask_on_3000_batches():
    from accelerate import Accelerator
    from trl import GRPOTrainer

    trainer = SimpleNamespace(accelerator=Accelerator(cpu=True))  # all the method reads from self (one process)
    n = 0
    for mask, entropy, q in cases(3_000):
        theirs = GRPOTrainer.get_high_entropy_mask(trainer, entropy, mask.int(), 1 - q)  # top_entropy_quantile = q
        assert torch.equal(token_mask("entropy_top", mask, entropy=entropy, quantile=q), theirs), (mask, entropy, q)
        n += 1
    assert n == 3_000


def test_adv_entropy_top_ranks_by_advantage_times_entropy():
    mask = torch.tensor([[True, True, True], [True, True, False]])
    entropy = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.5, 9.0]])
    keep = token_mask("adv_entropy_top", mask, entropy=entropy, advantages=torch.tensor([1.0, -0.5]), quantile=0.4)
    assert keep.tolist() == [[False, True, True], [True, False, False]]  # scores 1 2 3 | 2 0.25 (pad out): cut 2


def test_contract_and_errors():
    mask = torch.tensor([[True, False]])
    assert torch.equal(token_mask("none", mask), mask)
    assert not token_mask("entropy_top", torch.zeros(2, 3, dtype=torch.bool), entropy=torch.rand(2, 3)).any()
    assert {"none", "entropy_top", "adv_entropy_top"} <= set(TOKEN_MASKS)
    with pytest.raises(ValueError, match="'entropy_top' needs entropy"):
        token_mask("entropy_top", mask)
    with pytest.raises(ValueError, match="did you mean 'entropy_top'"):
        token_mask("entropy_tops", mask, entropy=torch.rand(1, 2))
    with pytest.raises(ValueError, match="quantile .* must be in \\(0, 1\\]"):
        token_mask("entropy_top", mask, entropy=torch.rand(1, 2), quantile=0)
