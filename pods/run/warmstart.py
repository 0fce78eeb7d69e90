"""The CPU demo's supervised warm start: a tiny random model taught the task a little, then stopped.

    model_dir = ensure_warmstart(cfg.warmstart)   # -> ~/.cache/pods/warmstart/<hash>/ (cached: cache_dir)
    uv run python -m pods.run.warmstart [key=value ...]   # the same from a shell; prints the directory, accuracies

Trains `pods.backends.tiny`'s model by teacher forcing on correct answers, checks greedy accuracy on a held-out
set every `eval_every` steps and stops once it reaches `target_greedy`. The cache `<cache_dir>/<hash>/` (model,
tokenizer, `warmstart.json`: the settings, accuracies, each file's sha256) is written whole or not at all and
checked at every use: a damaged one is rebuilt with a warning. Bad settings: ConfigError. Why: docs/demo.md.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from pods import data, rewards
from pods.backends.tiny import byte_tokenizer, tiny_causal_lm
from pods.config.checks import warmstart_problems
from pods.config.schema import WarmStartSettings, settings_from
from pods.errors import ConfigError
from pods.io import checksum_problem, discard_dir, publish_dir

# ----------------------------------------------------------------------------- data


def task_data(s: WarmStartSettings, tokenizer):
    """(train prompt ids, train target ids, held-out prompt ids, held-out answers, verifier) for the task."""
    train = data.load_dataset(s.dataset, split="train", **s.options)
    test = data.load_dataset(s.dataset, split="test", **s.options)[: s.eval_size]
    _, train_prompts, _ = data.render_prompts(train, tokenizer, style=s.prompt_style)
    _, test_prompts, _ = data.render_prompts(test, tokenizer, style=s.prompt_style)
    answers = tokenizer([data.reference_completion(ex) for ex in train], add_special_tokens=False,
                        return_attention_mask=False)["input_ids"]  # one batch call: the ids of one encode() each
    targets = [list(ids) + [tokenizer.eos_token_id] for ids in answers]
    return train_prompts, targets, test_prompts, [ex.answer for ex in test], rewards.get(data.DATASETS[s.dataset].reward)


# ----------------------------------------------------------------------------- train / evaluate


def _batch(prompts: list[list[int]], targets: list[list[int]], pad: int):
    """Right-padded prompt+target ids [B, T], attention mask [B, T], labels [B, T] (-100 off-target)."""
    seqs = [p + t for p, t in zip(prompts, targets)]
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    att = torch.zeros(len(seqs), T, dtype=torch.long)
    labels = torch.full((len(seqs), T), -100, dtype=torch.long)
    for i, (p, t) in enumerate(zip(prompts, targets)):
        ids[i, : len(p) + len(t)] = torch.tensor(p + t)
        att[i, : len(p) + len(t)] = 1
        labels[i, len(p) : len(p) + len(t)] = torch.tensor(t)
    return ids, att, labels


@torch.no_grad()
def generate(model, tokenizer, prompts: list[list[int]], *, max_new_tokens: int, temperature: float = 0.0,
             seed: int = 0, batch_size: int = 512) -> list[str]:
    """One completion per prompt (greedy when temperature == 0), decoded without special tokens."""
    out = []
    torch.manual_seed(seed)
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        L = max(len(p) for p in chunk)
        ids = torch.tensor([[tokenizer.pad_token_id] * (L - len(p)) + p for p in chunk])  # left padding
        att = (torch.arange(L).unsqueeze(0) >= torch.tensor([L - len(p) for p in chunk]).unsqueeze(1)).long()
        kw = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else dict(do_sample=False)
        gen = model.generate(input_ids=ids, attention_mask=att, max_new_tokens=max_new_tokens,
                             pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, **kw)
        out.extend(tokenizer.batch_decode(gen[:, L:], skip_special_tokens=True))
    return out


def accuracy(model, tokenizer, prompts, answers, verifier, *, max_new_tokens: int, temperature: float = 0.0,
             seed: int = 0) -> float:
    texts = generate(model, tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
    return sum(float(r) > 0 for r in verifier(texts, answers)) / len(answers)


def train(s: WarmStartSettings, log=print):
    """Run the warm start; returns (model, tokenizer, info dict). ConfigError when the target is not reached."""
    tok = byte_tokenizer()
    model = tiny_causal_lm(tok, s.arch, seed=s.model_seed, hidden=s.hidden, layers=s.layers, heads=s.heads,
                           kv_heads=s.kv_heads)
    model.generation_config.pad_token_id = tok.pad_token_id
    train_p, train_t, test_p, test_a, verifier = task_data(s, tok)
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr)
    g = torch.Generator().manual_seed(s.seed)
    order, pos, t0, history = torch.randperm(len(train_p), generator=g), 0, time.time(), []
    for step in range(1, s.max_steps + 1):
        if pos + s.batch_size > len(order):
            order, pos = torch.randperm(len(train_p), generator=g), 0
        idx = order[pos : pos + s.batch_size].tolist()
        pos += s.batch_size
        ids, att, labels = _batch([train_p[i] for i in idx], [train_t[i] for i in idx], tok.pad_token_id)
        model.train()
        loss = model(input_ids=ids, attention_mask=att, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % s.eval_every == 0:
            model.eval()
            acc = accuracy(model, tok, test_p, test_a, verifier, max_new_tokens=s.max_new_tokens)
            history.append({"step": step, "loss": loss.item(), "greedy_acc": acc, "seconds": time.time() - t0})
            log(f"warm start step {step}: loss {loss.item():.3f}, greedy accuracy {acc:.3f} on {len(test_a)} "
                "held-out problems")
            if acc >= s.target_greedy:
                sampled = accuracy(model, tok, test_p, test_a, verifier, max_new_tokens=s.max_new_tokens,
                                   temperature=1.0, seed=s.seed)
                info = {"settings": dataclasses.asdict(s), "steps": step, "greedy_acc": acc,
                        "sampled_acc_t1": sampled, "seconds": time.time() - t0, "history": history}
                return model, tok, info
    last = (f"greedy accuracy {history[-1]['greedy_acc']:.3f} at step {history[-1]['step']}" if history else
            f"no evaluation: warmstart.eval_every={s.eval_every} > warmstart.max_steps")
    raise ConfigError(f"the warm start did not reach warmstart.target_greedy={s.target_greedy} in "
                      f"warmstart.max_steps={s.max_steps} steps ({last}); nothing was cached. Raise "
                      "warmstart.max_steps or warmstart.lr, or lower warmstart.target_greedy")


INFO_FILE = "warmstart.json"  # settings, accuracies, and `files`: {name: sha256} of the other files


def cache_problem(directory: Path) -> str | None:
    """Why the cached warm start in `directory` cannot be used, or None when every file matches its checksum."""
    return checksum_problem(directory, INFO_FILE)


def ensure_warmstart(cfg, log=print) -> Path:
    """The cached warm-started model directory for these settings, (re)training it first if missing or damaged."""
    problems = warmstart_problems(cfg)
    if problems:
        raise ConfigError("invalid warm-start settings:\n  - " + "\n  - ".join(problems))
    s, cache_dir = settings_from(cfg)
    final = cache_dir / s.key()
    if final.exists():
        damage = cache_problem(final)
        if damage is None:
            return final
        print(f"warning: the cached warm start {final} is damaged ({damage}); rebuilding it", file=sys.stderr)
        discard_dir(final)
    log(f"warm start: training the tiny model on {s.dataset} to greedy accuracy {s.target_greedy} -> {final}")
    model, tok, info = train(s, log=log)

    def fill(tmp: Path) -> dict:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        return info

    publish_dir(final, fill, INFO_FILE)
    log(f"warm start: {info['steps']} steps, greedy {info['greedy_acc']:.3f}, sampled (T=1) "
        f"{info['sampled_acc_t1']:.3f} on {s.eval_size} held-out problems, {info['seconds']:.0f} s")
    return final


if __name__ == "__main__":
    from omegaconf import OmegaConf

    from pods.cli import set_cpu_threads

    set_cpu_threads()  # PODS_THREADS, else as pods.cli.cpu_threads chooses

    cfg = OmegaConf.to_container(OmegaConf.from_dotlist(sys.argv[1:]))  # key=value, typed as YAML
    path = ensure_warmstart(cfg)
    print(path)
    info = json.loads((path / INFO_FILE).read_text())
    print(json.dumps({k: v for k, v in info.items() if k not in ("history", "files")}))
