#!/usr/bin/env python3
"""Checks that every metric the dashboard and the rules query actually exists.

Usage:
  check_dashboard_metrics.py DASHBOARD.json RULES.yml METRICS [--absent-ok REGEX] [--prometheus URL]

  METRICS     a /metrics exposition: a file path, or an http(s):// URL (e.g. a live
              hotkeyd's http://127.0.0.1:10110/metrics).
  --absent-ok REGEX
              names matching REGEX (whole name) may be missing from METRICS: they are
              listed, not failed. For a live daemon that runs without the inputs some
              families need (a Redis shard to ask, a Redis Cluster); the sample exposition
              is checked without it.
  --prometheus URL
              also send every expression (Grafana variables replaced by harmless values)
              to that Prometheus's /api/v1/query, which fails on a PromQL syntax error.

Why: a renamed metric does not break a dashboard or a rule loudly; the panel goes empty and
the alert never fires. This collects every PromQL expression (dashboard targets, template
variable queries, alerting and recording rule exprs, and the `query` calls inside alert
annotation templates), extracts the metric names they select, and fails listing each name
that is neither exported in METRICS, nor recorded by a rule in RULES, nor a Prometheus
built-in (up, ALERTS, ALERTS_FOR_STATE, scrape_*).

How names are found (a tokenizer, not a PromQL parser): string literals, label matchers
`{...}`, range/subquery brackets `[...]`, grouping clauses `by|without|on|ignoring|
group_left|group_right (...)`, Grafana variables (`$x`, `${x}`, `[[x]]`), durations and
numbers are removed; what remains of the form [a-zA-Z_:][a-zA-Z0-9_:]* and is not followed
by `(` (a function call) and is not a keyword or aggregation operator is a metric name.
`{__name__="x"}` selectors are read before the braces are removed.

Exit status: 0 when every name resolves, 1 when some do not, 2 on bad usage or input.
Cost: linear in the size of the inputs. Needs python3 and python3-yaml only.
"""

import argparse
import json
import re
import sys
import urllib.parse
import urllib.request

import yaml

BUILTINS = {"up", "ALERTS", "ALERTS_FOR_STATE", "scrape_duration_seconds", "scrape_samples_scraped",
            "scrape_samples_post_metric_relabeling", "scrape_series_added"}

# Words that can stand without "(" in PromQL and are not metric names.
KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "offset", "atan2", "inf", "nan", "Inf", "NaN",
    # aggregation operators, which may be followed by a by/without clause instead of "("
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
    "topk", "quantile", "limitk", "limit_ratio",
    # @ modifier helpers
    "start", "end",
}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"((?:[^"\\]|\\.)*)"')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]")
_NUMBER = re.compile(
    r"(?<![\w:])(?:0x[0-9a-fA-F]+|(?:\d+(?:ms|s|m|h|d|w|y))+|\d*\.?\d+(?:[eE][+-]?\d+)?)(?![\w:])")
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def metric_names(expr):
    """Returns the set of metric names an expression selects."""
    names = set(m.group(1) for m in _NAME_MATCHER.finditer(expr))
    text = _GRAFANA_VAR.sub(" ", expr)
    # Label matchers hold strings; drop the matchers before the strings so that a brace
    # inside a quoted label value cannot confuse the brace matcher.
    text = _STRING.sub('""', text)
    text = _BRACES.sub(" ", text)
    prev = None
    while prev != text:  # nested subqueries: [5m:1m] inside [...]
        prev = text
        text = _BRACKETS.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    text = _STRING.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    for m in _IDENT.finditer(text):
        word = m.group(0)
        rest = text[m.end():].lstrip()
        if rest.startswith("("):
            continue  # function call
        if word in KEYWORDS:
            continue
        names.add(word)
    return names


def _grafana_variable_expr(query):
    """The PromQL inside a Grafana Prometheus variable query, or None."""
    if isinstance(query, dict):
        query = query.get("query", "")
    if not isinstance(query, str) or not query.strip():
        return None
    m = re.match(r"^\s*label_values\((.*),\s*[a-zA-Z_]\w*\s*\)\s*$", query, re.S)
    if m:
        return m.group(1)
    m = re.match(r"^\s*label_values\(\s*[a-zA-Z_]\w*\s*\)\s*$", query)
    if m:
        return None  # label_values(label): no metric
    m = re.match(r"^\s*query_result\((.*)\)\s*$", query, re.S)
    if m:
        return m.group(1)
    m = re.match(r"^\s*metrics\((.*)\)\s*$", query, re.S)
    if m:
        return None
    return query


