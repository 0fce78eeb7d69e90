"""pods.data: local loaders, clear errors, prompt styles and the length filter (offline).

Run: uv run pytest tests/pods/data/test_data.py
"""

import json

import pytest

from pods import data
from pods.backends.tiny import byte_tokenizer
from pods.data.sources import MATH_SUBSETS

from helpers import compose

FIX = "tests/fixtures"

LOAD_CASES = [
    # (name, split, expected answers, a meta key that must be present)
    # GSM8K: the number after '####', thousands commas removed, the solution kept in meta
    pytest.param("gsm8k", "train", ["27", "135", "1080"], "solution", id="gsm8k"),
    # hendrycks MATH: the last boxed expression of the solution, nested braces intact
    pytest.param("math", "train", [r"\frac{1}{2}", "[2,3]", r"\left( 3, \frac{\pi}{2} \right)", r"120^\circ",
                                   r"5\sqrt{2}"], "level", id="math"),
    # MATH-500: the answer column
    pytest.param("math500", "test", ["4", "15", r"\text{(A)}"], "unique_id", id="math500"),
    # AMC23: float answers printed as integers
    pytest.param("amc23", "test", ["25", "9"], "id", id="amc23"),
    # chemistry: answers as written
    pytest.param("chemistry", "test", ["4.5 g", "B", "Ca(OH)_2", "3"], None, id="chemistry"),
]


@pytest.mark.parametrize("name, split, answers, meta_key", LOAD_CASES)
def test_load_local_fixture(name, split, answers, meta_key):
    examples = data.load_dataset(name, split=split, path=f"{FIX}/{name}")
    assert [ex.answer for ex in examples] == answers
    assert all(isinstance(ex.prompt, str) and ex.prompt for ex in examples)
    if meta_key:
        assert all(meta_key in ex.meta for ex in examples)


