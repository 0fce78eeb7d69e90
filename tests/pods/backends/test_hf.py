"""The transformers + PEFT backend on a tiny model: sampling, log-probs, reference, save/load."""


import pytest
import torch

from pods.backends import hf
from pods.backends.base import Generator, Policy, Sampling

from helpers import compose

torch.set_num_threads(1)


def cfg(*extra):
    return compose(["model=tiny", *extra])


@pytest.fixture(scope="module")
def built():
    return hf.build(cfg())


def prompts_of(tok, *texts):
    return [tok.encode(t, add_special_tokens=False) for t in texts]


def perturb_lora(policy, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_" in name:
                p.add_(torch.randn(p.shape, generator=g) * 0.5)


def test_build_gives_a_lora_policy_and_generator(built):
    policy, generator = built
    assert isinstance(policy, Policy) and isinstance(generator, Generator)
    names = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert len(policy.trainable_parameters()) == len(names)


def test_generate_returns_n_rollouts_per_prompt_cut_at_eos(built):
    policy, generator = built
    tok = policy.tokenizer
    prompts = prompts_of(tok, "12+34=", "7+8=", "100+1=")  # different lengths: left padding
    r = generator.generate(prompts, 5, Sampling(max_tokens=6, temperature=1.0, seed=1))
    assert r.num_groups == 3 and r.n == 5 and len(r) == 15 and r.prompt_ids == prompts
    eos = tok.eos_token_id
    for ids, reason, text in zip(r.completion_ids, r.finish_reasons, r.texts):
        assert 1 <= len(ids) <= 6 and tok.pad_token_id not in ids[:-1]
        assert (reason == "stop") == (ids[-1] == eos) and eos not in ids[:-1]
        assert reason == "stop" or len(ids) == 6
        assert text == tok.decode(ids, skip_special_tokens=True)


def test_seeded_sampling_is_reproducible_and_greedy_is_deterministic(built):
    policy, generator = built
    p = prompts_of(policy.tokenizer, "3+4=")
    a = generator.generate(p, 4, Sampling(max_tokens=5, temperature=1.0, seed=7))
    b = generator.generate(p, 4, Sampling(max_tokens=5, temperature=1.0, seed=7))
    c = generator.generate(p, 4, Sampling(max_tokens=5, temperature=1.0, seed=8))
    assert a.completion_ids == b.completion_ids and a.completion_ids != c.completion_ids
    g = generator.generate(p, 3, Sampling(max_tokens=5, temperature=0.0))
    assert g.completion_ids[0] == g.completion_ids[1] == g.completion_ids[2]


def test_generation_batch_size_does_not_change_greedy_results(built):
    policy, generator = built
    p = prompts_of(policy.tokenizer, "1+1=", "23+45=")
    small = hf.HFGenerator(policy, batch_size=1).generate(p, 2, Sampling(max_tokens=4, temperature=0.0))
    assert small.completion_ids == generator.generate(p, 2, Sampling(max_tokens=4, temperature=0.0)).completion_ids


class Unshared(hf.HFGenerator):
    """The generator as it was before prompts were shared: every row prefills its own copy of its prompt."""

    def _shared_prefill(self, chunk, ids, attn):
        return None


@pytest.mark.parametrize("batch_size, prefills", [
    (None, [(2, 5)]),  # one call: the 2 distinct prompts, the longest but its last token (6 - 1)
    (3, [(1, 5), (2, 5), (1, 3)]),  # calls of 3 rollouts split the groups: p0 p0 p0 | p0 p1 p1 | p1 p1
])
def test_a_groups_prompt_is_prefilled_once_and_its_rollouts_are_as_if_each_had_its_own(built, batch_size, prefills):
    policy, _ = built
    p = prompts_of(policy.tokenizer, "12+34=", "7+8=")  # different lengths: left padding
    shapes = []  # [rows, tokens] of every forward pass; the ones of more than one token are prefills
    hook = policy.model.get_base_model().model.embed_tokens.register_forward_hook(
        lambda module, args, out: shapes.append(tuple(args[0].shape)))
    try:
        for s in (Sampling(max_tokens=5, temperature=1.0, seed=3), Sampling(max_tokens=5, temperature=0.0)):
            shapes.clear()
            shared = hf.HFGenerator(policy, batch_size).generate(p, 4, s)
            assert [x for x in shapes if x[1] > 1] == prefills
            assert shared.completion_ids == Unshared(policy, batch_size).generate(p, 4, s).completion_ids
    finally:
        hook.remove()


def test_batched_logprobs_equal_one_at_a_time(built):
    policy, generator = built
    tok = policy.tokenizer
    prompts = prompts_of(tok, "1+2=", "123+456=", "9=")
    comps = [tok.encode(c, add_special_tokens=False) for c in ("3", "579!", "nine?")]
    logp, mask = policy.token_logprobs(prompts, comps)
    assert logp.shape == mask.shape == (3, 5) and logp.requires_grad
    assert mask.sum(1).tolist() == [1.0, 4.0, 5.0]
    for b in range(3):
        single, _ = policy.token_logprobs([prompts[b]], [comps[b]])
        assert torch.allclose(single[0], logp[b, : len(comps[b])], atol=1e-5)
        assert torch.all(logp[b, len(comps[b]):] == 0)
    # the first completion token is predicted from the last prompt token
    with torch.no_grad():
        ids = torch.tensor([prompts[0] + comps[0]])
        full = torch.log_softmax(policy.model(input_ids=ids).logits[0, len(prompts[0]) - 1].float(), -1)
    assert logp[0, 0].item() == pytest.approx(full[comps[0][0]].item(), abs=1e-5)


def test_logprobs_at_the_sampling_temperature(built):
    policy, _ = built
    tok = policy.tokenizer
    prompt, comp = tok.encode("12+3=", add_special_tokens=False), tok.encode("15", add_special_tokens=False)
    logp, _ = policy.token_logprobs([prompt], [comp], temperature=0.7)
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([prompt + comp])).logits[0, len(prompt) - 1:-1].float()
    expected = torch.log_softmax(logits / 0.7, -1).gather(-1, torch.tensor(comp).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(logp[0], expected, atol=1e-5)
    ref, _ = policy.token_logprobs([prompt], [comp], reference=True, temperature=0.7)
    assert torch.allclose(ref[0], expected, atol=1e-5)  # LoRA B is still zero: the reference is the same model


def test_reference_is_the_model_without_adapter():
    policy, _ = hf.build(cfg())
    tok = policy.tokenizer
    p, c = prompts_of(tok, "5+5="), prompts_of(tok, "10")
    before, _ = policy.token_logprobs(p, c)
    perturb_lora(policy)
    after, _ = policy.token_logprobs(p, c)
    ref, _ = policy.token_logprobs(p, c, reference=True)
    assert not torch.allclose(before, after) and torch.allclose(ref, before, atol=1e-6)
    assert not ref.requires_grad


def test_save_and_load_the_adapter(tmp_path):
    policy, _ = hf.build(cfg())
    perturb_lora(policy, seed=3)
    policy.save(tmp_path / "policy")
    assert (tmp_path / "policy" / "adapter_config.json").is_file()
    fresh, _ = hf.build(cfg())
    p, c = prompts_of(policy.tokenizer, "2+2="), prompts_of(policy.tokenizer, "4")
    assert not torch.allclose(fresh.token_logprobs(p, c)[0], policy.token_logprobs(p, c)[0])
    fresh.load(tmp_path / "policy")
    assert torch.allclose(fresh.token_logprobs(p, c)[0], policy.token_logprobs(p, c)[0], atol=1e-6)
    other = hf.load_policy(cfg("model.lora.rank=4"))
    with pytest.raises(Exception):
        other.load(tmp_path / "policy")  # a different LoRA shape does not fit


def test_full_parameter_policy_with_reference_copy(tmp_path):
    policy = hf.load_policy(cfg("model.lora.rank=0", "rl.beta=0.04"))
    assert all(p.requires_grad for p in policy.model.parameters()) and policy.reference is not None
    p, c = prompts_of(policy.tokenizer, "1+1="), prompts_of(policy.tokenizer, "2")
    with torch.no_grad():
        for w in policy.model.parameters():
            w.add_(0.01)
    assert not torch.allclose(policy.token_logprobs(p, c)[0], policy.token_logprobs(p, c, reference=True)[0])
    policy.save(tmp_path / "full")
    fresh = hf.load_policy(cfg("model.lora.rank=0"), weights=tmp_path / "full")
    assert torch.allclose(fresh.token_logprobs(p, c)[0], policy.token_logprobs(p, c)[0], atol=1e-6)
    with pytest.raises(ValueError, match="reference copy"):
        fresh.token_logprobs(p, c, reference=True)
    bigger = hf.load_policy(cfg("model.lora.rank=0", "model.tiny.layers=3"))
    with pytest.raises(ValueError, match="do not fit this model"):
        bigger.load(tmp_path / "full")


def test_load_a_local_model_dir_and_a_checkpoint(tmp_path, tiny_model_dir):
    from omegaconf import OmegaConf

    c = cfg(f"model.name={tiny_model_dir}")
    policy = hf.load_policy(c)
    assert type(policy.model.get_base_model()).__name__ == "Qwen2ForCausalLM"
    perturb_lora(policy, seed=5)
    run = tmp_path / "run"
    (run / "checkpoint-4").mkdir(parents=True)
    OmegaConf.save(c, run / "config.yaml", resolve=True)
    policy.save(run / "checkpoint-4" / "policy")
    loaded = hf.load_checkpoint_policy(run / "checkpoint-4")
    p, comp = prompts_of(policy.tokenizer, "8+1="), prompts_of(policy.tokenizer, "9")
    assert torch.allclose(loaded.token_logprobs(p, comp)[0], policy.token_logprobs(p, comp)[0], atol=1e-6)


def test_lm_head_gets_a_contiguous_input_for_the_kept_positions(tiny_model_dir):
    # torch's CPU matmul of a sliced (non-contiguous) [B, k, H] input copies the [V, H] weight once per row
    policy = hf.load_policy(cfg(f"model.name={tiny_model_dir}"))
    seen = []
    policy.model.get_output_embeddings().register_forward_hook(lambda m, args, out: seen.append(args[0]))
    p = prompts_of(policy.tokenizer, "12+30=", "7+5=")
    comp = prompts_of(policy.tokenizer, "42", "12")
    logp, _ = policy.token_logprobs(p, comp)
    assert seen and all(h.is_contiguous() for h in seen) and seen[0].shape[1] == 3  # logits_to_keep = T + 1
    full = policy.model(input_ids=torch.tensor([p[0] + comp[0]])).logits  # every position, no slice
    expected = torch.log_softmax(full[0, -3:-1].float(), -1).gather(-1, torch.tensor(comp[0])[:, None])[:, 0]
    assert torch.allclose(logp[0], expected, atol=1e-5)  # the same values as the unsliced pass
