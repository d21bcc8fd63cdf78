"""Charts: the matplotlib figures a cell makes, saved as PNG files in the session folder.

Nothing here imports matplotlib: it acts only once the cell's code has imported
`matplotlib.pyplot` (directly, or through pandas' `.plot()`). From then on `plt.show()`
saves and closes the figures shown (the sandbox has no screen), and at the end of each cell
every figure still open is saved and closed. `savefig` works as usual. Each saved PNG is
kept under a byte and a pixel limit by saving it again at a lower resolution, with a note.
"""

from __future__ import annotations

import sys

from .hooks import AfterImport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["begin", "configure", "finish", "png_size"]

_PYPLOT = "matplotlib.pyplot"
_PNG = b"\x89PNG\r\n\x1a\n"
MAX_FIGURES = 10
"""Figures saved per cell; more are closed unsaved, with a note."""
_MIN_DPI = 10.0
_TRIES = 5


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's header, or None when `data` is not a PNG."""
    if len(data) < 24 or data[:8] != _PNG or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


class _State:
    def __init__(self) -> None:
        self.folder = "/session/figures"
        self.max_bytes: int | None = 1_000_000
        self.max_pixels: int | None = 4_000_000
        self.cell = 0
        self.saved: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.hook: AfterImport | None = None
        self.config_dir = ""
        self.config_hook: AfterImport | None = None
        self.config_set = False


_state = _State()


def configure(limits: dict[str, Any]) -> None:
    """Take the session's image limits, and watch for the first import of pyplot."""
    _state.folder = limits.get("figure_dir") or _state.folder
    _state.max_bytes = limits.get("image_bytes", _state.max_bytes)
    _state.max_pixels = limits.get("image_pixels", _state.max_pixels)
    _state.config_dir = limits.get("mpl_config_dir") or ""
    _watch()


def begin(cell: int) -> None:
    """A cell starts: figures it shows are named after it."""
    _state.cell = cell
    if _state.saved or _state.notes:
        _state.saved, _state.notes = [], []
    _watch()


def finish(result: dict[str, Any]) -> None:
    """A cell ended: save the figures still open, and report every figure it saved.
    Never raises (the cell's own outcome is already in `result`)."""
    pyplot = sys.modules.get(_PYPLOT)
    if pyplot is not None and result.get("error_type") != "MemoryError":
        _save_open(pyplot)
    if _state.config_set:  # the import failed before matplotlib read it
        _config_done()
    if _state.saved:
        result["images"] = _state.saved
    if _state.notes:
        result["figure_notes"] = _state.notes
    _state.saved, _state.notes = [], []


def _config_dir() -> None:
    """Give matplotlib a writable home for its font cache while it is first imported;
    otherwise it makes a temporary one in the working directory and warns on stderr."""
    import os

    if _state.config_dir and "MPLCONFIGDIR" not in os.environ:
        os.environ["MPLCONFIGDIR"] = _state.config_dir
        _state.config_set = True


def _config_done(matplotlib: Any = None) -> None:
    """matplotlib has read its folders (and keeps them): the environment stays as the
    runtime made it."""
    read = getattr(matplotlib, "get_cachedir", None)
    if read is not None:
        try:
            read()  # cached by matplotlib, as get_configdir is during the import
        except Exception:  # noqa: BLE001 - its own warning is the worst that can happen
            pass
    if _state.config_set:
        _state.config_set = False
        import os

        os.environ.pop("MPLCONFIGDIR", None)


def _watch() -> None:
    pyplot = sys.modules.get(_PYPLOT)
    if pyplot is not None:
        _patch(pyplot)
    elif _state.hook is None or _state.hook not in sys.meta_path:
        _state.hook = AfterImport(_PYPLOT, _patch)  # before the code can bind show
        sys.meta_path.insert(0, _state.hook)
    if "matplotlib" not in sys.modules and (
            _state.config_hook is None or _state.config_hook not in sys.meta_path):
        _state.config_hook = AfterImport("matplotlib", _config_done, before=_config_dir)
        sys.meta_path.insert(0, _state.config_hook)


def _patch(pyplot: Any) -> None:
    if getattr(pyplot.show, "_tooliscode", False):
        return

    def show(*args: Any, **kwargs: Any) -> None:
        """Save every open figure as a PNG in /session/figures and close it: the sandbox
        has no screen. The model is shown the saved images."""
        _save_open(pyplot)

    show._tooliscode = True  # type: ignore[attr-defined]
    pyplot.show = show


def _save_open(pyplot: Any) -> None:
    try:
        numbers = list(pyplot.get_fignums())
    except Exception:  # noqa: BLE001 - a pyplot the cell broke: nothing to save
        return
    for number in numbers:
        try:
            fig = pyplot.figure(number)
            if len(_state.saved) < MAX_FIGURES:
                _save(fig)
            else:
                _state.notes.append(f"Figure {number} was closed without saving: a cell saves "
                                    f"at most {MAX_FIGURES} figures. Use savefig() for more.")
        except Exception as exc:  # noqa: BLE001 - a figure that fails to draw
            _state.notes.append(f"Figure {number} could not be saved: {type(exc).__name__}: "
                                f"{str(exc)[:300]}")
        finally:
            try:
                pyplot.close(number)
            except Exception:  # noqa: BLE001
                pass


def _render(fig: Any, dpi: float) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _scale(data: bytes, size: tuple[int, int]) -> float:
    """How much to shrink the resolution by (1.0: it fits)."""
    scale = 1.0
    if _state.max_bytes is not None and len(data) > _state.max_bytes:
        scale = min(scale, (_state.max_bytes / len(data)) ** 0.5 * 0.9)  # bytes ~ pixels
    pixels = size[0] * size[1]
    if _state.max_pixels is not None and pixels > _state.max_pixels:
        scale = min(scale, (_state.max_pixels / pixels) ** 0.5 * 0.99)
    return scale


def _save(fig: Any) -> None:
    dpi = float(fig.dpi)
    data = _render(fig, dpi)
    first = size = png_size(data) or (0, 0)
    first_bytes = len(data)
    for _ in range(_TRIES):
        scale = _scale(data, size)
        if scale >= 1.0 or dpi <= _MIN_DPI:
            break
        dpi = max(_MIN_DPI, dpi * scale)
        data = _render(fig, dpi)
        size = png_size(data) or (0, 0)
    path = _free_path()
    import os

    os.makedirs(_state.folder, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    fits = _scale(data, size) >= 1.0
    _state.saved.append({"path": path, "width": size[0], "height": size[1], "fits": fits})
    if not fits:
        _state.notes.append(f"{path} is over the image limit even at the lowest resolution "
                            f"({size[0]}x{size[1]} px, {len(data):,} bytes): it is saved but "
                            "not shown as an image.")
    elif len(data) != first_bytes:
        _state.notes.append(f"{path} was saved at a lower resolution to stay within the "
                            f"image limit: {size[0]}x{size[1]} px ({len(data):,} bytes) instead "
                            f"of {first[0]}x{first[1]} px ({first_bytes:,} bytes). A smaller "
                            "figsize or dpi gives a sharper image.")


def _free_path() -> str:
    import os

    n = 1
    while True:
        path = f"{_state.folder}/figure-{_state.cell}-{n}.png"
        if not os.path.lexists(path):
            return path
        n += 1
