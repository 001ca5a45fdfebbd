#!/bin/sh
# shorten-for.sh: print a copy of a Prometheus rule file with every `for:` and
# `keep_firing_for:` duration replaced.
#
# Usage: shorten-for.sh RULES_FILE DURATION > shortened.rules.yml
#   e.g. shorten-for.sh deploy/prometheus/hotkeyd.rules.yml 5s
#
# Why: the shipped rules carry production `for:` values (minutes); a live end-to-end test
# against a real Prometheus cannot wait that long. Rather than keep a second, drifting copy
# of the rules, tests derive one at run time from the shipped file. Only lines whose first
# non-blank token is `for:` or `keep_firing_for:` (how long a condition must hold before an
# alert fires, and how long a firing alert outlives its condition) are rewritten, keeping
# their indentation; expressions (and so their range windows), labels and annotations are
# untouched. `promtool test rules` simulates time and does not need this.
# Cost: one sed pass. Portable POSIX sh + sed (no GNU extensions).
set -eu

if [ "$#" -ne 2 ]; then
  echo "usage: $0 RULES_FILE DURATION   (DURATION like 5s, 30s, 1m)" >&2
  exit 2
fi
file=$1
duration=$2
case "$duration" in
  *[!0-9smhdwy]* | "" | [!0-9]*)
    echo "$0: bad duration '$duration' (want e.g. 5s, 1m)" >&2
    exit 2 ;;
esac
if [ ! -r "$file" ]; then
  echo "$0: cannot read '$file'" >&2
  exit 2
fi
sed -e "s/^\([[:space:]]*\)for:[[:space:]]*[0-9][0-9smhdwy]*[[:space:]]*\$/\1for: $duration/" \
    -e "s/^\([[:space:]]*\)keep_firing_for:[[:space:]]*[0-9][0-9smhdwy]*[[:space:]]*\$/\1keep_firing_for: $duration/" \
    "$file"
