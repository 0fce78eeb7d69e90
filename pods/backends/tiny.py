"""Tiny models and tokenizers built in code, for tests and the CPU demo (no hub downloads).

    tok = byte_tokenizer()                       # byte-level BPE without merges, chat template included
    model = tiny_causal_lm(tok, "qwen2", seed=0) # random-initialised Qwen2 (or "llama")
    save_tiny(path, ...)                         # a directory that transformers and vLLM can load

The tokenizer maps every UTF-8 byte to one token, so any text round-trips; it has
<|pad|>, <|endoftext|> (EOS) and the chat markers of Qwen's template.
"""

from __future__ import annotations

from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
ARCHITECTURES = {"qwen2": "Qwen2ForCausalLM", "llama": "LlamaForCausalLM"}
VOCAB = 256 + len(SPECIAL_TOKENS)  # byte_tokenizer's size
MLP_RATIO = 2  # intermediate size = MLP_RATIO x hidden


def byte_tokenizer():
    """A byte-level tokenizer (PreTrainedTokenizerFast): 256 byte tokens plus the special tokens, no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # transformers: only when a model is built
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    alphabet = ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for tok in SPECIAL_TOKENS:
        vocab[tok] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|endoftext|>",
        pad_token="<|pad|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_config(tokenizer, arch: str = "qwen2", hidden: int = 64, layers: int = 2, heads: int = 4,
                kv_heads: int = 2, max_positions: int = 512):
    from transformers import AutoConfig

    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown tiny architecture {arch!r}; valid: {', '.join(ARCHITECTURES)}")
    return AutoConfig.for_model(
        arch,
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=MLP_RATIO * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        architectures=[ARCHITECTURES[arch]],
    )


def tiny_causal_lm(tokenizer, arch: str = "qwen2", seed: int = 0, **sizes):
    """A random-initialised causal LM sized for CPU tests (float32)."""
    import torch  # here: the memory estimate reads this module's sizes without loading torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(tiny_config(tokenizer, arch, **sizes), dtype=torch.float32)


def save_tiny(path: str | Path, arch: str = "qwen2", seed: int = 0, **sizes) -> Path:
    """Write a tiny model and its tokenizer to `path` (loadable with from_pretrained / vLLM)."""
    path = Path(path)
    tok = byte_tokenizer()
    model = tiny_causal_lm(tok, arch, seed, **sizes)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
