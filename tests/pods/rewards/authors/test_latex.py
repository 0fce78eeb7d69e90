r"""pylatexenc 2.10's LaTeX to text, as the paper's grader calls it (pods.rewards.authors.normalize).

Every expected value below is what pylatexenc 2.10 `LatexNodes2Text().latex_to_text` returns (the authors'
utils/grader.py:36 at 3fc107e); the verdicts of the paper's grader rest on them, so another pylatexenc
version that changes one fails here. Where pylatexenc raises, the grader keeps the string (their bare except).
Run: uv run pytest tests/pods/rewards/authors/test_latex.py
"""

import pytest
from pylatexenc.latex2text import LatexNodes2Text

from pods.rewards.authors.normalize import MAX_LATEX_CHARS, prm, same_answer

CASES = [
    # fraction
    ('\\frac{14}{3}', '14/3'),
    # fraction of single characters
    ('\\frac12', '1/2'),
    # a macro as an argument
    ('\\frac\\pi2', 'π/2'),
    # dfrac is unknown to pylatexenc: the groups are printed
    ('\\dfrac{1}{2}', '12'),
    # a missing argument prints the template
    ('\\frac{1}', '%s/%s1'),
    # root: the index is dropped
    ('\\sqrt[3]{2}', '√(2)'),
    # sqrt after a digit
    ('3\\sqrt{13}', '3√(13)'),
    # MATH-500 reference: text mode keeps the blanks
    ('\\left( 3, \\frac{\\pi}{2} \\right)', '( 3, π/2 )'),
    # maths mode drops blank-only runs
    ('$\\left(3, \\frac{\\pi}{2} \\right)$', '(3, π/2)'),
    # maths mode: a bare macro gets its swallowed blank back before plain text
    ('\\(2^2 \\cdot 7^2\\)', '2^2 · 7^2'),
    # text mode: the blank after a bare macro is swallowed
    ('2 \\cdot 3', '2 ·3'),
    # display maths: own line, indented
    ('\\[ \\frac{14}{3} \\]', '\n    14/3\n'),
    # display dollars
    ('$$x$$', '\n    x\n'),
    # text
    ('\\text{Evelyn}', 'Evelyn'),
    # bold text
    ('\\textbf{(C)} 5', '(C) 5'),
    # mbox is parsed with an argument and printed as nothing
    ('\\mbox{x}', ''),
    # unknown macro: nothing, its group is printed
    ('\\boxed{\\text{(C)}}', '(C)'),
    # math alphabets
    ('\\mathbb{R} \\mathbf{v1}', 'ℝ 𝐯1'),
    # letters coded before the math block
    ('\\mathcal{B}\\mathfrak{C}\\mathit{h}', 'ℬℭℎ'),
    # accents
    ('\\hat{xy}\\vec{v}\\"o', 'x̂ŷv⃗ö'),
    # degree
    ('90^\\circ', '90^∘'),
    # interval union
    ('(-\\infty, 0) \\cup (0, \\infty)', '(-∞, 0) ∪(0, ∞)'),
    # relations
    ('\\le \\ge \\neq \\pm \\times \\div', '≤≥≠±×÷'),
    # function names known and unknown
    ('\\cos \\tan \\cot \\det', 'costan'),
    # negative thin space
    ('1,\\!000', '1,000'),
    # spaces
    ('a\\,b\\;c\\quad d\\ e', 'a b c  d e'),
    # escaped braces
    ('\\{1,2\\}', '{1,2}'),
    # escaped dollar and percent
    ('\\$5 and 10\\%', '$5 and 10%'),
    # text specials
    ("a~b--c---d ``e''", 'a\xa0b–c—d “e”'),
    # comment
    ('a %comment\n  b', 'a \n  b'),
    # line break
    ('x \\\\ y', 'x \n y'),
    # matrix
    ('\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}', '[ 1 2; 3 4 ]'),
    # matrix cells right-aligned
    ('\\begin{pmatrix}10&2\\\\3&4\\end{pmatrix}', '[ 10  2;  3  4 ]'),
    # trailing row break
    ('\\begin{pmatrix}1\\\\\\end{pmatrix}', '[ 1;  ]'),
    # other environments: & is three spaces
    ('\\begin{cases} 1 & x > 0 \\\\ 0 & x \\le 0 \\end{cases}', ' 1     x > 0 \n 0     x ≤0 '),
    # equation environments are display maths
    ('\\begin{align*} x &= 1 \\\\ y &= 2 \\end{align*}', '\n    x    = 1 \n     y    = 2\n'),
    # array drops its column spec
    ('\\begin{array}{cc} 1 & 2 \\end{array}', '[ 1 2 ]'),
    # a final backslash
    ('\\frac{14}{3}\\\\', '14/3\n'),
    # blanks before a final backslash are dropped
    ('the series \\', 'the series'),
    # but not a paragraph break
    ('a:\n\n\\', 'a:\n\n'),
    # a closing delimiter alone
    ('x\\)', 'x'),
    # unclosed group
    ('\\frac{1}{2', '1/2'),
    # a paragraph break is not swallowed
    ('\\pi\n\nx', 'π\n\nx'),
    # operatorname
    ('\\operatorname{lcm}(4, 6)', 'lcm(4, 6)'),
    # negation
    ('\\not= \\not\\in', '≠ ∉'),
    # spacing commands
    ('\\hspace{1cm}x\\vspace{2pt}y', 'x\ny'),
    # colour
    ('\\textcolor{red}{5}', '5'),
    # floor
    ('\\left\\lfloor \\frac{n}{2} \\right\\rfloor', '⌊n/2 ⌋'),
    # binom is unknown
    ('\\binom{5}{2}', '52'),
    # \begin / \end whose group never closes: the macro's name stays, the open group is text
    ('x \\end{answer> 5', 'x \\endanswer> 5'),
    ('\\begin{answer> 7 </answer>', '\\beginanswer> 7 </answer>'),
    ('\\frac{1}{2} \\end{x', '1/2 \\endx'),
    # ... and one whose group closes is an \end without its \begin
    ('a \\end{b}{c', 'a c'),
]


