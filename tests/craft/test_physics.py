"""Player physics and Craftium's mouse-to-camera formula."""

import math

import numpy as np
import pytest

from omnigym.envs.craft.engine import Player, World
from omnigym.envs.craft.physics import Controls, PhysicsConfig, camera_turn, step_player

FLOOR_TOP = 4.5  # feet height of a player standing on the floor layer y = 4


def flat_world(materials, size=24):
    world = World(materials, (size, 16, size), origin=(-size // 2, 0, -size // 2))
    world.fill((-size, 0, -size), (size, 4, size), "default:stone")
    return world


def run(world, player, controls, config, frames, **kwargs):
    results = [step_player(world, player, controls, config, **kwargs) for _ in range(frames)]
    return results


def test_pmul_scales_speeds_and_accelerations_but_not_gravity_or_jump():
    config = PhysicsConfig.load(pmul=10)
    assert config.walk_speed == pytest.approx(40.0)
    assert config.crouch_speed == pytest.approx(13.5)
    assert config.fast_speed == pytest.approx(200.0)
    assert config.accel_ground == pytest.approx(30.0)
    assert config.accel_air == pytest.approx(20.0)
    assert config.gravity == pytest.approx(2 * 9.81)
    assert config.jump_speed == pytest.approx(6.5)


def test_default_frame_time_is_five_milliseconds(config):
    assert config.dt == pytest.approx(0.005)
    assert PhysicsConfig.load(fps_max=100).dt == pytest.approx(0.01)


def test_bad_physics_settings_are_rejected():
    with pytest.raises(ValueError, match="pmul"):
        PhysicsConfig.load(pmul=0)
    with pytest.raises(TypeError, match="warp_speed"):
        PhysicsConfig.load(warp_speed=3)


@pytest.mark.parametrize(
    ("mouse", "size", "fov", "yaw", "pitch"),
    [
        ((0.5, 0.5), (64, 64), 72.0, -4.49, -4.49),
        ((0.1, 0.1), (64, 64), 72.0, -0.84, -0.84),
        ((0.1, 0.1), (320, 180), 90.0, -4.40, -2.48),
    ],
)
def test_mouse_turn_per_frame_matches_craftium_reference_values(mouse, size, fov, yaw, pitch):
    dyaw, dpitch = camera_turn(*mouse, *size, fov=fov)
    assert dyaw == pytest.approx(yaw, abs=0.01)
    assert dpitch == pytest.approx(pitch, abs=0.01)


def test_mouse_x_plus_turns_right_and_mouse_y_plus_looks_up():
    player = Player()
    player.look(*camera_turn(0.5, 0.0, 64, 64))
    assert player.yaw == pytest.approx(360.0 - 4.4877, abs=1e-3)  # turning right lowers yaw
    player.look(*camera_turn(0.0, -0.5, 64, 64))
    assert player.pitch == pytest.approx(4.4877, abs=1e-3)  # mouse y- looks down


def test_mouse_delta_truncates_to_whole_pixels():
    assert camera_turn(0.03, 0.0, 64, 64) == (0.0, 0.0)  # 0.96 px -> 0 px


def test_player_standing_on_the_floor_stays_put(materials, config):
    world = flat_world(materials)
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    results = run(world, player, Controls(), config, 200)
    np.testing.assert_allclose(player.position, [0.0, FLOOR_TOP, 0.0], atol=1e-12)
    assert player.on_ground
    assert all(r.fall_damage == 0 for r in results)


def test_walking_accelerates_at_the_ground_rate_up_to_walk_speed(materials, config):
    world = World(materials, (8, 16, 400), origin=(-4, 0, -20))
    world.fill((-4, 0, -20), (3, 4, 379), "default:stone")
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, player, Controls(), config, 1)
    step_player(world, player, Controls(forward=True), config)
    assert player.velocity[2] == pytest.approx(config.accel_ground * config.dt)
    run(world, player, Controls(forward=True), config, 300)
    np.testing.assert_allclose(player.velocity, [0.0, 0.0, config.walk_speed], atol=1e-9)


def test_yaw_ninety_walks_toward_minus_x(materials, config):
    world = flat_world(materials)
    player = Player(position=[5.0, FLOOR_TOP, 0.0], yaw=90.0)
    run(world, player, Controls(forward=True), config, 50)
    assert player.position[0] < 5.0
    assert player.position[2] == pytest.approx(0.0, abs=1e-9)


def test_diagonal_walking_is_normalised_to_walk_speed(materials, config):
    world = World(materials, (400, 16, 400), origin=(-200, 0, -200))
    world.fill((-200, 0, -200), (199, 4, 199), "default:stone")
    player = Player(position=[-150.0, FLOOR_TOP, -150.0])
    run(world, player, Controls(forward=True, right=True), config, 300)
    component = config.walk_speed / math.sqrt(2.0)
    np.testing.assert_allclose(player.velocity, [component, 0.0, component], atol=1e-9)


def test_releasing_the_keys_brings_the_player_to_rest(materials, config):
    world = World(materials, (400, 16, 40), origin=(-20, 0, -20))
    world.fill((-20, 0, -20), (379, 4, 19), "default:stone")
    player = Player(position=[0.0, FLOOR_TOP, 0.0], yaw=270.0)
    run(world, player, Controls(forward=True), config, 300)
    run(world, player, Controls(), config, 300)
    np.testing.assert_allclose(player.velocity, 0.0, atol=1e-12)


def test_sneaking_and_fast_move_set_the_target_speed(materials, config):
    world = World(materials, (40, 16, 400), origin=(-20, 0, -20))
    world.fill((-20, 0, -20), (19, 4, 379), "default:stone")
    sneaking = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, sneaking, Controls(forward=True, sneak=True), config, 200)
    assert sneaking.velocity[2] == pytest.approx(config.crouch_speed)
    no_fast_move = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, no_fast_move, Controls(forward=True, aux1=True), config, 300)
    assert no_fast_move.velocity[2] == pytest.approx(config.walk_speed)


