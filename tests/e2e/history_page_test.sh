#!/bin/sh
# history_page_test.sh: runs history_page_test.py with a Python that has the websocket module.
# Debian's python3-websocket lives in /usr/bin/python3's dist-packages; a python3 earlier in
# PATH (pyenv, a virtualenv) may not see it, so that one is tried second.
here=$(cd "$(dirname "$0")" && pwd)
for py in /usr/bin/python3 python3; do
  if "$py" -c 'import websocket' 2>/dev/null; then
    exec "$py" "$here/history_page_test.py" "$@"
  fi
done
echo "history_page_test.sh: no python3 with the websocket module (apt-get install python3-websocket;" \
  "tools/install-test-deps.sh does)" >&2
exit 1
