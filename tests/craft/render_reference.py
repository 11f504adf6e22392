"""The NumPy reference the Craft renderer's frames are checked against.

``render_reference`` computes what ``render._render_kernel`` (the Numba kernel) computes, with the
same arithmetic in the same order but vectorised over all rays at once and without the kernel's
shortcuts (entity screen bounds, the ``top_row`` and ``heights`` stops), so the two must draw
bit-identical frames. ``ReferenceRenderer`` is a ``Renderer`` that draws with it. It is an order
of magnitude slower than the kernel, which is why only the tests use it.
"""

import numpy as np

from omnigym.envs.craft.raycast import LIGHT_MAX, _texel_factor
from omnigym.envs.craft.render import Renderer


class ReferenceRenderer(Renderer):
    """A ``Renderer`` drawing its frames with ``render_reference`` instead of the Numba kernel."""

    def _draw(self, *kernel_args) -> None:
        render_reference(*kernel_args)


def render_reference(
    grid,
    light,
    use_light,
    colors,
    visible,
    y_top,
    horizon,
    use_horizon,
    tops,
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
    """The NumPy reference of ``render._render_kernel``: the same arithmetic in the same order,
    vectorised over rays, with the kernel's arguments.

    ``y_top``, ``horizon`` and ``tops`` are unused: the reference walks every ray to its end,
    with or without the hints.
    """
    dims = np.array(grid.shape)
    p = eye - origin + 0.5
    d = unit_rays[:, 0:1] * basis[0] + unit_rays[:, 1:2] * basis[1] + unit_rays[:, 2:3] * basis[2]
    n_rays = len(d)
    rays = np.arange(n_rays)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(d != 0.0, 1.0 / d, np.inf)

        # Entity boxes.
        hit_t = np.full(n_rays, float(view_distance))
        hit_k = np.full(n_rays, -1)
        hit_axis = np.zeros(n_rays, dtype=np.int64)
        hit_sign = np.zeros(n_rays)
        for k in range(len(entities)):
            t_near = np.full(n_rays, -np.inf)
            t_far = np.full(n_rays, np.inf)
            axis = np.zeros(n_rays, dtype=np.int64)
            sign = np.zeros(n_rays)
            for a in range(3):
                lo = entities[k, a] - entities[k, 3 + a]
                hi = entities[k, a] + entities[k, 3 + a]
                parallel = d[:, a] == 0.0
                t0 = (lo - eye[a]) * inv[:, a]
                t1 = (hi - eye[a]) * inv[:, a]
                s = np.where(t0 > t1, 1.0, -1.0)
                t0, t1 = np.minimum(t0, t1), np.maximum(t0, t1)
                better = ~parallel & (t0 > t_near)
                t_near = np.where(better, t0, t_near)
                axis = np.where(better, a, axis)
                sign = np.where(better, s, sign)
                t_far = np.where(parallel, t_far, np.minimum(t_far, t1))
                t_near = np.where(parallel & ((eye[a] < lo) | (eye[a] > hi)), np.inf, t_near)
            seen = (t_near >= 0.0) & (t_near <= t_far) & (t_near < hit_t)
            hit_t = np.where(seen, t_near, hit_t)
            hit_k = np.where(seen, k, hit_k)
            hit_axis = np.where(seen, axis, hit_axis)
            hit_sign = np.where(seen, sign, hit_sign)

        # Where each ray starts its walk through the grid.
        cell = np.empty((n_rays, 3), dtype=np.int64)
        enter_axis = np.full(n_rays, -1)
        walking = np.ones(n_rays, dtype=bool)
        if ((p >= 0.0) & (p < dims)).all():
            cell[:] = np.floor(p).astype(np.int64)
        else:
            t_enter = np.zeros(n_rays)
            t_leave = hit_t.copy()
            for a in range(3):
                parallel = d[:, a] == 0.0
                t0 = (0.0 - p[a]) * inv[:, a]
                t1 = (dims[a] - p[a]) * inv[:, a]
                t0, t1 = np.minimum(t0, t1), np.maximum(t0, t1)
                later = ~parallel & (t0 > t_enter)
                t_enter = np.where(later, t0, t_enter)
                enter_axis = np.where(later, a, enter_axis)
                t_leave = np.where(parallel, t_leave, np.minimum(t_leave, t1))
                if not 0.0 <= p[a] < dims[a]:
                    t_enter = np.where(parallel, np.inf, t_enter)
            walking = (enter_axis >= 0) & (t_enter < t_leave)
            t_enter = np.where(walking, t_enter, 0.0)
            for a in range(3):
                start = np.floor(p[a] + d[:, a] * t_enter)
                start = np.clip(start, 0, dims[a] - 1).astype(np.int64)
                face = np.where(d[:, a] > 0.0, 0, dims[a] - 1)
                cell[:, a] = np.where(enter_axis == a, face, start)
        step = np.where(d > 0.0, 1, -1)
        delta = np.abs(inv)
        t_next = np.where(
            d > 0.0, (cell + 1 - p) * inv, np.where(d < 0.0, (cell - p) * inv, np.inf)
        )

    # Walk the rays still looking, all together.
    content = np.full(n_rays, -1)
    axis = enter_axis.copy()
    skip = enter_axis < 0
    live = rays[walking]
    while len(live):
        c = cell[live]
        here = grid[c[:, 0], c[:, 1], c[:, 2]]
        found = visible[here] & ~skip[live]
        content[live[found]] = here[found]
        skip[live] = False
        live = live[~found]
        m = t_next[live]
        step_axis = np.where(
            (m[:, 0] <= m[:, 1]) & (m[:, 0] <= m[:, 2]), 0, np.where(m[:, 1] <= m[:, 2], 1, 2)
        )
        t = m[np.arange(len(live)), step_axis]
        cell[live, step_axis] += step[live, step_axis]
        t_next[live, step_axis] += delta[live, step_axis]
        axis[live] = step_axis
        moved = cell[live, step_axis]
        inside = (moved >= 0) & (moved < dims[step_axis]) & (t < hit_t[live])
        live = live[inside]

    # Shade what was hit.
    voxel = content >= 0
    sky_ray = ~voxel & (hit_k < 0)
    face = cell[rays, np.maximum(axis, 0)]
    along = d[rays, np.maximum(axis, 0)]
    p_axis = p[np.maximum(axis, 0)]
    inv_axis = inv[rays, np.maximum(axis, 0)]
    with np.errstate(invalid="ignore"):
        voxel_t = np.where(along > 0.0, (face - p_axis) * inv_axis, (face + 1 - p_axis) * inv_axis)
    hit_t = np.where(voxel, voxel_t, hit_t)
    hit_axis = np.where(voxel, axis, hit_axis)
    hit_sign = np.where(voxel, np.where(along > 0.0, -1.0, 1.0), hit_sign)
    face = 2 * hit_axis + (hit_sign > 0.0)
    level = np.full(n_rays, LIGHT_MAX)
    hit_point = p + d * np.where(sky_ray, 0.0, hit_t)[:, None]
    if use_light:
        # A block's face: the cell the ray crossed it from; an entity's: the node half a node
        # out of the face it hit.
        front = hit_point.copy()
        front[rays, hit_axis] = front[rays, hit_axis] + 0.5 * hit_sign
        front = np.floor(front).astype(np.int64)
        came_from = cell.copy()
        came_from[rays, np.maximum(axis, 0)] -= step[rays, np.maximum(axis, 0)]
        front = np.where(voxel[:, None], came_from, front)
        within = ((front >= 0) & (front < np.array(light.shape))).all(axis=1)
        safe = np.where(within[:, None], front, 0)
        level = np.where(
            within, np.minimum(light[safe[:, 0], safe[:, 1], safe[:, 2]], LIGHT_MAX), level
        )
    factor = factors[face, level]
    if texture_strength > 0.0:
        ua = np.where(hit_axis == 0, 2, 0)
        va = np.where(hit_axis == 1, 2, 1)
        u = hit_point[rays, ua]
        v = hit_point[rays, va]
        tu = np.clip(((u - np.floor(u)) * 8.0).astype(np.int64), 0, 7)
        tv = np.clip(((v - np.floor(v)) * 8.0).astype(np.int64), 0, 7)
        texel = _texel_factor.py_func(np.maximum(content, 0), tu, tv, texture_strength)
        factor = np.where(voxel, factor * texel, factor)
    base = np.where(
        voxel[:, None],
        colors[np.maximum(content, 0)],
        entities[hit_k, 6:9] if len(entities) else 0.0,
    )
    color = base * factor[:, None]
    clarity = np.ones(n_rays)
    if use_fog:
        fog_scale = 1.0 / (1.0 - fog_start)
        clarity = np.clip(hit_t * (-fog_scale / view_distance) + fog_scale, 0.0, 1.0)
    value = sky + (color - sky) * clarity[:, None]
    pixels = np.clip(np.floor(value + 0.5), 0.0, 255.0)
    pixels[sky_ray] = sky
    out[:] = pixels.astype(np.uint8).reshape(out.shape)
