"""A new data guest mapped from the start image: its own random seeds, written by the host, and
nothing left of the warm-up session the image's guest ran before it was saved."""

from __future__ import annotations

from tooliscode import Session
from tooliscode.runtime.data import _image_seeds as imageseeds

_STATES = ("import random, numpy\n"
           "print(list(random.getstate()[1][:4]), list(numpy.random.get_state()[1][:4]))")


def lookup(order_id: int) -> dict:
    """Look up one order."""
    return {"id": order_id}


def test_the_image_says_where_the_random_states_are(data_runtime):
    with Session([], runtime=data_runtime) as s:
        assert s._state.worker.instance.from_image
    images = list(data_runtime.images._images.values())
    assert images and all(len(image.seeds or ()) == 2 for image in images)


def test_each_guest_gets_new_words_not_the_image_marker(data_runtime):
    marker = str(imageseeds._pattern(imageseeds._SALTS[0])[:4])
    seen = set()
    for _ in range(3):
        with Session([], runtime=data_runtime) as s:
            r = s.run(_STATES)
            assert r.ok, r.error
            assert marker not in r.stdout
            seen.add(r.stdout)
    assert len(seen) == 3


def test_the_warm_up_session_leaves_nothing_behind(data_runtime):
    with Session([lookup], runtime=data_runtime) as s:
        r = s.run("x = lookup(order_id=1)\n1 / 0")
        assert r.error_type == "ZeroDivisionError"
        assert '"<cell-1>", line 2' in r.error and "1 / 0" in r.error
        assert "order" not in r.error  # the warm-up's own cell source is gone
        r = s.run("print(sorted(k for k in globals() if not k.startswith('__')))")
        assert "order" not in r.stdout and "get_order" not in r.stdout
        assert "lookup" in r.stdout and "x" in r.stdout
        assert not s.run("get_order(order_id=1)").ok
