"""First-person voxel renderer of the Craft engine.

Follows the observations of Craftium (Malagón, Ceberio, Lozano, ICML 2025), which renders frames
with the Luanti engine: the player's eye looks along Luanti's yaw and pitch (yaw 0 faces +z and
grows turning left, pitch > 0 looks down), the vertical field of view is Luanti's
``fov · clamp(sqrt(1.6 / aspect), 1, 1.4)``, faces are shaded by axis with Luanti's factors, fog
blends linearly into the sky colour from ``fog_start`` of the view distance to the view distance,
and grey frames use Craftium's ``R//3 + G//3 + B//3``.

Departures from Luanti, for speed and determinism: one ray per pixel through the voxel grid
(Amanatides–Woo DDA) instead of rasterised meshes; every visible node is an opaque unit cube with
one base colour, optionally modulated by an 8×8 procedural texture (no texture files, no
transparency, no node boxes or meshes); entities are axis-aligned coloured boxes; the sky is one
flat colour; node light (0–15) darkens a face by ``0.8 ** (15 − light)``, a stand-in for Luanti's
light curve. The node holding the eye is not drawn, so a camera inside a block still sees out.

Frames are drawn by one Numba kernel (on-disk cache, no fastmath, sequential, so frames are
bit-exact on a given machine). The tests check it against a vectorised NumPy reference of the same
arithmetic in the same order (``tests/craft/render_reference.py``), an order of magnitude slower.
The kernel skips work that cannot change a pixel: entity boxes outside a conservative on-screen
rectangle (tested per row of pixels, then per pixel), the walk of a ray that is not going down
once it is above the highest visible row (``Renderer.top_row``), and, given the height of every
column (``Renderer.column_heights``), the walk of a rising ray once it has passed above every
column it can still cross (a horizon of 64 sectors of direction around the eye, kept until the
eye or a height changes); it walks all rays before it shades any, so that shading pipelines
across pixels.

Everything here works on plain arrays (a ``uint16`` content grid indexed ``[x, y, z]``, y up, a
colour and a visibility table per content id), so the renderer does not depend on the engine.
Positions are in nodes: node ``(x, y, z)`` occupies ``[x − 0.5, x + 0.5]`` on each axis, and grid
index ``i`` holds node ``origin + i``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

AIR_ID = 126
"""Content id of Luanti's ``air`` node (reserved, as in Luanti)."""

N_CONTENT_IDS = 65536
# Luanti's face shading of cube faces by normal: sqrt(1.0), sqrt(0.2), sqrt(0.45), sqrt(0.7).
FACE_SHADE_TOP = 1.0
FACE_SHADE_BOTTOM = 0.447213
FACE_SHADE_X = 0.670820
FACE_SHADE_Z = 0.836660
LIGHT_MAX = 15
LIGHT_CURVE = 0.8 ** (LIGHT_MAX - np.arange(LIGHT_MAX + 1, dtype=np.float64))
"""Brightness factor per node light level 0–15 (level 15 is full brightness)."""

HORIZON_SECTORS = 64
HORIZON_GROUP = 2
# Rising rays stop early by a horizon of 64 sectors of direction over groups of 2×2 columns.

ENTITY_BOX_FIELDS = ("cx", "cy", "cz", "hx", "hy", "hz", "r", "g", "b")
"""Columns of an entity-box array: centre (nodes), half-size (nodes), colour (0–255)."""


def vertical_fov(fov: float, width: int, height: int) -> float:
    """Luanti's vertical field of view in degrees for the configured ``fov`` and frame size."""
    aspect = width / height
    return fov * min(max(math.sqrt(1.6 / aspect), 1.0), 1.4)


def camera_basis(yaw: float, pitch: float) -> np.ndarray:
    """Rows right, up and forward (unit vectors) of a camera with Luanti's yaw and pitch (degrees).

    Yaw 0 looks along +z with +x on the right; yaw 90 looks along −x; pitch 90 looks straight down.
    """
    y, p = math.radians(yaw), math.radians(pitch)
    sy, cy, sp, cp = math.sin(y), math.cos(y), math.sin(p), math.cos(p)
    return np.array(
        [
            [cy, 0.0, sy],
            [-sy * sp, cp, cy * sp],
            [-sy * cp, -sp, cy * cp],
        ]
    )


def to_grayscale(frame: np.ndarray, keepdim: bool = False) -> np.ndarray:
    """Craftium's grey scale ``R//3 + G//3 + B//3`` of an ``(H, W, 3)`` uint8 frame.

    Returns ``(H, W)`` uint8, or ``(H, W, 1)`` with ``keepdim``.
    """
    thirds = frame // 3
    gray = thirds[..., 0] + thirds[..., 1] + thirds[..., 2]
    return gray[..., None] if keepdim else gray