@pytest.mark.parametrize("latex, text", CASES)
def test_the_text_the_grader_compares(latex, text):
    assert LatexNodes2Text().latex_to_text(latex) == text


@pytest.mark.parametrize("latex, kept, error", [
    # \sqrt without an argument
    (r"\sqrt", r"\sqrt", KeyError),
    # a macro that cannot be an argument of \frac without its own argument
    (r"\frac\sqrt{2}{3}", r"\frac\sqrt23", KeyError),
    # an empty matrix (max() of nothing)
    (r"\begin{pmatrix}\end{pmatrix}", r"\beginpmatrix\endpmatrix", ValueError),
    # 10 000 nested groups
    ("{" * 10_000 + "1" + "}" * 10_000, "1", RecursionError),
])
def test_where_pylatexenc_raises_the_grader_keeps_the_string(latex, kept, error):
    with pytest.raises(error):
        LatexNodes2Text().latex_to_text(latex)
    assert prm(latex) == kept and same_answer(latex, latex)


def test_the_grader_compares_pylatexenc_text():
    assert prm(r"\dfrac{14}{3}") == prm(r"\(\frac{14}{3}\)") == "14/3"  # dfrac -> frac first, as the authors
    assert same_answer(r"\frac{\pi}{2}", "pi/2") and not same_answer(r"\frac{\pi}{2}", "π/2")


def test_a_string_past_the_limit_is_kept_without_conversion():
    fits = r"\frac{1}{2}" + " " * (MAX_LATEX_CHARS - 11)
    assert len(fits) == MAX_LATEX_CHARS and prm(fits) == "1/2"
    assert prm(fits + " ") == r"\frac12"  # kept: only the blanks and braces go
