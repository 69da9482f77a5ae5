"""Outcomes of every code block of every page, for the summary printed at the end of the run."""

RESULTS: list[dict] = []
