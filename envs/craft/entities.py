"""Entities of the Craft engine: mobs, dropped items and other players' avatars.

Follows the objects of Craftium (Malagón, Ceberio, Lozano, ICML 2025) as its Luanti mods define
them: hostile mobs wander until a living player comes within view range, then chase and attack in
reach at a fixed interval; the SpidersAttack spider also leaps at its target; passive animals wander
and flee for a while when punched; villagers wander; dropped items fall and rest, and are picked up
when punched. Every kind is data (``data/mobs.yaml``, with published kind ids), and every entity is
a small class with an ``update`` run once per frame, in the spirit of Crafter's objects.

Mob bodies move with the player physics of ``physics.step_player`` (walls, gravity, step-up), with
their own box and speed: an entity carries the attributes ``step_player`` reads and writes
(``position``, ``velocity``, ``yaw``, ``on_ground``), so it is its own body. A mob walks by
holding ``forward`` along its yaw and jumps when a wall stops it.

Departures from Luanti's mob mods (mobs_redo, mobs_monster, mobs_animal), for simplicity and
determinism: mobs turn instantly; a hostile mob sees through walls (no line-of-sight test) and
attacks at a feet-to-feet distance; mobs take no fall damage and do not collide with each other or
with players; monster tiers and animals are this project's own kinds. Damage to players is not
applied here: a landed attack appends a ``PlayerHurt`` event that the environment applies when
damage is enabled. All randomness comes from the context's generator.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import yaml

from omnigym.envs.craft.digging import Tool
from omnigym.envs.craft.engine import DATA_DIR, Player, World
from omnigym.envs.craft.physics import Controls, PhysicsConfig, step_player

BEHAVIOURS = ("player", "item", "hostile", "passive", "villager")
OBSERVATION_COLUMNS = ("kind_id", "dx", "dy", "dz", "hp", "valid")
"""Columns of an ``Entities.observation`` row (the ``entities`` rows of ``obs_mode="voxels"``)."""
EPS = 1e-9
BLOCKED_FRACTION = 0.1
"""A walking mob whose velocity was stopped on an axis carrying more than this fraction of its
heading is blocked by a wall, and jumps on the next frame."""

_STILL = Controls()
_FORWARD = Controls(forward=True)
_FORWARD_JUMP = Controls(forward=True, jump=True)


@dataclass(frozen=True)
class Leap:
    """A mob's leap: when a chased player is within ``range`` (and out of reach), it jumps at
    ``jump_speed`` and flies at ``speed`` toward them, at most once per ``interval`` seconds."""

    range: float
    speed: float
    jump_speed: float
    interval: float


@dataclass(frozen=True)
class Kind:
    """One entity kind, as listed in ``mobs.yaml`` (see the file for the meaning of each field)."""

    name: str
    id: int
    behaviour: str
    size: tuple[float, float]
    hp: float
    color: tuple[int, int, int]
    damage: int
    speed: float
    walk_speed: float
    reach: float
    view_range: float
    attack_interval: float
    flee_time: float
    idle_time: tuple[float, float]
    wander_time: tuple[float, float]
    wander_chance: float
    knockback: float
    knockback_up: float
    leap: Leap | None = None


class KindTable:
    """Every entity kind by name: ``table["spider"].hp``; ``table.by_id(3).name``."""

    def __init__(self, kinds: Iterable[Kind]):
        self._by_name: dict[str, Kind] = {}
        self._by_id: dict[int, Kind] = {}
        for kind in kinds:
            if kind.behaviour not in BEHAVIOURS:
                raise ValueError(f"kind {kind.name}: behaviour must be one of {BEHAVIOURS}")
            if kind.id in self._by_id:
                other = self._by_id[kind.id].name
                raise ValueError(f"kind id {kind.id} given to {other} and {kind.name}")
            if kind.name in self._by_name:
                raise ValueError(f"kind {kind.name} is listed twice")
            self._by_name[kind.name] = kind
            self._by_id[kind.id] = kind

    @classmethod
    def load(cls, path: str | Path | None = None) -> KindTable:
        """Reads a kinds file (default: the packaged ``data/mobs.yaml``)."""
        path = Path(path) if path is not None else DATA_DIR / "mobs.yaml"
        data = yaml.safe_load(path.read_text())
        defaults = data.get("defaults", {})
        try:
            kinds = [
                _kind_from_entry(name, {**defaults, **entry})
                for name, entry in data["kinds"].items()
            ]
        except TypeError as error:
            raise ValueError(f"{path}: bad kind entry: {error}") from None
        return cls(kinds)

    def replace(self, name: str, **changes) -> KindTable:
        """A copy of the table with some stats of kind ``name`` changed (e.g. ``hp=12``)."""
        unknown = set(changes) - {f.name for f in fields(Kind)}
        if unknown:
            raise TypeError(f"unknown kind fields: {sorted(unknown)}")
        changed = replace(self[name], **changes)
        return KindTable(changed if kind.name == name else kind for kind in self)

    def __getitem__(self, name: str) -> Kind:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no entity kind named {name!r}") from None

    def by_id(self, kind_id: int) -> Kind:
        return self._by_id[kind_id]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Kind]:
        return iter(sorted(self._by_id.values(), key=lambda k: k.id))

    def __len__(self) -> int:
        return len(self._by_id)


def _kind_from_entry(name: str, entry: dict) -> Kind:
    leap = entry.pop("leap", None)
    pairs = {key: tuple(entry.pop(key)) for key in ("size", "idle_time", "wander_time")}
    return Kind(
        name=name,
        color=tuple(int(c) for c in entry.pop("color")),
        leap=None if leap is None else Leap(**leap),
        **{key: tuple(float(v) for v in pair) for key, pair in pairs.items()},
        **entry,
    )


@dataclass(frozen=True)
class PlayerHurt:
    """A hostile mob's attack landed on player index ``player`` for ``damage`` hp."""

    player: int
    damage: int
    kind: str


