"""The agent protocol and the agent registry.

An agent is anything with ``act(observation, info) -> action``; ``reset(seed)``,
``learn(env_or_dataset, budget)``, ``save(path)`` and ``load(path)`` are optional
(``docs/architecture.md``). Agents are named four ways, in this order of lookup:

- ``"prefix:ARGUMENT"`` for a prefix registered with :func:`register_agent_prefix`: the factory
  that the prefix's resolver returns for ``ARGUMENT`` (``lm:smollm2``, ``lm:tiny`` and
  ``lm:/path/to/model`` are language-model policies, :mod:`omnigym.llm_agents.policy`);
- ``"module:Class"``: any importable class;
- a name a family registers beside its environments (``oracle``, ``scripted``, the Safe offline
  agents, the Diplomacy bots, each paper's methods), in its ``registry.yaml``: usable on those
  ids only (:class:`omnigym.registry.EnvInfo.agents`);
- a name registered for every environment that it can run on (``random``, ``sb3``) with
  :func:`register_agent`, which says what it runs on (``runs_on``: kinds, observation kinds or
  families), so that listings and suggestions offer only agents that can play the env.

An agent class may take an ``env`` argument: it then receives the environment it will play, to
read spaces and public constants from (never hidden state).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from omnigym.registry import EnvInfo, load_entry_point, spec


@runtime_checkable
class Agent(Protocol):
    """What the rollout loop needs of an agent."""

    def act(self, observation: Any, info: dict[str, Any]) -> Any: ...


class UnknownAgentError(ValueError):
    """An agent name that resolves to nothing; the message names the closest known names."""


RunsOn = Mapping[str, Sequence[str]]
"""What an agent runs on: :class:`~omnigym.registry.EnvInfo` field → accepted values, e.g.
``{"kind": ["single"], "obs_kind": ["text"]}``; an empty mapping runs on everything."""
_RUNS_ON_FIELDS = ("kind", "obs_kind", "family")

_AGENTS: dict[str, tuple[str, RunsOn]] = {}
_PREFIXES: dict[str, tuple[str, RunsOn]] = {}


def _checked_runs_on(runs_on: RunsOn | None) -> dict[str, tuple[str, ...]]:
    runs_on = dict(runs_on or {})
    unknown = sorted(set(runs_on) - set(_RUNS_ON_FIELDS))
    if unknown:
        raise ValueError(f"runs_on keys must be among {_RUNS_ON_FIELDS}, got {unknown}")
    return {key: tuple(values) for key, values in runs_on.items()}


def register_agent(name: str, entry_point: str, runs_on: RunsOn | None = None) -> None:
    """Register an agent under ``name`` for every environment that ``runs_on`` accepts."""
    if ":" in name:
        raise ValueError(f"agent name {name!r} may not contain ':' (reserved for module:Class)")
    entry = (entry_point, _checked_runs_on(runs_on))
    if _AGENTS.get(name, entry) != entry:
        raise ValueError(f"agent name {name!r} is already registered differently")
    _AGENTS[name] = entry


def register_agent_prefix(prefix: str, entry_point: str, runs_on: RunsOn | None = None) -> None:
    """Make every name ``prefix:ARGUMENT`` stand for ``resolver(ARGUMENT)``, the factory that
    the function at ``entry_point`` returns (it raises ``ValueError`` or ``ImportError`` for an
    argument it cannot serve), on the environments that ``runs_on`` accepts. A registered
    prefix shadows a module of the same name."""
    if not prefix.isidentifier():
        raise ValueError(f"agent prefix {prefix!r} must be an identifier")
    entry = (entry_point, _checked_runs_on(runs_on))
    if _PREFIXES.get(prefix, entry) != entry:
        raise ValueError(f"agent prefix {prefix!r} is already registered differently")
    _PREFIXES[prefix] = entry


def runs_on(accepted: RunsOn, info: EnvInfo) -> bool:
    """Whether an agent that runs on ``accepted`` can play the environment ``info``."""
    return all(getattr(info, key) in values for key, values in accepted.items())


def _describe(accepted: RunsOn) -> str:
    return "; ".join(f"{key} {', '.join(values)}" for key, values in accepted.items()) or "any"


def list_agents(env_id: str | None = None) -> list[str]:
    """Names usable on ``env_id``: its family's agents and the general agents that run on it
    (with ``env_id`` None, the general agents)."""
    if env_id is None:
        return sorted(_AGENTS)
    info = spec(env_id)
    general = {name for name, (_, accepted) in _AGENTS.items() if runs_on(accepted, info)}
    return sorted(general | set(info.agents))


def list_agent_prefixes(env_id: str | None = None) -> list[str]:
    """The registered ``prefix:`` names usable on ``env_id`` (all with ``env_id`` None)."""
    info = None if env_id is None else spec(env_id)
    return sorted(
        f"{prefix}:"
        for prefix, (_, accepted) in _PREFIXES.items()
        if info is None or runs_on(accepted, info)
    )


def resolve_agent(name: str, env_id: str | None = None) -> str:
    """The entry point that ``name`` stands for on ``env_id``."""
    if ":" in name:
        return name
    if env_id is not None:
        env_agents = spec(env_id).agents
        if name in env_agents:
            return env_agents[name]
    if name in _AGENTS:
        entry_point, accepted = _AGENTS[name]
        if env_id is not None and not runs_on(accepted, spec(env_id)):
            raise UnknownAgentError(
                f"agent {name!r} does not run on {env_id} (it runs on: {_describe(accepted)}; "
                f"agents for {env_id}: {', '.join(list_agents(env_id))})"
            )
        return entry_point
    owners = [info for info in _all_envs() if name in info.agents]
    if owners:
        families = sorted({info.family for info in owners})
        where = f"on {env_id}" if env_id else "without an environment id"
        raise UnknownAgentError(
            f"agent {name!r} is not usable {where}: it plays the {' and '.join(families)} "
            f"{'family' if len(families) == 1 else 'families'} (e.g. {owners[0].id}); "
            f"agents for {env_id}: {', '.join(list_agents(env_id))}"
            if env_id
            else f"agent {name!r} is not usable {where}: it plays {owners[0].id} and others "
            f"of the {' and '.join(families)} family; name the environment"
        )
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
        entry_point, accepted = _PREFIXES[prefix]
        if env_id is not None and not runs_on(accepted, spec(env_id)):
            raise UnknownAgentError(
                f"agent {name!r} does not run on {env_id} ({prefix}: agents run on: "
                f"{_describe(accepted)})"
            )
        try:
            return load_entry_point(entry_point)(argument)
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


def _all_envs() -> list[EnvInfo]:
    from omnigym.registry import list_envs

    return list_envs()


register_agent_prefix(
    "lm", "omnigym.llm_agents.policy:agent_factory", runs_on={"obs_kind": ["text"]}
)
