"""pods.analysis.nf4: NF4 as bitsandbytes defines it (code book, blocks of 64), and what re-quantising a merged
update does (docs/evaluation.md: at 1 % rms the update a merged 4-bit model carries has cosine 0.20 with dW).

The comparison with bitsandbytes itself runs where it is installed (`uv run --with bitsandbytes pytest ...`).
"""

import importlib.util

import numpy as np
import pytest

from pods.analysis.nf4 import BLOCK, NF4, nf4_roundtrip, requant_noise


def test_every_value_becomes_a_code_times_its_blocks_absmax():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 96)).astype(np.float32)  # 384 values: 6 blocks of 64, row-major
    q = nf4_roundtrip(w)
    blocks, qb = w.reshape(-1, BLOCK), q.reshape(-1, BLOCK)
    absmax = np.abs(blocks).max(axis=1, keepdims=True)
    codes = qb / absmax
    assert (np.abs(codes[..., None] - NF4).min(axis=-1) < 1e-5).all()  # every value is a code x absmax
    nearest = NF4[np.abs(blocks[..., None] / absmax[..., None] - NF4).argmin(axis=-1)]
    assert np.allclose(codes, nearest)  # the nearest code
    assert np.allclose(np.abs(qb).max(axis=1), absmax[:, 0])  # the absmax itself is exact (code +-1)
    assert nf4_roundtrip(np.zeros(70, np.float32)).tolist() == [0.0] * 70  # an all-zero block (and a partial one)


def test_requantising_a_small_update_buries_it_in_noise():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((512, 512)).astype(np.float32)
    d = rng.standard_normal((512, 64)) @ rng.standard_normal((64, 512))  # a rank-64 update, LoRA's form
    d = (d / np.sqrt(np.mean(d * d))).astype(np.float32)
    small, large = requant_noise(w, 0.01 * d), requant_noise(w, 0.3 * d)
    assert small["cosine"] == pytest.approx(0.20, abs=0.03)  # the figure
    assert 4 < small["noise_ratio"] < 6 and small["update_ratio"] > 4  # noise about 5x the update
    assert large["cosine"] > 0.85 and large["noise_ratio"] < 0.5  # a large update survives


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is None, reason="bitsandbytes is not installed")
def test_equals_bitsandbytes_quantize_then_dequantize():
    import torch
    from bitsandbytes.functional import dequantize_4bit, quantize_4bit

    w = torch.randn(256, 192, generator=torch.Generator().manual_seed(0))
    q, state = quantize_4bit(w, blocksize=BLOCK, quant_type="nf4", compress_statistics=False)
    assert np.allclose(dequantize_4bit(q, state).numpy(), nf4_roundtrip(w.numpy()), atol=1e-6)
    assert np.allclose(state.code.numpy(), NF4)
