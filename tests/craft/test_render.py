"""The voxel renderer: camera conventions, shading, fog, grey scale, entities, hints."""

import math

import numpy as np
import pytest

from omnigym.envs.craft.render import (
    AIR_ID,
    ENTITY_BOX_FIELDS,
    FACE_SHADE_BOTTOM,
    FACE_SHADE_TOP,
    FACE_SHADE_X,
    FACE_SHADE_Z,
    LIGHT_CURVE,
    Renderer,
    RenderOptions,
    camera_basis,
    to_grayscale,
    vertical_fov,
)

from .render_reference import ReferenceRenderer

STONE = 1
DIRT = 2
SKY = (97, 181, 245)
STONE_RGB = np.array([200, 120, 40])
DIRT_RGB = np.array([20, 20, 20])
EYE = np.array([8.0, 8.0, 8.0])


def tables():
    colors = np.zeros((256, 3), dtype=np.uint8)
    colors[STONE] = STONE_RGB
    colors[DIRT] = DIRT_RGB
    visible = np.zeros(256, dtype=bool)
    visible[[STONE, DIRT]] = True
    return colors, visible


def renderer(reference=False, **options):
    """A 9×9 renderer over the test tables, drawing with the Numba kernel or, with
    ``reference``, the NumPy reference; options override ``RenderOptions``."""
    colors, visible = tables()
    kind = ReferenceRenderer if reference else Renderer
    return kind(colors, visible, RenderOptions(**{"width": 9, "height": 9, **options}))


def empty_grid(size=17):
    return np.full((size, size, size), AIR_ID, dtype=np.uint16)


