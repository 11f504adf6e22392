"""MCU: atomic Minecraft-style tasks on the Craft voxel engine (Zheng et al., "MCU: An
Evaluation Framework for Open-Ended Game Agents", ICML 2025; ``docs/mcu.md``).

Importing this package registers the ``MCU/`` ids of ``registry.yaml`` (entry-point strings
only: the engine and the task files load when an environment is made).
"""

from omnigym.registry import register_family

register_family(__name__)


def list_tasks(category: str | None = None, subcategory: str | None = None) -> list[str]:
    """Names of every verified task, optionally filtered by category or subcategory."""
    from omnigym.envs.mcu.tasks import list_tasks as _list_tasks

    return _list_tasks(category, subcategory)