def test_jump_rises_just_over_one_node_and_lands(materials, config):
    world = flat_world(materials)
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, player, Controls(), config, 1)
    heights = [player.position[1]]
    for frame in range(200):
        step_player(world, player, Controls(jump=frame == 0), config)
        heights.append(player.position[1])
    rise = max(heights) - FLOOR_TOP
    expected = config.jump_speed**2 / (2 * config.gravity)
    assert rise == pytest.approx(expected, abs=0.02)
    assert 1.0 < rise < 1.1
    assert player.position[1] == pytest.approx(FLOOR_TOP)
    assert player.on_ground


def test_jump_in_the_air_does_nothing(materials, config):
    world = flat_world(materials)
    player = Player(position=[0.0, 10.0, 0.0])
    step_player(world, player, Controls(jump=True), config)
    assert player.velocity[1] == pytest.approx(-config.gravity * config.dt)


def test_wall_stops_the_player_at_the_box_face(materials, config):
    world = flat_world(materials)
    world.fill((-12, 5, 3), (11, 7, 3), "default:stone")
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, player, Controls(forward=True), config, 200)
    assert player.position[2] == pytest.approx(2.5 - config.box[2] / 2)
    assert player.velocity[2] == 0.0


def test_grid_edge_is_a_wall_of_ignore(materials, config):
    world = flat_world(materials)
    player = Player(position=[0.0, FLOOR_TOP, 0.0], yaw=180.0)
    run(world, player, Controls(forward=True), config, 300)
    assert player.position[2] == pytest.approx(-12.5 + config.box[2] / 2)


