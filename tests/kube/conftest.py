"""Fixtures of the Kubernetes tests: see fixtures.py."""

from kube.fixtures import kube_api, kube_api_server  # noqa: F401
