"""Skills: loading SKILL.md folders, front matter variants, bad files named, and the whitelist tri-state."""

from __future__ import annotations

from pathlib import Path

import pytest

from stellate.engine.skills import Skill, SkillSet, load_skills, parse_skill
from stellate.errors import FormatError, UsageError


def write_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_skill(name: str) -> Skill:
    return Skill(name=name, description=f"About {name}.", content=f"Do {name}.")


# -- loading --------------------------------------------------------------------------------------------------


def test_each_subfolder_with_a_skill_file_becomes_a_skill_sorted_by_name(tmp_path: Path) -> None:
    write_skill(tmp_path, "z-folder", "---\nname: budget\ndescription: Plan money.\n---\nMake a table.\n")
    path = write_skill(tmp_path, "a-folder", "---\nname: visa\ndescription: Visa steps.\n---\n\nList documents.\n\n")
    skills = load_skills(tmp_path)
    assert skills.names() == ["budget", "visa"]
    assert skills.get("visa") == Skill(name="visa", description="Visa steps.", content="List documents.", path=path)


def test_missing_name_defaults_to_the_folder_name(tmp_path: Path) -> None:
    write_skill(tmp_path, "packing", "---\ndescription: What to pack.\n---\nA list.\n")
    assert load_skills(str(tmp_path)).names() == ["packing"]


def test_folders_without_a_skill_file_and_hidden_folders_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "notes.md").write_text("not a skill")
    write_skill(tmp_path, ".hidden", "broken")
    write_skill(tmp_path, "ok", "---\ndescription: Fine.\n---\nBody.\n")
    assert load_skills(tmp_path).names() == ["ok"]


def test_a_skill_file_in_the_root_itself_is_loaded(tmp_path: Path) -> None:
    root = tmp_path / "solo"
    root.mkdir()
    (root / "SKILL.md").write_text("---\ndescription: Alone.\n---\nBody.\n")
    assert load_skills(root).names() == ["solo"]


def test_an_empty_folder_loads_no_skills(tmp_path: Path) -> None:
    assert len(load_skills(tmp_path)) == 0


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_skills(tmp_path / "nope")


def test_duplicate_names_are_refused_naming_both_files(tmp_path: Path) -> None:
    first = write_skill(tmp_path, "one", "---\nname: same\ndescription: A.\n---\nA.\n")
    second = write_skill(tmp_path, "two", "---\nname: same\ndescription: B.\n---\nB.\n")
    with pytest.raises(UsageError) as caught:
        load_skills(tmp_path)
    assert caught.value.code == "skill_name_taken"
    assert str(first) in caught.value.message and str(second) in caught.value.message


# -- front matter ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("description: plain text", "plain text"),
        ("description: 'single quoted: it''s'", "single quoted: it's"),
        ('description: "double quoted: \\"x\\""', 'double quoted: "x"'),
        ("description:   spaced out   ", "spaced out"),
        ("description: 'Use when: the user asks'", "Use when: the user asks"),
        ("description: 2026", "2026"),
    ],
)
def test_front_matter_values_may_be_quoted_or_not(line: str, expected: str) -> None:
    assert parse_skill(f"---\nname: s\n{line}\n---\nBody.").description == expected


def test_folded_block_joins_lines_and_keeps_paragraphs() -> None:
    text = "---\nname: s\ndescription: >\n  Plan a budget\n  with a table.\n\n  Second part.\nlicense: MIT\n---\nBody."
    assert parse_skill(text).description == "Plan a budget with a table.\nSecond part."


def test_literal_block_keeps_its_lines() -> None:
    text = "---\nname: s\ndescription: |-\n  line one\n    indented\n  # not a comment\n---\nBody."
    assert parse_skill(text).description == "line one\n  indented\n# not a comment"


def test_indented_lines_continue_a_plain_value() -> None:
    text = "---\nname: s\ndescription:\n  Spread over\n  two lines.\n---\nBody."
    assert parse_skill(text).description == "Spread over two lines."


def test_a_skill_written_for_another_tool_loads_unchanged() -> None:
    text = """---
name: pdf-forms
description: >-
  Fill in PDF forms. Use when the user
  mentions a form or a PDF.
license: Apache-2.0
allowed-tools: [Read, "Bash(python:*)"]
metadata:
  version: 1.2
  tags:
    - documents
    - forms
defaults: &defaults {dpi: 150}
print: *defaults
---
# PDF forms
Read the fields first.
"""
    skill = parse_skill(text)
    assert (skill.name, skill.description) == (
        "pdf-forms",
        "Fill in PDF forms. Use when the user mentions a form or a PDF.",
    )
    assert skill.content == "# PDF forms\nRead the fields first."


