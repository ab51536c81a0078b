"""Storage of configuration objects: one interface shaped like the Kubernetes API, several back ends."""

from callscope.store.interface import ResourceStore, WatchEvent, AlreadyExists, Gone, StaleResourceVersion

__all__ = ["AlreadyExists", "Gone", "ResourceStore", "StaleResourceVersion", "WatchEvent"]
