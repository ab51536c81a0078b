"""The `callscope` group and its own commands: the embedded server and the administration of keys, members and
resources.

Every command reads CALLSCOPE_* settings (CALLSCOPE_DATA_DIR for the embedded data directory) and
shares that data with a running server, which sees the changes without a restart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import ValidationError

from callscope import __version__
from callscope.catalog.usage import read_usage
from callscope.cli.support import ACCOUNT_OPTION, CATALOG_ID, load_settings, load_yaml, parse_time, run_async
from callscope.errors import CallscopeError, one_line
from callscope.operator.handlers import dependents, reconcile
from callscope.resources import Project, Scorecard, kind_class
from callscope.resources.kinds import ProjectSpec
from callscope.resources.scorecards import missing_references
from callscope.runtime import Runtime, opened
from callscope.services import accounts, member_settings
from callscope.services import keys as key_service
from callscope.services.apply import apply_documents, table
from callscope.services.projects import cascade_project_delete
from callscope.services.scope import project_id_of
from callscope.store.factory import build_secret_store
from callscope.store.interface import StaleResourceVersion


@click.group()
@click.version_option(__version__, prog_name="callscope")
@click.option("--verbose", "-v", is_flag=True,
              help="Also print the log lines of a command (its result alone otherwise; serve always logs).")
def main(verbose: bool) -> None:
    """Callscope: self-hosted call-recording analysis."""


@main.command()
@click.option("--host", default=None, help="Interface to listen on (default CALLSCOPE_HOST, 127.0.0.1).")
@click.option("--port", default=None, type=click.IntRange(0, 65535), help="Port (default CALLSCOPE_PORT, 8080).")
def serve(host: str | None, port: int | None) -> None:
    """Run the API, the reconcilers and the background loops in one process."""
    import uvicorn  # the web server and the API app load only for serve (start-up time of the other commands)

    from callscope.api.app import Lifespan, create_app

    # --host/--port go into the settings: unset, the public base URL of audio and share links is the address served.
    served = {name: value for name, value in (("host", host), ("port", port)) if value is not None}
    settings = load_settings(service=True).model_copy(update=served)
    runtime = Runtime(settings)
    app = create_app(runtime.ctx, runtime.usage, runtime.limiter, Lifespan(runtime.start, runtime.stop))
    # Forwarded headers only from the proxies named (uvicorn's default believes any from loopback): a client must
    # not choose the address its sign-in attempts are counted under.
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, access_log=False, lifespan="on",
                proxy_headers=bool(settings.trusted_proxies), forwarded_allow_ips=settings.trusted_proxies or None)


@main.command("controller")
@click.option("--standalone", is_flag=True,
              help="Run without peering (one controller replica only); default: peer as 'callscope'.")
@click.option("--namespace", "-n", "namespaces", multiple=True,
              help="Serve only this namespace (glob patterns allowed; repeatable); default: all namespaces.")
@click.option("--liveness", "liveness_endpoint", default=None,
              help="Liveness probe endpoint, e.g. http://0.0.0.0:8080/healthz.")
@click.option("--priority", type=int, default=None, help="Peering priority of this replica.")
def controller(standalone: bool, namespaces: tuple[str, ...], liveness_endpoint: str | None,
               priority: int | None) -> None:
    """Run the Kopf controller of a cluster: reconcile the callscope.io custom resources and run the background
    loops (retention, quality baseline, blob sweep, and the dispatcher and webhook delivery when enabled)."""
    import kopf  # Kopf and the controller's handlers load only for this command (start-up time of the others)

    from callscope.operator.main import PEERING_NAME, controller_memo, registry

    load_settings(service=True)  # logging; the controller reads its Settings (CALLSCOPE_STORE=kubernetes) itself
    kopf.run(registry=registry, memo=controller_memo(opened), standalone=standalone, peering_name=PEERING_NAME,
             priority=priority, clusterwide=not namespaces, namespaces=list(namespaces),
             liveness_endpoint=liveness_endpoint)


# The Kopf process's first name, kept working; `callscope operators` is about the people.
main.add_command(controller, "operator")


@main.command()
@run_async
async def migrate() -> None:
    """Create or upgrade the catalog database schema (serve does this on start)."""
    settings = load_settings()
    async with opened(settings):
        click.echo(f"catalog at {settings.catalog_url.split('@')[-1]} is up to date")


# ----- keys -----------------------------------------------------------------------------------

@main.group()
def keys() -> None:
    """API keys: create, list (with usage), revoke, regenerate."""


@keys.command("create")
@ACCOUNT_OPTION
@click.option("--name", required=True, help="Key name, unique in the account (lowercase, digits, '-').")
@click.option("--permissions", required=True, help="Comma-separated: read,write,delete.")
@click.option("--project-id", type=CATALOG_ID, default=None, help="Bind the key to one project.")
@click.option("--expires-at", default=None, help="ISO 8601 time after which the key is invalid.")
@click.option("--rate-limit", type=int, default=None, help="Requests per minute when rate limiting is on.")
@run_async
async def keys_create(account, name, permissions, project_id, expires_at, rate_limit) -> None:
    """Create a key; the key is printed once, alone on the last line."""
    wanted = [p.strip() for p in permissions.split(",") if p.strip()]
    unknown = set(wanted) - {"read", "write", "delete"}
    if unknown or not wanted:
        raise click.BadParameter("permissions are a comma-separated subset of read,write,delete")
    async with opened(load_settings()) as rt:
        obj, key = await key_service.create_key(rt.ctx, account, name, wanted, project_id, parse_time(expires_at),
                                                rate_limit)
        click.echo(f"created key {obj.name} in account {account} ({','.join(obj.spec.permissions)}"
                   f"{', project ' + str(project_id) if project_id else ''}); it is shown only once:")
        click.echo(key)


@keys.command("list")
@ACCOUNT_OPTION
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
@run_async
async def keys_list(account, output) -> None:
    """Keys of an account with their usage: last used, requests, requests by endpoint, error rate."""
    async with opened(load_settings()) as rt:
        found = key_service.list_keys(rt.ctx, account)
        usage = await rt.catalog.read(read_usage, [k.metadata.uid for k in found])
        rows = []
        for key in found:
            used = usage.get(key.metadata.uid)
            rows.append({
                "name": key.name, "hint": key.status.key_hint, "permissions": key.spec.permissions,
                "project_id": project_id_of(rt.ctx, account, key.spec.project),
                "state": key_service.key_state(key, rt.ctx.clock()),
                "expires_at": key.spec.expires_at.isoformat() if key.spec.expires_at else None,
                "last_used_at": used.last_used_at.isoformat() if used and used.last_used_at else None,
                "total_requests": used.total_requests if used else 0,
                "error_rate": round(used.error_rate, 4) if used else 0.0,
                "requests_by_endpoint": used.requests_by_endpoint if used else {},
            })
    if output == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'NAME':<24} {'STATE':<8} {'PERMISSIONS':<18} {'PROJECT':<8} {'REQUESTS':>8} {'ERRORS':>7}  LAST USED")
    for r in rows:
        click.echo(f"{r['name']:<24} {r['state']:<8} {','.join(r['permissions']):<18} {r['project_id'] or '-'!s:<8} "
                   f"{r['total_requests']:>8} {r['error_rate']:>7.1%}  {r['last_used_at'] or 'never'}")
        for endpoint, count in sorted(r["requests_by_endpoint"].items()):
            click.echo(f"{'':<24}   {count:>6}  {endpoint}")


@keys.command("revoke")
@ACCOUNT_OPTION
@click.option("--name", required=True)
@run_async
async def keys_revoke(account, name) -> None:
    """Revoke a key: it is invalid at once."""
    async with opened(load_settings()) as rt:
        await key_service.revoke_key(rt.ctx, account, name)
    click.echo(f"revoked key {name} in account {account}")


@keys.command("regenerate")
@ACCOUNT_OPTION
@click.option("--name", required=True)
@run_async
async def keys_regenerate(account, name) -> None:
    """Replace a key's secret: the old key is invalid at once; the new one is printed on the last line. A revoked or
    expired key (or one whose project is gone) is refused: its new key would not work either."""
    async with opened(load_settings()) as rt:
        _, key = await key_service.regenerate_key(rt.ctx, account, name)
    click.echo(f"regenerated key {name} in account {account}; the old key no longer works. New key:")
    click.echo(key)


# ----- members --------------------------------------------------------------------------------

@main.group()
def members() -> None:
    """Account members (the people recordings are shared with)."""


@members.command("add")
@ACCOUNT_OPTION
@click.option("--email", required=True)
@click.option("--name", required=True)
@click.option("--role", type=click.Choice(["admin", "member", "reviewer"]), default="member", show_default=True,
              help="admin: also the Settings pages (API keys, members); reviewer: also reviews calls' scorecards.")
@run_async
async def members_add(account, email, name, role) -> None:
    async with opened(load_settings()) as rt:
        member = await accounts.add_member(rt.ctx, account, email, name, role)
    click.echo(f"added {member.spec.email} to account {account} as {member.spec.role}")


def _lock_command(locked: bool):
    @ACCOUNT_OPTION
    @click.option("--email", required=True)
    @run_async
    async def command(account, email) -> None:
        async with opened(load_settings()) as rt:
            await accounts.set_member_locked(rt.ctx, account, email, locked)
        click.echo(f"{'locked' if locked else 'unlocked'} {email} in account {account}")
    return command


members.command("lock", help="Lock a member: they lose access to everything shared with them.")(_lock_command(True))
members.command("unlock", help="Unlock a member.")(_lock_command(False))


@members.command("remove")
@ACCOUNT_OPTION
@click.option("--email", required=True)
@run_async
async def members_remove(account, email) -> None:
    async with opened(load_settings()) as rt:
        await accounts.remove_member(rt.ctx, account, email)
    click.echo(f"removed {email} from account {account}")


@members.command("list")
@ACCOUNT_OPTION
@run_async
async def members_list(account) -> None:
    async with opened(load_settings()) as rt:
        found = accounts.list_members(rt.ctx, account)
        signed_in = await member_settings.last_sign_ins(rt.ctx, found)
    click.echo(f"{'EMAIL':<36} {'NAME':<28} {'ROLE':<7} STATE")
    for m in found:
        state = "locked" if m.spec.locked else "active" if m.spec.email.lower() in signed_in else "invited"
        click.echo(f"{m.spec.email:<36} {m.spec.name:<28} {m.spec.role:<7} {state}")


# ----- resources as YAML ----------------------------------------------------------------------

@main.command()
@click.option("-f", "--filename", "path", required=True, type=click.File("rb"), help="YAML file, or - for stdin.")
@click.option("--account", default=None, help="Namespace for objects that name none (default: default).")
@run_async
async def apply(path, account) -> None:
    """Create or update resources from YAML, as `kubectl apply -f` does in a cluster."""
    documents = [d for d in load_yaml(path, getattr(path, "name", "-")) if d]
    settings = load_settings()
    async with opened(settings) as rt, contextlib.aclosing(build_secret_store(settings)) as secrets:
        for obj, line in await apply_documents(rt.ctx, documents, account or "default"):
            # Reconcile at once so `get` shows ids right away, and again what names this object (a number applied
            # before its project). A running server does the same: when it got there first (the object changed
            # under us), its reconciler has done the job.
            for changed in (obj, *dependents(rt.ctx, obj)):
                with contextlib.suppress(StaleResourceVersion):
                    await reconcile(rt.ctx, changed, secrets)
            click.echo(line)


@main.command()
@click.argument("kind")
@click.argument("name", required=False)
@ACCOUNT_OPTION
@click.option("--output", "-o", type=click.Choice(["table", "yaml", "json"]), default="table")
@run_async
async def get(kind, name, account, output) -> None:
    """Show resources of a KIND (Kind, plural or short name), or one by NAME."""
    try:
        cls = kind_class(kind)
    except KeyError:
        raise click.BadParameter(f"unknown kind {kind!r}") from None
    async with opened(load_settings()) as rt:
        objects = [await rt.store.get(cls, account, name)] if name else await rt.store.list(cls, account)
    dicts: list[dict[str, Any]] = [o.to_dict() for o in objects]
    if output == "yaml":
        click.echo(yaml.safe_dump_all(dicts, sort_keys=False) if dicts else "", nl=False)
    elif output == "json":
        click.echo(json.dumps(dicts[0] if name else {"apiVersion": "v1", "kind": "List", "items": dicts}, indent=2))
    else:
        click.echo(table(objects))


@main.command()
@click.argument("kind")
@click.argument("name")
@ACCOUNT_OPTION
@run_async
async def delete(kind, name, account) -> None:
    """Delete one resource (a Project cascades like the REST delete)."""
    try:
        cls = kind_class(kind)
    except KeyError:
        raise click.BadParameter(f"unknown kind {kind!r}") from None
    async with opened(load_settings()) as rt:
        obj = await rt.store.get(cls, account, name)
        if cls is Project:
            await cascade_project_delete(rt.ctx, obj)
        else:
            await rt.store.delete(cls, account, name)
    click.echo(f"{cls.KIND.lower()}/{name} deleted")


# ----- local analysis -------------------------------------------------------------------------

def _project_config(path) -> tuple[ProjectSpec, list[Scorecard]]:
    """The ProjectSpec of a YAML file (a Project resource, as `callscope apply` takes, or just its spec) and the QA
    forms (Scorecard resources) beside it, which score the call; each form checked against the project."""
    try:
        with open(path, "rb") as handle:
            documents = load_yaml(handle, str(path))
    except OSError as exc:
        raise click.ClickException(f"{path}: {' '.join(str(exc).split())}") from None
    forms = [d for d in documents if isinstance(d, dict) and d.get("kind") == Scorecard.KIND]
    project = _project_spec(path, [d for d in documents if not any(d is f for f in forms)])
    return project, [_form(path, project, document) for document in forms]


def _form(path, project: ProjectSpec, document: dict) -> Scorecard:
    name = (document.get("metadata") or {}).get("name", "?")
    try:
        form = Scorecard.from_dict({k: v for k, v in document.items() if k != "status"}
                                   | {"metadata": {"name": str(name)}})
    except ValidationError as exc:
        raise click.ClickException(f"{path}: Scorecard {name}: " + "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    missing = missing_references(form.spec, [(project.name, project)])
    if missing:
        raise click.ClickException(f"{path}: Scorecard {name}: " + "; ".join(missing))
    return form


def _project_spec(path, documents: list) -> ProjectSpec:
    """The Project of the file (its one document besides the forms): the resource, or just its spec."""
    document = documents[0] if len(documents) == 1 else None
    if not isinstance(document, dict):
        raise click.ClickException(f"{path}: expected a Project resource or a project spec mapping")
    if "spec" in document:
        if document.get("kind", "Project") != "Project":
            raise click.ClickException(f"{path}: expected kind Project, got {document.get('kind')!r}")
        document = document["spec"]
    try:
        return ProjectSpec.model_validate(document)
    except ValidationError as exc:
        raise click.ClickException(f"{path}: " + "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors())) from None


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--project-config", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="YAML Project resource (or its spec) whose rules apply: language, hints, long pauses; Scorecard "
                   "resources beside it score the call (its JSON's scorecards).")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis result as JSON only.")
def analyze(file: Path, project_config: Path | None, as_json: bool) -> None:
    """Analyse a local recording FILE: transcript by speaker, pauses, talk time and speed.

    The same pipeline the service runs, on this machine, with a progress bar on stderr. Stereo calls are
    split into speakers by channel, mono calls by their voices.
    """
    # imported here: the analysis (numpy, the models' runtimes) takes a second to import, which every other
    # command of the CLI would pay
    from callscope.analysis.report import render
    from callscope.analysis.runtime.pipeline import AnalysisError, Pipeline
    from callscope.analysis.stages.scorecard import score_call

    project, forms = _project_config(project_config) if project_config else (None, [])
    if not file.is_file():
        raise click.ClickException(f"{file}: no such file")
    pipeline = Pipeline(load_settings(data=False))
    logging.getLogger("faster_whisper").setLevel(logging.WARNING)  # its per-chunk INFO lines would break the bar
    with contextlib.ExitStack() as stack:
        bars: list = []

        def progress(stage: str, fraction: float) -> None:
            if stage == "decode":  # the bar starts once the audio decoded: a bad file fails with one line
                return
            if not bars:
                bars.append(stack.enter_context(click.progressbar(
                    length=1000, label="Analysing", file=sys.stderr, show_eta=False,
                    item_show_func=lambda item: item)))
            bars[0].update(max(0, int(fraction * 1000) - bars[0].pos), current_item=stage)

        try:
            result = pipeline.run(file, project, progress)
        except (AnalysisError, CallscopeError, FileNotFoundError) as exc:  # no Whisper model, a stage's typed error
            raise click.ClickException(one_line(exc)) from None
    if forms:  # a form of the file has no id: its place in the file stands for one
        result = result.model_copy(update={"scorecards": [
            score_call(f.spec, result, scorecard_id=i, name=f.spec.name, version=1, llm=pipeline.llm,
                       embedder=pipeline.embedder)
            for i, f in enumerate(forms, 1)]})
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        click.echo(render(result, file.name))

