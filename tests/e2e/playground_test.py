#!/usr/bin/env python3
"""playground_test.py: the landing page in a real browser (headless Chromium over the Chrome
DevTools Protocol), against a live `hotkeyd --demo` on loopback.

Usage: playground_test.py HOTKEYD_BIN [--artifact-dir DIR]

hotkeyd runs with a cluster of 32 shards (not the default 8) and demo traffic of 5,000 ops/s,
half a shard's capacity: there the demo's hot key needs no fix, while the model of a
cluster's total times the key's share would advise one. A second hotkeyd runs the demo at
its own rate on the default cluster, where its three hot keys need three different fixes
(cache, split, split+cache: daemon/input/source/demo_source.h), for (g). Asserts, with Runtime.evaluate
on the page:
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
  (g) on both daemons, for EVERY hot key of /api/v1/top (once the rate window is whole and
      each is advised: a bounded wait), the table row's advice, its one-line fix text
      (strategy word and projected busiest shard), the /api/v1/top answer the page drew it
      from (read off the DevTools Network domain, by its time), a fresh /api/v1/top, and the
      playground after clicking the row (its advice, its busiest shard under the fix, and
      the exact shard_ops, hot_share and write_share in its request) all agree;
      each row links to its fix's runbook section, an anchor of a heading in
      deploy/README.md at the alerts' runbookURLBase;
  (h) the advice inputs panel shows each input's origin as /api/v1/top's "model" gives it,
      and the warning for configured figures (hotkeyd --demo asks no shard);
  (i) the page's fixLine() and modelWarning() give the stated text for each fix and each
      shard state, including those the demo does not reach (isolate, a shard that could
      not be asked);
  and that the page threw no JavaScript exception. Saves a PNG screenshot to
  ${ARTIFACT_DIR:-DIR}/playground.png (DIR defaults to ./test-artifacts), and the second
  daemon's page to playground-fixes.png.

Needs chromium and python3-websocket (tools/install-test-deps.sh). Everything it starts is
stopped on exit, whatever happens; every wait is bounded and the whole run is cut at 90 s
(advice waits for the daemon's whole 10 s rate window, and each hot key is clicked in turn).
"""

import argparse
import base64
import json
import os
import re
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
OVERALL_SECONDS = 90
HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.join(HERE, "..", "..", "deploy")
# The first word of each fix's one-line text on the page.
LINE_WORD = {"none": "none", "cache": "cache", "replicate": "replicate", "split": "split",
             "split_cache": "split + cache", "isolate": "isolate"}


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
        self.top_requests = []  # requestIds of the page's /api/v1/top responses, newest last
        self.top_bodies = {}  # requestId -> parsed body

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
            if (msg.get("method") == "Network.responseReceived"
                    and "/api/v1/top" in msg["params"]["response"]["url"]):
                self.top_requests = self.top_requests[-19:] + [msg["params"]["requestId"]]
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

    def top_at(self, when):
        """The /api/v1/top answer, with time `when`, that the page fetched (one of its last
        20), or None."""
        for rid in reversed(self.top_requests):
            if rid not in self.top_bodies:
                try:
                    self.top_bodies[rid] = json.loads(
                        self.call("Network.getResponseBody", requestId=rid)["body"])
                except Failure:  # not finished loading yet
                    continue
            if self.top_bodies[rid]["time"] == when:
                return self.top_bodies[rid]
        return None

    def close(self):
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


