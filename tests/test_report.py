"""The memory report: table, RAM/flash, the SVG/HTML picture (rendered in headless Chromium), the CLI."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest
import torch

import tinyaot
from tinyaot.demo_model import build_seed_mlp, calibration_digits
from tinyaot.report.memory import MemoryReport

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def seed():
    cal = calibration_digits()
    return tinyaot.compile(build_seed_mlp(), torch.from_numpy(cal[:1]), calibration=cal, name="mnist")


@pytest.mark.arm
def test_seed_report_table_and_numbers(seed):
    rep = MemoryReport.of(seed)
    assert rep.arena_bytes == rep.lower_bound_bytes == 816
    assert rep.float_arena_bytes == 4 * 816
    by_name = {r.name: r for r in rep.tensors}
    assert by_name["input"].op == "input" and by_name["input"].nbytes == 784
    fc1 = next(r for r in rep.tensors if r.producer == "fc1")
    assert fc1.op == "fully_connected" and fc1.nbytes == 32 and (fc1.first, fc1.last) == (1, 2)
    assert rep.busiest_step == "step 1: input 784 B + fc1_out 32 B"
    text = str(rep)
    for needle in ("fully_connected", "816", "lower bound = step 1", "RAM total", "static state"):
        assert needle in text
    reasons = " ".join(rep.float_reasons)
    assert "4 bytes in fp32" in reasons and "no run-time quantize/dequantize or transpose" in reasons
    assert f"{rep.constant_bytes:,} B" in reasons and f"{rep.float_weight_bytes:,} B" in reasons


@pytest.mark.arm
def test_svg_has_one_rect_per_buffer_and_marks_bound_and_arena(seed):
    rep = MemoryReport.of(seed)
    root = ET.fromstring(rep.svg())
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "buffer"]
    assert sorted(r.get("data-name") for r in rects) == sorted(b.name for b in seed.plan.buffers)
    bound = [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "lower-bound"]
    assert len(bound) == 1 and bound[0].get("stroke-dasharray")
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "arena 816 B" in texts and "lower bound 816 B" in texts and "fully_connected" in texts
    # Rectangles stack as the plan says: the tallest one is the 784-byte input.
    heights = {r.get("data-name"): float(r.get("height")) for r in rects}
    assert max(heights, key=heights.get) == "input"
    float_root = ET.fromstring(rep.svg(float_plan=True))
    assert len([r for r in float_root.iter(f"{SVG}rect") if r.get("class") == "buffer"]) == len(
        seed.float_plan.buffers)


def _png_pixels(data: bytes) -> np.ndarray:
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes) into an (h, w, c) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), dtype=np.int32)
    prev = np.zeros(w * bpp, dtype=np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) % 256
        else:
            cur = np.zeros_like(line)
            for i in range(w * bpp):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (line[i] + pred) % 256
        out[y] = cur
        prev = cur
    return out.reshape(h, w, bpp)


@pytest.mark.arm
def test_html_renders_in_headless_chromium(seed, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium not installed (Debian: apt-get install --no-install-recommends chromium)")
    rep = MemoryReport.of(seed)
    page, *_ = rep.write_picture(tmp_path / "memory.html", compare_float=True)
    shot = tmp_path / "shot.png"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,800",
           page.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=90, check=False)
    assert shot.exists() and shot.stat().st_size > 1000, "chromium wrote no screenshot"
    px = _png_pixels(shot.read_bytes())[:, :, :3]
    assert px.shape[:2] == (800, 1200)
    colours = {tuple(c) for c in px[::4, ::4].reshape(-1, 3)}
    assert len(colours) >= 8, f"screenshot looks blank: {len(colours)} colours"
    # The plot's palette is on screen: the input's grey and the fully_connected blue.
    flat = px.reshape(-1, 3)
    for rgb in ((0x7F, 0x7F, 0x7F), (0x00, 0x72, 0xB2)):
        near = np.abs(flat - np.array(rgb)).max(axis=1) <= 40
        assert near.sum() > 200, f"colour {rgb} missing from the rendered picture"


@pytest.mark.arm
def test_cli_report_writes_the_picture_and_json(tmp_path):
    from tinyaot.cli import main

    model_py = tmp_path / "seed.py"
    model_py.write_text("from tinyaot.demo_model import build_seed_mlp\nmodel = build_seed_mlp()\n")
    cal = tmp_path / "cal.npy"
    np.save(cal, calibration_digits()[:64])
    pic = tmp_path / "pics" / "seed.html"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["report", f"{model_py}:model", "--calibration", str(cal), "--name", "seed", "--json",
                   "--no-m33", "--compare-float", "--picture", str(pic)])
    assert rc == 0
    d = json.loads(buf.getvalue())
    assert d["arena_bytes"] == d["lower_bound_bytes"] == 816 and d["float_arena_bytes"] == 3264
    assert d["picture"] == [str(pic), str(pic.with_suffix(".svg")), str(pic.with_name("seed_fp32.svg"))]
    assert all(p.exists() for p in (pic, pic.with_suffix(".svg")))
    html = pic.read_text()
    assert html.count("<svg") == 2 and "http" not in html.replace("http://www.w3.org/2000/svg", "")
    assert len(d["tensors"]) == 4 and d["tensors"][0]["op"] == "input"


@pytest.mark.m33
def test_honest_ram_includes_the_measured_stack(seed):
    rep = MemoryReport.of(seed, measure_stack=True)
    assert rep.stack_bytes is not None and 16 <= rep.stack_bytes < 4096
    assert rep.static_state_bytes is not None and rep.static_state_bytes < 64
    assert rep.ram_bytes == 816 + rep.static_state_bytes + rep.stack_bytes
