"""Shared fixtures: the repository's bundled example, the live server's address and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "kep-3329-failjob-exit-code-42"
#: The decision time the tests pin, so the CLI and the server decide the same snapshot.
NOW = "2025-06-02T10:00:00Z"


@pytest.fixture
def addr() -> str:
    """The live server's host:port (tools/with-server.sh exports it)."""
    value = os.environ.get("JOB_DECIDER_ADDR")
    if not value:
        pytest.fail("JOB_DECIDER_ADDR is not set: run these tests with tools/with-server.sh")
    return value


@pytest.fixture
def job() -> dict[str, Any]:
    """The bundled example's Job, as `kubectl get job -o json` prints it."""
    loaded: dict[str, Any] = json.loads((EXAMPLE / "job.json").read_text())
    return loaded


@pytest.fixture
def pods() -> dict[str, Any]:
    """The bundled example's pods, a PodList as `kubectl get pods -o json` prints it."""
    loaded: dict[str, Any] = json.loads((EXAMPLE / "pods.json").read_text())
    return loaded


def cli() -> Path:
    """The job-decider binary the server runs (the same JOB_DECIDER_BIN tools/with-server.sh reads)."""
    path = Path(os.environ.get("JOB_DECIDER_BIN", ROOT / "target" / "debug" / "job-decider"))
    if not path.exists():
        pytest.fail(f"{path} is missing: cargo build --bin job-decider")
    return path


def cli_decide(job: Path, pods: Path, now: str) -> subprocess.CompletedProcess[str]:
    """`job-decider decide ... -o json`: the offline answer the server's must equal."""
    return subprocess.run(
        [str(cli()), "decide", "--job", str(job), "--pods", str(pods), "--now", now, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