# What the page shows of the playground: advice text, and per strategy its bars' heights
# (style, in % of the plot) and tooltips (each shard's load as a % of capacity).
PLAYGROUND_JS = r"""(() => ({
  advice: document.getElementById("advice").textContent,
  measured: document.getElementById("measured").hidden ? null :
            document.getElementById("measured-text").textContent,
  query: document.getElementById("strategies").dataset.query,
  inputs: Object.fromEntries(%s.map(id => [id, document.getElementById(id).value])),
  rows: Array.from(document.querySelectorAll("#strategies .strategy")).map(div => ({
    strategy: div.dataset.strategy,
    label: div.querySelector("b").textContent,
    text: div.textContent,
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
        return wait_for(20, f"playground shows the model for {input_id}={values[-1]}", settled)
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
        shown, key = wait_for(20, f"clicked {HOT_KEY}: playground shows the daemon's advice",
                              settled)
    except Failure as e:
        raise Failure(f"{e}: {last['why']}") from None
    check_rows(shown, "clicked")
    log(f"ok: clicked {HOT_KEY}: page {shown['advice']!r}, /api/v1/top advice "
        f"{key['advice']!r}, projected {key['projected_load']}, query {shown['query']}")


# The top-keys table as drawn: the time of the /api/v1/top answer it shows (set in the same
# task as the rows), and per row its key, state, advice, fix line and runbook link.
TABLE_JS = r"""(() => ({
  time: document.getElementById("updated").textContent.replace(/^at /, ""),
  rows: Array.from(document.querySelectorAll("#top tbody tr")).map(tr => ({
    key: tr.children[0].textContent,
    hot: tr.classList.contains("hot"),
    advice: tr.children[8].textContent,
    line: (tr.children[9].querySelector(".line") || {}).textContent || "",
    href: (tr.children[9].querySelector("a") || {}).href || null,
  })),
  warning: document.getElementById("model-warning").hidden ? null :
           document.getElementById("model-warning").textContent,
  origins: Object.fromEntries(Array.from(document.querySelectorAll("#model-inputs [data-input]"))
                              .map(e => [e.dataset.input, e.dataset.origin || null])),
}))()"""


def expected_warning(model):
    """The warning the page must show for /api/v1/top's "model", or None."""
    shard = model.get("shard", {})
    if model.get("capacity", {}).get("origin") == "unknown":
        return (f"no key is advised: the shard's headroom is unknown "
                f"({model['capacity'].get('reason', 'no reason given')})")
    if shard.get("asked") and not shard.get("up"):
        return (f"advice uses configured figures: the shard could not be asked "
                f"({shard.get('error', 'no error given')})")
    if not shard.get("asked") and all(model[i]["origin"] == "configured"
                                      for i in ("capacity", "shards", "app_servers")):
        return "advice uses configured cluster figures (--cluster.* flags)"
    return None


def runbook_anchors():
    """The runbookURLBase of the alerts (deploy/mixin/config.libsonnet) and the anchors
    GitHub gives deploy/README.md's headings (lower case, punctuation but - and _ dropped,
    spaces as -)."""
    with open(os.path.join(DEPLOY, "mixin", "config.libsonnet")) as f:
        base = re.search(r"runbookURLBase:\s*'([^']*)'", f.read()).group(1)
    anchors = set()
    with open(os.path.join(DEPLOY, "README.md")) as f:
        for line in f:
            m = re.match(r"#+ (.*)", line)
            if m:
                anchors.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return base, anchors


def check_row(row, k, model, base_url, anchors):
    """(g) One hot key's row against the /api/v1/top answer it was drawn from."""
    advice = k["advice"]
    if advice is None:
        if row["advice"] != "not advised yet" or row["line"] != "not advised yet":
            raise Failure(f"{k['key']}: not advised yet in /api/v1/top, row shows "
                          f"{row['advice']!r} / {row['line']!r}")
        return False
    if row["advice"] != NAMES[advice]:
        raise Failure(f"{k['key']}: row advice {row['advice']!r}, /api/v1/top {advice!r}")
    word = LINE_WORD[advice] + ":"
    if not row["line"].startswith(word):
        raise Failure(f"{k['key']}: fix line {row['line']!r} does not start with {word!r}")
    if advice == "isolate":
        want = f"under {page_fmt0(model['target'])}"
    else:
        want = page_fmt0(k["projected_load"][advice])
    if not (row["line"].endswith(want) if advice != "isolate" else want in row["line"]):
        raise Failure(f"{k['key']}: fix line {row['line']!r} lacks {want!r} "
                      f"(projected_load {k['projected_load']})")
    if row["href"] is None or not row["href"].startswith(base_url):
        raise Failure(f"{k['key']}: runbook link {row['href']!r} is not under {base_url}")
    anchor = row["href"][len(base_url):]
    if anchor not in anchors:
        raise Failure(f"{k['key']}: runbook link #{anchor} is no heading of deploy/README.md")
    return True


