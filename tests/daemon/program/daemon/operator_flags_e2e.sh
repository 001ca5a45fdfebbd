#!/usr/bin/env bash
# operator_flags_e2e.sh HOTKEYD: the operator flags of Prometheus exporters, from outside.
#   A. --log.format=logfmt (the default) and json: a run that starts (with --demo, so hot-key
#      episodes are logged too), fails a SIGHUP reload of a rules file whose path holds
#      quotes, spaces and a backslash, and shuts down on SIGTERM; every line on stderr is
#      parsed by a strict logfmt parser (check_log_lines.py, written apart from the
#      daemon's) or by json.loads.
#   B. --web.enable-lifecycle: POST /-/reload is 403 without it (A's runs), 200 with it.
#   C. --check-config: valid files exit 0 and say ok; a bad rules file, a bad web config
#      file and a bad flag exit 1 with the error; a port already taken does not matter
#      (nothing is bound).
#   D. --web.listen-address twice (127.0.0.1 and [::1]): both scraped.
#   E. --web.systemd-socket under systemd-socket-activate (systemd's tool that passes a
#      listening socket as a .socket unit does): scraped through it; the unit file
#      deploy/systemd/hotkeyd.socket passes systemd-analyze verify.
# Loopback only; every wait is bounded; everything started is stopped on exit. ~15 s.
set -euo pipefail

hotkeyd_bin=$(realpath "${1:?usage: operator_flags_e2e.sh path/to/hotkeyd}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
for t in curl python3 systemd-socket-activate systemd-analyze; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done
source "$here/../../../lib/e2e.sh"
e2e_init operator-flags

dir="$tmp/a \"quoted\" dir\\x"
mkdir -p "$dir"
rules="$dir/rules.yml"

# ---------------------------------------------------------------- A, B: log formats
run_logged() {  # FORMAT LIFECYCLE(0|1)
  local format=$1 lifecycle=$2 web udp extra=()
  web=$(free_port tcp)
  udp=$(free_port udp)
  [ "$lifecycle" = 1 ] && extra+=(--web.enable-lifecycle)
  printf 'alert:\n  share_threshold: 0.2\n' >"$rules"
  e2e_start_hotkeyd "$hotkeyd_bin" "http://127.0.0.1:$web" --log.format="$format" \
    --web.listen-address="127.0.0.1:$web" --udp.listen-address="127.0.0.1:$udp" \
    --config.file="$rules" --demo --demo.rate=2000 "${extra[@]}"
  local want=403
  [ "$lifecycle" = 1 ] && want=200
  local got
  got=$(curl -s -o "$tmp/reload.body" -w '%{http_code}' -X POST "http://127.0.0.1:$web/-/reload")
  [ "$got" = "$want" ] || fail "$format: POST /-/reload answered $got, want $want ($(cat "$tmp/reload.body"))"
  if [ "$want" = 403 ]; then
    grep -qx 'Lifecycle API is not enabled.' "$tmp/reload.body" || fail "403 body: $(cat "$tmp/reload.body")"
  fi
  log "ok: $format: POST /-/reload is $got (lifecycle=$lifecycle)"
  wait_for 10 "$format: a hot key episode logged" grep -q 'hot key episode started' "$tmp/hotkeyd.log"
  printf 'alert:\n  sahre_threshold: 0.2\n' >"$rules"
  kill -HUP "$hotkeyd_pid"
  wait_for 10 "$format: the reload failure logged" grep -q 'reload failed' "$tmp/hotkeyd.log"
  kill -TERM "$hotkeyd_pid"
  wait "$hotkeyd_pid" || fail "$format: hotkeyd exited $? on SIGTERM"
  cp "$tmp/hotkeyd.log" "$tmp/$format.log"
  python3 "$here/check_log_lines.py" "$format" "$tmp/$format.log" "hotkeyd started" \
    "hot key episode started" \
    "configuration reload failed; the previous configuration stays in force" \
    "shutting down" >"$tmp/$format.records" || fail "$format: stderr is not valid $format"
  # The failure's fields carry the path as given, quotes and backslash included.
  python3 - "$tmp/$format.records" "$rules" <<'PY' || fail "$format: reload failure fields"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
r = [r for r in recs if r["msg"].startswith("configuration reload failed")][0]
assert r["file"] == sys.argv[2], r
assert r["err"].startswith('rules file "' + sys.argv[2] + '"'), r
assert "sahre_threshold" in r["err"], r
PY
  log "ok: $format: $(wc -l <"$tmp/$format.log") lines, all valid $format, the failure names the quoted path"
}
run_logged logfmt 0
run_logged json 1

# ---------------------------------------------------------------- C: --check-config
held=$(free_port tcp)
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); time.sleep(60)' "$held" &
pids+=($!)
wait_for 10 "a listener holds port $held" bash -c "exec 5<>/dev/tcp/127.0.0.1/$held"
check() {  # WANT_RC GREP FLAGS...
  local want=$1 pattern=$2 rc=0
  shift 2
  "$hotkeyd_bin" --check-config "$@" >"$tmp/check.out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "--check-config $* exited $rc, want $want: $(cat "$tmp/check.out")"
  grep -qF -- "$pattern" "$tmp/check.out" || fail "--check-config $*: no '$pattern' in: $(cat "$tmp/check.out")"
  log "ok: --check-config exit $rc: $(tr '\n' ';' <"$tmp/check.out")"
}
cp "$repo/config/example-rules.yml" "$tmp/good-rules.yml"
printf 'basic_auth_users:\n  u: $2y$10$abcdefghijklmnopqrstuuQpGzgRJe0LJUqMzkGKUrXqf8Mg7cSyu\n' >"$tmp/web.yml"
check 0 "rules file \"$tmp/good-rules.yml\": ok (" --config.file="$tmp/good-rules.yml" \
  --web.config.file="$tmp/web.yml" --web.listen-address="127.0.0.1:$held"