@dataclass(frozen=True)
class RenderOptions:
    """How frames look.

    Args:
        width, height: frame size in pixels.
        fov: Luanti's ``fov`` setting in degrees (72; OpenWorld 90).
        view_distance: nodes; nothing farther is drawn (Craftium's 32).
        fog: blend into ``sky_rgb`` with distance.
        fog_start: fraction of ``view_distance`` where the fog begins (Luanti's 0.4).
        face_shading: darken faces by axis as Luanti does.
        sky_rgb: colour of rays that hit nothing, and of the fog.
        texture_strength: 0 for flat colours; up to 1 for an 8×8 procedural texel pattern that
            darkens each texel by up to this fraction.
        rgb: ``(H, W, 3)`` frames; False gives Craftium's grey frames.
        gray_scale_keepdim: grey frames as ``(H, W, 1)`` instead of ``(H, W)``.
    """

    width: int = 64
    height: int = 64
    fov: float = 72.0
    view_distance: float = 32.0
    fog: bool = True
    fog_start: float = 0.4
    face_shading: bool = True
    sky_rgb: tuple[int, int, int] = (97, 181, 245)
    texture_strength: float = 0.0
    rgb: bool = True
    gray_scale_keepdim: bool = False

    def __post_init__(self):
        for name in ("width", "height"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 < self.fov < 180.0:
            raise ValueError(f"fov must be in (0, 180) degrees, got {self.fov!r}")
        if not self.view_distance > 0.0:
            raise ValueError(f"view_distance must be positive, got {self.view_distance!r}")
        if not 0.0 <= self.fog_start < 1.0:
            raise ValueError(f"fog_start must be in [0, 1), got {self.fog_start!r}")
        if not 0.0 <= self.texture_strength <= 1.0:
            raise ValueError(f"texture_strength must be in [0, 1], got {self.texture_strength!r}")

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the frames ``Renderer.render`` returns."""
        if self.rgb:
            return (self.height, self.width, 3)
        if self.gray_scale_keepdim:
            return (self.height, self.width, 1)
        return (self.height, self.width)


@functools.lru_cache(maxsize=16)
def _shared_tables(key: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read-only tables of a renderer, shared by every renderer with the same colours, visibility
    and camera (a vector env's 64 worlds then keep one copy in cache, not 64): colour and
    visibility padded to every uint16 id, so the kernel never indexes out of them, and the
    pixel rays."""
    colors_bytes, visible_bytes, width, height, fov = key
    colors = np.frombuffer(colors_bytes, dtype=np.uint8).reshape(-1, 3)
    visible = np.frombuffer(visible_bytes, dtype=np.bool_)
    padded_colors = np.zeros((N_CONTENT_IDS, 3), dtype=np.float64)
    padded_colors[: len(colors)] = colors
    padded_visible = np.zeros(N_CONTENT_IDS, dtype=np.bool_)
    padded_visible[: len(visible)] = visible
    pixel_rays = _pixel_rays(RenderOptions(width=width, height=height, fov=fov))
    unit_rays = _unit_rays(pixel_rays)
    for table in (padded_colors, padded_visible, pixel_rays, unit_rays):
        table.flags.writeable = False
    return padded_colors, padded_visible, pixel_rays, unit_rays


class Renderer:
    """Draws first-person frames of a voxel grid.

    Args:
        colors: ``uint8 [N, 3]`` base colour per content id.
        visible: ``bool [N]``, True for content drawn as an opaque cube (False for air).
            Ids at or beyond ``N`` are invisible.
        options: ``RenderOptions``.
    """

    def __init__(self, colors: np.ndarray, visible: np.ndarray, options: RenderOptions):
        colors = np.asarray(colors)
        visible = np.asarray(visible, dtype=bool)
        if colors.ndim != 2 or colors.shape[1] != 3 or len(colors) > N_CONTENT_IDS:
            raise ValueError(f"colors must have shape (N, 3), N <= 65536, got {colors.shape}")
        if visible.shape != (len(colors),):
            raise ValueError(f"visible must have shape ({len(colors)},), got {visible.shape}")
        self.options = options
        key = (colors.astype(np.uint8).tobytes(), visible.tobytes(), options.width, options.height)
        key += (options.fov,)
        self._colors, self._visible, self._pixel_rays, self._unit_rays = _shared_tables(key)
        if options.face_shading:
            shade = (FACE_SHADE_X, FACE_SHADE_TOP, FACE_SHADE_BOTTOM, FACE_SHADE_Z)
        else:
            shade = (1.0, 1.0, 1.0, 1.0)
        # Brightness factor per face (x, x, bottom, top, z, z) and light level.
        face = np.array(shade, dtype=np.float64)[[0, 0, 2, 1, 3, 3]]
        self._factors = face[:, None] * LIGHT_CURVE[None, :]
        self._sky = np.array(options.sky_rgb, dtype=np.float64)
        self._no_entities = np.zeros((0, 9), dtype=np.float64)
        self._no_light = np.zeros((1, 1, 1), dtype=np.uint8)
        self._no_horizon = np.zeros((1, 1))
        # The last horizon built, with what it was built from (eye, origin, heights).
        self._horizon = self._no_horizon
        self._horizon_eye = None
        self._horizon_heights = None

    def top_row(self, grid: np.ndarray) -> int:
        """Highest row (y index) of ``grid`` holding a visible node, −1 when there is none."""
        rows = np.flatnonzero(self._visible[grid].any(axis=(0, 2)))
        return int(rows[-1]) if len(rows) else -1

    def column_heights(self, grid: np.ndarray) -> np.ndarray:
        """``int32 [X, Z]``: per column of ``grid``, the highest row (y index) holding a visible
        node, −1 for a column without one. The ``heights`` hint of ``render``."""
        seen = self._visible[grid]
        top = grid.shape[1] - 1 - np.argmax(seen[:, ::-1, :], axis=1)
        return np.where(seen.any(axis=1), top, -1).astype(np.int32)

    def update_column(self, heights: np.ndarray, grid: np.ndarray, x: int, z: int) -> None:
        """Recompute ``heights[x, z]`` (grid indices) from ``grid`` after its column changed."""
        rows = np.flatnonzero(self._visible[grid[x, :, z]])
        heights[x, z] = rows[-1] if len(rows) else -1

    def render(
        self,
        grid: np.ndarray,
        eye: np.ndarray,
        yaw: float,
        pitch: float,
        entities: np.ndarray | None = None,
        light: np.ndarray | None = None,
        origin: tuple[int, int, int] = (0, 0, 0),
        top_row: int | None = None,
        heights: np.ndarray | None = None,
    ) -> np.ndarray:
        """One frame seen from ``eye`` (nodes) with Luanti's ``yaw`` and ``pitch`` (degrees).

        Args:
            grid: ``uint16 [X, Y, Z]`` content ids.
            eye: eye position in nodes.
            yaw, pitch: degrees, Luanti's conventions.
            entities: ``float [M, 9]`` boxes, columns ``ENTITY_BOX_FIELDS``; None for none.
            light: ``uint8 [X, Y, Z]`` node light 0–15, or None for full light everywhere. A face
                takes the light of the node in front of it.
            origin: node coordinates of ``grid[0, 0, 0]``.
            top_row: ``self.top_row(grid)``, computed once per change of the grid: the kernel
                stops rays that are not going down above it. None stands for the grid's
                top row. Any value at or above ``self.top_row(grid)`` gives the same frame; a
                lower one is an error that hides what stands above it.
            heights: ``int32 [X, Z]``, ``self.column_heights(grid)``: the kernel stops a rising
                ray once it has passed above every column it can still cross, so that
                rays into the sky do not walk to the view distance. As with ``top_row``, values
                at or above the true ones give the same frame and a lower one hides what stands
                above it: after a visible node is placed at grid index ``(x, y, z)``, raise
                ``heights[x, z]`` to at least ``y`` (or call ``self.update_column``); after a
                node is dug the old value stays valid, and ``update_column`` makes it tight
                again. None walks every rising ray to its end.

        Returns:
            ``uint8`` frame of shape ``options.shape``.
        """
        if grid.dtype != np.uint16 or grid.ndim != 3:
            raise ValueError(f"grid must be a 3-D uint16 array, got {grid.ndim}-D {grid.dtype}")
        opts = self.options
        use_light = light is not None
        entities = self._no_entities if entities is None else entities
        if heights is not None and np.shape(heights) != (grid.shape[0], grid.shape[2]):
            raise ValueError(
                f"heights must have shape {(grid.shape[0], grid.shape[2])}, got {np.shape(heights)}"
            )
        use_horizon = heights is not None
        horizon = self._horizon_of(heights, eye, origin) if use_horizon else self._no_horizon
        frame = np.empty((opts.height, opts.width, 3), dtype=np.uint8)
        self._draw(
            np.ascontiguousarray(grid),
            light if use_light else self._no_light,
            use_light,
            self._colors,
            self._visible,
            grid.shape[1] - 1 if top_row is None else int(top_row),
            horizon,
            use_horizon,
            np.asarray(origin, dtype=np.float64),
            np.asarray(eye, dtype=np.float64),
            camera_basis(yaw, pitch),
            self._pixel_rays,
            self._unit_rays,
            np.ascontiguousarray(entities, dtype=np.float64),
            self._sky,
            float(opts.view_distance),
            opts.fog,
            float(opts.fog_start),
            self._factors,
            float(opts.texture_strength),
            frame,
        )
        if opts.rgb:
            return frame
        return to_grayscale(frame, opts.gray_scale_keepdim)

    def _draw(self, *kernel_args) -> None:
        """Fills the frame, ``kernel_args``' last, with ``_render_kernel``."""
        _render_kernel(*kernel_args)

    def _horizon_of(self, heights, eye, origin) -> np.ndarray:
        """The horizon (``_horizon``) of ``heights`` around ``eye``, rebuilt only when the eye,
        the origin or a height differs from the last call's."""
        cell = tuple(float(e) - float(o) + 0.5 for e, o in zip(eye, origin, strict=True))
        if cell != self._horizon_eye or not np.array_equal(heights, self._horizon_heights):
            self._horizon = _horizon(
                np.ascontiguousarray(heights, dtype=np.int32),
                *cell,
                float(self.options.view_distance),
            )
            self._horizon_eye = cell
            self._horizon_heights = np.array(heights, copy=True)
        return self._horizon


def _pixel_rays(options: RenderOptions) -> np.ndarray:
    """Per pixel, the ray through its centre in camera units (right, up; forward is 1)."""
    half_h = math.tan(math.radians(vertical_fov(options.fov, options.width, options.height)) / 2)
    half_w = half_h * options.width / options.height
    cols = ((np.arange(options.width) + 0.5) / options.width * 2.0 - 1.0) * half_w
    rows = (1.0 - (np.arange(options.height) + 0.5) / options.height * 2.0) * half_h
    rays = np.empty((options.height, options.width, 2), dtype=np.float64)
    rays[..., 0] = cols[None, :]
    rays[..., 1] = rows[:, None]
    return rays


def _unit_rays(pixel_rays: np.ndarray) -> np.ndarray:
    """``float64 [H·W, 3]``: per pixel, the unit ray through its centre in camera space (right,
    up, forward), so that a frame turns it into the world with one rotation."""
    rays = np.empty((pixel_rays.shape[0] * pixel_rays.shape[1], 3))
    rays[:, :2] = pixel_rays.reshape(-1, 2)
    rays[:, 2] = 1.0
    norm = rays[:, 0] * rays[:, 0] + rays[:, 1] * rays[:, 1] + 1.0
    return rays * (1.0 / np.sqrt(norm))[:, None]


@njit(cache=True, inline="always")
def _texel_factor(content, u, v, strength):
    """Darkening of texel (u, v) of an 8×8 pattern fixed per content id (an integer hash).

    Plain arithmetic on int64 scalars or arrays: the NumPy reference of the tests runs the same
    source on arrays (``_texel_factor.py_func``).
    """
    h = (content * 73856093) ^ (u * 19349663) ^ (v * 83492791)
    h = (h ^ (h >> 13)) * 1274126177
    return 1.0 - strength * ((h >> 8) & 255) / 255.0


@njit(cache=True, inline="always")
def _inverse(d):
    """1 / d, infinite for a ray parallel to the axis."""
    return 1.0 / d if d != 0.0 else np.inf


@njit(cache=True, inline="always")
def _box_slab(lo, hi, e, d, inv, a, t_near, t_far, axis, sign):
    """Clip a ray from ``e`` to a box's slab [lo, hi] on axis ``a``; tracks the entry face."""
    if d == 0.0:
        if e < lo or e > hi:
            t_near = np.inf
        return t_near, t_far, axis, sign
    t0 = (lo - e) * inv
    t1 = (hi - e) * inv
    s = -1.0
    if t0 > t1:
        t0, t1 = t1, t0
        s = 1.0
    if t0 > t_near:
        t_near, axis, sign = t0, a, s
    return t_near, min(t_far, t1), axis, sign


@njit(cache=True)
def _entity_screen_bounds(entities, eye, basis):
    """Per entity box, the camera-unit rectangle (right min, max, up min, max) its rays cross.

    A conservative bound: a box wholly behind the eye plane gets an empty one, a box crossing it
    an infinite one. Lets the per-pixel box test skip boxes it cannot hit, which never changes a
    result.
    """
    bounds = np.empty((entities.shape[0], 4))
    for k in range(entities.shape[0]):
        lo_u, hi_u, lo_v, hi_v = np.inf, -np.inf, np.inf, -np.inf
        behind = ahead = 0
        for corner in range(8):
            qx = entities[k, 0] + (entities[k, 3] if corner & 1 else -entities[k, 3]) - eye[0]
            qy = entities[k, 1] + (entities[k, 4] if corner & 2 else -entities[k, 4]) - eye[1]
            qz = entities[k, 2] + (entities[k, 5] if corner & 4 else -entities[k, 5]) - eye[2]
            f = qx * basis[2, 0] + qy * basis[2, 1] + qz * basis[2, 2]
            if f < -1e-3:
                behind += 1
            elif f > 1e-3:
                ahead += 1
                u = (qx * basis[0, 0] + qy * basis[0, 1] + qz * basis[0, 2]) / f
                v = (qx * basis[1, 0] + qy * basis[1, 1] + qz * basis[1, 2]) / f
                lo_u, hi_u = min(lo_u, u), max(hi_u, u)
                lo_v, hi_v = min(lo_v, v), max(hi_v, v)
        if behind == 8:
            bounds[k] = (np.inf, -np.inf, np.inf, -np.inf)
        elif ahead < 8:
            bounds[k] = (-np.inf, np.inf, -np.inf, np.inf)
        else:
            margin = 1e-4 * (1.0 + max(abs(lo_u), abs(hi_u), abs(lo_v), abs(hi_v)))
            bounds[k] = (lo_u - margin, hi_u + margin, lo_v - margin, hi_v + margin)
    return bounds


@njit(cache=True, inline="always")
def _box_hit(cx, cy, cz, hx, hy, hz, ex, ey, ez, dx, dy, dz, ix, iy, iz):
    """Where a ray from ``(ex, ey, ez)`` meets the box of centre ``c`` and half-size ``h``.

    Returns (t entering, t leaving, axis and normal sign of the entry face); the ray misses the
    box unless ``0 <= t entering <= t leaving`` (an eye inside a box does not see it). Scalars
    only, so that inlining it into the pixel loop counts no array references.
    """
    t_near, t_far, axis, sign = _box_slab(cx - hx, cx + hx, ex, dx, ix, 0, -np.inf, np.inf, 0, 0.0)
    t_near, t_far, axis, sign = _box_slab(
        cy - hy, cy + hy, ey, dy, iy, 1, t_near, t_far, axis, sign
    )
    return _box_slab(cz - hz, cz + hz, ez, dz, iz, 2, t_near, t_far, axis, sign)


@njit(cache=True, inline="always")
def _pseudo_angle(x, z):
    """A stand-in for the angle of ``(x, z)`` from +x towards +z, in [0, 4): monotone in the
    angle, with no trigonometry."""
    if z >= 0.0:
        return z / (x + z) if x >= 0.0 else 1.0 - x / (z - x)
    return 2.0 - z / (-x - z) if x < 0.0 else 3.0 + x / (x - z)


@njit(cache=True, nogil=True)
def _horizon(heights, px, py, pz, view_distance):
    """Per sector of directions around the eye and per ring of distance (cell space), the
    steepest slope a rising ray needs to pass above the columns of that sector reaching that far
    or farther: ``[sector, ring]`` is the largest ``(height + 1 − eye y) / nearest distance``
    over the groups of HORIZON_GROUP × HORIZON_GROUP columns that some direction of the sector
    crosses and whose farthest point is at least ``ring`` nodes from the eye (horizontally).

    A rising ray gains height with distance, so above a group where it enters, it stays above.
    A ray of slope ``k`` (rise over horizontal run) in a sector whose ring ``r`` needs less than
    ``k`` can cross only columns it passes above once it is ``r`` nodes out: the walk may stop
    there. Every figure is rounded the cautious way (margins of 1e-6 nodes), so a stop never
    hides a node.
    """
    nx, nz = heights.shape
    rings = np.int64(view_distance) + 3
    need = np.full((HORIZON_SECTORS, rings), -np.inf)
    scale = HORIZON_SECTORS / 4.0
    tops = np.full(
        ((nx + HORIZON_GROUP - 1) // HORIZON_GROUP, (nz + HORIZON_GROUP - 1) // HORIZON_GROUP), -1
    )
    for x in range(nx):
        for z in range(nz):
            gx, gz = x // HORIZON_GROUP, z // HORIZON_GROUP
            tops[gx, gz] = max(tops[gx, gz], heights[x, z])
    for gx in range(0, nx, HORIZON_GROUP):
        for gz in range(0, nz, HORIZON_GROUP):
            rise = tops[gx // HORIZON_GROUP, gz // HORIZON_GROUP] + 1 + 1e-6 - py
            if rise <= 0.0:
                continue  # Wholly below the eye: a rising ray passes above it.
            x0, x1 = gx - px, min(gx + HORIZON_GROUP, nx) - px
            z0, z1 = gz - pz, min(gz + HORIZON_GROUP, nz) - pz
            ox = max(x0, -x1, 0.0)
            oz = max(z0, -z1, 0.0)
            near = np.sqrt(ox * ox + oz * oz)
            if near > view_distance:
                continue
            fx = max(abs(x0), abs(x1))
            fz = max(abs(z0), abs(z1))
            ring = min(np.int64(np.sqrt(fx * fx + fz * fz) + 1e-6), rings - 1)
            if near < 1e-6:
                # Under (or touching) the eye: every direction may cross it.
                for sector in range(HORIZON_SECTORS):
                    need[sector, ring] = np.inf
                continue
            slope = rise / near
            a00, a01 = _pseudo_angle(x0, z0), _pseudo_angle(x0, z1)
            a10, a11 = _pseudo_angle(x1, z0), _pseudo_angle(x1, z1)
            lo = min(min(a00, a01), min(a10, a11))
            hi = max(max(a00, a01), max(a10, a11))
            if hi - lo > 2.0:
                # A group away from the eye spans less than half a turn: this one lies across
                # the +x axis, where the angle wraps from 4 to 0.
                a00, a01 = a00 + 4.0 * (a00 < 2.0), a01 + 4.0 * (a01 < 2.0)
                a10, a11 = a10 + 4.0 * (a10 < 2.0), a11 + 4.0 * (a11 < 2.0)
                lo = min(min(a00, a01), min(a10, a11))
                hi = max(max(a00, a01), max(a10, a11))
            first = np.int64(np.floor((lo - 1e-9) * scale))
            last = np.int64(np.floor((hi + 1e-9) * scale))
            for sector in range(first, last + 1):
                sector %= HORIZON_SECTORS
                need[sector, ring] = max(need[sector, ring], slope)
    for sector in range(HORIZON_SECTORS):
        for ring in range(rings - 2, -1, -1):
            need[sector, ring] = max(need[sector, ring], need[sector, ring + 1])
    return need


@njit(cache=True, inline="always")
def _grid_slab(p, d, inv, n, t_enter, t_leave, axis, a):
    """Clip the ray interval (t_enter, t_leave) to the grid's slab [0, n) on axis ``a``."""
    if d == 0.0:
        if p < 0.0 or p >= n:
            return np.inf, t_leave, axis
        return t_enter, t_leave, axis
    t0 = (0.0 - p) * inv
    t1 = (n - p) * inv
    if t0 > t1:
        t0, t1 = t1, t0
    if t0 > t_enter:
        t_enter = t0
        axis = a
    return t_enter, min(t_leave, t1), axis


@njit(cache=True, nogil=True)
def _render_kernel(
    grid,
    light,
    use_light,
    colors,
    visible,
    y_top,
    horizon,
    use_horizon,
    origin,
    eye,
    basis,
    pixel_rays,
    unit_rays,
    entities,
    sky,
    view_distance,
    use_fog,
    fog_start,
    factors,
    texture_strength,
    out,
):
    """Fill ``out`` (H, W, 3) with one ray per pixel: entity boxes, then the grid, then sky.

    Two passes over the pixels: the first finds what each ray hits, the second shades it. The
    shading pass keeps few data-dependent branches, so the CPU overlaps the pixels' chains of
    loads, divisions and roundings instead of waiting on each in turn. The per-pixel code calls
    only helpers on scalars: an inlined helper taking arrays costs atomic reference counting per
    array and pixel. Work that does not depend on what a ray hits is done once: the unit rays in
    camera space per renderer (a frame rotates them, with no square root), the brightness per
    face and light level per renderer, the fog as one multiply-add of the distance. Same
    arithmetic as the tests' NumPy reference. Compiled without the GIL, so threads rendering
    frames of several worlds run side by side.
    """
    # Cell space: cell i spans [i, i + 1), so node origin + i spans [i − 0.5, i + 0.5] + origin.
    px = eye[0] - origin[0] + 0.5
    py = eye[1] - origin[1] + 0.5
    pz = eye[2] - origin[2] + 0.5
    bounds = _entity_screen_bounds(entities, eye, basis)
    cells = grid.reshape(-1)
    nx, ny, nz = grid.shape
    n = out.shape[0] * out.shape[1]
    rays = pixel_rays.reshape(n, 2)
    # Pass 1, per pixel: the unit ray and its inverse (dirs), the visible content (−1 for none),
    # entity box (−1 for none), axis of the face hit and the voxel's cell along it (hits), the
    # box's distance and face sign (boxes).
    dirs = np.empty((n, 6))
    hits = np.empty((n, 4), dtype=np.int64)
    boxes = np.empty((n, 2))
    b00, b01, b02 = basis[0, 0], basis[0, 1], basis[0, 2]
    b10, b11, b12 = basis[1, 0], basis[1, 1], basis[1, 2]
    b20, b21, b22 = basis[2, 0], basis[2, 1], basis[2, 2]
    height, width = out.shape[0], out.shape[1]
    ids = np.empty(entities.shape[0], dtype=np.int64)
    eye_x_nodes, eye_y_nodes, eye_z_nodes = eye[0], eye[1], eye[2]
    eye_inside = 0.0 <= px < nx and 0.0 <= py < ny and 0.0 <= pz < nz
    eye_x, eye_y, eye_z = np.int64(px), np.int64(py), np.int64(pz)
    y_end = min(ny, y_top + 1)
    rings = horizon.shape[1]
    sector_scale = HORIZON_SECTORS / 4.0
    for row in range(height):
        start = row * width
        # The boxes whose screen rectangle this row of rays (one up coordinate) can cross, in
        # ascending order.
        up = rays[start, 1]
        count = 0
        for k in range(entities.shape[0]):
            if bounds[k, 2] <= up <= bounds[k, 3] and bounds[k, 0] <= bounds[k, 1]:
                ids[count] = k
                count += 1
        for i in range(start, start + width):
            rx = rays[i, 0]
            ry = rays[i, 1]
            cu, cv, cw = unit_rays[i, 0], unit_rays[i, 1], unit_rays[i, 2]
            dx = cu * b00 + cv * b10 + cw * b20
            dy = cu * b01 + cv * b11 + cw * b21
            dz = cu * b02 + cv * b12 + cw * b22
            ix, iy, iz = _inverse(dx), _inverse(dy), _inverse(dz)
            dirs[i, 0] = dx
            dirs[i, 1] = dy
            dirs[i, 2] = dz
            dirs[i, 3] = ix
            dirs[i, 4] = iy
            dirs[i, 5] = iz
            # Entity boxes: the nearest hit within the view distance; of equally near boxes,
            # the first in ``entities``.
            hit_t, hit_k, hit_axis, hit_sign = view_distance, -1, 0, 0.0
            for j in range(count):
                k = ids[j]
                if not (bounds[k, 0] <= rx <= bounds[k, 1] and bounds[k, 2] <= ry <= bounds[k, 3]):
                    continue
                t_near, t_far, axis, sign = _box_hit(
                    entities[k, 0],
                    entities[k, 1],
                    entities[k, 2],
                    entities[k, 3],
                    entities[k, 4],
                    entities[k, 5],
                    eye_x_nodes,
                    eye_y_nodes,
                    eye_z_nodes,
                    dx,
                    dy,
                    dz,
                    ix,
                    iy,
                    iz,
                )
                if 0.0 <= t_near <= t_far and t_near < hit_t:
                    hit_t, hit_k, hit_axis, hit_sign = t_near, k, axis, sign
            # The walk through the grid, up to the entity hit (see above for why it is inline),
            # and for a rising ray up to where it has passed above everything (the horizon).
            walk_t = hit_t
            if use_horizon and dy > 0.0:
                run = np.sqrt(dx * dx + dz * dz)
                if run > 0.0:
                    slope = dy / run - 1e-9
                    sector = min(
                        np.int64(_pseudo_angle(dx, dz) * sector_scale), HORIZON_SECTORS - 1
                    )
                    ring = 0
                    while ring < rings and horizon[sector, ring] >= slope:
                        ring += 1
                    if ring < rings:
                        walk_t = min(walk_t, (ring + 1e-6) / run)
            content = -1
            walk = True
            if eye_inside:
                # The common case: the walk starts in the node holding the eye.
                axis = -1
                cx, cy, cz = eye_x, eye_y, eye_z
            else:
                t_enter, t_leave, axis = _grid_slab(px, dx, ix, nx, 0.0, hit_t, -1, 0)
                t_enter, t_leave, axis = _grid_slab(py, dy, iy, ny, t_enter, t_leave, axis, 1)
                t_enter, t_leave, axis = _grid_slab(pz, dz, iz, nz, t_enter, t_leave, axis, 2)
                walk = axis >= 0 and t_enter < t_leave
                cx = cy = cz = 0
                if walk:
                    cx = min(max(np.int64(np.floor(px + dx * t_enter)), 0), nx - 1)
                    cy = min(max(np.int64(np.floor(py + dy * t_enter)), 0), ny - 1)
                    cz = min(max(np.int64(np.floor(pz + dz * t_enter)), 0), nz - 1)
                    if axis == 0:
                        cx = 0 if dx > 0.0 else nx - 1
                    elif axis == 1:
                        cy = 0 if dy > 0.0 else ny - 1
                    else:
                        cz = 0 if dz > 0.0 else nz - 1
            # Per axis: the step, the cell that ends the walk, the index stride and the next
            # boundary. Rows above y_top hold nothing visible: a ray that does not go down ends
            # on reaching them.
            if dx > 0.0:
                ux, x_stop, sx, mx = 1, nx, ny * nz, (cx + 1 - px) * ix
            else:
                ux, x_stop, sx, mx = -1, -1, -ny * nz, ((cx - px) * ix if dx < 0.0 else np.inf)
            if dy > 0.0:
                uy, y_stop, sy, my = 1, y_end, nz, (cy + 1 - py) * iy
            else:
                uy, y_stop, sy, my = -1, -1, -nz, ((cy - py) * iy if dy < 0.0 else np.inf)
                if dy == 0.0:
                    y_stop = y_end
            if dz > 0.0:
                uz, z_stop, sz, mz = 1, nz, 1, (cz + 1 - pz) * iz
            else:
                uz, z_stop, sz, mz = -1, -1, -1, ((cz - pz) * iz if dz < 0.0 else np.inf)
            if dy >= 0.0 and cy >= y_stop:
                walk = False
            ex, ey, ez = abs(ix), abs(iy), abs(iz)
            index = (cx * ny + cy) * nz + cz
            # The node holding the eye is never drawn: the walk starts there when it is inside.
            if walk and axis >= 0 and visible[cells[index]]:
                content = np.int64(cells[index])
                walk = False
            while walk:
                # The grid is left when the stepped cell leaves it (t carries rounding).
                if mx <= my and mx <= mz:
                    axis, t = 0, mx
                    cx += ux
                    if cx == x_stop:
                        break
                    index += sx
                    mx += ex
                elif my <= mz:
                    axis, t = 1, my
                    cy += uy
                    if cy == y_stop:
                        break
                    index += sy
                    my += ey
                else:
                    axis, t = 2, mz
                    cz += uz
                    if cz == z_stop:
                        break
                    index += sz
                    mz += ez
                if t >= walk_t:
                    break
                if visible[cells[index]]:
                    content = np.int64(cells[index])
                    break
            hits[i, 0] = content
            hits[i, 1] = hit_k
            hits[i, 2] = axis if content >= 0 else hit_axis
            hits[i, 3] = cx if axis == 0 else (cy if axis == 1 else cz)
            boxes[i, 0] = hit_t
            boxes[i, 1] = hit_sign

    # Pass 2, per pixel: shade what was hit; a ray that hits nothing gets the sky (clarity 0).
    p = np.array((px, py, pz))
    nlx, nly, nlz = light.shape
    pixels = out.reshape(n, 3)
    fog_scale = 1.0 / (1.0 - fog_start)
    fog_slope = -fog_scale / view_distance
    for i in range(n):
        content = hits[i, 0]
        k = hits[i, 1]
        axis = hits[i, 2]
        voxel = content >= 0
        seen = voxel or k >= 0
        da = dirs[i, axis]
        forward = da > 0.0
        # A voxel's distance is recomputed from its face, so it does not depend on the walk.
        voxel_t = (hits[i, 3] + (0 if forward else 1) - p[axis]) * dirs[i, 3 + axis]
        t = voxel_t if voxel else boxes[i, 0]
        sign = (-1.0 if forward else 1.0) if voxel else boxes[i, 1]
        t = t if seen else 0.0
        face = 2 * axis + (1 if sign > 0.0 else 0)
        hx = px + dirs[i, 0] * t
        hy = py + dirs[i, 1] * t
        hz = pz + dirs[i, 2] * t
        level = LIGHT_MAX
        if use_light:
            # The node in front of the face (cell space) gives the face its light.
            half = 0.5 * sign
            lx = np.int64(np.floor(hx + half * (axis == 0)))
            ly = np.int64(np.floor(hy + half * (axis == 1)))
            lz = np.int64(np.floor(hz + half * (axis == 2)))
            if (0 <= lx < nlx) & (0 <= ly < nly) & (0 <= lz < nlz):
                level = min(light[lx, ly, lz], LIGHT_MAX)
        factor = factors[face, level]
        if texture_strength > 0.0 and voxel:
            u = hz if axis == 0 else hx
            v = hz if axis == 1 else hy
            tu = min(max(np.int64((u - np.floor(u)) * 8.0), 0), 7)
            tv = min(max(np.int64((v - np.floor(v)) * 8.0), 0), 7)
            factor *= _texel_factor(content, tu, tv, texture_strength)
        if voxel:
            r, g, b = colors[content, 0], colors[content, 1], colors[content, 2]
        elif seen:
            r, g, b = entities[k, 6], entities[k, 7], entities[k, 8]
        else:
            r, g, b = 0.0, 0.0, 0.0
        clarity = 1.0
        if use_fog:
            clarity = min(max(t * fog_slope + fog_scale, 0.0), 1.0)
        clarity = clarity if seen else 0.0
        pixels[i, 0] = _fogged(r * factor, sky[0], clarity)
        pixels[i, 1] = _fogged(g * factor, sky[1], clarity)
        pixels[i, 2] = _fogged(b * factor, sky[2], clarity)


@njit(cache=True, inline="always")
def _fogged(color, sky, clarity):
    """A colour channel blended into the sky by the fog, rounded to uint8."""
    return np.uint8(min(max(np.floor(sky + (color - sky) * clarity + 0.5), 0.0), 255.0))
