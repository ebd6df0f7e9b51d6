"""The HTML report in a real headless browser (Chromium), when one is installed.

Chromium renders the page at 1280x800: the screenshot must not be blank, the
root cause must sit inside the first screen, and the page's Content-Security-
Policy must stop a script even if one were ever slipped into the markup.
Install it with ``apt-get install -y chromium``; without it these tests skip.
"""

from __future__ import annotations

import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import diagnose_read, facts_of
from nccl_doctor.render import render_report

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "h200-cuda-999"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install -y chromium)"
)

#: Measures where the root cause ends on the first screen; only for the CSP-free copy.
MEASURE = (
    "<script>document.body.setAttribute('data-root-bottom',"
    "String(document.getElementById('root-cause').getBoundingClientRect().bottom));"
    "document.body.setAttribute('data-viewport',String(window.innerHeight));</script>"
)


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,800",
        *args,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, check=True)


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated scanlines (filter bytes included) of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = read_paths([str(EXAMPLE)])
    html = render_report(diagnose_read(result), "html", facts=facts_of(result))
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def test_screenshot_is_not_blank(page: Path, tmp_path: Path) -> None:
    png = tmp_path / "shot.png"
    _chromium(tmp_path, f"--screenshot={png}", page.as_uri())
    width, height, pixels = _png_pixels(png.read_bytes())
    assert (width, height) == (1280, 800)
    assert len(set(pixels)) > 16, "a blank page has a handful of byte values"
    assert pixels.count(0xFF) < 0.97 * len(pixels), "the screenshot is nearly all white"


def test_dumped_dom_has_the_root_cause_header(page: Path, tmp_path: Path) -> None:
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert 'id="root-cause"' in dom
    assert 'data-id="gpu.contention"' in dom
    assert "<svg" in dom


def test_root_cause_fits_the_first_screen(page: Path, tmp_path: Path) -> None:
    html = page.read_text(encoding="utf-8")
    start = html.index('<meta http-equiv="Content-Security-Policy"')
    end = html.index(">", start) + 1
    measured = html[:start] + html[end:].replace("</body>", MEASURE + "</body>")
    copy = tmp_path / "measured.html"
    copy.write_text(measured, encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", copy.as_uri()).stdout
    bottom = float(dom.split('data-root-bottom="', 1)[1].split('"', 1)[0])
    viewport = float(dom.split('data-viewport="', 1)[1].split('"', 1)[0])
    assert viewport == pytest.approx(800, abs=150)
    assert 0 < bottom <= viewport, "the root cause is below the first screen"


def test_csp_stops_a_smuggled_script(page: Path, tmp_path: Path) -> None:
    html = page.read_text(encoding="utf-8")
    smuggled = html.replace(
        "</body>", "<script>document.body.setAttribute('data-pwned','1')</script></body>"
    )
    copy = tmp_path / "smuggled.html"
    copy.write_text(smuggled, encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", copy.as_uri()).stdout
    assert 'id="root-cause"' in dom
    assert "data-pwned" not in dom.split("<script", 1)[0]
