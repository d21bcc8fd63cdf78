"""A stand-in for `matplotlib.pyplot`, written into a session folder for the default runtime
(which has no matplotlib): figures whose `savefig` writes a real PNG of `figsize x dpi`
pixels, stored uncompressed so its size follows its pixel count."""

import struct
import zlib

_figures = {}


def _chunk(kind, body):
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


class Figure:
    def __init__(self, number, figsize=(6.4, 4.8), dpi=100):
        self.number, self.size, self.dpi = number, figsize, dpi

    def get_size_inches(self):
        return self.size

    def savefig(self, fname, format="png", dpi=None):
        dpi = dpi or self.dpi
        w, h = int(self.size[0] * dpi), int(self.size[1] * dpi)
        rows = (b"\0" + (bytes(range(256)) * (3 * w // 256 + 1))[:3 * w]) * h
        data = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + _chunk(b"IDAT", zlib.compress(rows, 0)) + _chunk(b"IEND", b""))
        if hasattr(fname, "write"):
            fname.write(data)
        else:
            with open(fname, "wb") as f:
                f.write(data)


def figure(num=None, figsize=(6.4, 4.8), dpi=100):
    if num in _figures:
        return _figures[num]
    num = num or max(_figures, default=0) + 1
    _figures[num] = Figure(num, figsize, dpi)
    return _figures[num]


def get_fignums():
    return sorted(_figures)


def close(num=None):
    _figures.pop(num, None)


def show():
    raise AssertionError("the sandbox should have replaced show()")
