"""Finding and trusting python.wasm, and the compiled-module cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from tooliscode.errors import RuntimeIntegrityError, RuntimeNotFound
from tooliscode.runtime import PACKAGED_SHA256, locate_python_wasm


def test_packaged_runtime_is_found_and_verified():
    found = locate_python_wasm()
    assert found.sha256 == PACKAGED_SHA256 and found.source == "packaged"


def test_env_folder_wins_over_packaged(tmp_path, monkeypatch):
    shutil.copy(locate_python_wasm().path, tmp_path / "python.wasm")
    monkeypatch.setenv("PYTHON_WASM_HOME", str(tmp_path))
    found = locate_python_wasm()
    assert found.source == "$PYTHON_WASM_HOME" and found.path == tmp_path / "python.wasm"


def test_explicit_path_wins_over_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHON_WASM_HOME", str(tmp_path / "nowhere"))
    found = locate_python_wasm(locate_python_wasm.__globals__["_packaged"]().path)
    assert found.source == "explicit"


def test_missing_runtime_is_a_clear_error(tmp_path):
    with pytest.raises(RuntimeNotFound, match="python.wasm"):
        locate_python_wasm(tmp_path / "none.wasm")


def test_hash_mismatch_is_refused(tmp_path):
    fake = tmp_path / "python.wasm"
    fake.write_bytes(b"\0asm not really")
    with pytest.raises(RuntimeIntegrityError, match="SHA-256"):
        locate_python_wasm(fake, expected_sha256=PACKAGED_SHA256)


def test_a_fresh_cache_compiles_once_and_says_so(tmp_path):
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(tmp_path / "cache")}
    code = "from tooliscode import Session\ns = Session([])\nprint(s.run('6*7').value)\ns.close()"
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "42"
    assert "compiling the Python runtime" in first.stderr
    cached = list((tmp_path / "cache").glob("*.cwasm"))
    assert len(cached) == 1
    assert oct((tmp_path / "cache").stat().st_mode & 0o777) == "0o700"
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=60)
    assert second.stdout.strip() == "42" and "compiling" not in second.stderr
    assert "panicked" not in first.stderr + second.stderr


def test_a_corrupt_cache_entry_is_replaced(tmp_path):
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(tmp_path)}
    code = "from tooliscode import Session\nwith Session([]) as s:\n    print(s.run('1+1').value)"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                   timeout=120)
    (entry,) = tmp_path.glob("*.cwasm")
    entry.write_bytes(b"garbage")
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and again.stdout.strip() == "2", again.stderr


def test_guest_modules_are_precompiled_once_and_a_damaged_cache_is_survived(tmp_path):
    env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(tmp_path)}
    code = "from tooliscode import Session\nwith Session([]) as s:\n    print(s.run('1+1').value)"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                   timeout=120)
    (entry,) = tmp_path.glob("guest-*.marshal")
    assert oct(entry.stat().st_mode & 0o777) == "0o600"
    for damage in (b"garbage", entry.read_bytes()[:500]):
        entry.write_bytes(damage)
        again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, timeout=120)
        assert again.returncode == 0 and again.stdout.strip() == "2", again.stderr
