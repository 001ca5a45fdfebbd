#!/usr/bin/env bash
# alertmanager_notify_test.sh: deploy/alertmanager/notify.yml and hotkeyd.tmpl, the example
# that sends hotkeyd's alerts to a webhook and to Slack, against the real tools.
#
#   1. `amtool check-config` (which also parses the template); the route and the inhibit
#      rules are exactly alertmanager.yml's; critical is routed to pager, warning to ticket;
#   2. `amtool template render` of the Slack title and text for alerts whose labels and
#      annotations are the ones the shipped rules produce (taken from the expected alerts of
#      deploy/prometheus/hotkeyd.rules.test.yml, which promtool checks against the rules):
#      the text names the key, its share of the shard's traffic and the advised fix, and a
#      key with Slack's control characters (<!channel>, &) is escaped;
#   3. a real Alertmanager runs notify.yml, with the webhook URL and the Slack API URL
#      pointed at a local HTTP server this test runs, and is sent a page and a ticket: the
#      webhook gets the page with its labels, Slack's #oncall gets the page and #hotkeys the
#      ticket, each text naming key, share and fix; the warning the page inhibits is not sent.
#
# Usage: tests/deploy/alertmanager_notify_test.sh [REPO_ROOT]   (default: two levels above)
# Needs amtool and prometheus-alertmanager, curl, python3 with PyYAML. Every wait is bounded.
set -euo pipefail

root=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"}
dir="$root/deploy/alertmanager"
config="$dir/notify.yml"
for t in amtool prometheus-alertmanager curl python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t (tools/install-test-deps.sh)" >&2; exit 1; }
done

source "$root/tests/lib/e2e.sh"
e2e_init alertmanager-notify

# 1. The config.
amtool check-config "$config" >"$tmp/check.log" || { cat "$tmp/check.log"; fail "amtool check-config"; }
log "ok: amtool check-config $config"
python3 - "$dir/alertmanager.yml" "$config" <<'PY' || fail "notify.yml's route or inhibit rules differ from alertmanager.yml's"
import sys, yaml
base, notify = (yaml.safe_load(open(p)) for p in sys.argv[1:])
for field in ("route", "inhibit_rules"):
    if base[field] != notify[field]:
        sys.exit(f"{field}: {notify[field]!r} != {base[field]!r}")
PY
route() { amtool config routes test --config.file="$config" "$@" 2>/dev/null; }
[ "$(route alertname=HotkeydHotKeyCritical severity=critical)" = pager ] || fail "critical is not routed to pager"
[ "$(route alertname=HotkeydHotKey severity=warning)" = ticket ] || fail "warning is not routed to ticket"
log "ok: same route and inhibit rules as alertmanager.yml; critical -> pager, warning -> ticket"

# The alerts: labels and annotations exactly as promtool expects the shipped rules to give
# them (the first firing HotkeydHotKeyCritical and HotkeydHotKey of the rules' unit tests).
python3 - "$root/deploy/prometheus/hotkeyd.rules.test.yml" >"$tmp/alerts.json" <<'PY'
import json, sys, yaml
tests = yaml.safe_load(open(sys.argv[1]))["tests"]
def first(name):
    for t in tests:
        for case in t.get("alert_rule_test", []):
            if case["alertname"] == name and case.get("exp_alerts"):
                a = case["exp_alerts"][0]
                return {"labels": dict(a["exp_labels"], alertname=name),
                        "annotations": a["exp_annotations"]}
    sys.exit(f"no firing {name} in {sys.argv[1]}")
json.dump([first("HotkeydHotKeyCritical"), first("HotkeydHotKey")], sys.stdout)
PY

# 2. The template, rendered by amtool for one alert group (the template.Data layout).
render() {  # render ALERT_INDEX KEY_OVERRIDE: prints the title, a line "--", the text
  python3 - "$tmp/alerts.json" "$1" "$2" >"$tmp/data.json" <<'PY'
import json, sys
alert = json.load(open(sys.argv[1]))[int(sys.argv[2])]
if sys.argv[3]:
    alert["labels"]["key"] = sys.argv[3]
alert.update(status="firing", startsAt="2026-01-01T00:00:00Z", endsAt="0001-01-01T00:00:00Z",
             generatorURL="http://prometheus:9090/graph", fingerprint="0")
labels = alert["labels"]
print(json.dumps({
    "receiver": "pager", "status": "firing", "alerts": [alert],
    "groupLabels": {k: labels[k] for k in ("alertname", "key") if k in labels},
    "commonLabels": labels, "commonAnnotations": alert["annotations"],
    "externalURL": "http://alertmanager:9093"}))
PY
  amtool template render --template.glob="$dir/hotkeyd.tmpl" --template.data="$tmp/data.json" \
    --template.text='{{ template "hotkeyd.slack.title" . }}
--
{{ template "hotkeyd.slack.text" . }}'
}
# expect_text FILE KEY SHARE STRATEGY: the rendered message names the key, share and fix.
expect_text() {
  grep -qF "Key: \`$2\`" "$1" || fail "$1 does not name the key $2: $(cat "$1")"
  grep -qF "takes $3 of the shard's traffic" "$1" || fail "$1 does not give the share $3: $(cat "$1")"
  grep -qF "Advised strategy: $4." "$1" || fail "$1 does not name the fix $4: $(cat "$1")"
}
render 0 "" >"$tmp/critical.txt" || fail "amtool template render"
sed 's/^/    /' "$tmp/critical.txt" >&3
head -1 "$tmp/critical.txt" | grep -qxF '[FIRING:1] HotkeydHotKeyCritical key user:42' ||
  fail "title: $(head -1 "$tmp/critical.txt")"
