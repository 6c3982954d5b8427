"""Renders resources/icons/prefill.svg to the raster icons the installers need.

    QT_QPA_PLATFORM=offscreen python packaging/tools/render_icon.py

Writes resources/icons/prefill-256.png (Linux desktop entry, AppImage, PyInstaller on
macOS, which turns it into .icns) and resources/icons/prefill.ico (Windows: the .exe
and the installer). Rerun after editing the SVG and commit the results.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parents[2] / "resources" / "icons"
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")
    return bytes(data.data())


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """An .ico holding PNG images (readable by Windows Vista and later)."""
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = len(header) + 16 * len(pngs)
    entries, blobs = b"", b""
    for size, blob in sorted(pngs.items()):
        side = 0 if size >= 256 else size  # 0 means 256 in an ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(blob), offset + len(blobs))
        blobs += blob
    return header + entries + blobs


def main() -> int:
    app = QGuiApplication(sys.argv[:1])  # noqa: F841 (QPainter needs an application)
    renderer = QSvgRenderer(str(ICONS / "prefill.svg"))
    if not renderer.isValid():
        print(f"cannot read {ICONS / 'prefill.svg'}", file=sys.stderr)
        return 1
    (ICONS / "prefill-256.png").write_bytes(png_bytes(render(renderer, 256)))
    (ICONS / "prefill.ico").write_bytes(
        ico_bytes({s: png_bytes(render(renderer, s)) for s in ICO_SIZES})
    )
    print(f"wrote {ICONS / 'prefill-256.png'} and {ICONS / 'prefill.ico'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
