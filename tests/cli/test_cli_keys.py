"""``stellate keys``: where the key file is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Run


@pytest.mark.parametrize("action", ["create", "list", "revoke"])
def test_every_keys_action_shows_the_key_file_option_in_its_help(cli: Run, action: str) -> None:
    result = cli("keys", action, "--help")
    assert result.status == 0 and "--keys FILE" in result.out


def test_the_key_file_may_be_named_before_or_after_the_action(cli: Run, tmp_path: Path) -> None:
    after, before = tmp_path / "after.json", tmp_path / "before.json"
    assert cli("keys", "create", "--space", "a", "--keys", str(after)).status == 0
    assert cli("keys", "--keys", str(before), "create", "--space", "b").status == 0
    assert [k["space"] for k in json.loads(after.read_text())["keys"]] == ["a"]
    assert [k["space"] for k in json.loads(before.read_text())["keys"]] == ["b"]
