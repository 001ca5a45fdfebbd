#!/usr/bin/env bash
# tls_auth_e2e.sh HOTKEYD: hotkeyd's --web.config.file (TLS, client certificates, basic auth,
# headers) checked from outside with real clients: curl, openssl s_client, and a real
# Prometheus scraping over HTTPS with basic auth.
#
# Makes a CA, a server certificate (SAN localhost, 127.0.0.1), a client certificate, a client
# certificate from another CA, and a bcrypt hash with htpasswd; then starts hotkeyd with:
#   A. TLS (min TLS12) + basic auth + a response header: HTTPS with the CA works; a wrong
#      password, no credentials, and /-/healthy all get 401; TLS 1.1 is refused; a plain-HTTP
#      client and a silent client on the TLS port get nothing while others are served; a
#      Prometheus with the right credentials has up == 1, one with a wrong password up == 0.
#   B. A again with --web.health-without-auth: /-/healthy and /-/ready answer without
#      credentials, /metrics still does not.
#   C. RequireAndVerifyClientCert: no certificate and a foreign one are refused, ours works.
# Loopback only; every wait is bounded; everything started is stopped on exit (trap).
# Runs in about 15 s. E2E_KEEP=1 keeps the temporary directory.
set -euo pipefail

hotkeyd_bin=$(realpath "${1:?usage: tls_auth_e2e.sh path/to/hotkeyd}")
for t in curl openssl htpasswd prometheus python3; do
  command -v "$t" >/dev/null || { echo "missing tool: $t (tools/install-test-deps.sh installs it)" >&2; exit 1; }
done

source "$(dirname "${BASH_SOURCE[0]}")/../../../lib/e2e.sh"
e2e_init tls-e2e
holder_fd_open=0
e2e_on_exit() {
  if [ "$holder_fd_open" = 1 ]; then exec 5>&- 2>/dev/null; fi
}

# ---------------------------------------------------------------- PKI and password
cd "$tmp"
ossl() { openssl "$@" >>"$tmp/openssl.log" 2>&1 || fail "openssl $1 failed (see openssl.log)"; }
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
ossl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 1 -subj /CN=hotkeyd-test-ca
ossl req -x509 "${ec[@]}" -keyout other-ca.key -out other-ca.crt -days 1 -subj /CN=other-ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
printf 'subjectAltName=DNS:prometheus\nextendedKeyUsage=clientAuth\n' > client.ext
ossl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=localhost
ossl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext -out server.crt
ossl req "${ec[@]}" -keyout client.key -out client.csr -subj /CN=prometheus
ossl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile client.ext -out client.crt
ossl x509 -req -in client.csr -CA other-ca.crt -CAkey other-ca.key -CAcreateserial -days 1 -extfile client.ext -out foreign.crt
password='correct horse battery staple'
hash=$(htpasswd -nbBC 10 prometheus "$password" | cut -d: -f2 | tr -d '\n')
[[ "$hash" == '$2y$10$'* ]] || fail "htpasswd did not make a bcrypt hash"
log "ok: CA, server and client certificates, bcrypt hash"

cat > web-auth.yml <<EOF
# TLS 1.2+ with basic auth (paths relative to this file)
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  min_version: TLS12
http_server_config:
  http2: true
  headers:
    X-Frame-Options: deny
basic_auth_users:
  prometheus: '$hash'
EOF
cat > web-mtls.yml <<EOF
tls_server_config:
  cert_file: $tmp/server.crt
  key_file: $tmp/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: $tmp/ca.crt
EOF

# ---------------------------------------------------------------- hotkeyd helpers
hport=$(free_port tcp)
uport=$(free_port udp)
base="https://127.0.0.1:$hport"
hotkeyd_pid=
start_hotkeyd() {  # start_hotkeyd NAME WEB_CONFIG [FLAGS...]
  local name=$1 config=$2
  shift 2
  "$hotkeyd_bin" "${e2e_keep_user[@]}" --web.listen-address="127.0.0.1:$hport" --udp.listen-address="127.0.0.1:$uport" \
    --web.config.file="$config" "$@" > "$tmp/hotkeyd-$name.log" 2>&1 &
  hotkeyd_pid=$!
  pids+=("$hotkeyd_pid")
  log "hotkeyd ($name) pid $hotkeyd_pid on $base"
}
stop_hotkeyd() {
  kill "$hotkeyd_pid"
  for _ in $(seq 50); do kill -0 "$hotkeyd_pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$hotkeyd_pid" 2>/dev/null && fail "hotkeyd did not stop within 5 s"
  wait "$hotkeyd_pid" 2>/dev/null || true
}
alive() { kill -0 "$hotkeyd_pid" 2>/dev/null || fail "hotkeyd exited (see its log)"; }
# code ARGS...: the HTTP status curl got ("000" when there was no HTTP answer).
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }
expect_code() {  # expect_code WANT WHAT CURL_ARGS...
  local want=$1 what=$2 got
  shift 2
  got=$(code "$@")
  [ "$got" = "$want" ] || fail "$what: HTTP $got, want $want"
  log "ok: $what -> $got"
}
auth=(--cacert ca.crt -u "prometheus:$password")

