"""`callscope operators enroll|voiceprints|forget-voice`: operators' voiceprints from the command line.

Registered on the main group by `register(main)` (a group named "operators").
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from callscope.catalog import voiceprints
from callscope.cli.support import ACCOUNT_OPTION, CATALOG_ID, load_settings, run_async
from callscope.errors import one_line
from callscope.resources import Operator
from callscope.runtime import opened
from callscope.services import scope


@click.group("operators")
def operators_group() -> None:
    """Operators' enrolled voices, used to tell which operator a call's agent is."""


async def _operator_name(rt, account: str, operator_id: int) -> str:
    operator = scope.by_id(rt.ctx, Operator, account, operator_id)
    if operator is None:
        raise click.ClickException(f"no operator {operator_id} in account {account}")
    return operator.spec.name


@operators_group.command("enroll")
@click.argument("operator_id", type=CATALOG_ID)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@ACCOUNT_OPTION
@click.option("--channel", default=0, show_default=True, help="Channel of FILE that holds the operator's voice.")
def enroll(operator_id: int, file: Path, account: str, channel: int) -> None:
    """Enrol OPERATOR_ID's voice from FILE (at least 10 s of their speech alone); replaces an earlier one."""
    if not file.is_file():
        raise click.ClickException(f"{file}: no such file")

    # imported here, as in `callscope analyze`: the speaker models need not load for the CLI's other commands
    from callscope.analysis.runtime.enrollment import enroll_file
    from callscope.analysis.stages.speakers import EnrollmentError, load_speaker_analyzer

    @run_async
    async def run() -> None:
        settings = load_settings()
        async with opened(settings) as rt:
            name = await _operator_name(rt, account, operator_id)
            analyzer = load_speaker_analyzer(settings)
            try:
                voiceprint = await asyncio.to_thread(enroll_file, analyzer, file, channel)
                await rt.catalog.write(voiceprints.save, account, operator_id, voiceprint.model, voiceprint.embedding,
                                       voiceprint.speech_ms, rt.ctx.clock())
            except (EnrollmentError, ValueError) as exc:
                raise click.ClickException(f"{file}: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - a decoder failure: one line, not a traceback
                raise click.ClickException(f"{file}: cannot decode audio: {one_line(exc)}") from None
        click.echo(f"enrolled operator {operator_id} ({name}): {voiceprint.speech_ms / 1000:.1f} s of speech, "
                   f"model {voiceprint.model}")
    run()


@operators_group.command("voiceprints")
@ACCOUNT_OPTION
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def list_voiceprints(account: str, output: str) -> None:
    """The account's enrolled operators: speech enrolled, model, when; voiceprints of a model other than the
    configured one (CALLSCOPE_VOICEPRINT_MODEL) are marked: they are not compared until re-enrolled."""
    from callscope.analysis.stages.speakers import load_speaker_analyzer  # heavy: as in enroll

    @run_async
    async def run() -> None:
        settings = load_settings()
        async with opened(settings) as rt:
            found = await rt.catalog.read(voiceprints.of_account, account)
        current = load_speaker_analyzer(settings).model  # a voiceprint of another model is never compared
        if output == "json":
            click.echo(json.dumps([{"operator_id": r.operator_id, "speech_ms": r.speech_ms, "model": r.model,
                                    "created_at": r.created_at.isoformat(), "current_model": r.model == current}
                                   for r in found], indent=2))
            return
        click.echo(f"{'OPERATOR':>8}  {'SPEECH':>7}  {'ENROLLED':25}  MODEL")
        for r in found:
            stale = "" if r.model == current else "  (another model: not compared, re-enrol)"
            click.echo(f"{r.operator_id:>8}  {r.speech_ms / 1000:>6.1f}s  {r.created_at.isoformat():25}  {r.model}"
                       + stale)
    run()


@operators_group.command("forget-voice")
@click.argument("operator_id", type=CATALOG_ID)
@ACCOUNT_OPTION
def forget_voice(operator_id: int, account: str) -> None:
    """Delete OPERATOR_ID's voiceprint."""

    @run_async
    async def run() -> None:
        async with opened(load_settings()) as rt:
            removed = await rt.catalog.write(voiceprints.forget, account, operator_id)
        if not removed:
            raise click.ClickException(f"operator {operator_id} of account {account} has no voiceprint")
        click.echo(f"voiceprint of operator {operator_id} deleted")
    run()


def register(group: click.Group) -> None:
    group.add_command(operators_group)
