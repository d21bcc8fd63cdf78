"""Tools, framework-free: the `Tool`, the registry, JSON Schema handling, search, and the
typed Python stubs the model reads."""

from .schema import return_schema

__all__ = ["return_schema"]
