"""Exercise checks for the notebooks: say right or wrong, give a hint on a wrong answer, and keep the
solution folded away (an HTML <details> closed by default: JupyterLab and `kipviz export` both show it
as a "Show solution" line to click). Prediction exercises live in kipviz.course.exercises."""
from __future__ import annotations

import html


class Check:
    """The outcome of checking an answer: ok, the message shown, and the solution."""
    def __init__(self, ok: bool, message: str, solution: str = ""):
        self.ok = ok
        self.message = message
        self.solution = solution

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#cf222e"
        out = f'<div style="color:{colour};font-weight:600">{html.escape(self.message)}</div>'
        if self.solution:
            out += ('<details class="kipviz-solution"><summary>Show solution</summary>'
                    f"<div>{html.escape(self.solution)}</div></details>")
        return out


def _unanswered(answer) -> bool:
    if answer is None or answer is Ellipsis:
        return True
    return isinstance(answer, tuple) and any(a is None or a is Ellipsis for a in answer)


def check(answer, expected, hint: str = "", *, explain: str = "", solution: str = "") -> Check:
    """Compare a learner's answer with the expected one; None or ... means 'not answered yet'.
    `solution` goes into the folded "Show solution" element of the HTML output."""
    if _unanswered(answer):
        return Check(False, "Not answered yet: replace ... with your answer and run the cell again.", solution)
    if answer == expected:
        return Check(True, "Correct. " + explain if explain else "Correct.", solution)
    return Check(False, f"Not quite: you said {answer!r}. Hint: {hint}" if hint else f"Not quite: you said {answer!r}.",
                 solution)