@dataclass(frozen=True)
class PunchResult:
    """What a punch did: the kind punched, the damage dealt, whether it died, and what was
    picked up (item and count, for item entities)."""

    kind: str
    damage: int
    killed: bool
    picked_up: tuple[str, int] | None = None


@dataclass
class EntityContext:
    """What entities see during one frame. ``events`` collects what they report (``PlayerHurt``);
    the environment reads and clears it after each frame."""

    world: World
    config: PhysicsConfig
    rng: np.random.Generator
    players: Sequence[Player]
    player_alive: Sequence[bool]
    time: float = 0.0
    events: list = field(default_factory=list)


class Entity:
    """A body in the world: a ``width × height × width`` box times ``scale`` standing on
    ``position`` (the middle of its bottom face, in nodes).

    This base class is another player's avatar, moved by the environment: its ``update`` does
    nothing and a punch only reports the damage, which the environment applies to the player.
    """

    def __init__(
        self,
        spec: Kind,
        position: Iterable[float],
        yaw: float = 0.0,
        *,
        hp: float | None = None,
        color: Iterable[int] | None = None,
        scale: float = 1.0,
    ):
        self.spec = spec
        self.kind = spec.name
        self.kind_id = spec.id
        self.position = np.array(position, dtype=np.float64)
        if self.position.shape != (3,):
            raise ValueError(f"position must have 3 coordinates, got {self.position.shape}")
        self.velocity = np.zeros(3)
        self.yaw = float(yaw) % 360.0
        self.hp = float(spec.hp if hp is None else hp)
        self.size = spec.size
        self.color = spec.color if color is None else tuple(int(c) for c in color)
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.scale = float(scale)
        self.removed = False
        self.on_ground = False
        self._physics_base: PhysicsConfig | None = None
        self._physics: dict[tuple[float, float], PhysicsConfig] = {}

    def __repr__(self) -> str:
        x, y, z = self.position
        return f"{type(self).__name__}({self.kind}, ({x:.2f}, {y:.2f}, {z:.2f}), hp={self.hp:g})"

    def half_extents(self) -> tuple[float, float]:
        """Half the width and the height of the box, scale included."""
        return 0.5 * self.size[0] * self.scale, self.size[1] * self.scale

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest corners of the box, in nodes."""
        hw, h = self.half_extents()
        return self.position - (hw, 0.0, hw), self.position + (hw, h, hw)

    def update(self, ctx: EntityContext) -> None:
        """Runs one frame."""

    def punched(self, damage: int, attacker_position: np.ndarray) -> PunchResult:
        """Takes a punch of ``damage`` hp from a player standing at ``attacker_position``."""
        return PunchResult(self.kind, damage, False)

    def physics(self, config: PhysicsConfig, speed: float) -> PhysicsConfig:
        """``config`` with this body's box and walking ``speed``, built once and kept."""
        if self._physics_base is not config:
            self._physics_base, self._physics = config, {}
        key = (speed, self.scale)
        physics = self._physics.get(key)
        if physics is None:
            hw, h = self.half_extents()
            physics = replace(config, walk_speed=speed, box=(2.0 * hw, h, 2.0 * hw))
            self._physics[key] = physics
        return physics


