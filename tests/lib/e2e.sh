# e2e.sh: the scaffolding the shell end-to-end tests share. Source it, then call e2e_init:
#
#   set -euo pipefail
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e.sh"
#   e2e_init my-test          # log lines read "[my-test HH:MM:SS] ..."
#
# It provides:
#   $tmp           a fresh directory; removed on success unless E2E_KEEP=1, kept (and the
#                  tail of every *.log in it printed) on failure
#   pids           append every background process: on exit each gets SIGTERM, then
#                  SIGKILL after 5 s, so nothing is ever left running
#   e2e_on_exit    a function the script may define; the EXIT trap runs it first
#   log, fail      progress and failure lines on the real stdout (fd 3)
#   free_port tcp|udp      a loopback port that was free a moment ago
#   wait_for SECONDS WHAT COMMAND...   retries COMMAND until it succeeds or time is up;
#                  its output goes to $tmp/checks.log, the last one is shown on a timeout
#   e2e_keep_user  flags that keep this process's user: --run-as=root when root, since
#                  hotkeyd started as root otherwise switches to an unprivileged user, who
#                  cannot read $tmp (tests/hardening/privilege_drop_e2e.py tests the switch)
# fds 3 and 4 stay the real stdout and stderr, so messages from inside silenced commands
# (and from the EXIT trap they may trigger) still reach the user.

e2e_init() {
  e2e_name=$1
  exec 3>&1 4>&2
  tmp=$(mktemp -d "/tmp/hotkeyd-$e2e_name.XXXXXX")
  e2e_keep_user=()
  if [ "$(id -u)" = 0 ]; then e2e_keep_user=(--run-as=root); fi
  pids=()
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

e2e_cleanup() {
  local rc=$?
  if declare -F e2e_on_exit >/dev/null; then e2e_on_exit || true; fi
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    echo "---- FAILED (rc=$rc); logs in $tmp" >&4
    local f
    for f in "$tmp"/*.log; do
      if [ -f "$f" ]; then
        echo "---- $f (last 30 lines)" >&4
        tail -n 30 "$f" >&4
      fi
    done
  elif [ "${E2E_KEEP:-0}" != 1 ]; then
    rm -rf "$tmp"
  fi
  exit "$rc"
}

log() { printf '[%s %s] %s\n' "$e2e_name" "$(date +%T)" "$*" >&3; }
fail() {
  log "FAIL: $*"
  exit 1
}

free_port() {
  python3 -c 'import socket,sys
s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM)
s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}

wait_for() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >"$tmp/last-check.out" 2>&1; do
    cat "$tmp/last-check.out" >>"$tmp/checks.log"
    if [ "$SECONDS" -ge "$deadline" ]; then
      sed 's/^/    /' "$tmp/last-check.out" >&4
      fail "timed out after ${secs}s waiting for: $what"
    fi
    sleep 0.25
  done
  log "ok: $what"
}

# e2e_start_hotkeyd BIN URL FLAGS...: starts hotkeyd with FLAGS (log in $tmp/hotkeyd.log),
# adds it to pids, sets hotkeyd_pid, and waits until URL/-/ready answers; fails at once if
# the daemon exits during start.
e2e_start_hotkeyd() {
  local bin=$1
  e2e_hotkeyd_url=$2
  shift 2
  "$bin" "${e2e_keep_user[@]}" "$@" >"$tmp/hotkeyd.log" 2>&1 &
  hotkeyd_pid=$!
  pids+=("$hotkeyd_pid")
  log "hotkeyd pid $hotkeyd_pid at $e2e_hotkeyd_url"
  wait_for 15 "hotkeyd /-/ready" e2e_hotkeyd_ready
}

e2e_hotkeyd_ready() {
  kill -0 "$hotkeyd_pid" 2>/dev/null || fail "hotkeyd exited at start (see hotkeyd.log)"
  curl -sf --max-time 2 "$e2e_hotkeyd_url/-/ready"
}
