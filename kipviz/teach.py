"""Exercise checks for the notebooks: say right or wrong, and give a hint on a wrong answer."""
from __future__ import annotations


class Check:
    def __init__(self, ok: bool, message: str):
        self.ok = ok
        self.message = message

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#cf222e"
        return f'<div style="color:{colour};font-weight:600">{self.message}</div>'


def check(answer, expected, hint: str = "", *, explain: str = "") -> Check:
    """Compare a learner's answer with the expected one; None means 'not answered yet'."""
    if answer is None:
        return Check(False, "Not answered yet: replace None with your answer and run the cell again.")
    if answer == expected:
        return Check(True, "Correct. " + explain if explain else "Correct.")
    return Check(False, f"Not quite: you said {answer!r}. Hint: {hint}" if hint else f"Not quite: you said {answer!r}.")
