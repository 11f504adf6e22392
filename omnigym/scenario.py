"""Scenario files: YAML experiments validated by pydantic (``docs/experiments.md``).

A scenario names environments, agents, how many episodes per seed, the seeds, the worker count
and the output folder; an optional ``quick:`` block overrides any of those under ``--quick``.
Where the work runs is ``backend: local`` (worker processes on this machine, the default) or
``backend: ray`` (Ray tasks: on a Ray instance the run starts here, or on the cluster at
``address:``, ``auto`` or ``HOST:PORT``), with ``resources:`` per job (``docs/distributed.md``);
``omnigym run --backend ray --address HOST:PORT`` overrides both.

    name: quickstart
    envs: [LMRL/MazeFO-v0, {id: LMRL/Wordle-v0, kwargs: {hidden: fixed}}]
    agents: [random, {name: oracle}, {name: "my_pkg.agents:MyAgent", label: mine, kwargs: {}}]
    episodes: 20
    seeds: [0, 1, 2]
    workers: 1
    out: results/quickstart
    quick: {episodes: 5, seeds: [0]}
    backend: ray                                   # optional: default local
    address: 10.0.0.5:6379                         # optional: default a Ray instance of its own
    resources: {cpus_per_job: 1, memory_per_job: 2GB}

A paper's experiment adds (``docs/experiments.md``): ``paper:`` (the citation the claims
dashboard shows), ``claims: package.module:check`` (the paper's claims checker,
:mod:`omnigym.evaluators.claims`), and, when "train then evaluate" is not enough,
``experiment: package.module:Class``, an :class:`~omnigym.evaluators.experiment.Experiment`
whose named stages run the scenario and whose settings are ``options:`` (checked against the
class's ``defaults``). An agent's ``envs: [...]`` limits it to those of the scenario's
environments (an ablation run on a few tasks). ``quick:`` may also replace ``envs`` and update
``options`` key by key.

Every error names the file, the field and what was expected; :func:`load_scenario` also checks
that every environment id is registered and every agent name resolves on every environment, so a
bad scenario fails before anything is run or written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ByteSize,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from omnigym.agent import UnknownAgentError, load_agent_factory
from omnigym.registry import UnknownEnvError, load_entry_point, spec

DEFAULT_EXPERIMENT = "omnigym.evaluators.experiment:TrainThenEvaluate"
"""The experiment of a scenario that names none: train what has a budget, then evaluate."""


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvEntry(_Strict):
    """One environment: a registered id, constructor kwargs and an optional label.

    The label names the entry in episode records and scorecards; it is needed when the same id
    appears twice with different kwargs (a knob swept over values)."""

    id: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    label: str | None = None

    @property
    def display(self) -> str:
        return self.label or self.id


class TrainSpec(_Strict):
    """Training before evaluation, for agents with ``learn(env, budget)``."""

    budget: int = Field(gt=0, description="environment steps (or updates) given to learn()")


class AgentEntry(_Strict):
    """One agent: a registry name or ``module:Class``, an optional label and kwargs."""

    name: str
    label: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    train: TrainSpec | None = None
    envs: list[str] | None = Field(
        default=None, min_length=1, description="only these of the scenario's env ids"
    )

    @property
    def display(self) -> str:
        return self.label or self.name

    def runs_on(self, env: str | EnvEntry) -> bool:
        """Whether this agent is played on ``env`` (an id, or an entry matched by id or label),
        by its ``envs`` list when it has one."""
        if self.envs is None:
            return True
        if isinstance(env, str):
            return env in self.envs
        return env.id in self.envs or env.display in self.envs


class Resources(_Strict):
    """What one job (a batch of episodes, a training run) asks of the machine that runs it: Ray
    places jobs by these; the local backend gives each job ``cpus_per_job`` torch threads."""

    cpus_per_job: float = Field(default=1, gt=0)
    memory_per_job: ByteSize | None = Field(
        default=None, description="bytes, or a size such as 512MB or 2GiB (Ray backend)"
    )


class QuickOverrides(_Strict):
    """What ``--quick`` changes: fewer episodes or seeds, fewer workers, less training."""

    episodes: int | None = Field(default=None, gt=0)
    seeds: list[int] | None = Field(default=None, min_length=1)
    workers: int | None = Field(default=None, gt=0)
    train_budget: int | None = Field(default=None, gt=0)
    envs: list[EnvEntry] | None = Field(default=None, min_length=1)
    options: dict[str, Any] | None = None

    @field_validator("envs", mode="before")
    @classmethod
    def _envs_from_strings(cls, value: Any) -> Any:
        return _env_entries(value)


def _env_entries(value: Any) -> Any:
    if isinstance(value, list):
        return [{"id": item} if isinstance(item, str) else item for item in value]
    return value


class Scenario(_Strict):
    """A whole experiment; see the module docstring for the YAML form."""

    name: str
    description: str = ""
    envs: list[EnvEntry] = Field(min_length=1)
    agents: list[AgentEntry] = Field(min_length=1)
    episodes: int = Field(default=10, gt=0, description="episodes per seed")
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    workers: int = Field(default=1, gt=0)
    backend: Literal["local", "ray"] = "local"
    address: str | None = Field(
        default=None, description="ray backend: auto, or the head node's HOST:PORT"
    )
    resources: Resources = Field(default_factory=Resources)
    out: str | None = None
    paper: str | None = Field(default=None, description="the paper whose claims this checks")
    experiment: str | None = Field(
        default=None, description="module:Class of the experiment (default: train, evaluate)"
    )
    claims: str | None = Field(default=None, description="module:function, the claims checker")
    options: dict[str, Any] = Field(default_factory=dict, description="the experiment's settings")
    quick: QuickOverrides | None = None
    profile: Literal["full", "quick"] = Field(
        default="full", description="set by quickened(): which profile this is"
    )

    @field_validator("envs", mode="before")
    @classmethod
    def _envs_from_strings(cls, value: Any) -> Any:
        return _env_entries(value)

    @field_validator("agents", mode="before")
    @classmethod
    def _agents_from_strings(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError(f"seeds must be distinct, got {value}")
        return value

    @field_validator("address")
    @classmethod
    def _address_form(cls, value: str | None) -> str | None:
        if value is None or value == "auto":
            return value
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"expected auto or HOST:PORT, got {value!r}")
        return value

    @model_validator(mode="after")
    def _address_needs_ray(self) -> Scenario:
        if self.address is not None and self.backend != "ray":
            raise ValueError(f"address {self.address!r} is for backend: ray")
        return self

    @model_validator(mode="after")
    def _distinct_labels(self) -> Scenario:
        for kind, labels in (
            ("agent", [agent.display for agent in self.agents]),
            ("env", [env.display for env in self.envs]),
        ):
            duplicates = sorted({label for label in labels if labels.count(label) > 1})
            if duplicates:
                raise ValueError(f"{kind} labels must be distinct; give a label to {duplicates}")
        return self

    def quickened(self) -> Scenario:
        """This scenario with its ``quick:`` overrides applied."""
        if self.quick is None:
            return self.model_copy(update={"profile": "quick"})
        quick = self.quick
        agents = self.agents
        if quick.train_budget is not None:
            agents = [
                agent.model_copy(update={"train": TrainSpec(budget=quick.train_budget)})
                if agent.train is not None
                else agent
                for agent in agents
            ]
        return self.model_copy(
            update={
                "profile": "quick",
                "episodes": quick.episodes or self.episodes,
                "seeds": quick.seeds or self.seeds,
                "workers": quick.workers or self.workers,
                "agents": agents,
                "envs": quick.envs or self.envs,
                "options": {**self.options, **(quick.options or {})},
            }
        )


def _format_validation_error(path: Path, error: ValidationError) -> str:
    lines = [f"{path}: invalid scenario"]
    for item in error.errors():
        field = ".".join(
            f"[{part}]" if isinstance(part, int) else str(part) for part in item["loc"]
        ).replace(".[", "[")
        lines.append(f"  field {field or '(top level)'}: {item['msg']} (got {item['input']!r})")
    return "\n".join(lines)


def _quick_options(scenario: Scenario) -> dict[str, Any]:
    quick = scenario.quick.options if scenario.quick and scenario.quick.options else {}
    return {**scenario.options, **quick}


def load_scenario(path: str | os.PathLike) -> Scenario:
    """Read, validate and resolve a scenario file; raises :class:`ScenarioError`."""
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ScenarioError(f"{file}: cannot read scenario ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ScenarioError(f"{file}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{file}: expected a mapping of scenario fields at the top level")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise ScenarioError(_format_validation_error(file, error)) from None
    for field in ("experiment", "claims"):
        entry_point = getattr(scenario, field)
        if entry_point is None:
            continue
        try:
            load_entry_point(entry_point)
        except (ImportError, ValueError) as error:
            raise ScenarioError(f"{file}: field {field}: {error}") from None
    experiment = load_entry_point(scenario.experiment or DEFAULT_EXPERIMENT)
    for field, options in (
        ("options", scenario.options),
        ("quick.options", _quick_options(scenario)),
    ):
        try:
            experiment.check_options(options)
        except ValueError as error:
            raise ScenarioError(f"{file}: field {field}: {error}") from None
    env_ids = {name for env in scenario.envs for name in (env.id, env.display)}
    if scenario.quick is not None and scenario.quick.envs:
        env_ids |= {name for env in scenario.quick.envs for name in (env.id, env.display)}
    for agent_index, agent in enumerate(scenario.agents):
        unknown = sorted(set(agent.envs or ()) - env_ids)
        if unknown:
            raise ScenarioError(
                f"{file}: field agents[{agent_index}].envs: {unknown} are not among the "
                "scenario's envs"
            )
    quick_envs = (scenario.quick and scenario.quick.envs) or []
    fields = [f"envs[{i}]" for i in range(len(scenario.envs))]
    fields += [f"quick.envs[{i}]" for i in range(len(quick_envs))]
    for field, env in zip(fields, [*scenario.envs, *quick_envs], strict=True):
        try:
            spec(env.id)
        except UnknownEnvError as error:
            raise ScenarioError(f"{file}: field {field}.id: {error}") from None
        for agent_index, agent in enumerate(scenario.agents):
            if not agent.runs_on(env):
                continue
            try:
                load_agent_factory(agent.name, env.id)
            except UnknownAgentError as error:
                raise ScenarioError(f"{file}: field agents[{agent_index}].name: {error}") from None
    return scenario
