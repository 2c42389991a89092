"""Read the modules of a QR code drawn as segno draws an SVG (one path of horizontal strokes of
width 1, centred on each row: ``M4 4.5h7m2 0h1m-33 1h1...``), to compare with the matrix of the
code segno makes of a text. No QR decoding: which modules are dark, nothing more."""

from __future__ import annotations

import re


def modules_of_svg(svg: str) -> tuple[set[tuple[int, int]], int]:
    """``(dark, size)``: the dark modules ``(column, row)`` of the symbol (its quiet zone
    removed) and its width in modules. The quiet zone is found from the finder pattern: the
    module at the symbol's top-left corner is always dark."""
    view = re.search(r'viewBox="0 0 (\d+) (\d+)"', svg)
    path = re.search(r'<path class="qrline"[^>]* d="([^"]+)"', svg)
    if view is None or path is None:
        raise ValueError("not an SVG of segno's (no viewBox or no qrline path)")
    width = int(view.group(1))
    x = y = 0.0
    strokes: set[tuple[int, int]] = set()
    for cmd, args in re.findall(r"([MmHh])([-0-9. ]+)", path.group(1)):
        nums = [float(v) for v in args.split()]
        if cmd == "M":
            x, y = nums
        elif cmd == "m":
            x, y = x + nums[0], y + nums[1]
        else:
            end = nums[0] if cmd == "H" else x + nums[0]
            strokes.update((int(c), int(y)) for c in range(int(x), int(end)))
            x = end
    border = min(c for c, _ in strokes)
    if border != min(r for _, r in strokes):
        raise ValueError("the top-left module is not dark: not a QR code")
    return {(c - border, r - border) for c, r in strokes}, width - 2 * border