# ---------------------------------------------------------------- A: TLS + basic auth
start_hotkeyd auth web-auth.yml
ready() { alive; [ "$(code "${auth[@]}" "$base/-/ready")" = 200 ]; }
wait_for 15 "hotkeyd A answers /-/ready over HTTPS with credentials" ready

body=$(curl -sf --max-time 5 "${auth[@]}" "$base/metrics") || fail "HTTPS /metrics with the CA and credentials"
grep -q '^hotkey_build_info' <<<"$body" || fail "/metrics over HTTPS lacks hotkey_build_info"
log "ok: HTTPS /metrics with the CA and credentials"
# gzip, as Prometheus asks for it: the body on the wire is a gzip member holding the same text.
headers=$(curl -sf -D - -o "$tmp/metrics.gz" --max-time 5 "${auth[@]}" -H 'Accept-Encoding: gzip' "$base/metrics") ||
  fail "HTTPS /metrics with Accept-Encoding: gzip"
grep -qi '^content-encoding: gzip' <<<"$headers" || fail "no Content-Encoding: gzip: $headers"
gunzip -c "$tmp/metrics.gz" | grep '^hotkey_build_info' >/dev/null || fail "the gzip body is not the exposition"
[ "$(stat -c %s "$tmp/metrics.gz")" -lt "$(wc -c <<<"$body")" ] || fail "the gzip body is not smaller"
headers=$(curl -s -D - -o /dev/null --max-time 5 "${auth[@]}" -X POST "$base/metrics")
grep -qi '^allow: GET, HEAD' <<<"$headers" || fail "405 lacks Allow: $headers"
log "ok: /metrics gzip-compressed on request; a 405 carries Allow"
expect_code 401 "wrong password" --cacert ca.crt -u "prometheus:wrong" "$base/metrics"
expect_code 401 "unknown user" --cacert ca.crt -u "mallory:$password" "$base/metrics"
expect_code 401 "no credentials" --cacert ca.crt "$base/metrics"
expect_code 401 "/-/healthy without credentials (no --web.health-without-auth)" --cacert ca.crt "$base/-/healthy"
expect_code 401 "/api/v1/top without credentials" --cacert ca.crt "$base/api/v1/top"
headers=$(curl -s -D - -o /dev/null --max-time 5 --cacert ca.crt "$base/metrics")
grep -qi '^www-authenticate: Basic realm="hotkeyd"' <<<"$headers" || fail "401 lacks WWW-Authenticate: $headers"
grep -qi '^x-frame-options: deny' <<<"$headers" || fail "configured header missing: $headers"
log "ok: 401 carries WWW-Authenticate and the configured X-Frame-Options"
grep -q "$password" "$tmp"/hotkeyd-auth.log && fail "the password appears in the log"
expect_code 000 "certificate not trusted without --cacert" -u "prometheus:$password" "$base/metrics"
expect_code 200 "TLS 1.3" "${auth[@]}" --tlsv1.3 "$base/-/healthy"
expect_code 200 "TLS 1.2 only" "${auth[@]}" --tlsv1.2 --tls-max 1.2 "$base/-/healthy"
# TLS 1.1: curl's own OpenSSL refuses it at the default security level, so level 0 is asked
# for; s_client then shows the refusal comes from the server (a protocol_version alert).
expect_code 000 "TLS 1.1 refused (curl --tls-max 1.1)" "${auth[@]}" --tlsv1.1 --tls-max 1.1 \
  --ciphers 'DEFAULT:@SECLEVEL=0' "$base/-/healthy"
s11=$(timeout 5 openssl s_client -connect "127.0.0.1:$hport" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
  </dev/null 2>&1 || true)
