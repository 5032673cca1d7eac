"""Modules that some tests need and `make test`'s set-up installs (scripts/install-deps.sh: Debian's
python3-otf2 and python3-jsonschema; `make venv`: python/pyproject.toml's pins): a missing one
fails the test that needs it, with how to install it, instead of skipping it silently."""

import importlib

import pytest


def need(module: str, install: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    pytest.fail(f"the Python module {module} is missing: {install}", pytrace=False)
