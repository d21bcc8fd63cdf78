"""A start image leaves no free chunks in its heap: guests allocate from its top (see
`guest/heap.py`), so a new guest's first writes do not copy old pages for a few bytes."""

from __future__ import annotations


def test_the_start_image_took_up_its_free_chunks(session):
    r = session.run("from tooliscode_guest import heap\nlen(heap._taken) > 0")
    assert r.ok and r.value == "True", r.error

