"""The README's Python blocks: each runs against the live server and passes mypy --strict."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE, ROOT

README = ROOT / "clients" / "python" / "README.md"
QUICKSTART = ROOT / "clients" / "python" / "examples" / "quickstart.py"

# A ```python block, and the ```text block after it when the README shows what it prints.
_BLOCK = re.compile(r"```python\n(.*?)```\n(?:\s*prints\s*\n+```text\n(.*?)```\n)?", re.S)


def _blocks() -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(README.read_text())]


def test_readme_quickstart_is_the_example_file() -> None:
    assert QUICKSTART.read_text() in [code for code, _ in _blocks()]


def test_readme_python_blocks_run(addr: str, tmp_path: Path) -> None:
    blocks = _blocks()
    assert len(blocks) >= 4
    assert any(printed is not None for _, printed in blocks)
    for i, (code, printed) in enumerate(blocks):
        script = tmp_path / f"readme_{i}.py"
        script.write_text(code)
        # The quickstart block takes the Job and pods files; the others read the example themselves.
        args = [str(EXAMPLE / "job.json"), str(EXAMPLE / "pods.json")] if "sys.argv" in code else []
        run = subprocess.run(
            [sys.executable, str(script), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "JOB_DECIDER_ADDR": addr},
            timeout=60,
        )
        assert run.returncode == 0, f"README block {i}:\n{code}\n{run.stderr}"
        assert run.stdout.strip(), f"README block {i} printed nothing"
        if printed is not None:
            assert run.stdout == printed, f"README block {i} printed something else"


def test_readme_python_blocks_typecheck(tmp_path: Path) -> None:
    files = []
    for i, (code, _) in enumerate(_blocks()):
        files.append(tmp_path / f"readme_{i}.py")
        files[-1].write_text(code)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, files)],
        cwd=ROOT / "clients" / "python",
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
