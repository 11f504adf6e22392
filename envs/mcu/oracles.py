"""Scripted oracles for MCU tasks: solvers that read the true world state and play commands.

MCU (Zheng et al., ICML 2025; ``docs/mcu.md``) refines its LLM-written task configs by running
them in the game; here every generated task names a solver (``oracle.solver`` in its file) and
is kept only if the solver succeeds (:mod:`omnigym.envs.mcu.verify`). A solver is a generator
over the live :class:`~omnigym.envs.mcu.world.MCUWorld`: it yields one text command at a time
and looks at the world again before the next, so it copes with mobs that move.

Tools shared by the solvers: breadth-first search over the nodes the player can stand on (the
same walking rules as ``move``: one-node step-up, falls of at most 3 nodes), aiming (which
standing node, facing and pitch point at a given node), the recipe planner, and station
placement.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

from omnigym.envs.mcu.crafting import STATION_RANGE
from omnigym.envs.mcu.planner import needs_table, plan
from omnigym.envs.mcu.registries import TIER_LEVELS
from omnigym.envs.mcu.world import FACINGS, PITCHES, RAYS, MCUWorld

Commands = Iterator[str]
Cell = tuple[int, int, int]
MAX_FALL = 3
LOW_HEALTH = 6


def neighbours(world: MCUWorld, cell: Cell) -> Iterator[tuple[int, Cell]]:
    """``(direction, cell)`` for each node one ``move`` reaches from ``cell``."""
    x, y, z = cell
    for direction, (dx, dz) in enumerate(FACINGS):
        nx, nz = x + dx, z + dz
        if not world.solid(nx, y, nz) and not world.solid(nx, y + 1, nz):
            ny = y
            while not world.solid(nx, ny - 1, nz) and y - ny <= MAX_FALL:
                ny -= 1
            if y - ny <= MAX_FALL:
                yield direction, (nx, ny, nz)
        elif (
            world.solid(nx, y, nz)
            and not world.solid(nx, y + 1, nz)
            and not world.solid(nx, y + 2, nz)
            and not world.solid(x, y + 2, z)
        ):
            yield direction, (nx, y + 1, nz)


def route(world: MCUWorld, goal: Callable[[Cell], bool]) -> list[int] | None:
    """Directions of a shortest walk from the player to a node where ``goal`` holds."""
    start = world.position
    parents: dict[Cell, tuple[Cell, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if goal(cell):
            directions = []
            while parents[cell] is not None:
                cell, direction = parents[cell]
                directions.append(direction)
            return directions[::-1]
        for direction, nxt in neighbours(world, cell):
            if nxt not in parents:
                parents[nxt] = (cell, direction)
                queue.append(nxt)
    return None


def turn_to(world: MCUWorld, direction: int) -> Commands:
    quarter = (direction - world.facing) % 4
    if quarter:
        yield {1: "turn left", 2: "turn around", 3: "turn right"}[quarter]


def pitch_to(world: MCUWorld, pitch: int) -> Commands:
    while world.pitch != pitch:
        yield "look down" if world.pitch < pitch else "look up"


def walk(world: MCUWorld, goal: Callable[[Cell], bool]) -> Commands:
    """Walks until ``goal`` holds at the player's node (re-planning after every command)."""
    while not goal(world.position):
        directions = route(world, goal)
        if not directions:
            return
        if world.facing != directions[0]:
            yield from turn_to(world, directions[0])
            continue
        run = 1
        while run < len(directions) and run < 8 and directions[run] == directions[0]:
            run += 1
        yield f"move forward {run}"


def pointed(world: MCUWorld, stand: Cell) -> dict[Cell, tuple[int, int]]:
    """Every node that some ``(facing, pitch)`` points at from ``stand``, with that look."""
    pointable = world.registry.materials.pointable
    found: dict[Cell, tuple[int, int]] = {}
    for facing, (dx, dz) in enumerate(FACINGS):
        for pitch in PITCHES:
            for forward, up in RAYS[pitch]:
                ray = (stand[0] + forward * dx, stand[1] + up, stand[2] + forward * dz)
                if pointable[world.grid.get(*ray)]:
                    found.setdefault(ray, (facing, pitch))
                    break
    return found


