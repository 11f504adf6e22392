"""MCU's world state on the Craft engine: the arena, the player's survival state, mobs and ticks.

Follows the game MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) plays, Minecraft 1.16 through
MineStudio, at the level its atomic tasks need: a grid of blocks (the Craft engine's ``World``
holding MCU's content ids, see :mod:`omnigym.envs.mcu.registries`), a player with health, hunger,
armour, effects and an inventory, time of day, weather, and mobs that act every tick.

Departures, for a discrete and fast symbolic game:

- Time moves in ticks of 0.25 s (5 Minecraft game ticks). The player stands on nodes: one node
  per tick of movement, one-node step-up, gravity with Minecraft's fall damage (beyond 3 nodes).
  Facing is one of four directions and pitch one of −90, −45, 0, 45, 90 degrees (Luanti's
  convention, which the engine's ``Player`` keeps: pitch > 0 looks down).
- What a command targets is the first pointable node along a short fixed ray for the current
  facing and pitch (reach 4), not a continuous crosshair; placing while looking straight down
  pillars up (jump and place in one command).
- Dug blocks and killed mobs' drops go straight into the inventory; dropped items vanish.
  Eating is allowed at full hunger. Mobs neither despawn nor burn in daylight, and attack
  without a line-of-sight check.
- Health is a float kept here (armour takes 4 % per point off each hit), not the engine
  ``Player``'s integer ``hp``; the ``Player`` holds position, look and inventory (36 slots, each
  stack capped at its item's Minecraft stack size), with tool wear kept per slot beside it.
- The world is a 41 × 24 × 41 arena of flat grass over dirt, stone and bedrock; its edge is the
  engine's ``ignore``, an invisible wall. Init commands build each task's scene in it. Biomes
  are a per-column map (plains unless an init command marks a patch).
- Water is a non-solid block the pointing ray passes through: the player sinks to the bottom of
  a pool (no fall damage), and with the head under water loses breath (15 s, 60 ticks), then
  1 hp every 4 ticks, unless water breathing is on. Mobs avoid water.
- Fences (tag ``fence``) stand 1.5 nodes tall: neither mobs nor the player step up onto them.
- Experience is kept in whole levels (``levels``), spent by enchanting and the anvil.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from omnigym.envs.craft.engine import AIR, Inventory, Player, World
from omnigym.envs.mcu.episode_log import Act
from omnigym.envs.mcu.registries import ARMOR_PIECES, Mob, Registry

ARENA_SHAPE = (41, 24, 41)
ARENA_ORIGIN = (-20, 0, -20)
GROUND_Y = 4
"""Top of the grass layer; the player starts standing on it at node ``(0, 5, 0)``."""
SPAWN = (0, GROUND_Y + 1, 0)
GROUND_LAYERS = (
    ("bedrock", 0, 0),
    ("stone", 1, GROUND_Y - 2),
    ("dirt", GROUND_Y - 1, GROUND_Y - 1),
    ("grass_block", GROUND_Y, GROUND_Y),
)
"""The arena's ground: ``(block, lowest y, highest y)`` layers."""
GROUND_BLOCKS = frozenset(block for block, _, _ in GROUND_LAYERS)
GAME_TICKS_PER_TICK = 5
DAY, NIGHT, NOON, MIDNIGHT = 1000, 13000, 6000, 18000
FACINGS = ((0, 1), (-1, 0), (0, -1), (1, 0))
"""Forward ``(dx, dz)`` for yaw 0, 90, 180, 270: the engine's ``Player`` convention (yaw grows
turning left; +z is north, as in Luanti, so a scene written for Minecraft, where +z is south,
appears mirrored)."""
FACING_NAMES = ("north", "west", "south", "east")
PITCHES = (-90, -45, 0, 45, 90)
RAYS = {
    0: ((1, 1), (2, 1), (3, 1), (4, 1)),
    45: ((1, 0), (1, -1), (2, -1), (2, -2), (3, -2)),
    90: ((0, -1),),
    -45: ((1, 2), (1, 3), (2, 3), (2, 4)),
    -90: ((0, 2), (0, 3), (0, 4)),
}
"""Cells a look reaches, as ``(forward, up)`` offsets from the feet node, nearest first."""
SWING = ((1, 0), (1, 1), (1, -1), (2, 0), (3, 0))
"""Cells an attack reaches, as ``(forward, right)`` offsets, nearest first."""
EFFECTS = (
    "night_vision",
    "blindness",
    "regeneration",
    "poison",
    "strength",
    "resistance",
    "speed",
    "slowness",
    "water_breathing",
    "fire_resistance",
    "invisibility",
    "instant_health",
)
WEATHERS = ("clear", "rain", "thunder")
INVENTORY_SLOTS = 36
HUNGER_EVERY, REGEN_EVERY = 160, 16
BREATH, DROWN_EVERY = 60, 4
LEASH_SLACK = 2
"""A leashed mob walks toward the player whenever it is farther than this (Chebyshev)."""
PEN_SIZE = 6
"""A mob that can walk to at most this many nodes is penned in (``trapped``)."""
BASE_BIOME = "plains"


