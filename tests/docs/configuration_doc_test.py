#!/usr/bin/env python3
"""configuration_doc_test.py: docs/configuration.md says what `hotkeyd --help-all` says.

Usage: configuration_doc_test.py --hotkeyd BIN --doc docs/configuration.md
                                 --rules config/example-rules.yml [--docs FILE ...] [--write]

The flag tables and the rules file of docs/configuration.md, between its
`<!-- generated: ... -->` and `<!-- end generated -->` lines, are generated from the binary's
`--help-all` (every flag, its section, default and help text; a flag `--help` does not show
is marked as tuning) and from config/example-rules.yml (every key with its default). The
test regenerates that part and fails, with a diff, when the page differs: a flag added,
removed or changed without the page. `--write` rewrites the page's generated part instead.

It fails when the rules file on the page and the binary disagree on a key: for each map
of the example (the top level, `alert`, `export`, `feed`, and the items of `thresholds`,
`feed.pin` and `feed.block`) it gives hotkeyd a rules file with an unknown key there and
reads the keys the binary knows from its refusal (`unknown key (known here: ...)`). A key the
binary knows that the example lacks, or a key of the example the binary does not know, fails
it. The items of a list count the keys the example gives them plus those its list's own
comment names as `key:` (`block:  # ... (key:, prefix: or glob:)`); a top-level key the binary
knows only to refuse (`cluster:`, refused with the `--cluster.*` flags to use) must be said
so in the page's prose.

It also fails when README.md or a docs/*.md page (--docs) names a dotted hotkeyd flag
(`--web.listen-address`, `--tap.port`, ...) that `--help-all` does not list, unless hotkeyd
itself refuses that flag as one that moved to the rules file (the page may say so).
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

import yaml

BEGIN = ("<!-- generated: tests/docs/configuration_doc_test.py --write regenerates this part "
         "from hotkeyd --help-all and config/example-rules.yml; do not edit it by hand -->")
END = "<!-- end generated -->"
FLAG_LINE = re.compile(r"^  (?:-\w, )?--([a-z][a-z0-9.-]*)(?:=(.*))?$")
# Dotted flags of other programs that the pages name (amtool's, in docs/alerting.md).
OTHER_PROGRAMS_FLAGS = {"template.data", "template.glob", "template.text"}
DOTTED_FLAG = re.compile(r"(?<![\w-])--([a-z]+\.[a-z][a-z0-9.-]*[a-z0-9])")


def run_help(binary, flag):
    r = subprocess.run([binary, flag], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit(f"FAIL: {binary} {flag} exited {r.returncode}: {r.stderr}")
    return r.stdout


def parse_help(text):
    """[(section, [(name, default or None, description)])] in the order printed."""
    sections = []
    flag = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" ") and line.endswith(":") and not line.startswith("usage"):
            sections.append((line[:-1], []))
            flag = None
            continue
        if not sections:
            continue  # the preamble
        m = FLAG_LINE.match(line)
        if m:
            flag = [m.group(1), m.group(2), []]
            sections[-1][1].append(flag)
            continue
        if flag is not None and line.startswith("        "):
            flag[2].append(line.strip())
    out = []
    for name, flags in sections:
        rows = []
        for fname, default, desc in flags:
            text = " ".join(desc)
            m = re.search(r"\s*\(default: ([^)]*)\)$", text)
            if m and default is None:
                default = m.group(1)
                text = text[:m.start()]
            rows.append((fname, default, text))
        out.append((name, rows))
    return out


def cell(text):
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def generate(help_all, help_short, rules_text):
    shown = {f for _, rows in parse_help(help_short) for f, _, _ in rows}
    lines = [BEGIN, "", "## Flags", ""]
    for section, rows in parse_help(help_all):
        lines += [f"### {section}", "", "| flag | default | what |", "|---|---|---|"]
        for name, default, desc in rows:
            flag = f"`--{name}`" + ("" if name in shown else " (tuning)")
            if default is None:
                d = ""
            elif default == '""':
                d = "(empty)"
            else:
                d = f"`{default}`"
            lines.append(f"| {flag} | {d} | {cell(desc)} |")
        lines.append("")
    lines += ["## The rules file", "",
              "`config/example-rules.yml`, with every key and its default:", "", "```yaml"]
    lines += rules_text.rstrip("\n").split("\n")
    lines += ["```", "", END]
    return "\n".join(lines) + "\n"


def split_doc(text):
    """(before, generated part, after)."""
    if BEGIN not in text or END not in text:
        sys.exit(f"FAIL: the page lacks the generated part's markers:\n  {BEGIN}\n  {END}")
    before, rest = text.split(BEGIN, 1)
    part, after = rest.split(END, 1)
    return before, BEGIN + part + END + "\n", after.lstrip("\n")


def moved_to_rules_file(binary, flag):
    r = subprocess.run([binary, f"--{flag}=1", "--check-config"], capture_output=True,
                       text=True, timeout=30)
    return r.returncode != 0 and "moved to the rules file" in (r.stdout + r.stderr)


PROBE = "zz_undocumented_probe"


def check_config(binary, rules_text):
    """What `hotkeyd --check-config` says of a rules file holding `rules_text`."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write(rules_text)
    try:
        r = subprocess.run([binary, "--check-config", f"--config.file={f.name}"],
                           capture_output=True, text=True, timeout=30)
    finally:
        os.unlink(f.name)
    return r.stdout + r.stderr