def dashboard_exprs(dashboard):
    """(where, expr) for every Prometheus expression in a Grafana dashboard."""
    out = []

    def walk_panels(panels):
        for p in panels or []:
            for t in p.get("targets") or []:
                if t.get("expr"):
                    out.append((f'panel "{p.get("title", "")}" ref {t.get("refId", "?")}', t["expr"]))
            walk_panels(p.get("panels"))

    walk_panels(dashboard.get("panels"))
    for row in dashboard.get("rows") or []:  # pre-schema-16 layout
        walk_panels(row.get("panels"))
    for v in (dashboard.get("templating") or {}).get("list") or []:
        if v.get("type") == "query":
            e = _grafana_variable_expr(v.get("query"))
            if e:
                out.append((f'variable "{v.get("name")}"', e))
    return out


_PRINTF = re.compile(r'printf\s+"((?:[^"\\]|\\.)*)"')


def rules_exprs(rules):
    """(where, expr) for every expression of a rule file, and the recorded names."""
    out, recorded = [], set()
    for g in rules.get("groups") or []:
        for r in g.get("rules") or []:
            name = r.get("record") or r.get("alert")
            if r.get("record"):
                recorded.add(r["record"])
            out.append((f'rule "{name}"', str(r.get("expr", ""))))
            # `query` calls inside annotation templates: printf "<promql with %q>" ... | query
            for key, text in (r.get("annotations") or {}).items():
                for m in _PRINTF.finditer(str(text)):
                    q = m.group(1).replace('\\"', '"').replace("%q", '"x"').replace("%s", "x")
                    out.append((f'rule "{name}" annotation {key}', q))
    return out, recorded


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{|\s)")


def exported_names(text):
    """Metric names present in a Prometheus text exposition (samples and # TYPE lines)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE ") or line.startswith("# HELP "):
            parts = line.split()
            if len(parts) >= 3:
                names.add(parts[2])
                if line.startswith("# TYPE ") and len(parts) >= 4 and parts[3] in ("histogram", "summary"):
                    names.update(parts[2] + s for s in ("_bucket", "_sum", "_count"))
            continue
        m = _SAMPLE.match(line)
        if m:
            names.add(m.group(1))
    return names


def read_source(src):
    if re.match(r"^https?://", src):
        with urllib.request.urlopen(src, timeout=10) as resp:
            return resp.read().decode("utf-8", errors="replace")
    with open(src, encoding="utf-8", errors="replace") as f:
        return f.read()


def grafana_to_promql(expr):
    """Replaces Grafana variables so that Prometheus can parse the expression."""
    expr = expr.replace("$__rate_interval", "1m").replace("${__rate_interval}", "1m")
    expr = re.sub(r"\$__interval\b|\$\{__interval\}|\$__range\b", "1m", expr)
    return re.sub(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]", ".*", expr)


def check_syntax(prometheus, exprs):
    bad = []
    for where, expr in exprs:
        url = prometheus.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": grafana_to_promql(expr)})
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"{}")
        if body.get("status") != "success":
            bad.append(f"{where}: {body.get('error', 'no answer')}\n    {expr}")
    return bad


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dashboard")
    ap.add_argument("rules")
    ap.add_argument("metrics", help="file path or http(s) URL of a /metrics exposition")
    ap.add_argument("--absent-ok", help="regex of names that may be missing from METRICS (listed, not failed)")
    ap.add_argument("--prometheus", help="Prometheus base URL to syntax-check each expression")
    args = ap.parse_args(argv)
    try:
        dashboard = json.loads(read_source(args.dashboard))
        rules = yaml.safe_load(read_source(args.rules)) or {}
        exported = exported_names(read_source(args.metrics))
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not exported:
        print(f"error: no metrics found in {args.metrics}", file=sys.stderr)
        return 2

    rexprs, recorded = rules_exprs(rules)
    exprs = dashboard_exprs(dashboard) + rexprs
    known = exported | recorded | BUILTINS
    missing = {}
    used = set()
    for where, expr in exprs:
        for name in metric_names(expr):
            used.add(name)
            if name not in known:
                missing.setdefault(name, []).append(where)

    if args.absent_ok:
        absent_ok = re.compile(args.absent_ok)
        allowed = sorted(n for n in missing if absent_ok.fullmatch(n))
        if allowed:
            print(f"note: {len(allowed)} name(s) not in {args.metrics}, allowed by --absent-ok: {', '.join(allowed)}")
        for n in allowed:
            del missing[n]

    status = 0
    if missing:
        status = 1
        print(f"FAIL: {len(missing)} metric name(s) used but neither exported, recorded nor built in:")
        for name in sorted(missing):
            print(f"  {name}: {', '.join(missing[name])}")
    if args.prometheus:
        bad = check_syntax(args.prometheus, exprs)
        if bad:
            status = 1
            print(f"FAIL: {len(bad)} expression(s) rejected by {args.prometheus}:")
            for b in bad:
                print("  " + b)
    if status == 0:
        print(f"OK: {len(exprs)} expressions, {len(used)} metric names, all resolved"
              + (" and parsed by Prometheus" if args.prometheus else ""))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
