"""Configuration objects shaped like Kubernetes custom resources (group callscope.io)."""

from callscope.resources.kinds import (
    KINDS,
    Account,
    AccountSpec,
    ApiKey,
    ApiKeySpec,
    ApiKeyStatus,
    Member,
    MemberSpec,
    Operator,
    OperatorSpec,
    Project,
    ProjectSpec,
    Tag,
    TagSpec,
    TagStatus,
    VirtualNumber,
    VirtualNumberSpec,
    VirtualNumberStatus,
    kind_class,
)
from callscope.resources.meta import API_VERSION, GROUP, Condition, ObjectMeta, Resource
from callscope.resources.scorecard_kind import Scorecard, ScorecardSpec

__all__ = [
    "API_VERSION", "GROUP", "KINDS", "Account", "AccountSpec", "ApiKey", "ApiKeySpec", "ApiKeyStatus",
    "Condition", "Member", "MemberSpec", "ObjectMeta", "Operator", "OperatorSpec", "Project", "ProjectSpec",
    "Resource", "Scorecard", "ScorecardSpec", "Tag", "TagSpec", "TagStatus", "VirtualNumber", "VirtualNumberSpec",
    "VirtualNumberStatus", "kind_class",
]
