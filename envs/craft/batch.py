"""The frames of many worlds drawn by compiled code, on several cores.

``CraftVectorEnv`` steps its worlds one after another in Python and hands each world's view here
as soon as the world has stepped. Every ``chunk`` worlds go to worker threads, which draw them
with one call of a compiled loop (``_render_worlds``: the render kernel,
``raycast._render_kernel``, once per world) that does not hold the GIL, while the calling thread
steps the next worlds; what is left when the last world has stepped is drawn by the calling
thread and the workers together. A frame is the one ``Renderer.render`` draws from the same
view, bit for bit: the threads share only read-only tables and each writes its own frames.

Each world's horizon and column tops (what ``Renderer`` keeps to stop and skip rays) are built
inside the compiled loop, from its heights, rather than in Python. The grid, light, heights and
entity boxes of each world reach it in Numba typed lists kept from step to step, where an entry
is replaced only when its world hands over another array object (new entity boxes, the heights
of a new episode), since building a typed list costs more than the drawing it feeds. Worker
threads rather than a ``prange`` loop: the workers overlap the drawing with the stepping, which
holds the GIL, and plain threads need no Numba threading layer.
"""

from __future__ import annotations

import queue
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit
from numba.typed import List

from omnigym.envs.craft.raycast import _horizon, _render_kernel, _skip_tops
from omnigym.envs.craft.render import Renderer, camera_basis

NO_HEIGHTS = np.zeros((1, 1), dtype=np.int32)
SWITCH_INTERVAL = 1e-4
"""Seconds between GIL hand-overs while a batch with workers is drawn (Python's default: 5 ms)."""


@njit(cache=True, nogil=True)
def _render_worlds(
    worlds,
    grids,
    lights,
    use_light,
    y_tops,
    heights,
    use_horizon,
    origins,
    eyes,
    bases,
    entities,
    colors,
    visible,
    pixel_rays,
    unit_rays,
    look,
    frames,
):
    """For every ``w`` in ``worlds``: world ``w``'s horizon and column tops from its heights (as
    ``Renderer`` builds them), then its frame into ``frames[w]``. ``look`` holds the render
    kernel's last arguments but the frame (sky, view distance, fog, fog start, brightness
    factors, texture strength)."""
    for j in range(worlds.shape[0]):
        w = worlds[j]
        grid = grids[w]
        eye, origin = eyes[w], origins[w]
        if use_horizon[w]:
            horizon = _horizon(
                heights[w],
                eye[0] - origin[0] + 0.5,
                eye[1] - origin[1] + 0.5,
                eye[2] - origin[2] + 0.5,
                look[1],
            )
            tops = _skip_tops(heights[w])
        else:
            horizon = np.zeros((1, 1))
            tops = np.full(
                ((grid.shape[0] + 3) >> 2, (grid.shape[2] + 3) >> 2), grid.shape[1], np.int64
            )
        _render_kernel(
            grid,
            lights[w],
            use_light[w],
            colors,
            visible,
            y_tops[w],
            horizon,
            use_horizon[w],
            tops,
            origin,
            eye,
            bases[w],
            pixel_rays,
            unit_rays,
            entities[w],
            *look,
            frames[w],
        )


