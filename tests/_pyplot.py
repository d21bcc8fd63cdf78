"""Figures in the framework adapter tests, on either runtime.

The `data` runtime has real matplotlib; the default runtime gets the stand-in pyplot of
tests/_fake_pyplot.py written into the conversation's session folder (a real PNG either way).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DRAW = "import matplotlib.pyplot as plt\nplt.figure(figsize=(2, 1), dpi=50)\nprint('drew')"
"""A cell that leaves one figure open: the sandbox saves it and the adapter returns it."""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def give_pyplot(session: Any) -> None:
    """Make `import matplotlib.pyplot` work in `session` (a `tooliscode.Session`)."""
    if os.environ.get("TOOLISCODE_RUNTIME") == "data":
        return
    session.write_file("matplotlib/__init__.py", "")
    session.write_file("matplotlib/pyplot.py",
                       (Path(__file__).parent / "_fake_pyplot.py").read_text())
