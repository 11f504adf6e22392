"""The environment registry: one table of every omnigym id and the one door to make them.

Every family registers its ids the same way: its package ``__init__`` calls
:func:`register_family`, which reads the family's ``registry.yaml`` (ids, entry points, kwargs,
agents, descriptions: data, not code; the format is :data:`REGISTRY_FORMAT`). Entry points are
*strings*, so registering never imports an environment's module (no torch, renderer or game
engine at ``import omnigym``). Single-agent ids are also registered with Gymnasium, which is
what makes ``gym.make("omnigym:LMRL/Wordle-v0")`` work; multi-agent ids live only here and are
made into PettingZoo ``ParallelEnv`` (or AEC) environments by :func:`make` / :func:`make_aec`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any, Literal

import gymnasium
import yaml
from gymnasium.envs.registration import WrapperSpec

Kind = Literal["single", "multi"]
ObsKind = Literal["pixels", "voxels", "text", "vector", "dict"]


class UnknownEnvError(ValueError):
    """An id that no family registered; the message names the closest registered ids."""


@dataclass(frozen=True)
class EnvInfo:
    """Metadata of one registered environment id.

    ``entry_point`` and ``aec_entry_point`` are ``"module:attr"`` strings, resolved only when an
    environment is made. ``normalizer`` names a ``"module:function"`` that the evaluator calls to
    turn a return summary into the family's normalized score (see
    :mod:`omnigym.evaluators.scorecard`); ``agents`` maps agent names that only make sense for
    this id (``"oracle"``) to their entry points; ``dataset`` names the ``"module:function"``
    that writes the id's offline dataset, called as ``f(env_id, episodes, seed, path)`` with
    ``episodes=None`` for the family's default size, returning the dataset's statistics.
    ``wrappers`` are ``("module:Wrapper", kwargs)`` pairs that ``gymnasium.make`` applies around
    the environment (Gymnasium's ``additional_wrappers``); ``vector_entry_point`` is Gymnasium's,
    for ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``. ``metadata`` holds
    what the family keeps beside a task for other layers to read (an LMRL task's language-model
    prompt and dataset filter).
    """

    id: str
    entry_point: str
    family: str
    kind: Kind
    obs_kind: ObsKind
    paper: str
    description: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    normalizer: str | None = None
    agents: Mapping[str, str] = field(default_factory=dict)
    aec_entry_point: str | None = None
    dataset: str | None = None
    wrappers: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    vector_entry_point: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["kwargs"] = dict(self.kwargs)
        record["agents"] = sorted(self.agents)
        record["wrappers"] = [[entry, dict(kwargs)] for entry, kwargs in self.wrappers]
        record["metadata"] = dict(self.metadata)
        return record


_REGISTRY: dict[str, EnvInfo] = {}


def register(info: EnvInfo) -> None:
    """Add ``info`` to the registry (and to Gymnasium's, for single-agent ids).

    Registering the same record twice is a no-op; registering a different record under a taken id
    is an error, so two families can never silently shadow each other.
    """
    previous = _REGISTRY.get(info.id)
    if previous is not None:
        if previous != info:
            raise ValueError(f"environment id {info.id!r} is already registered differently")
        return
    _REGISTRY[info.id] = info
    if info.kind == "single" and info.id not in gymnasium.registry:
        wrappers = tuple(
            WrapperSpec(entry.rpartition(":")[2], entry, dict(kwargs))
            for entry, kwargs in info.wrappers
        )
        gymnasium.register(
            id=info.id,
            entry_point=info.entry_point,
            kwargs=dict(info.kwargs),
            additional_wrappers=wrappers,
            vector_entry_point=info.vector_entry_point,
        )


REGISTRY_FILE = "registry.yaml"

REGISTRY_FORMAT = """\
family: Safe                   # the family of every id below (a group may set its own)
groups:                        # one group per paper (Methods) or one for the whole family
  - paper: "Authors, Title, Venue Year"
    family: SafeBullet         # optional: this group's family
    requires: [pybullet]       # optional: registered only when these modules are importable
    requires_programs: [minetestserver]  # optional: ... and these programs are installed
    defaults: {kind: single, obs_kind: vector, dataset: .datasets:write_dataset_for}
    agents: {bc_all: omnigym.agents.safety.bc:BCAll}   # usable on every id of the group
    envs:
      - id: Safe/PointGoal1-v0
        entry_point: .goal:GoalEnv                     # '.module' is inside the family package
        kwargs: {robot: Point, level: 1}
        description: One line that `omnigym list` shows.
        agents: {oracle: omnigym.agents.lmrl.maze:MazeOracle}  # optional, this id only
        metadata: {}                                   # optional, free-form (EnvInfo.metadata)
"""
"""The shape of a family's ``registry.yaml`` (the fields of an env entry, or of a group's
``defaults``, are :class:`EnvInfo`'s)."""

_ENV_FIELDS = {
    "id",
    "entry_point",
    "kind",
    "obs_kind",
    "description",
    "kwargs",
    "normalizer",
    "agents",
    "aec_entry_point",
    "dataset",
    "wrappers",
    "vector_entry_point",
    "metadata",
}
_GROUP_FIELDS = {"paper", "family", "requires", "requires_programs", "defaults", "agents", "envs"}
_ENTRY_FIELDS = ("entry_point", "aec_entry_point", "normalizer", "dataset", "vector_entry_point")


def register_family(package: str) -> list[str]:
    """Register every id of ``<package>/registry.yaml`` and return the ids registered.

    Entry points that start with ``.`` name modules inside ``package``. A group whose
    ``requires`` names a module that is not installed, or whose ``requires_programs`` names a
    program found neither on ``PATH`` nor in ``/usr/games`` (Debian's games), is skipped
    (optional extras). Errors name the file and the entry.
    """
    path = resources.files(package) / REGISTRY_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    registered = []
    for number, group in enumerate(data["groups"]):
        where = f"{package.replace('.', '/')}/{REGISTRY_FILE}: groups[{number}]"
        unknown = sorted(set(group) - _GROUP_FIELDS)
        if unknown:
            raise ValueError(f"{where}: unknown fields {unknown}")
        if not all(importlib.util.find_spec(module) for module in group.get("requires", ())):
            continue
        if not all(_installed(program) for program in group.get("requires_programs", ())):
            continue
        for entry in group["envs"]:
            fields = {**group.get("defaults", {}), **entry}
            unknown = sorted(set(fields) - _ENV_FIELDS)
            if unknown:
                raise ValueError(f"{where}: {entry.get('id')}: unknown fields {unknown}")
            for name in _ENTRY_FIELDS:
                if isinstance(fields.get(name), str) and fields[name].startswith("."):
                    fields[name] = package + fields[name]
            fields["agents"] = {**group.get("agents", {}), **fields.get("agents", {})}
            fields["wrappers"] = tuple(
                (entry_point, kwargs) for entry_point, kwargs in fields.get("wrappers", ())
            )
            info = EnvInfo(
                family=group.get("family", data["family"]), paper=group["paper"], **fields
            )
            register(info)
            registered.append(info.id)
    return registered


def _installed(program: str) -> bool:
    return bool(shutil.which(program) or shutil.which(program, path="/usr/games"))


def load_entry_point(entry_point: str) -> Any:
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, sep, attr = entry_point.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"entry point {entry_point!r} is not of the form 'module:attr'")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None


def spec(env_id: str) -> EnvInfo:
    """The :class:`EnvInfo` of ``env_id``; unknown ids raise :class:`UnknownEnvError`."""
    try:
        return _REGISTRY[env_id]
    except KeyError:
        close = difflib.get_close_matches(env_id, list(_REGISTRY), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownEnvError(
            f"unknown environment id {env_id!r}{hint} (`omnigym list` shows every id)"
        ) from None


def list_envs(family: str | None = None, kind: Kind | None = None) -> list[EnvInfo]:
    """Every registered environment, sorted by id, optionally filtered by family or kind."""
    return [
        info
        for env_id, info in sorted(_REGISTRY.items())
        if (family is None or info.family.lower() == family.lower())
        and (kind is None or info.kind == kind)
    ]


def make(env_id: str, **kwargs: Any) -> Any:
    """Make ``env_id``: a ``gymnasium.Env`` for single-agent ids, a PettingZoo ``ParallelEnv``
    for multi-agent ones. Keyword arguments go to the environment's constructor."""
    info = spec(env_id)
    if info.kind == "single":
        return gymnasium.make(env_id, **kwargs)
    return load_entry_point(info.entry_point)(**{**info.kwargs, **kwargs})


def make_aec(env_id: str, **kwargs: Any) -> Any:
    """Make the PettingZoo AEC form of a multi-agent id (native AEC where the family has one,
    else PettingZoo's parallel-to-AEC conversion)."""
    info = spec(env_id)
    if info.kind != "multi":
        raise ValueError(f"{env_id!r} is a single-agent environment; use omnigym.make")
    if info.aec_entry_point is not None:
        return load_entry_point(info.aec_entry_point)(**{**info.kwargs, **kwargs})
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(make(env_id, **kwargs))
