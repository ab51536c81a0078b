"""Callscope: self-hosted call-recording analysis service."""

__version__ = "0.1.0"
