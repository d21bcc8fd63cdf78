"""A tool with defaulted, optional and nullable parameters, shared by the test in each
adapter's file that calls it from code with only its required argument, and checks that it
gets what the framework gives it when the model calls it directly with the same arguments."""

from __future__ import annotations

from typing import Any

SEEN: list[dict[str, Any]] = []
"""What each call of `post` got, in order."""
CODE = "post(content='hi')"
ONLY_REQUIRED: dict[str, Any] = {"content": "hi"}
FILLED = {"content": "hi", "tags": [], "reply_to": None, "lang": "en"}


def post(content: str, tags: list[str] = [], reply_to: int | None = None,  # noqa: B006
         lang: str | None = "en") -> dict:
    """Post a message.

    Args:
        content: What to post.
        tags: Tags for it.
        reply_to: The message it answers, if any.
        lang: Its language.
    """
    got = {"content": content, "tags": tags, "reply_to": reply_to, "lang": lang}
    SEEN.append(got)
    return got


def same_as_direct(direct: Any, from_code: Any) -> None:
    """`direct()` calls the tool as the framework calls the model's call, `from_code()` runs
    `CODE` through the adapter: the tool got the same arguments both times, its defaults."""
    SEEN.clear()
    direct()
    from_code()
    assert SEEN == [FILLED, FILLED], SEEN


async def asame_as_direct(direct: Any, from_code: Any) -> None:
    """`same_as_direct` for coroutines."""
    SEEN.clear()
    await direct()
    await from_code()
    assert SEEN == [FILLED, FILLED], SEEN
