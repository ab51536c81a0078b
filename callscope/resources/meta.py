"""The Kubernetes object envelope shared by every kind: apiVersion, kind, metadata, spec, status."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

GROUP = "callscope.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
ID_LABEL = f"{GROUP}/id"
PROJECT_LABEL = f"{GROUP}/project"


class CamelModel(BaseModel):
    """Kubernetes field naming: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class FieldManager(CamelModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    manager: str | None = None
    operation: str | None = None
    subresource: str | None = None


class ObjectMeta(CamelModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    finalizers: list[str] = Field(default_factory=list)
    # Kept so that a full update does not drop what other controllers set (garbage-collection owners).
    owner_references: list[dict[str, Any]] = Field(default_factory=list)
    # Who wrote the object, as the Kubernetes API records it (GitOps controllers, kubectl): read, never written back.
    managed_fields: list[FieldManager] = Field(default_factory=list, exclude=True)


class Condition(CamelModel):
    type: str = Field(description="Ready, Conflict, ReferencesResolved, Degraded...")
    status: str = Field(description="True, False or Unknown.")
    reason: str = Field("", description="One CamelCase word for machines.")
    message: str = Field("", description="What happened, for people.")
    last_transition_time: datetime | None = Field(None, description="When status last changed.")


class BaseStatus(CamelModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    id: int | None = Field(None, description="Integer id of the REST API; assigned once, never reused.")
    updated_at: datetime | None = Field(None, description="Last change of the spec.")
    observed_generation: int | None = Field(None, description="The generation the status describes.")
    conditions: list[Condition] = Field(default_factory=list, description="What the operator observed.")


SpecT = TypeVar("SpecT", bound=BaseModel)
StatusT = TypeVar("StatusT", bound=BaseStatus)


class Resource(CamelModel, Generic[SpecT, StatusT]):
    """One configuration object; subclasses fix KIND, PLURAL and the spec/status types."""

    KIND: ClassVar[str]
    PLURAL: ClassVar[str]
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()

    api_version: str = API_VERSION
    kind: str
    metadata: ObjectMeta
    spec: SpecT
    status: StatusT

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        assert self.metadata.namespace is not None, "stored objects always carry a namespace"
        return self.metadata.namespace

    @property
    def id(self) -> int | None:
        return self.status.id

    def references(self) -> list[tuple[str, str]]:
        """(kind, metadata.name) of each object the spec names; a name means that object of this namespace only."""
        return []

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        data = dict(data)
        data.setdefault("kind", cls.KIND)
        data.setdefault("status", {})
        return cls.model_validate(data)

    @classmethod
    def from_stored(cls, data: dict[str, Any]):
        """An object as a store holds it; None (with an error in the log naming it) for one the current rules
        refuse, e.g. written by an older version before a limit existed: readers skip it instead of failing
        for every object, and nothing is deleted. `callscope apply` with corrected YAML brings it back."""
        try:
            return cls.from_dict(data)
        except ValidationError as exc:
            meta = data.get("metadata") or {}
            structlog.get_logger().error("stored_object_invalid", kind=cls.KIND, account=meta.get("namespace"),
                                         name=meta.get("name"), problems=[e["msg"] for e in exc.errors()][:5])
            return None