class ItemEntity(Entity):
    """``count`` of ``item`` lying in the world: falls under gravity, rests on the ground, and is
    picked up (removed, handed to the puncher) when punched."""

    def __init__(
        self,
        spec: Kind,
        position: Iterable[float],
        yaw: float = 0.0,
        *,
        item: str,
        count: int = 1,
        **body,
    ):
        super().__init__(spec, position, yaw, **body)
        if count < 1:
            raise ValueError(f"an item entity needs count >= 1, got {count}")
        self.item = item
        self.count = int(count)

    def __repr__(self) -> str:
        x, y, z = self.position
        return f"ItemEntity({self.item} x{self.count}, ({x:.2f}, {y:.2f}, {z:.2f}))"

    def update(self, ctx: EntityContext) -> None:
        step_player(ctx.world, self, _STILL, self.physics(ctx.config, 0.0))

    def punched(self, damage: int, attacker_position: np.ndarray) -> PunchResult:
        self.removed = True
        return PunchResult(self.kind, 0, False, (self.item, self.count))


class Mob(Entity):
    """A living mob: a small state machine over ``state``.

    - ``idle``: stands still for a random time; then ``wander`` with chance ``wander_chance``,
      else idle again.
    - ``wander``: walks at ``walk_speed`` on a random heading for a random time.
    - ``chase`` (hostile): runs at ``speed`` toward the nearest living player within
      ``view_range``.
    - ``attack`` (hostile): stands facing a player within ``reach``; an attack lands at most once
      per ``attack_interval`` (a ``PlayerHurt`` event). A mob arrives with its attack charged
      unless it attacked less than an interval ago; a spawned mob starts uncharged.
    - ``flee`` (passive): after a punch, runs at ``speed`` away from the attacker for
      ``flee_time``.
    """

    def __init__(self, spec: Kind, position: Iterable[float], yaw: float = 0.0, **body):
        super().__init__(spec, position, yaw, **body)
        self.state = "idle"
        self.state_time = 0.0
        self.heading = self.yaw
        self.attack_cooldown = spec.attack_interval
        self.target: int | None = None
        self.target_distance = math.inf
        self._blocked = False

    def update(self, ctx: EntityContext) -> None:
        speed = self._think(ctx)
        if speed > 0.0:
            controls = _FORWARD_JUMP if self._blocked and self.on_ground else _FORWARD
        else:
            controls = _STILL
        step_player(ctx.world, self, controls, self.physics(ctx.config, speed))
        self._blocked = speed > 0.0 and self._stopped_by_wall()

    def punched(self, damage: int, attacker_position: np.ndarray) -> PunchResult:
        self.hp -= damage
        dx = self.position[0] - attacker_position[0]
        dz = self.position[2] - attacker_position[2]
        norm = math.hypot(dx, dz)
        if norm > EPS:
            self.velocity[0] = dx / norm * self.spec.knockback
            self.velocity[2] = dz / norm * self.spec.knockback
            if self.spec.behaviour == "passive" and self.spec.flee_time > 0.0:
                self.state, self.state_time = "flee", self.spec.flee_time
                self.heading = math.degrees(math.atan2(-dx, dz)) % 360.0
        if self.on_ground:
            self.velocity[1] = self.spec.knockback_up
        self.removed = self.hp <= 0.0
        return PunchResult(self.kind, damage, self.removed)

    def _think(self, ctx: EntityContext) -> float:
        """Advances the state machine by one frame, turns, and returns the speed to walk at."""
        spec, dt = self.spec, ctx.config.dt
        self.attack_cooldown = max(self.attack_cooldown - dt, 0.0)
        if spec.behaviour == "hostile":
            self._find_target(ctx)
            if self.target is not None:
                target = ctx.players[self.target].position
                self.yaw = (
                    math.degrees(
                        math.atan2(self.position[0] - target[0], target[2] - self.position[2])
                    )
                    % 360.0
                )
                if self.target_distance > spec.reach:
                    self.state = "chase"
                    return spec.speed
                self.state = "attack"
                if self.attack_cooldown <= EPS:
                    ctx.events.append(PlayerHurt(self.target, spec.damage, self.kind))
                    self.attack_cooldown = spec.attack_interval
                return 0.0
            if self.state in ("chase", "attack"):
                self.state, self.state_time = "idle", 0.0
        self.state_time -= dt
        if self.state == "flee" and self.state_time > 0.0:
            self.yaw = self.heading
            return spec.speed
        if self.state_time <= 0.0:
            self._rest_or_walk(ctx.rng)
        if self.state == "wander":
            self.yaw = self.heading
            return spec.walk_speed
        return 0.0

    def _find_target(self, ctx: EntityContext) -> None:
        """The nearest living player within view range (feet to feet), or none."""
        self.target, self.target_distance = None, math.inf
        x, y, z = self.position
        for i, player in enumerate(ctx.players):
            if not ctx.player_alive[i]:
                continue
            p = player.position
            distance = math.sqrt((p[0] - x) ** 2 + (p[1] - y) ** 2 + (p[2] - z) ** 2)
            if distance <= self.spec.view_range and distance < self.target_distance:
                self.target, self.target_distance = i, distance

    def _rest_or_walk(self, rng: np.random.Generator) -> None:
        spec = self.spec
        if rng.random() < spec.wander_chance:
            self.state = "wander"
            self.heading = rng.uniform(0.0, 360.0)
            self.state_time = rng.uniform(*spec.wander_time)
        else:
            self.state = "idle"
            self.state_time = rng.uniform(*spec.idle_time)

    def _stopped_by_wall(self) -> bool:
        if not self.on_ground:
            return False
        yaw = math.radians(self.yaw)
        wish_x, wish_z = -math.sin(yaw), math.cos(yaw)
        return (abs(wish_x) > BLOCKED_FRACTION and self.velocity[0] == 0.0) or (
            abs(wish_z) > BLOCKED_FRACTION and self.velocity[2] == 0.0
        )


