"""pods.firstcontact.speedcheck: a machine profile from timed generation calls and training steps."""

import pytest

from pods.core.cost import decoded_batches
from pods.core.timing import step_seconds
from pods.firstcontact.speedcheck import generation_terms, measured_profile

TRUTH = {"fixed": 0.3, "batch": 0.05, "decode_step": 0.02, "token": 0.0, "padded_token": 1e-4, "prompt_token": 2e-5,
         "context_token": 1e-7, "update_token": 3e-4, "reference_token": 8e-5}


def call(S, L, P=100):
    b = decoded_batches([P] * S, [L] * S)
    counts = {"generation_batches": 1, "decode_steps": L, "tokens_padded": S * L, "tokens_generated": S * L,
              "prompt_tokens": S * P, "context_tokens": b[0].context_tokens}
    return counts, step_seconds(counts, {**TRUTH, "fixed": 0.0, "update_token": 0.0, "reference_token": 0.0},
                                reference=False)


def step_row(step, counts):
    gen = step_seconds(counts, {**TRUTH, "fixed": 0.0, "update_token": 0.0, "reference_token": 0.0}, reference=False)
    upd, ref = TRUTH["update_token"] * counts["tokens_updated"], TRUTH["reference_token"] * counts["tokens_updated"]
    return {"step": step, "time/step": gen + upd + ref + TRUTH["fixed"], "time/update": upd + ref,
            "time/reference": ref, **{f"cost/{k}": v for k, v in counts.items()}}


def test_the_profile_recovers_the_machine_that_made_the_timings():
    points = [call(S, L) for L in (128, 256, 512) for S in (16, 64, 256)]  # 3 lengths: prefill and context apart
    steps = [step_row(s, {**call(64, 512)[0], "tokens_updated": 16 * 612, "tokens_trained": 16 * 512,
                          "rollouts_generated": 64}) for s in (1, 2, 3)]
    prof = measured_profile(points, steps, backend="hf", device="cuda", name="x", machine="GPU", model="m",
                            params=3e9, kv_bytes_per_token=36864, kept=16, date="2026-01-01", gpu="H100")
    for c, v in TRUTH.items():
        assert prof.constants[c] == pytest.approx(v, rel=1e-6, abs=1e-12), c
    assert prof.fitted_range == {"sequences": [16, 256], "completion_tokens": [128, 512], "kept": [16, 16]}
    assert prof.origin["reference_token"] == "measured: time/reference per token"


def test_an_engine_prices_generated_tokens_hf_generate_padded_ones():
    assert "token" in generation_terms("vllm") and "padded_token" in generation_terms("hf")


def test_fewer_than_three_timed_calls_make_no_profile():
    with pytest.raises(ValueError, match="3 or more"):
        measured_profile([call(16, 128)] * 2, [], backend="hf", device="cpu", name="x", machine="", model="",
                         params=1.0, kv_bytes_per_token=1.0, kept=2, date="")
