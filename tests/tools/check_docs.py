#!/usr/bin/python3
"""Checks the repository's documents, so that a clone reads them whole and current.

usage: check_docs.py ROOT        check the repository at ROOT; exit 1 listing every problem
       check_docs.py --self-test build small trees that break each rule and check that each is
                                 reported, and that a clean tree passes

Rules:
- every relative link in README.md, docs/**/*.md and lessons/README.md resolves to a file or
  directory inside the repository, and a '#anchor' into a Markdown file names one of its headings;
- README.md is at most 150 lines (it is for users; detail goes to docs/);
- no tracked file tells development history (work periods, issue numbers) or points to a design
  document outside the repository.
"""
import os
import re
import subprocess
import sys
import tempfile

MAX_README_LINES = 150
# Built from pieces so that this file does not match itself.
HISTORY = re.compile(
    "|".join([
        # a word, not part of an identifier such as an API's createCDPSession
        r"(?<![A-Za-z])sess" + "ion",
        r"issue ?#?[0-9]",
        r"\bspr" + r"int\b",
        "before any " + "of this",
        "twen" + "tieth",
        "nine" + "teenth",
        "shared/" + "DESIGN",
    ]),
    re.IGNORECASE,
)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked_files(root):
    """The files git tracks under root, or every file outside .git and build trees without git."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return [f for f in files if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out = set()
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence and line.startswith("#"):
                out.add(slug(line.lstrip("#")))
    return out


def doc_files(root, files):
    return [f for f in files if f.endswith(".md") and
            (f == "README.md" or f.startswith("docs/") or f == "lessons/README.md")]


def check_links(root, md):
    problems = []
    path = os.path.join(root, md)
    real_root = os.path.realpath(root)
    in_fence = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for no, line in enumerate(lines, 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, https:, mailto: ...
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            where = f"{md}:{no}: link '{target}'"
            real = os.path.realpath(dest)
            if not (real == real_root or real.startswith(real_root + os.sep)):
                problems.append(f"{where} leaves the repository")
            elif not os.path.exists(dest):
                problems.append(f"{where} does not resolve")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{where}: no heading '#{anchor}' in {os.path.relpath(dest, root)}")
    return problems


def check(root):
    problems = []
    files = tracked_files(root)
    readme = os.path.join(root, "README.md")
    if not os.path.isfile(readme):
        problems.append("README.md: missing")
    else:
        with open(readme, encoding="utf-8") as f:
            n = len(f.read().rstrip("\n").split("\n"))
        if n > MAX_README_LINES:
            problems.append(f"README.md: {n} lines, at most {MAX_README_LINES}")
    for md in doc_files(root, files):
        problems += check_links(root, md)
    for rel in files:
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # binary files (images, fonts) carry no prose
        for no, line in enumerate(text.split("\n"), 1):
            m = HISTORY.search(line)
            if m:
                problems.append(f"{rel}:{no}: tells history or points outside ('{m.group(0)}')")
    return problems


def self_test():
    """Each rule, broken on its own in a small tree, must be reported; a clean tree must pass."""
    clean = {
        "README.md": "# X\n\n[design](docs/design.md), [formats](docs/design.md#formats)\n",
        "docs/design.md": "# Design\n\n## Formats\n\n[back](../README.md)\n",
    }
    cases = {
        "clean": ({}, None),
        "broken link": ({"README.md": "[gone](docs/nothing.md)\n"}, "does not resolve"),
        "broken anchor": ({"README.md": "[a](docs/design.md#nowhere)\n"}, "no heading"),
        "link outside": ({"docs/design.md": "# D\n[up](../../elsewhere.md)\n"},
                         "leaves the repository"),
        "long README": ({"README.md": "line\n" * (MAX_README_LINES + 1)}, "lines, at most"),
        "history in code": ({"engine/a.cpp": "// as the " + "nine" + "teenth sess" +
                             "ion measured\n"}, "tells history"),
        "issue number": ({"tests/t.cpp": "// Iss" + "ue 7: the target\n"}, "tells history"),
        "outside design": ({"docs/x.md": "see ../shared/" + "DESIGN.md\n"}, "tells history"),
    }
    failures = []
    for name, (change, expect) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for rel, text in {**clean, **change}.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)) or d, exist_ok=True)
                with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            problems = check(d)
            if expect is None and problems:
                failures.append(f"{name}: expected no problem, got {problems}")
            if expect is not None and not any(expect in p for p in problems):
                failures.append(f"{name}: expected a problem with '{expect}', got {problems}")
    for f in failures:
        print(f"check_docs self-test: {f}", file=sys.stderr)
    if not failures:
        print(f"check_docs self-test: {len(cases)} cases behave")
    return 1 if failures else 0


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    if argv[1] == "--self-test":
        return self_test()
    problems = check(argv[1])
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("check_docs: README.md, docs/ and every tracked file pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
