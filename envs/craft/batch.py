"""The frames of many worlds drawn in one compiled call, on several cores.

``CraftVectorEnv`` steps its worlds one after another in Python, then draws every frame of the
step here: one Numba call whose ``prange`` loop hands the worlds to ``threads`` threads, each
drawing whole frames with the render kernel (``raycast._render_kernel``) and none holding the
GIL. A frame is the one ``Renderer.render`` draws from the same arguments, bit for bit: the
threads share only read-only tables and each writes its own frame.

Each world's horizon and column tops (what ``Renderer`` keeps to stop and skip rays) are built
inside the parallel loop, from its heights, rather than in Python before the call. The grid,
light, heights and entity boxes of each world reach the call in Numba typed lists kept from step
to step, where an entry is replaced only when its world hands over another array object (new
entity boxes, the heights of a new episode), since building a typed list costs more than the
drawing it feeds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
from numba import njit, prange
from numba.typed import List

from omnigym.envs.craft.raycast import _horizon, _render_kernel, _skip_tops
from omnigym.envs.craft.render import Renderer, camera_basis

NO_HEIGHTS = np.zeros((1, 1), dtype=np.int32)


@njit(cache=True, nogil=True, parallel=True)
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
    sky,
    view_distance,
    use_fog,
    fog_start,
    factors,
    texture_strength,
    frames,
):
    """For every ``w`` in ``worlds``, in parallel: world ``w``'s horizon and column tops from its
    heights (as ``Renderer`` builds them), then its frame into ``frames[w]``."""
    for j in prange(worlds.shape[0]):
        w = worlds[j]
        grid = grids[w]
        eye, origin = eyes[w], origins[w]
        if use_horizon[w]:
            horizon = _horizon(
                heights[w],
                eye[0] - origin[0] + 0.5,
                eye[1] - origin[1] + 0.5,
                eye[2] - origin[2] + 0.5,
                view_distance,
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
            sky,
            view_distance,
            use_fog,
            fog_start,
            factors,
            texture_strength,
            frames[w],
        )


class FrameBatch:
    """Draws the frames of ``count`` worlds drawn by renderers of one ``RenderOptions`` (and one
    material table) in one call.

    Args:
        count: number of worlds.
        renderer: any of the worlds' renderers (they share their tables).
        threads: threads drawing (at most Numba's thread count).
    """

    def __init__(self, count: int, renderer: Renderer, threads: int = 1):
        options = renderer.options
        self.renderer = renderer
        self.frames = np.zeros((count, options.height, options.width, 3), dtype=np.uint8)
        self.threads = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
        self._lists: list[List] | None = None
        self._held: list[list[np.ndarray]] = []
        self._use_light = np.zeros(count, dtype=np.bool_)
        self._use_horizon = np.zeros(count, dtype=np.bool_)
        self._y_tops = np.zeros(count, dtype=np.int64)
        self._origins = np.zeros((count, 3))
        self._eyes = np.zeros((count, 3))
        self._bases = np.zeros((count, 3, 3))

    def draw(self, worlds: Sequence[int], views: Sequence[tuple]) -> np.ndarray:
        """Draws world ``worlds[j]``'s frame of ``views[j]`` (``Renderer.render``'s arguments:
        grid, eye, yaw, pitch, entities, light, origin, top row, heights; ``CraftSim.view``) into
        ``self.frames[worlds[j]]``; returns ``self.frames``."""
        r = self.renderer
        for i, view in zip(worlds, views, strict=True):
            grid, eye, yaw, pitch, entities, light, origin, top_row, heights = view
            if grid.dtype != np.uint16 or grid.ndim != 3 or not grid.flags.c_contiguous:
                raise ValueError("grids must be C-contiguous 3-D uint16 arrays")
            row = (
                grid,
                r._no_light if light is None else light,
                NO_HEIGHTS if heights is None else heights,
                r._no_entities
                if entities is None
                else np.ascontiguousarray(entities, dtype=np.float64),
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
        grids, lights, heights, entities = self._lists
        options = r.options
        previous = numba.get_num_threads()
        numba.set_num_threads(self.threads)
        try:
            _render_worlds(
                np.asarray(worlds, dtype=np.int64),
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
                r._sky,
                float(options.view_distance),
                options.fog,
                float(options.fog_start),
                r._factors,
                float(options.texture_strength),
                self.frames,
            )
        finally:
            numba.set_num_threads(previous)
        return self.frames


__all__ = ["FrameBatch"]
