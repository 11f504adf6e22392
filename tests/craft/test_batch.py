"""Frames of several worlds drawn in one call are the single renderer's, bit for bit."""

import numpy as np
import pytest

from omnigym.envs.craft.batch import FrameBatch

from .test_render import renderer, terrain_scene


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_draws_each_worlds_frame_of_renderer_render(threads):
    r = renderer(width=40, height=24, texture_strength=0.2)
    rng = np.random.default_rng(9)
    views = []
    for w in range(5):
        grid, light, entities = terrain_scene(w)
        heights = r.column_heights(grid) if w != 3 else None
        eye = np.array([15.2, 11.7, 15.9]) + rng.uniform(-3.0, 3.0, 3)
        views.append(
            (
                grid,
                eye,
                float(rng.uniform(0.0, 360.0)),
                float(rng.uniform(-60.0, 60.0)),
                entities if w % 2 else None,
                light if w != 2 else None,
                (w, 0, -w),
                r.top_row(grid) if w != 4 else None,
                heights,
            )
        )
    batch = FrameBatch(6, r, threads, chunk=2)  # With two threads, a worker draws chunks.
    frames = batch.draw([0, 2, 3, 4, 5], views)
    for w, view in zip([0, 2, 3, 4, 5], views, strict=True):
        np.testing.assert_array_equal(frames[w], r.render(*view))
    assert (frames[1] == 0).all()  # Not asked for: left alone.
    # A second step reuses the lists: one world changes its grid in place and its entity boxes.
    grid = views[1][0]
    grid[:, 13:, :] = grid[:, 2:5, :]
    changed = (grid, *views[1][1:4], np.array([[16.0, 14.0, 16.0, 0.5, 0.5, 0.5, 9, 9, 9]]))
    changed += (views[1][5], views[1][6], grid.shape[1] - 1, r.column_heights(grid))
    frames = batch.draw([2], [changed])
    np.testing.assert_array_equal(frames[2], r.render(*changed))
    batch.close()
