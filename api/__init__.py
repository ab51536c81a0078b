"""The Falcon ASGI app of the public REST API."""
