"""NF4 (bitsandbytes' 4-bit NormalFloat) in numpy: what re-quantising a merged model does to a small update.

    w_hat = nf4_roundtrip(w)                          # quantise + dequantise, blocks of 64 (bitsandbytes' default)
    row = requant_noise(w, dw)                        # {"update_ratio", "cosine", "noise_ratio"}

Contract: `nf4_roundtrip` maps each block of BLOCK consecutive values (row-major) to the nearest NF4 code times the
block's absmax, as bitsandbytes' `quantize_4bit(quant_type="nf4")` then `dequantize_4bit` without double quantization
(tests/pods/analysis/test_nf4.py compares them). `requant_noise` compares NF4(W + dW), the merged model the authors
evaluated, with NF4(W) + dW, the trained policy, through U = NF4(W + dW) - NF4(W). Its table: docs/evaluation.md.
"""

from __future__ import annotations

import numpy as np

# bitsandbytes' NF4 code book (bitsandbytes/functional.py, get_4bit_type("nf4")), ascending
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)
BLOCK = 64  # values per absmax scale (bitsandbytes' default blocksize for 4-bit)
_MIDPOINTS = (NF4[1:] + NF4[:-1]) / 2  # [15] decision boundaries between neighbouring codes


def nf4_roundtrip(w: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """w [...] -> the same shape, each value replaced by its NF4 code times its block's absmax (float32)."""
    flat = np.asarray(w, dtype=np.float32).reshape(-1)
    pad = (-flat.size) % block
    blocks = np.concatenate([flat, np.zeros(pad, np.float32)]).reshape(-1, block)  # [B, block]
    absmax = np.abs(blocks).max(axis=1, keepdims=True)  # [B, 1]
    scaled = blocks / np.where(absmax > 0, absmax, 1.0)
    codes = NF4[np.searchsorted(_MIDPOINTS, scaled)]  # nearest code (a boundary value: the lower one)
    return (codes * absmax).reshape(-1)[: flat.size].reshape(np.shape(w))


def requant_noise(w: np.ndarray, dw: np.ndarray) -> dict[str, float]:
    """How the merged-then-requantised update U = NF4(W + dW) - NF4(W) relates to the trained update dW.

    update_ratio: rms(U) / rms(dW); cosine: cos(U, dW); noise_ratio: rms(U - dW) / rms(dW), the error of the
    merged model against the trained policy NF4(W) + dW in units of the update.
    """
    base = nf4_roundtrip(w)
    u = (nf4_roundtrip(w + dw) - base).astype(np.float64).ravel()
    d = np.asarray(dw, np.float64).ravel()
    rms = lambda x: float(np.sqrt(np.mean(x * x)))  # noqa: E731
    return {"update_ratio": rms(u) / rms(d), "cosine": float(u @ d / (np.linalg.norm(u) * np.linalg.norm(d))),
            "noise_ratio": rms(u - d) / rms(d)}