def aim_at(world: MCUWorld, cells: set[Cell]) -> Commands:
    """Walks to where one of ``cells`` can be pointed at, and points at the nearest such."""
    yield from walk(world, lambda stand: not cells.isdisjoint(pointed(world, stand)))
    looks = pointed(world, world.position)
    reachable = sorted(cells & set(looks), key=lambda c: (world.distance_to(c), c))
    if reachable:
        facing, pitch = looks[reachable[0]]
        yield from turn_to(world, facing)
        yield from pitch_to(world, pitch)


def best_tool(world: MCUWorld, kind: str) -> str | None:
    items = world.registry.items
    tools = [name for name in items if items[name].tool == kind and world.count(name)]
    return max(tools, key=lambda n: (TIER_LEVELS[items[n].tier], n), default=None)


def equip(world: MCUWorld, item: str | None) -> Commands:
    if item is not None and world.player.inventory.wielded != item:
        yield f"equip {item}"


def mine(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Digs the nearest reachable ``block`` until ``count`` have been mined, with the best
    fitting tool."""
    blocks = world.registry.members(params["block"])
    goal = params.get("count", 1)
    while sum(world.events["mined", b] for b in blocks) < goal:
        cells = {c for b in blocks for c in world.cells_of(b, 40)}
        yield from aim_at(world, cells)
        target = world.target()
        if target not in cells:
            return
        yield from equip(world, best_tool(world, world.registry.blocks[world.block(target)].tool))
        yield "mine"


def collect(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Mines ``block`` (a block or ``#tag``) until the inventory holds ``count`` of ``item``."""
    members = world.registry.members(params["item"])
    while sum(world.count(m) for m in members) < params["count"]:
        mined = sum(world.events["mined", b] for b in world.registry.members(params["block"]))
        yield from mine(world, {"block": params["block"], "count": mined + 1})
        if sum(world.events["mined", b] for b in world.registry.members(params["block"])) == mined:
            return


def place_station(world: MCUWorld, station: str) -> Commands:
    """Places ``station`` on the ground in front (crafting it first if there is none)."""
    if not world.count(station):
        yield from craft_items(world, station, 1)
    yield from pitch_to(world, 45)
    for _ in range(4):
        cell = world.placement()
        if cell is not None and cell[1] == world.position[1]:
            break
        yield "turn left"
    yield f"place {station}"
    yield from pitch_to(world, 0)


def craft_items(world: MCUWorld, item: str, count: int) -> Commands:
    """Crafts ``count`` of ``item`` through its recipe tree, placing a table when needed."""
    have = Counter({name: world.count(name) for name in world.registry.items})
    crafts, _ = plan(world.registry, item, count, have)
    if needs_table(world.registry, crafts) and not world.cells_of("crafting_table", STATION_RANGE):
        yield from place_station(world, "crafting_table")
        have = Counter({name: world.count(name) for name in world.registry.items})
        crafts, _ = plan(world.registry, item, count, have)
    for name, n in crafts:
        yield f"craft {name} {n}"


def craft(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield from craft_items(world, params["item"], params.get("count", 1))


def smelt(world: MCUWorld, params: dict[str, Any]) -> Commands:
    if not world.cells_of("furnace", STATION_RANGE):
        yield from place_station(world, "furnace")
    yield f"smelt {params['input']} {params.get('count', 1)}"


def combat(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Kills ``count`` of ``mob``: best weapon, approach, attack; eats when health is low."""
    mob_name = params["mob"]
    goal = params.get("count", 1)
    weapon = best_tool(world, "sword") or best_tool(world, "axe")
    yield from equip(world, weapon)
    while world.events["killed", mob_name] < goal:
        if world.health < LOW_HEALTH:
            food = [n for n in world.registry.items if world.registry.items[n].food]
            food = [n for n in food if world.count(n)]
            if food:
                yield f"eat {food[0]}"
                yield from equip(world, weapon)
        targets = [m for m in world.mobs if m.kind.name == mob_name]
        if not targets:
            return
        ahead = world.mob_ahead()
        if ahead is not None and ahead.kind.name == mob_name:
            yield from pitch_to(world, 0)
            yield "attack"
            continue
        mob = min(targets, key=lambda m: (world.distance_to(m.position), m.uid))
        mx, _, mz = mob.position
        x, _, z = world.position
        if max(abs(mx - x), abs(mz - z)) <= 1:
            dx, dz = mx - x, mz - z
            direction = FACINGS.index((dx, 0) if abs(dx) >= abs(dz) else (0, dz))
            yield from turn_to(world, direction)
            if world.mob_ahead() is None:
                yield "wait 1"
            continue
        directions = route(
            world, lambda c, m=mob.position: max(abs(c[0] - m[0]), abs(c[2] - m[2])) <= 1
        )
        if not directions:
            yield "wait 2"
            continue
        yield from turn_to(world, directions[0])
        yield "move forward 1"


def sleep(world: MCUWorld, params: dict[str, Any]) -> Commands:
    beds = [c for b in world.registry.tags["bed"] for c in world.cells_of(b, 40)]
    if not beds:
        return
    bed = min(beds, key=lambda c: (world.distance_to(c), c))
    yield from walk(world, lambda c: max(abs(a - b) for a, b in zip(c, bed, strict=True)) <= 1)
    yield "sleep"


def pillar(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield from pitch_to(world, 90)
    for _ in range(params["height"]):
        yield f"place {params['block']}"


def find(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Walks to within ``radius`` of a ``block`` or a ``mob`` (followed as it moves)."""
    radius = params.get("radius", 2)
    if "mob" in params:
        mobs = [m for m in world.mobs if m.kind.name == params["mob"]]
        if not mobs:
            return

        def target() -> Cell:
            return mobs[0].position
    else:
        cells = world.cells_of(params["block"], 40)
        if not cells:
            return

        def target() -> Cell:
            return cells[0]

    yield from walk(
        world, lambda c: sum((a - b) ** 2 for a, b in zip(c, target(), strict=True)) <= radius**2
    )


def place(world: MCUWorld, params: dict[str, Any]) -> Commands:
    """Places ``count`` blocks on the ground in a row, stepping aside after each."""
    block = params["block"]
    yield from pitch_to(world, 45)
    while world.events["placed", block] < params["count"]:
        cell = world.placement()
        if cell is not None and cell[1] == world.position[1]:
            yield f"place {block}"
        yield "move left 2"


def drop(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield f"drop {params['item']} {params.get('count', 1)}"


def eat(world: MCUWorld, params: dict[str, Any]) -> Commands:
    yield f"eat {params['item']}"


SOLVERS: dict[str, Callable[[MCUWorld, dict[str, Any]], Commands]] = {
    "mine": mine,
    "collect": collect,
    "craft": craft,
    "smelt": smelt,
    "combat": combat,
    "sleep": sleep,
    "pillar": pillar,
    "find": find,
    "place": place,
    "drop": drop,
    "eat": eat,
}


def solve(world: MCUWorld, oracle: dict[str, Any]) -> Commands:
    """The command stream of the task's solver (``oracle = {solver: name, **params}``)."""
    params = {k: v for k, v in oracle.items() if k != "solver"}
    return SOLVERS[oracle["solver"]](world, params)


def run(env: Any, seed: int) -> dict[str, Any]:
    """Plays the task of an ``AtomicEnv`` with its oracle: success, steps, ticks and, on
    failure, why (the last invalid command's reason, or the solver giving up). A task where a
    milestone already holds at reset fails: its return could not reach 1."""
    _, info = env.reset(seed=seed)
    world = env.world
    if info["progress"] > 0:
        return {"success": False, "steps": 0, "ticks": 0, "reason": "a milestone holds at reset"}
    task = env.task
    steps, reason = 0, "solver gave up"
    for command in solve(world, task.oracle):
        _, _, terminated, truncated, info = env.step(command)
        steps += 1
        if info["invalid_action"]:
            reason = f"{command!r}: {info['invalid_reason']}"
        if terminated or truncated:
            success = bool(info["success"])
            return {
                "success": success,
                "steps": steps,
                "ticks": world.ticks,
                "reason": "" if success else ("died" if world.dead else reason),
            }
    return {"success": False, "steps": steps, "ticks": world.ticks, "reason": reason}
