"""The `callscope` CLI in process (click's CliRunner): keys, members, apply / get / delete.

Each test gets its own data directory (CALLSCOPE_DATA_DIR). Logs go to stderr, which click (8.2+)
keeps apart from stdout: `result.stdout` is what a script would capture.
"""

from __future__ import annotations

import json
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from callscope.cli import main
from callscope.services.keys import hash_key

KEY_LINE = re.compile(r"^cs_live_[A-Za-z0-9]{32}$")

MANIFEST = """\
apiVersion: callscope.io/v1alpha1
kind: Project
metadata:
  name: sales
spec:
  name: Sales
  language: en
---
apiVersion: callscope.io/v1alpha1
kind: Operator
metadata:
  name: alice
spec:
  name: Alice Smith
  externalId: emp-1
  phoneNumber: "+14155550100"
  projects: [sales]
---
apiVersion: callscope.io/v1alpha1
kind: Tag
metadata:
  name: vip
spec:
  name: VIP
  project: sales
---
apiVersion: callscope.io/v1alpha1
kind: VirtualNumber
metadata:
  name: main-line
spec:
  phoneNumber: "+14155550199"
  countryCode: US
  project: sales
  operators: [alice]
---
apiVersion: callscope.io/v1alpha1
kind: ApiKey
metadata:
  name: ci
spec:
  permissions: [read]
"""

