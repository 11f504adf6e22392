"""``MCU/Random-v0``: a verified MCU task, or a composition of two, drawn at every reset.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) scores agents over many tasks at once; this
environment draws one of the verified atomic tasks per episode from ``np_random``, optionally
within a category or subcategory, so one environment covers a slice of the pool. With
``composite=True`` it draws two tasks and an operator (``and``, ``or``, ``then``) instead, and
draws again when the two cannot share a scene (their ``requires`` disagree, or there is no room
for both), as MCU's composition leaves conflicting pairs out.
"""

from __future__ import annotations

from omnigym.envs.mcu.compose import OPS
from omnigym.envs.mcu.compose_env import ComposeEnv
from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.tasks import index, list_tasks, load_task

DRAWS = 100
"""Pairs drawn at most before a composite reset gives up."""


def random_env(
    category: str | None = None,
    subcategory: str | None = None,
    difficulty: str = "simple",
    composite: bool = False,
    pixels: bool = False,
) -> AtomicEnv:
    """The ``MCU/Random-v0`` entry point: a :class:`RandomTaskEnv`, or with ``composite=True``
    a :class:`RandomComposeEnv`."""
    if composite:
        return RandomComposeEnv(_names(category, subcategory, least=2), difficulty, pixels)
    return RandomTaskEnv(category, subcategory, difficulty, pixels)


def _names(category: str | None, subcategory: str | None, least: int = 1) -> list[str]:
    names = list_tasks(category, subcategory)
    if len(names) < least:
        labels = sorted({(e["category"], e["subcategory"]) for e in index().values()})
        raise ValueError(
            f"fewer than {least} verified tasks have category={category!r} and "
            f"subcategory={subcategory!r}; known (category, subcategory) pairs: {labels}"
        )
    return names


class RandomTaskEnv(AtomicEnv):
    """:class:`~omnigym.envs.mcu.env.AtomicEnv` whose task is drawn at each reset.

    Spaces, rewards and episode ends are ``AtomicEnv``'s (every task shares the spaces); ``info``
    names the task drawn.

    ## Arguments
    ``category``, ``subcategory``: draw only among the verified tasks so labelled (``None``:
    any); a filter that matches no task raises ``ValueError`` naming it. ``difficulty``:
    ``"simple"``, ``"medium"`` or ``"hard"`` (:mod:`omnigym.envs.mcu.difficulty`).
    ``pixels``: add the ``rgb`` frame.
    """

    def __init__(
        self,
        category: str | None = None,
        subcategory: str | None = None,
        difficulty: str = "simple",
        pixels: bool = False,
    ):
        self.names = _names(category, subcategory)
        super().__init__(self.names[0], difficulty=difficulty, pixels=pixels)

    def _next_task(self) -> None:
        self._use_task(load_task(self.names[int(self.np_random.integers(len(self.names)))]))


class RandomComposeEnv(ComposeEnv):
    """:class:`~omnigym.envs.mcu.compose_env.ComposeEnv` whose two tasks and operator are drawn
    at each reset (``info["composition"]`` and ``info["task"]`` name them).

    ## Arguments
    ``names``: the verified tasks to draw from, at least two (``MCU/Random-v0`` passes those of
    its ``category`` and ``subcategory``); ``difficulty``, ``pixels``: as
    :class:`RandomTaskEnv`'s.
    """

    def __init__(self, names: list[str], difficulty: str = "simple", pixels: bool = False):
        self.names = sorted(set(names))
        if len(self.names) < 2:
            raise ValueError(f"names must hold at least two distinct tasks, got {names!r}")
        super().__init__(self.names[:1], [], difficulty, pixels)

    def _next_task(self) -> None:
        for _ in range(DRAWS):
            picked = self.np_random.choice(len(self.names), 2, replace=False)
            op = OPS[int(self.np_random.integers(len(OPS)))]
            self._compose([self.names[int(i)] for i in picked], [op])
            try:
                super()._next_task()
            except ValueError:
                continue
            return
        raise RuntimeError(
            f"no two of {len(self.names)} tasks could share a scene in {DRAWS} draws"
        )
