"""Shared fixtures of the parity_hooks tests (run: .venv-hooks/bin/python -m pytest hooks/tests)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

import pytest

#: hooks/: the tests exercise the source tree (test_packaging checks the installed copy matches it).
HOOKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HOOKS)


def read_jsonl(path: str) -> List[Dict[str, Any]]:
    """Every record of a JSONL file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def metrics(tmp_path) -> str:
    """A metrics file path inside a folder that does not exist yet (the writer creates it)."""
    return os.path.join(str(tmp_path), "sub", "metrics.jsonl")
