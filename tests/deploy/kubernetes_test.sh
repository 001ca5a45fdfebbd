#!/usr/bin/env bash
# kubernetes_test.sh: every object in deploy/kubernetes/*.yaml is valid against the
# Kubernetes API schemas, with real validators from the npm registry (no cluster needed):
#   - kubernetes-models (Kubernetes 1.27 OpenAPI schemas) and
#     @kubernetes-models/prometheus-operator (the monitoring.coreos.com CRDs, so PodMonitor
#     too), whose ajv validators check types, required fields, enums, patterns and formats;
#   - tsc (TypeScript) over the same packages' interfaces: no field the API does not have
#     (what `kubectl apply --validate=strict` rejects; the schemas alone allow it);
#   - and that both can fail: a broken copy of the manifests must be rejected by each.
# The schemas are inside the packages: nothing is fetched while validating.
#
#   kubernetes_test.sh --install DIR      npm ci of tests/deploy/kubernetes/ into DIR
#                                         (skipped when DIR holds that lockfile's install)
#   kubernetes_test.sh REPO_ROOT DIR      validates, with the packages installed in DIR
# ctest runs the first as the fixture of the second (deploy_kubernetes_npm_ci). Needs node
# and npm (the nodejs package of this machine ships npm; on plain Debian 12 also `npm`),
# python3-yaml.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${1:-}" = --install ]; then
  dir=${2:?usage: $0 --install DIR}
  command -v npm >/dev/null || fail "npm not found (apt-get install nodejs, or npm)"
  mkdir -p "$dir"
  if cmp -s "$here/kubernetes/package-lock.json" "$dir/installed.lock" && [ -d "$dir/node_modules" ]; then
    echo "ok: validators already installed in $dir"
    exit 0
  fi
  cp "$here/kubernetes/package.json" "$here/kubernetes/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  cp "$here/kubernetes/package-lock.json" "$dir/installed.lock"
  echo "ok: validators installed in $dir"
  exit 0
fi

root=${1:?usage: $0 REPO_ROOT DIR}
dir=${2:?usage: $0 REPO_ROOT DIR}
[ -d "$dir/node_modules/kubernetes-models" ] || fail "no validators in $dir: run $0 --install $dir"
cp "$here/kubernetes/validate.js" "$here/kubernetes/strict.js" "$here/kubernetes/models.js" "$dir/"
tmp=$(mktemp -d "$dir/run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# YAML -> JSON: [{source, doc}] for every non-empty document. BREAK=1 breaks a copy: a
# wrong type in each object, and an unknown field in each.
to_json() {
  python3 - "$@" <<'PY'
import json, os, sys
import yaml
out = []
for path in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(path)):
        if doc:
            out.append({"source": os.path.basename(path), "doc": doc})
if os.environ.get("BREAK") == "type":
    for o in out:
        o["doc"]["metadata"]["labels"] = ["not", "a", "map"]
if os.environ.get("BREAK") == "field":
    for o in out:
        o["doc"]["metadata"]["lables"] = {"typo": "yes"}
json.dump(out, sys.stdout)
PY
}

manifests=("$root"/deploy/kubernetes/*.yaml)
tsc=("$dir/node_modules/.bin/tsc" --noEmit --strict --skipLibCheck --module node16
     --moduleResolution node16 --target es2020)

echo "== schemas (kubernetes-models, prometheus-operator CRDs)"
to_json "${manifests[@]}" >"$tmp/objects.json"
node "$dir/validate.js" <"$tmp/objects.json" || fail "schema validation (above)"

echo "== no unknown fields (tsc over the models' interfaces)"
node "$dir/strict.js" "$tmp/objects.ts" <"$tmp/objects.json"
"${tsc[@]}" "$tmp/objects.ts" || fail "unknown or mistyped fields (above)"
echo "ok   $(grep -c '^export const' "$tmp/objects.ts") objects"

echo "== the validators reject broken copies"
BREAK=type to_json "${manifests[@]}" >"$tmp/broken-type.json"
rejected=$(node "$dir/validate.js" <"$tmp/broken-type.json" | grep -c '^FAIL' || true)
[ "$rejected" -eq "$(grep -c '^export const' "$tmp/objects.ts")" ] ||
  fail "the schema validator rejected $rejected of the objects with labels of the wrong type"
BREAK=field to_json "${manifests[@]}" >"$tmp/broken-field.json"
node "$dir/strict.js" "$tmp/broken.ts" <"$tmp/broken-field.json"
if "${tsc[@]}" "$tmp/broken.ts" >"$tmp/tsc.log" 2>&1; then
  fail "tsc accepted objects with an unknown metadata field"
fi
[ "$(grep -c "lables.* does not exist" "$tmp/tsc.log")" -eq "$(grep -c '^export const' "$tmp/broken.ts")" ] ||
  fail "tsc did not reject every object with an unknown field: $(cat "$tmp/tsc.log")"
echo "ok   every broken object rejected"
echo "== all Kubernetes manifests valid"
