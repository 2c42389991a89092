"""QR codes of the share page (``/share``): a login link a phone's camera can open.

Drawn by segno (ISO/IEC 18004 QR codes, pure Python; part of the ``web`` extra), imported
when a code is first drawn: without it the page shows the link alone and says which package
adds the code.
"""

from __future__ import annotations

__all__ = ["QR_PACKAGE", "qr_svg"]

#: the package that draws the codes (what the page tells to install when it is missing)
QR_PACKAGE = "segno"


def qr_svg(text: str) -> str | None:
    """An inline ``<svg>`` of the QR code of ``text``, or None without segno.

    A full QR code (never a Micro QR code, which phone cameras do not read) at error
    correction level M (about 15 % of the code may be damaged or hidden), segno's default;
    segno raises it when the same symbol version has room. The SVG has a viewBox and no size
    (the page's CSS sizes it), a white background and the quiet zone of 4 modules the
    standard asks for, so it reads on a dark screen too.
    """
    try:
        import segno
    except ImportError:
        return None
    code = segno.make_qr(text, error="m")
    return str(code.svg_inline(omitsize=True, light="#fff", border=4, svgclass="qr"))
