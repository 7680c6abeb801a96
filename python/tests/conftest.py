import json
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(os.environ.get("SCALEMODEL_SOURCE", pathlib.Path(__file__).resolve().parents[2]))
BIN = os.environ.get("SCALEMODEL_BIN", str(SOURCE / "build" / "scalemodel"))


@pytest.fixture
def examples() -> pathlib.Path:
    return SOURCE / "examples"


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The binary, for comparing the module with the command line."""
    return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True, timeout=300)


def cli_json(*args: str) -> dict:
    p = cli(*args, "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)
