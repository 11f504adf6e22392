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

Frames are drawn by one Numba kernel (``raycast.py``; on-disk cache, no fastmath, sequential, so
frames are bit-exact on a given machine). The tests check it against a vectorised NumPy reference
of the same arithmetic in the same order (``tests/craft/render_reference.py``), an order of
magnitude slower. The kernel skips work that cannot change a pixel: entity boxes outside a
conservative on-screen rectangle (tested per row of pixels, then per pixel), the walk of a ray
that is not going down once it is above the highest visible row (``Renderer.top_row``), and,
given the height of every column (``Renderer.column_heights``), the walk of a rising ray once it
has passed above every column it can still cross (a horizon of 64 sectors of direction around
the eye, kept until the eye or a height changes) and the empty box above each group of 4 × 4
columns, crossed in one move. It walks a row's rays before it shades them, so that shading
pipelines across pixels. A block's face takes the light of the cell the ray crossed it from.
``batch.FrameBatch`` draws the frames of many worlds with the same kernel on several threads;
``RenderOptions.threads`` draws one frame's bands of rows on several.

Everything here works on plain arrays (a ``uint16`` content grid indexed ``[x, y, z]``, y up, a
colour and a visibility table per content id), so the renderer does not depend on the engine.
Positions are in nodes: node ``(x, y, z)`` occupies ``[x − 0.5, x + 0.5]`` on each axis, and grid
index ``i`` holds node ``origin + i``.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from omnigym.envs.craft.raycast import LIGHT_MAX, _horizon, _render_kernel, skip_tops

AIR_ID = 126
"""Content id of Luanti's ``air`` node (reserved, as in Luanti)."""

N_CONTENT_IDS = 65536
# Luanti's face shading of cube faces by normal: sqrt(1.0), sqrt(0.2), sqrt(0.45), sqrt(0.7).
FACE_SHADE_TOP = 1.0
FACE_SHADE_BOTTOM = 0.447213
FACE_SHADE_X = 0.670820
FACE_SHADE_Z = 0.836660
LIGHT_CURVE = 0.8 ** (LIGHT_MAX - np.arange(LIGHT_MAX + 1, dtype=np.float64))
"""Brightness factor per node light level 0–15 (level 15 is full brightness)."""

BANDS_PER_THREAD = 4
"""Bands of rows per drawing thread: the sky and the ground cost differently, so each thread
takes several bands spread over the frame (8 bands on 2 threads drew OpenWorld's 320 × 180
frames ~15 % faster than 2 bands)."""

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
        threads: threads drawing one frame, the caller's included: the rows are cut into
            ``BANDS_PER_THREAD`` bands per thread, dealt out in turn, each drawn by the kernel
            without the GIL. Frames are the same for any number (each pixel is computed alone).
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
    threads: int = 1

    def __post_init__(self):
        for name in ("width", "height", "threads"):
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
        self._tops = self._no_horizon
        # The last camera basis and no-skip column tops, reused while yaw and pitch or the grid
        # shape stay the same (an agent turns on few steps).
        self._view_key: tuple[float, float] | None = None
        self._basis = np.eye(3)
        self._no_tops: dict[tuple[int, ...], np.ndarray] = {}
        self._pool: ThreadPoolExecutor | None = None

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
                takes the light of the node in front of it: for a block, the cell the ray
                crossed the face from; for an entity box, the node half a node out of the face.
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
        if use_horizon:
            tops = self._tops
        else:
            tops = self._no_tops.get(grid.shape)
            if tops is None:
                tops = self._no_tops[grid.shape] = skip_tops(None, grid.shape)
        if (yaw, pitch) != self._view_key:
            self._view_key, self._basis = (yaw, pitch), camera_basis(yaw, pitch)
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
            tops,
            np.asarray(origin, dtype=np.float64),
            np.asarray(eye, dtype=np.float64),
            self._basis,
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
        return self.finish(frame)

    def finish(self, frame: np.ndarray) -> np.ndarray:
        """The frame ``render`` returns for one the kernel filled: grey when the options say so."""
        if self.options.rgb:
            return frame
        return to_grayscale(frame, self.options.gray_scale_keepdim)

    def _draw(self, *kernel_args) -> None:
        """Fills the frame, ``kernel_args``' last, with ``_render_kernel``: at once, or band by
        band on ``options.threads`` threads."""
        threads = self.options.threads
        if threads == 1:
            _render_kernel(*kernel_args)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="craft-render")
        *head, pixel_rays, unit_rays, entities, sky, distance, fog, start, factors, texture, out = (
            kernel_args
        )
        height, width = out.shape[0], out.shape[1]
        edges = np.linspace(0, height, threads * BANDS_PER_THREAD + 1).astype(np.int64)

        def draw_bands(first: int) -> None:
            for band in range(first, len(edges) - 1, threads):
                top, bottom = edges[band], edges[band + 1]
                _render_kernel(
                    *head,
                    pixel_rays[top:bottom],
                    unit_rays[top * width : bottom * width],
                    entities,
                    sky,
                    distance,
                    fog,
                    start,
                    factors,
                    texture,
                    out[top:bottom],
                )

        helpers = [self._pool.submit(draw_bands, first) for first in range(1, threads)]
        draw_bands(0)
        for helper in helpers:
            helper.result()

    def close(self) -> None:
        """Ends the drawing threads, if any (a later frame starts them again)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _horizon_of(self, heights, eye, origin) -> np.ndarray:
        """The horizon (``_horizon``) of ``heights`` around ``eye``, rebuilt only when the eye,
        the origin or a height differs from the last call's; the groups' tops for empty-space
        skipping (``skip_tops``, in ``self._tops``) rebuilt when a height differs."""
        cell = tuple(float(e) - float(o) + 0.5 for e, o in zip(eye, origin, strict=True))
        changed = not np.array_equal(heights, self._horizon_heights)
        if changed:
            self._tops = skip_tops(heights, (heights.shape[0], 0, heights.shape[1]))
        if changed or cell != self._horizon_eye:
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
