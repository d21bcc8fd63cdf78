"""The token-economy tasks of benchmarks/bench_tokens.py, one module each."""

from __future__ import annotations

from . import analytics, crm, invoices, logs, oncall, small, store, workflow
from .base import Task

MAKERS = [crm.task, logs.task, invoices.task, oncall.task, store.task, analytics.task,
          workflow.task, small.task]


def all_tasks(scale: float = 1.0) -> list[Task]:
    """Every task; `scale` below 1 shrinks the data sets (for the fast test)."""
    return [make(scale) for make in MAKERS]
