#!/usr/bin/env python3
"""playground_test.py: the landing page in a real browser (headless Chromium over the Chrome
DevTools Protocol), against a live `hotkeyd --demo` on loopback.

Usage: playground_test.py HOTKEYD_BIN [--artifact-dir DIR]

hotkeyd runs with a cluster of 32 shards (not the default 8) and demo traffic of 5,000 ops/s,
half a shard's capacity: there the demo's hot key needs no fix, while the model of a
cluster's total times the key's share would advise one. Asserts, with Runtime.evaluate on
the page:
  (a) the top-keys table lists the demo's hot key "user:celebrity:profile", marked hot, with
      the advice /api/v1/top gives it;
  (b) the playground drew five strategy rows (none, cache, replicate, split, split+cache),
      each with one bar per shard;
  (c) dragging the hot-share slider (values set, an 'input' event dispatched for each, as
      a drag does) changes the bars' heights and the advice text;
  (d) before and after the move, the advice and every bar's load (its tooltip) are what
      /api/v1/model answers for the page's inputs;
  (e) the sliders start at the configured cluster (/api/v1/model's default inputs: 32
      shards), and every row has 32 bars;
  (f) clicking the hot key's row models it on the figures the daemon's advice uses (the
      request carries shard_ops, no cluster ops), and the page's advice is the key's advice
      in /api/v1/top;
  and that the page threw no JavaScript exception. Saves a PNG screenshot to
  ${ARTIFACT_DIR:-DIR}/playground.png (DIR defaults to ./test-artifacts).

Needs chromium and python3-websocket (tools/install-deps.sh). Everything it starts is
stopped on exit, whatever happens; every wait is bounded and the whole run is cut at 55 s.
"""

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import websocket  # python3-websocket (websocket-client)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import hotkeyd_e2e as e2e  # noqa: E402

HOT_KEY = "user:celebrity:profile"
STRATEGIES = ["none", "cache", "replicate", "split", "split_cache"]
NAMES = {"none": "none", "cache": "cache", "replicate": "replicate", "split": "split",
         "split_cache": "split+cache", "isolate": "isolate"}
INPUTS = ["hot_share", "write_share", "ops", "shards", "capacity", "app_servers", "refresh",
          "replicas", "split", "target"]
SHARDS = 32  # --cluster.shards: not the default (8), which a page that ignores it shows
DEMO_RATE = 5000  # ops/s on a 10,000 ops/s shard
OVERALL_SECONDS = 55