def check_table(cdp, base):
    """(g), (h): waits (bounded) for a drawn table whose every hot key is advised, checking
    each drawn table against the answer it came from meanwhile. Returns (table, answer)."""
    base_url, anchors = runbook_anchors()
    last = {"why": "nothing read yet"}

    def agrees():
        shown = cdp.eval(TABLE_JS)
        snap = cdp.top_at(shown["time"])
        if snap is None:
            last["why"] = f"the page's /api/v1/top answer of {shown['time']!r} not captured"
            return None
        rows = {r["key"]: r for r in shown["rows"]}
        if [r["key"] for r in shown["rows"]] != [k["key"] for k in snap["keys"]]:
            raise Failure(f"table rows {list(rows)} are not /api/v1/top's keys")
        want = expected_warning(snap["model"])
        if shown["warning"] != want:
            raise Failure(f"model warning {shown['warning']!r}, want {want!r}")
        for i in ("capacity", "shards", "app_servers"):
            if shown["origins"].get(i) != snap["model"][i]["origin"]:
                raise Failure(f"inputs panel: {i} shown as {shown['origins'].get(i)!r}, "
                              f"/api/v1/top's model says {snap['model'][i]['origin']!r}")
        hot = [k for k in snap["keys"] if k["hot"]]
        advised = [check_row(rows[k["key"]], k, snap["model"], base_url, anchors) for k in hot]
        if not hot or not all(advised):
            last["why"] = f"{sum(advised)} of {len(hot)} hot keys advised at {snap['time']}"
            return None
        return shown, snap
    try:
        shown, snap = wait_for(30, "every hot key advised in the table", agrees, interval=0.5)
    except Failure as e:
        raise Failure(f"{e}: {last['why']}") from None
    hot = [k for k in snap["keys"] if k["hot"]]
    rows = {r["key"]: r for r in shown["rows"]}
    # The advice is held (alert.advice_margin), so a fresh answer advises the same.
    fresh = {k["key"]: k["advice"] for k in json.loads(http_get(f"{base}/api/v1/top"))["keys"]}
    for k in hot:
        if fresh.get(k["key"]) != k["advice"]:
            raise Failure(f"{k['key']}: advised {k['advice']!r} at {snap['time']}, "
                          f"{fresh.get(k['key'])!r} now")
        log(f"ok: {k['key']}: row {rows[k['key']]['advice']!r}, {rows[k['key']]['line']!r}, "
            f"runbook {rows[k['key']]['href']}")
    log(f"ok: inputs panel origins {shown['origins']}, warning {shown['warning']!r}")
    return hot


def click_key(cdp, base, key):
    """(g) Clicks `key`'s row; waits (bounded) until the playground models it on exactly the
    figures of the /api/v1/top answer that row was drawn from, and checks that its advice
    and busiest shard under the fix are the row's."""
    click_js = r"""(() => {
      for (const tr of document.querySelectorAll("#top tbody tr")) {
        if (tr.children[0].textContent === %s) {
          tr.click();
          return {time: document.getElementById("updated").textContent.replace(/^at /, ""),
                  advice: tr.children[8].textContent,
                  line: tr.children[9].querySelector(".line").textContent};
        }
      }
      return null; })()""" % json.dumps(key)
    row = cdp.eval(click_js)
    if row is None:
        raise Failure(f"no row for {key} to click")
    last = {"why": "nothing read yet"}

    def settled():
        snap = cdp.top_at(row["time"])
        if snap is None:
            last["why"] = f"the page's /api/v1/top answer of {row['time']!r} not captured"
            return None
        shown = cdp.eval(PLAYGROUND_JS)
        if not (shown["measured"] or "").startswith(f"Key {key} "):
            last["why"] = f"the playground models {shown['measured']!r}"
            return None
        k = {x["key"]: x for x in snap["keys"]}[key]
        q = dict(urllib.parse.parse_qsl(shown["query"] or ""))
        # The figures the key's advice was computed from (its episode's span), else the
        # window's.
        a = k.get("advised_on")
        want = ({"shard_ops": a["shard_ops"], "hot_share": a["share"],
                 "write_share": a["write_ratio"]} if a else
                {"shard_ops": snap["ops_per_second"]["read"] + snap["ops_per_second"]["write"],
                 "hot_share": k["share"], "write_share": k["write_ratio"]})
        got = {n: float(q[n]) if n in q else None for n in want}
        if got != want or "ops" in q:
            last["why"] = f"model request {shown['query']!r}, want {want}"
            return None
        last["why"] = model_mismatch(base, shown, measured=True)
        return None if last["why"] else (shown, k)
    try:
        shown, k = wait_for(20, f"clicked {key}: playground models its figures", settled)
    except Failure as e:
        raise Failure(f"{e}: {last['why']}") from None
    if shown["advice"] != "Advice: " + row["advice"]:
        raise Failure(f"clicked {key}: playground {shown['advice']!r}, row {row['advice']!r}")
    if k["advice"] != "isolate":
        fix = {r["strategy"]: r for r in shown["rows"]}[k["advice"]]
        busiest = re.search(r"busiest (\S+%)", fix["text"]).group(1)
        if not row["line"].endswith(busiest):
            raise Failure(f"clicked {key}: playground's {k['advice']} busiest {busiest}, row "
                          f"says {row['line']!r}")
    log(f"ok: clicked {key}: playground {shown['advice']!r} = row {row['advice']!r}, "
        f"query {shown['query']}")