def test_comments_blank_lines_unknown_keys_and_a_bom_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "s" / "SKILL.md"
    path.parent.mkdir()
    path.write_text("\ufeff---\n# a comment\n\nname: s\nallowed-tools: Read\ndescription: D.\n---\nBody.", "utf-8")
    assert load_skills(tmp_path).get("s") == Skill(name="s", description="D.", content="Body.", path=path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no front matter\n", "must start with front matter"),
        ("---\nname: s\ndescription: D.\nBody.\n", "no closing '---'"),
        ("---\nname: s\n---\nBody.\n", "no 'description:'"),
        ("---\nname: s\ndescription: ''\n---\nBody.\n", "no 'description:'"),
        ("---\nname: s\ndescription: D.\n---\n\n  \n", "an empty body"),
        ("---\nname: s\nthis is not a key line\ndescription: D.\n---\nBody.\n", "line 3: .* not valid YAML"),
        ("---\nname: s\ndescription: Use when: asked\n---\nBody.\n", "line 3: .*quote a value that contains"),
        ("---\n- name\n- description\n---\nBody.\n", "must be 'key: value' pairs"),
        ("---\nname: s\ndescription: [a, b]\n---\nBody.\n", "'description' in the front matter must be text"),
        ("---\nname: !!python/object:os.system x\ndescription: D.\n---\nBody.\n", "not valid YAML"),
    ],
)
def test_a_bad_skill_file_is_refused_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = write_skill(tmp_path, "bad", text)
    with pytest.raises(FormatError, match=problem) as caught:
        load_skills(tmp_path)
    assert caught.value.message.startswith(str(path))
    assert caught.value.details["path"] == str(path)


def test_a_skill_file_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes("---\ndescription: caf\u00e9\n---\nBody.".encode("latin-1"))
    with pytest.raises(FormatError, match="must be UTF-8") as caught:
        load_skills(tmp_path)
    assert str(path) in caught.value.message


def test_a_skill_parsed_without_a_path_needs_a_name() -> None:
    with pytest.raises(FormatError, match="no 'name:'"):
        parse_skill("---\ndescription: D.\n---\nBody.")


# -- skill sets and visibility --------------------------------------------------------------------------------


def test_skill_sets_from_code_are_sorted_and_looked_up_by_name() -> None:
    skills = SkillSet.from_skills([make_skill("b"), make_skill("a")])
    assert skills.names() == ["a", "b"]
    assert [skill.name for skill in skills] == ["a", "b"]
    assert skills.get("a") == make_skill("a")
    assert skills.get("zzz") is None
    assert "b" in skills


def test_duplicate_names_in_code_are_refused() -> None:
    with pytest.raises(UsageError) as caught:
        SkillSet.from_skills([make_skill("a"), make_skill("a")])
    assert caught.value.code == "skill_name_taken"


def test_no_whitelist_shows_every_skill() -> None:
    skills = SkillSet.from_skills([make_skill("a"), make_skill("b")])
    assert skills.visible(None) == skills


def test_an_empty_whitelist_shows_no_skill() -> None:
    visible = SkillSet.from_skills([make_skill("a"), make_skill("b")]).visible([])
    assert len(visible) == 0
    assert visible.get("a") is None


def test_a_whitelist_shows_only_its_skills_and_ignores_unknown_names() -> None:
    skills = SkillSet.from_skills([make_skill("a"), make_skill("b"), make_skill("c")])
    visible = skills.visible(["c", "a", "gone"])
    assert visible.names() == ["a", "c"]
    assert visible.get("b") is None  # a hidden skill cannot be reached through the view
    assert skills.names() == ["a", "b", "c"]  # the full set is unchanged


def test_a_whitelist_of_a_view_narrows_further_and_never_widens() -> None:
    view = SkillSet.from_skills([make_skill("a"), make_skill("b")]).visible(["a"])
    assert view.visible(["a", "b"]).names() == ["a"]


def test_a_string_whitelist_is_refused() -> None:
    with pytest.raises(UsageError, match="list of names"):
        SkillSet.from_skills([make_skill("ab")]).visible("ab")