grep -qi 'alert protocol version' <<<"$s11" || fail "TLS 1.1 not refused by a protocol_version alert: $s11"
log "ok: the server answers a TLS 1.1 hello with a protocol_version alert"

# A plain-HTTP client on the TLS port gets no HTTP answer, quickly; a client that connects
# and says nothing holds one slot while others are served.
t0=$SECONDS
plain=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$hport/metrics" || true)
[ "$plain" = 000 ] || fail "plain HTTP on the TLS port got HTTP $plain"
[ $((SECONDS - t0)) -lt 5 ] || fail "plain HTTP on the TLS port hung until curl's timeout"
exec 5<>"/dev/tcp/127.0.0.1/$hport"
holder_fd_open=1
expect_code 200 "HTTPS served after a plain-HTTP attempt, beside a silent connection" "${auth[@]}" "$base/metrics"
exec 5>&-
holder_fd_open=0
alive

# ---------------------------------------------------------------- Prometheus over HTTPS
pport=$(free_port tcp)
while [ "$pport" = "$hport" ]; do pport=$(free_port tcp); done
prom="http://127.0.0.1:$pport"
printf '%s' "$password" > password.txt
cat > prometheus.yml <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: hotkeyd
    scheme: https
    tls_config:
      ca_file: $tmp/ca.crt
    basic_auth:
      username: prometheus
      password_file: $tmp/password.txt
    static_configs:
      - targets: ['127.0.0.1:$hport']
  - job_name: hotkeyd-wrong-password
    scheme: https
    tls_config:
      ca_file: $tmp/ca.crt
    basic_auth:
      username: prometheus
      password: wrong
    static_configs:
      - targets: ['127.0.0.1:$hport']
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$pport" > "$tmp/prometheus.log" 2>&1 &
prom_pid=$!
pids+=("$prom_pid")
log "prometheus pid ${pids[-1]} on $prom"
wait_for 20 "prometheus /-/ready" curl -sf --max-time 2 "$prom/-/ready"
up() {  # up JOB: prints the value of up{job=JOB} ("" before the first scrape)
  curl -sfG --max-time 3 "$prom/api/v1/query" --data-urlencode "query=up{job=\"$1\"}" |
    python3 -c 'import json,sys
r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
up_is_one() { [ "$(up hotkeyd)" = 1 ]; }
wait_for 20 "Prometheus scrapes hotkeyd over HTTPS with basic auth: up == 1" up_is_one
# Each job has its first scrape on its own schedule: wait for this one's too.
wrong_is_zero() { [ "$(up hotkeyd-wrong-password)" = 0 ]; }
wait_for 20 "the wrong-password job is down: up == 0" wrong_is_zero
log "ok: the wrong-password job has up == 0"
series=$(curl -sfG --max-time 3 "$prom/api/v1/query" --data-urlencode 'query=hotkey_build_info{job="hotkeyd"}' |
  python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["result"]))')
[ "$series" -ge 1 ] || fail "Prometheus has no hotkey_build_info from the HTTPS scrape"
log "ok: Prometheus stored hotkeyd's metrics"
# Stopped before B: its wrong-password job would go on failing logins from 127.0.0.1 against
# the next hotkeyd on the same port, and failed logins from one address back off every new
# login from it (docs/web-limits.md).
kill "$prom_pid"
for _ in $(seq 100); do kill -0 "$prom_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$prom_pid" 2>/dev/null && fail "prometheus did not stop within 10 s"
stop_hotkeyd

# ---------------------------------------------------------------- B: health without auth
start_hotkeyd health web-auth.yml --web.health-without-auth
ready_noauth() { alive; [ "$(code --cacert ca.crt "$base/-/ready")" = 200 ]; }
wait_for 15 "--web.health-without-auth: /-/ready answers without credentials" ready_noauth
expect_code 200 "--web.health-without-auth: /-/healthy without credentials" --cacert ca.crt "$base/-/healthy"
expect_code 401 "--web.health-without-auth: /metrics still needs credentials" --cacert ca.crt "$base/metrics"
expect_code 200 "--web.health-without-auth: /metrics with credentials" "${auth[@]}" "$base/metrics"
stop_hotkeyd