GOOD_PROJECT = """\
apiVersion: callscope.io/v1alpha1
kind: Project
metadata:
  name: support
spec:
  name: Support
  language: en
---
"""


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def cli(data_dir: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CALLSCOPE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CALLSCOPE_LOG_LEVEL", "WARNING")
    runner = CliRunner()

    def run(*args: str, ok: bool = True, input: str | None = None) -> Result:
        result = runner.invoke(main, list(args), input=input, catch_exceptions=True)
        if ok:
            assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return result

    return run


def assert_clean_failure(result: Result, *fragments: str) -> None:
    """Exit code ≠ 0, an `Error: ...` line naming the problem, and no traceback."""
    assert result.exit_code != 0, result.stdout
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # click's exit, not a crash
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment.lower() in errors[0].lower(), errors[0]


def last_line(result: Result) -> str:
    return result.stdout.strip().splitlines()[-1]


def keys_json(cli, account: str = "default") -> dict[str, dict]:
    return {row["name"]: row for row in json.loads(cli("keys", "list", "--account", account, "-o", "json").stdout)}


def get_json(cli, kind: str, name: str | None = None) -> dict:
    return json.loads(cli("get", kind, *([name] if name else []), "-o", "json").stdout)


def write(tmp_path: Path, text: str, name: str = "resources.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ----- keys ----------------------------------------------------------------------------------------

def test_keys_create_prints_the_key_alone_on_the_last_line(cli):
    result = cli("keys", "create", "--name", "ci", "--permissions", "read,write")
    assert KEY_LINE.match(last_line(result)), result.stdout


def test_keys_create_stores_only_the_hash_of_the_printed_key(cli):
    key = last_line(cli("keys", "create", "--name", "ci", "--permissions", "read"))
    stored = get_json(cli, "apikey", "ci")
    assert stored["status"]["keyHash"] == hash_key(key)
    assert key not in json.dumps(stored)


def test_keys_create_wins_a_race_with_the_servers_reconciler(cli, monkeypatch, tmp_path):
    """A running server may reconcile the new ApiKey before the CLI writes its hash (and give it key
    material of its own); the key the CLI prints must still be the one that is stored."""
    from callscope.operator.handlers import reconcile
    from callscope.resources import ApiKey
    from callscope.store.cache import CachedStore

    original = CachedStore.create
    raced = []

    async def create_then_reconcile(self, obj):
        created = await original(self, obj)
        if isinstance(created, ApiKey):
            ctx = type("Ctx", (), {})()  # what reconcile reads of a Context
            ctx.store, ctx.clock = self, lambda: datetime.now(UTC)
            ctx.settings = type("S", (), {"api_key_prefix": "cs_live_"})()
            raced.append(await reconcile(ctx, created))
        return created

    monkeypatch.setattr(CachedStore, "create", create_then_reconcile)
    key = last_line(cli("keys", "create", "--name", "ci", "--permissions", "read"))
    assert raced and raced[0].status.key_hash not in (None, hash_key(key))  # the race did happen
    monkeypatch.setattr(CachedStore, "create", original)
    assert KEY_LINE.match(key)
    assert get_json(cli, "apikey", "ci")["status"]["keyHash"] == hash_key(key)


def test_keys_create_rejects_unknown_permissions(cli):
    result = cli("keys", "create", "--name", "ci", "--permissions", "read,admin", ok=False)
    assert_clean_failure(result, "permissions")
    assert keys_json(cli) == {}


def test_keys_create_rejects_empty_permissions(cli):
    assert_clean_failure(cli("keys", "create", "--name", "ci", "--permissions", " , ", ok=False), "permissions")


def test_keys_create_rejects_a_bad_name(cli):
    result = cli("keys", "create", "--name", "Bad_Name", "--permissions", "read", ok=False)
    assert_clean_failure(result, "key name")
    assert keys_json(cli) == {}


def test_keys_create_rejects_an_unknown_project_id(cli):
    result = cli("keys", "create", "--name", "ci", "--permissions", "read", "--project-id", "999", ok=False)
    assert_clean_failure(result, "project not found")
    assert keys_json(cli) == {}


def test_keys_create_rejects_a_bad_expiry(cli):
    result = cli("keys", "create", "--name", "ci", "--permissions", "read", "--expires-at", "tomorrow", ok=False)
    assert_clean_failure(result, "ISO 8601")


def test_keys_create_rejects_a_duplicate_name(cli):
    first = last_line(cli("keys", "create", "--name", "ci", "--permissions", "read"))
    result = cli("keys", "create", "--name", "ci", "--permissions", "read,write", ok=False)
    assert_clean_failure(result, "ci", "already exists")
    assert not KEY_LINE.match(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "")
    assert get_json(cli, "apikey", "ci")["status"]["keyHash"] == hash_key(first)  # the first key is untouched


def test_keys_create_bound_to_a_project(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    project_id = get_json(cli, "project", "sales")["status"]["id"]
    cli("keys", "create", "--name", "scoped", "--permissions", "read", "--project-id", str(project_id))
    assert keys_json(cli)["scoped"]["project_id"] == project_id
    assert get_json(cli, "apikey", "scoped")["spec"]["project"] == "sales"


def test_keys_list_table_shows_name_state_and_usage_columns(cli):
    cli("keys", "create", "--name", "ci", "--permissions", "read,write")
    lines = cli("keys", "list").stdout.splitlines()
    header = lines[0].split()
    for column in ("NAME", "STATE", "PERMISSIONS", "REQUESTS", "ERRORS", "LAST"):
        assert column in header, lines[0]
    row = next(line for line in lines[1:] if line.split()[0] == "ci")
    assert row.split()[1] == "active"
    assert "never" in row and " 0 " in f" {row} "


def test_keys_list_json_gives_usage_fields(cli):
    cli("keys", "create", "--name", "ci", "--permissions", "read")
    row = keys_json(cli)["ci"]
    assert row["state"] == "active"
    assert row["last_used_at"] is None
    assert row["total_requests"] == 0
    assert row["requests_by_endpoint"] == {}
    assert row["error_rate"] == 0.0
    assert row["hint"].startswith("cs_live_")


def test_keys_list_shows_expired_keys(cli):
    cli("keys", "create", "--name", "old", "--permissions", "read", "--expires-at", "2000-01-01T00:00:00Z")
    cli("keys", "create", "--name", "new", "--permissions", "read", "--expires-at", "2999-01-01T00:00:00Z")
    rows = keys_json(cli)
    assert rows["old"]["state"] == "expired"
    assert rows["new"]["state"] == "active"
    assert rows["new"]["expires_at"].startswith("2999-01-01")


def test_keys_list_is_per_account(cli):
    cli("keys", "create", "--account", "acme", "--name", "ci", "--permissions", "read")
    assert "ci" in keys_json(cli, "acme")
    assert keys_json(cli) == {}


def test_keys_revoke_marks_the_key_revoked(cli):
    cli("keys", "create", "--name", "ci", "--permissions", "read")
    cli("keys", "revoke", "--name", "ci")
    assert keys_json(cli)["ci"]["state"] == "revoked"
    row = next(line for line in cli("keys", "list").stdout.splitlines() if line.split()[0] == "ci")
    assert row.split()[1] == "revoked"


def test_keys_revoke_unknown_key_fails(cli):
    assert_clean_failure(cli("keys", "revoke", "--name", "nope", ok=False), "nope")


def test_keys_regenerate_prints_a_different_key(cli):
    old = last_line(cli("keys", "create", "--name", "ci", "--permissions", "read"))
    new = last_line(cli("keys", "regenerate", "--name", "ci"))
    assert KEY_LINE.match(new)
    assert new != old
    assert get_json(cli, "apikey", "ci")["status"]["keyHash"] == hash_key(new)


def test_keys_regenerate_unknown_key_fails(cli):
    assert_clean_failure(cli("keys", "regenerate", "--name", "nope", ok=False), "nope")


def test_keys_regenerate_refuses_a_revoked_key(cli):
    """A revoked key stays revoked: new key material for it would be printed and then refused with 401."""
    cli("keys", "create", "--name", "ci", "--permissions", "read")
    cli("keys", "revoke", "--name", "ci")
    hashed = get_json(cli, "apikey", "ci")["status"]["keyHash"]
    result = cli("keys", "regenerate", "--name", "ci", ok=False)
    assert_clean_failure(result, "ci", "revoked", "create a new key")
    assert not any(KEY_LINE.match(line) for line in result.stdout.splitlines())  # no key printed
    assert get_json(cli, "apikey", "ci")["status"]["keyHash"] == hashed
    assert keys_json(cli)["ci"]["state"] == "revoked"


def test_keys_regenerate_refuses_an_expired_key(cli):
    cli("keys", "create", "--name", "old", "--permissions", "read", "--expires-at", "2001-01-01T00:00:00Z")
    assert_clean_failure(cli("keys", "regenerate", "--name", "old", ok=False), "old", "expired")


@pytest.mark.parametrize("expires_at", ["2001-01-01T00:00:00", "2001-01-01"])
def test_an_applied_key_expiring_without_an_offset_expires_in_utc(cli, tmp_path, expires_at):
    """YAML reads a time without an offset (or a date) as a naive datetime, which the key's checks compared with the
    clock's aware one (TypeError on every use of the key); it is saved as UTC, as `keys create --expires-at` reads
    it."""
    cli("apply", "-f", write(tmp_path, "apiVersion: callscope.io/v1alpha1\nkind: ApiKey\nmetadata:\n  name: old\n"
                                       f"spec:\n  permissions: [read]\n  expiresAt: {expires_at}\n"))
    assert get_json(cli, "apikey", "old")["spec"]["expiresAt"] == "2001-01-01T00:00:00Z"
    assert keys_json(cli)["old"]["state"] == "expired"


def test_keys_commands_reject_a_bad_account(cli):
    result = cli("keys", "create", "--account", "Not_An_Account", "--name", "ci", "--permissions", "read", ok=False)
    assert_clean_failure(result, "account")


# ----- members -------------------------------------------------------------------------------------

def members_rows(cli, account: str = "default") -> dict[str, list[str]]:
    lines = cli("members", "list", "--account", account).stdout.splitlines()
    assert lines[0].split() == ["EMAIL", "NAME", "ROLE", "STATE"]
    return {line.split()[0]: line.split()[1:] for line in lines[1:]}


def test_members_add_and_list(cli):
    cli("members", "add", "--email", "Ann@Example.com", "--name", "Ann Lee")
    assert members_rows(cli) == {"ann@example.com": ["Ann", "Lee", "member", "invited"]}  # never signed in


def test_members_add_with_a_role(cli):
    cli("members", "add", "--email", "ann@example.com", "--name", "Ann", "--role", "admin")
    assert members_rows(cli) == {"ann@example.com": ["Ann", "admin", "invited"]}
    assert_clean_failure(cli("members", "add", "--email", "bob@example.com", "--name", "Bob", "--role", "owner",
                             ok=False), "role")
    assert list(members_rows(cli)) == ["ann@example.com"]


def test_members_add_duplicate_email_fails(cli):
    cli("members", "add", "--email", "ann@example.com", "--name", "Ann")
    result = cli("members", "add", "--email", "ANN@example.com", "--name", "Other", ok=False)
    assert_clean_failure(result, "ann@example.com", "already")
    assert list(members_rows(cli)) == ["ann@example.com"]


def test_members_add_invalid_email_fails_on_one_line(cli):
    assert_clean_failure(cli("members", "add", "--email", "not-an-email", "--name", "X", ok=False), "email")
    assert members_rows(cli) == {}


@pytest.mark.parametrize("email, name, words", [
    ('"><i>q@x.test', "Q", ["email", "is not an email address such as"]),
    ("r<b>@x.test", "R", ["email", "is not an email address such as"]),
    ("jö@x.test", "J", ["email", "ascii"]),  # a non-ASCII local part needs SMTPUTF8, which the mail path lacks
    ("ann@example.com", "Ann\u202eeilA", ["name", "invisible formatting characters", "U+202E"]),
    ("ann@example.com", "A\u200bnn", ["name", "invisible formatting characters"]),
])
def test_members_add_refuses_what_is_no_address_or_a_spoofing_name(cli, email, name, words):
    result = cli("members", "add", "--email", email, "--name", name, ok=False)
    assert_clean_failure(result, *words)
    assert "pattern" not in result.stderr  # said in words, not as a regular expression
    assert members_rows(cli) == {}


def test_members_lock_and_unlock(cli):
    cli("members", "add", "--email", "ann@example.com", "--name", "Ann")
    cli("members", "lock", "--email", "ann@example.com")
    assert members_rows(cli)["ann@example.com"][-1] == "locked"
    cli("members", "unlock", "--email", "Ann@Example.com")
    assert members_rows(cli)["ann@example.com"][-1] == "invited"


@pytest.mark.parametrize("command", ["lock", "unlock", "remove"])
def test_members_unknown_email_fails(cli, command):
    cli("members", "add", "--email", "ann@example.com", "--name", "Ann")
    assert_clean_failure(cli("members", command, "--email", "bob@example.com", ok=False), "bob@example.com")


def test_members_remove(cli):
    cli("members", "add", "--email", "ann@example.com", "--name", "Ann")
    cli("members", "add", "--email", "bob@example.com", "--name", "Bob")
    cli("members", "remove", "--email", "ann@example.com")
    assert list(members_rows(cli)) == ["bob@example.com"]


def test_members_are_per_account(cli):
    cli("members", "add", "--account", "acme", "--email", "ann@example.com", "--name", "Ann")
    assert list(members_rows(cli, "acme")) == ["ann@example.com"]
    assert members_rows(cli) == {}


# ----- apply / get / delete ------------------------------------------------------------------------

def all_objects(cli) -> dict[tuple[str, str], dict]:
    found = {}
    for kind in ("project", "operator", "tag", "virtualnumber", "apikey"):
        for item in get_json(cli, kind)["items"]:
            found[(item["kind"], item["metadata"]["name"])] = item
    return found


def test_apply_creates_every_document(cli, tmp_path):
    result = cli("apply", "-f", write(tmp_path, MANIFEST))
    assert result.stdout.splitlines() == [
        "project/sales created", "operator/alice created", "tag/vip created",
        "virtualnumber/main-line created", "apikey/ci created",
    ]
    assert set(all_objects(cli)) == {("Project", "sales"), ("Operator", "alice"), ("Tag", "vip"),
                                     ("VirtualNumber", "main-line"), ("ApiKey", "ci")}


def test_apply_reads_stdin(cli):
    cli("apply", "-f", "-", input=MANIFEST)
    assert get_json(cli, "project", "sales")["spec"]["name"] == "Sales"


def test_apply_succeeds_when_a_running_server_reconciles_the_object_first(cli, monkeypatch):
    from callscope.operator import handlers
    from callscope.store.interface import StaleResourceVersion

    async def server_got_there_first(ctx, obj, *args, **kwargs):
        raise StaleResourceVersion(obj.KIND, obj.name)
    monkeypatch.setattr(handlers, "reconcile", server_got_there_first)
    result = cli("apply", "-f", "-", input=MANIFEST)
    assert "project/sales created" in result.stdout
    assert get_json(cli, "project", "sales")["spec"]["name"] == "Sales"


def test_apply_assigns_ids_shown_by_get(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    for kind, name in (("project", "sales"), ("operator", "alice"), ("tag", "vip"), ("vnum", "main-line")):
        obj = get_json(cli, kind, name)
        assert isinstance(obj["status"]["id"], int) and obj["status"]["id"] > 0, obj
        assert obj["metadata"]["labels"]["callscope.io/id"] == str(obj["status"]["id"])
        assert {c["type"]: c["status"] for c in obj["status"]["conditions"]}["Ready"] == "True"


def test_apply_in_any_order_leaves_every_reference_resolved(cli, tmp_path):
    """A file that names an object before it defines it (the project and operator after the number): the number
    is checked again once they exist, as a running server would; a name nothing defines stays reported."""
    documents = MANIFEST.split("---\n")
    cli("apply", "-f", write(tmp_path, "---\n".join(documents[::-1])))
    conditions = {c["type"]: c for c in get_json(cli, "vnum", "main-line")["status"]["conditions"]}
    assert conditions["ReferencesResolved"]["status"] == "True" and conditions["Ready"]["status"] == "True"
    cli("apply", "-f", write(tmp_path, MANIFEST.replace("operators: [alice]", "operators: [alice, bob]")))
    conditions = {c["type"]: c for c in get_json(cli, "vnum", "main-line")["status"]["conditions"]}
    assert conditions["ReferencesResolved"]["message"] == "Operator 'bob' does not exist in account default"
    assert conditions["Ready"]["reason"] == "UnresolvedReferences"


def test_get_table_shows_ids(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    project_id = get_json(cli, "project", "sales")["status"]["id"]
    lines = cli("get", "projects").stdout.splitlines()
    assert lines[0].split()[:3] == ["NAME", "ID", "READY"]
    assert lines[1].split()[:3] == ["sales", str(project_id), "True"]


def test_get_yaml_shows_ids(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    docs = [d for d in yaml.safe_load_all(cli("get", "tag", "-o", "yaml").stdout) if d]
    assert [d["metadata"]["name"] for d in docs] == ["vip"]
    assert isinstance(docs[0]["status"]["id"], int)
    assert docs[0]["status"]["color"].startswith("#")


def test_get_one_by_name_as_json(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    obj = get_json(cli, "csop", "alice")
    assert obj["kind"] == "Operator"
    assert obj["spec"]["externalId"] == "emp-1"
    assert obj["spec"]["projects"] == ["sales"]


def test_get_list_as_json_is_a_list(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    listing = get_json(cli, "Project")
    assert listing["kind"] == "List"
    assert [i["metadata"]["name"] for i in listing["items"]] == ["sales"]


def test_get_empty_kind(cli):
    assert cli("get", "projects").stdout.strip() == "No resources found."


def test_get_unknown_kind_fails(cli):
    assert_clean_failure(cli("get", "widgets", ok=False), "unknown kind", "widgets")


def test_get_unknown_name_fails(cli):
    assert_clean_failure(cli("get", "project", "nope", ok=False), "nope")


def test_applied_api_key_file_is_private_and_authenticates(cli, tmp_path, data_dir):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    path = data_dir / "secrets" / "default" / "ci-key" / "api-key"
    assert path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = path.read_text().strip()
    assert KEY_LINE.match(key)
    assert get_json(cli, "apikey", "ci")["status"]["keyHash"] == hash_key(key)


def test_reapply_is_unchanged_and_writes_nothing(cli, tmp_path, data_dir):
    path = write(tmp_path, MANIFEST)
    cli("apply", "-f", path)
    before = all_objects(cli)
    key_before = (data_dir / "secrets" / "default" / "ci-key" / "api-key").read_text()
    result = cli("apply", "-f", path)
    assert result.stdout.splitlines() == [
        "project/sales unchanged", "operator/alice unchanged", "tag/vip unchanged",
        "virtualnumber/main-line unchanged", "apikey/ci unchanged",
    ]
    after = all_objects(cli)
    assert {k: v["metadata"]["resourceVersion"] for k, v in after.items()} == \
        {k: v["metadata"]["resourceVersion"] for k, v in before.items()}
    assert after == before
    assert (data_dir / "secrets" / "default" / "ci-key" / "api-key").read_text() == key_before


def test_apply_changed_spec_is_configured(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    before = get_json(cli, "project", "sales")
    result = cli("apply", "-f", write(tmp_path, MANIFEST.replace("name: Sales", "name: Sales Team"), "v2.yaml"))
    assert "project/sales configured" in result.stdout.splitlines()
    assert "operator/alice unchanged" in result.stdout.splitlines()
    after = get_json(cli, "project", "sales")
    assert after["spec"]["name"] == "Sales Team"
    assert after["status"]["id"] == before["status"]["id"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert after["status"]["observedGeneration"] == after["metadata"]["generation"]


def test_apply_ignores_status_in_the_file(cli, tmp_path):
    doc = MANIFEST.split("---\n")[-1] + "status:\n  keyHash: abc\n"
    cli("apply", "-f", write(tmp_path, doc))
    assert get_json(cli, "apikey", "ci")["status"]["keyHash"] != "abc"


@pytest.mark.parametrize("bad, fragments", [
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Widget\nmetadata:\n  name: w\nspec: {}\n",
                 ("kind",), id="unknown-kind"),
    pytest.param("apiVersion: v1\nkind: Project\nmetadata:\n  name: p\nspec:\n  name: P\n  language: en\n",
                 ("apiVersion",), id="wrong-api-version"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\n"
                 "spec:\n  name: P\n  language: en\n  bogusField: 1\n", ("bogusField",), id="unknown-field"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\nspec:\n  name: P\n",
                 ("language",), id="missing-field"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Operator\nmetadata:\n  name: bob\n"
                 "spec:\n  name: Bob\n  phoneNumber: '4155550100'\n", ("phoneNumber",), id="bad-e164"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: ApiKey\nmetadata:\n  name: k\n"
                 "spec:\n  permissions: [admin]\n", ("permissions",), id="bad-permission"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\n  namespace: Bad_NS\n"
                 "spec:\n  name: P\n  language: en\n", ("namespace",), id="bad-namespace"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: ApiKey\nmetadata:\n  name: ../../escape\n"
                 "spec:\n  permissions: [read]\n", ("metadata.name",), id="bad-name"),
    # a webhook URL delivery could not parse, a signing Secret the secret store could not read: refused in words
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\nspec:\n  name: P\n"
                 "  language: en\n  webhook: {url: 'https://a.example.com:99999/'}\n",
                 ("spec.webhook.url", "port from 1 to 65535"), id="webhook-port-out-of-range"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\nspec:\n  name: P\n"
                 "  language: en\n  webhook: {url: 'https://[::1'}\n", ("spec.webhook.url", "http or https URL"),
                 id="webhook-unclosed-bracket"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\nspec:\n  name: P\n"
                 "  language: en\n  webhook: {url: 'https://-a.example.com/'}\n",
                 ("spec.webhook.url", "not a URL that can be delivered to", "not a host name"), id="webhook-bad-host"),
    pytest.param("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: p\nspec:\n  name: P\n"
                 "  language: en\n  webhook: {url: 'https://a.example.com/', signingSecretRef: {name: My_Hooks}}\n",
                 ("signingSecretRef.name", "Secret name"), id="webhook-bad-secret-name"),
    pytest.param("- just\n- a list\n", ("mapping",), id="not-a-mapping"),
    pytest.param("kind: [unclosed\n", ("invalid YAML",), id="invalid-yaml"),
])
def test_invalid_document_fails_and_applies_nothing(cli, tmp_path, data_dir, bad, fragments):
    result = cli("apply", "-f", write(tmp_path, GOOD_PROJECT + bad), ok=False)
    assert_clean_failure(result, *fragments)
    assert "created" not in result.stdout
    assert get_json(cli, "project")["items"] == []
    assert not (data_dir / "secrets").exists() or not any((data_dir / "secrets").rglob("api-key"))
    assert not (tmp_path / "escape-key").exists()


def test_invalid_document_leaves_existing_objects_unchanged(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    before = all_objects(cli)
    changed = MANIFEST.replace("name: Sales", "name: Renamed") + \
        "---\napiVersion: callscope.io/v1alpha1\nkind: Tag\nmetadata:\n  name: t\nspec:\n  name: T\n"
    assert_clean_failure(cli("apply", "-f", write(tmp_path, changed, "bad.yaml"), ok=False), "project")
    assert all_objects(cli) == before


def test_operators_with_the_same_external_id_conflict(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    second = ("apiVersion: callscope.io/v1alpha1\nkind: Operator\nmetadata:\n  name: carol\n"
              "spec:\n  name: Carol\n  externalId: emp-1\n")
    cli("apply", "-f", write(tmp_path, second, "carol.yaml"))
    conditions = {c["type"]: c for c in get_json(cli, "operator", "carol")["status"]["conditions"]}
    assert conditions["Conflict"]["status"] == "True"
    assert "emp-1" in conditions["Conflict"]["message"]
    assert conditions["Ready"]["status"] == "False"
    first = {c["type"]: c for c in get_json(cli, "operator", "alice")["status"]["conditions"]}
    assert first["Conflict"]["status"] == "False"


def test_delete_project_cascades(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    result = cli("delete", "project", "sales")
    assert "project/sales deleted" in result.stdout
    assert get_json(cli, "project")["items"] == []
    assert get_json(cli, "tag")["items"] == []
    assert get_json(cli, "virtualnumber")["items"] == []
    assert get_json(cli, "operator", "alice")["spec"]["projects"] == []


def test_delete_one_tag(cli, tmp_path):
    cli("apply", "-f", write(tmp_path, MANIFEST))
    cli("delete", "tag", "vip")
    assert get_json(cli, "tag")["items"] == []
    assert get_json(cli, "project", "sales")["metadata"]["name"] == "sales"


def test_delete_unknown_fails(cli):
    assert_clean_failure(cli("delete", "project", "nope", ok=False), "nope")
    assert_clean_failure(cli("delete", "widget", "x", ok=False), "unknown kind")
