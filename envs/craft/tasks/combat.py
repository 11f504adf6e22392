"""Craftium's ``MultiAgentCombat``: players punch each other bare-handed in a walled arena.

Follows Craftium's multi-agent combat task (Malagón, Ceberio, Lozano, ICML 2025). The environment is
``multi.CraftParallelEnv`` (PettingZoo); this module holds the rules.

- **World**: a 16×17 arena on flat ground, open to the sky (lit by the sun), with walls of
  ``default:stonebrick`` four nodes high on a ``default:stone`` floor whose top face is at
  y = 4.5. Bare hands dig neither node and a jump (at most 2.2 nodes) cannot clear the walls,
  so the arena never changes and nobody leaves it.
- **Start**: Craftium's two spawns, 6.8 nodes apart and facing each other: ``player_0`` at
  (−2.5, 4.5, −1.7) looking toward −z, ``player_1`` at (−2.5, 4.5, −8.5) looking toward +z,
  both with empty hands and 20 hp. With more players, player i stands on the circle through
  those two points (centre (−2.5, −5.1), radius 3.4) at angle 360°·i/n, facing the centre.
- **Rules**: each punch one player lands on another (bare hand: 1 damage, at most one punch per
  0.9 s) gives ``rwd_hit`` (+1) to the hitter and ``rwd_hurt`` (−0.1) to the victim. The episode
  ends for every player when a punch leaves its victim with ``end_hp`` (5) hp or less: from
  20 hp, the 15th hit on the same player. Truncation after 1000 steps.

Success of a player: it landed the decisive punch (two players whose decisive punches land in
the same frame both succeed). ``info["task"]``: ``hits`` and ``hits_taken`` per player and
``hp`` per player; final ``metrics`` of a player: ``hits``, ``hits_taken``, ``damage_taken``,
``distance``.

Departures from Craftium:

- Craftium's arena is an unbounded superflat map (grass); this one is a walled stone arena
  around Craftium's spawn points, so that no player walks off and the floor cannot be dug.
- Damage is on (``enable_damage: true``). Craftium's world file declares it off; without damage
  the hp would never fall and the termination could never fire.
- Craftium gives −0.1 to every player other than the hitter; here only the victim gets it (the
  same with two players).
- Players are stepped simultaneously, not one after the other, so that neither moves first; Luanti's
  knockback of a punched player is not modelled.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from omnigym.envs.craft.core import CraftSim, FrameEvents
from omnigym.envs.craft.digging import Tool
from omnigym.envs.craft.engine import World
from omnigym.envs.craft.tasks.base import Task, walled_floor

WALL = "default:stonebrick"
FLOOR = "default:stone"


class CombatTask(Task):
    """Bare-handed combat of two (or more) players (``Craft/MultiAgentCombat-v0``)."""

    name = "MultiAgentCombat"
    interior = ((-10, 5), (-13, 3))  # node ranges (inclusive) of the arena's floor, x and z
    floor_y = 4  # top face of the floor node at 4.5
    wall_height = 4
    centre = (-2.5, 4.5, -5.1)
    radius = 3.4  # half of Craftium's 6.8 nodes between the players

    def check_conf(self) -> None:
        if self.n_players < 2:
            raise ValueError(
                f"MultiAgentCombat needs n_players >= 2, got {self.n_players}; make it with "
                "omnigym.make('Craft/MultiAgentCombat-v0') (a PettingZoo ParallelEnv)"
            )
        for key in ("rwd_hit", "rwd_hurt"):
            value = self.conf[key]
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise ValueError(f"minetest_conf[{key!r}] must be a number, got {value!r}")
        end_hp = self.conf["end_hp"]
        if not isinstance(end_hp, numbers.Integral) or isinstance(end_hp, bool) or end_hp < 0:
            raise ValueError(f"minetest_conf['end_hp'] must be an int >= 0, got {end_hp!r}")

    def world_key(self, map_seed: int | None) -> None:
        """One arena whatever the map seed."""
        return None

    def build_world(self, map_seed: int | None) -> World:
        return walled_floor(
            self.materials, self.interior, self.floor_y, self.wall_height, WALL, FLOOR
        )

    # ---- episode ----------------------------------------------------------------------------

    def spawn(self, player: int) -> tuple[np.ndarray, float]:
        """Start position and yaw (degrees) of ``player``: on the circle, facing its centre."""
        yaw = (180.0 + 360.0 * player / self.n_players) % 360.0
        # Luanti's view direction at yaw ψ is (−sin ψ, 0, cos ψ); step back from the centre.
        dx, dz = -math.sin(math.radians(yaw)), math.cos(math.radians(yaw))
        cx, cy, cz = self.centre
        position = np.array([round(cx - self.radius * dx, 9), cy, round(cz - self.radius * dz, 9)])
        return position, yaw

    def reset(self, sim: CraftSim) -> None:
        for i, avatar in enumerate(sim.avatars):
            position, yaw = self.spawn(i)
            avatar.player.position[:] = position
            avatar.player.yaw, avatar.player.pitch = yaw, 0.0
            avatar.player.inventory.clear()
        self.hits = np.zeros(self.n_players, dtype=np.int64)
        self.hits_taken = np.zeros(self.n_players, dtype=np.int64)
        self.deciders: list[int] = []

    # ---- rules ------------------------------------------------------------------------------

    def player_punched(self, sim: CraftSim, hitter: int, victim: int, tool: Tool) -> None:
        sim.hurt(victim, tool.damage)
        self.hits[hitter] += 1
        self.hits_taken[victim] += 1
        self.rewards[hitter] += float(self.conf["rwd_hit"])
        self.rewards[victim] += float(self.conf["rwd_hurt"])
        if sim.avatars[victim].player.hp <= int(self.conf["end_hp"]):
            self.deciders.append(hitter)

    def frame(self, sim: CraftSim, events: list[FrameEvents]) -> bool:
        return bool(self.deciders)

    def end_step(self, sim: CraftSim) -> tuple[np.ndarray, bool]:
        rewards, dead = super().end_step(sim)
        return rewards, dead or bool(self.deciders)

    # ---- facts ------------------------------------------------------------------------------

    def info(self, sim: CraftSim) -> dict:
        return {
            "hits": self.hits.tolist(),
            "hits_taken": self.hits_taken.tolist(),
            "hp": [int(avatar.player.hp) for avatar in sim.avatars],
        }

    def success(self, sim: CraftSim, player: int = 0) -> bool:
        return player in self.deciders

    def metrics(self, sim: CraftSim, player: int = 0) -> dict[str, float]:
        avatar = sim.avatars[player]
        return {
            "hits": float(self.hits[player]),
            "hits_taken": float(self.hits_taken[player]),
            "damage_taken": float(avatar.damage_taken),
            "distance": float(avatar.distance),
        }

    def final_info(self, sim: CraftSim, episode_return: float, player: int = 0) -> dict:
        """The final step's ``success``, ``normalized_score`` and ``metrics`` for ``player``."""
        return {
            "success": self.success(sim, player),
            "normalized_score": self.normalized_score(episode_return),
            "metrics": self.metrics(sim, player),
        }