def test_one_node_ledge_blocks_walking_but_not_jumping(materials, config):
    world = flat_world(materials)
    world.fill((-12, 5, 3), (11, 5, 11), "default:dirt")
    walker = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, walker, Controls(forward=True), config, 200)
    assert walker.position[1] == pytest.approx(FLOOR_TOP)
    jumper = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, jumper, Controls(forward=True, jump=True), config, 200)
    run(world, jumper, Controls(forward=True), config, 200)
    assert jumper.position[1] == pytest.approx(FLOOR_TOP + 1.0)
    assert jumper.position[2] > 3.0


def test_step_up_climbs_a_ledge_within_the_step_height(materials, config):
    tall_step = PhysicsConfig.load(step_height=1.0)
    world = flat_world(materials)
    world.fill((-12, 5, 3), (11, 5, 11), "default:dirt")
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, player, Controls(forward=True), tall_step, 200)
    assert player.position[1] == pytest.approx(FLOOR_TOP + 1.0)
    assert player.position[2] > 3.0


def test_ceiling_stops_a_jump_at_head_height(materials, config):
    world = flat_world(materials)
    world.fill((-12, 7, -12), (11, 7, 11), "default:stone")  # 2 free nodes above the floor
    player = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, player, Controls(), config, 1)
    peak = FLOOR_TOP
    for frame in range(200):
        step_player(world, player, Controls(jump=frame == 0), config)
        peak = max(peak, player.position[1])
    assert peak + config.box[1] == pytest.approx(6.5)


def test_sneaking_stops_at_the_edge_instead_of_falling(materials, config):
    world = World(materials, (24, 16, 24), origin=(-12, 0, -12))
    world.fill((-12, 0, -12), (11, 4, 2), "default:stone")  # floor ends at z = 2.5
    sneaker = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, sneaker, Controls(forward=True, sneak=True), config, 400)
    assert sneaker.on_ground
    assert sneaker.position[1] == pytest.approx(FLOOR_TOP)
    assert 2.5 < sneaker.position[2] <= 2.5 + config.box[2] / 2
    walker = Player(position=[0.0, FLOOR_TOP, 0.0])
    run(world, walker, Controls(forward=True), config, 400)
    assert walker.position[1] < FLOOR_TOP


def test_landing_faster_than_the_tolerance_costs_hp(materials, config):
    world = flat_world(materials)
    for height, hurts in ((10.0, True), (4.0, False)):
        player = Player(position=[0.0, FLOOR_TOP + height, 0.0])
        results = run(world, player, Controls(), config, 400)
        landing = max(r.landing_speed for r in results)
        assert landing == pytest.approx(math.sqrt(2 * config.gravity * height), rel=0.02)
        damage = sum(r.fall_damage for r in results)
        assert damage == config.fall_damage(landing)
        assert (damage > 0) == hurts


def test_fall_damage_is_linear_past_the_tolerance(config):
    assert config.fall_damage(config.fall_tolerance) == 0
    assert config.fall_damage(config.fall_tolerance + 2.4) == 2
    assert config.fall_damage(config.fall_tolerance + 2.6) == 3


def test_numba_and_numpy_kernels_give_identical_states(materials, config):
    world = flat_world(materials)
    world.fill((-3, 5, 2), (4, 5, 4), "default:dirt")
    world.fill((5, 5, -6), (6, 6, -2), "default:stone")
    rng = np.random.default_rng(7)
    players = {k: Player(position=[0.0, FLOOR_TOP + 2, 0.0]) for k in ("numba", "numpy")}
    for _ in range(600):
        keys = rng.integers(0, 2, size=7).astype(bool)
        controls = Controls(*keys)
        dyaw = float(rng.uniform(-10, 10))
        for kernel, player in players.items():
            player.look(dyaw, 0.0)
            step_player(world, player, controls, config, kernel=kernel)
    a, b = players["numba"], players["numpy"]
    assert np.array_equal(a.position, b.position)
    assert np.array_equal(a.velocity, b.velocity)
    assert a.on_ground == b.on_ground


def test_unknown_kernel_is_rejected(materials, config):
    with pytest.raises(ValueError, match="kernel"):
        step_player(flat_world(materials), Player(), Controls(), config, kernel="cuda")
