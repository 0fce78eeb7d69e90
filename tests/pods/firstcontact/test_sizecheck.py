"""pods.firstcontact.sizecheck: random weights of a given architecture, stand-in prompts, forced completion lengths."""

import json

import pytest
import torch

from pods.backends import memory as mem
from pods.core import profiles
from pods.firstcontact import sizecheck

# a Qwen2-shaped model small enough for the CPU: the same path the real sizes take on a GPU
SMALL = ["model=qwen2.5-3b-instruct", "model.architecture.layers=2", "model.architecture.hidden=64",
         "model.architecture.intermediate=128", "model.architecture.heads=4", "model.architecture.kv_heads=2",
         "model.architecture.vocab=3000", "model.architecture.params=null", "model.lora.rank=4", "model.lora.alpha=8", "backend=hf",
         "backend.device=cpu", "optim.name=adamw", "rl.n=4", "rl.m=2", "rl.prompts_per_step=2",
         "rl.micro_batch_size=4", "dataset=gsm8k_paper", "model.load_in_4bit=false", "model.dtype=float32"]


def test_the_standin_tokenizer_has_the_real_vocabulary_and_an_end_the_model_never_samples():
    tok = sizecheck.standin_tokenizer(151936)
    assert len(tok) == 151937 and tok.eos_token_id == 151936 and tok.pad_token_id == 0
    assert len(tok("0123456789" * 3)["input_ids"]) == 30  # a digit is one token, no specials added
    assert tok.decode([151935]) == "<t151935>"  # every id the model can sample decodes


@pytest.mark.parametrize("bias", [True, False])  # transformers loads a qwen2 checkpoint's tokenizer as Qwen2Tokenizer
def test_the_saved_standin_tokenizer_keeps_one_token_per_digit_under_the_model_types_class(tmp_path, bias):
    arch = mem.Architecture(layers=1, hidden=32, intermediate=64, heads=2, kv_heads=1, vocab=400, tied=True,
                            attention_bias=bias)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(sizecheck.random_model(arch, tmp_path, torch.float32))
    ids = tok("31415926535897932384", add_special_tokens=True)["input_ids"]
    assert len(ids) == 20 and max(ids) < 400 and tok.eos_token_id == 400


def test_the_random_model_has_the_architectures_numbers_and_is_built_once(tmp_path):
    arch = mem.Architecture(layers=2, hidden=64, intermediate=96, heads=4, kv_heads=2, vocab=500, tied=False,
                            attention_bias=False)
    path = sizecheck.random_model(arch, tmp_path, torch.float32)
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["model_type"] == "llama" and cfg["vocab_size"] == 500 and cfg["tie_word_embeddings"] is False
    assert (cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["num_key_value_heads"]) == (2, 96, 2)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path)
    assert sum(p.numel() for p in model.parameters()) == arch.params()  # the estimate's parameter count
    stamp = (path / "config.json").stat().st_mtime_ns
    assert sizecheck.random_model(arch, tmp_path, torch.float32) == path
    assert (path / "config.json").stat().st_mtime_ns == stamp  # reused, not rebuilt


@pytest.mark.slow
def test_a_random_weight_step_runs_offline_at_forced_lengths_and_reports_every_phase(tmp_path, monkeypatch):
    monkeypatch.setenv("PODS_PROFILE_DIR", str(tmp_path / "profiles"))
    r = sizecheck.run_random(SMALL, out_dir=tmp_path, steps=2, prompt_tokens=20, completion_tokens=6,
                             profile_batches=(2, 4, 8), profile_lengths=(2, 4, 6), profile_name="small")
    assert r["steps"] == 2 and r["prompt_tokens"] == 20 and r["completion_tokens"] == 6
    assert r["completion_length_seen"] == [6.0, 6.0]  # every completion ran to the limit
    assert set(r["seconds"]) == {"generation", "scoring", "update", "weight_sync", "step"}
    assert all(v >= 0 for v in r["seconds"].values()) and r["seconds"]["step"] > 0
    assert r["tokens_per_second"]["generated"] > 0 and r["tokens_per_second"]["trained"] > 0
    # w of the leaderboard from the step after the first: its update and generation seconds per completion token
    row = [json.loads(line) for line in (tmp_path / "random-weights" / "metrics.jsonl").read_text().splitlines()][-1]
    per_trained = row["time/update"] / row["cost/tokens_trained"]
    assert r["cost_weight"] == pytest.approx(per_trained / (row["time/generation"] / row["cost/tokens_generated"]))
    m = r["memory"]  # float32 on the CPU: the tensors are exactly what the estimate counts
    arch = mem.Architecture(**r["architecture"])
    assert m["trainable"]["measured_gib"] == pytest.approx(4 * arch.lora_params(4, mem.LINEARS) / mem.GIB)
    assert m["trainable"]["measured_gib"] == pytest.approx(m["trainable"]["estimate_gib"])
    assert m["weights"]["measured_gib"] == pytest.approx(m["weights"]["estimate_gib"], rel=1e-6)
    assert "peak_rss_gib" in m and r["device"] == "CPU"
    # the profile: every (batch size, length) timed, at its forced length, and loadable by name
    points = r["profile"]["points"]
    assert [(p["tokens_padded"] // p["decode_steps"], p["decode_steps"]) for p in points] == \
        [(S, L) for L in (2, 4, 6) for S in (2, 4, 8)]
    assert all(p["seconds"] > 0 and p["prompt_tokens"] == 20 * p["tokens_padded"] // p["decode_steps"] for p in points)
    prof = profiles.load("small")
    assert prof.backend == "hf" and prof.fitted_range == {"sequences": [2, 8], "completion_tokens": [2, 6], "kept": [2, 2]}
    assert prof.constants["update_token"] > 0 and prof.constants["token"] == 0.0  # HF generate: padded tokens
