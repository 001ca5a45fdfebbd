#!/usr/bin/env python3
"""history_page_test.py: the landing page's history (timeline, heatmap, episode list) in
headless Chromium against a live `hotkeyd --demo`.

Usage: history_page_test.py HOTKEYD_BIN [--artifact-dir DIR] [--screenshot PATH]

Once two 10 s windows have closed, asserts with Runtime.evaluate on the page:
  (a) every heatmap cell (key x window) holds the share /api/v1/history gives that key in that
      window (0 where the key is not among the window's top keys), every window the API
      holds up to the page's last is drawn, and the rows are exactly the keys of those windows;
  (b) each cell's colour is the one of the fixed scale for its share (the legend's colours,
      recomputed here from the thresholds), not a colour relative to the page's largest;
  (c) the timeline has one line per top key (up to 8), the keys of largest share;
  (d) the episode list is /api/v1/episodes' (ids, start times), and each episode's link
      selects the heatmap column of the window its start falls in;
  (e) the screenshot (Page.captureScreenshot, decoded here) shows, at the centre of the
      cells of largest share, the colour the scale gives them;
  and that the page threw no JavaScript exception. Saves the screenshot to
  ${ARTIFACT_DIR:-DIR}/history.png (and to --screenshot PATH if given).

Needs chromium and python3-websocket. Everything it starts is stopped on exit; the whole run
is cut at 90 s.
"""

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import struct
import sys
import tempfile
import time
import zlib

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402
from playground_test import Cdp, Failure, Overtime, http_get, stop, wait_for  # noqa: E402

OVERALL_SECONDS = 90
# The page's fixed share scale (daemon/serving/web/page/page.js HEAT): lower bounds and colours.
HEAT = [(0, "#f4f4f4"), (0.005, "#fff3c4"), (0.01, "#ffe08a"), (0.02, "#ffc04d"),
        (0.05, "#ff8c1a"), (0.1, "#f0502a"), (0.2, "#c8102e"), (0.5, "#6b0010")]


