#!/usr/bin/env bash
# top_tls_auth_e2e.sh HOTKEYD: `hotkeyd top --once` against a hotkeyd --demo behind TLS and
# basic auth (--web.config.file):
#   - https:// with --ca-file and the password from HOTKEYD_WEB_PASSWORD: the demo's keys;
#     the same with --web.password-file;
#   - without --ca-file the self-made CA is not trusted: exit 1, "certificate verify failed";
#     --insecure-skip-verify connects anyway;
#   - a certificate that does not name the URL's host ([::1], when the machine has IPv6):
#     refused;
#   - a wrong password: exit 1 and the 401 shown; plain HTTP to the TLS port: exit 1;
#   - the password never in the output.
# Loopback only; every wait is bounded; everything started is stopped on exit. About 5 s.
set -euo pipefail

hotkeyd_bin=$(realpath "${1:?usage: top_tls_auth_e2e.sh path/to/hotkeyd}")
for t in curl openssl htpasswd; do
  command -v "$t" >/dev/null || { echo "missing tool: $t" >&2; exit 1; }
done

source "$(dirname "${BASH_SOURCE[0]}")/../../../lib/e2e.sh"
e2e_init top-tls

cd "$tmp"
ossl() { openssl "$@" >>"$tmp/openssl.log" 2>&1 || fail "openssl $1 failed (see openssl.log)"; }
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
ossl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 1 -subj /CN=hotkeyd-top-test-ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
ossl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=localhost
ossl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext -out server.crt
password='correct horse battery staple'
hash=$(htpasswd -nbBC 10 sre "$password" | cut -d: -f2 | tr -d '\n')
cat > web.yml <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  sre: '$hash'
EOF
printf '%s\n' "$password" > password.txt

hport=$(free_port tcp)
uport=$(free_port udp)
url="https://127.0.0.1:$hport"
# Also on [::1] when the machine has IPv6, whose address the certificate does not name.
also_ipv6=()
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
  also_ipv6=(--web.listen-address="[::1]:$hport")
fi
# e2e_keep_user keeps the user: as root, the switch to an unprivileged user could not read $tmp.
"$hotkeyd_bin" "${e2e_keep_user[@]}" --demo --web.listen-address="127.0.0.1:$hport" \
  --udp.listen-address="127.0.0.1:$uport" --web.config.file=web.yml "${also_ipv6[@]}" > "$tmp/hotkeyd.log" 2>&1 &
pids+=($!)
ready() { curl -sf --max-time 2 --cacert ca.crt -u "sre:$password" "$url/-/ready"; }
wait_for 15 "hotkeyd answers over HTTPS with credentials" ready

# top_once NAME ARGS...: runs `hotkeyd top --once ARGS`; output in NAME.out, status in $rc.
top_once() {
  local name=$1
  shift
  rc=0
  "$hotkeyd_bin" top --once "$@" > "$tmp/$name.out" 2>&1 || rc=$?
}
shows_keys() {
  top_once ok --url="$url" --ca-file=ca.crt --web.username=sre
  [ "$rc" = 0 ] && grep -q ' post:viral:likes$' "$tmp/ok.out"
}
export HOTKEYD_WEB_PASSWORD="$password"
wait_for 15 "top over HTTPS with --ca-file and HOTKEYD_WEB_PASSWORD shows the demo's keys" shows_keys
unset HOTKEYD_WEB_PASSWORD

top_once file --url="$url" --ca-file=ca.crt --web.username=sre --web.password-file=password.txt
[ "$rc" = 0 ] && grep -q ' post:viral:likes$' file.out || fail "--web.password-file: rc $rc: $(cat file.out)"
log "ok: --web.password-file"

top_once untrusted --url="$url" --web.username=sre --web.password-file=password.txt
[ "$rc" = 1 ] || fail "an untrusted certificate gave rc $rc: $(cat untrusted.out)"
grep -q "certificate verify failed" untrusted.out || fail "no 'certificate verify failed': $(cat untrusted.out)"
log "ok: a certificate from an unknown CA is refused: $(cat untrusted.out)"

top_once insecure --url="$url" --insecure-skip-verify --web.username=sre --web.password-file=password.txt
[ "$rc" = 0 ] && grep -q ' post:viral:likes$' insecure.out || fail "--insecure-skip-verify: rc $rc: $(cat insecure.out)"
log "ok: --insecure-skip-verify connects"

if [ "${#also_ipv6[@]}" -gt 0 ]; then
  top_once name --url="https://[::1]:$hport" --ca-file=ca.crt --web.username=sre --web.password-file=password.txt
  [ "$rc" = 1 ] || fail "a certificate without the URL's address gave rc $rc: $(cat name.out)"
  grep -q "certificate verify failed" name.out || fail "no 'certificate verify failed': $(cat name.out)"
  log "ok: a certificate that does not name the URL's host is refused"
  top_once name-insecure --url="https://[::1]:$hport" --insecure-skip-verify --web.username=sre \
    --web.password-file=password.txt
  [ "$rc" = 0 ] || fail "--insecure-skip-verify to [::1] gave rc $rc: $(cat name-insecure.out)"
else
  log "no IPv6 loopback: the name check is not tried"
fi

printf 'wrong\n' > wrong.txt
top_once wrong --url="$url" --ca-file=ca.crt --web.username=sre --web.password-file=wrong.txt
[ "$rc" = 1 ] || fail "a wrong password gave rc $rc: $(cat wrong.out)"
grep -q "^HTTP 401: " wrong.out || fail "no 'HTTP 401' line: $(cat wrong.out)"
log "ok: a wrong password shows the 401"

top_once plain --url="http://127.0.0.1:$hport" --timeout=1s
[ "$rc" = 1 ] || fail "plain HTTP to the TLS port gave rc $rc: $(cat plain.out)"
log "ok: plain HTTP to the TLS port fails: $(cat plain.out)"

grep -q "$password" ./*.out && fail "the password appears in top's output"
log "PASS"