# ---------------------------------------------------------------- C: client certificates
start_hotkeyd mtls web-mtls.yml
mtls=(--cacert ca.crt --cert client.crt --key client.key)
ready_mtls() { alive; [ "$(code "${mtls[@]}" "$base/-/ready")" = 200 ]; }
wait_for 15 "RequireAndVerifyClientCert: our client certificate is accepted" ready_mtls
expect_code 200 "client certificate: /metrics" "${mtls[@]}" "$base/metrics"
expect_code 000 "no client certificate refused" --cacert ca.crt "$base/metrics"
expect_code 000 "a certificate from another CA refused" --cacert ca.crt --cert foreign.crt --key client.key "$base/metrics"
expect_code 200 "still serving after refusals" "${mtls[@]}" "$base/-/healthy"
stop_hotkeyd

# ---------------------------------------------------------------- D: the file re-read on change
# A password and a certificate rotate without a restart; a broken file keeps the old config.
cp web-auth.yml web-rotate.yml
start_hotkeyd rotate "$tmp/web-rotate.yml"
wait_for 15 "hotkeyd D ready" ready
metric() {  # metric NAME: its value in /metrics (with the credentials in force: auth[@])
  curl -sf --max-time 5 "${auth[@]}" "$base/metrics" | awk -v m="$1" '$1 == m {print $2}'
}
[ "$(metric hotkey_web_config_last_reload_successful)" = 1 ] || fail "web config status not exported as 1"
new_password='tr0ub4dor&3'
new_hash=$(htpasswd -nbBC 10 prometheus "$new_password" | cut -d: -f2 | tr -d '\n')
sed "s|prometheus: '.*'|prometheus: '$new_hash'|" web-auth.yml > web-rotate.yml.new
mv web-rotate.yml.new web-rotate.yml
new_auth=(--cacert ca.crt -u "prometheus:$new_password")
rotated() { [ "$(code "${new_auth[@]}" "$base/-/ready")" = 200 ]; }
wait_for 10 "the new password accepted without a restart" rotated
expect_code 401 "the old password refused after the rotation" "${auth[@]}" "$base/metrics"
auth=("${new_auth[@]}")
# A new certificate at the same path: new connections get it.
ossl req "${ec[@]}" -keyout server2.key -out server2.csr -subj /CN=localhost
ossl x509 -req -in server2.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile server.ext -out server2.crt
serial() { openssl s_client -connect "127.0.0.1:$hport" </dev/null 2>/dev/null | openssl x509 -noout -serial; }
new_serial=$(openssl x509 -noout -serial -in server2.crt)
[ "$(serial)" != "$new_serial" ] || fail "the new certificate is served before the rotation"
cp server2.key server.key.new && cp server2.crt server.crt.new
# Key first, then certificate. A poll that falls between the two finds a pair that does not
# match, which OpenSSL refuses (the old pair stays); the next poll takes the new pair.
mv server.key.new server.key && mv server.crt.new server.crt
cert_rotated() { [ "$(serial)" = "$new_serial" ]; }
wait_for 10 "the rotated certificate served without a restart" cert_rotated
log "ok: password and certificate rotated without a restart"
printf 'basic_auth_users: [\n' >> web-rotate.yml
broken() { [ "$(metric hotkey_web_config_last_reload_successful)" = 0 ]; }
wait_for 10 "a broken web config reported by hotkey_web_config_last_reload_successful 0" broken
expect_code 200 "the previous config stays in force after a broken file" "${auth[@]}" "$base/metrics"
grep -q 'level=error msg="web config reload failed' "$tmp/hotkeyd-rotate.log" ||
  fail "the broken web config is not logged: $(tail -3 "$tmp/hotkeyd-rotate.log")"
log "ok: a broken web config keeps the old one, logged and exported"
stop_hotkeyd

# ---------------------------------------------------------------- a bad file fails start
printf 'tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n' > web-bad.yml
set +e
timeout 10 "$hotkeyd_bin" "${e2e_keep_user[@]}" --web.listen-address="127.0.0.1:$hport" --udp.listen-address="127.0.0.1:$uport" \
  --web.config.file="$tmp/web-bad.yml" > "$tmp/hotkeyd-bad.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "hotkeyd with a missing cert_file: exit $rc, want a start failure"
grep -q 'missing.crt' "$tmp/hotkeyd-bad.log" || fail "the start error does not name the missing file: $(cat "$tmp/hotkeyd-bad.log")"
log "ok: a web config naming a missing certificate fails start: $(head -c 200 "$tmp/hotkeyd-bad.log")"
log "PASS in ${SECONDS}s"
