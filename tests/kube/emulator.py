"""An emulated Kubernetes API server for tests (aiohttp, plain HTTP on 127.0.0.1).

We own its fidelity; it follows the real kube-apiserver where our clients (lightkube, Kopf) can tell:

- discovery: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}``, ``/apis/{group}/{version}``;
- resources: core ``namespaces`` (cluster-scoped; ``default``, ``kube-system`` exist), ``secrets``,
  ``events``, ``configmaps``; ``apiextensions.k8s.io/v1`` ``customresourcedefinitions`` (read-only,
  the CRDs of ``callscope.resources.KINDS`` as ``callscope.resources.crd.build_crd`` makes them, i.e.
  those of crds/); every callscope kind (``callscope.io/v1alpha1``, namespaced, with a ``status``
  subresource and validation by its pydantic model, 422 when invalid); Kopf's peering resources
  ``kopf.dev/v1`` ``clusterkopfpeerings`` and ``kopfpeerings``;
- defaulting: every create, update and patch of a callscope kind gets the ``default:`` values of its
  CRD's structural schema filled in (``apply_defaults``, the algorithm of the real server: absent
  properties and non-nullable nulls take the default, recursively; non-nullable nulls without one are
  dropped), before validation and before the "did anything change" comparison: an object written
  with its defaults spelled out is the same object (no new resourceVersion, no new generation);
- one global resourceVersion counter (as etcd's revision): every write takes the next one; a list's
  ``metadata.resourceVersion`` is the current one; lists carry ``kind: XList``;
- create: 201, sets uid, resourceVersion, generation 1, creationTimestamp, ignores status (status
  subresource); the namespace in the URL wins (400 when the body names another); 404 when the
  namespace does not exist; 409 ``AlreadyExists``;
- PUT: 409 ``Conflict`` on a stale resourceVersion; a custom resource needs one (422 without, as the
  real server); generation grows when the spec changes; status ignored; a no-op writes nothing;
- ``/status``: GET, PUT, PATCH (status only);
- PATCH ``application/merge-patch+json`` (and strategic-merge, treated as merge) with the
  resourceVersion in the patch honoured (409 when stale); ``application/json-patch+json`` (RFC 6902:
  add, remove, replace, move, copy, test; ``json_patch``), all or nothing: a failing op (a ``test``
  that does not match, a path that is not there) is 422 ``Invalid`` and changes nothing, a body that
  is not a list of operations is 400, and a patch that changes metadata.resourceVersion is a
  precondition as in a merge patch (409 when stale) — Kopf guards its finalizer patches with
  ``test /metadata/resourceVersion`` and takes the 422 as "retry on the next cycle"; any other patch
  type (server-side apply): 415;
- DELETE: an object with finalizers gets deletionTimestamp and stays until its finalizers are removed;
  deleting a namespace deletes what it holds;
- ``watch=true``: newline-delimited JSON events after ``resourceVersion`` (none/"0": synthetic ADDED
  events for the current objects first, as the real server), label selectors (with the real server's
  ADDED/DELETED on selector transitions), ``timeoutSeconds``, ``allowWatchBookmarks`` (BOOKMARK events
  every ``bookmark_interval`` seconds and, with ``eager_bookmarks``, after every write that the watch
  does not see), an ERROR event with a 410 ``Expired`` Status when the version was compacted (only the
  last ``max_events`` changes are kept; ``compact()`` drops them all);
- errors are ``Status`` objects with reason and code.

Not emulated: authentication (any token passes), field selectors other than metadata.name /
metadata.namespace, pagination (``limit`` is ignored: one page), server-side apply, admission webhooks,
the CRDs' other schema rules (pattern, enum, CEL, ...: the pydantic models validate instead, with the
same outcome, see tests/k8s/test_crds.py), pruning of unknown fields.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import socket
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic
from aiohttp import web

from callscope.errors import ValidationFailed
from callscope.resources import KINDS
from callscope.resources.crd import build_crd
from callscope.store.selectors import Selector, parse_selector

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass(frozen=True)
class ResourceDef:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = False
    model: Any = None  # pydantic Resource class validating the object
    custom: bool = False  # a custom resource (PUT needs a resourceVersion)
    readonly: bool = False
    short_names: tuple[str, ...] = ()
    crd: dict[str, Any] | None = field(default=None, compare=False, repr=False)  # served; its defaults apply

    @property
    def schema(self) -> dict[str, Any] | None:
        """The structural openAPIV3Schema of the CRD (None: not a CRD-defined kind, no defaulting)."""
        if self.crd is None:
            return None
        return self.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _default_resources() -> list[ResourceDef]:
    defs = [
        ResourceDef("", "v1", "Namespace", "namespaces", False, status_subresource=True, short_names=("ns",)),
        ResourceDef("", "v1", "Secret", "secrets", True),
        ResourceDef("", "v1", "ConfigMap", "configmaps", True, short_names=("cm",)),
        ResourceDef("", "v1", "Event", "events", True, short_names=("ev",)),
        ResourceDef("kopf.dev", "v1", "ClusterKopfPeering", "clusterkopfpeerings", False, custom=True),
        ResourceDef("kopf.dev", "v1", "KopfPeering", "kopfpeerings", True, custom=True),
        ResourceDef(
            "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
            readonly=True, short_names=("crd",),
        ),
    ]
    for cls in KINDS.values():
        group, _, version = cls.model_fields["api_version"].default.partition("/")
        defs.append(
            ResourceDef(
                group, version, cls.KIND, cls.PLURAL, True, status_subresource=True, model=cls, custom=True,
                short_names=tuple(cls.SHORT_NAMES), crd=build_crd(cls),
            )
        )
    return defs


def crd_for(rd: ResourceDef) -> dict[str, Any]:
    """The CustomResourceDefinition object of a custom resource: its own (crds/) when it has one,
    else one whose schema preserves unknown fields."""
    if rd.crd is not None:
        return copy.deepcopy(rd.crd)
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    version: dict[str, Any] = {"name": rd.version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}
    if rd.status_subresource:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": rd.qualified},
        "spec": {
            "group": rd.group,
            "names": {
                "kind": rd.kind, "listKind": rd.kind + "List", "plural": rd.plural,
                "singular": rd.kind.lower(), "shortNames": list(rd.short_names),
            },
            "scope": "Namespaced" if rd.namespaced else "Cluster",
            "versions": [version],
        },
        "status": {"acceptedNames": {"kind": rd.kind, "plural": rd.plural}, "conditions": [
            {"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}]},
    }


class ApiFailure(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def body(self) -> dict[str, Any]:
        out = {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


def _json(data: Any, status: int = 200) -> web.Response:
    """A JSON response with the real server's exact Content-Type (lightkube compares it verbatim)."""
    return web.Response(body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"})


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class JsonPatchError(ValueError):
    """An RFC 6902 patch that cannot be applied (the API server answers 422 Invalid)."""


class JsonPatchTestFailed(JsonPatchError):
    """A ``test`` operation found another value."""


def _pointer(path: Any) -> list[str]:
    """The reference tokens of an RFC 6901 JSON pointer ("" is the whole document)."""
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise JsonPatchError(f"invalid JSON pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _index(container: list, token: str, path: str, *, append: bool = False) -> int:
    """The list index a token names: "-" (one past the end) only where appending; no leading zeros."""
    if append and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise JsonPatchError(f"invalid array index {token!r} in {path}")
    index = int(token)
    if index > len(container) or (index == len(container) and not append):
        raise JsonPatchError(f"array index {index} out of bounds in {path}")
    return index


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    """The container that holds the location of `tokens` (which must exist)."""
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path)]
        else:
            raise JsonPatchError(f"missing value at {path}")
    if not isinstance(node, (dict, list)):
        raise JsonPatchError(f"missing value at {path}")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        return parent[_index(parent, last, path)]
    if last not in parent:
        raise JsonPatchError(f"missing value at {path}")
    return parent[last]


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        parent.insert(_index(parent, last, path, append=True), value)
    else:
        parent[last] = value
    return doc


