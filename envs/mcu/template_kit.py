"""Building blocks of the MCU task templates: names and texts, milestone weights, the task
mapping with its judge rubric, and relative coordinates (used by :mod:`omnigym.envs.mcu.generate`
and the template modules beside it)."""

from __future__ import annotations

import math


def words(name: str) -> str:
    return name.replace("_", " ")


def article(name: str) -> str:
    """``a``/``an`` and the name, or the bare name for plurals (``leather boots``)."""
    if name.endswith("s"):
        return words(name)
    return ("an " if name[0] in "aeiou" else "a ") + words(name)


def weights(n: int, first: float | None = None) -> list[float]:
    """``n`` milestone weights summing exactly to 1 (``first`` for the first, the rest even)."""
    if n == 1:
        return [1.0]
    rest = n - 1 if first is not None else n
    share = round((1.0 - (first or 0.0)) / rest, 6)
    out = ([first] if first is not None else []) + [share] * rest
    out[-1] = round(1.0 - sum(out[:-1]), 6)
    return out


def milestones(predicates: list[str], first: float | None = None) -> list[dict]:
    return [
        {"when": p, "weight": w}
        for p, w in zip(predicates, weights(len(predicates), first), strict=True)
    ]


def task(name, params, subcategory, text, init, success, marks, relevant, oracle, **extra):
    return {
        "name": name,
        "category": params["category"],
        "subcategory": subcategory,
        "text": text,
        "init_commands": init,
        "success": success,
        "milestones": marks,
        "relevant": relevant,
        **extra,
        "rubric": rubric(text, marks, relevant),
        "oracle": oracle,
    }


def rubric(text: str, marks: list[dict], relevant: dict) -> str:
    """The six-dimension criteria of MCU's judge prompt, filled in for one task (kept for an
    optional external judge; the programmatic scores do not read it)."""
    things = ", ".join(sorted({name for names in relevant.values() for name in names}))
    steps = "; ".join(mark["when"] for mark in marks)
    return (
        f"Task progress: how far the agent got towards '{text}' (milestones: {steps}). "
        f"Action control: commands act on {things} and nothing unrelated. "
        "Error recognition and correction: a wrong block, tool or move is noticed and undone. "
        "Creative attempts: useful moves the instruction does not spell out. "
        "Task completion efficiency: few commands, little wandering. "
        f"Material selection and usage: {things} used fittingly and without waste."
    )


def at(spot) -> str:
    return " ".join(f"~{v}" for v in spot)


def away(distance: int, rng) -> tuple[int, int, int]:
    """A ground-level offset ``distance`` nodes from the player, in one of 8 directions."""
    angle = rng.integers(8) * math.pi / 4
    return round(distance * math.sin(angle)), 0, round(distance * math.cos(angle))


def half_final(marks: list[str]) -> list[dict]:
    """Milestones where the final craft is worth half and the intermediate crafts share half."""
    share = round(0.5 / (len(marks) - 1), 6)
    out = [{"when": m, "weight": share} for m in marks[:-1]]
    out.append({"when": marks[-1], "weight": round(1.0 - share * (len(marks) - 1), 6)})
    return out


def one_item_task(params: dict, name: str, text: str, item: str, counter: str, oracle: dict):
    """A task that hands over one ``item`` and succeeds once ``counter(item)`` reaches 1
    (``ate``, ``drank``)."""
    success = f"{counter}({item}) >= 1"
    return task(
        name,
        params,
        params["subcategory"],
        text,
        [f"give @s {item} 1"],
        success,
        milestones([success]),
        {"items": [item]},
        oracle,
    )
