"""README.md and docs/*.md point at things that exist: files, presets, config groups.

Every path of this repository they name (docs/, scripts/, benchmarks/, config/, pods/, tests/, rewards/, with an
extension) must exist, and every `experiment=`, `protocol=`, `model=`, `backend=`, `dataset=` and `rule=`
value must be a file of its config group, and every `pods <subcommand>` they show must exist. Run: uv run pytest tests/test_docs.py
"""

import re
from pathlib import Path

import pytest

from pods.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH = re.compile(r"(?<![\w/.-])((?:docs|scripts|benchmarks|config|pods|tests|rewards)/[\w./-]*\w\.(?:md|py|yaml|png|json|sh))")
GROUP = re.compile(r"(?<![\w.+])(experiment|protocol|model|backend|dataset|rule)=([\w.-]+)(?![\w.(-])")  # not f(x)
THEIRS = {"config/test.yaml", "scripts/merge.py",  # the authors' repository's files, cited
          "scripts/CPPO.sh", "scripts/run_reinforce_ada.sh"}  # CPPO's and Reinforce-Ada's, cited
OUTSIDE = {"model": {"gpt5"}, "rule": {"cppo"}}  # wrong names shown on purpose (docs/configuration.md)


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_files_exist(page):
    missing = sorted({p for p in PATH.findall(_text(page)) if "<" not in p and p not in THEIRS and not (ROOT / p).exists()})
    assert missing == [], f"{page.name} names files that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_presets_exist(page):
    bad = sorted({f"{g}={v}" for g, v in GROUP.findall(_text(page))
                  if v not in OUTSIDE.get(g, ()) and not (ROOT / "config" / g / f"{v}.yaml").is_file()
                  and ":" not in v and v != "null"})
    assert bad == [], f"{page.name} names presets that are not in config/"


def test_readme_is_a_front_door():
    text = _text(ROOT / "README.md")
    assert len(text.splitlines()) <= 200
    assert "uv run python train.py experiment=demo" in text
    ci = re.findall(r'^tier "[^"]+" (.+)$', (ROOT / ".ci" / "run").read_text(), re.M)  # what CI runs, tier by tier
    assert ci[:3] == ["uv run ruff check .", "uv run pytest -n 2 --dist loadfile --durations=15", "uv run pytest -m slow -n 2 --dist loadgroup --durations=15"]
    assert [command for command in ci if command not in text] == []  # the README shows each command CI runs


COMMAND = re.compile(r"(?:`|uv run )pods ([a-z][a-z-]*)")  # `pods train ...` / uv run pods train: a command line


@pytest.mark.parametrize("page", [*PAGES, ROOT / "benchmarks" / "README.md"], ids=lambda p: p.name)
def test_named_subcommands_exist(page):
    bad = sorted(set(COMMAND.findall(_text(page))) - {c.name for c in COMMANDS})
    assert bad == [], f"{page.name} shows pods subcommands that do not exist"
