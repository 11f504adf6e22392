"""omnigym: environments and agents of recent ML papers behind Gymnasium and PettingZoo.

``import omnigym`` registers every environment id (lazily: entry-point strings only, so no
torch, renderer or game engine is imported) and the generic agents.

    >>> import omnigym
    >>> env = omnigym.make("LMRL/Wordle-v0")
    >>> [info.id for info in omnigym.list_envs(family="LMRL")][:2]
    ['LMRL/MazeFO-v0', 'LMRL/MazePO-v0']
"""

from omnigym import agents as _generic_agents  # noqa: F401  (registers "random")
from omnigym.agent import Agent, list_agents, make_agent, register_agent
from omnigym.envs import craft as _craft  # noqa: F401  (registers Craft/*)
from omnigym.envs import diplomacy as _diplomacy  # noqa: F401  (registers Diplomacy/*)
from omnigym.envs import lmrl as _lmrl  # noqa: F401  (registers LMRL/*)
from omnigym.envs import mcu as _mcu  # noqa: F401  (registers MCU/*)
from omnigym.envs import methods as _methods  # noqa: F401  (registers Methods/*)
from omnigym.envs import safety as _safety  # noqa: F401  (registers Safe/*)
from omnigym.registry import EnvInfo, UnknownEnvError, list_envs, make, make_aec, register, spec

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "EnvInfo",
    "UnknownEnvError",
    "list_agents",
    "list_envs",
    "make",
    "make_aec",
    "make_agent",
    "register",
    "register_agent",
    "spec",
]
