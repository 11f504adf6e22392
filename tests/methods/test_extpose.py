"""ExtPose: synthetic pose clips, pose metrics, the env and the tiny ViT (docs/methods.md).

Fixture tests build a tiny RGB-only fixture (2 clips, 1 epoch) in a temporary cache folder."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scipy.spatial.transform import Rotation

import omnigym
from omnigym.agents.methods.extpose import MeanPoseAgent, RGBAgent
from omnigym.envs.methods import extpose_model, poses
from omnigym.envs.methods.extpose import PoseEstimation, Pretrained
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.extpose import check

ENV_ID = "Methods/PoseEstimation-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "extpose.yaml"


@pytest.fixture(scope="module")
def clips():
    return poses.clips(np.random.default_rng(3), 6)


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space["train_images"].shape == (6, 16, 3, 64, 64)
    assert env.observation_space["test_detections"].shape == (3, 16, 14, 2)
    assert env.action_space.shape == (48, 14, 3)
    paper = PoseEstimation(size="paper")
    assert paper.observation_space["train_poses"].shape == (250, 16, 14, 3)
    assert paper.action_space.shape == (512, 14, 3)


def test_bones_keep_their_lengths_and_joints_move_smoothly(clips):
    starts, ends = zip(*[(j, p) for j, p in enumerate(poses.PARENTS) if p >= 0], strict=True)
    lengths = np.linalg.norm(clips.poses[:, :, starts] - clips.poses[:, :, ends], axis=-1)
    assert np.allclose(lengths, lengths[:, :1], atol=1e-5)
    steps = np.linalg.norm(np.diff(clips.poses, axis=1), axis=-1)
    turns = np.linalg.norm(np.diff(clips.poses, n=2, axis=1), axis=-1)
    assert steps.max() < 0.3 and turns.mean() < 0.5 * steps.mean()
    pelvis = (clips.poses[..., 2, :] + clips.poses[..., 3, :]) / 2
    assert np.allclose(pelvis, 0.0, atol=1e-6)


def test_detections_are_noisy_projections_with_whole_frame_left_right_flips():
    rng = np.random.default_rng(0)
    truth = poses.project(poses.motion(rng, 40))
    detections, flipped = poses.detect(rng, truth)
    assert 0.06 < flipped.mean() < 0.14
    plain = np.linalg.norm(detections - truth, axis=-1)
    mirrored = np.linalg.norm(detections - truth[..., poses.MIRROR, :], axis=-1)
    assert plain[~flipped].mean() < 2 * poses.DETECTION_NOISE
    assert mirrored[flipped].mean() < 2 * poses.DETECTION_NOISE
    assert plain[flipped].mean() > 3 * poses.DETECTION_NOISE


def test_renders_draw_limbs_where_the_joints_project_and_skeleton_images_by_side(clips):
    assert clips.images.dtype == np.uint8 and clips.images.shape == (6, 16, 3, 64, 64)
    pixels = poses.project(clips.poses)
    x, y = np.round(pixels[..., 0]).astype(int), np.round(pixels[..., 1]).astype(int)
    assert ((x >= 0) & (x < 64) & (y >= 0) & (y < 64)).all()
    image = poses.skeleton_image(clips.detections)
    assert image.shape == (6, 16, 3, 64, 64) and image.dtype == np.float32
    lit = image[0, 0]
    for joint, channel in ((5, 0), (0, 2)):  # left ankle, right ankle
        col, row = np.round(clips.detections[0, 0, joint]).astype(int)
        assert lit[channel, row, col] > 0.2
        assert lit[2 - channel, row - 1 : row + 2, col - 1 : col + 2].max() < lit[channel, row, col]


def test_pose_metrics_ignore_similarity_transforms_but_not_mirror_images(clips):
    truth = clips.poses.astype(np.float64)
    assert poses.pose_metrics(truth, truth) == pytest.approx(
        {"pa_mpjpe": 0.0, "mpjpe": 0.0, "acceleration_error": 0.0}, abs=1e-6
    )
    turned = Rotation.from_euler("xyz", [0.3, 1.0, -0.5]).apply(truth.reshape(-1, 3))
    moved = 1.3 * turned.reshape(truth.shape) + 0.2
    metrics = poses.pose_metrics(moved, truth)
    assert metrics["pa_mpjpe"] == pytest.approx(0.0, abs=1e-3)
    assert metrics["mpjpe"] > 50.0
    mirrored = truth * np.array([-1.0, 1.0, 1.0])
    assert poses.pose_metrics(mirrored, truth)["pa_mpjpe"] > 20.0


def test_mpjpe_is_in_millimetres_and_acceleration_error_sees_only_jitter(clips):
    truth = clips.poses.astype(np.float64)
    drift = truth.copy()
    drift[..., 13, 0] += 0.01 * np.arange(16)[None, :]  # the head drifts steadily
    metrics = poses.pose_metrics(drift, truth)
    assert metrics["mpjpe"] == pytest.approx(1000 * 0.01 * 7.5 / 14, rel=1e-4)
    assert metrics["acceleration_error"] == pytest.approx(0.0, abs=1e-6)
    jitter = truth.copy()
    jitter[:, 1::2, 13, 0] += 0.01
    assert poses.pose_metrics(jitter, truth)["acceleration_error"] == pytest.approx(
        1000 * 0.02 / 14, rel=1e-4
    )


def test_same_seed_same_instance_and_score_and_the_truth_scores_zero():
    env = PoseEstimation()
    first, info = env.reset(seed=5)
    assert isinstance(info["instance"], Pretrained)
    truth = env.instance.poses.reshape(env.action_space.shape)
    _, reward, terminated, _, step_info = env.step(truth)
    assert terminated and reward == pytest.approx(0.0, abs=1e-2)
    assert set(step_info["metrics"]) >= {"pa_mpjpe", "mpjpe", "acceleration_error"}
    again, _ = env.reset(seed=5)
    for key, value in first.items():
        assert np.array_equal(value, again[key]), key
    answer = np.full(env.action_space.shape, 0.1)
    scores = []
    for _ in range(2):
        PoseEstimation().reset(seed=5)
        env.reset(seed=5)
        scores.append(env.step(answer)[1])
    assert scores[0] == scores[1]


def test_a_wrong_shape_raises_naming_shapes_and_nan_is_a_failed_episode():
    env = PoseEstimation()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(48, 14, 2\), expected \(48, 14, 3\)"):
        env.step(np.zeros((48, 14, 2)))
    answer = np.zeros(env.action_space.shape)
    answer[0, 0, 0] = np.nan
    _, reward, terminated, _, info = env.step(answer)
    assert terminated and info["invalid_action"] and reward == -1000.0


@pytest.fixture
def tiny_fixture(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(extpose_model, "PRETRAIN_CLIPS", 2)
    monkeypatch.setattr(extpose_model, "PRETRAIN_EPOCHS", 1)
    extpose_model.pretrained.cache_clear()
    yield tmp_path
    extpose_model.pretrained.cache_clear()


def test_the_fixture_is_built_once_cached_and_loads_into_every_variant(tiny_fixture, monkeypatch):
    state = extpose_model.pretrained()
    saved = list((tiny_fixture / "omnigym" / "extpose").glob("rgb-*.npz"))
    assert len(saved) == 1
    extpose_model.pretrained.cache_clear()
    monkeypatch.setattr(extpose_model, "pretrain", lambda: pytest.fail("rebuilt a cached fixture"))
    cached = extpose_model.pretrained()
    assert all(np.array_equal(state[name], cached[name]) for name in state)
    for variant in extpose_model.VARIANTS:
        model = Pretrained().model(variant, seed=1)
        assert model.variant == variant
        weights = model.state_dict()
        patches = "backbone.patches.weight"
        assert np.array_equal(weights[patches].numpy(), state[patches])
        assert np.array_equal(weights["head.bias"].numpy(), state["head.bias"])


def test_every_variant_runs_and_training_lowers_the_error_on_its_frames(clips):
    two = poses.Clips(clips.images[:2], clips.detections[:2], clips.poses[:2], clips.flipped[:2])
    targets = two.poses.reshape(-1, 14, 3)
    for variant in extpose_model.VARIANTS:
        frames = extpose_model.inputs(two.images, two.detections, variant)
        model = extpose_model.build(variant, seed=0)
        extpose_model.standardise(model, targets)
        before = poses.pa_mpjpe(extpose_model.predict(model, frames), targets)
        losses = extpose_model.train(model, frames, targets, epochs=10, learning_rate=2e-3, seed=0)
        after = poses.pa_mpjpe(extpose_model.predict(model, frames), targets)
        assert losses[-1] < losses[0] and after < before, variant


def test_knees_and_elbows_bend_by_at_most_the_hinge_limit(clips):
    def bend(joint):
        child = [j for j, p in enumerate(poses.PARENTS) if p == joint][0]
        parent = poses.PARENTS[joint]
        upper = clips.poses[:, :, joint] - clips.poses[:, :, parent]
        lower = clips.poses[:, :, child] - clips.poses[:, :, joint]
        return np.degrees(np.arccos(np.clip(
            (upper * lower).sum(-1) / np.linalg.norm(upper, axis=-1)
            / np.linalg.norm(lower, axis=-1), -1, 1)))  # fmt: skip

    for joint in poses.HINGES:
        angles = bend(joint)
        assert angles.max() <= np.degrees(poses.FLEX) + 1e-3 and angles.max() > 20.0


def test_the_flip_measures_split_left_and_right_joints_by_flipped_frames(clips):
    truth = clips.poses.astype(np.float64)
    wrong = truth.copy()
    wrong[clips.flipped] = wrong[clips.flipped][:, poses.MIRROR]
    errors = poses.flip_errors(wrong, truth, clips.flipped)
    assert errors["clean_joint_error"] == pytest.approx(0.0, abs=1e-6)
    assert errors["flipped_joint_error"] > 20.0
    none = poses.flip_errors(truth, truth, np.zeros_like(clips.flipped))
    assert np.isnan(none["flipped_joint_error"]) and none["clean_joint_error"] < 1e-6


def test_render_shows_a_test_frame_beside_its_skeleton_image():
    env = omnigym.make(ENV_ID, render_mode="rgb_array")
    observation, _ = env.reset(seed=0)
    frame = env.render()
    zoom = PoseEstimation.ZOOM
    assert frame.shape == (64 * zoom, 128 * zoom, 3) and frame.dtype == np.uint8
    render = observation["test_images"][0, 0].transpose(1, 2, 0)
    assert np.array_equal(frame[::zoom, : 64 * zoom : zoom], render)
    skeleton = frame[::zoom, 64 * zoom :: zoom]
    assert skeleton.max() > 100 and (skeleton == 0).mean() > 0.5
    assert PoseEstimation().render() is None
    with pytest.raises(ValueError, match="render_mode"):
        PoseEstimation(render_mode="human")


def test_the_mean_pose_agent_answers_the_mean_training_pose():
    env = PoseEstimation()
    observation, info = env.reset(seed=1)
    answer = MeanPoseAgent().act(observation, info)
    assert answer.shape == env.action_space.shape
    mean = observation["train_poses"].reshape(-1, 14, 3).mean(axis=0)
    assert np.allclose(answer, mean[None], atol=1e-6)


def test_a_fine_tuned_agent_beats_the_untrained_one(tiny_fixture):
    env = PoseEstimation()
    rewards = {}
    for epochs in (0, 12):
        observation, info = env.reset(seed=2)
        agent = RGBAgent(epochs=epochs, learning_rate=2e-3)
        rewards[epochs] = env.step(agent.act(observation, info))[1]
    assert rewards[12] > rewards[0] + 5.0, rewards


# ---- claims ----------------------------------------------------------------------------------

PAPER_LIKE = {  # agent -> (PA-MPJPE, acceleration error, flipped-joint error, clean-joint error)
    "mean-pose": (210.0, 14.0, 200.0, 200.0),
    "extpose-rgb": (150.0, 60.0, 150.0, 150.0),
    "extpose-coordinates": (130.0, 50.0, 170.0, 125.0),
    "extpose-skeleton": (110.0, 45.0, 120.0, 105.0),
    "extpose-temporal": (108.0, 20.0, 115.0, 104.0),
}


def _records(table):
    rng = np.random.default_rng(0)
    records = []
    for seed in (0, 1, 2):
        wobble = rng.standard_normal()
        for agent, (pa, acceleration, flipped, clean) in table.items():
            metrics = {"pa_mpjpe": pa + wobble, "mpjpe": pa + 20,
                       "acceleration_error": acceleration, "clean_joint_error": clean,
                       "flipped_joint_error": flipped + wobble}  # fmt: skip
            records.append({"env_id": "paper", "agent": agent, "seed": seed, "episode": 0,
                            "return": -pa, "metrics": metrics})  # fmt: skip
    return records


def _statuses(records):
    run = Run(load_scenario(SCENARIO), {}, RunFolder(Path("unused")), {}, records)
    return [entry["status"] for entry in check(run)]


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    assert _statuses(_records(PAPER_LIKE)) == ["pass"] * 5 + ["recorded"]


@pytest.mark.parametrize(
    ("claim", "agent", "values"),
    [
        (0, "extpose-rgb", (215.0, 60.0, 150.0, 150.0)),
        (1, "extpose-skeleton", (155.0, 45.0, 120.0, 105.0)),
        (2, "extpose-coordinates", (105.0, 50.0, 170.0, 125.0)),
        (3, "extpose-coordinates", (130.0, 50.0, 130.0, 125.0)),
        (4, "extpose-temporal", (108.0, 50.0, 115.0, 104.0)),
    ],
)
def test_each_claim_fails_when_its_pattern_breaks(claim, agent, values):
    statuses = _statuses(_records({**PAPER_LIKE, agent: values}))
    assert statuses[claim] == "fail"
    assert statuses[-1] == "recorded"


def test_claims_are_not_run_without_their_agents():
    assert _statuses([]) == ["not run"] * 6
    only = {agent: PAPER_LIKE[agent] for agent in ("mean-pose", "extpose-rgb")}
    assert _statuses(_records(only)) == ["pass"] + ["not run"] * 4 + ["recorded"]