def centre(frame):
    return frame[frame.shape[0] // 2, frame.shape[1] // 2]


def shaded(rgb, factor):
    return np.floor(np.asarray(rgb) * factor + 0.5).astype(np.uint8)


@pytest.mark.parametrize("reference", [False, True], ids=["kernel", "reference"])
def test_block_ahead_lands_in_image_centre_with_z_face_shading(reference):
    grid = empty_grid()
    grid[8, 8, 12] = STONE
    frame = renderer(reference, fog=False).render(grid, EYE, yaw=0.0, pitch=0.0)
    assert frame.shape == (9, 9, 3) and frame.dtype == np.uint8
    np.testing.assert_array_equal(centre(frame), shaded(STONE_RGB, FACE_SHADE_Z))
    drawn = np.argwhere((frame != SKY).any(axis=2))
    np.testing.assert_array_equal(drawn, [[4, 4]])


def test_looking_up_shows_only_sky():
    grid = empty_grid()
    grid[:, :8, :] = STONE
    frame = renderer().render(grid, EYE, yaw=30.0, pitch=-90.0)
    assert (frame == SKY).all()


@pytest.mark.parametrize("reference", [False, True], ids=["kernel", "reference"])
def test_rays_that_hit_nothing_take_the_sky_colour_exactly_in_dark_light(reference):
    grid = empty_grid()
    grid[:, :8, :] = STONE
    light = np.zeros(grid.shape, dtype=np.uint8)
    sky = (3, 254, 128)
    r = renderer(reference, width=16, height=16, sky_rgb=sky, fog=False)
    frame = r.render(grid, EYE, yaw=10.0, pitch=0.0, light=light)
    assert (frame[:7] == sky).all()
    assert (frame[9:] == shaded(STONE_RGB, FACE_SHADE_TOP * LIGHT_CURVE[0])).all()


def test_looking_down_sees_top_face_unshaded():
    grid = empty_grid()
    grid[:, :7, :] = STONE
    frame = renderer(fog=False).render(grid, EYE, yaw=0.0, pitch=90.0)
    assert (frame == shaded(STONE_RGB, FACE_SHADE_TOP)).all()


def test_looking_up_at_a_ceiling_sees_bottom_face_shading():
    grid = empty_grid()
    grid[:, 10:, :] = STONE
    frame = renderer(fog=False).render(grid, EYE, yaw=0.0, pitch=-90.0)
    assert (frame == shaded(STONE_RGB, FACE_SHADE_BOTTOM)).all()


def test_turning_left_by_90_degrees_faces_minus_x():
    grid = empty_grid()
    grid[4, 8, 8] = STONE
    r = renderer(fog=False)
    assert (centre(r.render(grid, EYE, yaw=0.0, pitch=0.0)) == SKY).all()
    np.testing.assert_array_equal(
        centre(r.render(grid, EYE, yaw=90.0, pitch=0.0)), shaded(STONE_RGB, FACE_SHADE_X)
    )
    assert (centre(r.render(grid, EYE, yaw=-90.0, pitch=0.0)) == SKY).all()


def test_yaw_zero_has_plus_x_on_the_right():
    grid = empty_grid()
    grid[10, 8, 12] = STONE
    frame = renderer(width=33, height=33, fog=False).render(grid, EYE, yaw=0.0, pitch=0.0)
    cols = np.argwhere((frame != SKY).any(axis=2))[:, 1]
    assert len(cols) > 0 and (cols > 16).all()


def test_positive_pitch_looks_down():
    grid = empty_grid()
    grid[8, 4, 12] = STONE
    r = renderer(width=33, height=33, fog=False)
    rows = np.argwhere((r.render(grid, EYE, yaw=0.0, pitch=0.0) != SKY).any(axis=2))[:, 0]
    assert len(rows) > 0 and (rows > 16).all()
    assert (centre(r.render(grid, EYE, yaw=0.0, pitch=45.0)) != SKY).any()


def test_camera_basis_follows_luanti_look_direction():
    right, up, forward = camera_basis(90.0, 0.0)
    np.testing.assert_allclose(forward, [-1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(right, [0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(up, [0.0, 1.0, 0.0], atol=1e-12)
    _, _, down = camera_basis(0.0, 90.0)
    np.testing.assert_allclose(down, [0.0, -1.0, 0.0], atol=1e-12)


def test_vertical_fov_follows_luanti_aspect_clamp():
    assert vertical_fov(72.0, 64, 64) == pytest.approx(72.0 * math.sqrt(1.6))
    assert vertical_fov(90.0, 320, 180) == pytest.approx(90.0)
    assert vertical_fov(72.0, 16, 64) == pytest.approx(72.0 * 1.4)


def fog_frame(distance, block_rgb, sky_rgb):
    colors = np.zeros((256, 3), dtype=np.uint8)
    colors[STONE] = block_rgb
    visible = np.zeros(256, dtype=bool)
    visible[STONE] = True
    options = RenderOptions(
        width=9, height=9, sky_rgb=sky_rgb, view_distance=32.0, fog_start=0.4, face_shading=False
    )
    grid = np.full((3, 3, 64), AIR_ID, dtype=np.uint16)
    grid[1, 1, distance] = STONE
    frame = Renderer(colors, visible, options).render(grid, np.array([1.0, 1.0, 0.0]), 0.0, 0.0)
    return centre(frame).astype(int)


def expected_fog(face_distance, rgb, sky):
    clarity = min(max((1.0 - face_distance / 32.0) / 0.6, 0.0), 1.0)
    return np.floor(np.array(sky) + (np.array(rgb) - sky) * clarity + 0.5).astype(int)


def test_fog_starts_at_fog_start_and_blends_linearly_into_the_sky():
    dark, light_sky = (0, 0, 0), (200, 200, 200)
    near, mid, far = fog_frame(10, dark, light_sky), fog_frame(20, dark, light_sky), None
    np.testing.assert_array_equal(near, [0, 0, 0])
    np.testing.assert_array_equal(mid, expected_fog(19.5, dark, light_sky))
    far = fog_frame(30, dark, light_sky)
    assert near[0] < mid[0] < far[0] < 200
    np.testing.assert_array_equal(fog_frame(40, dark, light_sky), light_sky)


def test_fog_darkens_bright_blocks_under_a_dark_sky():
    bright, dark_sky = (250, 250, 250), (10, 10, 10)
    values = [fog_frame(d, bright, dark_sky)[0] for d in (5, 20, 25, 30)]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    np.testing.assert_array_equal(
        fog_frame(25, bright, dark_sky), expected_fog(24.5, bright, dark_sky)
    )


def test_face_shading_off_gives_the_base_colour():
    grid = empty_grid()
    grid[8, 8, 12] = STONE
    frame = renderer(fog=False, face_shading=False).render(grid, EYE, 0.0, 0.0)
    np.testing.assert_array_equal(centre(frame), STONE_RGB)


def test_light_of_the_node_in_front_darkens_the_face():
    grid = empty_grid()
    grid[8, 8, 12] = STONE
    light = np.full(grid.shape, 15, dtype=np.uint8)
    r = renderer(fog=False, face_shading=False)
    np.testing.assert_array_equal(centre(r.render(grid, EYE, 0, 0, light=light)), STONE_RGB)
    light[8, 8, 11] = 5
    np.testing.assert_array_equal(
        centre(r.render(grid, EYE, 0, 0, light=light)), shaded(STONE_RGB, LIGHT_CURVE[5])
    )


def test_grey_frames_use_craftium_thirds_formula():
    grid = empty_grid()
    grid[:, :7, :] = STONE
    grid[8, 7, 10] = DIRT
    colour = renderer().render(grid, EYE, 0.0, 30.0)
    gray = renderer(rgb=False).render(grid, EYE, 0.0, 30.0)
    kept = renderer(rgb=False, gray_scale_keepdim=True).render(grid, EYE, 0.0, 30.0)
    assert gray.shape == (9, 9) and gray.dtype == np.uint8
    assert kept.shape == (9, 9, 1) and kept.dtype == np.uint8
    expected = colour[..., 0] // 3 + colour[..., 1] // 3 + colour[..., 2] // 3
    np.testing.assert_array_equal(gray, expected)
    np.testing.assert_array_equal(kept[..., 0], expected)
    np.testing.assert_array_equal(to_grayscale(np.full((1, 1, 3), 255, np.uint8)), [[255]])


def test_options_shape_matches_rendered_frames():
    assert RenderOptions(width=64, height=32).shape == (32, 64, 3)
    assert RenderOptions(width=64, height=32, rgb=False).shape == (32, 64)
    assert RenderOptions(rgb=False, gray_scale_keepdim=True).shape == (64, 64, 1)
    with pytest.raises(ValueError, match="width must be a positive int, got 0"):
        RenderOptions(width=0)


def test_grid_of_another_dtype_is_refused():
    with pytest.raises(ValueError, match="grid must be a 3-D uint16 array, got 3-D int64"):
        renderer().render(np.zeros((4, 4, 4), dtype=np.int64), EYE, 0.0, 0.0)


def test_entity_box_is_drawn_in_front_of_blocks_and_hidden_behind_them():
    grid = empty_grid()
    grid[8, 8, 14] = STONE
    r = renderer(fog=False)
    in_front = np.array([[8.0, 8.0, 11.0, 0.3, 0.3, 0.3, 10, 200, 30]])
    np.testing.assert_array_equal(
        centre(r.render(grid, EYE, 0, 0, entities=in_front)), shaded((10, 200, 30), FACE_SHADE_Z)
    )
    behind = in_front.copy()
    behind[0, 2] = 15.5
    np.testing.assert_array_equal(
        centre(r.render(grid, EYE, 0, 0, entities=behind)), shaded(STONE_RGB, FACE_SHADE_Z)
    )


@pytest.mark.parametrize("reference", [False, True], ids=["kernel", "reference"])
def test_an_empty_entity_array_draws_the_frame_of_no_entities(reference):
    grid, light, _ = terrain_scene(6)
    r = renderer(reference, width=24, height=16)
    eye = np.array([15.2, 11.7, 15.9])
    expected = r.render(grid, eye, 200.0, 20.0, light=light)
    none = np.zeros((0, len(ENTITY_BOX_FIELDS)))
    np.testing.assert_array_equal(r.render(grid, eye, 200.0, 20.0, none, light), expected)
    assert len(np.unique(expected.reshape(-1, 3), axis=0)) > 5


def test_camera_outside_the_grid_sees_into_it():
    grid = empty_grid()
    grid[8, 8, 0] = STONE
    frame = renderer(fog=False).render(grid, np.array([8.0, 8.0, -6.0]), 0.0, 0.0)
    np.testing.assert_array_equal(centre(frame), shaded(STONE_RGB, FACE_SHADE_Z))


def test_origin_shifts_node_coordinates():
    grid = empty_grid()
    grid[8, 8, 12] = STONE
    frame = renderer(fog=False).render(grid, EYE - 100.0, 0.0, 0.0, origin=(-100, -100, -100))
    np.testing.assert_array_equal(centre(frame), shaded(STONE_RGB, FACE_SHADE_Z))


def test_texture_varies_texels_within_its_strength():
    grid = empty_grid()
    grid[:, :, 10] = STONE
    frame = renderer(width=32, height=32, fog=False, face_shading=False, texture_strength=0.3)
    pixels = frame.render(grid, EYE, 0.0, 0.0).reshape(-1, 3).astype(int)
    assert len(np.unique(pixels[:, 0])) > 2
    assert (pixels[:, 0] <= STONE_RGB[0]).all() and (pixels[:, 0] >= 0.7 * STONE_RGB[0] - 1).all()


def test_rendering_is_deterministic():
    rng = np.random.default_rng(0)
    grid = rng.choice(
        np.array([AIR_ID, STONE, DIRT], dtype=np.uint16), (20, 12, 20), p=[0.9, 0.05, 0.05]
    )
    entities = np.array([[10.0, 6.0, 12.0, 0.3, 0.9, 0.3, 250, 0, 0]])
    frames = [
        renderer(width=48, height=32, texture_strength=0.2).render(
            grid, np.array([10.3, 6.1, 4.7]), 33.3, 12.5, entities=entities
        )
        for _ in range(2)
    ]
    assert frames[0].tobytes() == frames[1].tobytes()
    assert len(np.unique(frames[0].reshape(-1, 3), axis=0)) > 3


def terrain_scene(seed):
    """A 32×16×32 hilly world with pillars, random light, two entities and a far camera."""
    rng = np.random.default_rng(seed)
    grid = np.full((32, 16, 32), AIR_ID, dtype=np.uint16)
    xs, zs = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    height = (6 + 2 * np.sin(xs / 4.0) + 2 * np.cos(zs / 5.0)).astype(int)
    for x in range(32):
        for z in range(32):
            grid[x, : height[x, z], z] = STONE
            grid[x, height[x, z], z] = DIRT
    pillars = rng.integers(0, 32, (12, 2))
    grid[pillars[:, 0], 8:13, pillars[:, 1]] = STONE
    light = rng.integers(0, 16, grid.shape).astype(np.uint8)
    entities = np.array(
        [[12.0, 10.5, 14.0, 0.3, 0.9, 0.3, 250, 10, 10], [18.0, 11.0, 9.0, 0.5, 0.5, 0.8, 0, 0, 90]]
    )
    return grid, light, entities


@pytest.mark.parametrize(
    "options",
    [
        {"texture_strength": 0.3},
        {"fog": False, "rgb": False},
        {"face_shading": False, "fog_start": 0.0, "view_distance": 20.0},
    ],
)
def test_kernel_draws_the_frames_of_the_numpy_reference(options):
    grid, light, entities = terrain_scene(0)
    rng = np.random.default_rng(1)
    numba_renderer = renderer(width=40, height=24, **options)
    numpy_renderer = renderer(reference=True, width=40, height=24, **options)
    eyes = [np.array([15.2, 11.7, 15.9]), np.array([-6.0, 14.0, -4.0]), np.array([16.0, 30.0, 5.0])]
    colours = set()
    for i in range(12):
        eye = eyes[i % 3]
        yaw, pitch = rng.uniform(0.0, 360.0), rng.uniform(-90.0, 90.0)
        if i % 3 == 1:
            yaw, pitch = 315.0 + rng.uniform(-20.0, 20.0), rng.uniform(0.0, 40.0)
        kwargs = {"entities": entities if i % 2 else None, "light": light if i % 4 < 2 else None}
        expected = numba_renderer.render(grid, eye, yaw, pitch, **kwargs)
        np.testing.assert_array_equal(
            numpy_renderer.render(grid, eye, yaw, pitch, **kwargs), expected
        )
        colours.update(map(bytes, expected.reshape(40 * 24, -1)))
    assert len(colours) > 20


@pytest.mark.parametrize(("threads", "height"), [(2, 24), (3, 24), (3, 5)])
def test_frames_drawn_in_bands_on_threads_are_the_frames_of_one_thread(threads, height):
    """Five rows on three threads leaves some of the twelve bands empty."""
    grid, light, entities = terrain_scene(2)
    rng = np.random.default_rng(3)
    one = renderer(width=40, height=height, texture_strength=0.2)
    banded = renderer(width=40, height=height, texture_strength=0.2, threads=threads)
    for i in range(8):
        eye = np.array([15.2, 11.7, 15.9]) if i % 2 else np.array([16.0, 30.0, 5.0])
        yaw, pitch = rng.uniform(0.0, 360.0), rng.uniform(-90.0, 90.0)
        kwargs = {"entities": entities, "light": light if i % 4 < 2 else None}
        np.testing.assert_array_equal(
            banded.render(grid, eye, yaw, pitch, **kwargs),
            one.render(grid, eye, yaw, pitch, **kwargs),
        )
    banded.close()


def test_top_row_is_the_highest_row_holding_a_visible_node():
    r = renderer()
    grid = empty_grid()
    assert r.top_row(grid) == -1
    grid[3, 5, 9] = STONE
    grid[0, 11, 0] = AIR_ID + 1  # An id the tables do not make visible.
    assert r.top_row(grid) == 5


@pytest.mark.parametrize("reference", [False, True], ids=["kernel", "reference"])
def test_top_row_hint_leaves_every_frame_unchanged(reference):
    grid, light, entities = terrain_scene(2)
    r = renderer(reference, width=40, height=24, texture_strength=0.2)
    top = r.top_row(grid)
    assert top == 12
    rng = np.random.default_rng(3)
    eyes = [np.array([15.2, 11.7, 15.9]), np.array([16.0, 14.5, 5.0]), np.array([8.0, 30.0, 8.0])]
    for i in range(9):
        eye, yaw, pitch = eyes[i % 3], rng.uniform(0.0, 360.0), rng.uniform(-60.0, 60.0)
        kwargs = {"entities": entities, "light": light}
        np.testing.assert_array_equal(
            r.render(grid, eye, yaw, pitch, top_row=top, **kwargs),
            r.render(grid, eye, yaw, pitch, **kwargs),
        )


def test_entities_at_the_frame_edges_and_around_the_eye_match_the_reference():
    grid, light, _ = terrain_scene(4)
    rng = np.random.default_rng(5)
    eye = np.array([15.5, 12.0, 15.5])
    centres = eye + rng.uniform(-4.0, 4.0, (24, 3))
    sizes = rng.uniform(0.1, 1.5, (24, 3))
    colours = rng.integers(0, 256, (24, 3))
    entities = np.column_stack([centres, sizes, colours]).astype(np.float64)
    numba_renderer = renderer(width=32, height=32, fog=False)
    numpy_renderer = renderer(reference=True, width=32, height=32, fog=False)
    drawn = set()
    for yaw in range(0, 360, 45):
        pitch = float(rng.uniform(-80.0, 80.0))
        frame = numba_renderer.render(grid, eye, yaw, pitch, entities=entities, light=light)
        expected = numpy_renderer.render(grid, eye, yaw, pitch, entities=entities, light=light)
        np.testing.assert_array_equal(frame, expected)
        drawn.update(map(bytes, frame.reshape(-1, 3)))
    assert len(drawn) > 24


def test_column_heights_track_the_highest_visible_node_of_each_column():
    r = renderer()
    grid = empty_grid()
    grid[3, 0:5, 9] = STONE
    grid[4, 11, 2] = AIR_ID + 1  # An id the tables do not make visible.
    heights = r.column_heights(grid)
    assert heights.shape == (17, 17) and heights.dtype == np.int32
    assert heights[3, 9] == 4 and heights[4, 2] == -1
    assert (np.delete(heights.ravel(), 3 * 17 + 9) == -1).all()
    grid[3, 7, 9] = DIRT
    r.update_column(heights, grid, 3, 9)
    assert heights[3, 9] == 7
    grid[3, :, 9] = AIR_ID
    r.update_column(heights, grid, 3, 9)
    assert heights[3, 9] == -1


def test_heights_of_the_wrong_shape_are_refused():
    with pytest.raises(ValueError, match="heights"):
        renderer().render(empty_grid(), EYE, 0.0, 0.0, heights=np.zeros((17, 16), np.int32))


@pytest.mark.parametrize("reference", [False, True], ids=["kernel", "reference"])
def test_heights_hint_leaves_every_frame_unchanged(reference):
    grid, light, entities = terrain_scene(6)
    grid[20, 5:15, 7] = STONE  # A thin tower and a floating slab for rays rising past them.
    grid[5:9, 14, 20:24] = DIRT
    r = renderer(reference, width=40, height=24)
    heights = r.column_heights(grid)
    raised = heights + np.random.default_rng(8).integers(0, 3, heights.shape).astype(np.int32)
    rng = np.random.default_rng(7)
    eyes = [
        np.array([15.2, 9.7, 15.9]),
        np.array([19.5, 8.5, 6.5]),  # On the corner of four columns, beside the tower.
        np.array([7.0, 12.2, 22.0]),  # Under the slab.
        np.array([-5.0, 9.0, 40.0]),  # Outside the grid.
        np.array([-6.5, 4.0, 13.5]),  # Outside, level with column edges along z.
    ]
    for i in range(20):
        eye, yaw, pitch = eyes[i % 5], rng.uniform(0.0, 360.0), rng.uniform(-85.0, 20.0)
        kwargs = {"entities": entities if i % 2 else None, "light": light}
        expected = r.render(grid, eye, yaw, pitch, **kwargs)
        np.testing.assert_array_equal(
            r.render(grid, eye, yaw, pitch, heights=heights, **kwargs), expected
        )
        np.testing.assert_array_equal(
            r.render(grid, eye, yaw, pitch, heights=raised, **kwargs), expected
        )


def test_numba_kernel_stops_rising_rays_at_the_heights_hint():
    grid = empty_grid()
    grid[8, 12, 12] = STONE  # A floating block ahead of the eye, 45° up.
    low = np.full((17, 17), -1, dtype=np.int32)
    up = {"yaw": 0.0, "pitch": -45.0}
    numba = renderer()
    assert (centre(numba.render(grid, EYE, **up)) != SKY).any()
    assert (centre(numba.render(grid, EYE, heights=numba.column_heights(grid), **up)) != SKY).any()
    # A height below the truth hides what stands above it; the reference ignores the hint.
    np.testing.assert_array_equal(centre(numba.render(grid, EYE, heights=low, **up)), SKY)
    numpy = renderer(reference=True)
    assert (centre(numpy.render(grid, EYE, heights=low, **up)) != SKY).any()


def test_heights_hint_keeps_a_tower_just_across_the_plus_x_axis():
    # The eye sits level with the edge between two groups of columns of the horizon, where
    # the direction angle wraps around; the tower's group touches that edge.
    grid = empty_grid()
    grid[3, 0:11, 6:8] = STONE
    eye = np.array([-4.5, 2.0, 7.5])
    r = renderer(width=24, height=24)
    heights = r.column_heights(grid)
    for yaw in (255.0, 260.0, 265.0, 270.0):
        expected = r.render(grid, eye, yaw, -20.0)
        assert (expected != SKY).any(axis=-1).sum() > 20
        np.testing.assert_array_equal(r.render(grid, eye, yaw, -20.0, heights=heights), expected)
