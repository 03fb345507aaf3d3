"""Skills: named prompt fragments the model can activate, loaded from ``SKILL.md`` folders.

A skill's name and description are always shown to the model; its content is served only when activated.
`SkillSet.visible` applies a session's whitelist (DESIGN.md §4, skills tri-state). Whatever offers skills to
the model must build from the visible set, never from the full one: the reference system built its
``activate_skill`` tool from the global set, so a session could see and activate skills outside its whitelist.

A ``SKILL.md`` starts with front matter between ``---`` lines::

    ---
    name: budget
    description: >
      Plan a budget with
      a monthly table.
    ---
    The body: the content served on activation.

The front matter is YAML, read with PyYAML's safe loader, so skill files written for other tools load
unchanged; keys other than ``name`` and ``description`` (``license``, ``allowed-tools``, ``metadata``...)
are accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from stellate.errors import FormatError, UsageError

__all__ = ["SKILL_FILE", "Skill", "SkillSet", "load_skills", "parse_skill"]

#: File name that marks a folder as a skill.
SKILL_FILE = "SKILL.md"

_FENCE = "---"


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """A named prompt fragment."""

    name: str
    """Name the model activates it by."""
    description: str
    """When to use it; always visible to the model."""
    content: str
    """The instructions served when the skill is activated."""
    path: Path | None = None
    """The ``SKILL.md`` it was loaded from; None for a skill defined in code."""


class SkillSet:
    """An immutable set of skills, sorted by name.

    Args:
        skills: The skills; their names must be unique.

    Raises:
        UsageError: ``skill_name_taken`` when two skills share a name.
    """

    __slots__ = ("_skills",)

    def __init__(self, skills: Iterable[Skill] = ()) -> None:
        by_name: dict[str, Skill] = {}
        for skill in skills:
            taken = by_name.get(skill.name)
            if taken is not None:
                raise _duplicate(taken, skill)
            by_name[skill.name] = skill
        self._skills = {name: by_name[name] for name in sorted(by_name)}

    @classmethod
    def from_skills(cls, skills: Iterable[Skill]) -> SkillSet:
        """A set of skills defined in code.

        Raises:
            UsageError: ``skill_name_taken`` when two skills share a name.
        """
        return cls(skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills.values())

    def __len__(self) -> int:
        return len(self._skills)

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SkillSet) and self._skills == other._skills

    def __hash__(self) -> int:
        return hash(tuple(self._skills.values()))

    def __repr__(self) -> str:
        return f"SkillSet({self.names()!r})"

    def get(self, name: str) -> Skill | None:
        """The skill called ``name``, or None."""
        return self._skills.get(name)

    def names(self) -> list[str]:
        """Skill names, sorted."""
        return list(self._skills)

    def visible(self, whitelist: Sequence[str] | None) -> SkillSet:
        """The skills a session with this whitelist may see and activate.

        Args:
            whitelist: None for every skill, ``[]`` for none, otherwise the names allowed. Names that no skill
                has are ignored, so a whitelist outlives a skill that was removed.

        Raises:
            UsageError: ``whitelist`` is a string rather than a sequence of names.
        """
        if whitelist is None:
            return self
        if isinstance(whitelist, str):  # a str is a Sequence[str]: "ab" would allow skills "a" and "b"
            raise UsageError(f"a skill whitelist is a list of names, not the string {whitelist!r}")
        allowed = set(whitelist)
        return SkillSet(skill for name, skill in self._skills.items() if name in allowed)


def _duplicate(first: Skill, second: Skill) -> UsageError:
    where = f" ({first.path or 'code'} and {second.path or 'code'})"
    return UsageError(
        f"two skills are named {first.name!r}{where}; skill names must be unique",
        code="skill_name_taken",
        skill=first.name,
        paths=[str(first.path), str(second.path)],
    )


def load_skills(root: str | Path) -> SkillSet:
    """Load every skill under ``root``: each direct subfolder holding a ``SKILL.md``, and ``root/SKILL.md``.

    Subfolders without a ``SKILL.md`` and hidden folders are skipped.

    Raises:
        UsageError: ``root`` is not a folder, or two skills share a name (``skill_name_taken``).
        FormatError: A ``SKILL.md`` has no front matter, no description or no body; the message names the file.
    """
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise UsageError(f"skills folder {str(folder)!r} does not exist or is not a folder", path=str(folder))
    folders = [folder, *(sub for sub in sorted(folder.iterdir()) if sub.is_dir() and not sub.name.startswith("."))]
    files = [sub / SKILL_FILE for sub in folders if (sub / SKILL_FILE).is_file()]
    return SkillSet(parse_skill(_read(path), path=path) for path in files)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # -sig: editors on Windows prepend a BOM
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: a skill file must be UTF-8 text ({exc.reason})", path=str(path)) from exc


def parse_skill(text: str, *, path: Path | None = None) -> Skill:
    """Parse the text of a ``SKILL.md``; a missing ``name`` defaults to the name of its folder.

    Raises:
        FormatError: The text has no front matter, no description or no body.
    """
    where = str(path) if path is not None else "<skill>"
    header, body = _split_front_matter(text, where)
    fields = _parse_front_matter(header, where)
    name = fields.get("name") or (path.parent.name if path is not None else "")
    description = fields.get("description", "")
    content = body.strip()
    for value, problem in ((name, "no 'name:'"), (description, "no 'description:'"), (content, "an empty body")):
        if not value:
            raise FormatError(f"{where}: the skill has {problem}", path=where)
    return Skill(name=name, description=description, content=content, path=path)


def _split_front_matter(text: str, where: str) -> tuple[list[str], str]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != _FENCE:
        raise FormatError(f"{where}: a skill file must start with front matter between '---' lines", path=where)
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == _FENCE:
            return lines[1:index], "\n".join(lines[index + 1 :])
    raise FormatError(f"{where}: the front matter has no closing '---' line", path=where)


def _parse_front_matter(lines: list[str], where: str) -> dict[str, str]:
    """Parse the front matter as YAML (safe loader) and return its text fields; other keys are ignored."""
    try:
        loaded = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError as exc:
        raise FormatError(f"{where}{_yaml_problem(exc)}", path=where) from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise FormatError(f"{where}: the front matter must be 'key: value' pairs", path=where)
    fields: dict[str, str] = {}
    for key in ("name", "description"):
        value = loaded.get(key)
        if isinstance(value, dict | list):
            raise FormatError(f"{where}: {key!r} in the front matter must be text", path=where)
        fields[key] = "" if value is None else str(value).strip()
    return fields


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    if getattr(error, "context", None) == "while scanning a simple key":
        mark = getattr(error, "context_mark", mark)  # the line missing its ':', not the one after it
    problem = getattr(error, "problem", None) or str(error)
    line = f", line {mark.line + 2}" if mark is not None else ""  # + 2: 0-based, after the opening fence
    hint = " (quote a value that contains ': ')" if "mapping values are not allowed" in problem else ""
    return f"{line}: the front matter is not valid YAML: {problem}{hint}"
