"""Outcomes of every code block of every page, for the summary printed at the end of the run, and what
counts as a crash in a block's stderr (tests/test_reader.py, tests/test_codeblocks.py)."""

import re

RESULTS: list[dict] = []


# what a shell or Python prints when a program crashes: a reader who sees one of these on the terminal,
# where the page shows none, has not got what the page shows, even if the exit status and stdout match
CRASH = re.compile(
    r"Segmentation fault|core dumped|Bus error|Illegal instruction|Floating point exception|"
    r"Traceback \(most recent call last\)|Fatal Python error"
)


def crash_lines(stderr: str, expected: str | None) -> list[str]:
    """Lines of stderr that report a crash, unless the page's output block shows that crash too."""
    shown = expected or ""
    return [ln for ln in stderr.splitlines() if (m := CRASH.search(ln)) and m.group(0) not in shown]


def crash_problem(stderr: str, expected: str | None) -> str | None:
    """The failure to report for a block whose stderr shows a crash its page does not, else None."""
    crash = crash_lines(stderr, expected)
    return "a crash the page does not show, on stderr:\n" + "\n".join(crash[:5]) if crash else None