def known_keys(binary, rules_text):
    """The keys hotkeyd knows where `rules_text` puts PROBE: from its refusal's
    `unknown key (known here: a, b)`."""
    said = check_config(binary, rules_text)
    m = re.search(r"unknown key \(known here: ([^)]*)\)", said)
    if not m:
        sys.exit(f"FAIL: hotkeyd did not name the keys it knows for:\n{rules_text}\n{said}")
    return set(m.group(1).split(", "))


def list_comment_keys(rules_text, name):
    """The item keys the comment on the line of list `name:` names as `key:`."""
    for line in rules_text.splitlines():
        m = re.match(rf"^\s*{name}:\s*#(.*)$", line)
        if m:
            return set(re.findall(r"(?<![\w.])([a-z_]+):", m.group(1)))
    return set()


def rules_key_failures(binary, rules_text, page_text):
    """Where the example rules file and hotkeyd's rules parser disagree on a key."""
    example = yaml.safe_load(rules_text)
    failures = []

    def probe(path):
        """A rules file with PROBE at `path` (names; "[]" for a list's item)."""
        node = {PROBE: 1}
        for part in reversed(path):
            node = [node] if part == "[]" else {part: node}
        return yaml.safe_dump(node)

    def check(path, documented):
        where = ".".join(p for p in path if p != "[]") or "the top level"
        if path and path[-1] == "[]":
            where += " items"
        known = known_keys(binary, probe(path))
        for key in sorted(known - documented):
            if not path:
                refusal = check_config(binary, yaml.safe_dump({key: {"shards": 1}}))
                if "--cluster." in refusal and f"`{key}:`" in page_text:
                    continue  # known only to be refused, as the page says
            failures.append(f"rules file: hotkeyd knows {where} key `{key}`, which the "
                            "example rules file does not document")
        for key in sorted(documented - known):
            failures.append(f"rules file: the example documents {where} key `{key}`, which "
                            "hotkeyd does not know")

    def walk(path, node):
        if isinstance(node, dict):
            check(path, set(node))
            for k, v in node.items():
                walk(path + [k], v)
        elif isinstance(node, list) and node and all(isinstance(i, dict) for i in node):
            keys = set().union(*node) | list_comment_keys(rules_text, path[-1])
            check(path + ["[]"], keys)
            for item in node:
                for k, v in item.items():
                    walk(path + ["[]", k], v)

    walk([], example)
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hotkeyd", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--docs", nargs="*", default=[], help="pages whose --flags must exist")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    help_all = run_help(args.hotkeyd, "--help-all")
    with open(args.rules, encoding="utf-8") as f:
        rules_text = f.read()
    want = generate(help_all, run_help(args.hotkeyd, "--help"), rules_text)
    with open(args.doc, encoding="utf-8") as f:
        doc = f.read()
    before, got, after = split_doc(doc)
    failures = []
    if args.write:
        with open(args.doc, "w", encoding="utf-8") as f:
            f.write(before + want + ("\n" + after if after else ""))
        print(f"wrote {args.doc}")
    elif got != want:
        diff = "".join(difflib.unified_diff(got.splitlines(True), want.splitlines(True),
                                            "page", "--help-all"))
        failures.append(f"{args.doc} differs from hotkeyd --help-all and {args.rules}; run "
                        f"`python3 tests/docs/configuration_doc_test.py --hotkeyd "
                        f"build/daemon/hotkeyd --doc {args.doc} --rules {args.rules} "
                        f"--write`:\n{diff}")
    failures += rules_key_failures(args.hotkeyd, rules_text, doc)
    known = {f for _, rows in parse_help(help_all) for f, _, _ in rows}
    flags = sum(len(rows) for _, rows in parse_help(help_all))
    print(f"--help-all lists {flags} flags in {len(parse_help(help_all))} sections")
    for page in dict.fromkeys([args.doc] + args.docs):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for name in sorted(set(DOTTED_FLAG.findall(text))):
            if name in known or name in OTHER_PROGRAMS_FLAGS:
                continue
            if moved_to_rules_file(args.hotkeyd, name):
                print(f"{page}: --{name} is refused as moved to the rules file, as it says")
                continue
            failures.append(f"{page} names --{name}, which hotkeyd --help-all does not list")
    for f in failures:
        print(f"FAIL {f}")
    if not failures:
        print("ok: the configuration page is --help-all's, and every --flag named exists")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
