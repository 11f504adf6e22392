"""World, materials and player state of the Craft voxel engine (the public module MCU builds on).

Follows the world model of Craftium (Malagón, Ceberio, Lozano, ICML 2025), which runs the Luanti
(formerly Minetest) engine: a world is a grid of nodes named Luanti-style (``default:tree``), node
``(x, y, z)`` occupies ``[x − 0.5, x + 0.5]`` on each axis with y up, and a player is a box whose
position is the middle of its bottom face, looking along a yaw and a pitch in degrees.

Departures from Luanti, for determinism and speed:

- The world is bounded: one ``uint16`` content grid indexed ``[x, y, z]`` plus parallel ``uint8``
  light and param2 grids; grid index ``i`` holds node ``origin + i``. Everything outside reads as
  ``ignore``, an invisible wall.
- Content ids are fixed and published in ``data/materials.yaml`` (Luanti assigns them per world);
  the reserved ids are Luanti's: ``unknown`` 125, ``air`` 126, ``ignore`` 127.
- Light is Luanti's day bank only, computed on demand by ``World.compute_light``; the day/night
  cycle is left to whoever draws the frame.
- The inventory is one list of 32 slots whose first 9 are the hotbar; nothing wears out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from numba import njit

DATA_DIR = Path(__file__).parent / "data"
UNKNOWN = 125
AIR = 126
IGNORE = 127
N_IDS = 128
"""Length of the per-id property arrays: every id a material may take, reserved ones included."""

LIGHT_SUN = 15
"""Luanti's sunlight level; light sources reach at most 14."""
INVENTORY_SIZE = 32
HOTBAR_SIZE = 9
STACK_MAX = 99


@dataclass(frozen=True)
class Drop:
    """One drop option of a node: ``count`` of ``item``, taken with chance ``1 / rarity``."""

    item: str
    count: int = 1
    rarity: int = 1


@dataclass(frozen=True)
class Material:
    """One node kind, as listed in ``materials.yaml``."""

    name: str
    id: int
    color: tuple[int, int, int]
    visible: bool = True
    walkable: bool = True
    pointable: bool = True
    buildable_to: bool = False
    light_source: int = 0
    light_passes: bool | None = None
    sunlight_propagates: bool | None = None
    damage_per_second: int = 0
    groups: Mapping[str, int] = field(default_factory=dict)
    drops: tuple[Drop, ...] = ()

    def __post_init__(self):
        # Luanti's defaults: light passes what is not drawn, and sunlight what light passes.
        if self.light_passes is None:
            object.__setattr__(self, "light_passes", not self.visible)
        if self.sunlight_propagates is None:
            object.__setattr__(self, "sunlight_propagates", self.light_passes)

    def drop(self, rng: np.random.Generator) -> tuple[str, int] | None:
        """The item and count this node gives when dug (Luanti's ``max_items = 1`` rule).

        Options are tried in order; one with ``rarity`` r is taken with chance 1/r. A node with
        no drop list gives itself. ``None`` when no option was taken.
        """
        if not self.drops:
            return self.name, 1
        for option in self.drops:
            if option.rarity <= 1 or rng.integers(option.rarity) == 0:
                return option.item, option.count
        return None


