"""Tiny models and the byte-level tokenizer built in code."""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from pods.backends.tiny import tiny_causal_lm


def test_tokenizer_round_trips_any_text(tokenizer):
    for text in ["123+456=0579", "héllo\nwörld ∑", "<answer>7</answer>"]:
        assert tokenizer.decode(tokenizer(text).input_ids) == text
    assert tokenizer.eos_token == "<|endoftext|>" and tokenizer.pad_token_id != tokenizer.eos_token_id


def test_chat_template_ends_with_generation_prompt(tokenizer):
    text = tokenizer.apply_chat_template([{"role": "user", "content": "2+2"}], add_generation_prompt=True, tokenize=False)
    assert text == "<|im_start|>user\n2+2<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_tiny_model_forward(tokenizer, arch):
    model = tiny_causal_lm(tokenizer, arch)
    out = model(torch.tensor([tokenizer("1+1=").input_ids]))
    assert out.logits.shape == (1, 4, len(tokenizer))
    with pytest.raises(ValueError, match="valid: qwen2, llama"):
        tiny_causal_lm(tokenizer, "gpt5")


def test_saved_tiny_model_reloads_identically(tiny_model_dir):
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    ids = torch.tensor([tok("12+3=").input_ids])
    again = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert torch.equal(model(ids).logits, again(ids).logits)
    assert tok.chat_template is not None
