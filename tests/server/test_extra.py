"""Without the ``server`` extra, the server and client say which ``pip install`` adds it."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("blocked", "statement"),
    [
        ("fastapi", "from stellate.server import create_app"),
        ("starlette", "from stellate.server import create_app"),
        ("httpx", "import stellate.client"),
    ],
)
def test_a_missing_extra_names_its_pip_install(blocked: str, statement: str) -> None:
    code = f"import sys; sys.modules[{blocked!r}] = None\ntry:\n    {statement}\nexcept ImportError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 'pip install "stellate[server]"' in out, out


def test_the_key_commands_need_no_server_extra() -> None:
    code = "import sys; sys.modules['fastapi'] = None\nimport stellate.server.keys\nprint('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "ok"
