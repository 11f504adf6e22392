"""``MCU/Random-v0``: a verified MCU task drawn at every reset.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) scores agents over many tasks at once; this
environment draws one of the verified atomic tasks per episode from ``np_random``, optionally
within a category or subcategory, so one environment covers a slice of the pool.
"""

from __future__ import annotations

from omnigym.envs.mcu.env import AtomicEnv
from omnigym.envs.mcu.tasks import index, list_tasks, load_task


class RandomTaskEnv(AtomicEnv):
    """:class:`~omnigym.envs.mcu.env.AtomicEnv` whose task is drawn at each reset.

    Spaces, rewards and episode ends are ``AtomicEnv``'s (every task shares the spaces); ``info``
    names the task drawn.

    ## Arguments
    ``category``, ``subcategory``: draw only among the verified tasks so labelled (``None``:
    any); a filter that matches no task raises ``ValueError`` naming it. ``difficulty``:
    ``"simple"``, ``"medium"`` or ``"hard"`` (:mod:`omnigym.envs.mcu.difficulty`).
    ``pixels``: add the ``rgb`` frame. ``composite``: ``False`` (random compositions are not
    drawn yet; ``MCU/Compose-v0`` builds given ones).
    """

    def __init__(
        self,
        category: str | None = None,
        subcategory: str | None = None,
        difficulty: str = "simple",
        composite: bool = False,
        pixels: bool = False,
    ):
        if composite:
            raise ValueError("composite=True is not available yet: only atomic tasks are drawn")
        self.names = list_tasks(category, subcategory)
        if not self.names:
            labels = sorted({(e["category"], e["subcategory"]) for e in index().values()})
            raise ValueError(
                f"no verified task has category={category!r} and subcategory={subcategory!r};"
                f" known (category, subcategory) pairs: {labels}"
            )
        super().__init__(self.names[0], difficulty=difficulty, pixels=pixels)

    def _next_task(self) -> None:
        self._use_task(load_task(self.names[int(self.np_random.integers(len(self.names)))]))
