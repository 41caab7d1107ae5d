"""What the published package carries: the repository's LICENSE (test.sh builds and installs it)."""

from __future__ import annotations

import tomllib

from conftest import ROOT

PKG = ROOT / "clients" / "python"


def test_package_license_is_the_repository_license() -> None:
    assert (PKG / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


def test_package_version_is_in_the_changelog() -> None:
    version = tomllib.loads((PKG / "pyproject.toml").read_text())["project"]["version"]
    assert f"## {version}\n" in (PKG / "CHANGELOG.md").read_text()
