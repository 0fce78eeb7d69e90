r"""What "the final answer" of a completion is: decided here, once, for every verifier (docs/verifiers.md).

    final("<answer>\boxed{3}</answer>", "math") == Final("3", "boxed")   # kind: "number", "math" or "text"
    final("3 + 4 = 7. So the answer is", "number") is None               # stops mid-sentence: states nothing

Contract: `final(text, kind)`, after `collapse_repetition` (a loop of up to MAX_PERIOD lines at the end kept once),
is the last non-empty `<answer>` block (a `\boxed{}` in it wins), else the last `\boxed{}` / `\fbox{}`, else the
last statement carrying an answer of `kind`; None when there is none, when boxes conflict, or when the text stops
mid-sentence (`stops_mid_sentence`) in a statement that states nothing. Never raises (non-strings give None);
bounded time on megabyte input (`str.find` and regexes without nested quantifiers, over capped windows).
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Longest answer text handed to a verifier; longer blocks are cut to their last MAX_ANSWER_CHARS.
MAX_ANSWER_CHARS = 4096
# Deepest brace nesting `last_boxed` follows; deeper input is treated as malformed (no answer).
MAX_BRACE_DEPTH = 256
# How many malformed boxes (or empty answer blocks), from the end, are skipped before giving up.
MAX_BOX_TRIES = 8
# Tail first searched for the final stated answer (then MAX_ANSWER_CHARS): most answers are near the end.
STATED_WINDOW_CHARS = 1024
# Longest group of lines recognised as one repeated unit of a degenerate loop.
MAX_PERIOD = 8
# Lines (from the end) that `collapse_repetition` looks at; older lines are kept as they are.
MAX_COLLAPSE_LINES = 20_000

_BOX_COMMANDS = ("\\boxed", "\\fbox")
# A number: optional sign, digits with optional thousands commas, optional decimals/exponent,
# or a leading-dot decimal; optionally a simple fraction a/b. No nested quantifiers.
_NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?")
# One tag repeated within a line: `</think></think></think>` -> `</think>`.
_TAG_RUN = re.compile(r"(</?[A-Za-z]{1,16}>)(?:\s*\1)+")
# Tags, and tag fragments a cut or a sloppy model leaves (`<answer` without `>`, `</thin`, `</`).
_TAG = re.compile(r"</?[A-Za-z][\w-]{0,15}>|</?(?:think|answer|reason)[a-z]*(?![\w>])|</?$|</(?=\s)")
# Lines that state nothing: tags, fragments, bare tag words ("answer", "think>", "Answer here.").
_FILLER = re.compile(r"[\s<>/.:*#`-]*(?:(?:think|answer|reason|reasoning)(?:\s+here)?[\s<>/.:*#`-]*)*", re.I)
_OPEN_BLOCK = re.compile(r"<answer(?![\w-])\s*>?")
# Sentence ends inside a line: `.`/`!`/`?` then space and a capital, a backslash, `$` or `(`.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\\$(*-])")
# A display formula's own lines join its statement (no `\s*` on both sides: no backtracking).
_DISPLAY_OPEN = re.compile(r"(\\\[|\$\$)[ \t]*\n")
_DISPLAY_CLOSE = re.compile(r"\n[ \t]*(\\\]|\$\$)")
_DIGIT = re.compile(r"\d")
_MATHY = re.compile(r"\d|\\[A-Za-z]|=|[πθ√∞≤≥±×÷]")
_LETTER = re.compile(r"[A-Za-z]")
_WORDY = re.compile(r"\w")
# Words that conclude: the answer of a statement holding one is final even if more text follows.
_CONCLUSION = re.compile(r"\b(?:therefore|thus|hence|so|answer|finally|final|in total|conclude|conclusion)\b", re.I)
# A statement cut off inside a formula: a dangling `=` or operator, or a display just opened.
_UNFINISHED = re.compile(r"(?:[=+*/-]|\\times|\\cdot|\\div|\\\[|\$\$|\\\()\s*$")
# A statement that closed: sentence punctuation, a closing bracket, formula delimiter, emphasis or quote.
_ENDED = re.compile(r"[.!?)\]}$*>\"'`\u201d\u2019]\s*$")
# A statement that breaks off: a word or sign after which the sentence must go on.
_DANGLING = re.compile(
    r"(?:[,:;(\[{=+*/^-]|\\(?:times|cdot|div|d?frac|sqrt|left|text|quad)|\b(?:and|or|is|are|was|were|be|the|of|to"
    r"|with|so|that|which|because|since|then|as|for|by|in|on|at|from|than|but|if|when|where|equals?|gives?|makes?"
    r"|gets?|its|their|our))\s*$")
# A tag or tag fragment ending the text: the model closed what it was saying.
_TAG_AT_END = re.compile(r"(?:</?[A-Za-z][\w-]{0,15}>?|</?)$")
# Words a closing statement needs before a missing full stop means it broke off mid-sentence.
MIN_CUT_WORDS = 3


class Final(NamedTuple):
    """The graded answer text and where it came from: "block", "boxed" or "stated"."""

    text: str
    source: str


def _lines_collapsed(lines: list[str]) -> list[str]:
    """Remove trailing repeats of a group of 1..MAX_PERIOD lines (one copy stays)."""
    for _ in range(64):  # nested loops (`a b a b` inside `x x x`) need a few rounds
        n, cut = len(lines), None
        for k in range(1, MAX_PERIOD + 1):
            if n < 2 * k:
                break
            last = n - 1
            # The last line may be a copy cut off by the token limit: a prefix of its model.
            if lines[last] != lines[last - k] and lines[last - k].startswith(lines[last]):
                last -= 1
            i = last
            while i - k >= 0 and lines[i] == lines[i - k]:
                i -= 1
            if last - i >= k:  # at least one whole repeat after the first copy
                cut = i + 1
                break
        if cut is None:
            return lines
        lines = lines[:cut]
    return lines


def collapse_repetition(text: str) -> str:
    """text with a degenerate loop at its end kept once: a group of up to MAX_PERIOD lines repeated at the end
    (also when the last copy was cut off mid-line), and runs of one tag within a line, so an answer stated before
    the loop is the last one again. Blank lines and indentation of the collapsed part are dropped."""
    if not isinstance(text, str):
        return ""
    end = text.rstrip()
    if end.endswith(">") and _TAG_RUN.search(end, max(0, len(end) - 256)):  # `</think></think>...`
        text = _TAG_RUN.sub(r"\1", text)
    last = [line.strip() for line in text.rstrip().rsplit("\n", MAX_PERIOD + 1)]
    if not any(line.startswith(last[-1]) for line in last[:-1]):
        return text  # the common case: the last line repeats none of the lines before it
    raw = text.split("\n")
    head, tail = raw[:-MAX_COLLAPSE_LINES], raw[-MAX_COLLAPSE_LINES:]
    lines = _lines_collapsed([s for s in (line.strip() for line in tail) if s])
    return "\n".join(head + lines)


def _strip_tags(block: str) -> str:
    """Block content without tags or a trailing tag fragment (`</`, `</ans`, a lone `>`)."""
    return _TAG.sub("\n", block).strip().rstrip(">").strip()


def answer_block(text: str) -> str | None:
    """Content of the last non-empty `<answer>` block, tags removed; None without one. A block
    holding only filler (the prompt template's `Answer here.`, tag words, a lone `\\`) counts as empty.

    An opening tag without a closing tag counts when it is the last one (a completion cut by the
    token limit inside its answer): its content runs to the end.
    """
    if not isinstance(text, str):
        return None
    pos = len(text)
    for _ in range(MAX_BOX_TRIES):
        start = text.rfind("<answer", 0, pos)
        if start < 0:
            return None
        opening = _OPEN_BLOCK.match(text, start)
        if opening is not None:
            end = text.find("</answer", opening.end())
            content = text[opening.end() : end if end >= 0 else len(text)][-MAX_ANSWER_CHARS:]
            content = _strip_tags(content)
            # "Answer here." echoes the template; a lone `\` or `$` (cut at once) holds nothing
            if _WORDY.search(content) and not _FILLER.fullmatch(content):
                return content
        pos = start
    return None


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


def _boxes(text: str, limit: int = MAX_BOX_TRIES) -> list[tuple[int, str]]:
    """Up to `limit` well-formed boxes from the end: [(position, content)], last first."""
    found: list[tuple[int, str]] = []
    pos = len(text)
    for _ in range(MAX_BOX_TRIES):
        # The last box command before `pos`, whichever spelling.
        cmd_idx, cmd = max((text.rfind(c, 0, pos), c) for c in _BOX_COMMANDS)
        if cmd_idx < 0 or len(found) >= limit:
            break
        i = cmd_idx + len(cmd)
        if i < len(text) and text[i] == "{":
            # Only look a bounded distance ahead: an answer longer than this is not an answer.
            window = text[i : i + MAX_ANSWER_CHARS + 2]
            end = _match_brace(window, 0)
            if end >= 0:
                found.append((cmd_idx, window[1:end].strip()))
        elif i < len(text) and text[i] == " ":
            # `\boxed 5`: the argument is the next token.
            rest = text[i + 1 : i + 1 + 64].split()
            if rest:
                found.append((cmd_idx, rest[0].rstrip("$.")))
        pos = cmd_idx  # try the one before it
    return found


def last_boxed(text: str) -> str | None:
    """Content of the last well-formed `\\boxed{...}` / `\\fbox{...}` (also `\\boxed 5`), else None."""
    if not isinstance(text, str):
        return None
    found = _boxes(text, limit=1)
    return found[0][1] if found else None


def _boxed_answer(text: str, found: list[tuple[int, str]], whole: bool) -> str | None:
    """The last box's content; None when boxes of the same answer differ (all `found` boxes of a
    block when `whole`, else those on the last box's line)."""
    pos, answer = found[0]
    line_start = text.rfind("\n", 0, pos)
    same = [c for p, c in found if whole or p > line_start]
    if len({"".join(c.split()) for c in same}) > 1:
        return None
    return answer or None


def statements(text: str) -> list[str]:
    """The lines and sentences of text, in order, tags removed, blank and filler ones dropped."""
    if "\\[" in text or "$$" in text:
        text = _DISPLAY_CLOSE.sub(r" \1", _DISPLAY_OPEN.sub(r"\1 ", text))
    out = []
    for line in _TAG.sub("\n", text).split("\n"):
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            if sentence and not _FILLER.fullmatch(sentence):
                out.append(sentence)
    return out


_CARRIES = {
    "number": _DIGIT.search,
    "math": lambda s: _MATHY.search(s) or (("$" in s or "\\(" in s) and _LETTER.search(s)),  # `$p - q$`
    "text": _WORDY.search,
}


def final(text: str, kind: str = "text") -> Final | None:
    """The final answer of a completion (the rule in the module docstring, in full in docs/verifiers.md), or None."""
    if not isinstance(text, str):
        return None
    if kind not in _CARRIES:
        raise ValueError(f"unknown answer kind {kind!r}; valid: {', '.join(_CARRIES)}")
    text = collapse_repetition(text)
    block = answer_block(text)
    if block is not None:
        found = _boxes(block) if "\\boxed" in block or "\\fbox" in block else []
        if not found:
            return Final(block, "block")
        boxed = _boxed_answer(block, found, whole=True)
        return Final(boxed, "boxed") if boxed is not None else None
    found = _boxes(text) if "\\boxed" in text or "\\fbox" in text else []
    if found:
        boxed = _boxed_answer(text, found, whole=False)
        return Final(boxed, "boxed") if boxed is not None else None
    return _stated(text, _CARRIES[kind])


def _open_formula(statement: str) -> bool:
    """Whether the statement ends inside a `\\( ... \\)` or `\\[ ... \\]` formula (`\\(64`); a lone `$` may be money."""
    return statement.rfind("\\(") > statement.rfind("\\)") or statement.rfind("\\[") > statement.rfind("\\]")


def stops_mid_sentence(text: str) -> bool:
    """Whether the completion breaks off mid-sentence (rule 3; its answer block or box is not looked at)."""
    if not isinstance(text, str):
        return False
    text = collapse_repetition(text)
    said = statements(text[-STATED_WINDOW_CHARS:])
    return bool(said) and _stops_mid_sentence(text, said[-1])


def _stops_mid_sentence(text: str, last: str) -> bool:
    """Whether the text breaks off in its last statement `last` (rule 3: no tag or filler after it, no
    closing punctuation, and 3+ words or a dangling word, operator or formula)."""
    tail = text[-MAX_ANSWER_CHARS:].rstrip()
    end = tail[tail.rfind("\n") + 1 :].strip()
    if _TAG_AT_END.search(tail[-24:]) or _FILLER.fullmatch(_TAG.sub(" ", end)) or _ENDED.search(last):
        return False
    return (len(last.split()) >= MIN_CUT_WORDS or _DANGLING.search(last) is not None
            or _UNFINISHED.search(last) is not None or _open_formula(last))


def _stated(text: str, carries) -> Final | None:
    """The last statement that `carries` an answer (rule 3), looking at a short tail first."""
    for window in (STATED_WINDOW_CHARS, MAX_ANSWER_CHARS):
        said = statements(text[-window:])
        if said and _stops_mid_sentence(text, said[-1]):  # only the broken-off statement can answer
            last = said[-1]
            cut = _DANGLING.search(last) or _UNFINISHED.search(last) or _open_formula(last)
            return Final(last, "stated") if carries(last) and not cut else None
        # Cut off inside a formula (`\( y =`): still computing, so only a concluded answer counts.
        computing = bool(said) and _UNFINISHED.search(said[-1]) is not None
        for i in range(len(said) - 1, -1, -1):
            if i == 0 and STATED_WINDOW_CHARS == window < len(text):
                break  # the window's first statement may be cut: look at the longer tail
            if carries(said[i]):
                if computing and i != len(said) - 1 and not _CONCLUSION.search(said[i]):
                    return None
                return Final(said[i], "stated")
        if window >= len(text):
            break
    return None


def final_answer(text: str) -> str | None:
    """The text of `final(text, "text")` (block, box or last statement), or None."""
    found = final(text, "text")
    return found.text if found is not None else None


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
