"""Shared test configuration."""

from __future__ import annotations

import os

IN_CI = os.environ.get("CI", "").lower() == "true"