def log(msg):
    print(f"[playground {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Failure(AssertionError):
    """A failed check: an AssertionError, so hotkeyd_e2e.wait_until passes it on at once."""


class Overtime(BaseException):
    """Raised by SIGALRM: a BaseException, so no `except Exception` on the way swallows it."""


def http_get(url, timeout=3):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def wait_for(seconds, what, probe, interval=0.2):
    """Calls probe() until it returns a true value (returned) or `seconds` pass (Failure).
    Exceptions from probe count as "not yet" (a Failure ends the wait at once); the last
    one is reported on a timeout."""
    try:
        value = e2e.wait_until(probe, seconds, what, interval=interval, ignore=(Exception,))
    except Failure:
        raise
    except AssertionError as e:
        raise Failure(str(e)) from None
    log(f"ok: {what}")
    return value


class Cdp:
    """A minimal Chrome DevTools Protocol client over one page's WebSocket."""

    def __init__(self, ws_url):
        # suppress_origin: Chromium refuses DevTools WebSockets that carry an Origin header
        # unless --remote-allow-origins allows it; a non-browser client need not send one.
        self.ws = websocket.create_connection(ws_url, timeout=10, suppress_origin=True)
        self.next_id = 0
        self.exceptions = []  # Runtime.exceptionThrown events: page JavaScript errors

    def call(self, method, timeout=10, **params):
        self.next_id += 1
        msg_id = self.next_id
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Runtime.exceptionThrown":
                d = msg["params"]["exceptionDetails"]
                self.exceptions.append(d.get("exception", {}).get("description") or d.get("text"))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise Failure(f"{method}: {msg['error']}")
                return msg["result"]
        raise Failure(f"{method}: no answer in {timeout}s")

    def eval(self, expression):
        """The value of a JavaScript expression (awaited if it is a promise)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise Failure(f"evaluate {expression[:60]!r}: "
                          f"{d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    def close(self):
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


# What the page shows of the playground: advice text, and per strategy its bars' heights
# (style, in % of the plot) and tooltips (each shard's load as a % of capacity).
PLAYGROUND_JS = r"""(() => ({
  advice: document.getElementById("advice").textContent,
  query: document.getElementById("strategies").dataset.query,
  inputs: Object.fromEntries(%s.map(id => [id, document.getElementById(id).value])),
  rows: Array.from(document.querySelectorAll("#strategies .strategy")).map(div => ({
    strategy: div.dataset.strategy,
    label: div.querySelector("b").textContent,
    heights: Array.from(div.querySelectorAll(".bars .bar")).map(b => b.style.height),
    titles: Array.from(div.querySelectorAll(".bars .bar")).map(b => b.title),
    pixels: Array.from(div.querySelectorAll(".bars .bar")).map(b => b.getBoundingClientRect().height),
  })),
}))()""" % json.dumps(INPUTS)


def page_fmt0(x):
    """The page's fmt(x, 0): a load as a whole percentage, as JavaScript's toFixed(0) does
    (round half away from zero, on the binary value)."""
    return f"{int(abs(100 * x) + 0.5) * (1 if x >= 0 else -1)}%"


def model_mismatch(base, shown, measured=False):
    """How the page's advice or bars differ from /api/v1/model's answer for the page's
    inputs (the query it sent, for a clicked key); None when they agree."""
    q = shown["query"] if measured else urllib.parse.urlencode(shown["inputs"])
    m = json.loads(http_get(f"{base}/api/v1/model?{q}"))
    want_advice = "Advice: " + NAMES[m["advice"]]
    if shown["advice"] != want_advice:
        return f"page says {shown['advice']!r}, /api/v1/model?{q} says {want_advice!r}"
    rows = {r["strategy"]: r for r in shown["rows"]}
    for s in m["strategies"]:
        want = [page_fmt0(x) for x in s["shard_loads"]]
        got = rows.get(s["strategy"], {}).get("titles")
        if got != want:
            return f"{s['strategy']} bars show {got}, /api/v1/model?{q} says {want}"
    return None


def check_matches_model(base, shown, when):
    """(d) The page's advice and bars are /api/v1/model's answer for the page's inputs."""
    why = model_mismatch(base, shown)
    if why:
        raise Failure(f"{when}: {why}")
    log(f"ok: {when}: page advice {shown['advice']!r} and every bar's load match /api/v1/model "
        f"for hot_share={shown['inputs']['hot_share']}")


def drag_slider(cdp, base, input_id, values):
    """Moves a range input through `values` as a drag does (the value set, then an 'input'
    event, for each, all before the first model request is answered), then waits (bounded)
    until the page shows /api/v1/model's answer for the last value: a page that drops the
    later events never gets there. Returns what the page shows then."""
    cdp.eval(r"""(() => { const r = document.getElementById(%s);
      for (const v of %s) { r.value = v; r.dispatchEvent(new Event("input", {bubbles: true})); }
      })()""" % (json.dumps(input_id), json.dumps(values)))
    last = {"why": "nothing read yet"}

    def settled():
        shown = cdp.eval(PLAYGROUND_JS)
        if shown["inputs"][input_id] != values[-1]:
            last["why"] = f"{input_id} is {shown['inputs'][input_id]!r}"
            return None
        last["why"] = model_mismatch(base, shown)
        return None if last["why"] else shown
    try:
        return wait_for(5, f"playground shows the model for {input_id}={values[-1]}", settled)
    except Failure as e:
        raise Failure(f"{e}: {last['why']}") from None


def check_rows(shown, when):
    """(b) Five strategy rows in the model's order, one drawn bar per shard."""
    names = [r["strategy"] for r in shown["rows"]]
    if names != STRATEGIES:
        raise Failure(f"{when}: strategy rows {names}, want {STRATEGIES}")
    shards = int(shown["inputs"]["shards"])
    for r in shown["rows"]:
        if len(r["heights"]) != shards:
            raise Failure(f"{when}: {r['strategy']} has {len(r['heights'])} bars, want {shards}")
        if r["label"] != NAMES[r["strategy"]]:
            raise Failure(f"{when}: row {r['strategy']} labelled {r['label']!r}")
        if not all(p >= 1 for p in r["pixels"]):
            raise Failure(f"{when}: {r['strategy']} has bars not drawn: {r['pixels']}")
    # With a hot key and no fix, the key's shard (bar 0) towers over the others.
    none = shown["rows"][0]["pixels"]
    if not none[0] > max(none[1:]):
        raise Failure(f"{when}: no-fix row's hot shard is not the tallest bar: {none}")


def click_and_compare(cdp, base):
    """(f) Clicks the hot key's row, then waits (bounded) until the page shows the model for
    the key's measured figures, with the advice /api/v1/top gives the key. The daemon
    publishes every 100 ms, so its figures move; the demo's advice for the key does not."""
    click_js = r"""(() => {
      for (const tr of document.querySelectorAll("#top tbody tr")) {
        if (tr.children[0].textContent === %s) { tr.click(); return true; }
      }
      return false; })()""" % json.dumps(HOT_KEY)
    if not cdp.eval(click_js):
        raise Failure(f"no row for {HOT_KEY} to click")
    last = {"why": "nothing read yet"}

    def settled():
        shown = cdp.eval(PLAYGROUND_JS)
        q = dict(urllib.parse.parse_qsl(shown["query"] or ""))
        if "shard_ops" not in q or "ops" in q:
            last["why"] = f"the model request {shown['query']!r} is not the measured one"
            return None
        if cdp.eval('document.getElementById("ops").disabled') is not True:
            last["why"] = "the cluster ops/s slider is still enabled"
            return None
        last["why"] = model_mismatch(base, shown, measured=True)
        if last["why"]:
            return None
        top = json.loads(http_get(f"{base}/api/v1/top"))
        key = {k["key"]: k for k in top["keys"]}.get(HOT_KEY)
        want = "Advice: " + NAMES[key["advice"]] if key else None
        if shown["advice"] != want:
            last["why"] = (f"page says {shown['advice']!r} for {HOT_KEY}, /api/v1/top says "
                           f"{want!r}")
            return None
        # The premise: modelling the cluster's total times the share names another fix,
        # so a page that did that would fail here.
        q = {n: shown["inputs"][n] for n in INPUTS if n not in ("hot_share", "write_share")}
        q.update(hot_share=key["share"], write_share=key["write_ratio"])
        wide = json.loads(http_get(f"{base}/api/v1/model?{urllib.parse.urlencode(q)}"))
        if wide["advice"] == key["advice"]:
            raise Failure(f"the cluster-wide model also advises {wide['advice']!r} for "
                          f"{HOT_KEY}: this test cannot tell the two models apart")
        return shown, key
    try:
        shown, key = wait_for(5, f"clicked {HOT_KEY}: playground shows the daemon's advice",
                              settled)
    except Failure as e:
        raise Failure(f"{e}: {last['why']}") from None
    check_rows(shown, "clicked")
    log(f"ok: clicked {HOT_KEY}: page {shown['advice']!r}, /api/v1/top advice "
        f"{key['advice']!r}, projected {key['projected_load']}, query {shown['query']}")


def run(args, tmp, procs):
    # ------------------------------------------------------------------ hotkeyd --demo
    try:
        hk = e2e.Hotkeyd(args.hotkeyd, "--demo", f"--cluster.shards={SHARDS}",
                         f"--demo.rate={DEMO_RATE}", "--track.publish-interval=100ms",
                         work=tmp, log_path=os.path.join(tmp, "hotkeyd.log"))
    except AssertionError as e:
        raise Failure(str(e)) from None
    procs.append(("hotkeyd", hk.proc, False))
    base = f"http://127.0.0.1:{hk.web}"
    log(f"hotkeyd pid {hk.proc.pid}: http {base}, udp 127.0.0.1:{hk.udp}")

    # ------------------------------------------------------------------ chromium
    profile = os.path.join(tmp, "chromium-profile")
    os.mkdir(profile)
    cr_log = open(os.path.join(tmp, "chromium.log"), "wb")
    # Its own session (process group), so the renderer, GPU and zygote children it forks
    # are stopped with it. DevTools listens on a port chromium picks itself (0) and names in
    # DevToolsActivePort, so no other process can take it between our choice and its bind.
    cr = subprocess.Popen(
        [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-quic", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
         "--remote-debugging-port=0",
         "--remote-debugging-address=127.0.0.1", "about:blank"],
        stdout=cr_log, stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(("chromium", cr, True))
    log(f"chromium pid {cr.pid}")

    def devtools_port():
        if cr.poll() is not None:
            raise Failure(f"chromium exited with {cr.returncode} at start")
        with open(os.path.join(profile, "DevToolsActivePort")) as f:
            first = f.readline().strip()
        return int(first) if first.isdigit() else None
    # A first start on a fresh CI runner once printed nothing for 20 s; the wait is generous
    # (a start that fails ends it at once), and a timeout shows where chromium's processes wait.
    try:
        dport = wait_for(90, "chromium wrote DevToolsActivePort", devtools_port)
    except Failure:
        ps = subprocess.run(["ps", "-o", "pid,stat,wchan:24,etime,time,args", "-s", str(cr.pid)],
                            capture_output=True, text=True)
        log("chromium's processes:\n" + ps.stdout + ps.stderr)
        raise
    log(f"chromium devtools 127.0.0.1:{dport}")

    def page_target():
        if cr.poll() is not None:
            raise Failure(f"chromium exited with {cr.returncode} at start")
        pages = [t for t in json.loads(http_get(f"http://127.0.0.1:{dport}/json", timeout=1))
                 if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
        return pages[0] if pages else None
    target = wait_for(30, "chromium DevTools endpoint lists a page", page_target)

    cdp = Cdp(target["webSocketDebuggerUrl"])
    try:
        cdp.call("Runtime.enable")
        cdp.call("Page.enable")
        cdp.call("Emulation.setDeviceMetricsOverride", width=1200, height=1500,
                 deviceScaleFactor=1, mobile=False)
        cdp.call("Page.navigate", url=base + "/")
        wait_for(10, "landing page loaded", lambda: cdp.eval(
            f"location.href === {json.dumps(base + '/')} && document.readyState === 'complete'"))

        # (a) the live table lists the demo's hot key, hot, with the daemon's advice.
        row_js = r"""(() => {
          for (const tr of document.querySelectorAll("#top tbody tr")) {
            const td = Array.from(tr.children).map(c => c.textContent);
            if (td[0] === %s) return {hot: tr.classList.contains("hot"), state: td[7], advice: td[8]};
          }
          return null; })()""" % json.dumps(HOT_KEY)
        row = wait_for(10, f"top-keys table lists {HOT_KEY} as hot",
                       lambda: (lambda r: r if r and r["hot"] and r["state"] == "hot" else None)(
                           cdp.eval(row_js)))
        def row_as_api():
            """The row and /api/v1/top's advice for the key, once the two agree."""
            r = cdp.eval(row_js)
            top = json.loads(http_get(f"{base}/api/v1/top"))
            advice = {k["key"]: k["advice"] for k in top["keys"]}.get(HOT_KEY)
            return (r, advice) if r and r["advice"] == NAMES.get(advice, advice) else None
        # The table refreshes every second: a fresh advice may take a refresh to show.
        row, _ = wait_for(3, f"the table's advice for {HOT_KEY} to be /api/v1/top's", row_as_api)
        log(f"ok: table row for {HOT_KEY}: state {row['state']}, advice {row['advice']} "
            f"(as /api/v1/top)")

        # (b) + (d) before the move.
        before = wait_for(5, "playground drew five strategy rows",
                          lambda: (lambda s: s if len(s["rows"]) == 5 and s["advice"] else None)(
                              cdp.eval(PLAYGROUND_JS)))
        check_rows(before, "before")
        check_matches_model(base, before, "before")

        # (e) the sliders hold the configured cluster, as /api/v1/model's defaults say.
        defaults = json.loads(http_get(f"{base}/api/v1/model"))["inputs"]
        if defaults["shards"] != SHARDS:
            raise Failure(f"/api/v1/model's default shards {defaults['shards']}, want {SHARDS}")
        for name in INPUTS:
            if float(before["inputs"][name]) != float(defaults[name]):
                raise Failure(f"slider {name} starts at {before['inputs'][name]}, the daemon's "
                              f"cluster has {defaults[name]}")
        log(f"ok: sliders start at the daemon's cluster ({SHARDS} shards, "
            f"{len(before['rows'][0]['heights'])} bars a row)")

        # (c) drag the hot-share slider 0.2 -> 0.02 (a key with 2% of the traffic needs no
        # fix). A drag is a burst of 'input' events, each with the value under the pointer;
        # they all fire before the first model request is answered, so the page must end
        # up showing the model for the last value, not the first.
        drag = ["0.15", "0.1", "0.05", "0.02"]
        new_value = drag[-1]
        if before["inputs"]["hot_share"] == new_value:
            raise Failure("hot_share already at the value the test moves it to")
        after = drag_slider(cdp, base, "hot_share", drag)
        shown_value = cdp.eval('document.getElementById("hot_share-v").textContent')
        if shown_value != new_value:
            raise Failure(f"slider label shows {shown_value!r}, want {new_value!r}")
        if [r["heights"] for r in after["rows"]] == [r["heights"] for r in before["rows"]]:
            raise Failure("bar heights did not change when hot_share moved")
        if after["advice"] == before["advice"]:
            raise Failure(f"advice stayed {after['advice']!r} when hot_share went 0.2 -> 0.02")
        log(f"ok: slider dragged 0.2 -> {new_value}: advice {before['advice']!r} -> {after['advice']!r}, "
            f"no-fix hot shard bar {before['rows'][0]['heights'][0]} -> "
            f"{after['rows'][0]['heights'][0]}")
        check_rows(after, "after")
        check_matches_model(base, after, "after")

        # Put it back, so the screenshot shows the demo's situation.
        drag_slider(cdp, base, "hot_share", ["0.2"])

        # (f) click the hot key's row: the page shows the fix the daemon advises for it.
        click_and_compare(cdp, base)

        # Screenshot (full page), saved as a test artifact.
        shot = cdp.call("Page.captureScreenshot", timeout=20, format="png",
                        captureBeyondViewport=True)
        os.makedirs(args.artifact_dir, exist_ok=True)
        path = os.path.join(args.artifact_dir, "playground.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        log(f"screenshot: {path}")

        # Exceptions are events; a last round trip collects any still in flight.
        cdp.eval("1")
        if cdp.exceptions:
            raise Failure(f"the page threw: {cdp.exceptions}")
    finally:
        cdp.close()


def stop(procs):
    for name, p, group in reversed(procs):
        if p.poll() is not None:
            continue
        try:
            if group:
                os.killpg(p.pid, signal.SIGTERM)
            else:
                p.terminate()
            p.wait(timeout=5)
        except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
            try:
                os.killpg(p.pid, signal.SIGKILL) if group else p.kill()
                p.wait(timeout=5)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                log(f"could not stop {name} pid {p.pid}")
    # The renderer and GPU children of chromium share its process group.
    for name, p, group in procs:
        if group:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hotkeyd")
    ap.add_argument("--artifact-dir", default=os.path.join(os.getcwd(), "test-artifacts"),
                    help="where playground.png goes unless $ARTIFACT_DIR is set")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = ap.parse_args()
    args.artifact_dir = os.environ.get("ARTIFACT_DIR") or args.artifact_dir

    def on_alarm(signum, frame):
        raise Overtime(f"the whole test took over {OVERALL_SECONDS}s")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(130))
    signal.alarm(OVERALL_SECONDS)

    tmp = tempfile.mkdtemp(prefix="hotkeyd-playground.")
    procs = []
    start = time.monotonic()
    ok = False
    try:
        run(args, tmp, procs)
        ok = True
    except (Failure, Overtime) as e:
        log(f"FAIL: {e}")
    finally:
        signal.alarm(0)
        stop(procs)
        if not ok:
            for name in ("hotkeyd.log", "chromium.log"):
                p = os.path.join(tmp, name)
                if os.path.exists(p):
                    with open(p, errors="replace") as f:
                        lines = f.readlines()[-20:]
                    print(f"---- {name} (last {len(lines)} lines)\n" + "".join(lines), end="")
        if ok or os.environ.get("E2E_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"{'PASS' if ok else 'FAILED'} in {time.monotonic() - start:.1f}s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
