"""Player movement of the Craft engine: one physics frame and the mouse-to-camera formula.

Follows the player physics of Luanti as configured by Craftium (Malagón, Ceberio, Lozano, ICML
2025). Per frame: the horizontal velocity moves toward the velocity wished by the held keys
(relative to yaw, normalised, at the walk, crouch or fast speed) by at most the ground or air
acceleration times ``dt``; a jump on the ground sets the vertical speed; gravity pulls; then the
player box is swept against walkable nodes axis by axis (y, then x, then z), stepping up ledges of
at most the step height (0.2 node while airborne, as Luanti), and a sneaking player on the ground
stops at edges instead of walking off. Landing faster than Luanti's tolerance costs hp. Speeds and
accelerations are Luanti's defaults times Craftium's ``pmul``; gravity is 9.81 nodes/s² (Luanti's
``movement_gravity``) times Luanti's factor 2, which makes a jump rise 1.08 nodes as in Luanti.
All constants are in ``data/physics.yaml``.

Departures from Luanti: a fixed ``dt`` (Craftium uses the wall clock), an axis-separated sweep
with an instant step-up instead of Luanti's time-of-impact solver and smoothed step, and a sneak
edge test that keeps some walkable node under the box (Luanti keeps the player over its "sneak
node"). Liquids and climbing are not modelled yet.

The frame kernel is plain Python over arrays, compiled once by Numba (on-disk cache, no fastmath);
``kernel="numpy"`` runs the same source uncompiled as the reference.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import yaml
from numba import njit
from numba.extending import register_jitable

from omnigym.envs.craft.engine import DATA_DIR, IGNORE, Player, World

EPS = 1e-9
SUPPORT_PROBE = 0.05
"""How far below the feet a sneaking player looks for a node to stand on (nodes)."""
SNEAK_BISECTIONS = 12
KERNELS = ("numba", "numpy")

# Layout of the float64 state vector the kernel reads and writes.
_PX, _PY, _PZ, _VX, _VY, _VZ, _GROUND, _LANDING = range(8)


@dataclass(frozen=True)
class PhysicsConfig:
    """Every constant of the player physics and the mouse-to-camera formula, with speeds and
    accelerations already times ``pmul``.

    Build it with ``PhysicsConfig.load(pmul=..., fps_max=..., **overrides)``.
    """

    dt: float
    walk_speed: float
    crouch_speed: float
    fast_speed: float
    climb_speed: float
    accel_ground: float
    accel_air: float
    gravity: float
    jump_speed: float
    box: tuple[float, float, float]
    eye_height: float
    step_height: float
    air_step_height: float
    interaction_range: float
    hp_max: int
    fall_tolerance: float
    fall_damage_per_speed: float
    fov: float
    mouse_sensitivity: float
    fov_scale: float
    pitch_limit: float
    fast_move: bool = False

    @classmethod
    def load(
        cls,
        pmul: float | None = None,
        fps_max: float | None = None,
        path: str | Path | None = None,
        **overrides,
    ) -> PhysicsConfig:
        """Reads ``physics.yaml``; ``pmul`` and ``fps_max`` replace the file's defaults."""
        data = yaml.safe_load(Path(path or DATA_DIR / "physics.yaml").read_text())
        pmul = data["pmul"] if pmul is None else pmul
        fps_max = data["fps_max"] if fps_max is None else fps_max
        if not pmul > 0:
            raise ValueError(f"pmul must be positive, got {pmul}")
        if not fps_max > 0:
            raise ValueError(f"fps_max must be positive, got {fps_max}")
        speed, accel, body = data["speed"], data["acceleration"], data["player"]
        camera, fall = data["camera"], data["fall_damage"]
        config = cls(
            dt=1.0 / fps_max,
            walk_speed=speed["walk"] * pmul,
            crouch_speed=speed["crouch"] * pmul,
            fast_speed=speed["fast"] * pmul,
            climb_speed=speed["climb"] * pmul,
            accel_ground=accel["ground"] * pmul,
            accel_air=accel["air"] * pmul,
            gravity=data["gravity"] * data["gravity_factor"],
            jump_speed=data["jump_speed"],
            box=tuple(body["box"]),
            eye_height=body["eye_height"],
            step_height=body["step_height"],
            air_step_height=body["air_step_height"],
            interaction_range=body["interaction_range"],
            hp_max=body["hp_max"],
            fall_tolerance=fall["tolerance"],
            fall_damage_per_speed=fall["per_speed"],
            fov=camera["fov"],
            mouse_sensitivity=camera["mouse_sensitivity"],
            fov_scale=camera["fov_scale"],
            pitch_limit=camera["pitch_limit"],
        )
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"unknown physics settings: {sorted(unknown)}")
        return replace(config, **overrides)

    @functools.cached_property
    def kernel_constants(self) -> tuple[float, ...]:
        """The frame kernel's trailing arguments (computed once per config)."""
        hx, h, hz = self.box
        return (
            self.accel_ground,
            self.accel_air,
            self.gravity,
            self.jump_speed,
            hx / 2.0,
            h,
            hz / 2.0,
            self.step_height,
            self.air_step_height,
            self.dt,
        )

    def fall_damage(self, landing_speed: float) -> int:
        """Luanti's fall damage for a landing at ``landing_speed`` nodes/s."""
        excess = landing_speed - self.fall_tolerance
        if excess <= 0:
            return 0
        return int(excess * self.fall_damage_per_speed + 0.5)


