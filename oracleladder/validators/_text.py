"""Shared helpers: pull the milestone's own text and the problem out of a released prompt."""

from __future__ import annotations

import re

from oracleladder.schemas.models import Family, Milestone

_SECTION = re.compile(r"Milestone:\s*\n(.*?)(?:\n\s*Output instruction:(.*))?$", re.S)
_PROBLEM = re.compile(r"Original problem \(context\):\s*\n(.*?)\n\s*Milestone:", re.S)


def milestone_text(m: Milestone) -> str:
    """The milestone's own words: its description, else the prompt's Milestone + Output sections."""
    if m.description:
        return m.description
    hit = _SECTION.search(m.prompt)
    if hit:
        return (hit.group(1) + "\n" + (hit.group(2) or "")).strip()
    return m.prompt


def milestone_description(m: Milestone) -> str:
    """One-line label for messages: the description, or the prompt's Milestone section."""
    if m.description:
        return m.description.strip()
    hit = _SECTION.search(m.prompt)
    return (hit.group(1) if hit else m.prompt).strip()


def problem_text(m: Milestone, family: Family | None = None) -> str:
    hit = _PROBLEM.search(m.prompt)
    parts = [hit.group(1)] if hit else []
    if family is not None:
        parts.append(family.parent_prompt)
    return "\n".join(parts)
