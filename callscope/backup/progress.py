"""How a backup or a restore reports its long steps: a step with a total, advanced as it goes. The command line
draws bars on a terminal (callscope/cli/backup.py); tests and scripts get nothing."""

from __future__ import annotations


class Progress:
    """No output; `callscope backup` and `restore` pass one that draws."""

    def start(self, label: str, total: int) -> None:
        """A step of `total` units (bytes, rows, objects) begins."""

    def advance(self, units: int) -> None:
        """`units` more of the current step are done."""

    def finish(self) -> None:
        """The current step ended."""
