"""The warm-up session played through the command loop itself (`rehearsal.rehearse_served`),
as the default runtime's build plays it, run here on this interpreter."""

from __future__ import annotations

from tooliscode.engine._warmup import rehearsal as warmup
from tooliscode.guest import channel, main, rehearsal


def test_the_loop_gets_each_command_its_point_and_a_checkpoint_then_yields(monkeypatch):
    def unset(_frame: bytes) -> bytes:
        raise AssertionError("the host's channel was used")

    monkeypatch.setattr(channel, "exchange", unset)
    guest = main.Guest()
    seen: list[tuple[str, bool, bool]] = []
    handle = guest.handle

    def recorded(msg: dict) -> dict:
        result = handle(msg)
        seen.append((msg["op"], bool(msg.get("point")), result.get("ok", False)
                     or result.get("error_type") == "ZeroDivisionError"))
        return result

    guest.handle = recorded  # type: ignore[method-assign]
    rehearsal.rehearse_served(main._Loop(guest).serve, warmup(), rounds=2)
    one = [("setup", False, True)] + [("cell", True, True), ("checkpoint", False, True)] * 3
    assert seen == one * 2
    assert channel.exchange is unset  # given back
    assert "order" in guest.runner.ns  # the cells ran against the script's answers