def log(msg):
    print(f"[history-page {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def heat_colour(x):
    c = HEAT[0][1]
    for lo, col in HEAT:
        if x >= lo:
            c = col
    return c


def png_pixels(data):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise Failure(f"screenshot PNG of depth {depth}, colour type {colour}")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, rows, bpp


PAGE_JS = r"""(() => ({
  step: document.getElementById("history").dataset.step,
  lastStart: document.getElementById("history").dataset.lastStart,
  cells: Array.from(document.querySelectorAll("#heatmap rect")).map(r => {
    const b = r.getBoundingClientRect();
    return {key: r.dataset.key, start: +r.dataset.start, share: +r.dataset.share,
            fill: r.getAttribute("fill"), sel: r.classList.contains("sel"),
            x: b.left + b.width / 2 + scrollX, y: b.top + b.height / 2 + scrollY, w: b.width, h: b.height};
  }),
  lines: Array.from(document.querySelectorAll("#timeline polyline")).map(p => p.dataset.key),
  legend: Array.from(document.querySelectorAll("#heat-legend span")).map(s => s.dataset.colour),
  episodes: Array.from(document.querySelectorAll("#episodes tbody tr")).map(tr => ({id: +tr.dataset.id, start: +tr.dataset.start,
                                                                                   in_force: tr.cells[8].textContent})),
}))()"""


def check_page(cdp, base):
    page = cdp.eval(PAGE_JS)
    if page["step"] != "10":
        raise Failure(f"the page shows step {page['step']}, want 10")
    last = float(page["lastStart"])
    api = json.loads(http_get(base + "/api/v1/history?step=10"))
    windows = [w for w in api["windows"] if w["start_unix"] <= last]
    starts = sorted({c["start"] for c in page["cells"]})
    if starts != [w["start_unix"] for w in windows]:
        raise Failure(f"(a) the heatmap's windows {starts} are not the API's {windows}")
    keys = {k["key"] for w in windows for k in w["keys"]}
    if {c["key"] for c in page["cells"]} != keys:
        raise Failure(f"(a) heatmap rows {sorted({c['key'] for c in page['cells']})} != {sorted(keys)}")
    if len(page["cells"]) != len(keys) * len(windows):
        raise Failure(f"(a) {len(page['cells'])} cells for {len(keys)} keys x {len(windows)} windows")
    by = {(w["start_unix"], k["key"]): k["share"] for w in windows for k in w["keys"]}
    for c in page["cells"]:
        want = by.get((c["start"], c["key"]), 0)
        if c["share"] != want:
            raise Failure(f"(a) cell {c['key']} at {c['start']}: page {c['share']}, API {want}")
        if c["fill"] != heat_colour(want):
            raise Failure(f"(b) cell {c['key']} share {want}: colour {c['fill']}, "
                          f"the scale's {heat_colour(want)}")
    if page["legend"] != [col for _, col in HEAT]:
        raise Failure(f"(b) legend {page['legend']}")
    peak = {}
    for w in windows:
        for k in w["keys"]:
            peak[k["key"]] = max(peak.get(k["key"], 0), k["share"])
    top = sorted(peak, key=lambda k: (-peak[k], k))[:8]
    if page["lines"] != top:
        raise Failure(f"(c) timeline lines {page['lines']}, want {top}")
    log(f"ok: (a)-(c) {len(windows)} windows x {len(keys)} keys as /api/v1/history")
    return page, api


def run(args, tmp, procs):
    hk = e2e.Hotkeyd(args.hotkeyd, "--demo", work=tmp, log_path=os.path.join(tmp, "hotkeyd.log"))
    procs.append(("hotkeyd", hk.proc, False))
    base = f"http://127.0.0.1:{hk.web}"
    profile = os.path.join(tmp, "chromium-profile")
    os.mkdir(profile)
    cr = subprocess.Popen(
        [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-quic", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", "about:blank"],
        stdout=open(os.path.join(tmp, "chromium.log"), "wb"), stderr=subprocess.STDOUT,
        start_new_session=True)
    procs.append(("chromium", cr, True))

    def devtools_port():
        if cr.poll() is not None:
            raise Failure(f"chromium exited with {cr.returncode} at start")
        with open(os.path.join(profile, "DevToolsActivePort")) as f:
            first = f.readline().strip()
        return int(first) if first.isdigit() else None
    dport = wait_for(60, "chromium wrote DevToolsActivePort", devtools_port)

    def page_target():
        pages = [t for t in json.loads(http_get(f"http://127.0.0.1:{dport}/json", timeout=1))
                 if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
        return pages[0] if pages else None
    target = wait_for(30, "a page target", page_target)
    cdp = Cdp(target["webSocketDebuggerUrl"])
    try:
        cdp.call("Runtime.enable")
        cdp.call("Page.enable")
        cdp.call("Emulation.setDeviceMetricsOverride", width=1200, height=1500,
                 deviceScaleFactor=1, mobile=False)
        cdp.call("Page.navigate", url=base + "/")
        wait_for(40, "the page draws two closed windows and an episode", lambda: cdp.eval(
            '+document.getElementById("history")?.dataset.windows >= 2 && '
            'document.querySelectorAll("#episodes tbody tr").length > 0'), interval=0.5)
        page, _ = check_page(cdp, base)

        # (d) the episodes, and their links to their windows.
        api_ep = json.loads(http_get(base + "/api/v1/episodes?limit=100"))["episodes"]
        have = {e["id"]: e["start_unix"] for e in api_ep}
        by = {"feed": "by the feed", "measured_loads": "by the measured loads file"}
        in_force = {e["id"]: e.get("in_force") for e in api_ep}
        for e in page["episodes"]:
            if have.get(e["id"]) != e["start"]:
                raise Failure(f"(d) episode {e} not as /api/v1/episodes: {have.get(e['id'])}")
            f = in_force.get(e["id"])
            want = "–" if not f else f"since {f['since'][11:19]}, {by[f['by']]}"
            if not e["in_force"].endswith(want):
                raise Failure(f"(d) episode {e['id']}'s fix in force reads {e['in_force']!r}, "
                              f"the API's is {f}")
        # The demo's kits apply the feed's fixes: some episode names one.
        if not any(e["in_force"].endswith("by the feed") for e in page["episodes"]):
            raise Failure(f"(d) no episode drawn with the feed's fix in force: "
                          f"{[e['in_force'] for e in page['episodes']]}")
        if len(page["episodes"]) != min(len(api_ep), 100) or not page["episodes"]:
            raise Failure(f"(d) {len(page['episodes'])} episodes drawn, the API has {len(api_ep)}")
        first = page["episodes"][-1]  # the oldest
        cdp.eval('document.querySelector("#episodes tbody tr:last-child a").click()')
        sel = wait_for(10, "the episode's window is selected", lambda: [
            c for c in cdp.eval(PAGE_JS)["cells"] if c["sel"]])
        starts = sorted({c["start"] for c in cdp.eval(PAGE_JS)["cells"]})
        want = max([s for s in starts if s <= first["start"] + 1e-3], default=None)
        if {c["start"] for c in sel} != {want}:
            raise Failure(f"(d) episode at {first['start']} selected {sorted({c['start'] for c in sel})}, "
                          f"want the window starting {want}")
        log("ok: (d) episode list as /api/v1/episodes; its link selects its window")

        # (e) the screenshot shows the scale's colours at the largest cells.
        page, _ = check_page(cdp, base)
        shot = base64.b64decode(cdp.call("Page.captureScreenshot", timeout=20, format="png",
                                         captureBeyondViewport=True)["data"])
        for path in filter(None, [os.path.join(args.artifact_dir, "history.png"), args.screenshot]):
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "wb") as f:
                f.write(shot)
            log(f"screenshot: {path}")
        width, height, rows, bpp = png_pixels(shot)
        cells = sorted((c for c in page["cells"] if not c["sel"] and c["w"] >= 3),
                       key=lambda c: -c["share"])[:5]
        if not cells:
            raise Failure("(e) no heatmap cell to look at")
        for c in cells:
            x, y = int(c["x"]), int(c["y"])
            if not (0 <= x < width and 0 <= y < height):
                raise Failure(f"(e) cell at {x},{y} is outside the {width}x{height} screenshot")
            px = tuple(rows[y][x * bpp:x * bpp + 3])
            want = tuple(int(heat_colour(c["share"])[i:i + 2], 16) for i in (1, 3, 5))
            if px != want:
                raise Failure(f"(e) pixel {x},{y} of {c['key']} (share {c['share']}) is {px}, "
                              f"the scale gives {want}")
        log(f"ok: (e) the screenshot shows the scale's colours at {len(cells)} cells")
        cdp.eval("1")
        if cdp.exceptions:
            raise Failure(f"the page threw: {cdp.exceptions}")
    finally:
        cdp.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hotkeyd")
    ap.add_argument("--artifact-dir", default=os.path.join(os.getcwd(), "test-artifacts"))
    ap.add_argument("--screenshot", default=None)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = ap.parse_args()
    args.artifact_dir = os.environ.get("ARTIFACT_DIR") or args.artifact_dir

    def on_alarm(signum, frame):
        raise Overtime(f"the whole test took over {OVERALL_SECONDS}s")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(130))
    signal.alarm(OVERALL_SECONDS)
    tmp = tempfile.mkdtemp(prefix="hotkeyd-history-page.")
    procs, ok, start = [], False, time.monotonic()
    try:
        run(args, tmp, procs)
        ok = True
    except (Failure, Overtime, AssertionError) as e:
        log(f"FAIL: {e}")
    finally:
        signal.alarm(0)
        stop(procs)
        if not ok:
            for name in ("hotkeyd.log", "chromium.log"):
                p = os.path.join(tmp, name)
                if os.path.exists(p):
                    with open(p, errors="replace") as f:
                        print(f"---- {name}\n" + "".join(f.readlines()[-20:]), end="")
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"{'PASS' if ok else 'FAILED'} in {time.monotonic() - start:.1f}s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