class MaterialTable:
    """Every node kind and item name, with per-id property arrays for the compiled kernels.

    Index by name or content id: ``table["default:tree"].groups``, ``table[20].name``.
    The arrays (length ``N_IDS``, indexed by content id) are ``colors`` (``uint8 [N, 3]``),
    ``visible``, ``walkable``, ``pointable``, ``buildable_to``, ``light_passes``,
    ``sunlight_propagates`` (``bool``) and ``light_source`` (``uint8``). Ids with no material are
    treated as ``unknown``.
    """

    def __init__(self, materials: Iterable[Material], items: Iterable[str] = ()):
        self._by_id: dict[int, Material] = {}
        self._by_name: dict[str, Material] = {}
        for material in materials:
            if not 0 <= material.id < N_IDS:
                raise ValueError(f"content id of {material.name} must be in [0, 127]")
            if material.id in self._by_id:
                other = self._by_id[material.id].name
                raise ValueError(f"content id {material.id} given to {other} and {material.name}")
            if material.name in self._by_name:
                raise ValueError(f"material {material.name} is listed twice")
            self._by_id[material.id] = material
            self._by_name[material.name] = material
        for name, cid in (("unknown", UNKNOWN), ("air", AIR), ("ignore", IGNORE)):
            if self._by_name.get(name) is None or self._by_name[name].id != cid:
                raise ValueError(f"reserved material {name} must have content id {cid}")
        self.items = frozenset(items)
        unknown = self._by_id[UNKNOWN]
        rows = [self._by_id.get(i, unknown) for i in range(N_IDS)]
        self.colors = np.array([m.color for m in rows], dtype=np.uint8)
        self.visible = np.array([m.visible for m in rows], dtype=np.bool_)
        self.walkable = np.array([m.walkable for m in rows], dtype=np.bool_)
        self.pointable = np.array([m.pointable for m in rows], dtype=np.bool_)
        self.buildable_to = np.array([m.buildable_to for m in rows], dtype=np.bool_)
        self.light_passes = np.array([m.light_passes for m in rows], dtype=np.bool_)
        self.sunlight_propagates = np.array([m.sunlight_propagates for m in rows], dtype=np.bool_)
        self.light_source = np.array([m.light_source for m in rows], dtype=np.uint8)
        for array in (
            self.colors,
            self.visible,
            self.walkable,
            self.pointable,
            self.buildable_to,
            self.light_passes,
            self.sunlight_propagates,
            self.light_source,
        ):
            array.flags.writeable = False

    @classmethod
    def load(cls, path: str | Path | None = None) -> MaterialTable:
        """Reads a materials file (default: the packaged ``data/materials.yaml``)."""
        path = Path(path) if path is not None else DATA_DIR / "materials.yaml"
        data = yaml.safe_load(path.read_text())
        entries = [dict(spec, name=name) for name, spec in data["reserved"].items()]
        entries += data["nodes"]
        try:
            materials = [_material_from_entry(entry) for entry in entries]
        except TypeError as error:
            raise ValueError(f"{path}: bad material entry: {error}") from None
        table = cls(materials, data.get("items", ()))
        for material in materials:
            for option in material.drops:
                if option.item not in table._by_name and option.item not in table.items:
                    raise ValueError(f"{path}: {material.name} drops unknown item {option.item}")
        return table

    def __getitem__(self, key: str | int) -> Material:
        if isinstance(key, str):
            return self._by_name[key]
        return self._by_id.get(int(key), self._by_id[UNKNOWN])

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __iter__(self):
        return iter(sorted(self._by_id.values(), key=lambda m: m.id))

    def __len__(self) -> int:
        return len(self._by_id)

    def id(self, name: str) -> int:
        """Content id of a node name; ``KeyError`` naming it when no such node exists."""
        try:
            return self._by_name[name].id
        except KeyError:
            raise KeyError(f"no material named {name!r}") from None

    def name(self, cid: int) -> str:
        """Node name of a content id (``unknown`` for an id with no material)."""
        return self[cid].name

    def ids_with_group(self, group: str) -> np.ndarray:
        """Content ids of every material whose group ``group`` is set (rating > 0)."""
        ids = [m.id for m in self if m.groups.get(group, 0) > 0]
        return np.array(ids, dtype=np.uint16)


def _material_from_entry(entry: dict) -> Material:
    drops = tuple(Drop(**option) for option in entry.get("drops", ()))
    fields = {k: v for k, v in entry.items() if k not in ("drops", "color", "groups")}
    return Material(
        color=tuple(entry["color"]),
        groups=dict(entry.get("groups", {})),
        drops=drops,
        **fields,
    )