@dataclass(frozen=True)
class Controls:
    """Movement keys held during one frame (Craftium's key names)."""

    forward: bool = False
    backward: bool = False
    left: bool = False
    right: bool = False
    jump: bool = False
    sneak: bool = False
    aux1: bool = False


@dataclass(frozen=True)
class FrameResult:
    """What one physics frame did: landing speed (0 when no landing) and the fall damage due."""

    on_ground: bool
    landing_speed: float
    fall_damage: int


def camera_turn(
    mouse_x: float,
    mouse_y: float,
    width: int,
    height: int,
    fov: float = 72.0,
    sensitivity: float = 0.2,
    fov_scale: float = 1.3763819,
) -> tuple[float, float]:
    """Craftium's mouse-to-camera formula: ``(dyaw, dpitch)`` in degrees for one frame.

    ``(mouse_x, mouse_y)`` is the action's ``mouse`` entry in [−1, 1] and ``width × height`` the
    observation size. "Mouse x+" turns right (yaw falls), "mouse y+" looks up (pitch falls).
    """
    dx_px = int(mouse_x * (width // 2))
    dy_px = int(-mouse_y * (height // 2))
    aspect = width / height
    fov_y = fov * min(max(math.sqrt(1.6 / aspect), 1.0), 1.4)
    scale = math.tan(math.radians(fov_y) / 2.0) * fov_scale
    return -dx_px * sensitivity * scale, dy_px * sensitivity * scale


def step_player(
    world: World,
    player: Player,
    controls: Controls,
    config: PhysicsConfig,
    kernel: str = "numba",
) -> FrameResult:
    """Runs steps 2–4 of a frame (``core``'s frame loop) for one player: walk, jump, gravity,
    collision sweep.

    Updates ``player.position``, ``velocity`` and ``on_ground`` in place. Damage is returned, not
    applied (the environment decides whether damage is enabled).
    """
    forward = int(controls.forward) - int(controls.backward)
    side = int(controls.right) - int(controls.left)
    if controls.sneak:
        speed = config.crouch_speed
    elif controls.aux1 and config.fast_move:
        speed = config.fast_speed
    else:
        speed = config.walk_speed
    state = _SCRATCH  # kernels run one at a time under the GIL
    _frame_kernel(kernel)(
        world.content,
        world.origin,
        world.materials.walkable,
        player.position,
        player.velocity,
        bool(player.on_ground),
        state,
        math.radians(player.yaw),
        forward,
        side,
        controls.jump,
        controls.sneak,
        speed,
        *config.kernel_constants,
    )
    player.on_ground = on_ground = bool(state[_GROUND] > 0.5)
    landing = float(state[_LANDING])
    if landing == 0.0:
        return _RESTING if on_ground else _AIRBORNE
    return FrameResult(on_ground, landing, config.fall_damage(landing))


_SCRATCH = np.zeros(8)
_RESTING = FrameResult(True, 0.0, 0)
_AIRBORNE = FrameResult(False, 0.0, 0)


def _frame_kernel(kernel: str):
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return _player_frame if kernel == "numpy" else _player_frame_numba


@register_jitable
def _walkable_at(content, origin, walkable, x, y, z):
    i, j, k = x - origin[0], y - origin[1], z - origin[2]
    if i < 0 or j < 0 or k < 0:
        return walkable[IGNORE]
    if i >= content.shape[0] or j >= content.shape[1] or k >= content.shape[2]:
        return walkable[IGNORE]
    cid = content[i, j, k]
    if cid >= walkable.shape[0]:
        return True
    return walkable[cid]


@register_jitable
def _cell_span(lo, hi):
    """First and last node index whose cell overlaps the open interval (lo, hi)."""
    return int(math.floor(lo + EPS + 0.5)), int(math.ceil(hi - EPS + 0.5)) - 1


@register_jitable
def _axis_limit(content, origin, walkable, px, py, pz, hx, h, hz, axis, move):
    """How far the box at ``(px, py, pz)`` can move along ``axis`` toward ``move`` (signed).

    Only faces ahead of the box stop it, so a box already overlapping a node can leave it.
    """
    lo0, hi0 = px - hx, px + hx
    lo1, hi1 = py, py + h
    lo2, hi2 = pz - hz, pz + hz
    if axis == 0:
        lo, hi = lo0, hi0
    elif axis == 1:
        lo, hi = lo1, hi1
    else:
        lo, hi = lo2, hi2
    if move > 0:
        a0, a1 = int(math.floor(hi + 0.5)) - 1, int(math.floor(hi + move + 0.5)) + 1
    else:
        a0, a1 = int(math.floor(lo + move + 0.5)) - 1, int(math.floor(lo + 0.5)) + 1
    x0, x1 = _cell_span(lo0, hi0)
    y0, y1 = _cell_span(lo1, hi1)
    z0, z1 = _cell_span(lo2, hi2)
    if axis == 0:
        x0, x1 = a0, a1
    elif axis == 1:
        y0, y1 = a0, a1
    else:
        z0, z1 = a0, a1
    allowed = move
    for x in range(x0, x1 + 1):
        for y in range(y0, y1 + 1):
            for z in range(z0, z1 + 1):
                c = x if axis == 0 else (y if axis == 1 else z)
                if move > 0:
                    face = c - 0.5
                    if face < hi - EPS or face >= hi + allowed:
                        continue
                else:
                    face = c + 0.5
                    if face > lo + EPS or face <= lo + allowed:
                        continue
                if _walkable_at(content, origin, walkable, x, y, z):
                    allowed = face - hi if move > 0 else face - lo
    return allowed


@register_jitable
def _supported(content, origin, walkable, px, py, pz, hx, h, hz):
    down = _axis_limit(content, origin, walkable, px, py, pz, hx, h, hz, 1, -SUPPORT_PROBE)
    return down > -SUPPORT_PROBE + EPS


@register_jitable
def _move_horizontal(content, origin, walkable, s, axis, move, hx, h, hz, step, sneak_edge):
    """Moves the box along x (axis 0) or z (axis 2), stepping up and stopping at sneak edges."""
    a = _PX if axis == 0 else _PZ
    v = _VX if axis == 0 else _VZ
    allowed = _axis_limit(content, origin, walkable, s[_PX], s[_PY], s[_PZ], hx, h, hz, axis, move)
    rise = 0.0
    if abs(allowed - move) > EPS and step > 0.0:
        up = _axis_limit(content, origin, walkable, s[_PX], s[_PY], s[_PZ], hx, h, hz, 1, step)
        raised = s[_PY] + up
        p = np.array((s[_PX], raised, s[_PZ]))
        stepped = _axis_limit(content, origin, walkable, p[0], p[1], p[2], hx, h, hz, axis, move)
        if abs(stepped) > abs(allowed) + EPS:
            p[axis] += stepped
            down = _axis_limit(content, origin, walkable, p[0], p[1], p[2], hx, h, hz, 1, -up)
            if up + down > EPS:
                allowed, rise = stepped, up + down
    if sneak_edge and rise == 0.0:
        p = np.array((s[_PX], s[_PY], s[_PZ]))
        p[axis] += allowed
        if not _supported(content, origin, walkable, p[0], p[1], p[2], hx, h, hz):
            good, bad = 0.0, allowed
            for _ in range(SNEAK_BISECTIONS):
                mid = 0.5 * (good + bad)
                p[axis] = s[a] + mid
                if _supported(content, origin, walkable, p[0], p[1], p[2], hx, h, hz):
                    good = mid
                else:
                    bad = mid
            allowed = good
            s[v] = 0.0
    if abs(allowed - move) > EPS:
        s[v] = 0.0
    s[a] += allowed
    s[_PY] += rise


@register_jitable
def _physics_frame(
    content,
    origin,
    walkable,
    s,
    yaw,
    forward,
    side,
    jump,
    sneak,
    speed,
    accel_ground,
    accel_air,
    gravity,
    jump_speed,
    hx,
    h,
    hz,
    step_height,
    air_step_height,
    dt,
):
    on_ground = s[_GROUND] > 0.5
    # Wished horizontal velocity: forward is (−sin yaw, cos yaw), right is (cos yaw, sin yaw).
    wx = -forward * math.sin(yaw) + side * math.cos(yaw)
    wz = forward * math.cos(yaw) + side * math.sin(yaw)
    norm = math.sqrt(wx * wx + wz * wz)
    if norm > 0.0:
        wx, wz = wx / norm * speed, wz / norm * speed
    max_change = (accel_ground if on_ground else accel_air) * dt
    dvx, dvz = wx - s[_VX], wz - s[_VZ]
    change = math.sqrt(dvx * dvx + dvz * dvz)
    if change > max_change:
        dvx, dvz = dvx * max_change / change, dvz * max_change / change
    s[_VX] += dvx
    s[_VZ] += dvz
    if jump and on_ground:
        s[_VY] = jump_speed
    s[_VY] -= gravity * dt
    # Vertical sweep first, so that this frame's ground contact governs step-up and sneak.
    move = s[_VY] * dt
    allowed = _axis_limit(content, origin, walkable, s[_PX], s[_PY], s[_PZ], hx, h, hz, 1, move)
    s[_PY] += allowed
    s[_LANDING] = 0.0
    if abs(allowed - move) > EPS:
        if move < 0.0:
            s[_LANDING] = -s[_VY]
            on_ground = True
        else:
            on_ground = False
        s[_VY] = 0.0
    else:
        on_ground = False
    step = step_height if on_ground else air_step_height
    sneak_edge = sneak and on_ground
    for axis in (0, 2):
        move = s[_VX if axis == 0 else _VZ] * dt
        if move != 0.0:
            _move_horizontal(content, origin, walkable, s, axis, move, hx, h, hz, step, sneak_edge)
    s[_GROUND] = 1.0 if on_ground else 0.0


def _player_frame(
    content, origin, walkable, position, velocity, on_ground, s, yaw, forward, side, *rest
):
    """``_physics_frame`` on a player's own ``position`` and ``velocity``: copied into the state
    ``s`` and back, inside the compiled call rather than around it in Python. ``rest``: the
    kernel's arguments after ``side`` (jump, sneak, speed and ``kernel_constants``)."""
    for a in range(3):
        s[_PX + a] = position[a]
        s[_VX + a] = velocity[a]
    s[_GROUND] = 1.0 if on_ground else 0.0
    _physics_frame(content, origin, walkable, s, yaw, forward, side, *rest)
    for a in range(3):
        position[a] = s[_PX + a]
        velocity[a] = s[_VX + a]


_player_frame_numba = njit(cache=True)(_player_frame)
