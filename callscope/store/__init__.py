"""Storage of configuration objects: one interface shaped like the Kubernetes API, several back ends."""

from callscope.store.interface import AlreadyExists, Gone, ResourceStore, StaleResourceVersion, WatchEvent

__all__ = ["AlreadyExists", "Gone", "ResourceStore", "StaleResourceVersion", "WatchEvent"]
