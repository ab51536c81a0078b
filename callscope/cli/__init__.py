"""The `callscope` command: the group and its own commands (root.py), each other group of commands in a module of its
own (backup and restore, simulated phone calls, jobs and reanalysis, operators' voiceprints, the webhook outbox), and
what they share (support.py)."""

from callscope.cli import backup, calls, jobs, voice, webhooks
from callscope.cli.root import main
from callscope.cli.support import checked_text

for _module in (backup, calls, jobs, voice, webhooks):
    _module.register(main)
checked_text(main)  # every string argument of every command: no NUL, UTF-8 only

__all__ = ["main"]
