"""Entry point of the Kopf operator: `kopf run -m callscope.operator.main --all-namespaces` or
`callscope operator`. The handlers live in operator/kopf_handlers.py; this module only registers them
into Kopf's default registry (what `kopf run` serves)."""

from __future__ import annotations

import kopf
from callscope.operator.kopf_handlers import PEERING_NAME, register

registry = register(kopf.get_default_registry())

__all__ = ["PEERING_NAME", "registry"]
