"""Craftium's ``SpidersAttack``: survive and kill five rounds of spiders in a walled cage.

Follows Craftium's spiders task (Malagón, Ceberio, Lozano, ICML 2025).

- **World**: a 20×20 cage on flat ground, open to the sky (lit by the sun), with walls of
  ``default:stonebrick`` four nodes high on a ``default:stone`` floor whose top face is at
  y = 4.5. Neither node can be dug with the sword or the hand, and a mob's jump (at most 2.2
  nodes) cannot clear the walls, so the arena never changes and no spider leaves it.
- **Start**: the player stands at Craftium's spawn (−2.5, 4.5, −1.7) looking toward −z, into the
  cage, wielding a steel sword (``default:sword_steel``: 6 damage, one punch per 0.8 s).
- **Rounds**: round r brings r spiders (r = 1 … 5; kind ``spider`` of ``data/mobs.yaml``: hp 25,
  damage 3, reach 2, view range 20, leaps at the player). A round's spiders appear
  ``spawn_delay`` seconds (Craftium's 1 s) after the previous round's last spider died, or after
  the start for round 1, each at a uniformly random floor point 1.5 nodes or more from the walls
  and ``min_spawn_distance`` nodes or more from the player, drawn from the episode's generator
  (of 64 candidate points, the first far enough, else the farthest).

Reward +1 for each spider killed, so an episode returns at most 1 + 2 + 3 + 4 + 5 = 15. The
episode terminates when round 5 is cleared or when the player dies; truncation after 4000 steps.
Success: all five rounds cleared. ``info["task"]``: ``round`` (the current round, 1 … 5),
``spiders_alive``, ``kills``, ``rounds_cleared``; final ``metrics``: ``kills``,
``rounds_cleared``, ``damage_taken``.

Departures from Craftium:

- Craftium ships the arena as a map file; this one is built from a description (a cage around
  Craftium's player and spider spawn points), not from that file.
- Craftium spawns spiders at fixed points 8.3 nodes in front of the player (round r: a row of r
  spiders); here the points are random and away from the player, so a policy cannot learn a
  fixed aim.
- Damage is on (``enable_damage: true``, as in the task table). Craftium's world file for this
  task declares ``enable_damage = false``, and whether the setting takes effect there is not
  established; without damage the death termination could never fire.
- Craftium's spider declares ``armor = 200``, under which Luanti doubles the damage it takes, so
  three steel-sword punches kill it there; with the hp 25 of ``data/mobs.yaml`` and the sword's 6
  damage it takes five here.

Timing: the 15 kills need 75 punches at least 0.8 s apart (one sword, whatever the target), about
60 s of game time plus five spawn delays. At ``frameskip=1`` and ``fps_max=200`` the 4000 steps
of an episode are 20 s, so clearing every round needs ``frameskip`` ≥ 4.
"""

from __future__ import annotations

import math

import numpy as np

from omnigym.envs.craft.core import CraftSim, FrameEvents
from omnigym.envs.craft.engine import World
from omnigym.envs.craft.tasks.base import Task, walled_floor

WALL = "default:stonebrick"
FLOOR = "default:stone"
SWORD = "default:sword_steel"
SPIDER = "spider"


class SpidersAttackTask(Task):
    """Rounds of 1 to 5 spiders in a cage (``Craft/SpidersAttack-v0``)."""

    name = "SpidersAttack"
    interior = ((-12, 7), (-20, -1))  # node ranges (inclusive) of the cage's floor, x and z
    floor_y = 4  # top face of the floor node at 4.5
    wall_height = 4
    player_start = (-2.5, 4.5, -1.7)
    player_yaw = 180.0  # facing −z, into the cage (Craftium's set_look_horizontal(π))
    rounds = 5
    wall_margin = 1.5  # spiders' centres spawn at least this far (nodes) from the walls
    spawn_candidates = 64

    def check_conf(self) -> None:
        for key, unit in (("spawn_delay", "seconds"), ("min_spawn_distance", "nodes")):
            value = self.conf[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"minetest_conf[{key!r}] must be a number, got {value!r}")
            if not 0 <= value < math.inf:
                raise ValueError(f"minetest_conf[{key!r}] must be >= 0 {unit}, got {value!r}")

    def build_world(self, map_seed: int | None) -> World:
        return walled_floor(
            self.materials, self.interior, self.floor_y, self.wall_height, WALL, FLOOR
        )

    # ---- episode ----------------------------------------------------------------------------

    def reset(self, sim: CraftSim) -> None:
        player = sim.avatars[0].player
        player.position[:] = self.player_start
        player.yaw, player.pitch = self.player_yaw, 0.0
        player.inventory.add(SWORD)
        self.round = 1
        self.alive = 0
        self.kills = 0
        self.rounds_cleared = 0
        self._schedule_round(sim)

    def _schedule_round(self, sim: CraftSim) -> None:
        self.spawn_frame = sim.frames + round(float(self.conf["spawn_delay"]) / sim.config.dt)

    def _spawn_round(self, sim: CraftSim) -> None:
        """Spawns ``self.round`` spiders at random floor points away from the player."""
        player = sim.avatars[0].player.position
        (x0, x1), (z0, z1) = self.interior
        # The walls' inner faces lie half a node outside the interior's node range.
        inset = self.wall_margin - 0.5
        top = self.floor_y + 0.5
        for _ in range(self.round):
            xs = sim.rng.uniform(x0 + inset, x1 - inset, self.spawn_candidates)
            zs = sim.rng.uniform(z0 + inset, z1 - inset, self.spawn_candidates)
            distance = np.hypot(xs - player[0], zs - player[2])
            far = np.flatnonzero(distance >= float(self.conf["min_spawn_distance"]))
            pick = int(far[0]) if far.size else int(np.argmax(distance))
            x, z = float(xs[pick]), float(zs[pick])
            yaw = math.degrees(math.atan2(x - player[0], player[2] - z)) % 360.0
            sim.entities.spawn(SPIDER, (x, top, z), yaw)
        self.alive = self.round
        self.spawn_frame = None

    # ---- rules ------------------------------------------------------------------------------

    def frame(self, sim: CraftSim, events: list[FrameEvents]) -> bool:
        for punch in events[0].punches:
            if punch.killed and punch.kind == SPIDER:
                self.kills += 1
                self.alive -= 1
                self.rewards[0] += 1.0
                if self.alive == 0:
                    self.rounds_cleared += 1
                    if self.rounds_cleared == self.rounds:
                        return True
                    self.round += 1
                    self._schedule_round(sim)
        if self.spawn_frame is not None and sim.frames >= self.spawn_frame:
            self._spawn_round(sim)
        return False

    def end_step(self, sim: CraftSim) -> tuple[np.ndarray, bool]:
        rewards, dead = super().end_step(sim)
        return rewards, dead or self.success(sim)

    # ---- facts ------------------------------------------------------------------------------

    def info(self, sim: CraftSim) -> dict:
        return {
            "round": self.round,
            "spiders_alive": self.alive,
            "kills": self.kills,
            "rounds_cleared": self.rounds_cleared,
        }

    def success(self, sim: CraftSim) -> bool:
        return self.rounds_cleared == self.rounds

    def metrics(self, sim: CraftSim) -> dict[str, float]:
        return {
            "kills": float(self.kills),
            "rounds_cleared": float(self.rounds_cleared),
            "damage_taken": float(sim.avatars[0].damage_taken),
        }