def test_file_path_parquet_and_json(tmp_path):
    # the same rows load from a single .jsonl, .json and .parquet file
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"question": "1+1?", "answer": 2.0}, {"question": "2+2?", "answer": 4.0}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "amc.parquet")
    (tmp_path / "amc.json").write_text(json.dumps(rows))
    (tmp_path / "amc.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for file in ("amc.parquet", "amc.json", "amc.jsonl"):
        got = data.load_dataset("amc23", split="test", path=tmp_path / file)
        assert [(ex.prompt, ex.answer) for ex in got] == [("1+1?", "2"), ("2+2?", "4")]


def test_limit_and_column_overrides(tmp_path):
    (tmp_path / "x.jsonl").write_text('{"q": "a?", "gold": "B"}\n{"q": "b?", "gold": "C"}\n')
    got = data.load_dataset("chemistry", split="test", path=tmp_path / "x.jsonl", prompt_column="q",
                            answer_column="gold", limit=1)
    assert [(ex.prompt, ex.answer) for ex in got] == [("a?", "B")]


def test_chemistry_choices_are_listed_in_the_prompt():
    ex = data.load_dataset("chemistry", split="test", path=f"{FIX}/chemistry")[1]
    assert ex.prompt.endswith("(A) O2\n(B) H2\n(C) Cl2\n(D) CO2")


ERROR_CASES = [
    # (setup, kwargs, message fragment)
    # a directory without the split's file names what it looked for
    pytest.param("dir", {"split": "validation"}, "looked for validation.jsonl", id="missing-split-file"),
    # a path that does not exist
    pytest.param(None, {"split": "train", "path": "/nonexistent/gsm8k.jsonl"}, "does not exist", id="missing-path"),
    # a file without the question column names the columns it found
    pytest.param("nocol", {"split": "train"}, "no prompt column", id="missing-prompt-column"),
    # a file without the answer column
    pytest.param("noans", {"split": "train"}, "no answer column", id="missing-answer-column"),
    # a bad JSONL line gives file and line number
    pytest.param("badjson", {"split": "train"}, "line 2 is not valid JSON", id="bad-json"),
    # an unsupported file type
    pytest.param("csv", {"split": "train"}, "unsupported file type", id="csv"),
    # options the loader does not know
    pytest.param("dir", {"split": "train", "digits": 3}, "unknown option", id="unknown-option"),
]


@pytest.mark.parametrize("setup, kwargs, message", ERROR_CASES)
def test_clear_errors(tmp_path, setup, kwargs, message):
    files = {"nocol": ("g.jsonl", '{"text": "x", "answer": "1"}\n'),
             "noans": ("g.jsonl", '{"question": "x", "label": "1"}\n'),
             "badjson": ("g.jsonl", '{"question": "x", "answer": "#### 1"}\n{oops\n'),
             "csv": ("g.csv", "question,answer\n")}
    path = kwargs.pop("path", None)
    if setup == "dir":
        (tmp_path / "train.jsonl").write_text('{"question": "x", "answer": "#### 1"}\n')
        path = tmp_path
    elif setup in files:
        name, text = files[setup]
        (tmp_path / name).write_text(text)
        path = tmp_path / name
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        data.load_dataset("gsm8k", path=path, **kwargs)


def test_unknown_dataset_and_no_hub_for_chemistry():
    with pytest.raises(ValueError, match="valid names: amc23, arithmetic, chemistry"):
        data.load_dataset("mmlu")
    # chemistry has no default hub dataset: the error says to set a path (no network touched)
    with pytest.raises(ValueError, match="dataset.path"):
        data.load_dataset("chemistry", split="test")


def test_hub_split_checked_before_any_download():
    # MATH-500 only has a test split on the hub; asking for train fails before importing datasets
    with pytest.raises(ValueError, match="not 'train'"):
        data.load_dataset("math500", split="train")


# ----------------------------------------------------------------------------- prompts


@pytest.fixture(scope="module")
def tok():
    return byte_tokenizer()


def test_instruct_uses_chat_template_with_system_prompt(tok):
    ex = data.Example("What is 2+2?", "4")
    text = data.prompt_text(ex, tok, "instruct", None)
    assert text == tok.apply_chat_template(
        [{"role": "system", "content": data.SYSTEM_PROMPT}, {"role": "user", "content": "What is 2+2?"}],
        tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    # "" switches the system prompt off
    assert "system" not in data.prompt_text(ex, tok, "instruct", "")
    _, ids, _ = data.render_prompts([ex], tok, style="instruct")
    assert tok.decode(ids[0]) == text


def test_system_prompt_asks_for_think_and_answer_tags():
    assert "<think>" in data.SYSTEM_PROMPT and "<answer>" in data.SYSTEM_PROMPT


def test_base_style_is_plain_text(tok):
    ex = data.Example("123+456=", "0579")
    assert data.render_prompts([ex], tok, style="base")[1] == [tok("123+456=")["input_ids"]]
    # 'plain' is an alias of 'base'
    assert data.render_prompts([ex], tok, style="plain")[1] == data.render_prompts([ex], tok, style="base")[1]
    # a system prompt, if given, comes first
    assert data.prompt_text(ex, tok, "base", "Add.") == "Add.\n\n123+456="


def test_a_batch_of_prompts_is_tokenized_as_each_prompt_alone(tok):
    """render_prompts tokenizes the list in one call: each prompt's ids are what the tokenizer gives its text."""
    examples = [data.Example(q, "1") for q in ("12+3=", "héllo wörld", "<|im_start|> in a question", "a" * 40, " ")]
    for style, special in (("instruct", False), ("base", True)):
        _, ids, _ = data.render_prompts(examples, tok, style=style, system_prompt="Sys.")
        alone = [tok(data.prompt_text(ex, tok, style, "Sys."), add_special_tokens=special)["input_ids"] for ex in examples]
        assert ids == alone
    assert data.render_prompts([], tok, style="base") == ([], [], 0)


def test_length_filter_drops_and_counts(tok):
    examples = [data.Example("a" * n, "1") for n in (5, 50, 10, 500)]
    kept, ids, n_dropped = data.render_prompts(examples, tok, style="base", max_prompt_tokens=20)
    assert [len(ex.prompt) for ex in kept] == [5, 10] and n_dropped == 2
    assert [len(i) for i in ids] == [5, 10]
    # None: no limit, nothing dropped
    kept, ids, n_dropped = data.render_prompts(examples, tok, style="base", max_prompt_tokens=None)
    assert len(kept) == 4 and n_dropped == 0


def test_bad_style_and_missing_template(tok):
    ex = data.Example("q", "a")
    with pytest.raises(ValueError, match="valid: instruct, base"):
        data.render_prompts([ex], tok, style="chat")

    class NoTemplate:
        chat_template = None

    with pytest.raises(ValueError, match="use style 'base'"):
        data.render_prompts([ex], NoTemplate(), style="instruct")


def test_reference_completion():
    assert data.reference_completion(data.Example("1+2=", "03")) == "03"


# ----------------------------------------------------------------------------- hub path (faked)


@pytest.fixture
def fake_hub(monkeypatch):
    """Replace datasets.load_dataset with a recorder returning rows in each hub dataset's format."""
    import datasets

    calls = []
    rows = {
        "openai/gsm8k": [{"question": "q", "answer": "work\n#### 1,234"}],
        "EleutherAI/hendrycks_math": [{"problem": "p", "level": "Level 1", "type": "Algebra",
                                       "solution": r"so $\boxed{\frac{1}{2}}$"}],
        "HuggingFaceH4/MATH-500": [{"problem": "p", "solution": "s", "answer": r"\sqrt{2}", "subject": "Algebra",
                                    "level": 2, "unique_id": "u"}],
        "math-ai/amc23": [{"id": 0, "question": "q", "answer": 27.0}],
        "zwhe99/amc23": [{"id": 0, "question": "q", "answer": 27.0}, {"id": 1, "question": "r", "answer": 3159.0}],
    }

    def load(hub_id, config=None, split=None):
        calls.append((hub_id, config, split))
        return rows[hub_id]

    monkeypatch.setattr(datasets, "load_dataset", load)
    return calls


HUB_CASES = [
    # GSM8K: config 'main'
    pytest.param("gsm8k", "train", [("openai/gsm8k", "main", "train")], ["1234"], id="gsm8k"),
    # MATH: one call per hendrycks subset, all 7 concatenated
    pytest.param("math", "test", [("EleutherAI/hendrycks_math", s, "test") for s in MATH_SUBSETS],
                 [r"\frac{1}{2}"] * 7, id="math-7-subsets"),
    # MATH-500 and AMC23: test split only
    pytest.param("math500", "test", [("HuggingFaceH4/MATH-500", None, "test")], [r"\sqrt{2}"], id="math500"),
    # AMC23: the paper's copy zwhe99/amc23, answers cast to integers
    pytest.param("amc23", "test", [("zwhe99/amc23", None, "test")], ["27", "3159"], id="amc23"),
]


@pytest.mark.parametrize("name, split, calls, answers", HUB_CASES)
def test_hub_sources(fake_hub, name, split, calls, answers):
    got = data.load_dataset(name, split=split)
    assert fake_hub == calls
    assert [ex.answer for ex in got] == answers


def test_math_subsets_option(fake_hub):
    got = data.load_dataset("math", split="train", subsets=["algebra", "geometry"])
    assert [c[1] for c in fake_hub] == ["algebra", "geometry"] and len(got) == 2
    with pytest.raises(ValueError, match="unknown subset"):
        data.load_dataset("math", split="train", subsets=["calculus"])


def test_local_path_never_touches_the_hub(fake_hub):
    data.load_dataset("gsm8k", split="train", path=f"{FIX}/gsm8k")
    assert fake_hub == []


def test_amc23_other_copy_and_non_integer_answers(fake_hub, tmp_path, caplog):
    # the copy the suite used before stays one option away
    got = data.load_dataset("amc23", split="test", hub="math-ai/amc23")
    assert fake_hub == [("math-ai/amc23", None, "test")] and [ex.answer for ex in got] == ["27"]
    # a non-integral answer is kept as written (the paper's int() would have truncated 2.5 to 2), with a warning
    (tmp_path / "test.jsonl").write_text('{"question": "a", "answer": 2.5}\n{"question": "b", "answer": "12.0"}\n')
    got = data.load_dataset("amc23", split="test", path=tmp_path)
    assert [ex.answer for ex in got] == ["2.5", "12"] and "would make it 2" in caplog.text


def test_math_labels_keep_the_whole_boxed_answer(fake_hub):
    # the authors' loader cut \boxed{\frac{1}{2}} at its first "}" and trained on the label "\frac{1";
    # the suite keeps the whole expression unless labels=paper (docs/datasets.md, test_math_labels.py)
    got = data.load_dataset("math", split="train", subsets=["algebra"])
    assert got[0].answer == r"\frac{1}{2}" and got[0].meta["solution"].endswith(r"\boxed{\frac{1}{2}}$")


# ----------------------------------------------------------------------------- the paper's preparation


def test_shuffled_is_the_order_of_datasets_shuffle():
    import datasets

    items = [f"q{i}" for i in range(50)]
    expected = datasets.Dataset.from_dict({"q": items}).shuffle(seed=42)["q"]
    assert data.shuffled(items, 42) == expected != items
    assert data.shuffled(items, None) == items


def test_training_set_filters_then_shuffles_like_the_authors(tok):
    import datasets
    from omegaconf import OmegaConf

    examples = [data.Example("q" * n, str(n)) for n in (5, 50, 7, 9, 500, 3, 11, 8, 60, 4)]
    cfg = OmegaConf.create({"prompt_style": "base", "system_prompt": None, "shuffle_seed": 42})
    kept, ids, dropped = data.training_set(examples, tok, cfg, max_prompt_tokens=20)
    # the authors: Dataset.filter(length <= 512 tokens).shuffle(seed=42) -- filter first, then shuffle
    ds = datasets.Dataset.from_dict({"prompt": [e.prompt for e in examples], "answer": [e.answer for e in examples]})
    expected = ds.filter(lambda x: len(tok(x["prompt"])["input_ids"]) <= 20).shuffle(seed=42)["answer"]
    assert [e.answer for e in kept] == expected and dropped == 3
    assert [len(i) for i in ids] == [int(a) for a in expected]  # ids follow their examples
    cfg.shuffle_seed = None
    assert [e.answer for e in data.training_set(examples, tok, cfg, max_prompt_tokens=20)[0]] == [
        "5", "7", "9", "3", "11", "8", "4"]


def test_trainer_loads_the_paper_prepared_math_set_the_same_way_every_time(tok):
    from pods.run.prepare import load_prompts

    root = __import__("pathlib").Path(__file__).resolve().parents[3]
    cfg = compose(["dataset=math", f"dataset.path={root}/{FIX}/math", "rl.max_prompt_tokens=100000"])
    assert cfg.dataset.shuffle_seed == 42 and cfg.dataset.system_prompt == data.PAPER_SYSTEM_PROMPT
    ids, answers, cols = load_prompts(cfg, tok)
    file_order = [ex.answer for ex in data.load_dataset("math", split="train", path=f"{FIX}/math")]
    assert answers == data.shuffled(file_order, 42) != file_order
    assert load_prompts(cfg, tok) == (ids, answers, cols)  # a resume sees the same list: PromptStream stays exact
    levels = [ex.meta["level"] for ex in data.load_dataset("math", split="train", path=f"{FIX}/math")]
    assert cols["level"] == data.shuffled(levels, 42)  # meta columns travel with their prompts


# ----------------------------------------------------------------------------- bad files (pods.errors.DataError)


def _parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


BAD_FILES = [
    # (file name, content: bytes, or rows for parquet, message fragments)
    pytest.param("t.jsonl", b"", ["t.jsonl is empty"], id="empty-jsonl"),
    pytest.param("t.jsonl", b"\n  \n", ["t.jsonl is empty"], id="blank-jsonl"),
    pytest.param("t.parquet", b"", ["t.parquet is empty"], id="empty-parquet"),
    pytest.param("t.parquet", b"PAR1 not really", ["t.parquet is not a readable parquet file"], id="corrupt-parquet"),
    pytest.param("t.json", b'[{"question": "a", "answer": "1"},\n {"question": "b", "answer": }]',
                 ["t.json line 2 column", "is not valid JSON"], id="malformed-json"),
    pytest.param("t.jsonl", b'{"question": "a", "answer": "1"}\n{"question": "caf\xe9", "answer": "2"}\n',
                 ["t.jsonl line 2 is not UTF-8 text (byte 0xe9", "iconv", "save the file as UTF-8"],
                 id="latin1-jsonl"),
    pytest.param("t.jsonl", b'{"text": "a", "answer": "1"}\n', ["t.jsonl line 1: no prompt column",
                 "dataset.options.prompt_column"], id="missing-column"),
    pytest.param("t.json", b'[{"question": "a",\n "answer": "\xff"}]', ["t.json line 2 is not UTF-8"],
                 id="binary-json"),
    pytest.param("t.jsonl", b'{"question": ["a", "b"], "answer": "1"}\n', ["t.jsonl line 1: the prompt (column "
                 "'question') is a list, not text", "prompt_column"], id="prompt-list"),
    pytest.param("t.jsonl", b'{"question": "a", "answer": "1"}\n\n{"question": "b", "answer": [1, 2]}\n',
                 ["t.jsonl line 3: the answer (column 'answer') is list [1, 2], which would become an answer no "
                  "completion can match"], id="answer-list"),
    pytest.param("t.jsonl", b'{"question": "a", "answer": {"x": 1}}\n', ["the answer (column 'answer') is dict"],
                 id="answer-dict"),
    pytest.param("t.jsonl", b'{"question": "a", "answer": NaN}\n',
                 ["the answer (column 'answer') is nan (not a finite number)"],
                 id="answer-nan-jsonl"),
    pytest.param("t.jsonl", b'{"question": "a", "answer": true}\n', ["the answer (column 'answer') is bool"],
                 id="answer-bool"),
    pytest.param("t.jsonl", b'{"question": "a", "answer": null}\n', ["the answer (column 'answer') is null"],
                 id="answer-null"),
    pytest.param("t.jsonl", b'[1, 2]\n', ["t.jsonl line 1 is not an object"], id="row-not-object"),
    pytest.param("t.json", b'{"question": "a"}', ["must hold a JSON list of objects"], id="json-not-list"),
    pytest.param("t.parquet", [{"question": "a", "answer": [1, 2]}], ["t.parquet row 1: the answer (column "
                 "'answer') is list"], id="parquet-answer-list"),
    pytest.param("t.parquet", [{"question": "a", "answer": {"x": 1, "y": "z"}}],
                 ["t.parquet row 1: the answer (column 'answer') is dict"], id="parquet-answer-struct"),
    pytest.param("t.parquet", [{"question": "a", "answer": 1.0}, {"question": "b", "answer": float("nan")}],
                 ["t.parquet row 2: the answer (column 'answer') is nan (not a finite number)"],
                 id="parquet-answer-nan"),
]


@pytest.mark.parametrize("name, content, messages", BAD_FILES)
def test_bad_files_name_the_file_and_what_is_wrong(tmp_path, name, content, messages):
    """Each of these used to be a raw library error or an answer no completion can match."""
    from pods.errors import DataError

    path = tmp_path / name
    if isinstance(content, list):
        _parquet(path, content)
    else:
        path.write_bytes(content)
    with pytest.raises(DataError) as err:
        data.load_dataset("chemistry", split="train", path=path)
    for message in messages:
        assert message in str(err.value)


@pytest.mark.parametrize("rows, overrides, said", [
    ('{"question": "a", "answer": "1"}\n{"question": "b", "answer": ""}\n{"question": "c", "answer": " \\t"}\n',
     ["dataset=gsm8k"], "gsm8k: {f}: 2 of 3 rows have an empty or blank answer (first: line 2), an answer no "
                        "completion can match (reward 0); fill them in or remove those rows"),
    ('{"question": "a", "answer": "1"}\n{"question": "", "answer": "2"}\n',
     ["dataset=gsm8k"], "gsm8k: {f}: 1 of 2 rows have an empty or blank prompt (first: line 2), a model given "
                        "nothing to answer; fill them in or remove those rows"),
    (None, ["dataset.name=tests/fixtures/plugins/blank_rows.py:data"],
     "dataset 'tests/fixtures/plugins/blank_rows.py:data': split 'train': 2 of 5 rows have an empty or blank "
     "answer (first: row 1), an answer no completion can match (reward 0); fill them in or remove those rows"),
    (None, ["+dataset.options.digits=0"], "arithmetic: digits must be in 1..18, got 0"),
], ids=["blank-answers", "empty-prompt", "plugin-dataset-blank-answers", "bad-option"])
def test_rows_no_completion_can_match_and_bad_options_are_refused(tmp_path, rows, overrides, said):
    """The training data, read before any model loads (pods.run.prepare), refuses what would train on nothing."""
    from pods.errors import PodsError

    path = tmp_path / "t.jsonl"
    extra = []
    if rows is not None:
        path.write_text(rows)
        extra = [f"dataset.path={path}"]
    with pytest.raises(PodsError) as err:
        data.load_examples(compose(["model=tiny", "dataset=arithmetic", *overrides, *extra]).dataset)
    assert said.replace("{f}", str(path)) in str(err.value), str(err.value)
    assert "expected: def my_data(split: str)" in str(err.value) or "plugins" not in said


def test_a_byte_order_mark_and_numbers_are_fine(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"question": "a", "answer": 3}\n{"question": "b", "answer": 2.5}\n')
    assert [ex.answer for ex in data.load_dataset("chemistry", split="train", path=path)] == ["3", "2.5"]


def test_a_directory_without_the_split_lists_what_it_has(tmp_path):
    from pods.errors import DataError

    (tmp_path / "test.jsonl").write_text('{"question": "a", "answer": "1"}\n')
    with pytest.raises(DataError, match=r"no train split in .*: looked for train.jsonl, train.json, train.parquet; "
                                        r"found \['test.jsonl'\]"):
        data.load_dataset("gsm8k", split="train", path=tmp_path)


def test_an_unreachable_hub_says_so_and_how_to_use_a_local_file(monkeypatch):
    import datasets

    from pods.errors import DataError

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'openai/gsm8k' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError) as err:
        data.load_dataset("gsm8k", split="train")
    msg = str(err.value)
    assert "could not load the hub dataset openai/gsm8k (split train): ConnectionError: Couldn't reach" in msg
    assert "dataset.path=/path/to/train.jsonl" in msg


def test_load_examples_refuses_an_empty_set():
    from pods.errors import ConfigError, DataError

    with pytest.raises(DataError, match="no examples"):
        data.load_examples({"name": "arithmetic", "split": "train", "path": None, "limit": None,
                            "options": {"size": 0}})
    with pytest.raises(ConfigError, match="arithmetic: digits must be in 1..18, got 0"):
        data.load_examples({"name": "arithmetic", "split": "train", "path": None, "limit": None,
                            "options": {"digits": 0}})


def test_a_generated_task_refuses_a_file_or_hub_it_would_ignore():
    from pods.errors import ConfigError

    assert set(data.GENERATED) == {"arithmetic", "gsm_symbolic", "word_problems"}
    with pytest.raises(ConfigError, match="^path: arithmetic is generated in code and reads no file, so it would be "
                                          "ignored; remove it"):
        data.load_dataset("arithmetic", path="train.jsonl")
    assert data.generated_source_problem("arithmetic", "dataset.", path="x", hub="y").startswith(
        "dataset.hub, dataset.path: arithmetic is generated in code and reads no file, so they would be ignored; "
        "remove them")
    assert data.generated_source_problem("gsm8k", "dataset.", path="x") is None
    assert data.generated_source_problem("arithmetic", "dataset.", path=None) is None


def test_every_dataset_declares_its_reward_and_answer_type():
    from pods import rewards
    from pods.data.sources import ANSWERS

    for name, spec in data.DATASETS.items():
        assert spec.reward in rewards.names() and spec.answer in ANSWERS, name
    assert (data.DATASETS["amc23"].reward, data.DATASETS["amc23"].answer) == ("math", "integer")
    assert data.DATASETS["gsm_symbolic"].reward == "gsm8k" and data.DATASETS["gsm_symbolic"].generate


def test_a_new_dataset_is_one_declaration(monkeypatch):
    """A generated dataset needs its generator and its declaration, nothing else: loading, the generated-source
    check and the evaluation's default verifier all read the declaration."""
    from omegaconf import OmegaConf

    from pods.data.sources import Dataset
    from pods.evaluation import eval_datasets

    def halves(split, **options):
        return [data.Example(f"half of {2 * i}?", str(i), {"n": i}) for i in range(int(options.get("size", 3)))]

    monkeypatch.setitem(data.DATASETS, "halves", Dataset("gsm8k", "number", generate=halves))
    assert [ex.answer for ex in data.load_dataset("halves", split="test", size=2)] == ["0", "1"]
    assert "halves is generated in code" in data.generated_source_problem("halves", "dataset.", path="x")
    run_cfg = OmegaConf.create({"dataset": {"name": "arithmetic", "rewards": [{"name": "arithmetic"}],
                                            "prompt_style": "base", "options": {}}})
    entries = eval_datasets(OmegaConf.create({"datasets": [{"name": "halves"}]}), run_cfg)
    assert entries[0]["reward"] == "gsm8k"


SHOT = {"question": "What is 1+1?", "completion": "<think>1+1=2</think><answer>2</answer>"}


def test_shots_are_earlier_chat_turns_before_the_question(tok):
    ex = data.Example("What is 2+2?", "4")
    text = data.prompt_text(ex, tok, "instruct", "Sys.", [SHOT])
    assert text == tok.apply_chat_template(
        [{"role": "system", "content": "Sys."}, {"role": "user", "content": SHOT["question"]},
         {"role": "assistant", "content": SHOT["completion"]}, {"role": "user", "content": "What is 2+2?"}],
        tokenize=False, add_generation_prompt=True)
    assert data.prompt_text(ex, tok, "base", "Sys.", [SHOT]) == f"Sys.\n\n{SHOT['question']}\n{SHOT['completion']}\n\nWhat is 2+2?"
    _, ids, _ = data.render_prompts([ex], tok, style="instruct", system_prompt="Sys.", shots=[SHOT])
    assert tok.decode(ids[0]) == text
    assert data.prompt_text(ex, tok, "instruct", "Sys.", []) == data.prompt_text(ex, tok, "instruct", "Sys.")


@pytest.mark.parametrize("shots, message", [
    ("Q: 1+1 A: 2", "dataset.shots must be a list of {question, completion} worked examples"),
    ([{"question": "What is 1+1?"}], "dataset.shots[0] must be {question: <text>, completion: <text>}"),
    ([SHOT, {"question": "Q", "completion": " "}], "dataset.shots[1] must be"),
    ([SHOT, {"question": "Q", "answer": "2", "completion": "2"}], "dataset.shots[1] must be"),
])
def test_bad_shots_are_named(shots, message):
    problems = data.shots_problems(shots)
    assert len(problems) == 1 and message in problems[0]
    assert data.shots_problems([SHOT]) == data.shots_problems(None) == []
