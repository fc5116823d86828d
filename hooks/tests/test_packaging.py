"""The installed parity-hooks distribution is this source tree, files and metadata."""

from __future__ import annotations

import importlib.metadata
import os

from conftest import HOOKS


def test_the_installed_package_holds_every_source_file_unchanged():
    dist = importlib.metadata.distribution("parity-hooks")
    installed = {str(f).replace(os.sep, "/"): f for f in dist.files or [] if str(f).startswith("parity_hooks/")}
    source = sorted(os.path.relpath(os.path.join(root, name), HOOKS).replace(os.sep, "/")
                    for root, dirs, names in os.walk(os.path.join(HOOKS, "parity_hooks"))
                    for name in names if "__pycache__" not in root)
    assert "parity_hooks/py.typed" in source
    for rel in source:
        assert rel in installed, f"{rel} is not installed: run `deno task setup-hooks`"
        with open(os.path.join(HOOKS, rel), "rb") as f:
            assert installed[rel].read_binary() == f.read(), f"{rel} differs: run `deno task setup-hooks`"


def test_the_distribution_declares_no_dependencies():
    assert importlib.metadata.requires("parity-hooks") is None
    assert importlib.metadata.version("parity-hooks") == "0.1.0"