class World:
    """A bounded voxel world: content, light and param2 grids indexed ``[x, y, z]``, y up.

    Args:
        materials: the ``MaterialTable`` whose ids the grid holds.
        shape: grid size ``(sx, sy, sz)`` in nodes.
        origin: node coordinates of grid index ``(0, 0, 0)``.
        fill: node name or id the grid starts with (default ``air``).

    The light grid is all zero until ``compute_light`` fills it.
    """

    def __init__(
        self,
        materials: MaterialTable,
        shape: tuple[int, int, int],
        origin: tuple[int, int, int] = (0, 0, 0),
        fill: str | int = "air",
    ):
        if len(shape) != 3 or any(int(s) < 1 for s in shape):
            raise ValueError(f"shape must be three positive ints, got {shape}")
        self.materials = materials
        self.origin = np.array(origin, dtype=np.int64)
        shape = tuple(int(s) for s in shape)
        self.content = np.full(shape, self._cid(fill), dtype=np.uint16)
        self.light = np.zeros(shape, dtype=np.uint8)
        self.param2 = np.zeros(shape, dtype=np.uint8)
        self._zyx: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.content.shape

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest node coordinates inside the grid (both inclusive)."""
        return self.origin.copy(), self.origin + np.array(self.shape) - 1

    def _cid(self, node: str | int) -> int:
        return self.materials.id(node) if isinstance(node, str) else int(node)

    def _index(self, x: int, y: int, z: int) -> tuple[int, int, int] | None:
        i, j, k = int(x) - self.origin[0], int(y) - self.origin[1], int(z) - self.origin[2]
        sx, sy, sz = self.shape
        if 0 <= i < sx and 0 <= j < sy and 0 <= k < sz:
            return int(i), int(j), int(k)
        return None

    def contains(self, x: int, y: int, z: int) -> bool:
        return self._index(x, y, z) is not None

    def get(self, x: int, y: int, z: int) -> int:
        """Content id of node ``(x, y, z)``; ``ignore`` outside the grid."""
        index = self._index(x, y, z)
        return IGNORE if index is None else int(self.content[index])

    def get_name(self, x: int, y: int, z: int) -> str:
        return self.materials.name(self.get(x, y, z))

    def get_param2(self, x: int, y: int, z: int) -> int:
        index = self._index(x, y, z)
        return 0 if index is None else int(self.param2[index])

    def get_light(self, x: int, y: int, z: int) -> int:
        index = self._index(x, y, z)
        return 0 if index is None else int(self.light[index])

    def set(self, x: int, y: int, z: int, node: str | int, param2: int = 0) -> None:
        """Sets node ``(x, y, z)``; ``IndexError`` outside the grid, which cannot change."""
        index = self._index(x, y, z)
        if index is None:
            raise IndexError(f"node {(x, y, z)} is outside the world {self.bounds}")
        cid = self._cid(node)
        self.content[index] = cid
        self.param2[index] = param2
        if self._zyx is not None:
            self._zyx[index[2], index[1], index[0]] = cid

    def fill(self, lo: Iterable[int], hi: Iterable[int], node: str | int) -> None:
        """Sets every node of the box from ``lo`` to ``hi`` (inclusive, clipped to the grid)."""
        lo_i = np.maximum(np.array(tuple(lo), dtype=np.int64) - self.origin, 0)
        hi_i = np.minimum(np.array(tuple(hi), dtype=np.int64) - self.origin + 1, self.shape)
        if np.any(hi_i <= lo_i):
            return
        box = tuple(slice(a, b) for a, b in zip(lo_i, hi_i, strict=True))
        cid = self._cid(node)
        self.content[box] = cid
        self.param2[box] = 0
        if self._zyx is not None:
            self._zyx[box[::-1]] = cid

    def compute_light(self, sunlight: int = LIGHT_SUN) -> None:
        """Fills the light grid the way Luanti lights a map (its day bank).

        Sunlight of level ``sunlight`` enters every column at the top of the grid and falls
        without loss through nodes where sunlight propagates; light sources shine at their level;
        then light spreads to the six neighbours that let light pass, losing one level per node.
        Nodes that block light keep level 0 unless they emit light.
        """
        if not 0 <= sunlight <= LIGHT_SUN:
            raise ValueError(f"sunlight must be in [0, {LIGHT_SUN}], got {sunlight}")
        materials = self.materials
        _light_kernel(
            self.content,
            materials.light_passes,
            materials.sunlight_propagates,
            materials.light_source,
            sunlight,
            self.light,
        )

    def copy(self) -> World:
        """An independent copy (same material table)."""
        clone = World.__new__(World)
        clone.materials = self.materials
        clone.origin = self.origin.copy()
        clone.content = self.content.copy()
        clone.light = self.light.copy()
        clone.param2 = self.param2.copy()
        clone._zyx = None if self._zyx is None else self._zyx.copy()
        return clone

    def restore(self, pristine: World) -> None:
        """Copies another world of the same shape and origin into this one, in place."""
        if pristine.shape != self.shape or not np.array_equal(pristine.origin, self.origin):
            raise ValueError("restore needs a world of the same shape and origin")
        np.copyto(self.content, pristine.content)
        np.copyto(self.light, pristine.light)
        np.copyto(self.param2, pristine.param2)
        if self._zyx is not None:
            np.copyto(self._zyx, pristine.content_zyx())

    def content_zyx(self) -> np.ndarray:
        """The content grid laid out ``[z, y, x]`` (Craftium's voxel order), built on first use
        and kept in step by ``set``, ``fill`` and ``restore``: write the grid through those once
        it exists. Voxel observations slice it instead of transposing the grid every step."""
        if self._zyx is None:
            self._zyx = np.ascontiguousarray(self.content.transpose(2, 1, 0))
        return self._zyx

    def voxels_around(
        self, center: Iterable[int], radii: Iterable[int], out: np.ndarray | None = None
    ) -> np.ndarray:
        """Content ids of the box of nodes ``center ± radii`` (``(rx, ry, rz)``), laid out
        ``[z, y, x]`` with shape ``(2rz+1, 2ry+1, 2rx+1)``; ``ignore`` outside the grid. Written
        into ``out`` (C-contiguous, of that shape and the grid's dtype) when given."""
        return crop_voxels(self.content_zyx(), center, radii, self.origin, IGNORE, out)

    def voxel_info(self, center: Iterable[int], radii: Iterable[int]) -> np.ndarray:
        """Craftium's ``info["voxel_obs"]`` around node ``center``: ``uint32`` of shape
        ``(2rz+1, 2ry+1, 2rx+1, 3)`` holding content id, light and param2, laid out like
        ``voxels_around``; ``(ignore, 0, 0)`` outside the grid."""
        ids = self.voxels_around(center, radii)
        info = np.empty((*ids.shape, 3), dtype=np.uint32)
        info[..., 0] = ids
        info[..., 1] = crop_voxels(self.light.transpose(2, 1, 0), center, radii, self.origin, 0)
        info[..., 2] = crop_voxels(self.param2.transpose(2, 1, 0), center, radii, self.origin, 0)
        return info


@njit(cache=True)
def _light_kernel(content, passes, sun_passes, source, sunlight, light):
    sx, sy, sz = content.shape
    n_ids = passes.shape[0]
    light[:] = 0
    if sunlight > 0:
        for x in range(sx):
            for z in range(sz):
                for y in range(sy - 1, -1, -1):
                    cid = content[x, y, z]
                    if cid < n_ids and sun_passes[cid]:
                        light[x, y, z] = sunlight
                        continue
                    if cid < n_ids and passes[cid]:
                        light[x, y, z] = sunlight - 1  # lit from the sky above it
                    break
    for x in range(sx):
        for y in range(sy):
            for z in range(sz):
                cid = content[x, y, z]
                if cid < n_ids and source[cid] > light[x, y, z]:
                    light[x, y, z] = source[cid]
    # One sweep per level, brightest first: a node reaching level L is spread in sweep L.
    for level in range(LIGHT_SUN, 1, -1):
        for x in range(sx):
            for y in range(sy):
                for z in range(sz):
                    if light[x, y, z] != level:
                        continue
                    for d in range(6):
                        nx, ny, nz = x, y, z
                        if d == 0:
                            nx -= 1
                        elif d == 1:
                            nx += 1
                        elif d == 2:
                            ny -= 1
                        elif d == 3:
                            ny += 1
                        elif d == 4:
                            nz -= 1
                        else:
                            nz += 1
                        if nx < 0 or ny < 0 or nz < 0 or nx >= sx or ny >= sy or nz >= sz:
                            continue
                        cid = content[nx, ny, nz]
                        if cid < n_ids and passes[cid] and light[nx, ny, nz] < level - 1:
                            light[nx, ny, nz] = level - 1


def crop_voxels(
    zyx: np.ndarray,
    center: Iterable[int],
    radii: Iterable[int],
    origin: Iterable[int] = (0, 0, 0),
    fill: int = IGNORE,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The box of nodes ``center ± radii`` (``(rx, ry, rz)``) of a grid laid out ``[z, y, x]``
    (Craftium's voxel order) whose index ``(0, 0, 0)`` holds node ``origin``: an array of
    ``zyx``'s dtype and shape ``(2rz+1, 2ry+1, 2rx+1)``, ``fill`` outside the grid; new, or
    ``out`` (a vector env's batch row) when given."""
    rx, ry, rz = map(int, radii)
    cx, cy, cz = map(int, center)
    ox, oy, oz = map(int, origin)
    shape = (2 * rz + 1, 2 * ry + 1, 2 * rx + 1)
    if out is None:
        out = np.empty(shape, dtype=zyx.dtype)
    elif out.shape != shape or out.dtype != zyx.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {zyx.dtype} array of shape {shape}")
    _crop_zyx(zyx, cz - rz - oz, cy - ry - oy, cx - rx - ox, out, fill)
    return out


@njit(cache=True, nogil=True)
def _crop_zyx(zyx, z0, y0, x0, out, fill):
    """Copies ``zyx[z0:, y0:, x0:]`` into ``out`` (same layout), ``fill`` outside the grid.

    Returns nothing: handing ``out`` back would cost a Python object per call."""
    nz, ny, nx = out.shape
    sz, sy, sx = zyx.shape
    for i in range(nz):
        z = z0 + i
        for j in range(ny):
            y = y0 + j
            if z < 0 or z >= sz or y < 0 or y >= sy:
                for k in range(nx):
                    out[i, j, k] = fill
                continue
            for k in range(nx):
                x = x0 + k
                out[i, j, k] = zyx[z, y, x] if 0 <= x < sx else fill


def node_at(position: Iterable[float]) -> tuple[int, int, int]:
    """The node holding a point (Luanti's rounding, ``floor(p + 0.5)``)."""
    x, y, z = position.tolist() if isinstance(position, np.ndarray) else position
    return math.floor(x + 0.5), math.floor(y + 0.5), math.floor(z + 0.5)


class Inventory:
    """A player's main list: ``INVENTORY_SIZE`` slots of ``(item, count)`` or ``None``.

    The first ``HOTBAR_SIZE`` slots are the hotbar; ``selected`` is the wielded one.
    """

    def __init__(self, size: int = INVENTORY_SIZE):
        self.slots: list[tuple[str, int] | None] = [None] * size
        self.selected = 0

    @property
    def wielded(self) -> str | None:
        """Name of the wielded item, ``None`` for an empty hand."""
        slot = self.slots[self.selected]
        return None if slot is None else slot[0]

    def select(self, slot: int) -> None:
        """Wields hotbar slot ``slot`` (0-based, as Craftium's ``slot_1`` is slot 0)."""
        if not 0 <= slot < HOTBAR_SIZE:
            raise ValueError(f"hotbar slot must be in [0, {HOTBAR_SIZE - 1}], got {slot}")
        self.selected = slot

    def add(self, item: str, count: int = 1, stack_max: int = STACK_MAX) -> int:
        """Adds items, filling matching stacks first, then empty slots; returns the leftover."""
        for i, slot in enumerate(self.slots):
            if count == 0:
                break
            if slot is not None and slot[0] == item and slot[1] < stack_max:
                moved = min(count, stack_max - slot[1])
                self.slots[i] = (item, slot[1] + moved)
                count -= moved
        for i, slot in enumerate(self.slots):
            if count == 0:
                break
            if slot is None:
                moved = min(count, stack_max)
                self.slots[i] = (item, moved)
                count -= moved
        return count

    def take_wielded(self, count: int = 1) -> int:
        """Removes up to ``count`` wielded items; returns how many were removed."""
        slot = self.slots[self.selected]
        if slot is None:
            return 0
        taken = min(count, slot[1])
        left = slot[1] - taken
        self.slots[self.selected] = (slot[0], left) if left else None
        return taken

    def count(self, item: str) -> int:
        """Total number of ``item`` over all slots."""
        return sum(slot[1] for slot in self.slots if slot is not None and slot[0] == item)

    def clear(self) -> None:
        self.slots = [None] * len(self.slots)


@dataclass
class Player:
    """One player's state. Position is the middle of the bottom face of the box, in nodes.

    Yaw and pitch are degrees with Luanti's conventions: yaw 0 faces +z and grows turning left
    (yaw 90 faces −x), pitch > 0 looks down, pitch in [−90, 90], yaw in [0, 360).
    """

    position: np.ndarray = field(default_factory=lambda: np.zeros(3))
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    yaw: float = 0.0
    pitch: float = 0.0
    hp: int = 20
    inventory: Inventory = field(default_factory=Inventory)
    on_ground: bool = False
    dig_target: tuple[int, int, int] | None = None
    dig_elapsed: float = 0.0

    def __post_init__(self):
        self.position = np.array(self.position, dtype=np.float64)
        self.velocity = np.array(self.velocity, dtype=np.float64)

    def look(self, dyaw: float, dpitch: float, pitch_limit: float = 90.0) -> None:
        """Turns by ``dyaw`` and ``dpitch`` degrees; yaw wraps, pitch is clamped."""
        self.yaw = (self.yaw + dyaw) % 360.0
        self.pitch = min(max(self.pitch + dpitch, -pitch_limit), pitch_limit)

    def eye(self, eye_height: float) -> np.ndarray:
        """Eye position in nodes."""
        return self.position + np.array([0.0, eye_height, 0.0])

    def look_direction(self) -> np.ndarray:
        """Unit vector along the view."""
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        return np.array([-math.sin(y) * math.cos(p), -math.sin(p), math.cos(y) * math.cos(p)])