class Spider(Mob):
    """A hostile mob that also leaps: chasing a player within leap range, it jumps and flies at
    the leap speed until it lands, at most once per leap interval."""

    def __init__(self, spec: Kind, position: Iterable[float], yaw: float = 0.0, **body):
        if spec.leap is None:
            raise ValueError(f"kind {spec.name} has no leap parameters")
        super().__init__(spec, position, yaw, **body)
        self.leap_cooldown = 0.0
        self.leaping = False

    def _think(self, ctx: EntityContext) -> float:
        speed = super()._think(ctx)
        leap = self.spec.leap
        self.leap_cooldown = max(self.leap_cooldown - ctx.config.dt, 0.0)
        if self.leaping:
            if not self.on_ground:
                return leap.speed
            self.leaping = False
        if (
            self.state == "chase"
            and self.on_ground
            and self.leap_cooldown <= EPS
            and self.target_distance <= leap.range
        ):
            yaw = math.radians(self.yaw)
            self.velocity[:] = (
                -math.sin(yaw) * leap.speed,
                leap.jump_speed,
                math.cos(yaw) * leap.speed,
            )
            self.leaping, self.leap_cooldown = True, leap.interval
            return leap.speed
        return speed


def _entity_class(spec: Kind) -> type[Entity]:
    if spec.behaviour == "item":
        return ItemEntity
    if spec.behaviour == "player":
        return Entity
    return Spider if spec.leap is not None else Mob


