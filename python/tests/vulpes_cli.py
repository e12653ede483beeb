"""The vulpes command for the tests that run it (the TensorBoard and tear-sheet tests)."""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def vulpes_bin():
    """VULPES_BIN (tests/test_python.sh sets it to the build under test), else build/vulpes,
    build-cpu/vulpes or a vulpes on PATH; a skip when there is none."""
    given = os.environ.get("VULPES_BIN")
    if given:
        return given
    for build in ("build", "build-cpu"):
        path = ROOT / build / "vulpes"
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which("vulpes")
    if found:
        return found
    pytest.skip("no vulpes command: build it (make) or set VULPES_BIN")


def run_vulpes(*args):
    """Runs vulpes from the repository root; fails the test with its stderr on a non-zero exit."""
    proc = subprocess.run([vulpes_bin(), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"vulpes {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}"