class FrameBatch:
    """Draws the frames of ``count`` worlds drawn by renderers of one ``RenderOptions`` (and one
    material table).

    ``begin()``, then ``add(i, view)`` for each world to draw as soon as its view is final (the
    world has stepped), then ``finish()``. With ``threads > 1``, every ``chunk`` worlds added go
    to ``threads − 1`` worker threads at once, which draw them while the caller goes on stepping
    and adding; ``finish`` draws what is left on the calling thread too, and waits.

    Args:
        count: number of worlds.
        renderer: any of the worlds' renderers (they share their tables).
        threads: threads drawing, the caller's included.
        chunk: worlds handed to a worker at once.
    """

    def __init__(self, count: int, renderer: Renderer, threads: int = 1, chunk: int = 8):
        options = renderer.options
        self.renderer = renderer
        self.frames = np.zeros((count, options.height, options.width, 3), dtype=np.uint8)
        self.threads = max(1, int(threads))
        self.chunk = max(1, int(chunk))
        self._lists: list[List] | None = None
        self._held: list[list[np.ndarray]] = []
        self._use_light = np.zeros(count, dtype=np.bool_)
        self._use_horizon = np.zeros(count, dtype=np.bool_)
        self._y_tops = np.zeros(count, dtype=np.int64)
        self._origins = np.zeros((count, 3))
        self._eyes = np.zeros((count, 3))
        self._bases = np.zeros((count, 3, 3))
        self._pool = ThreadPoolExecutor(self.threads - 1) if self.threads > 1 else None
        self._chunks: queue.SimpleQueue = queue.SimpleQueue()
        self._pending: list[int] = []
        self._workers: list = []
        self._switch_interval = sys.getswitchinterval()
        options = renderer.options
        self._look = (
            renderer._sky,
            float(options.view_distance),
            options.fog,
            float(options.fog_start),
            renderer._factors,
            float(options.texture_strength),
        )

    def draw(self, worlds: Sequence[int], views: Sequence[tuple]) -> np.ndarray:
        """Draws world ``worlds[j]``'s frame of ``views[j]`` into ``self.frames[worlds[j]]``;
        returns ``self.frames``."""
        self.begin()
        for i, view in zip(worlds, views, strict=True):
            self.add(i, view)
        return self.finish()

    def begin(self) -> None:
        """Starts a batch: the workers wait for chunks. While it lasts, Python switches threads
        every ``SWITCH_INTERVAL`` s, so that a worker handed a chunk gets the GIL it needs to
        start drawing without waiting out the caller's Python (5 ms by default)."""
        self._pending = []
        if self._pool is None:
            return
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        self._workers = [self._pool.submit(self._work) for _ in range(self.threads - 1)]

    def add(self, i: int, view: tuple) -> None:
        """Queues world ``i``'s frame of ``view`` (``Renderer.render``'s arguments: grid, eye,
        yaw, pitch, entities, light, origin, top row, heights; ``CraftSim.view``)."""
        r = self.renderer
        grid, eye, yaw, pitch, entities, light, origin, top_row, heights = view
        if grid.dtype != np.uint16 or grid.ndim != 3 or not grid.flags.c_contiguous:
            raise ValueError("grids must be C-contiguous 3-D uint16 arrays")
        row = (
            grid,
            r._no_light if light is None else light,
            NO_HEIGHTS if heights is None else heights,
            r._no_entities if entities is None else np.ascontiguousarray(entities, np.float64),
        )
        if self._lists is None:
            self._held = [[part] * len(self.frames) for part in row]
            self._lists = [List(held) for held in self._held]
        for typed, held, part in zip(self._lists, self._held, row, strict=True):
            if held[i] is not part:
                typed[i] = held[i] = part
        self._use_light[i] = light is not None
        self._use_horizon[i] = heights is not None
        self._y_tops[i] = grid.shape[1] - 1 if top_row is None else int(top_row)
        self._origins[i] = origin
        self._eyes[i] = eye
        self._bases[i] = camera_basis(yaw, pitch)
        self._pending.append(i)
        if self._pool is not None and len(self._pending) >= self.chunk:
            self._chunks.put(np.array(self._pending, dtype=np.int64))
            self._pending = []

    def finish(self) -> np.ndarray:
        """Draws every frame queued and not drawn yet, then waits for the workers; returns
        ``self.frames``."""
        if self._pending:
            self._chunks.put(np.array(self._pending, dtype=np.int64))
            self._pending = []
        try:
            while True:
                try:
                    self._render(self._chunks.get_nowait())
                except queue.Empty:
                    break
        finally:
            for _ in self._workers:
                self._chunks.put(None)
            for worker in self._workers:
                worker.result()
            self._workers = []
            if self._pool is not None:
                sys.setswitchinterval(self._switch_interval)
        return self.frames

    def close(self) -> None:
        """Stops the worker threads."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _work(self) -> None:
        while (worlds := self._chunks.get()) is not None:
            self._render(worlds)

    def _render(self, worlds: np.ndarray) -> None:
        grids, lights, heights, entities = self._lists
        r = self.renderer
        _render_worlds(
            worlds,
            grids,
            lights,
            self._use_light,
            self._y_tops,
            heights,
            self._use_horizon,
            self._origins,
            self._eyes,
            self._bases,
            entities,
            r._colors,
            r._visible,
            r._pixel_rays,
            r._unit_rays,
            self._look,
            self.frames,
        )


__all__ = ["FrameBatch"]
