"""iDPA: synthetic lesions, the frozen ViT fixture and box pooling, the four-task env and its
agents (docs/methods.md).

Tests that need the ViT fixture build a tiny one (48 images, 1 epoch) in a temporary cache."""

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.methods.idpa import DPAAgent, IPGAgent, JointAgent, SequentialAgent, _classes
from omnigym.envs.methods import idpa_fixture, lesions, vit
from omnigym.envs.methods.idpa import (
    COLOURS,
    ZOOM,
    IncrementalDetection,
    average_precision,
    box_ap,
    forgetting,
)
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.idpa import check

ENV_ID = "Methods/IncrementalDetection-v0"
CLAIMS_SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "idpa.yaml"


@pytest.fixture
def tiny_fixture(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(idpa_fixture, "IMAGES_PER_EPOCH", 48)
    tiny = {8: idpa_fixture.Recipe(1, 1e-3), 4: idpa_fixture.Recipe(1, 1e-3, start=8)}
    monkeypatch.setattr(idpa_fixture, "RECIPES", tiny)
    idpa_fixture.pretrained.cache_clear()
    yield tmp_path
    idpa_fixture.pretrained.cache_clear()


def truth_answer(env: IncrementalDetection, boxes: bool = False) -> dict[str, np.ndarray]:
    test = env.instance["test"]
    logits = np.zeros((*test.labels.shape, lesions.TASKS * 2), np.float32)
    image, slot = np.nonzero(test.labels >= 0)
    logits[image, slot, test.labels[image, slot]] = 5.0
    answer = {"logits": logits, "centres": test.centres.astype(np.float32)}
    if boxes:
        answer["boxes"] = test.boxes.copy()
    return answer


def test_the_registered_id_makes_a_small_env_that_passes_check_env(tiny_fixture):
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    check_env(IncrementalDetection(render_mode="rgb_array"))
    assert env.observation_space["train_images"].shape == (60, 64, 64)
    assert env.action_space["logits"].shape == (80, 3, 8)
    paper = omnigym.make(ENV_ID, size="paper", patch=4, predict_boxes=True)
    assert paper.observation_space["test_proposals"].shape == (400, 3, 4)
    assert paper.action_space["boxes"].shape == (400, 3, 4)


def test_tasks_hold_their_own_classes_on_their_modality_and_draws_are_seeded():
    rng = np.random.default_rng(0)
    for task in range(lesions.TASKS):
        data = lesions.task_images(rng, task, 30, "per-task")
        present = data.labels >= 0
        assert np.all(present.sum(axis=1) >= 1) and np.all(present[:, 0])
        assert set(np.unique(data.labels[present])) == {2 * task, 2 * task + 1}
        boxes = data.boxes[present]
        assert np.all(boxes[:, :2] >= 0) and np.all(boxes[:, 2:] <= lesions.SIDE)
        sizes = boxes[:, 2] - boxes[:, 0]
        assert np.all((sizes >= 8) & (sizes <= 16))
    again = lesions.task_images(np.random.default_rng(5), 2, 10, "mixed")
    same = lesions.task_images(np.random.default_rng(5), 2, 10, "mixed")
    assert np.array_equal(again.images, same.images) and np.array_equal(again.boxes, same.boxes)
    # The modalities differ visibly: the ultrasound fan leaves a black corner, CT a dark rim.
    corner = [
        lesions.background(np.random.default_rng(1), m)[:6, :6].mean() for m in lesions.MODALITIES
    ]
    assert corner[3] < 0.01 and corner[0] < 0.1 and min(corner[1], corner[2]) > 0.1


def test_proposals_hold_the_object_off_centre_by_at_most_a_quarter_size():
    rng = np.random.default_rng(3)
    data = lesions.task_images(rng, 0, 50, "per-task")
    proposals = lesions.proposals(rng, data.boxes, data.labels)
    present = data.labels >= 0
    assert np.all(proposals[~present] == 0)
    centre = (proposals[..., :2] + proposals[..., 2:]) / 2
    offset = np.abs(centre - data.centres)[present]
    size = (data.boxes[..., 2] - data.boxes[..., 0])[present]
    assert np.all(offset <= lesions.JITTER * size[:, None] + 1e-4)
    assert np.mean(np.linalg.norm(centre - data.centres, axis=-1)[present] > 1.0) > 0.3


def test_the_true_answer_scores_one_on_every_step_with_no_forgetting():
    env = IncrementalDetection(predict_boxes=True)
    observation, info = env.reset(seed=0)
    for task in range(lesions.TASKS):
        assert observation["task"] == task
        seen = observation["test_objects"].any(axis=1)
        assert seen.sum() == np.sum(
            (env.instance["test"].labels >= 0).any(axis=1)[: 20 * (task + 1)]
        )
        observation, reward, terminated, _, info = env.step(truth_answer(env, boxes=True))
        assert reward == 1.0 and info["metrics"]["box_ap50"] == 1.0
        assert terminated == (task == lesions.TASKS - 1)
    assert info["metrics"]["final_average"] == 1.0 and info["metrics"]["forgetting"] == 0.0


def test_a_wrong_class_or_a_far_centre_is_a_miss_and_forgetting_is_the_drop():
    env = IncrementalDetection()
    env.reset(seed=1)
    answer = truth_answer(env)
    answer["centres"][..., 0] = np.clip(answer["centres"][..., 0] + 5, 0, 64)
    _, reward, *_ = env.step(answer)
    assert reward < 0.1
    answer = truth_answer(env)
    answer["logits"] = np.roll(answer["logits"], 1, axis=-1)
    _, reward, *_ = env.step(answer)
    assert reward == 0.0
    scores = np.array([[1, 0, 0], [0.5, 1, 0], [0.25, 0.5, 1.0]])
    assert forgetting(scores) == pytest.approx(((1 - 0.25) + (1 - 0.5)) / 2)


def test_box_ap_is_one_for_true_boxes_zero_for_shifted_and_follows_the_ranking():
    env = IncrementalDetection(predict_boxes=True)
    env.reset(seed=2)
    answer = truth_answer(env, boxes=True)
    test = env.instance["test"]
    assert box_ap(answer, test, 2, env.test_size) == 1.0
    answer["boxes"] = answer["boxes"] + 20.0
    assert box_ap(answer, test, 2, env.test_size) == 0.0
    # Two hits ranked below one miss, two positives: precisions 1/2 and 2/3 at recalls 1/2 and
    # 1; all-point interpolation takes the best precision at any higher recall, 2/3 for both.
    ap = average_precision(np.array([0.9, 0.8, 0.7]), np.array([False, True, True]), 2)
    assert ap == pytest.approx(2 / 3)
    assert average_precision(np.array([0.9, 0.8]), np.array([True, False]), 2) == 0.5


def test_bad_input_raises_naming_the_space_and_nan_scores_zero():
    env = IncrementalDetection()
    env.reset(seed=0)
    answer = truth_answer(env)
    with pytest.raises(ValueError, match="action space"):
        env.step({**answer, "logits": answer["logits"][:5]})
    with pytest.raises(ValueError, match="keys"):
        env.step({"logits": answer["logits"]})
    answer["logits"][0, 0, 0] = np.nan
    _, reward, terminated, _, info = env.step(answer)
    assert reward == 0.0 and info["invalid_action"] and not terminated
    for kwargs, name in [({"patch": 5}, "patch"), ({"backgrounds": "x"}, "backgrounds")]:
        with pytest.raises(ValueError, match=name):
            IncrementalDetection(**kwargs)


def test_box_pooling_averages_the_tokens_in_the_box():
    tokens = torch.arange(2 * 64 * 3, dtype=torch.float32).reshape(2, 64, 3)
    boxes = torch.tensor([[0.0, 0.0, 8.0, 8.0], [0.0, 0.0, 16.0, 8.0], [30.0, 30.0, 31.0, 31.0]])
    pooled = idpa_fixture.box_pool(tokens, 8, torch.tensor([0, 1, 0]), boxes)
    assert torch.equal(pooled[0], tokens[0, 0])
    assert torch.equal(pooled[1], tokens[1, :2].mean(dim=0))
    assert torch.equal(pooled[2], tokens[0, 3 * 8 + 3])  # no token centre inside: the nearest


def test_the_fixture_is_cached_and_read_back_without_pickle(tiny_fixture):
    state = idpa_fixture.pretrained(8)
    files = list((tiny_fixture / "omnigym" / "idpa").glob("vit-p8-*.npz"))
    assert len(files) == 1
    idpa_fixture.pretrained.cache_clear()
    again = idpa_fixture.pretrained(8)
    assert all(np.array_equal(state[name], again[name]) for name in state)
    model = idpa_fixture.load(8)
    assert not any(p.requires_grad for p in model.parameters())


def test_the_patch_4_fixture_starts_from_the_patch_8_one(tiny_fixture):
    coarse, fine = idpa_fixture.load(8), idpa_fixture.build(4, 1).vit
    idpa_fixture._start_from(fine, 4, idpa_fixture.pretrained(8))
    # The blocks are the patch-8 fixture's, and a uniform image embeds as it did at patch 8
    # (position embeddings aside: they are the coarse grid's, interpolated).
    assert torch.equal(fine.blocks[0].qkv.weight, coarse.blocks[0].qkv.weight)
    grey = torch.full((1, 64, 64), 0.4)
    with torch.no_grad():
        coarse_patch = coarse.patches(grey[:, None]).flatten(2)[0, :, 0]
        fine_patch = fine.patches(grey[:, None]).flatten(2)[0, :, 0]
    assert torch.allclose(fine_patch, coarse_patch, atol=1e-5)
    assert fine.position.shape == (1, 256, vit.WIDTH)
    # Bilinear interpolation keeps the grid's corners.
    assert torch.allclose(fine.position[0, 0], coarse.position[0, 0])
    assert torch.allclose(fine.position[0, 255], coarse.position[0, 63])
    assert len(list((tiny_fixture / "omnigym" / "idpa").glob("vit-p4-*.npz"))) == 0
    assert idpa_fixture.load(4)(grey).shape == (1, 256, vit.WIDTH)
    assert len(list((tiny_fixture / "omnigym" / "idpa").glob("vit-p4-*.npz"))) == 1


def test_dpa_trained_beats_untrained_and_sequential_forgets(tiny_fixture):
    env = IncrementalDetection()
    scores = {}
    for name, agent in [
        ("untrained", DPAAgent(seed=0, epochs=0)),
        ("dpa", DPAAgent(seed=0, epochs=3)),
        ("sequential", SequentialAgent(seed=0, epochs=3)),
    ]:
        observation, info = env.reset(seed=0)
        first = []
        for _ in range(2):
            observation, reward, _, _, info = env.step(agent.act(observation, info))
            first.append(info["metrics"]["task_0"])
        scores[name] = first
    assert scores["dpa"][0] > scores["untrained"][0] + 0.2
    assert scores["sequential"][1] < scores["sequential"][0]


def test_ipg_generates_every_block_s_prompts_from_the_task_s_instances(tiny_fixture):
    instances = torch.randn(7, vit.WIDTH)
    generator = _classes()["InstancePrompts"](5, instances)
    prompts = generator()
    assert prompts.shape == (vit.DEPTH, 2, 5, vit.WIDTH)
    generator.instances = instances * 3 + 1
    assert not torch.allclose(generator(), prompts)
    env = IncrementalDetection()
    observation, info = env.reset(seed=0)
    agent = IPGAgent(seed=0, epochs=1)
    for _ in range(2):
        observation, _, _, _, info = env.step(agent.act(observation, info))
    assert len(agent.prompts) == len(agent.keys) == 2
    assert not info["invalid_action"] and 0 <= info["metrics"]["average"] <= 1


def test_joint_training_trains_old_tasks_prompts_again_and_dpa_keeps_them(tiny_fixture):
    env = IncrementalDetection()
    first = {}
    for name, agent in [
        ("dpa", DPAAgent(seed=0, epochs=1)),
        ("joint", JointAgent(seed=0, epochs=1)),
    ]:
        observation, info = env.reset(seed=0)
        observation, _, _, _, info = env.step(agent.act(observation, info))
        first[name] = agent.prompts[0].clone()
        env.step(agent.act(observation, info))
        assert len(agent.prompts) == 2
        kept = torch.equal(agent.prompts[0], first[name])
        assert kept == (name == "dpa")
    with pytest.raises(ValueError, match="query"):
        IPGAgent(query="pixels")


def test_the_same_seed_draws_the_same_episode_and_scores_it_alike():
    first, second = IncrementalDetection(), IncrementalDetection()
    a, _ = first.reset(seed=4)
    b, _ = second.reset(seed=4)
    assert all(np.array_equal(a[key], b[key]) for key in a)
    answer = truth_answer(first)
    answer["centres"] = np.clip(answer["centres"] + 3.0, 0, 64)
    assert first.step(answer)[1] == second.step(answer)[1] < 1.0
    c, _ = second.reset(seed=5)
    assert not np.array_equal(a["train_images"], c["train_images"])


# ---- claims ----------------------------------------------------------------------------------

PAPER_LIKE = {  # env -> agent -> final average
    "patch 8 per-task": {"sequential-finetune": 0.20, "prefix-prompts": 0.60, "dpa": 0.65,
                         "ipg-dpa": 0.67, "joint-training": 0.80},
    "patch 4 per-task": {"prefix-prompts": 0.55, "dpa": 0.68},
    "patch 8 mixed": {"ipg-dpa": 0.50, "dpa": 0.52},
}  # fmt: skip


def _claim_records(table):
    rng = np.random.default_rng(0)
    records = []
    for seed in range(4):
        wobble = 0.01 * rng.standard_normal()
        for env, row in table.items():
            for agent, final in row.items():
                metrics = {"final_average": final + wobble, "forgetting": 0.1, "accuracy": 0.7}
                records.append({"env_id": env, "agent": agent, "seed": seed, "episode": 0,
                                "return": final, "metrics": metrics})  # fmt: skip
    return records


def _statuses(table):
    scenario = load_scenario(CLAIMS_SCENARIO)
    run = Run(scenario, {}, RunFolder(Path("unused")), {}, _claim_records(table))
    return [entry["status"] for entry in check(run)]


def _with(env, agent, value):
    return {**PAPER_LIKE, env: {**PAPER_LIKE[env], agent: value}}


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    assert _statuses(PAPER_LIKE) == ["pass"] * 4 + ["recorded"]


def test_each_claim_fails_when_its_pattern_breaks():
    assert _statuses(_with("patch 4 per-task", "dpa", 0.50))[0] == "fail"
    assert _statuses(_with("patch 8 per-task", "prefix-prompts", 0.70))[0] == "fail"
    # DPA ahead at both patch sizes, but by less with more tokens.
    narrow = _with("patch 4 per-task", "prefix-prompts", 0.66)
    assert _statuses(narrow)[:2] == ["pass", "fail"]
    assert _statuses(_with("patch 8 per-task", "ipg-dpa", 0.60))[2] == "fail"
    # Joint training below DPA, or sequential fine-tuning above prefix prompts.
    assert _statuses(_with("patch 8 per-task", "joint-training", 0.66))[3] == "fail"
    assert _statuses(_with("patch 8 per-task", "sequential-finetune", 0.62))[3] == "fail"


def test_claims_are_not_run_without_their_envs_or_agents():
    assert _statuses({}) == ["not run"] * 5
    coarse = {"patch 8 per-task": PAPER_LIKE["patch 8 per-task"]}
    assert _statuses(coarse) == ["not run", "not run", "pass", "pass", "recorded"]


def test_render_pictures_a_training_image_per_task_with_boxes_in_class_colours(tmp_path):
    from PIL import Image

    from omnigym.cli import main

    out = tmp_path / "sample.png"
    assert main(["render", ENV_ID, "--seed", "2", "--out", str(out)]) == 0
    with Image.open(out) as image:
        picture = np.asarray(image)
    assert picture.shape == (64 * ZOOM, 4 * 64 * ZOOM, 3)
    env = IncrementalDetection()
    env.reset(seed=2)
    assert env.render() is None
    for task, train in enumerate(env.instance["train"]):
        x0, y0 = np.round(train.boxes[0, 0, :2] * ZOOM).astype(int)
        corner = picture[y0, task * 64 * ZOOM + x0]
        assert np.array_equal(corner, COLOURS[train.labels[0, 0]])
    # Away from the boxes the picture is the grey image, enlarged.
    assert np.array_equal(picture[0, :ZOOM, 0], np.full(ZOOM, picture[0, 0, 0]))
