"""Datasets as `Example(prompt, answer, meta)` lists, and prompt rendering for a tokenizer.

    from pods import data
    train = data.load_dataset("gsm8k", split="train", path="data/gsm8k")      # local dir or file
    kept, ids, n_dropped = data.render_prompts(train, tok, style="instruct",
                                               system_prompt=data.SYSTEM_PROMPT, max_prompt_tokens=256)

`DATASETS` declares each dataset once (its reward, its answer type, its source or generator:
pods/data/sources.py); a local `path` wins over the hub. `training_set` prepares the trainer's prompts as the paper did; `meta` columns reach the rewards as
keyword columns. Bad files or settings: DataError / ConfigError. Sources, styles, preparation: docs/datasets.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pods import plugins
from pods.data.example import Example
from pods.data.math_labels import labels_problem
from pods.data.sources import DATASETS, blank_rows, is_blank, load_rows, to_examples, usable_answer
from pods.errors import ConfigError, DataError

log = logging.getLogger(__name__)

# The default system prompt (the R1-Zero-style one of open-r1's demo recipes): reasoning in <think> tags, the final
# answer in <answer> tags. Neither of the paper's: its single-GPU runs used PAPER_SYSTEM_PROMPT, its 8-GPU runs
# the prompt in YixuanEvenXu/pods open-r1/recipes/Qwen2.5-3B-Instruct/config_pods.yaml (at 3fc107e).
SYSTEM_PROMPT = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. "
    "The assistant first thinks about the reasoning process in the mind and then provides the user with "
    "the answer. The reasoning process and answer are enclosed within <think> </think> and "
    "<answer> </answer> tags, respectively, i.e., <think> reasoning process here </think> "
    "<answer> answer here </answer>."
)
# The authors' system prompt of their single-GPU runs and evaluation with instruct models (YixuanEvenXu/pods
# utils/data.py SYSTEM_PROMPT_INSTRUCT at 3fc107e, lines 25-37, newlines included); config/dataset/gsm8k.yaml and
# math.yaml.
PAPER_SYSTEM_PROMPT = (
    "\nYou will be given a math question.\nReason about the question and correct your own mistakes if you make any."
    "\n\nRespond in the following format:\n<think>\nReason here. Decide to answer when you are confident as your "
    "response length is limited.\n</think>\n<answer>\nAnswer here.\n</answer>\n"
)
STYLES = ("instruct", "base", "plain")


# ----------------------------------------------------------------------------- loading


GENERATED = tuple(k for k, spec in DATASETS.items() if spec.generate)  # built in code: no file, hub or columns


def generated_source_problem(name: str, prefix: str = "", **source) -> str | None:
    """Why file / hub / column settings (the non-None values of `source`, named `<prefix><key>`) cannot
    apply to the generated dataset `name`, or None."""
    given = [prefix + k for k, v in sorted(source.items()) if v is not None]
    if name not in DATASETS or not DATASETS[name].generate or not given:
        return None
    return (f"{', '.join(given)}: {name} is generated in code and reads no file, so {'it' if len(given) == 1 else 'they'}"
            f" would be ignored; remove {'it' if len(given) == 1 else 'them'}, or train on a file (dataset=gsm8k "
            "dataset.path=FILE reads question/answer rows; docs/datasets.md)")


def load_dataset(name: str, *, split: str = "train", path: str | Path | None = None, limit: int | None = None,
                 hub: str | None = None, prompt_column: str | None = None, answer_column: str | None = None,
                 subsets: list[str] | None = None, labels: str = "full", **options: Any) -> list[Example]:
    """Examples of dataset `name` (`DATASETS`, docs/datasets.md); local `path` wins over the hub.

    Options by dataset: arithmetic (digits, operands, size, seed, test_size), word_problems (size, seed,
    steps, test_size), gsm_symbolic (size, seed), math (subsets). `labels` (pods.data.math_labels.LABELS): math's answer labels, whole
    or cut as the authors' loader did. Unknown options or labels raise ConfigError.
    """
    if labels_problem(name, labels):
        raise ConfigError(labels_problem(name, labels))
    if plugins.is_plugin(name):  # your own function: path/to/file.py:function or package.module:function
        if options or path or hub or prompt_column or answer_column or subsets:
            raise ConfigError(f"dataset {name!r} is your own function: it takes no path or options, only the split")
        examples = plugin_examples(name, split)
        return examples[: int(limit)] if limit else examples
    if name not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}; valid names: {', '.join(sorted(DATASETS))}, or your own "
                          "function as package.module:function (docs/workbench.md)")
    ignored = generated_source_problem(name, path=path, hub=hub, prompt_column=prompt_column,
                                       answer_column=answer_column, subsets=subsets)
    if ignored:
        raise ConfigError(ignored)
    spec = DATASETS[name]
    if spec.generate:
        examples = spec.generate(split, **options)
    else:
        if options:
            raise ConfigError(f"{name}: unknown option(s) {sorted(options)}; valid: path, hub, limit, "
                              f"prompt_column, answer_column" + (", subsets" if spec.subsets else ""))
        rows, source, places = load_rows(name, split, path, hub, subsets)
        examples = to_examples(name, rows, source, prompt_column, answer_column, places, labels)
    return examples[: int(limit)] if limit else examples


def load_examples(ds) -> list[Example]:
    """The examples of a dataset config section (train.py's `dataset`) or an evaluation entry: keys name,
    split, path, limit, options, labels (math). Callers read them before any model loads, so a bad file or an
    unreachable hub costs seconds; DataError / ConfigError say what to fix."""
    examples = load_dataset(ds["name"], split=ds["split"], path=ds["path"], limit=ds["limit"],
                            labels=ds.get("labels") or "full", **dict(ds["options"] or {}))
    if not examples:
        raise DataError(f"{ds['name']} ({ds['split']} split): no examples; check the dataset's size options")
    return examples


def plugin_examples(name: str, split: str) -> list[Example]:
    """The examples of your dataset function `name` (pods.plugins): Examples, or dicts with a text `prompt`,
    an `answer` (text or a finite number) and any columns for the rewards; PluginError naming the row."""
    hint = f"\n  expected: {plugins.DATASET_SIGNATURE}"
    out, rows, blank = [], plugins.rows(name, split), {"prompt": [], "answer": []}
    for i, row in enumerate(rows):
        if isinstance(row, dict) and "prompt" in row and "answer" in row:
            row = Example(prompt=row["prompt"], answer=row["answer"],
                          meta={k: v for k, v in row.items() if k not in ("prompt", "answer")})
        if not isinstance(row, Example):
            raise plugins.PluginError(f"dataset {name!r}: split {split!r}, row {i} is {row!r:.200}: each row must be "
                                      f"a pods.data.Example or a dict with a 'prompt' and an 'answer'{hint}")
        answer = row.answer
        empty = [what for what, value in (("prompt", row.prompt), ("answer", answer)) if is_blank(value)]
        for what in empty:
            blank[what].append(f"row {i}")
        if empty:
            continue
        if not isinstance(row.prompt, str) or not usable_answer(answer):
            raise plugins.PluginError(
                f"dataset {name!r}: split {split!r}, row {i}: the prompt must be text and the answer text or a finite "
                f"number (a list, a mapping, NaN or a bool matches no completion); got prompt {row.prompt!r:.80}, "
                f"answer {answer!r:.80}{hint}")
        out.append(row if isinstance(answer, str) else Example(row.prompt, str(answer), row.meta))
    for what, found in blank.items():
        if found:
            raise plugins.PluginError(blank_rows(f"dataset {name!r}: split {split!r}", what, found, len(rows)) + hint)
    if not out:
        raise plugins.PluginError(f"dataset {name!r}: split {split!r} is empty{hint}")
    return out


def reference_completion(example: Example) -> str:
    """A correct target completion for supervised warm starts (arithmetic: the bare answer)."""
    return example.meta.get("completion") or example.answer


# ----------------------------------------------------------------------------- prompts



def prompt_text(example: Example, tokenizer, style: str = "instruct", system_prompt: str | None = None,
                shots=()) -> str:
    """The full prompt string of one example in `style`: `instruct` = optional system prompt, the `shots` (worked
    examples {question, completion}) as earlier user / assistant turns, then the question as the user turn, through
    `tokenizer.apply_chat_template(..., add_generation_prompt=True)`; `base` (alias `plain`) = the text itself (a
    system prompt, if given, then a blank line, then each shot's question and completion, then the question)."""
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; valid: instruct, base (alias plain)")
    shots = list(shots or ())
    if style == "instruct":
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("prompt style 'instruct' needs a tokenizer with a chat template; "
                             "this one has none: use style 'base'")
        system = SYSTEM_PROMPT if system_prompt is None else system_prompt
        turns = [t for shot in shots for t in ({"role": "user", "content": shot["question"]},
                                               {"role": "assistant", "content": shot["completion"]})]
        messages = ([{"role": "system", "content": system}] if system else []) + turns + [
            {"role": "user", "content": example.prompt}]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    text = "".join(f"{shot['question']}\n{shot['completion']}\n\n" for shot in shots) + example.prompt
    return f"{system_prompt}\n\n{text}" if system_prompt else text


def shots_problems(shots, where: str = "dataset.shots") -> list[str]:
    """Problems of a `shots` list: each item a mapping with the strings `question` and `completion`, nothing else."""
    if shots is None:
        return []
    if isinstance(shots, (str, Mapping)) or not isinstance(shots, Sequence):
        return [f"{where} must be a list of {{question, completion}} worked examples, got {shots!r}"]
    problems = []
    for i, shot in enumerate(shots):
        keys = set(shot) if isinstance(shot, Mapping) else None
        if keys != {"question", "completion"} or not all(isinstance(shot[k], str) and shot[k].strip() for k in keys):
            problems.append(f"{where}[{i}] must be {{question: <text>, completion: <text>}} (both non-empty), "
                            f"got {shot!r}")
    return problems


def meta_columns(examples: list[Example]) -> dict[str, list]:
    """Every meta key of the examples as a column {key: [N]} (None where an example lacks it),
    passed to reward functions as `**columns`."""
    keys = sorted({k for ex in examples for k in (ex.meta or {})})
    return {k: [(ex.meta or {}).get(k) for ex in examples] for k in keys}


def shuffled(items: list, seed: int | None) -> list:
    """`items` in the order `datasets.Dataset.shuffle(seed=seed)` gives them (numpy's
    `default_rng(seed).permutation(len(items))`); seed None: unchanged."""
    if seed is None:
        return list(items)
    import numpy as np

    return [items[i] for i in np.random.default_rng(int(seed)).permutation(len(items))]


def training_set(examples: list[Example], tokenizer, dataset_cfg, max_prompt_tokens: int | None):
    """`(kept_examples, prompt_ids, n_dropped)`: the training prompts prepared as the paper did.

    Render with `dataset_cfg.prompt_style` / `system_prompt`, drop prompts longer than
    `max_prompt_tokens` tokens (the authors: <= 512 tokens of the chat-templated prompt,
    utils/data.py `filter_function`), then, when `dataset_cfg.shuffle_seed` is set, shuffle what is
    kept like `datasets.Dataset.shuffle(seed=...)` (the authors' MATH loader: `.filter(...).shuffle(seed=42)`,
    utils/data.py:168 at 3fc107e; GSM8K was not shuffled). Deterministic: every load (a resume
    included) gives the same list, so the trainer's PromptStream positions stay valid.
    """
    kept, ids, dropped = render_prompts(examples, tokenizer, style=dataset_cfg.prompt_style,
                                        system_prompt=dataset_cfg.system_prompt, max_prompt_tokens=max_prompt_tokens,
                                        shots=dataset_cfg.get("shots"))
    seed = dataset_cfg.get("shuffle_seed")
    return shuffled(kept, seed), shuffled(ids, seed), dropped


def render_prompts(examples: list[Example], tokenizer, style: str = "instruct", system_prompt: str | None = None,
                   max_prompt_tokens: int | None = None, shots=()):
    """`(kept_examples, prompt_ids [K][len], n_dropped)`: prompts longer than `max_prompt_tokens`
    tokens are dropped (None: no limit, every example is kept) and the count is logged.
    `system_prompt=None` means the style's default (instruct: SYSTEM_PROMPT; base: none); pass ""
    for no system prompt with instruct. Instruct text is tokenized without extra special tokens (the
    chat template has them); base text with the tokenizer's defaults (e.g. a BOS token).
    """
    texts = [prompt_text(ex, tokenizer, style, system_prompt, shots) for ex in examples]
    ids = [list(p) for p in tokenizer(texts, add_special_tokens=(style != "instruct"), return_attention_mask=False,
                                      return_token_type_ids=False)["input_ids"]] if texts else []  # one batch call
    if max_prompt_tokens is None:
        return list(examples), ids, 0
    keep = [i for i, p in enumerate(ids) if len(p) <= int(max_prompt_tokens)]
    n_dropped = len(ids) - len(keep)
    if n_dropped:
        log.warning("dropped %d of %d prompts longer than %d tokens", n_dropped, len(ids), max_prompt_tokens)
    return [examples[i] for i in keep], [ids[i] for i in keep], n_dropped
