"""Bad input to every `callscope` command that takes some, and to the YAML files `apply` and `analyze
--project-config` read: NUL, arguments of bytes that are not UTF-8, integers beyond the catalog's BIGINT, negative
counts, overlong text, wrong types, unknown kinds, missing fields, malformed, non-UTF-8 and too deeply nested YAML.
Each is answered with one `Error:` line and a non-zero exit, never a traceback, and nothing stored changes: the
resources (store.db), the catalog's rows and the Secrets, on SQLite and on a PostgreSQL catalog.

The case count of the table is the CLI/YAML line of issue 23's closing note."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine, select

from callscope.catalog.tables import Base
from callscope.cli import main
from callscope.cli.support import YAML_MAX_BYTES
from tests.test_cli import MANIFEST, assert_clean_failure

NUL = "a\x00b"
NOT_UTF8 = os.fsdecode(b"caf\xe9")  # an argument of Latin-1 bytes, as Python decodes argv (surrogate escapes)
HUGE = str(10**20)  # beyond BIGINT (2**63 - 1)
LONG = "x" * 5000
FILE = "{file}"  # replaced by the path of the case's file
YAML_HEAD = "apiVersion: callscope.io/v1alpha1\n"
PROJECT = YAML_HEAD + "kind: Project\nmetadata: {name: p}\nspec: {name: P, language: en}\n"


def doc(kind: str, body: str) -> str:
    return f"{YAML_HEAD}kind: {kind}\n{body}"


@dataclass(frozen=True)
class Bad:
    args: tuple[str, ...]
    error: str  # a fragment of the one `Error:` line
    file: bytes | None = None  # the content of {file}
    stdin: bytes | None = None


def case(id: str, *args: str, error: str, file: str | bytes | None = None, stdin: bytes | None = None):
    content = file.encode() if isinstance(file, str) else file
    return pytest.param(Bad(args, error, content, stdin), id=id)


def apply_case(id: str, content: str | bytes, error: str):
    return case(f"apply-{id}", "apply", "-f", FILE, error=error, file=content)


CASES = [
    # ----- any text argument: NUL, not UTF-8 ------------------------------------------------------------------------
    case("keys-create-name-nul", "keys", "create", "--name", NUL, "--permissions", "read", error="NUL"),
    case("keys-create-name-not-utf8", "keys", "create", "--name", NOT_UTF8, "--permissions", "read", error="UTF-8"),
    case("keys-create-permissions-nul", "keys", "create", "--name", "k1", "--permissions", NUL, error="NUL"),
    case("keys-revoke-name-nul", "keys", "revoke", "--name", NUL, error="NUL"),
    case("keys-regenerate-name-not-utf8", "keys", "regenerate", "--name", NOT_UTF8, error="UTF-8"),
    case("members-add-email-nul", "members", "add", "--email", NUL, "--name", "A", error="NUL"),
    case("members-add-name-not-utf8", "members", "add", "--email", "x@example.com", "--name", NOT_UTF8,
         error="UTF-8"),
    case("members-lock-email-not-utf8", "members", "lock", "--email", NOT_UTF8, error="UTF-8"),
    case("members-remove-email-nul", "members", "remove", "--email", NUL, error="NUL"),
    case("get-kind-nul", "get", NUL, error="NUL"),
    case("get-name-not-utf8", "get", "project", NOT_UTF8, error="UTF-8"),
    case("delete-name-nul", "delete", "tag", NUL, error="NUL"),
    case("reanalyze-id-nul", "reanalyze", NUL, error="NUL"),
    case("reanalyze-id-not-utf8", "reanalyze", NOT_UTF8, error="UTF-8"),
    case("webhooks-enable-url-nul", "webhooks", "enable", "--url", NUL, error="NUL"),
    case("webhooks-enable-url-not-utf8", "webhooks", "enable", "--url", NOT_UTF8, error="UTF-8"),
    case("webhooks-new-secret-name-not-utf8", "webhooks", "new-secret", "--name", NOT_UTF8, error="UTF-8"),
    case("serve-host-nul", "serve", "--host", NUL, error="NUL"),
    case("calls-simulate-url-nul", "calls", "simulate", "--to", "+14155550199", "--from", "+14155550123", "--url",
         NUL, error="NUL"),
    case("calls-simulate-to-not-utf8", "calls", "simulate", "--to", NOT_UTF8, "--from", "+14155550123", "--url",
         "http://127.0.0.1:9", error="UTF-8"),
    case("calls-simulate-url-control-character", "calls", "simulate", "--to", "+14155550199", "--from",
         "+14155550123", "--url", "http://127.0.0.1:9/\x01", error="cannot reach"),
    # ----- --account, on every command that has it ---------------------------------------------------------------
    *[case(f"{'-'.join(command)}-account-{what}", *command, "--account", value, error=fragment)
      for command in (("keys", "list"), ("members", "list"), ("get", "project"), ("jobs", "list"),
                      ("webhooks", "list"), ("operators", "voiceprints"))
      for what, value, fragment in (("nul", NUL, "NUL"), ("not-utf8", NOT_UTF8, "UTF-8"),
                                    ("uppercase", "Acme", "--account"), ("overlong", "a" * 64, "--account"),
                                    ("line-break", "acme\n", "--account"))],
    case("keys-create-account-bad", "keys", "create", "--name", "k1", "--permissions", "read", "--account", "a/b",
         error="--account"),
    case("webhooks-new-secret-account-bad", "webhooks", "new-secret", "--name", "s", "--account", "..",
         error="--account"),
    # ----- integers: beyond BIGINT, zero, negative, not a number ------------------------------------------------
    case("keys-create-project-id-huge", "keys", "create", "--name", "k1", "--permissions", "read", "--project-id",
         HUGE, error="--project-id"),
    case("keys-create-project-id-zero", "keys", "create", "--name", "k1", "--permissions", "read", "--project-id",
         "0", error="--project-id"),
    case("keys-create-project-id-unknown", "keys", "create", "--name", "k1", "--permissions", "read",
         "--project-id", "99999", error="project"),
    case("keys-create-project-id-text", "keys", "create", "--name", "k1", "--permissions", "read", "--project-id",
         "one", error="--project-id"),
    case("keys-create-rate-limit-zero", "keys", "create", "--name", "k1", "--permissions", "read", "--rate-limit",
         "0", error="rate_limit_per_minute"),
    case("keys-create-rate-limit-huge", "keys", "create", "--name", "k1", "--permissions", "read", "--rate-limit",
         HUGE, error="rate_limit_per_minute"),
    case("reanalyze-project-huge", "reanalyze", "--project", HUGE, error="--project"),
    case("reanalyze-project-negative", "reanalyze", "--project", "-5", error="--project"),
    case("jobs-list-limit-huge", "jobs", "list", "--limit", HUGE, error="--limit"),
    case("jobs-list-limit-negative", "jobs", "list", "--limit", "-1", error="--limit"),
    case("webhooks-list-recording-huge", "webhooks", "list", "--recording", HUGE, error="--recording"),
    case("webhooks-list-limit-huge", "webhooks", "list", "--limit", HUGE, error="--limit"),
    case("webhooks-list-limit-negative", "webhooks", "list", "--limit", "-3", error="--limit"),
    case("webhooks-attempts-huge", "webhooks", "attempts", HUGE, error="EVENT_ID"),
    case("webhooks-attempts-unknown", "webhooks", "attempts", "424242", error="424242"),
    case("webhooks-redeliver-huge", "webhooks", "redeliver", HUGE, error="EVENT_IDS"),
    case("webhooks-redeliver-negative", "webhooks", "redeliver", "--", "-1", error="EVENT_IDS"),
    case("webhooks-rotate-secret-project-huge", "webhooks", "rotate-secret", "--project", HUGE, error="--project"),
    case("webhooks-rotate-secret-unknown", "webhooks", "rotate-secret", "--project", "424242", error="not found"),
    case("webhooks-rotate-secret-overlap-negative", "webhooks", "rotate-secret", "--project", "1", "--overlap-hours",
         "-1", error="--overlap-hours"),
    case("webhooks-rotate-secret-overlap-long", "webhooks", "rotate-secret", "--project", "1", "--overlap-hours",
         "169", error="--overlap-hours"),
    case("operators-forget-voice-huge", "operators", "forget-voice", HUGE, error="OPERATOR_ID"),
    case("operators-forget-voice-unknown", "operators", "forget-voice", "424242", error="424242"),
    case("operators-enroll-huge", "operators", "enroll", HUGE, "/no/such.wav", error="OPERATOR_ID"),
    case("serve-port-huge", "serve", "--port", HUGE, error="--port"),
    case("serve-port-negative", "serve", "--port", "-1", error="--port"),
    case("serve-port-beyond-65535", "serve", "--port", "65536", error="--port"),
    # ----- overlong and wrong text --------------------------------------------------------------------------------
    case("keys-create-name-overlong", "keys", "create", "--name", LONG, "--permissions", "read", error="name"),
    case("keys-create-name-uppercase", "keys", "create", "--name", "CI", "--permissions", "read", error="name"),
    case("keys-create-permissions-unknown", "keys", "create", "--name", "k1", "--permissions", "admin",
         error="permissions"),
    case("keys-create-expires-at-garbage", "keys", "create", "--name", "k1", "--permissions", "read",
         "--expires-at", "9999-99-99", error="ISO 8601"),
    case("keys-create-expires-at-year-99999", "keys", "create", "--name", "k1", "--permissions", "read",
         "--expires-at", "99999-01-01", error="ISO 8601"),
    case("keys-create-duplicate", "keys", "create", "--name", "ci", "--permissions", "read", error="ci"),
    case("keys-revoke-overlong", "keys", "revoke", "--name", LONG, error="x"),
    case("members-add-email-overlong", "members", "add", "--email", LONG + "@example.com", "--name", "A",
         error="email"),
    case("members-add-email-invalid", "members", "add", "--email", "not-an-address", "--name", "A",
         error="email"),
    case("members-add-name-overlong", "members", "add", "--email", "x@example.com", "--name", LONG, error="name"),
    case("members-add-duplicate", "members", "add", "--email", "ana@example.com", "--name", "Ana", error="ana"),
    case("members-unlock-unknown", "members", "unlock", "--email", "nobody@example.com", error="nobody"),
    case("get-kind-unknown", "get", "widget", error="unknown kind"),
    case("get-name-overlong", "get", "project", LONG, error="x"),
    case("delete-kind-unknown", "delete", "widget", "w", error="unknown kind"),
    case("delete-name-unknown", "delete", "project", "nope", error="nope"),
    case("reanalyze-id-overlong", "reanalyze", LONG, error="not found"),
    case("reanalyze-nothing", "reanalyze", error="--project"),
    case("reanalyze-status-unknown", "reanalyze", "--project", "1", "--status", "running", error="--status"),
    case("jobs-list-state-unknown", "jobs", "list", "--state", "lost", error="--state"),
    case("webhooks-enable-url-overlong", "webhooks", "enable", "--url", "https://x.example/" + LONG,
         error="not disabled"),
    case("webhooks-new-secret-key-overlong", "webhooks", "new-secret", "--name", "hooks", "--key", LONG,
         error="secret"),
    case("webhooks-new-secret-name-overlong", "webhooks", "new-secret", "--name", "a" * 300, error="secret"),
    case("webhooks-new-secret-name-path", "webhooks", "new-secret", "--name", "../escape", error="secret"),
    case("webhooks-new-secret-key-dotdot", "webhooks", "new-secret", "--name", "hooks", "--key", "..",
         error="secret"),
    case("operators-voiceprints-output-unknown", "operators", "voiceprints", "-o", "xml", error="--output"),
    case("backup-folder-missing", "backup", "/no/such/folder/callscope.tar", error="no such directory"),
    case("restore-file-missing", "restore", "/no/such.tar", error="no such file"),
    case("analyze-file-missing", "analyze", "/no/such.wav", error="no such file"),
    # ----- YAML to `apply` --------------------------------------------------------------------------------------
    apply_case("malformed", "kind: [unclosed\n", "invalid YAML"),
    apply_case("tab-indented", YAML_HEAD + "kind: Project\nmetadata:\n\tname: p\n", "invalid YAML"),
    apply_case("unclosed-quote", YAML_HEAD + 'kind: "Project\n', "invalid YAML"),
    apply_case("not-utf8", PROJECT.replace("name: P", "name: Caf\xe9").encode("latin-1"), "invalid YAML"),
    apply_case("nul-byte", PROJECT.replace("name: P", "name: a\x00b"), "invalid YAML"),
    apply_case("nul-escape", PROJECT.replace("name: P", 'name: "a\\0b"'), "spec.name"),
    apply_case("nested-too-deeply", doc("Project", "metadata: {name: p}\nspec: " + "[" * 5000 + "]" * 5000),
               "nested too deeply"),
    apply_case("python-tag", doc("Project", "metadata:\n  name: !!python/object:os.system p\n"), "invalid YAML"),
    apply_case("scalar-document", "hello\n", "mapping"),
    apply_case("list-document", "- a\n- b\n", "mapping"),
    apply_case("kind-unknown", doc("Widget", "metadata: {name: w}\nspec: {}\n"), "kind"),
    apply_case("kind-a-list", doc("[Project]", "metadata: {name: p}\n"), "kind"),
    apply_case("kind-a-mapping", doc("{a: 1}", "metadata: {name: p}\n"), "kind"),
    apply_case("api-version-wrong", PROJECT.replace("callscope.io/v1alpha1", "v1"), "apiVersion"),
    apply_case("metadata-missing", doc("Project", "spec: {name: P, language: en}\n"), "metadata.name"),
    apply_case("metadata-a-list", doc("Project", "metadata: [1]\nspec: {name: P, language: en}\n"), "mapping"),
    apply_case("name-an-integer", doc("Project", "metadata: {name: 123}\nspec: {name: P, language: en}\n"),
               "metadata.name"),
    apply_case("name-overlong", doc("Project", f"metadata: {{name: {'a' * 254}}}\nspec: {{name: P, language: en}}\n"),
               "metadata.name"),
    apply_case("api-key-name-too-long-for-its-secret",
               doc("ApiKey", f"metadata: {{name: {'a' * 253}}}\nspec: {{permissions: [read]}}\n"), "Secret"),
    apply_case("namespace-an-integer",
               doc("Project", "metadata: {name: p, namespace: 5}\nspec: {name: P, language: en}\n"), "namespace"),
    apply_case("namespace-overlong", doc("Project", f"metadata: {{name: p, namespace: {'a' * 64}}}\n"
                                                    "spec: {name: P, language: en}\n"), "namespace"),
    apply_case("spec-missing", doc("Project", "metadata: {name: p}\n"), "spec"),
    apply_case("spec-a-list", doc("Project", "metadata: {name: p}\nspec: [1]\n"), "spec"),
    apply_case("field-missing", doc("Project", "metadata: {name: p}\nspec: {name: P}\n"), "language"),
    apply_case("field-unknown", doc("Project", "metadata: {name: p}\nspec: {name: P, language: en, bogus: 1}\n"),
               "bogus"),
    apply_case("field-a-date", doc("Project", "metadata: {name: p}\nspec: {name: 2024-01-01, language: en}\n"),
               "spec.name"),
    apply_case("field-overlong", doc("Project", f"metadata: {{name: p}}\nspec: {{name: {LONG}, language: en}}\n"),
               "spec.name"),
    apply_case("retention-huge", doc("Project", f"metadata: {{name: p}}\nspec: {{name: P, language: en, "
                                                f"retentionDays: {HUGE}}}\n"), "retentionDays"),
    apply_case("percentile-nan", doc("Project", "metadata: {name: p}\nspec: {name: P, language: en, "
                                                "qualityBaselinePct: .nan}\n"), "qualityBaselinePct"),
    apply_case("pause-infinite", doc("Project", "metadata: {name: p}\nspec: {name: P, language: en, "
                                                "longPauseThresholdSeconds: .inf}\n"), "longPauseThresholdSeconds"),
    apply_case("goal-id-huge", doc("Project", "metadata: {name: p}\nspec: {name: P, language: en, goals: "
                                              f"[{{id: {HUGE}, name: G, description: D}}]}}\n"), "goals"),
    apply_case("rate-limit-huge", doc("ApiKey", "metadata: {name: k9}\nspec: {permissions: [read], "
                                                f"rateLimitPerMinute: {HUGE}}}\n"), "rateLimitPerMinute"),
    apply_case("goal-within-seconds-huge",
               doc("Project", "metadata: {name: p}\nspec: {name: P, language: en, goals: [{id: 1, name: G, "
                              f"description: D, withinSeconds: {HUGE}}}]}}\n"), "withinSeconds"),
    apply_case("rate-limit-fraction", doc("ApiKey", "metadata: {name: k9}\nspec: {permissions: [read], "
                                                    "rateLimitPerMinute: 1.5}\n"), "rateLimitPerMinute"),
    apply_case("expires-at-year-10000", doc("ApiKey", "metadata: {name: k9}\nspec: {permissions: [read], "
                                                      "expiresAt: 10000-01-01}\n"), "expiresAt"),
    apply_case("permission-unknown", doc("ApiKey", "metadata: {name: k9}\nspec: {permissions: [admin]}\n"),
               "permissions"),
    apply_case("member-email-nul", doc("Member", 'metadata: {name: m9}\nspec: {email: "a\\0@b.c", name: M}\n'),
               "spec.email"),
    apply_case("member-email-overlong", doc("Member", f"metadata: {{name: m9}}\nspec: {{email: {'a' * 400}@b.c, "
                                                      "name: M}\n"), "spec.email"),
    apply_case("phone-number-an-integer", doc("VirtualNumber", "metadata: {name: v9}\nspec: {phoneNumber: "
                                                               f"{HUGE}, countryCode: US}}\n"), "phoneNumber"),
    apply_case("labels-a-list", doc("Project", "metadata: {name: p, labels: [1]}\nspec: {name: P, language: en}\n"),
               "labels"),
    apply_case("creation-timestamp-garbage", doc("Project", "metadata: {name: p, creationTimestamp: garbage}\n"
                                                            "spec: {name: P, language: en}\n"), "creationTimestamp"),
    apply_case("one-bad-document-of-two", PROJECT + "---\n" + doc("Tag", "metadata: {name: t}\nspec: {name: T}\n"),
               "project"),
    case("apply-stdin-not-utf8", "apply", "-f", "-", error="invalid YAML",
         stdin=PROJECT.replace("name: P", "name: Caf\xe9").encode("latin-1")),
    # larger than YAML_MAX_BYTES, refused before it is parsed (60 MB took minutes to be refused); as it is, YAML
    # that would apply: a valid object and a comment
    apply_case("file-too-large", PROJECT + "#" + "x" * YAML_MAX_BYTES + "\n", "larger than 4 MiB"),
    case("apply-stdin-too-large", "apply", "-f", "-", error="larger than 4 MiB",
         stdin=(PROJECT + "#" + "x" * YAML_MAX_BYTES + "\n").encode()),
    case("apply-file-missing", "apply", "-f", "/no/such.yaml", error="/no/such.yaml"),
    # ----- YAML to `analyze --project-config` (read before any audio) -------------------------------------------
    case("analyze-config-not-utf8", "analyze", "/no/such.wav", "--project-config", FILE, error="invalid YAML",
         file=b"name: Caf\xe9\nlanguage: en\n"),
    case("analyze-config-too-large", "analyze", "/no/such.wav", "--project-config", FILE,
         error="larger than 4 MiB", file="name: P\nlanguage: en\n" + " " * YAML_MAX_BYTES),
    case("analyze-config-nested-too-deeply", "analyze", "/no/such.wav", "--project-config", FILE,
         error="nested too deeply", file="name: " + "[" * 5000 + "]" * 5000),
    case("analyze-config-malformed", "analyze", "/no/such.wav", "--project-config", FILE, error="invalid YAML",
         file="name: [unclosed\n"),
    case("analyze-config-two-documents", "analyze", "/no/such.wav", "--project-config", FILE, error="mapping",
         file="name: A\n---\nname: B\n"),
    case("analyze-config-other-kind", "analyze", "/no/such.wav", "--project-config", FILE, error="kind",
         file=doc("Tag", "metadata: {name: t}\nspec: {name: T, project: p}\n")),
    case("analyze-config-wrong-type", "analyze", "/no/such.wav", "--project-config", FILE,
         error="longPauseThresholdSeconds", file="name: P\nlanguage: en\nlongPauseThresholdSeconds: soon\n"),
]


@dataclass
class World:
    data_dir: Path
    catalog_url: str
    files: Path
    runner: CliRunner

    def invoke(self, *args: str, stdin: bytes | None = None) -> Result:
        return self.runner.invoke(main, list(args), input=stdin, catch_exceptions=True)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request, tmp_path_factory) -> Iterator[World]:
    """A data directory with the test_cli manifest applied, a member and a key; the catalog in it, or PostgreSQL."""
    root = tmp_path_factory.mktemp("bad-input")
    data_dir = root / "data"
    env = {"CALLSCOPE_DATA_DIR": str(data_dir), "CALLSCOPE_LOG_LEVEL": "WARNING",
           "CALLSCOPE_DISPATCHER_ENABLED": "false", "CALLSCOPE_WEBHOOK_DELIVERY_ENABLED": "false"}
    if request.param == "postgres":
        env["CALLSCOPE_DATABASE_URL"] = request.getfixturevalue("postgres_url")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        world = World(data_dir, env.get("CALLSCOPE_DATABASE_URL", f"sqlite:///{data_dir / 'catalog.db'}"), root,
                      CliRunner())
        (root / "manifest.yaml").write_text(MANIFEST)
        for args in (("apply", "-f", str(root / "manifest.yaml")),
                     ("members", "add", "--email", "ana@example.com", "--name", "Ana"),
                     ("webhooks", "new-secret", "--name", "hooks")):
            seeded = world.invoke(*args)
            assert seeded.exit_code == 0, (args, seeded.output, seeded.exception)
        yield world


def stored(world: World) -> tuple:
    """Everything a command could change: the resources, every catalog row and the Secrets."""
    with sqlite3.connect(world.data_dir / "store.db") as store:
        resources = list(store.iterdump())
    engine = create_engine(world.catalog_url)
    try:
        with engine.connect() as conn:
            rows = {table.name: sorted(map(repr, conn.execute(select(table)).all()))
                    for table in Base.metadata.sorted_tables}
    finally:
        engine.dispose()
    secrets = sorted((str(path), path.read_bytes()) for path in (world.data_dir / "secrets").rglob("*")
                     if path.is_file())
    return resources, rows, secrets


@pytest.mark.parametrize("bad", CASES)
def test_bad_input_is_one_error_line_and_changes_nothing(world, bad):
    args = list(bad.args)
    if bad.file is not None:
        path = world.files / "case.yaml"
        path.write_bytes(bad.file)
        args = [str(path) if arg == FILE else arg for arg in args]
    before = stored(world)
    assert_clean_failure(world.invoke(*args, stdin=bad.stdin), bad.error)
    assert stored(world) == before


def test_a_yaml_file_up_to_the_limit_is_read_and_one_byte_more_is_not(world, monkeypatch):
    monkeypatch.setattr("callscope.cli.support.YAML_MAX_BYTES", len(MANIFEST.encode()))
    path = world.files / "limit.yaml"
    path.write_text(MANIFEST)
    assert world.invoke("apply", "-f", str(path)).exit_code == 0
    before = stored(world)
    path.write_text(MANIFEST + "\n")
    result = world.invoke("apply", "-f", str(path))
    assert_clean_failure(result, str(path), "larger than", "split it into several files")
    assert stored(world) == before


NO_INPUT = {"migrate", "reindex", "controller", "operator"}  # nothing to give, or the cluster's Kopf controller


def command_of(args: tuple[str, ...]) -> str:
    """The command a case runs: `keys create` for ("keys", "create", "--name", ...)."""
    command, words = main, []
    for arg in args:
        if not isinstance(command, click.Group) or arg not in command.commands:
            break
        command, words = command.commands[arg], [*words, arg]
    return " ".join(words)


def leaf_commands(group: click.Group, prefix: str = "") -> set[str]:
    found = set()
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        found |= leaf_commands(command, path + " ") if isinstance(command, click.Group) else {path}
    return found


def test_the_sweep_covers_every_command_that_takes_input():
    assert leaf_commands(main) - NO_INPUT == {command_of(param.values[0].args) for param in CASES}