expect_text "$tmp/critical.txt" user:42 30% cache
grep -qF '<https://github.com/hotkeyd/hotkeyd/blob/main/deploy/README.md#hotkeydhotkeycritical|Runbook>' \
  "$tmp/critical.txt" || fail "no runbook link"
render 1 "" >"$tmp/warning.txt" || fail "amtool template render"
expect_text "$tmp/warning.txt" user:42 30% cache
render 0 'x<!channel>&y' >"$tmp/hostile.txt" || fail "amtool template render"
grep -qF 'Key: `x&lt;!channel&gt;&amp;y`' "$tmp/hostile.txt" ||
  fail "a key with <!channel> is not escaped: $(cat "$tmp/hostile.txt")"
if grep -qF '<!channel>' "$tmp/hostile.txt"; then fail "<!channel> reaches Slack unescaped"; fi
log "ok: amtool template render: key, share, fix and runbook; Slack's < > & escaped"

# 3. A real Alertmanager sending to a local receiver, which writes each POST to requests.jsonl.
rport=$(free_port tcp)
python3 - "$rport" "$tmp/requests.jsonl" >"$tmp/receiver.log" 2>&1 <<'PY' &
import http.server, json, sys
out = open(sys.argv[2], "a")
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        out.write(json.dumps({"path": self.path, "body": json.loads(body)}) + "\n")
        out.flush()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
PY
pids+=($!)
echo "http://127.0.0.1:$rport/slack" >"$tmp/slack-url"
python3 - "$config" "$tmp" "$rport" >"$tmp/notify.yml" <<'PY'
import os, sys, yaml
config, tmp, port = sys.argv[1], sys.argv[2], sys.argv[3]
c = yaml.safe_load(open(config))
c["global"]["slack_api_url_file"] = os.path.join(tmp, "slack-url")
# templates: unchanged; hotkeyd.tmpl is copied next to this config (relative paths are
# resolved against the config file's directory, as docs/alerting.md says).
c["route"]["group_wait"] = "1s"  # the example keeps Alertmanager's default (30s)
for r in c["receivers"]:
    for w in r.get("webhook_configs", []):
        w["url"] = f"http://127.0.0.1:{port}/webhook"
print(yaml.safe_dump(c))
PY
cp "$dir/hotkeyd.tmpl" "$tmp/"
port=$(free_port tcp)
am="http://127.0.0.1:$port"
prometheus-alertmanager --config.file="$tmp/notify.yml" --storage.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$port" --cluster.listen-address= >"$tmp/alertmanager.log" 2>&1 &
pids+=($!)
wait_for 20 "alertmanager ready" curl -sf --max-time 2 "$am/-/ready"

# The page and the warning it inhibits (user:42), and a ticket for another key (cart:9).
python3 - "$am" "$tmp/alerts.json" <<'PY'
import copy, json, sys, urllib.request
critical, warning = json.load(open(sys.argv[2]))
ticket = copy.deepcopy(warning)
ticket["labels"]["key"] = "cart:9"
ticket["annotations"]["description"] = warning["annotations"]["description"].replace("user:42", "cart:9")
req = urllib.request.Request(sys.argv[1] + "/api/v2/alerts",
                             data=json.dumps([critical, warning, ticket]).encode(),
                             headers={"Content-Type": "application/json"}, method="POST")
urllib.request.urlopen(req, timeout=5).read()
PY
log "ok: alerts posted"

# Prints one line per notification received, sorted: "webhook ALERTNAME KEY" or
# "slack CHANNEL TITLE"; writes each Slack text to slack-<channel>.txt.
received() {
  python3 - "$tmp/requests.jsonl" "$tmp" <<'PY'
import json, sys
lines = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["path"] == "/webhook":
        for a in r["body"]["alerts"]:
            lines.append("webhook %s %s" % (a["labels"]["alertname"], a["labels"].get("key", "-")))
    else:
        att = r["body"]["attachments"][0]
        channel = r["body"]["channel"]
        lines.append("slack %s %s" % (channel, att["title"]))
        open("%s/slack-%s.txt" % (sys.argv[2], channel.lstrip("#")), "w").write(att["text"])
print("\n".join(sorted(lines)))
PY
}
want='slack #hotkeys [FIRING:1] HotkeydHotKey key cart:9
slack #oncall [FIRING:1] HotkeydHotKeyCritical key user:42
webhook HotkeydHotKeyCritical user:42'
check() { [ -f "$tmp/requests.jsonl" ] && [ "$(received)" = "$want" ]; }
wait_for 30 "the webhook and both Slack channels are notified" check
received | sed 's/^/    received: /' >&3
expect_text "$tmp/slack-oncall.txt" user:42 30% cache
expect_text "$tmp/slack-hotkeys.txt" cart:9 30% cache
# The inhibited warning would have been sent with the others (same group_wait): give it one
# more group interval's worth of time, then check nothing else came.
sleep 2
[ "$(received)" = "$want" ] || fail "unexpected notifications: $(received)"
log "ok: Slack texts name key, share and fix; the inhibited warning was not sent"
log "PASS"
