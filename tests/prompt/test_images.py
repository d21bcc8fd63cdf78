"""Charts: figures saved by the guest, read back and checked by the host, and carried to the
model in each API's own image shape.

The default runtime has no matplotlib, so the guest side runs here against a stand-in
`matplotlib.pyplot` package written into the session folder (real imports, real sandbox, real
PNG files); tests/runtime/data/test_charts.py runs real matplotlib on the `data` runtime. The
conversions are checked with each framework's own types.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from pathlib import Path

import pytest
from tooliscode import Limits, Session, ToolIsCode
from tooliscode.codetool import Reply
from tooliscode.engine._result import CellImage, CellResult
from tooliscode.openai._tool_call import CodeCall
from tooliscode.openai._toolset import _output
from tooliscode.prompt._guide import FIGURES_NOTE, instructions
from tooliscode.prompt._render import noted, render
from tooliscode.runtime import python_note
from tooliscode.tools._registry import ToolRegistry

FAKE_PYPLOT = (Path(__file__).parents[1] / "_fake_pyplot.py").read_text()
DRAW = "import matplotlib.pyplot as plt\n"


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    rows = (b"\0" + bytes(3 * width)) * height
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                              0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = _png(4, 3)
IMAGE = CellImage("figures/figure-1-1.png", PNG, "image/png", 4, 3)
RESULT = CellResult(ok=True, stdout="drew it\n", files_written=(IMAGE.path,), images=(IMAGE,))
REPLY = Reply("text", RESULT)
PLAIN = Reply("text", CellResult(ok=True))


def _with_pyplot(limits: Limits | None = None) -> Session:
    """A default-runtime session with a stand-in pyplot (the data runtime's real matplotlib is
    tested in tests/runtime/data/test_charts.py)."""
    session = Session(limits=limits or Limits(timeout_s=20), runtime="default")
    session.write_file("matplotlib/__init__.py", "")
    session.write_file("matplotlib/pyplot.py", FAKE_PYPLOT)
    return session


# -- the guest ---------------------------------------------------------------------------


def test_no_pyplot_no_images_and_matplotlib_is_never_imported():
    with _with_pyplot() as s:
        result = s.run("import sys\nx = 1\n'matplotlib' in sys.modules")
        assert result.images == () and result.value == "False"
        assert not any(f.path.startswith("figures/") for f in s.files())


def test_figures_left_open_are_saved_read_back_and_listed():
    with _with_pyplot() as s:
        result = s.run(DRAW + "plt.figure()\nplt.figure(figsize=(2, 1))\nplt.get_fignums()")
        assert result.ok, result.error
        assert result.value == "[1, 2]"  # the value is taken before the figures are saved
        assert [(i.path, i.width, i.height) for i in result.images] == [
            ("figures/figure-1-1.png", 640, 480), ("figures/figure-1-2.png", 200, 100)]
        for image in result.images:
            assert image.mime == "image/png"
            assert image.data == s.read_file(image.path)
        text = render(result)
        assert ("[images saved in /session] figures/figure-1-1.png (640x480 px), "
                "figures/figure-1-2.png (200x100 px)") in text
        assert s.run("plt.get_fignums()").value == "[]"  # closed once saved
        assert s.run("x = 1").images == ()


def test_show_saves_and_closes_even_when_imported_by_name():
    with _with_pyplot() as s:
        result = s.run(DRAW + "from matplotlib.pyplot import show\n"
                       "for size in (1, 2):\n"
                       "    plt.figure(figsize=(size, size))\n"
                       "    show()\n"
                       "    print(plt.get_fignums())")
        assert result.ok, result.error
        assert result.stdout == "[]\n[]\n"
        assert [(i.path, i.width) for i in result.images] == [
            ("figures/figure-1-1.png", 100), ("figures/figure-1-2.png", 200)]


def test_a_figure_over_the_limits_is_saved_smaller_with_a_notice():
    with _with_pyplot(Limits(timeout_s=20, image_bytes=100_000, image_pixels=30_000)) as s:
        result = s.run(DRAW + "plt.figure(figsize=(8, 6))")  # 800x600 px, 1.4 MB uncompressed
        (image,) = result.images
        assert len(image.data) <= 100_000 and image.width * image.height <= 30_000
        assert image.width < 800
        (notice,) = result.notices
        assert "lower resolution" in notice and "800x600" in notice
        assert result.truncated is None  # not mistaken for cut output
        assert "lower resolution" in render(result)


def test_a_figure_that_cannot_fit_is_listed_not_shown():
    with _with_pyplot(Limits(timeout_s=20, image_bytes=0)) as s:
        result = s.run(DRAW + "plt.figure()")
        assert result.images == ()
        assert "figures/figure-1-1.png" in result.files_written
        assert any("not shown as an image" in n for n in result.notices)


def test_names_already_taken_are_skipped():
    with _with_pyplot() as s:
        s.write_file("figures/figure-1-1.png", b"an older file")
        result = s.run(DRAW + "plt.figure()")
        assert [i.path for i in result.images] == ["figures/figure-1-2.png"]
        assert s.read_file("figures/figure-1-1.png") == b"an older file"


def test_the_host_checks_what_the_guest_reports(tmp_path):
    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG)
    with _with_pyplot(Limits(timeout_s=20, image_bytes=50_000)) as s:
        s.write_file("notes.txt", "not an image")
        s.write_file("big.png", _png(300, 300)[:100] + bytes(60_000))
        s.write_file("ok.png", PNG)
        forged = ["/session/notes.txt", "/session/../../etc/passwd", str(outside), "big.png",
                  "/session/ok.png", "/session/ok.png", 7, {"path": None}]
        result = s.run("import sys\nstate = sys.modules['tooliscode_guest.figures']._state\n"
                       f"state.saved += [p if isinstance(p, dict) else {{'path': p}} "
                       f"for p in {forged!r}]\n"
                       "state.notes.append('x' * 10_000)")
        assert result.ok, result.error
        assert [(i.path, i.data) for i in result.images] == [("ok.png", PNG)]
        assert sum("not a PNG within the image limits" in n for n in result.notices) == 2
        assert max(len(n) for n in result.notices) <= 500


# -- what the model reads, per API ---------------------------------------------------------


def test_the_guide_tells_of_figures_only_where_the_runtime_has_matplotlib():
    registry = ToolRegistry([])
    assert FIGURES_NOTE in instructions(registry, python=python_note("data"))
    assert FIGURES_NOTE not in instructions(registry, python=python_note("default"))


def test_responses_output_carries_the_image_and_chat_lists_it():
    from openai.types.responses.response_input_item_param import FunctionCallOutput
    from pydantic import TypeAdapter

    drew = Reply(render(RESULT), RESULT)
    for custom in (False, True):
        out = _output(CodeCall("responses", "c1", "run_python", "x", custom=custom), drew)
        text_item, image_item = out["output"]
        assert text_item == {"type": "input_text", "text": render(RESULT)}
        assert image_item["type"] == "input_image" and image_item["detail"] == "auto"
        assert image_item["image_url"] == "data:image/png;base64," + base64.b64encode(
            PNG).decode()
        assert out.text == render(RESULT)
        assert out.images == (IMAGE,)
    TypeAdapter(FunctionCallOutput).validate_python(dict(_output(
        CodeCall("responses", "c1", "run_python", "x"), drew)))
    chat = _output(CodeCall("chat", "c1", "run_python", "x"),
                   Reply(noted(render(RESULT), ["hello"]), RESULT))
    assert chat["content"] == f"[note] hello\n{render(RESULT)}"
    assert "[images saved in /session] figures/figure-1-1.png (4x3 px)" in chat["content"]
    plain = _output(CodeCall("responses", "c1", "run_python", "x"),
                    Reply("1", CellResult(ok=True, stdout="1\n")))
    assert plain["output"] == "1"


def test_agents_sdk_image_tool_output():
    pytest.importorskip("agents")
    from agents import ItemHelpers, ToolOutputImage, ToolOutputText
    from openai.types.responses import ResponseFunctionToolCall
    from tooliscode.integrations.openai_agents._calls import SdkHooks

    _with_images = SdkHooks().render  # the hooks' rendering of a reply as the tool's output

    output = _with_images(REPLY)
    assert isinstance(output[0], ToolOutputText) and isinstance(output[1], ToolOutputImage)
    call = ResponseFunctionToolCall(type="function_call", call_id="c1", name="run_python",
                                    arguments="{}")
    item = ItemHelpers.tool_call_output_item(call, output)
    assert item["output"][0] == {"type": "input_text", "text": "text"}
    url = item["output"][1]["image_url"]
    assert base64.b64decode(url.split(",", 1)[1]) == PNG
    assert _with_images(PLAIN) == "text"


def test_pydantic_ai_binary_content_in_the_tool_return():
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import BinaryContent, ToolReturnPart
    from tooliscode.integrations.pydantic_ai._inner import with_images as _with_images

    value = _with_images(REPLY)
    part = ToolReturnPart(tool_name="run_python", content=value, tool_call_id="c1")
    (file,) = part.files
    assert isinstance(file, BinaryContent) and file.is_image
    assert file.data == PNG and file.media_type == "image/png"
    assert value[0] == "text"
    assert _with_images(PLAIN) == "text"


def test_langchain_image_content_blocks():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import ToolMessage
    from tooliscode.integrations.langchain._tool import _Hooks

    _with_images = _Hooks().render  # the hooks' rendering of a reply as ToolMessage content
    message = ToolMessage(content=_with_images(REPLY), tool_call_id="c1")
    text, image = message.content_blocks
    assert text["type"] == "text" and text["text"] == "text"
    assert image["type"] == "image" and image["mime_type"] == "image/png"
    assert base64.b64decode(image["base64"]) == PNG
    assert _with_images(PLAIN) == "text"


def test_mcp_image_content():
    types = pytest.importorskip("mcp_types")
    from tooliscode.mcp._proxy import ProxyReply, _content

    result = types.CallToolResult(content=_content(types, ProxyReply("text", False, (IMAGE,))))
    text, image = result.content
    assert isinstance(text, types.TextContent) and text.text == "text"
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG
    assert len(_content(types, ProxyReply("text"))) == 1


def test_repl_prints_where_each_image_is():
    from tooliscode.cli._repl import Repl

    out = io.StringIO()
    with ToolIsCode([]) as tic:
        session = tic.session()
        session.write_file("matplotlib/__init__.py", "")
        session.write_file("matplotlib/pyplot.py", FAKE_PYPLOT)
        repl = Repl(tic, stdin=io.StringIO(), stdout=out, prompt=False)
        text = repl.run_cell(DRAW + "plt.figure(figsize=(1, 1))")
        where = session.workdir / "figures/figure-1-1.png"
        assert f"--- image: {where} (100x100 px," in out.getvalue()
        assert where.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "[images saved in /session] figures/figure-1-1.png" in text
        assert json.loads(json.dumps(text)) == text


def test_matplotlib_gets_a_config_folder_only_while_it_is_imported():
    with _with_pyplot() as s:
        s.write_file("matplotlib/__init__.py", "import os\nSEEN = os.environ.get('MPLCONFIGDIR')\n"
                     "def get_cachedir():\n    return SEEN\n")
        result = s.run("import os\nimport matplotlib\n(matplotlib.SEEN, dict(os.environ))")
        assert result.value == "('/session/.tooliscode/matplotlib', {})"
        result = s.run("import os\ntry:\n    import seaborn\nexcept ImportError:\n    pass\n"
                       "dict(os.environ)")
        assert result.value == "{}"
