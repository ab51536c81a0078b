"""Business rules of the public API, independent of HTTP: used by the API, the CLI and the operator."""