def _replace(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        parent[_index(parent, last, path)] = value
    elif last in parent:
        parent[last] = value
    else:
        raise JsonPatchError(f"missing value at {path}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise JsonPatchError("cannot remove the whole document")
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, list):
        del parent[_index(parent, last, path)]
    elif last in parent:
        del parent[last]
    else:
        raise JsonPatchError(f"missing value at {path}")
    return doc


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values (unlike ==, true is not 1, and 1 is 1.0 only as numbers)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_MISSING = object()


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """`doc` with the RFC 6902 operations applied in order (a new document; `doc` is untouched).

    All or nothing: the first operation that cannot be applied raises JsonPatchError
    (JsonPatchTestFailed for a ``test`` that does not match)."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, path = op.get("op"), op.get("path", _MISSING)
        if path is _MISSING:
            raise JsonPatchError(f"operation {kind!r} has no path")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise JsonPatchError(f"operation {kind!r} at {path} has no value")
        if kind in ("move", "copy") and "from" not in op:
            raise JsonPatchError(f"operation {kind!r} at {path} has no from")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            doc = _replace(doc, path, copy.deepcopy(op["value"]))
        elif kind == "move":
            source = op["from"]
            if path != source and path.startswith(source + "/"):
                raise JsonPatchError(f"cannot move {source} into its own child {path}")
            value = _get(doc, source)
            if path != source:
                doc = _add(_remove(doc, source), path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif kind == "test":
            if not json_equal(_get(doc, path), op["value"]):
                raise JsonPatchTestFailed(f"testing value {path} failed: test failed")
        else:
            raise JsonPatchError(f"unexpected kind of operation: {kind!r}")
    return doc


def apply_defaults(value: Any, schema: dict[str, Any] | None) -> Any:
    """`value` (a new copy) as a Kubernetes API server stores it under a structural schema: within the
    objects present, an absent property with a ``default`` gets (a copy of) it, a ``null`` where the
    schema is not ``nullable`` gets the default or, without one, is dropped; recursively, through
    ``properties``, ``additionalProperties`` and ``items``. (apiextensions-apiserver's
    PruneNonNullableNullsWithoutDefaults and Default.)"""
    if not schema:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if item is None and sub is not None and not sub.get("nullable"):
                if "default" in sub:
                    out[key] = copy.deepcopy(sub["default"])  # defaulted (and walked) below
                continue  # pruned
            out[key] = item
        for key, sub in props.items():
            if key not in out and "default" in sub and sub["default"] is not None:
                out[key] = copy.deepcopy(sub["default"])
        return {key: apply_defaults(item, props.get(key, extra if isinstance(extra, dict) else None))
                for key, item in out.items()}
    if isinstance(value, list):
        items = schema.get("items")
        return [apply_defaults(item, items if isinstance(items, dict) else None) for item in value]
    return copy.deepcopy(value)


@dataclass(eq=False)
class _Watcher:
    rd: ResourceDef
    namespace: str | None
    selector: Selector
    bookmarks: bool
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    def visible(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        return self.selector.matches(obj["metadata"].get("labels") or {})


_CLOSE = object()


class KubeEmulator:
    """The state and the aiohttp application of the emulated API server."""

    def __init__(self, *, max_events: int = 1000, bookmark_interval: float | None = 0.5, eager_bookmarks: bool = True):
        self.max_events = max_events
        self.bookmark_interval = bookmark_interval
        self.eager_bookmarks = eager_bookmarks
        self.resources = _default_resources()
        self.rv = 0
        self.compacted = 0
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (qualified, ns, name) -> object
        self.events: list[tuple[int, str, ResourceDef, dict | None, dict]] = []  # rv, type, rd, old, new
        self.watchers: set[_Watcher] = set()  # type: ignore[assignment]
        self.requests: list[tuple[str, str]] = []  # (method, path+query) of every request, for tests
        self._init_namespaces()

    # -- state ----------------------------------------------------------------------------

    def _init_namespaces(self) -> None:
        ns_rd = self._find("", "v1", "namespaces")
        assert ns_rd is not None
        for name in ("default", "kube-system", "kube-public"):
            self._insert(ns_rd, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "")

    def reset(self) -> None:
        """Forget every object; resourceVersions keep growing (older ones are Gone); watches end."""
        self.objects.clear()
        self.events.clear()
        self.compacted = self._next_rv()  # objects vanish without events: every earlier version is Gone
        for w in list(self.watchers):
            w.queue.put_nowait(_CLOSE)
        self.watchers.clear()
        self.requests.clear()
        self._init_namespaces()

    def compact(self) -> int:
        """Forget the changes kept so far (etcd's compaction at the current revision): a watch from any
        earlier resourceVersion is Gone, one from the current version sees what comes next. The
        current version."""
        self.events.clear()
        self.compacted = self.rv
        return self.rv

    def _find(self, group: str, version: str, plural: str) -> ResourceDef | None:
        for rd in self.resources:
            if (rd.group, rd.version, rd.plural) == (group, version, plural):
                return rd
        return None

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, type_: str, rd: ResourceDef, old: dict | None, new: dict) -> None:
        rv = int(new["metadata"]["resourceVersion"])
        self.events.append((rv, type_, rd, copy.deepcopy(old), copy.deepcopy(new)))
        if len(self.events) > self.max_events:
            drop = len(self.events) - self.max_events
            self.compacted = self.events[drop - 1][0]
            del self.events[:drop]
        for w in list(self.watchers):
            ev = self._event_for(w, type_, rd, old, new)
            if ev is not None:
                w.queue.put_nowait(ev)
            elif w.bookmarks and self.eager_bookmarks:
                w.queue.put_nowait(self._bookmark(w.rd, rv))

    def _event_for(self, w: _Watcher, type_: str, rd: ResourceDef, old: dict | None, new: dict) -> dict | None:
        if w.rd is not rd:
            return None
        if type_ == "DELETED":
            return {"type": "DELETED", "object": copy.deepcopy(new)} if w.visible(new) else None
        was, now = w.visible(old), w.visible(new)
        if now:
            return {"type": "MODIFIED" if (was and type_ == "MODIFIED") else "ADDED", "object": copy.deepcopy(new)}
        if was:  # left the selection: the real server sends DELETED with the new state
            return {"type": "DELETED", "object": copy.deepcopy(new)}
        return None

    @staticmethod
    def _bookmark(rd: ResourceDef, rv: int) -> dict:
        return {"type": "BOOKMARK", "object": {"kind": rd.kind, "apiVersion": rd.api_version,
                                                "metadata": {"resourceVersion": str(rv)}}}

    def _key(self, rd: ResourceDef, ns: str, name: str) -> tuple[str, str, str]:
        return (rd.qualified, ns if rd.namespaced else "", name)

    def _insert(self, rd: ResourceDef, body: dict, ns: str) -> dict:
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        for f in ("resourceVersion", "uid", "generation", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "managedFields", "selfLink"):
            meta.pop(f, None)
        if rd.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        obj["apiVersion"], obj["kind"] = rd.api_version, rd.kind
        if rd.status_subresource:
            obj["status"] = {"phase": "Active"} if rd.plural == "namespaces" else {}
        meta.update(uid=str(uuid.uuid4()), resourceVersion=str(self._next_rv()), generation=1,
                    creationTimestamp=_now())
        self.objects[self._key(rd, ns, meta["name"])] = obj
        self._record("ADDED", rd, None, obj)
        return obj

    # -- validation -----------------------------------------------------------------------

    @staticmethod
    def _invalid(rd: ResourceDef, name: str, causes: list[tuple[str, str]]) -> ApiFailure:
        text = "; ".join(f"{f}: {m}" if f else m for f, m in causes)
        return ApiFailure(
            422, "Invalid", f'{rd.kind}.{rd.group or "core"} "{name}" is invalid: {text}',
            {"name": name, "group": rd.group, "kind": rd.kind,
             "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]},
        )

    def _validate(self, rd: ResourceDef, obj: dict) -> None:
        name = obj.get("metadata", {}).get("name") or ""
        if not name or len(name) > 253 or not _NAME_RE.match(name):
            raise self._invalid(rd, name, [("metadata.name",
                                            f"Invalid value: {name!r}: a lowercase RFC 1123 subdomain is required")])
        if rd.model is not None:
            try:
                rd.model.model_validate(obj)
            except pydantic.ValidationError as exc:
                causes = [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in exc.errors()]
                raise self._invalid(rd, name, causes) from None

    # -- operations -----------------------------------------------------------------------

    def _get(self, rd: ResourceDef, ns: str, name: str) -> dict:
        obj = self.objects.get(self._key(rd, ns, name))
        if obj is None:
            raise ApiFailure(404, "NotFound", f'{rd.qualified} "{name}" not found',
                             {"name": name, "group": rd.group, "kind": rd.plural})
        return obj

    def _list(self, rd: ResourceDef, ns: str | None, selector: Selector, field_sel: dict[str, str]) -> dict:
        items = [
            copy.deepcopy(o) for (q, o_ns, name), o in sorted(self.objects.items())
            if q == rd.qualified and (ns is None or o_ns == ns)
            and selector.matches(o["metadata"].get("labels") or {})
            and all(self._field(o, k) == v for k, v in field_sel.items())
        ]
        return {"apiVersion": rd.api_version, "kind": rd.kind + "List",
                "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    @staticmethod
    def _field(obj: dict, path: str) -> str | None:
        cur: Any = obj
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur

    def _create(self, rd: ResourceDef, ns: str | None, body: dict) -> dict:
        if rd.readonly:
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")
        if not isinstance(body, dict):
            raise ApiFailure(400, "BadRequest", "the body of the request is not a JSON object")
        meta = body.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if rd.namespaced:
            assert ns is not None
            if meta.get("namespace") and meta["namespace"] != ns:
                raise ApiFailure(400, "BadRequest", "the namespace of the provided object does not match "
                                                    "the namespace sent on the request")
            ns_rd = self._find("", "v1", "namespaces")
            if self._key(ns_rd, "", ns) not in self.objects:  # type: ignore[arg-type]
                raise ApiFailure(404, "NotFound", f'namespaces "{ns}" not found',
                                 {"name": ns, "kind": "namespaces"})
        name = meta.get("name") or ""
        body = self._defaulted(rd, body)
        candidate = copy.deepcopy(body)
        candidate.setdefault("metadata", {})["namespace"] = ns
        candidate["apiVersion"], candidate["kind"] = rd.api_version, rd.kind
        if rd.status_subresource:
            candidate["status"] = {}
        self._validate(rd, candidate)
        if self._key(rd, ns or "", name) in self.objects:
            raise ApiFailure(409, "AlreadyExists", f'{rd.qualified} "{name}" already exists',
                             {"name": name, "group": rd.group, "kind": rd.plural})
        return self._insert(rd, body, ns or "")

    @staticmethod
    def _defaulted(rd: ResourceDef, obj: dict) -> dict:
        """The object with the defaults of its CRD's schema filled in (what the real server stores)."""
        return apply_defaults(obj, rd.schema) if rd.schema is not None else obj

    def _check_rv(self, rd: ResourceDef, current: dict, wanted: Any, *, required: bool) -> None:
        name = current["metadata"]["name"]
        if wanted in (None, ""):
            if required:
                raise self._invalid(rd, name, [("metadata.resourceVersion",
                                                "Invalid value: 0x0: must be specified for an update")])
            return
        if str(wanted) != current["metadata"]["resourceVersion"]:
            raise ApiFailure(
                409, "Conflict",
                f'Operation cannot be fulfilled on {rd.qualified} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                {"name": name, "group": rd.group, "kind": rd.plural},
            )

    def _store_change(self, rd: ResourceDef, current: dict, new: dict) -> dict:
        """Write `new` (the next state of `current`) unless nothing changed; delete it when it is
        being deleted and has no finalizers left."""
        meta = new["metadata"]
        for f in ("uid", "creationTimestamp", "deletionTimestamp", "namespace", "name", "generation"):
            if f in current["metadata"]:
                meta[f] = current["metadata"][f]
            else:
                meta.pop(f, None)
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        new["apiVersion"], new["kind"] = rd.api_version, rd.kind
        new = self._defaulted(rd, new)
        meta = new["metadata"]
        if new == current:
            return copy.deepcopy(current)
        self._validate(rd, new)
        if (rd.custom or rd.status_subresource) and new.get("spec") != current.get("spec"):
            meta["generation"] = int(current["metadata"].get("generation") or 1) + 1
        meta["resourceVersion"] = str(self._next_rv())
        key = self._key(rd, meta.get("namespace") or "", meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self.objects[key]
            self._record("DELETED", rd, current, new)
            return copy.deepcopy(new)
        self.objects[key] = new
        self._record("MODIFIED", rd, current, new)
        return copy.deepcopy(new)

    def _apply(self, rd: ResourceDef, current: dict, incoming: dict, status: bool) -> dict:
        """The next state when `incoming` (a full object) is written to the main resource or to /status."""
        if status:
            new = copy.deepcopy(current)
            new["status"] = copy.deepcopy(incoming.get("status") or {})
            return new
        new = copy.deepcopy(incoming)
        if rd.status_subresource:
            if "status" in current:
                new["status"] = copy.deepcopy(current["status"])
            else:
                new.pop("status", None)
        return new

    def _replace(self, rd: ResourceDef, ns: str, name: str, body: dict, status: bool) -> dict:
        if rd.readonly:
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")
        if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
            raise ApiFailure(400, "BadRequest", "the body of the request is not an object with metadata")
        if body["metadata"].get("name") not in (None, name):
            raise ApiFailure(400, "BadRequest", "the name of the object does not match the name on the URL")
        if rd.namespaced and body["metadata"].get("namespace") not in (None, ns):
            raise ApiFailure(400, "BadRequest", "the namespace of the object does not match the namespace on the URL")
        current = self._get(rd, ns, name)
        self._check_rv(rd, current, body["metadata"].get("resourceVersion"), required=rd.custom)
        return self._store_change(rd, current, self._apply(rd, current, body, status))

    def _patch(self, rd: ResourceDef, ns: str, name: str, patch: Any, status: bool) -> dict:
        if rd.readonly:
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")
        if not isinstance(patch, dict):
            raise ApiFailure(400, "BadRequest", "a merge patch must be a JSON object")
        current = self._get(rd, ns, name)
        self._check_rv(rd, current, (patch.get("metadata") or {}).get("resourceVersion"), required=False)
        merged = merge_patch(current, patch)
        return self._store_change(rd, current, self._apply(rd, current, merged, status))

    def _json_patch(self, rd: ResourceDef, ns: str, name: str, ops: Any, status: bool) -> dict:
        """An RFC 6902 patch of the object (or of its status): applied in full or not at all."""
        if rd.readonly:
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")
        if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
            raise ApiFailure(400, "BadRequest", "a JSON patch must be a JSON array of operation objects")
        current = self._get(rd, ns, name)
        try:
            patched = json_patch(current, ops)
        except JsonPatchError as exc:
            raise ApiFailure(422, "Invalid", str(exc)) from None
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise ApiFailure(422, "Invalid", "the patched object is not an object with metadata")
        self._check_rv(rd, current, patched["metadata"].get("resourceVersion"), required=False)
        return self._store_change(rd, current, self._apply(rd, current, patched, status))

    def _delete(self, rd: ResourceDef, ns: str, name: str, body: dict | None) -> dict:
        if rd.readonly:
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")
        current = self._get(rd, ns, name)
        pre = (body or {}).get("preconditions") or {}
        if pre.get("resourceVersion") and pre["resourceVersion"] != current["metadata"]["resourceVersion"]:
            self._check_rv(rd, current, pre["resourceVersion"], required=False)
        if pre.get("uid") and pre["uid"] != current["metadata"]["uid"]:
            raise ApiFailure(409, "Conflict", f'Precondition failed: UID in precondition: {pre["uid"]}, '
                                              f'UID in object meta: {current["metadata"]["uid"]}')
        if current["metadata"].get("finalizers"):
            if current["metadata"].get("deletionTimestamp"):
                return copy.deepcopy(current)
            new = copy.deepcopy(current)
            new["metadata"]["deletionTimestamp"] = _now()
            new["metadata"]["resourceVersion"] = str(self._next_rv())
            self.objects[self._key(rd, ns, name)] = new
            self._record("MODIFIED", rd, current, new)
            return copy.deepcopy(new)
        if rd.plural == "namespaces" and not rd.group:
            for (q, o_ns, o_name), obj in sorted(self.objects.items()):
                if o_ns == name:
                    o_rd = next(r for r in self.resources if r.qualified == q)
                    gone = copy.deepcopy(obj)
                    gone["metadata"]["resourceVersion"] = str(self._next_rv())
                    del self.objects[(q, o_ns, o_name)]
                    self._record("DELETED", o_rd, obj, gone)
        gone = copy.deepcopy(current)
        gone["metadata"]["resourceVersion"] = str(self._next_rv())
        del self.objects[self._key(rd, ns, name)]
        self._record("DELETED", rd, current, gone)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "group": rd.group, "kind": rd.plural, "uid": current["metadata"]["uid"]}}

    # -- discovery ------------------------------------------------------------------------

    def _api_resources(self, group: str, version: str) -> dict:
        out = []
        for rd in self.resources:
            if (rd.group, rd.version) != (group, version):
                continue
            verbs = ["get", "list", "watch"] if rd.readonly else \
                ["create", "delete", "get", "list", "patch", "update", "watch"]
            out.append({"name": rd.plural, "singularName": rd.kind.lower(), "namespaced": rd.namespaced,
                        "kind": rd.kind, "verbs": verbs, "shortNames": list(rd.short_names)})
            if rd.status_subresource:
                out.append({"name": rd.plural + "/status", "singularName": "", "namespaced": rd.namespaced,
                            "kind": rd.kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": out}

    def _groups(self) -> list[dict]:
        seen: dict[str, list[str]] = {}
        for rd in self.resources:
            if rd.group:
                versions = seen.setdefault(rd.group, [])
                if rd.version not in versions:
                    versions.append(rd.version)
        return [
            {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
             "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
            for g, vs in seen.items()
        ]

    # -- HTTP -----------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs))
        try:
            return await self._dispatch(request)
        except ApiFailure as exc:
            return _json(exc.body(), status=exc.code)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiFailure(400, "BadRequest", "the request body is not valid JSON") from None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        method = request.method
        if parts == ["version"]:
            return _json({"major": "1", "minor": "31", "gitVersion": "v1.31.0-callscope-emulator",
                                      "platform": "linux/amd64"})
        if parts in (["healthz"], ["readyz"], ["livez"]):
            return web.Response(text="ok")
        if parts == ["api"]:
            return _json({"kind": "APIVersions", "versions": ["v1"],
                                      "serverAddressByClientCIDRs": []})
        if parts == ["apis"]:
            return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": self._groups()})
        if not parts or parts[0] not in ("api", "apis"):
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        if parts[0] == "api":
            group, rest = "", parts[1:]
        else:
            group, rest = parts[1], parts[2:]
            if not rest:
                found = [g for g in self._groups() if g["name"] == group]
                if not found:
                    raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
                return _json({"kind": "APIGroup", "apiVersion": "v1", **found[0]})
        if not rest:
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        version, rest = rest[0], rest[1:]
        if not rest:
            if not any((rd.group, rd.version) == (group, version) for rd in self.resources):
                raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
            return _json(self._api_resources(group, version))

        ns: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            rd = self._find(group, version, rest[2])
            if rd is not None and rd.namespaced:
                ns, rest = rest[1], rest[2:]
        rd = self._find(group, version, rest[0])
        if rd is None or (rd.namespaced and ns is None and len(rest) > 1):
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub is not None and (sub != "status" or not rd.status_subresource)):
            raise ApiFailure(404, "NotFound", "the server could not find the requested resource")
        q = request.query
        if rd.plural == "customresourcedefinitions":
            self._sync_crds(rd)

        if name is None:
            selector = self._selector(q.get("labelSelector"))
            fields = self._fields(q.get("fieldSelector"))
            if method == "GET":
                if q.get("watch") in ("true", "1"):
                    return await self._watch(request, rd, ns, selector)
                return _json(self._list(rd, ns, selector, fields))
            if method == "POST":
                if rd.namespaced and ns is None:
                    raise ApiFailure(405, "MethodNotAllowed", "create needs a namespace in the URL")
                return _json(self._create(rd, ns, await self._body(request)), status=201)
            raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")

        ns_key = ns or ""
        if method == "GET":
            return _json(copy.deepcopy(self._get(rd, ns_key, name)))
        if method == "PUT":
            return _json(self._replace(rd, ns_key, name, await self._body(request), sub == "status"))
        if method == "PATCH":
            ctype = request.content_type
            if ctype == "application/json-patch+json":
                return _json(self._json_patch(rd, ns_key, name, await self._body(request), sub == "status"))
            if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                raise ApiFailure(415, "UnsupportedMediaType",
                                 f"the body of the request was in an unknown format: {ctype}")
            return _json(self._patch(rd, ns_key, name, await self._body(request), sub == "status"))
        if method == "DELETE" and sub is None:
            return _json(self._delete(rd, ns_key, name, await self._body(request)))
        raise ApiFailure(405, "MethodNotAllowed", f"the server does not allow this method on {rd.qualified}")

    def _sync_crds(self, crd_rd: ResourceDef) -> None:
        for rd in self.resources:
            if rd.custom and rd.model is not None and self._key(crd_rd, "", rd.qualified) not in self.objects:
                self._insert(crd_rd, crd_for(rd), "")

    @staticmethod
    def _selector(text: str | None) -> Selector:
        try:
            return parse_selector(text)
        except ValidationFailed as exc:
            raise ApiFailure(400, "BadRequest", f"unable to parse requirement: {exc}") from None

    @staticmethod
    def _fields(text: str | None) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in (text or "").split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            key = key.rstrip("=")
            value = value.lstrip("=")
            if not sep or key not in ("metadata.name", "metadata.namespace"):
                raise ApiFailure(400, "BadRequest", f'"{part}" is not a known field selector')
            out[key] = value
        return out

    async def _watch(self, request: web.Request, rd: ResourceDef, ns: str | None,
                     selector: Selector) -> web.StreamResponse:
        q = request.query
        rv_text = q.get("resourceVersion") or ""
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        w = _Watcher(rd, ns, selector, bookmarks=q.get("allowWatchBookmarks") in ("true", "1"))
        initial: list[dict] = []
        error: dict | None = None
        # No await between reading the backlog and registering: no event is lost or doubled.
        if rv_text in ("", "0"):
            for (qn, _o_ns, _), obj in sorted(self.objects.items()):
                if qn == rd.qualified and w.visible(obj):
                    initial.append({"type": "ADDED", "object": copy.deepcopy(obj)})
        else:
            try:
                start = int(rv_text)
            except ValueError:
                raise ApiFailure(400, "BadRequest", f'invalid resource version "{rv_text}"') from None
            if start < self.compacted:
                error = {"type": "ERROR", "object": ApiFailure(
                    410, "Expired", f"too old resource version: {start} ({self.compacted + 1})").body()}
            else:
                for rv, type_, e_rd, old, new in self.events:
                    if rv > start:
                        ev = self._event_for(w, type_, e_rd, old, new)
                        if ev is not None:
                            initial.append(ev)
        if error is None:
            self.watchers.add(w)
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            if error is not None:
                await resp.write(json.dumps(error).encode() + b"\n")
                return resp
            for ev in initial:
                await resp.write(json.dumps(ev).encode() + b"\n")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout if timeout is not None else None
            while True:
                wait = self.bookmark_interval if w.bookmarks else None
                if deadline is not None:
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    wait = left if wait is None else min(wait, left)
                try:
                    item = await asyncio.wait_for(w.queue.get(), wait)
                except TimeoutError:
                    if w.bookmarks and (deadline is None or loop.time() < deadline):
                        await resp.write(json.dumps(self._bookmark(rd, self.rv)).encode() + b"\n")
                    continue
                if item is _CLOSE:
                    break
                await resp.write(json.dumps(item).encode() + b"\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.watchers.discard(w)
        return resp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_kubeconfig(path: Path, url: str, *, context: str = "emulator", namespace: str = "default") -> Path:
    import yaml

    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": context, "cluster": {"server": url}}],
        "users": [{"name": context, "user": {"token": "emulator-token"}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(config))
    return path


class KubeApiServer:
    """The emulator served on 127.0.0.1 from a thread of its own (so that it outlives event loops)."""

    def __init__(self, kubeconfig: Path, **options: Any):
        self.emulator = KubeEmulator(**options)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.kubeconfig = write_kubeconfig(kubeconfig, self.url)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kube-emulator", daemon=True)
        self._runner: web.AppRunner | None = None

    def start(self) -> KubeApiServer:
        self._thread.start()
        self.call(self._start)
        return self

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.emulator.app(), handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run fn(*args) (a coroutine function or a plain one) on the server's loop; its result."""
        async def run() -> Any:
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    def reset(self) -> None:
        self.call(self.emulator.reset)

    def stop(self) -> None:
        if self._runner is not None:
            async def cleanup() -> None:
                self.emulator.reset()
                await self._runner.cleanup()  # type: ignore[union-attr]

            self.call(cleanup)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
