"""The token-economy tasks of benchmarks/bench_tokens.py, one module each: single questions,
and multi-turn conversations over stateful backends."""

from __future__ import annotations

from . import (
    analytics,
    crm,
    filesystem_chat,
    invoices,
    logs,
    oncall,
    small,
    store,
    tickets_chat,
    workflow,
)
from .base import Task
from .conversation import Conversation

MAKERS = [crm.task, logs.task, invoices.task, oncall.task, store.task, analytics.task,
          workflow.task, small.task]
CONVERSATIONS = [filesystem_chat.conversation, tickets_chat.conversation]


def all_tasks(scale: float = 1.0) -> list[Task]:
    """Every task; `scale` below 1 shrinks the data sets (for the fast test)."""
    return [make(scale) for make in MAKERS]


def all_conversations() -> list[Conversation]:
    return [make() for make in CONVERSATIONS]
