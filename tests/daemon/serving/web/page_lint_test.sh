#!/usr/bin/env bash
# page_lint_test.sh: the landing page's files (daemon/serving/web/page/: index.html, page.css,
# page.js) pass the linters a web developer runs on plain HTML, CSS and JavaScript, and are
# formatted as prettier formats them:
#   - html-validate (recommended rules; void elements self-closed, as prettier writes them);
#   - stylelint (stylelint-config-standard);
#   - eslint (its recommended rules, browser globals, a classic script);
#   - prettier --check (tests/daemon/serving/web/page/prettier.config.json);
#   - and that each can fail: a copy of the page with one fault per tool must be rejected by it.
# The tools come from the npm registry, pinned by tests/daemon/serving/web/page/package-lock.json
# and installed into the build tree; nothing is fetched while linting.
#
#   page_lint_test.sh --install DIR        npm ci of tests/daemon/serving/web/page/ into DIR
#                                          (skipped when DIR holds that lockfile's install)
#   page_lint_test.sh REPO_ROOT DIR        lints and format-checks, with the tools in DIR
#   page_lint_test.sh --fix REPO_ROOT DIR  rewrites the page's files as prettier formats them
# ctest runs the first as the fixture of the second (web_page_npm_ci). Needs node and npm
# (tools/install-test-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${1:-}" = --install ]; then
  dir=${2:?usage: $0 --install DIR}
  command -v npm >/dev/null || fail "npm not found (apt-get install nodejs, or npm)"
  mkdir -p "$dir"
  if cmp -s "$here/page/package-lock.json" "$dir/installed.lock" && [ -d "$dir/node_modules" ]; then
    echo "ok: linters already installed in $dir"
    exit 0
  fi
  cp "$here/page/package.json" "$here/page/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  cp "$here/page/package-lock.json" "$dir/installed.lock"
  echo "ok: linters installed in $dir"
  exit 0
fi

fix=
if [ "${1:-}" = --fix ]; then
  fix=1
  shift
fi
root=${1:?usage: $0 [--fix] REPO_ROOT DIR}
dir=${2:?usage: $0 [--fix] REPO_ROOT DIR}
bin=$dir/node_modules/.bin
[ -x "$bin/eslint" ] || fail "no linters in $dir: run $0 --install $dir"
# The configs sit beside node_modules, so that what they extend resolves there.
cp "$here/page/eslint.config.mjs" "$here/page/stylelint.config.json" \
  "$here/page/htmlvalidate.json" "$here/page/prettier.config.json" "$dir/"
page=$root/daemon/serving/web/page
files=(index.html page.css page.js)

if [ -n "$fix" ]; then
  (cd "$page" && "$bin/prettier" --config "$dir/prettier.config.json" --write "${files[@]}")
  exit 0
fi

# Each tool over the files of directory $1 (relative names, run from there: eslint's base
# path is the working directory, and a file outside it would be skipped with a warning).
html() { (cd "$1" && "$bin/html-validate" --config "$dir/htmlvalidate.json" index.html); }
css() { (cd "$1" && "$bin/stylelint" --config "$dir/stylelint.config.json" --max-warnings 0 page.css); }
js() { (cd "$1" && "$bin/eslint" --config "$dir/eslint.config.mjs" --max-warnings 0 page.js); }
format() { (cd "$1" && "$bin/prettier" --config "$dir/prettier.config.json" --check "${files[@]}"); }

echo "== html-validate"
html "$page" || fail "index.html (above)"
echo "== stylelint"
css "$page" || fail "page.css (above)"
echo "== eslint"
js "$page" || fail "page.js (above)"
echo "== prettier --check"
format "$page" || fail "not formatted as prettier formats it: run $0 --fix $root $dir"

echo "== each tool rejects a broken copy"
tmp=$(mktemp -d "$dir/run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
broken() {  # broken NAME: a fresh copy of the page in $tmp/NAME
  rm -rf "${tmp:?}/$1"
  cp -r "$page" "$tmp/$1"
  echo "$tmp/$1"
}
b=$(broken html)
sed -i 's|<h1>hotkeyd</h1>|<h1>hotkeyd</h2>|' "$b/index.html"
if html "$b" >"$tmp/log" 2>&1; then fail "html-validate accepted a mismatched end tag"; fi
b=$(broken css)
printf 'h1 {\n  colr: red;\n}\n' >>"$b/page.css"
if css "$b" >"$tmp/log" 2>&1; then fail "stylelint accepted an unknown property"; fi
b=$(broken js)
printf 'undefinedFunction();\n' >>"$b/page.js"
if js "$b" >"$tmp/log" 2>&1; then fail "eslint accepted a call of an undefined name"; fi
b=$(broken format)
printf 'const   badlyFormatted = 1\n' >>"$b/page.js"
if format "$b" >"$tmp/log" 2>&1; then fail "prettier --check accepted a badly formatted line"; fi
echo "ok   every broken copy rejected"
echo "== the landing page's files are lint-clean and formatted"
