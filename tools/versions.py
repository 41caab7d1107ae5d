#!/usr/bin/env python3
"""Every package carries the contract's version (proto/VERSION): the Python and TypeScript
clients, the Go client module, the Rust workspace (the server) and the versions its published crates
name each other by, the images the deploy
manifests name and the Helm chart; and each client's CHANGELOG has a heading for it. `make lint` runs this; it names each package that differs and exits 1."""

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    want = (ROOT / "proto" / "VERSION").read_text().strip()
    found = {
        "clients/python/pyproject.toml": tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]["version"],
        "clients/typescript/package.json": json.loads((ROOT / "clients/typescript/package.json").read_text())["version"],
        "Cargo.toml [workspace.package]": tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"],
    }
    # The published crates name each other by version as well as by path (cargo package).
    for crate in ("api", "k8s"):
        deps = tomllib.loads((ROOT / f"crates/{crate}/Cargo.toml").read_text())["dependencies"]
        for name, dep in deps.items():
            if name.startswith("job-decider-"):
                found[f"crates/{crate}/Cargo.toml dependency {name}"] = dep.get("version", "(no version)")
    go = re.search(r'^const Version = "([^"]+)"', (ROOT / "clients/go/jobdecider/version.go").read_text(), re.M)
    found["clients/go/jobdecider/version.go"] = go.group(1) if go else "(no const Version)"
    tags = re.findall(r"newTag: v(\S+)", (ROOT / "deploy/components/images/kustomization.yaml").read_text())
    for i, tag in enumerate(tags):
        found[f"deploy/components/images/kustomization.yaml newTag #{i + 1}"] = tag
    chart = (ROOT / "deploy/helm/job-decider/Chart.yaml").read_text()
    for key in ("version", "appVersion"):
        value = re.search(rf"^{key}: v?(\S+)", chart, re.M)
        found[f"deploy/helm/job-decider/Chart.yaml {key}"] = value.group(1) if value else "(none)"
    problems = [f"{where}: {got}, the contract is {want}" for where, got in found.items() if got != want]
    for changelog in sorted(ROOT.glob("clients/*/CHANGELOG.md")):
        if not re.search(rf"^## v?{re.escape(want)}\b", changelog.read_text(), re.M):
            problems.append(f"{changelog.relative_to(ROOT)}: no '## {want}' heading")
    for problem in problems:
        print(f"versions: {problem}", file=sys.stderr)
    if not problems:
        print(f"versions: every package is the contract's {want}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
