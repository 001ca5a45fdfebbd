#!/usr/bin/env python3
"""links_test.py: every relative link of the README and the docs pages leads somewhere.

Usage: links_test.py --repo DIR PAGE.md ...

For each Markdown link or image `[text](target)` in each page whose target is not a URL
(http:, https:, mailto:): the file or folder exists, relative to the page; and a `#anchor`
(on another Markdown file, or on the page itself) is one of that file's headings, as GitHub
makes heading anchors (lower case, punctuation dropped, spaces to hyphens, -1, -2 ... for
repeats). Links inside code spans and fenced blocks are not links.

PENDING lists files that other work adds alongside these pages: a link to one of exactly
those paths is reported and skipped while the file does not exist, and checked once it
does.
"""

import argparse
import os
import re
import sys

PENDING = {
    "docs/feed.md",
    "docs/history.md",
    "docs/alerting.md",
    "docs/top.txt",
    "clients/python/README.md",
    "LICENSE",
}
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*```")


def prose(text):
    """The page without fenced blocks and code spans."""
    out, in_fence = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            out.append(re.sub(r"``.*?``|`[^`]*`", "", line))
    return "\n".join(out)


def anchors(path):
    """The heading anchors GitHub gives a Markdown file."""
    seen, out, in_fence = {}, set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if in_fence or not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    out.update(re.findall(r'<a\s+(?:id|name)="([^"]+)"', open(path, encoding="utf-8").read()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("pages", nargs="+")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    failures, checked, pending = [], 0, 0
    for page in args.pages:
        page = os.path.abspath(page)
        where = os.path.relpath(page, repo)
        with open(page, encoding="utf-8") as f:
            text = prose(f.read())
        for target in LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(full, repo)
            checked += 1
            if not os.path.exists(full):
                if rel in PENDING:
                    print(f"pending: {where} links {target}, which is not there yet")
                    pending += 1
                    continue
                failures.append(f"{where}: {target}: no such file ({rel})")
                continue
            if anchor and full.endswith(".md") and anchor not in anchors(full):
                failures.append(f"{where}: {target}: {rel} has no heading #{anchor}")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{checked} relative links in {len(args.pages)} pages, {len(failures)} broken, "
          f"{pending} to files not there yet")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
