"""A tiny PNG writer and bar-chart renderer (pure Python + zlib), so the benchmark needs no matplotlib.

matplotlib is not a dependency of the project, and the chart is a handful of labelled horizontal bars:
an RGB canvas, filled rectangles, a 3x5 bitmap font scaled 2x for the labels, and ``zlib`` for the
IDAT chunk are all it takes. Output is byte-for-byte deterministic for the same input.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Bar", "Canvas", "bar_chart", "write_png"]

RGB = tuple[int, int, int]

# 3x5 glyphs, one string of 5 rows of 3 pixels each ("#" on); lower case is drawn as upper case.
_FONT: dict[str, str] = {
    "A": ".#.#.#####.##.#", "B": "##.#.###.#.###.", "C": ".###..#..#...##", "D": "##.#.##.##.###.",
    "E": "####..##.#..###", "F": "####..##.#..#..", "G": ".###..#.##.#.##", "H": "#.##.#####.##.#",
    "I": "###.#..#..#.###", "J": "..#..#..##.#.#.", "K": "#.##.###.#.##.#", "L": "#..#..#..#..###",
    "M": "#.########.##.#", "N": "##.#.##.##.##.#", "O": ".#.#.##.##.#.#.", "P": "##.#.###.#..#..",
    "Q": ".#.#.##.###..##", "R": "##.#.###.#.##.#", "S": ".###...#...###.", "T": "###.#..#..#..#.",
    "U": "#.##.##.##.####", "V": "#.##.##.##.#.#.", "W": "#.##.########.#", "X": "#.##.#.#.#.##.#",
    "Y": "#.##.#.#..#..#.", "Z": "###..#.#.#..###", "0": "####.##.##.####", "1": ".#.##..#..#.###",
    "2": "##...#.#.#..###", "3": "##...#.#...###.", "4": "#.##.####..#..#", "5": "####..##...###.",
    "6": ".###..####.####", "7": "###..#.#..#..#.", "8": "####.#####.####", "9": "####.####..###.",
    ".": ".............#.", ",": "..........#.#..", "-": "......###......", "/": "..#..#.#.#..#..",
    ":": "....#.....#....", "(": ".#.#..#..#...#.", ")": ".#...#..#..#.#.", "=": "...###...###...",
    ">": "#...#...#.#.#..", "<": "..#.#.#...#...#", "%": "#.#..#.#.#..#.#", " ": "...............",
    "_": "............###", "*": "...#.#.#.#.#...",
}


def _glyph(ch: str) -> str:
    return _FONT.get(ch, _FONT.get(ch.upper(), _FONT["*"]))


@dataclass
class Canvas:
    """An RGB image held as one bytearray, with the few drawing operations the chart needs."""

    width: int
    height: int
    background: RGB = (255, 255, 255)

    def __post_init__(self) -> None:
        self.pixels = bytearray(bytes(self.background) * (self.width * self.height))

    def rect(self, x: int, y: int, w: int, h: int, color: RGB) -> None:
        """Fill a rectangle (clipped to the canvas)."""
        x0, y0 = max(0, x), max(0, y)
        x1, y1 = min(self.width, x + w), min(self.height, y + h)
        if x1 <= x0 or y1 <= y0:
            return
        row = bytes(color) * (x1 - x0)
        for yy in range(y0, y1):
            start = (yy * self.width + x0) * 3
            self.pixels[start:start + len(row)] = row

    def text(self, x: int, y: int, s: str, color: RGB = (0, 0, 0), scale: int = 2) -> int:
        """Draw ``s`` with the 3x5 font; returns the x after the last character."""
        for ch in s:
            rows = _glyph(ch)
            for gy in range(5):
                for gx in range(3):
                    if rows[gy * 3 + gx] == "#":
                        self.rect(x + gx * scale, y + gy * scale, scale, scale, color)
            x += 4 * scale
        return x

    def png(self) -> bytes:
        """The canvas as PNG bytes (8-bit RGB, no filter)."""
        stride = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride:(y + 1) * stride]) for y in range(self.height))
        return write_png(self.width, self.height, raw)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(width: int, height: int, raw_rgb_rows: bytes) -> bytes:
    """PNG bytes from already filtered scanlines (each row prefixed with its filter byte)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw_rgb_rows, 9)) + _chunk(b"IEND", b""))


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its value (pods/s), its colour, and an optional target mark."""

    label: str
    value: float
    color: RGB
    target: float | None = None


def bar_chart(title: str, bars: Sequence[Bar], *, legend: Sequence[tuple[str, RGB]] = (),
              gap_after: Sequence[int] = ()) -> bytes:
    """Horizontal bars on a log10 axis (pods/s spans 0.1 .. 10,000), target marks in red, as PNG bytes."""
    scale = 2
    char_w = 4 * scale
    label_w = max((len(b.label) for b in bars), default=10) * char_w + 16
    plot_w = 640
    bar_h, row_h = 14, 20
    top = 60
    gaps = set(gap_after)
    height = top + row_h * len(bars) + 10 * len(gaps) + 50
    width = label_w + plot_w + 110
    canvas = Canvas(width, height)
    canvas.text(10, 10, title, scale=scale)
    lx = 10
    for name, color in legend:
        canvas.rect(lx, 32, 12, 12, color)
        lx = canvas.text(lx + 18, 33, name, scale=scale) + 16
    canvas.rect(lx, 37, 3, 4, (220, 30, 30))
    canvas.text(lx + 8, 33, "target at 5000 nodes", scale=scale)
    lo, hi = -1.0, 4.0  # log10 pods/s axis: 0.1 .. 10,000

    def xpos(value: float) -> int:
        v = math.log10(max(value, 10**lo))
        return label_w + int((min(v, hi) - lo) / (hi - lo) * plot_w)

    y = top
    for decade in range(int(lo), int(hi) + 1):
        x = xpos(10.0**decade)
        canvas.rect(x, top - 4, 1, height - top - 30, (225, 225, 225))
        canvas.text(x - 8, height - 24, f"{10.0 ** decade:g}", (90, 90, 90), scale=scale)
    for i, bar in enumerate(bars):
        canvas.text(10, y + 2, bar.label, scale=scale)
        canvas.rect(label_w, y, max(1, xpos(bar.value) - label_w), bar_h, bar.color)
        canvas.text(xpos(bar.value) + 6, y + 2, f"{bar.value:.1f}", (60, 60, 60), scale=scale)
        if bar.target is not None:
            canvas.rect(xpos(bar.target) - 1, y - 2, 3, bar_h + 4, (220, 30, 30))
        y += row_h + (10 if i in gaps else 0)
    return canvas.png()
