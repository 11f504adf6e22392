"""The agent protocol and the agent registry.

An agent is anything with ``act(observation, info) -> action`` (DESIGN §3); ``reset(seed)``,
``learn(env_or_dataset, budget)``, ``save(path)`` and ``load(path)`` are optional. Agents are
named four ways, in this order of lookup:

- ``"prefix:ARGUMENT"`` for a prefix registered with :func:`register_agent_prefix`: the factory
  that the prefix's resolver returns for ``ARGUMENT`` (``lm:smollm2``, ``lm:tiny`` and
  ``lm:/path/to/model`` are language-model policies, :mod:`omnigym.llm_agents.policy`);
- ``"module:Class"``: any importable class;
- a name registered for one environment id (``"oracle"`` is registered by each family beside
  its environments, through :class:`omnigym.registry.EnvInfo.agents`);
- a name registered for every environment (``"random"``) with :func:`register_agent`.

An agent class may take an ``env`` argument: it then receives the environment it will play, to
read spaces and public constants from (never hidden state).
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any, Protocol, runtime_checkable

from omnigym.registry import load_entry_point, spec


@runtime_checkable
class Agent(Protocol):
    """What the rollout loop needs of an agent."""

    def act(self, observation: Any, info: dict[str, Any]) -> Any: ...


class UnknownAgentError(ValueError):
    """An agent name that resolves to nothing; the message names the closest known names."""


_AGENTS: dict[str, str] = {}
_PREFIXES: dict[str, str] = {}


def register_agent(name: str, entry_point: str) -> None:
    """Register an agent usable on every environment under ``name``."""
    if ":" in name:
        raise ValueError(f"agent name {name!r} may not contain ':' (reserved for module:Class)")
    if _AGENTS.get(name, entry_point) != entry_point:
        raise ValueError(f"agent name {name!r} is already registered differently")
    _AGENTS[name] = entry_point


def register_agent_prefix(prefix: str, entry_point: str) -> None:
    """Make every name ``prefix:ARGUMENT`` stand for ``resolver(ARGUMENT)``, the factory that
    the function at ``entry_point`` returns (it raises ``ValueError`` or ``ImportError`` for an
    argument it cannot serve). A registered prefix shadows a module of the same name."""
    if not prefix.isidentifier():
        raise ValueError(f"agent prefix {prefix!r} must be an identifier")
    if _PREFIXES.get(prefix, entry_point) != entry_point:
        raise ValueError(f"agent prefix {prefix!r} is already registered differently")
    _PREFIXES[prefix] = entry_point


def list_agents(env_id: str | None = None) -> list[str]:
    """Names usable on ``env_id`` (or on every environment when ``env_id`` is None)."""
    names = set(_AGENTS)
    if env_id is not None:
        names |= set(spec(env_id).agents)
    return sorted(names)


def resolve_agent(name: str, env_id: str | None = None) -> str:
    """The entry point that ``name`` stands for on ``env_id``."""
    if ":" in name:
        return name
    if env_id is not None:
        env_agents = spec(env_id).agents
        if name in env_agents:
            return env_agents[name]
    if name in _AGENTS:
        return _AGENTS[name]
    known = list_agents(env_id)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    where = f" for {env_id}" if env_id else ""
    raise UnknownAgentError(
        f"unknown agent {name!r}{where}{hint} (known: {', '.join(known) or 'none'}; "
        "or name a class as module:Class)"
    )


def load_agent_factory(name: str, env_id: str | None = None) -> Any:
    """The class (or factory) that ``name`` stands for on ``env_id``, imported."""
    prefix, colon, argument = name.partition(":")
    if colon and prefix in _PREFIXES:
        try:
            return load_entry_point(_PREFIXES[prefix])(argument)
        except (ImportError, ValueError) as error:
            raise UnknownAgentError(f"agent {name!r}: {error}") from None
    entry_point = resolve_agent(name, env_id)
    try:
        return load_entry_point(entry_point)
    except (ImportError, ValueError) as error:
        raise UnknownAgentError(f"agent {name!r}: cannot load {entry_point!r}: {error}") from None


def make_agent(name: str, env: Any = None, env_id: str | None = None, **kwargs: Any) -> Agent:
    """Build the agent called ``name`` for ``env`` (whose id is ``env_id``)."""
    factory = load_agent_factory(name, env_id)
    if _takes_env(factory):
        kwargs = {"env": env, **kwargs}
    agent = factory(**kwargs)
    if not callable(getattr(agent, "act", None)):
        raise UnknownAgentError(f"agent {name!r} has no act(observation, info) method")
    return agent


def _takes_env(factory: Any) -> bool:
    try:
        return "env" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


register_agent_prefix("lm", "omnigym.llm_agents.policy:agent_factory")