check 0 "web config file \"$tmp/web.yml\": ok (plain HTTP, basic auth users: 1)" \
  --web.config.file="$tmp/web.yml"
check 1 'unknown key' --config.file="$rules"
printf 'tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n' >"$tmp/bad-web.yml"
check 1 "web config file \"$tmp/bad-web.yml\"" --web.config.file="$tmp/bad-web.yml"
check 1 'flags: unknown flag --nope' --nope
# The shard the advice asks: nothing listening, a listener that never answers (the timeout),
# and a real redis-server; a start logs the same error the check prints.
closed=$(free_port tcp)
check 1 "shard 127.0.0.1:$closed: " --shard.address="127.0.0.1:$closed"
reason=$(sed -n "s/^shard 127.0.0.1:$closed: //p" "$tmp/check.out")
check 1 "shard 127.0.0.1:$held: " --shard.address="127.0.0.1:$held"
check 0 "shard: not asked" --udp.listen-address=127.0.0.1:0
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save "" --appendonly no --dir "$tmp" \
  >"$tmp/redis.log" 2>&1 &
pids+=($!)
wait_for 10 "redis-server's socket" test -S "$tmp/redis.sock"
check 0 "shard $tmp/redis.sock: ok (answers)" --shard.address="$tmp/redis.sock"
udp=$(free_port udp)
web=$(free_port tcp)
e2e_start_hotkeyd "$hotkeyd_bin" "http://127.0.0.1:$web" --web.listen-address="127.0.0.1:$web" \
  --udp.listen-address="127.0.0.1:$udp" --shard.address="127.0.0.1:$closed" --shard.interval=1s
wait_for 10 "the start logs the check's error" grep -qF -- "$reason" "$tmp/hotkeyd.log"
grep -q 'msg="cannot ask the shard' "$tmp/hotkeyd.log" || fail "no warning: $(cat "$tmp/hotkeyd.log")"
kill "$hotkeyd_pid"
wait "$hotkeyd_pid" || true
log "ok: the start logs what --check-config said: $reason"

# ---------------------------------------------------------------- D: two addresses
p1=$(free_port tcp)
p2=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET6);s.bind(("::1",0));print(s.getsockname()[1])')
udp=$(free_port udp)
e2e_start_hotkeyd "$hotkeyd_bin" "http://127.0.0.1:$p1" --web.listen-address="127.0.0.1:$p1" \
  --web.listen-address="[::1]:$p2" --udp.listen-address="127.0.0.1:$udp"
# grep without -q reads the whole body: grep -q can exit at the first match, and curl, cut
# off mid-body, then fails the pipeline under pipefail.
curl -sf --max-time 5 "http://127.0.0.1:$p1/metrics" | grep '^hotkey_build_info' >/dev/null ||
  fail "no /metrics on 127.0.0.1:$p1"
curl -sf --max-time 5 "http://[::1]:$p2/metrics" | grep '^hotkey_build_info' >/dev/null ||
  fail "no /metrics on [::1]:$p2"
grep -q "web=127.0.0.1:$p1,\[::1\]:$p2" "$tmp/hotkeyd.log" || fail "start line: $(head -1 "$tmp/hotkeyd.log")"
kill "$hotkeyd_pid"
wait "$hotkeyd_pid" || true
log "ok: /metrics on 127.0.0.1:$p1 and [::1]:$p2"

# ---------------------------------------------------------------- E: socket activation
sock=$(free_port tcp)
udp=$(free_port udp)
systemd-socket-activate -l "127.0.0.1:$sock" "$hotkeyd_bin" "${e2e_keep_user[@]}" --web.systemd-socket \
  --web.listen-address="127.0.0.1:$held" --udp.listen-address="127.0.0.1:$udp" \
  >"$tmp/activated.log" 2>&1 &
pids+=($!)
# The first connection makes systemd-socket-activate exec hotkeyd, which then accepts it.
wait_for 15 "scrape through the passed socket" \
  sh -c "curl -sf --max-time 5 http://127.0.0.1:$sock/metrics | grep -q '^hotkey_build_info'"
grep -q "web=127.0.0.1:$sock" "$tmp/activated.log" || fail "start line: $(cat "$tmp/activated.log")"
cp "$repo/deploy/systemd/hotkeyd.socket" "$tmp/"
sed "s|^ExecStart=[^ ]*|ExecStart=$hotkeyd_bin|" "$repo/deploy/systemd/hotkeyd.service" >"$tmp/hotkeyd.service"
out=$(systemd-analyze verify "$tmp/hotkeyd.socket" 2>&1 || true)
if grep -qi 'hotkeyd\.s' <<<"$out"; then fail "systemd-analyze verify hotkeyd.socket: $out"; fi
log "ok: scraped through the socket systemd-socket-activate passed; hotkeyd.socket verifies"
log "PASS"
