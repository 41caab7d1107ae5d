#!/usr/bin/env python3
"""Checks that code blocks marked as copies of files in a Markdown file equal those files.

A block is marked by an HTML comment on the line before its fence:

    <!-- copy of: clients/python/examples/quickstart.py -->
    ```python
    ...
    ```

The files are the ones the clients' tests run, so a README example that drifts from
what is tested fails here. `--write` rewrites the blocks from the files instead.
Usage: tools/readme-copies.py [--write] FILE.md...
"""

import pathlib
import re
import sys

MARK = re.compile(r"^<!-- copy of: (?P<path>\S+) -->$")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def blocks(lines):
    """Yields (path, first content line, end line) for every marked block."""
    i = 0
    while i < len(lines):
        mark = MARK.match(lines[i].rstrip("\n"))
        if mark and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            start = i + 2
            end = start
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            if end == len(lines):
                raise SystemExit(f"unclosed code block after line {i + 1}")
            yield mark.group("path"), start, end
            i = end
        elif mark:
            raise SystemExit(f"line {i + 1}: a copy mark must be followed by a fence")
        i += 1


def main(argv):
    write = "--write" in argv
    files = [a for a in argv if a != "--write"]
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for md in files:
        path = pathlib.Path(md)
        lines = path.read_text().splitlines(keepends=True)
        found = list(blocks(lines))
        if not found:
            print(f"{md}: no '<!-- copy of: … -->' blocks", file=sys.stderr)
            failed = True
        differing = 0
        # From the end, so earlier line numbers stay valid while rewriting.
        for source, start, end in reversed(found):
            want = (ROOT / source).read_text()
            if not want.endswith("\n"):
                want += "\n"
            have = "".join(lines[start:end])
            if have == want:
                continue
            if write:
                lines[start:end] = [want]
            else:
                print(f"{md}:{start}: the block differs from {source} "
                      f"(tools/readme-copies.py --write {md})", file=sys.stderr)
                failed = True
            differing += 1
        if write:
            path.write_text("".join(lines))
        elif not differing:
            print(f"{md}: {len(found)} block(s) equal their files")
    return 1 if failed and not write else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
