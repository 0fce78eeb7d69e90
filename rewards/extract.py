"""Answer extraction shared by every verifier: pure string functions, linear time, never raise.

- `answer_block(text)`: the content of the last `<answer>...</answer>` block (None if absent).
- `last_boxed(text)`: the content of the last `\\boxed{...}` (or `\\fbox{...}`), with nested braces
  matched properly, so `\\boxed{\\frac{1}{2}}` gives `\\frac{1}{2}` (the authors' code cut at the
  first `}` and returned `\\frac{1`).
- `last_number(text)`: the last number (`-1,234.5`, `.5`, `3/4`, `1e-3`) as a string, commas removed.
- `final_answer(text)`: what a math/chemistry verifier should grade: a boxed answer inside the
  answer block, else the answer block, else the last boxed, else None.

Completions are untrusted model output (up to megabytes): these functions only use `str.find` /
`str.rfind` and regexes without nested quantifiers, and cap how much text they look at
(`MAX_ANSWER_CHARS`), so a 1 MB string or 10 000 nested braces costs milliseconds.

Usage: `from rewards.extract import final_answer; final_answer("<answer>\\boxed{3}</answer>") == "3"`.
"""

from __future__ import annotations

import re

# Longest answer text handed to a verifier; longer blocks are cut to their last MAX_ANSWER_CHARS.
MAX_ANSWER_CHARS = 4096
# Deepest brace nesting `last_boxed` follows; deeper input is treated as malformed (no answer).
MAX_BRACE_DEPTH = 256

# How many malformed boxes (from the end) `last_boxed` skips before giving up.
MAX_BOX_TRIES = 8

_BOX_COMMANDS = ("\\boxed", "\\fbox")
# A number: optional sign, digits with optional thousands commas, optional decimals/exponent,
# or a leading-dot decimal; optionally a simple fraction a/b. No nested quantifiers.
_NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?")


def answer_block(text: str) -> str | None:
    """Content of the last `<answer>...</answer>` block, stripped; None without a closed block.

    An opening tag without a closing tag also counts when it is the last tag in the text
    (a completion cut by the token limit right after the answer), its content running to the end.
    """
    if not isinstance(text, str):
        return None
    start = text.rfind("<answer>")
    if start < 0:
        return None
    end = text.find("</answer>", start)
    content = text[start + len("<answer>") : end if end >= 0 else len(text)]
    return content[-MAX_ANSWER_CHARS:].strip()


def _match_brace(text: str, open_idx: int) -> int:
    """Index of the `}` closing the `{` at open_idx, or -1 (unbalanced or deeper than the cap)."""
    depth = 0
    i, n = open_idx, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in "{}":
            i += 2  # an escaped brace \{ or \} does not change the nesting
            continue
        if c == "{":
            depth += 1
            if depth > MAX_BRACE_DEPTH:
                return -1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def last_boxed(text: str) -> str | None:
    """Content of the last well-formed `\\boxed{...}` / `\\fbox{...}` (also `\\boxed 5`), else None."""
    if not isinstance(text, str):
        return None
    pos = len(text)
    for _ in range(MAX_BOX_TRIES):
        # The last box command before `pos`, whichever spelling.
        cmd_idx, cmd = max((text.rfind(c, 0, pos), c) for c in _BOX_COMMANDS)
        if cmd_idx < 0:
            return None
        i = cmd_idx + len(cmd)
        if i < len(text) and text[i] == "{":
            # Only look a bounded distance ahead: an answer longer than this is not an answer.
            window = text[i : i + MAX_ANSWER_CHARS + 2]
            end = _match_brace(window, 0)
            if end >= 0:
                return window[1:end].strip()
        elif i < len(text) and text[i] == " ":
            # `\boxed 5`: the argument is the next token.
            rest = text[i + 1 : i + 1 + 64].split()
            if rest:
                return rest[0].rstrip("$.")
        pos = cmd_idx  # malformed box: try the one before it
    return None


def final_answer(text: str) -> str | None:
    """The graded answer: boxed in the answer block > answer block > last boxed > None."""
    block = answer_block(text)
    if block is not None:
        boxed = last_boxed(block)
        return boxed if boxed is not None else block
    return last_boxed(text)


def last_number(text: str | None) -> str | None:
    """The last number in (the last MAX_ANSWER_CHARS of) text, commas/spaces removed; else None."""
    if not isinstance(text, str) or not text:
        return None
    tail = text[-MAX_ANSWER_CHARS:]
    found = None
    for match in _NUMBER.finditer(tail):
        found = match
    if found is None:
        return None
    number = found.group(0).replace(",", "").replace(" ", "")
    if number.endswith("/"):
        number = number[:-1]
    return number
