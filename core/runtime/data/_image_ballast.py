"""Filling the free holes of a start image's heap, so a session's new objects land together.

The data guest's objects come from wasi-libc's dlmalloc (its CPython has no pymalloc), which
serves a request from a free chunk of the right size before it touches the top of the heap.
After the imports and the warm-up, the image's heap holds some 20,000 free chunks of 16 bytes
and a few hundred larger ones, spread over its 80 MB. A session that builds 50,000 small
lists then writes into 8,000 of the image's pages, a few bytes each, and an exact snapshot
carries all those pages (`_memory_delta.py`): 44 MB for 10 MB of data.

So the image's last step allocates objects that fill those holes and keeps them: about
1.2 MB that was free in the image anyway, so the image does not grow. A session's objects
then come from the top of the heap, in pages of their own, and the same session's delta is
its data and little else (8,200 written image pages drop to about 200).

It fills by size, largest first, and knows a hole from the top of the heap (or from a hole
too big to matter: one a session rewrites whole anyway) by where allocations land: pieces of
one chunk come out contiguous, holes do not (dlmalloc merges neighbouring free chunks). Five
contiguous pieces in a row end a size; they are given back at once. Should that never
happen (another allocator), each size stops at 2 MB and the whole at 16 MB.
"""

from __future__ import annotations

__all__ = ["SOURCE"]

SOURCE = '''
def _tooliscode_fill():
    import gc, sys
    gc.collect()  # what the warm-up dropped: its holes are filled too
    held, chunk, at = [], None, 1024
    head = sys.getsizeof(b"")  # a bytes of n bytes asks malloc for head + n
    budget = 16 << 20  # bounds, should the holes never seem to end
    for size in (16384, 8192, 4096, 3072, 2048, 1536, *range(1024, 8, -8)):
        ask = sys.getsizeof(object()) if size <= 16 else head + max(size - 4 - head, 2)
        # a chunk is the request and its 4-byte header, rounded to dlmalloc's alignment
        whole = {max(16, (ask + 4 + 7) & ~7), max(16, (ask + 4 + 15) & ~15)}
        run = last = 0
        for _ in range(min(2 << 20, budget) // size):
            if at == 1024:  # holders are never freed: their growth would leave holes
                chunk, at, run, last = [None] * 1024, 0, 0, 0
                held.append(chunk)
            piece = object() if size <= 16 else bytes(ask - head)
            where = id(piece)
            run = run + 1 if where - last in whole else 0
            last = where
            chunk[at] = piece
            at += 1
            budget -= size
            if run >= 4:  # the top of the heap, or a hole a session rewrites whole
                for _ in range(run + 1):
                    at -= 1
                    chunk[at] = None
                break
    gc.freeze()  # as the imports were: never collected, so never written
    return held
_tooliscode_ballast = _tooliscode_fill()
del _tooliscode_fill
'''
"""Run in the image's guest after the warm-up, before the seeds are marked; the pieces stay
referenced from the guest's own `__main__` (not a session's namespace)."""
