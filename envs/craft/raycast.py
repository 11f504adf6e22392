"""The compiled kernels of the Craft renderer (``render.py``): one ray per pixel through the
voxel grid (Amanatides–Woo DDA), the horizon that stops rising rays, and empty-space skipping.

The walk skips, in one move, the empty box above a group of ``SKIP_GROUP`` × ``SKIP_GROUP``
columns (from one row above the group's highest visible node, given by the ``heights`` hint, up
to the top row). It does so without changing a frame: the walk keeps per axis the distance of
its next boundary, each grown by repeated addition, and what the walk does inside a box that
holds nothing visible cannot change a pixel, only where it leaves the box. That exit is the
first boundary leaving the box in the DDA's own order (nearest first, ties to x, then y, then
z), and every other axis has by then crossed exactly the boundaries that come before it in
that order; the skip grows each axis's distance by the same additions, in the same order, as
the one-cell walk would, so it lands in the same cell with the same distances, bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

LIGHT_MAX = 15
HORIZON_SECTORS = 64
HORIZON_GROUP = 2
# Rising rays stop early by a horizon of 64 sectors of direction over groups of 2×2 columns.
SKIP_SHIFT = 2
SKIP_GROUP = 1 << SKIP_SHIFT
"""Columns per side of the groups whose empty space above them the walk skips."""


def skip_tops(heights: np.ndarray | None, shape: tuple[int, int, int]) -> np.ndarray:
    """``int64 [X / SKIP_GROUP, Z / SKIP_GROUP]`` (rounded up): per group of columns, the highest
    of their ``heights``; with no heights, the grid's height (nothing is skipped)."""
    if heights is None:
        nx, ny, nz = shape
        return np.full((-(-nx // SKIP_GROUP), -(-nz // SKIP_GROUP)), ny, dtype=np.int64)
    return _skip_tops(np.ascontiguousarray(heights, dtype=np.int32))


@njit(cache=True, nogil=True)
def _skip_tops(heights):
    """``skip_tops`` of ``int32`` heights."""
    nx, nz = heights.shape
    tops = np.full(((nx + SKIP_GROUP - 1) >> SKIP_SHIFT, (nz + SKIP_GROUP - 1) >> SKIP_SHIFT), -1)
    for x in range(nx):
        for z in range(nz):
            tops[x >> SKIP_SHIFT, z >> SKIP_SHIFT] = max(
                tops[x >> SKIP_SHIFT, z >> SKIP_SHIFT], heights[x, z]
            )
    return tops


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
    # Pass 1, per pixel of a row: the unit ray and its inverse (dirs), the visible content (−1
    # for none), entity box (−1 for none), axis of the face hit, the voxel's cell along it and
    # the light of the cell in front of that face (hits), the box's distance and face sign
    # (boxes).
    width = out.shape[1]
    dirs = np.empty((width, 6))
    hits = np.empty((width, 5), dtype=np.int64)
    boxes = np.empty((width, 2))
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
    p = np.array((px, py, pz))
    nlx, nly, nlz = light.shape
    pixels = out.reshape(n, 3)
    fog_scale = 1.0 / (1.0 - fog_start)
    fog_slope = -fog_scale / view_distance
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
            col = i - start
            cu, cv, cw = unit_rays[i, 0], unit_rays[i, 1], unit_rays[i, 2]
            dx = cu * b00 + cv * b10 + cw * b20
            dy = cu * b01 + cv * b11 + cw * b21
            dz = cu * b02 + cv * b12 + cw * b22
            ix, iy, iz = _inverse(dx), _inverse(dy), _inverse(dz)
            dirs[col, 0] = dx
            dirs[col, 1] = dy
            dirs[col, 2] = dz
            dirs[col, 3] = ix
            dirs[col, 4] = iy
            dirs[col, 5] = iz
            # Entity boxes: the nearest hit within the view distance; of equally near boxes,
            # the first in ``entities``.
            hit_t, hit_k, hit_axis, hit_sign = view_distance, -1, 0, 0.0
            for j in range(count):
                k = ids[j]
                rx, ry = rays[i, 0], rays[i, 1]  # Read only here: most rows cross no box.
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
                    # The first ring the ray clears; the slopes needed fall with the ring.
                    ring, last = 0, rings
                    while ring < last:
                        middle = (ring + last) >> 1
                        if horizon[sector, middle] >= slope:
                            ring = middle + 1
                        else:
                            last = middle
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
            # A ray that starts above the highest node of its group of columns may cross empty
            # boxes it skips whole; one that starts lower (under a canopy, in a cave) seldom
            # meets one, and walks cell by cell without looking.
            if walk and cy > tops[cx >> SKIP_SHIFT, cz >> SKIP_SHIFT]:
                while True:
                    top = tops[cx >> SKIP_SHIFT, cz >> SKIP_SHIFT]
                    if cy > top:
                        cx, cy, cz, mx, my, mz, axis, t = _box_skip(
                            cx, cy, cz, mx, my, mz, ux, uy, uz, ex, ey, ez, nx, nz, y_end, top
                        )
                        index = (cx * ny + cy) * nz + cz
                    else:
                        cx, cy, cz, mx, my, mz, index, axis, t = _cell_step(
                            cx, cy, cz, mx, my, mz, index, ux, uy, uz, ex, ey, ez, sx, sy, sz
                        )
                    # The grid is left when the stepped cell leaves it (t carries rounding).
                    if (cx == x_stop) | (cy == y_stop) | (cz == z_stop) or t >= walk_t:
                        break
                    if visible[cells[index]]:
                        content = np.int64(cells[index])
                        break
            else:
                while walk:
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
            # A block's face takes the light of the cell the ray crossed it from.
            front = LIGHT_MAX
            if use_light and content >= 0:
                fx = cx - ux if axis == 0 else cx
                fy = cy - uy if axis == 1 else cy
                fz = cz - uz if axis == 2 else cz
                if (0 <= fx < nlx) & (0 <= fy < nly) & (0 <= fz < nlz):
                    front = min(light[fx, fy, fz], LIGHT_MAX)
            hits[col, 4] = front
            hits[col, 0] = content
            hits[col, 1] = hit_k
            hits[col, 2] = axis if content >= 0 else hit_axis
            hits[col, 3] = cx if axis == 0 else (cy if axis == 1 else cz)
            boxes[col, 0] = hit_t
            boxes[col, 1] = hit_sign
        # Pass 2 over the row: shade what was hit; a ray that hits nothing gets the sky
        # (clarity 0).
        for i in range(start, start + width):
            col = i - start
            content = hits[col, 0]
            k = hits[col, 1]
            axis = hits[col, 2]
            voxel = content >= 0
            seen = voxel or k >= 0
            da = dirs[col, axis]
            forward = da > 0.0
            # A voxel's distance is recomputed from its face, so it does not depend on the walk.
            voxel_t = (hits[col, 3] + (0 if forward else 1) - p[axis]) * dirs[col, 3 + axis]
            t = voxel_t if voxel else boxes[col, 0]
            sign = (-1.0 if forward else 1.0) if voxel else boxes[col, 1]
            t = t if seen else 0.0
            face = 2 * axis + (1 if sign > 0.0 else 0)
            hx = px + dirs[col, 0] * t
            hy = py + dirs[col, 1] * t
            hz = pz + dirs[col, 2] * t
            level = LIGHT_MAX
            if voxel:
                level = hits[col, 4]
            elif use_light:
                # An entity box's face takes the light of the node half a node out of it.
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
def _cell_step(cx, cy, cz, mx, my, mz, index, ux, uy, uz, ex, ey, ez, sx, sy, sz):
    """One step of the walk into the next cell: the nearest boundary, ties to x, then y."""
    if mx <= my and mx <= mz:
        return cx + ux, cy, cz, mx + ex, my, mz, index + sx, 0, mx
    if my <= mz:
        return cx, cy + uy, cz, mx, my + ey, mz, index + sy, 1, my
    return cx, cy, cz + uz, mx, my, mz + ez, index + sz, 2, mz


@njit(cache=True, inline="always")
def _box_skip(cx, cy, cz, mx, my, mz, ux, uy, uz, ex, ey, ez, nx, nz, y_end, top):
    """The walk out of the empty box above cell ``(cx, cy, cz)``'s group of columns (rows
    ``top + 1`` to ``y_end − 1``): the first cell past it, the next boundaries, and the axis and
    distance of the boundary crossed into it."""
    gx, gz = cx & -SKIP_GROUP, cz & -SKIP_GROUP
    lx = min(gx + SKIP_GROUP, nx) - 1 - cx if ux > 0 else cx - gx
    lz = min(gz + SKIP_GROUP, nz) - 1 - cz if uz > 0 else cz - gz
    ly = y_end - 1 - cy if uy > 0 else cy - top - 1
    t_x = _grown(mx, ex, lx)
    t_z = _grown(mz, ez, lz)
    t = t_x if t_x <= t_z else t_z
    axis = 0 if t_x <= t_z else 2
    # The boundaries of y crossed before the exit, and whether y's last one is the exit.
    my, steps = _crossed(my, ey, ly, t, axis, 1)
    cy += uy * steps
    if steps == ly and _before(my, 1, t, axis):
        t, axis = my, 1
        my += ey
        cy += uy
    if axis != 0:
        mx, steps = _crossed(mx, ex, lx, t, axis, 0)
        cx += ux * steps
    else:
        mx = t_x + ex
        cx += ux * (lx + 1)
    if axis != 2:
        mz, steps = _crossed(mz, ez, lz, t, axis, 2)
        cz += uz * steps
    else:
        mz = t_z + ez
        cz += uz * (lz + 1)
    return cx, cy, cz, mx, my, mz, axis, t


@njit(cache=True, inline="always")
def _grown(m, e, steps):
    """``m`` after ``steps`` additions of ``e``, one at a time as the walk adds them."""
    for _ in range(steps):
        m += e
    return m


@njit(cache=True, inline="always")
def _before(m, a, t, axis):
    """Whether the walk crosses the boundary at ``m`` on axis ``a`` before the one at ``t`` on
    ``axis``: nearest first, ties to the lower axis."""
    return m < t or (m == t and a < axis)


@njit(cache=True, inline="always")
def _crossed(m, e, limit, t, axis, a):
    """How many of the boundaries ``m, m + e, …`` on axis ``a`` (at most ``limit``) the walk
    crosses before the one at ``t`` on ``axis``, and the next boundary after them."""
    steps = 0
    while steps < limit and _before(m, a, t, axis):
        m += e
        steps += 1
    return m, steps


@njit(cache=True, inline="always")
def _fogged(color, sky, clarity):
    """A colour channel blended into the sky by the fog, rounded to uint8."""
    return np.uint8(min(max(np.floor(sky + (color - sky) * clarity + 0.5), 0.0), 255.0))
