#!/usr/bin/env bash
# top_tmux_e2e.sh HOTKEYD: `hotkeyd top` in a real terminal. tmux (a private server, a
# detached 100x30 session) runs it against `hotkeyd --demo`, and capture-pane reads its screen:
#   1. the screen shows the demo's hot keys, and its rows are /api/v1/top's keys;
#   2. it refreshes: a capture after the interval shows another time in the header;
#   3. `q` quits it with status 0, and the terminal is back in canonical mode with echo;
#   4. against a port where nothing listens it shows the failure, keeps running and
#      retrying, and Ctrl-C quits it with status 0.
# Exits 77 (skipped) without tmux. TOP_SCREEN_OUT=FILE saves the capture of step 1.
# Loopback only; every wait is bounded; everything started is stopped on exit. About 10 s.
set -euo pipefail

hotkeyd_bin=$(realpath "${1:?usage: top_tmux_e2e.sh path/to/hotkeyd}")
if ! command -v tmux >/dev/null; then
  echo "SKIP: tmux is not installed (tools/install-test-deps.sh installs it)"
  exit 77
fi
for t in curl python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

source "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
e2e_init top-tmux
tmux_socket="hotkeyd-top-e2e-$$"
tm() { tmux -L "$tmux_socket" -f /dev/null "$@"; }
e2e_on_exit() { tm kill-server 2>/dev/null || true; }

hport=$(free_port tcp)
uport=$(free_port udp)
url="http://127.0.0.1:$hport"
e2e_start_hotkeyd "$hotkeyd_bin" "$url" --demo --web.listen-address="127.0.0.1:$hport" \
  --udp.listen-address="127.0.0.1:$uport"

# Runs `hotkeyd top ARGS` in session NAME; on exit the shell writes its status to
# $tmp/NAME.rc and the terminal's settings to $tmp/NAME.stty.
start_top() {
  local name=$1
  shift
  tm new-session -d -s "$name" -x 100 -y 30 \
    "$(printf '%q ' "$hotkeyd_bin" top "$@"); echo \$? > $tmp/$name.rc; stty -a > $tmp/$name.stty; sleep 30"
}
capture() { tm capture-pane -p -t "$1"; }

# The keys of a screen's rows: the last field of each line under the heading (the demo's
# keys have no spaces), and of /api/v1/top, each sorted.
screen_keys() { capture top | awk 'rows && NF { print $NF } / KEY$/ { rows = 1 }' | sort; }
api_keys() {
  curl -sf --max-time 2 "$url/api/v1/top" |
    python3 -c 'import json, sys; print("\n".join(sorted(k["key"] for k in json.load(sys.stdin)["keys"])))'
}

# ------------------------------------------------------------ 1. the demo's hot keys
start_top top --url="$url"
shows_hot_keys() {
  local screen
  screen=$(capture top)
  echo "$screen"
  for k in post:viral:likes item:flash-sale:stock user:celebrity:profile; do
    grep -q " $k\$" <<<"$screen" || return 1
  done
}
wait_for 15 "the screen shows the demo's three hot keys" shows_hot_keys
# The screen is at most an interval older than the API's answer: retried until they agree.
rows_are_api_keys() {
  local s a
  s=$(screen_keys)
  a=$(api_keys)
  printf 'screen:\n%s\napi:\n%s\n' "$s" "$a"
  [ -n "$s" ] && [ "$s" = "$a" ]
}
wait_for 10 "the rows are /api/v1/top's keys" rows_are_api_keys
# The advice comes once the rate window holds the keys' ops (a few seconds after the start).
full_row() {
  capture top | grep -E '^ *[0-9.]+%  +[0-9.]+k/s +[0-9]+% +[0-9]+(s|m[0-9]+s)  [a-z_]+ +post:viral:likes$'
}
wait_for 15 "a row with share, ops/s, write ratio, hot time and fix for post:viral:likes" full_row
first=$(capture top)
grep -q "^hotkeyd top  $url  [0-9][0-9]:[0-9][0-9]:[0-9][0-9] UTC\$" <<<"$first" ||
  fail "no header line with the URL and time: $first"
grep -q '^total [0-9.]*k/s  read .*  keys [0-9]* tracked, 3 hot$' <<<"$first" ||
  fail "no totals line with 3 hot keys: $first"
if [ -n "${TOP_SCREEN_OUT:-}" ]; then printf '%s\n' "$first" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$TOP_SCREEN_OUT"; fi
log "ok: header, totals and rows as expected"

# ------------------------------------------------------------ 2. it refreshes
header_time() { capture top | head -1 | awk '{ print $(NF-1) }'; }
t1=$(header_time)
refreshed() { [ "$(header_time)" != "$t1" ]; }
wait_for 5 "a refresh shows a later time than $t1" refreshed

# ------------------------------------------------------------ 3. q quits, terminal restored
tm send-keys -t top q
wait_for 5 "top exits on q" test -s "$tmp/top.rc"
[ "$(cat "$tmp/top.rc")" = 0 ] || fail "top exited with $(cat "$tmp/top.rc") on q"
wait_for 5 "the terminal settings were saved" test -s "$tmp/top.stty"
grep -Eq '(^| )icanon( |$)' "$tmp/top.stty" || fail "terminal left without icanon: $(cat "$tmp/top.stty")"
grep -Eq '(^| )echo( |$)' "$tmp/top.stty" || fail "terminal left without echo: $(cat "$tmp/top.stty")"
log "ok: q quit with status 0 and restored the terminal"

# ------------------------------------------------------------ 4. a failure is shown and retried
dead_port=$(free_port tcp)
start_top down --url="http://127.0.0.1:$dead_port" --interval=200ms
shows_refused() { capture down | grep -q "Connection refused; retrying every 200ms"; }
wait_for 10 "the screen shows the refused connection" shows_refused
sleep 1  # five more intervals, each a failed attempt
[ ! -e "$tmp/down.rc" ] || fail "top exited on a refused connection: $(cat "$tmp/down.rc")"
shows_refused || fail "the failure line is gone: $(capture down)"
tm send-keys -t down C-c
wait_for 5 "top exits on Ctrl-C" test -s "$tmp/down.rc"
[ "$(cat "$tmp/down.rc")" = 0 ] || fail "top exited with $(cat "$tmp/down.rc") on Ctrl-C"
log "ok: a refused connection is shown and retried; Ctrl-C quit with status 0"
log "PASS"