class Entities:
    """The entities of one world, in spawn order (which fixes the update order).

    Args:
        kinds: the kind table (default: ``KindTable.load()``).
    """

    def __init__(self, kinds: KindTable | None = None):
        self.kinds = KindTable.load() if kinds is None else kinds
        self._entities: list[Entity] = []

    def add(self, entity: Entity) -> Entity:
        self._entities.append(entity)
        return entity

    def spawn(self, kind: str, position: Iterable[float], yaw: float = 0.0, **overrides) -> Entity:
        """Builds and adds an entity of ``kind``; ``overrides`` are ``hp``, ``color``, ``scale``,
        and for items ``item`` (required) and ``count``."""
        spec = self.kinds[kind]
        return self.add(_entity_class(spec)(spec, position, yaw, **overrides))

    def __len__(self) -> int:
        return len(self._entities)

    def __iter__(self) -> Iterator[Entity]:
        return iter(self._entities)

    def clear(self) -> None:
        self._entities.clear()

    def count(self, kind: str | None = None) -> int:
        """Number of live entities (of ``kind``, when given)."""
        return sum(1 for e in self._entities if not e.removed and kind in (None, e.kind))

    def update(self, ctx: EntityContext) -> None:
        """Runs one frame of every live entity, then drops the removed ones."""
        for entity in self._entities:
            if not entity.removed:
                entity.update(ctx)
        if any(entity.removed for entity in self._entities):
            self._entities = [e for e in self._entities if not e.removed]

    def punch(self, entity: Entity, tool: Tool, attacker_position: Iterable[float]) -> PunchResult:
        """A player at ``attacker_position`` lands a punch of ``tool`` on ``entity``.

        Mobs lose the tool's fleshy damage, are knocked back away from the attacker and die
        (marked removed) at 0 hp; passive animals flee. Items are picked up. Another player's
        avatar reports the damage for the environment to apply.
        """
        if entity.removed:
            raise ValueError(f"{entity!r} was already removed")
        return entity.punched(tool.damage, np.asarray(attacker_position, dtype=np.float64))

    def _live(self, exclude: Entity | None) -> list[Entity]:
        return [e for e in self._entities if not e.removed and e is not exclude]

    def boxes(self, exclude: Entity | None = None) -> np.ndarray:
        """``float64 [M, 9]`` boxes of the live entities for the renderer
        (``render.ENTITY_BOX_FIELDS``: centre, half-sizes, colour)."""
        live = self._live(exclude)
        out = np.empty((len(live), 9))
        for row, entity in zip(out, live, strict=True):
            hw, h = entity.half_extents()
            x, y, z = entity.position
            row[:] = (x, y + 0.5 * h, z, hw, 0.5 * h, hw, *entity.color)
        return out

    def observation(
        self, position: Iterable[float], max_rows: int = 32, exclude: Entity | None = None
    ) -> np.ndarray:
        """``float32 [max_rows, 6]`` rows (``OBSERVATION_COLUMNS``) of the live entities nearest
        to ``position``, nearest first (ties in spawn order); unused rows are all zero."""
        out = np.zeros((max_rows, len(OBSERVATION_COLUMNS)), dtype=np.float32)
        live = self._live(exclude)
        if not live:
            return out
        deltas = np.array([e.position for e in live]) - np.asarray(position, dtype=np.float64)
        order = np.argsort(np.einsum("ij,ij->i", deltas, deltas), kind="stable")[:max_rows]
        n = len(order)
        out[:n, 0] = [live[i].kind_id for i in order]
        out[:n, 1:4] = deltas[order]
        out[:n, 4] = [live[i].hp for i in order]
        out[:n, 5] = 1.0
        return out

    def pointed(
        self,
        eye: Iterable[float],
        direction: Iterable[float],
        max_dist: float,
        exclude: Entity | None = None,
    ) -> tuple[Entity, float] | None:
        """The live entity whose box a ray from ``eye`` along ``direction`` (unit) enters first
        within ``max_dist``, and the distance; ``None`` when the ray meets none."""
        ex, ey, ez = (float(v) for v in eye)
        dx, dy, dz = (float(v) for v in direction)
        best: tuple[Entity, float] | None = None
        limit = max_dist
        for entity in self._live(exclude):
            hw, h = entity.half_extents()
            px, py, pz = entity.position
            t = ray_box(ex, ey, ez, dx, dy, dz, px - hw, py, pz - hw, px + hw, py + h, pz + hw)
            if t is not None and t <= limit:
                best, limit = (entity, t), t
        return best


def ray_box(ex, ey, ez, dx, dy, dz, x0, y0, z0, x1, y1, z1) -> float | None:
    """Distance along the ray to where it enters the box (0 from inside), ``None`` if it misses
    the box or the box is behind the eye (slab test)."""
    near, far = 0.0, math.inf
    for e, d, lo, hi in ((ex, dx, x0, x1), (ey, dy, y0, y1), (ez, dz, z0, z1)):
        if abs(d) < EPS:
            if e < lo or e > hi:
                return None
            continue
        t0, t1 = (lo - e) / d, (hi - e) / d
        if t0 > t1:
            t0, t1 = t1, t0
        near, far = max(near, t0), min(far, t1)
        if near > far:
            return None
    return near
