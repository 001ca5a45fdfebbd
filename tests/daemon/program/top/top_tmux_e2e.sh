#!/usr/bin/env bash
# top_tmux_e2e.sh HOTKEYD: `hotkeyd top` in a real terminal. tmux (a private server, a
# detached 100x30 session) runs it against `hotkeyd --demo`, and capture-pane reads its screen:
#   1. the screen shows the demo's hot keys, and its rows are /api/v1/top's keys;
#   1b. keys sent over UDP with ESC and with wide characters show escaped and clipped;
#   2. it refreshes: a capture after the interval shows another time in the header; after a
#      resize to 60 columns the lines are cut to 60;
#   3. `q` quits it with status 0, and the terminal is back in canonical mode with echo;
#   4. against a port where nothing listens it shows the failure, keeps running and
#      retrying, and Ctrl-C quits it with status 0;
#   5. against a server that never answers it shows "connecting", then the timeout.
# Exits 77 (skipped) without tmux. TOP_SCREEN_OUT=FILE saves the capture of step 1.
# Loopback only; every wait is bounded; everything started is stopped on exit. About 30 s.
set -euo pipefail

hotkeyd_bin=$(realpath "${1:?usage: top_tmux_e2e.sh path/to/hotkeyd}")
if ! command -v tmux >/dev/null; then
  echo "SKIP: tmux is not installed (tools/install-test-deps.sh installs it)"
  exit 77
fi
for t in curl python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

source "$(dirname "${BASH_SOURCE[0]}")/../../../lib/e2e.sh"
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

# ------------------------------------------------------------ 1b. keys a terminal would act on
# Two more keys sent over UDP, each about 1.5k events/s: one holding ESC [31m (a colour
# change), one of 60 U+2705 (a character wide on the terminal that the screen counts as one
# column): its row must be clipped at the pane's edge, not wrapped onto the next line.
python3 - "$uport" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
keys = [b"evil\x1b[31mred", b"wide:" + "\u2705".encode() * 60]
end = time.time() + 20
while time.time() < end:
    for k in keys:
        s.sendto(b"\n".join([b"r " + k] * 50), ("127.0.0.1", int(sys.argv[1])))
    time.sleep(1 / 30)
PY
pids+=($!)
shows_sent_keys() {
  local screen
  screen=$(capture top)
  echo "$screen"
  grep -q ' evil\\x1b\[31mred$' <<<"$screen" && grep -q ' wide:✅' <<<"$screen"
}
wait_for 15 "the screen shows the sent keys, ESC escaped" shows_sent_keys
# Under the heading every line is a row (a share first) or blank: no wrapped remainder.
no_wrap() {
  local screen
  screen=$(capture top)
  echo "$screen"
  awk 'rows && NF && $1 !~ /^[0-9.]+%$/ { bad = 1 } / KEY$/ { rows = 1 } END { exit bad }' <<<"$screen"
}
no_wrap >/dev/null || fail "a row spilled onto the next line: $(capture top)"
capture top | grep -q $'\x1b' && fail "an ESC byte reached the screen"
log "ok: ESC in a key shows as \\x1b; a row wider than the pane is clipped, not wrapped"

# ------------------------------------------------------------ 2. it refreshes
header_time() { capture top | head -1 | awk '{ print $(NF-1) }'; }
t1=$(header_time)
refreshed() { [ "$(header_time)" != "$t1" ]; }
wait_for 5 "a refresh shows a later time than $t1" refreshed
# A narrower pane: the screen is drawn again at its width, the totals line cut with "…".
tm resize-window -t top -x 60 -y 30
narrow() {
  local screen
  screen=$(capture top)
  echo "$screen"
  grep -q '^total .*…$' <<<"$screen" && ! grep -q ' user:celebrity:profile$' <<<"$screen"
}
wait_for 5 "after a resize to 60 columns the lines are cut to 60" narrow
capture top | python3 -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 60 for l in sys.stdin))' ||
  fail "a line longer than 60 characters: $(capture top)"

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

# ------------------------------------------------------------ 5. a server that never answers
# It listens and never accepts: the connection completes in the kernel, the answer never
# comes. The screen says "connecting" during the first request, then the timeout.
silent_port=$(free_port tcp)
python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
time.sleep(60)' "$silent_port" &
pids+=($!)
wait_for 5 "the silent server listens" python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$silent_port"
start_top silent --url="http://127.0.0.1:$silent_port" --timeout=5s
wait_for 5 "the screen says connecting during the first request" sh -c "tmux -L $tmux_socket capture-pane -p -t silent | grep -q '^connecting\$'"
wait_for 15 "the screen shows the timeout" sh -c "tmux -L $tmux_socket capture-pane -p -t silent | grep -q 'no answer within 5s; retrying every 1s'"
tm send-keys -t silent q
wait_for 10 "top exits on q after a request in flight" test -s "$tmp/silent.rc"
[ "$(cat "$tmp/silent.rc")" = 0 ] || fail "top exited with $(cat "$tmp/silent.rc")"
log "ok: connecting, then the timeout shown; q quit"
log "PASS"