def check_page_functions(cdp):
    """(i) fixLine() and modelWarning() for every fix and shard state, on made-up figures."""
    model = {"capacity": {"value": 10000, "origin": "configured"},
             "shards": {"value": 16, "origin": "measured"},
             "app_servers": {"value": 50, "origin": "configured"},
             "refresh": 2, "replicas": 3, "split": 6, "target": 0.75, "shard": {"asked": False}}
    loads = {"none": 1.234, "cache": 0.524, "replicate": 0.61, "split": 0.7, "split_cache": 0.4}
    want = {
        "cache": "cache: serve reads from each app server's cache, refreshed every 2 s; "
                 "projected busiest shard 52%",
        "replicate": "replicate: 3 copies on 3 shards, reads spread over them; "
                     "projected busiest shard 61%",
        "split": "split: 6 sub-keys on 6 shards, a write goes to one, a read sums all; "
                 "projected busiest shard 70%",
        "split_cache": "split + cache: 6 sub-keys, the total cached on each app server, "
                       "refreshed every 2 s; projected busiest shard 40%",
        "isolate": "isolate: no fix keeps the busiest shard under 75%; give the key its own "
                   "capacity",
        "none": "none: the shard absorbs it; projected load 123%",
        None: "not advised yet",
    }
    for advice, text in want.items():
        got = cdp.eval("fixLine(%s, %s)" % (
            json.dumps({"advice": advice, "projected_load": loads}), json.dumps(model)))
        if got != text:
            raise Failure(f"fixLine for {advice!r}: {got!r}, want {text!r}")
    down = dict(model, shard={"asked": True, "up": False, "error": "connection refused"})
    up = dict(model, shard={"asked": True, "up": True})
    configured = dict(model, shards={"value": 16, "origin": "configured"})
    unknown = dict(down, capacity={"value": None, "origin": "unknown",
                                   "reason": "the shard at x does not answer: refused"})
    for m, text in [(down, "advice uses configured figures: the shard could not be asked "
                           "(connection refused)"),
                    (unknown, "no key is advised: the shard's headroom is unknown (the shard at "
                              "x does not answer: refused)"),
                    (up, ""), (model, ""),
                    (configured, "advice uses configured cluster figures (--cluster.* flags)")]:
        got = cdp.eval("modelWarning(%s)" % json.dumps(m))
        if got != text:
            raise Failure(f"modelWarning for shard {m['shard']}: {got!r}, want {text!r}")
    log("ok: fixLine and modelWarning give the stated text for every fix and shard state")


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
    # Started now, so its rate window is whole by the time the page gets to it.
    try:
        hk2 = e2e.Hotkeyd(args.hotkeyd, "--demo", "--track.publish-interval=100ms",
                          work=tmp, log_path=os.path.join(tmp, "hotkeyd-fixes.log"))
    except AssertionError as e:
        raise Failure(str(e)) from None
    procs.append(("hotkeyd-fixes", hk2.proc, False))
    base2 = f"http://127.0.0.1:{hk2.web}"
    log(f"second hotkeyd (demo rate, default cluster) pid {hk2.proc.pid}: http {base2}")

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
        cdp.call("Network.enable")
        cdp.call("Emulation.setDeviceMetricsOverride", width=1200, height=1500,
                 deviceScaleFactor=1, mobile=False)
        cdp.call("Page.navigate", url=base + "/")
        wait_for(10, "landing page loaded", lambda: cdp.eval(
            f"location.href === {json.dumps(base + '/')} && document.readyState === 'complete'"))

        # (i) the page's text functions, then (g) + (h): every hot key advised, its row as the
        # answer it was drawn from (advice appears once the 10 s rate window is whole).
        check_page_functions(cdp)
        hot = check_table(cdp, base)

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
        row, _ = wait_for(20, f"the table's advice for {HOT_KEY} to be /api/v1/top's", row_as_api)
        log(f"ok: table row for {HOT_KEY}: state {row['state']}, advice {row['advice']} "
            f"(as /api/v1/top)")

        # (b) + (d) before the move.
        before = wait_for(20, "playground drew five strategy rows",
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
        # (g) every hot key, clicked in turn.
        for k in hot:
            click_key(cdp, base, k["key"])

        # Screenshot (full page), saved as a test artifact.
        shot = cdp.call("Page.captureScreenshot", timeout=20, format="png",
                        captureBeyondViewport=True)
        os.makedirs(args.artifact_dir, exist_ok=True)
        path = os.path.join(args.artifact_dir, "playground.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        log(f"screenshot: {path}")

        # (g) on the second daemon: three hot keys, three different fixes.
        cdp.top_requests = []
        cdp.call("Page.navigate", url=base2 + "/")
        wait_for(10, "second daemon's landing page loaded", lambda: cdp.eval(
            f"location.href === {json.dumps(base2 + '/')} && document.readyState === 'complete'"))
        hot2 = check_table(cdp, base2)
        fixes = sorted({k["advice"] for k in hot2})
        if len(fixes) < 3:
            raise Failure(f"the default demo's hot keys are advised {fixes}, want three fixes")
        for k in hot2:
            click_key(cdp, base2, k["key"])
        shot = cdp.call("Page.captureScreenshot", timeout=20, format="png",
                        captureBeyondViewport=True)
        path = os.path.join(args.artifact_dir, "playground-fixes.png")
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
            for name in ("hotkeyd.log", "hotkeyd-fixes.log", "chromium.log"):
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
