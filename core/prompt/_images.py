"""How a cell's images (its matplotlib figures) read back to the model.

The text always lists them, so a caller whose API carries text only (Chat Completions tool
messages, text mode) still tells the model where they are. Where the API can carry images,
they go beside that text; each framework's own shape is built next to its adapter, from
`base64_data` and `data_url` here.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from ..engine import CellImage, CellResult

__all__ = ["base64_data", "data_url", "images_line", "responses_output"]

_SHOWN = 10


def images_line(result: CellResult) -> str | None:
    """The line of the rendered result that lists the cell's images, if it made any."""
    if not result.images:
        return None
    shown = ", ".join(f"{i.path} ({i.width}x{i.height} px)" for i in result.images[:_SHOWN])
    return f"[images saved in /session] {shown}"


def base64_data(image: CellImage) -> str:
    return base64.b64encode(image.data).decode("ascii")


def data_url(image: CellImage) -> str:
    return f"data:{image.mime};base64,{base64_data(image)}"


def responses_output(text: str, images: Sequence[CellImage]) -> str | list[dict[str, Any]]:
    """A Responses `function_call_output` / `custom_tool_call_output` `output`: the text, and
    each image as an `input_image` item with a data URL; just the text when there is none."""
    if not images:
        return text
    return [{"type": "input_text", "text": text},
            *({"type": "input_image", "image_url": data_url(i), "detail": "auto"}
              for i in images)]
