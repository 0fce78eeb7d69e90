r"""rewards.paper_latex: LaTeX to text with pylatexenc 2.10's output (the converter inside the paper's grader).

Every expected value below is what pylatexenc 2.10 `LatexNodes2Text().latex_to_text` returns for
the input (computed with the real library, which is not a dependency of this suite).
Run: uv run pytest tests/pods/rewards/test_paper_latex.py
"""

import pytest

from pods.rewards.paper_latex import LatexError, latex_to_text

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
def test_same_text_as_pylatexenc(latex, text):
    assert latex_to_text(latex) == text


@pytest.mark.parametrize("latex", [
    # \sqrt without an argument: pylatexenc raises (KeyError), the grader keeps the string
    r"\sqrt",
    # a macro that cannot be an argument of \frac without its own argument
    r"\frac\sqrt{2}{3}",
    # an empty matrix: pylatexenc raises (max() of nothing)
    r"\begin{pmatrix}\end{pmatrix}",
])
def test_raises_where_pylatexenc_raises(latex):
    with pytest.raises(LatexError):
        latex_to_text(latex)


def test_deep_nesting_is_a_clear_error_not_a_crash():
    # 10 000 nested groups: RecursionError, which the grader treats like pylatexenc's failures
    with pytest.raises(RecursionError):
        latex_to_text("{" * 10_000 + "1" + "}" * 10_000)