@dataclass
class MobState:
    """One live mob: its kind, node, hit points and attack clock."""

    kind: Mob
    position: tuple[int, int, int]
    health: float
    uid: int
    cooldown: int = 0
    provoked: bool = False
    tamed: bool = False
    leashed: bool = False
    trapped: bool = False
    sheared: bool = False
    tied: bool = False

    @property
    def hostile(self) -> bool:
        return self.kind.behaviour == "hostile" or self.provoked


@dataclass
class MCUWorld:
    """The state of one MCU episode and the rules that change it (one method per game act)."""

    registry: Registry
    rng: np.random.Generator
    grid: World = field(init=False)
    player: Player = field(init=False)

    def __post_init__(self):
        self.grid = World(self.registry.materials, ARENA_SHAPE, ARENA_ORIGIN)
        lo, hi = self.grid.bounds
        for block, bottom, top in GROUND_LAYERS:
            self.grid.fill((lo[0], bottom, lo[2]), (hi[0], top, hi[2]), block)
        self.player = Player(position=SPAWN, inventory=Inventory(INVENTORY_SLOTS))
        self.wear = [0] * INVENTORY_SLOTS
        self.armor: dict[str, tuple[str, int] | None] = dict.fromkeys(ARMOR_PIECES)
        self.health = 20.0
        self.hunger = 20
        self.time = DAY
        self.weather = "clear"
        self.effects: dict[str, int] = {}
        self.mobs: list[MobState] = []
        self.events: Counter = Counter()
        self.placed: set[tuple[int, int, int]] = set()
        self.ticks = 0
        self.start_y = SPAWN[1]
        self.max_y = SPAWN[1]
        self.log: list[str] = []
        self.acts: list[Act] = []
        self._next_uid = 0
        self.levels = 0
        self.air = BREATH
        self.underwater_ticks = 0
        self.brew_fuel = 0
        self.powered: set[tuple[int, int, int]] = set()
        self.enchantments: dict[int, tuple[str, ...]] = {}
        self.names: dict[int, str] = {}
        self.biome_names = (BASE_BIOME, *sorted(set(self.registry.biomes) - {BASE_BIOME}))
        self.biomes = np.zeros((ARENA_SHAPE[0], ARENA_SHAPE[2]), dtype=np.int8)
        self._water = self.registry.materials.id("water")
        self._fences = frozenset(b.id for b in self.registry.blocks.values() if "fence" in b.tags)

    @property
    def position(self) -> tuple[int, int, int]:
        x, y, z = self.player.position  # whole nodes: the player only ever moves node to node
        return int(x), int(y), int(z)

    @property
    def facing(self) -> int:
        return int(round(self.player.yaw / 90.0)) % 4

    @property
    def pitch(self) -> int:
        return int(round(self.player.pitch))

    @property
    def dead(self) -> bool:
        return self.health <= 0

    def block(self, cell: tuple[int, int, int]) -> str:
        return self.grid.get_name(*cell)

    def solid(self, x: int, y: int, z: int) -> bool:
        return bool(self.registry.materials.walkable[self.grid.get(x, y, z)])

    def standable(self, x: int, y: int, z: int) -> bool:
        """A body two nodes tall fits at ``(x, y, z)`` on solid ground that is not a fence."""
        return (
            not self.solid(x, y, z)
            and not self.solid(x, y + 1, z)
            and self.solid(x, y - 1, z)
            and not self.fence(x, y - 1, z)
        )

    def fence(self, x: int, y: int, z: int) -> bool:
        return self.grid.get(x, y, z) in self._fences

    def water(self, x: int, y: int, z: int) -> bool:
        return self.grid.get(x, y, z) == self._water

    def underwater(self) -> bool:
        x, y, z = self.position
        return self.water(x, y + 1, z)

    def biome(self) -> str:
        return self.biome_at(self.position)

    def biome_at(self, cell: tuple[int, int, int]) -> str:
        ox, _, oz = ARENA_ORIGIN
        return self.biome_names[self.biomes[cell[0] - ox, cell[2] - oz]]

    def set_biome(self, lo: tuple[int, int], hi: tuple[int, int], name: str) -> None:
        """Marks the columns from ``lo`` to ``hi`` (``(x, z)`` corners, clipped) as ``name``."""
        ox, _, oz = ARENA_ORIGIN
        (x0, x1), (z0, z1) = sorted((lo[0], hi[0])), sorted((lo[1], hi[1]))
        x0, z0 = max(x0 - ox, 0), max(z0 - oz, 0)
        self.biomes[x0 : x1 - ox + 1, z0 : z1 - oz + 1] = self.biome_names.index(name)

    def ray_water(self) -> tuple[int, int, int] | None:
        """The first water node along the look, before any pointable node."""
        pointable = self.registry.materials.pointable
        for cell in self.ray():
            if self.water(*cell):
                return cell
            if pointable[self.grid.get(*cell)]:
                return None
        return None

    def ray(self) -> list[tuple[int, int, int]]:
        """Cells the current look reaches, nearest first."""
        x, y, z = self.position
        dx, dz = FACINGS[self.facing]
        return [(x + f * dx, y + u, z + f * dz) for f, u in RAYS[self.pitch]]

    def target(self) -> tuple[int, int, int] | None:
        """The node the player points at: the first pointable one along the ray."""
        pointable = self.registry.materials.pointable
        for cell in self.ray():
            if pointable[self.grid.get(*cell)]:
                return cell
        return None

    def placement(self) -> tuple[int, int, int] | None:
        """Where ``place`` puts a block: the free cell just before the target, if any; looking
        straight down, the player's own feet (``place`` then pillars up)."""
        previous = self.position if self.pitch == 90 else None
        pointable = self.registry.materials.pointable
        for cell in self.ray():
            if pointable[self.grid.get(*cell)]:
                return previous
            previous = cell
        return None

    def mob_ahead(self) -> MobState | None:
        """The nearest mob the player's swing reaches: straight ahead up to 3 nodes, or at the
        two front diagonals (height within one node)."""
        x, y, z = self.position
        dx, dz = FACINGS[self.facing]
        sx, sz = FACINGS[(self.facing + 3) % 4]
        for forward, side in SWING:
            cell = (x + forward * dx + side * sx, z + forward * dz + side * sz)
            for mob in self.mobs:
                if (mob.position[0], mob.position[2]) == cell and abs(mob.position[1] - y) <= 1:
                    return mob
        return None

    def visibility(self) -> int:
        """Nodes the player can see: 24 by day, 8 at night, less in rain (16) or thunder (12),
        2 when blind; night vision restores daylight range."""
        if "blindness" in self.effects:
            return 2
        radius = 24 if self.is_day() or "night_vision" in self.effects else 8
        return min(radius, {"clear": 24, "rain": 16, "thunder": 12}[self.weather])

    def is_day(self) -> bool:
        return not 13000 <= self.time % 24000 < 23000

    def armor_points(self) -> int:
        return sum(self.registry.items[s[0]].armor for s in self.armor.values() if s)

    def count(self, item: str) -> int:
        return self.player.inventory.count(item)

    def held(self) -> tuple[str, ...]:
        """The distinct items in the inventory, sorted."""
        return tuple(sorted({content[0] for content in self.player.inventory.slots if content}))

    def give(self, item: str, count: int = 1) -> int:
        """Adds items (tools start unworn); returns how many did not fit."""
        info = self.registry.items[item]
        left = self.player.inventory.add(item, count, stack_max=info.stack)
        if info.durability:
            for slot, content in enumerate(self.player.inventory.slots):
                if content is not None and content[0] == item and self.wear[slot] == 0:
                    self.wear[slot] = info.durability
        return left

    def take(self, item: str, count: int) -> int:
        """Removes up to ``count`` of ``item``; returns how many were removed."""
        slots = self.player.inventory.slots
        taken = 0
        for slot, content in enumerate(slots):
            if taken == count:
                break
            if content is not None and content[0] == item:
                moved = min(count - taken, content[1])
                slots[slot] = (item, content[1] - moved) if content[1] > moved else None
                if slots[slot] is None:
                    self.wear[slot] = 0
                    self.enchantments.pop(slot, None)
                    self.names.pop(slot, None)
                taken += moved
        return taken

    def wield(self, item: str) -> bool:
        """Moves a stack of ``item`` into the selected hotbar slot (swapping); False if absent."""
        slots = self.player.inventory.slots
        selected = self.player.inventory.selected
        for slot, content in enumerate(slots):
            if content is not None and content[0] == item:
                slots[slot], slots[selected] = slots[selected], slots[slot]
                self.wear[slot], self.wear[selected] = self.wear[selected], self.wear[slot]
                for table in (self.enchantments, self.names):
                    moving = table.pop(slot, None), table.pop(selected, None)
                    table.update({s: v for s, v in zip((selected, slot), moving, strict=True) if v})
                return True
        return False

    def wear_armor(self, item: str) -> bool:
        piece = self.registry.items[item].slot
        if piece is None or not self.take(item, 1):
            return False
        old = self.armor[piece]
        self.armor[piece] = (item, self.registry.items[item].durability)
        if old is not None:
            self.give(old[0])
        return True

    def use_tool(self, amount: int = 1) -> None:
        """Wears the wielded tool; a worn-out tool breaks."""
        selected = self.player.inventory.selected
        content = self.player.inventory.slots[selected]
        if content is None or not self.registry.items[content[0]].durability:
            return
        self.wear[selected] -= amount
        if self.wear[selected] <= 0:
            self.player.inventory.slots[selected] = None
            self.wear[selected] = 0
            self.log.append(f"{content[0]} broke")

    def turn(self, quarter_turns: int) -> None:
        self.player.yaw = (self.facing + quarter_turns) % 4 * 90.0

    def look(self, pitch: int) -> None:
        self.player.pitch = float(min(max(pitch, -90), 90))

    def teleport(self, cell: tuple[int, int, int]) -> None:
        self.player.position = np.array(cell, dtype=np.float64)
        self.max_y = max(self.max_y, cell[1])

    def step(self, dx: int, dz: int) -> bool:
        """Walks one node (stepping up one node if needed, then falling); False if blocked."""
        x, y, z = self.position
        nx, nz = x + dx, z + dz
        if not self.solid(nx, y, nz) and not self.solid(nx, y + 1, nz):
            self.teleport((nx, y, nz))
            self.fall()
            return True
        if self.can_step_up((x, y, z), nx, nz):
            self.teleport((nx, y + 1, nz))
            return True
        return False

    def can_step_up(self, cell: tuple[int, int, int], nx: int, nz: int) -> bool:
        """From ``cell``, the neighbouring column ``(nx, nz)`` is one block higher, not a fence,
        with room for the body above it and for the head above ``cell``."""
        x, y, z = cell
        return (
            self.solid(nx, y, nz)
            and not self.fence(nx, y, nz)
            and not self.solid(nx, y + 1, nz)
            and not self.solid(nx, y + 2, nz)
            and not self.solid(x, y + 2, z)
        )

    def fall(self) -> None:
        """Drops to the ground; fall damage beyond 3 nodes, none when landing in water."""
        x, y, z = self.position
        start = y
        while not self.solid(x, y - 1, z):
            y -= 1
        if y != start:
            self.teleport((x, y, z))
            if start - y > 3 and not self.water(x, y, z):
                self.hurt(start - y - 3, "fell")

    def dig(self, cell: tuple[int, int, int]) -> None:
        """Digs ``cell`` to completion: its dig time in ticks (mobs act meanwhile), then the
        drops if the wielded tool may harvest it."""
        block = self.registry.by_id[self.grid.get(*cell)]
        tool = self.player.inventory.wielded
        for _ in range(self.registry.dig_ticks(block, tool)):
            self.tick()
            if self.dead:
                return
        self.grid.set(*cell, AIR)
        self.placed.discard(cell)
        self.events["mined", block.name] += 1
        self.log.append(f"mined {block.name}")
        harvested = self.registry.can_harvest(block, tool)
        self.acts.append(Act("mine", block.name, cell, tool, harvested, inventory=self.held()))
        if harvested:
            for item, count in block.drops:
                self.give(item, count)
                self.log.append(f"got {count} {item}")
        if tool is not None and self.registry.items[tool].tool is not None:
            self.use_tool(1)
        self.fall()

    def place(self, item: str, cell: tuple[int, int, int]) -> None:
        """Places one ``item`` at ``cell``; at the player's own feet it pillars up first."""
        if cell == self.position:
            self.teleport((cell[0], cell[1] + 1, cell[2]))
        self.take(item, 1)
        self.grid.set(*cell, item)
        self.placed.add(cell)
        self.events["placed", item] += 1
        self.acts.append(Act("place", item, cell, consumed=((item, 1),)))
        self.log.append(f"placed {item}")
        self.tick()

    def attack(self, mob: MobState) -> None:
        tool = self.player.inventory.wielded
        damage = self.registry.items[tool].damage if tool else 1
        if "strength" in self.effects:
            damage += 3
        x, y, z = self.position
        high = y > mob.position[1] and (x, y - 1, z) in self.placed
        self.acts.append(
            Act("attack", mob.kind.name, tool=tool, high_ground=high, inventory=self.held())
        )
        mob.health -= damage
        mob.provoked = mob.kind.behaviour == "neutral" or mob.provoked
        self.events["damaged", mob.kind.name] += 1
        self.log.append(f"hit {mob.kind.name} for {damage}")
        if tool is not None and self.registry.items[tool].tool is not None:
            self.use_tool(1 if self.registry.items[tool].tool == "sword" else 2)
        if mob.health <= 0:
            self.mobs.remove(mob)
            self.events["killed", mob.kind.name] += 1
            self.log.append(f"killed {mob.kind.name}")
            for item, count in mob.kind.drops:
                self.give(item, count)
        self.tick()

    def summon(self, name: str, cell: tuple[int, int, int]) -> None:
        kind = self.registry.mobs[name]
        self.mobs.append(MobState(kind, cell, float(kind.health), self._next_uid))
        self._next_uid += 1

    def hurt(self, amount: float, cause: str) -> None:
        if "resistance" in self.effects:
            amount *= 0.8
        self.health = max(0.0, self.health - amount * (1 - 0.04 * min(self.armor_points(), 20)))
        self.log.append(f"took damage ({cause})")

    def eat(self, item: str) -> None:
        self.take(item, 1)
        self.hunger = min(20, self.hunger + self.registry.items[item].food)
        self.events["ate", item] += 1
        self.acts.append(Act("eat", item, consumed=((item, 1),)))
        self.log.append(f"ate {item}")
        for _ in range(6):
            self.tick()

    def sleep(self, bed: str) -> None:
        self.time = (self.time // 24000 + 1) * 24000
        self.weather = "clear"
        self.events["slept_in", bed] += 1
        self.log.append(f"slept in {bed}; it is morning")
        self.tick()

    def tick(self) -> None:
        """One tick (0.25 s): time, effects, hunger and health, then every mob acts."""
        self.ticks += 1
        self.time = (self.time + GAME_TICKS_PER_TICK) % 24000
        self.effects = {name: left - 1 for name, left in self.effects.items() if left > 1}
        if self.ticks % HUNGER_EVERY == 0:
            self.hunger = max(0, self.hunger - 1)
        self._breathe()
        if self.ticks % REGEN_EVERY == 0:
            if self.hunger >= 18 or "regeneration" in self.effects:
                self.health = min(20.0, self.health + 1)
            elif self.hunger == 0 and self.health > 1:
                self.health -= 1
            if "poison" in self.effects and self.health > 1:
                self.health -= 1
        for mob in list(self.mobs):
            self._act(mob)
            if self.dead:
                self.log.append("you died")
                return

    def pass_ticks(self, n: int) -> bool:
        """Lets ``n`` ticks pass, stopping early if the player dies; True if alive."""
        for _ in range(n):
            self.tick()
            if self.dead:
                return False
        return True

    def _breathe(self) -> None:
        if not self.underwater():
            self.air = BREATH
            return
        self.underwater_ticks += 1
        if "water_breathing" in self.effects:
            return
        self.air = max(0, self.air - 1)
        if self.air == 0 and self.ticks % DROWN_EVERY == 0:
            self.hurt(1, "drowning")

    def _act(self, mob: MobState) -> None:
        mob.cooldown = max(0, mob.cooldown - 1)
        px, py, pz = self.position
        mx, my, mz = mob.position
        reach = max(abs(px - mx), abs(pz - mz))
        if mob.trapped or mob.tied:
            return
        if mob.leashed:
            if reach > LEASH_SLACK:
                self._walk(mob, (px, pz))
            return
        if mob.hostile and reach <= mob.kind.view:
            if reach <= mob.kind.reach and abs(py - my) <= 1:
                if mob.cooldown == 0:
                    self.hurt(mob.kind.damage, mob.kind.name)
                    mob.cooldown = mob.kind.cooldown
                return
            if self.ticks % mob.kind.step_every == 0:
                self._walk(mob, (px, pz))
        elif self.ticks % mob.kind.step_every == 0 and self.rng.random() < 0.5:
            self._walk(mob, None)

    def mob_steps(self, cell: tuple[int, int, int]) -> list[tuple[int, int, int]]:
        """The nodes a mob at ``cell`` may walk to next: a standable neighbour, one node up or
        down at most."""
        x, y, z = cell
        return [
            (nx, ny, nz)
            for nx, nz in ((x + 1, z), (x - 1, z), (x, z + 1), (x, z - 1))
            for ny in (y + 1, y, y - 1)
            if self.standable(nx, ny, nz)
        ]

    def reachable(self, cell: tuple[int, int, int], limit: int, blocked=frozenset()) -> set:
        """The nodes a mob at ``cell`` can walk to (``blocked`` nodes aside), stopping once
        more than ``limit`` are found."""
        seen = {cell}
        frontier = [cell]
        while frontier and len(seen) <= limit:
            nxt = []
            for node in frontier:
                for step in self.mob_steps(node):
                    if step not in seen and step not in blocked:
                        seen.add(step)
                        nxt.append(step)
            frontier = nxt
        return seen

    def penned(self, mob: MobState) -> bool:
        """The mob is in a boat, or fenced in (it can walk to at most :data:`PEN_SIZE` nodes)."""
        return mob.trapped or len(self.reachable(mob.position, PEN_SIZE)) <= PEN_SIZE

    def _walk(self, mob: MobState, toward: tuple[int, int] | None) -> None:
        """Moves ``mob`` one node it can stand on: the one nearest ``toward`` (if nearer than
        where it is), or a random one when it wanders."""
        options = [c for c in self.mob_steps(mob.position) if c != self.position]
        if not options:
            return
        if toward is None:
            mob.position = options[int(self.rng.integers(len(options)))]
            return

        def gap(cell):
            return (cell[0] - toward[0]) ** 2 + (cell[2] - toward[1]) ** 2

        best = min(options, key=gap)
        if gap(best) < gap(mob.position):
            mob.position = best

    def distance_to(self, cell: tuple[int, int, int]) -> float:
        x, y, z = self.position
        return math.dist((x, y, z), cell)

    def around(self, radius: int) -> tuple[np.ndarray, np.ndarray]:
        """The content grid's box of nodes within ``radius`` of the feet on each axis, clipped
        to the arena (a view), and the grid index of its first node."""
        center = np.array(self.position)
        lo = np.maximum(center - radius - self.grid.origin, 0)
        hi = np.minimum(center + radius + 1 - self.grid.origin, self.grid.shape)
        return self.grid.content[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]], lo

    def found(self, block: str, radius: int) -> np.ndarray:
        """``int64[n, 3]`` nodes holding ``block`` within ``radius`` of the feet (Euclidean),
        nearest first (ties by x, y, z)."""
        box, lo = self.around(radius)
        center = np.array(self.position)
        cells = np.argwhere(box == self.grid.materials.id(block)) + lo + self.grid.origin
        squared = ((cells - center) ** 2).sum(axis=1)
        cells, squared = cells[squared <= radius * radius], squared[squared <= radius * radius]
        return cells[np.lexsort((cells[:, 2], cells[:, 1], cells[:, 0], squared))]

    def cells_of(
        self, block: str, radius: int, limit: int | None = None
    ) -> list[tuple[int, int, int]]:
        """:meth:`found` as a list of node tuples (the nearest ``limit`` if given)."""
        return [tuple(cell) for cell in self.found(block, radius)[:limit].tolist()]
