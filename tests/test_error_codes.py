"""Every error code stellate can raise or report is documented in `ERROR_CODES`."""

from __future__ import annotations

import re
from pathlib import Path

import stellate.errors as errors
from stellate.errors import ERROR_CODES, StellateError

SRC = Path(errors.__file__).resolve().parent


def test_every_code_used_in_the_source_is_documented() -> None:
    used = set()
    for path in SRC.rglob("*.py"):
        used |= set(re.findall(r'code="([a-z_]+)"', path.read_text(encoding="utf-8")))
        used |= set(re.findall(r'"code": "([a-z_]+)"', path.read_text(encoding="utf-8")))
    assert used, "the scan found nothing"
    assert sorted(used - ERROR_CODES.keys()) == []


def test_every_error_class_default_code_is_documented() -> None:
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, StellateError)]
    assert len(classes) >= 10
    assert sorted({c.code for c in classes} - ERROR_CODES.keys()) == []
