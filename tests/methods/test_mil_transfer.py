"""MIL transfer: synthetic slides, five aggregators, pretrained fixtures (docs/methods.md).

Fixture tests build tiny fixtures (100 bags, 2 epochs) in a temporary cache folder."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.methods.mil_transfer import (
    ABMILAgent,
    DSMILAgent,
    MeanMILAgent,
    MILAgent,
    probe,
)
from omnigym.envs.methods import aggregators, slides
from omnigym.envs.methods.mil_transfer import MILTransfer, Pretrained, classification_metrics
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.mil_transfer import check

ENV_ID = "Methods/MILTransfer-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "mil_transfer.yaml"


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space["train_bags"].shape == (40, 32, 64)
    assert env.action_space.shape == (100, 4)
    paper = omnigym.make(ENV_ID, size="paper", target="shift", train_size=80)
    assert paper.observation_space["test_bags"].shape == (500, 100, 64)
    assert paper.action_space.shape == (500, 2)


def test_the_world_has_equidistant_prototypes_and_organs_share_only_tissue():
    world = slides.world()
    gaps = np.linalg.norm(world.centres[:, None] - world.centres[None], axis=-1)
    off = gaps[~np.eye(slides.PROTOTYPES, dtype=bool)]
    assert np.allclose(off, slides.SEPARATION)
    assert np.allclose(world.centres[2] + slides.SEPARATION * world.direction, world.centres[3])
    for organ in range(1, slides.ORGANS):
        assert set(slides.tissue(0)) & set(slides.tissue(organ)) == set(slides.SHARED)
        assert not set(slides.diagnostic(0)) & set(slides.diagnostic(organ))


def test_a_slide_holds_its_organ_s_prototypes_and_the_shift_moves_one_of_them(monkeypatch):
    monkeypatch.setattr(slides, "BACKGROUND_SHARE", (0.0, 0.0))
    world = slides.world()
    bag = slides.slide(np.random.default_rng(0), organ=1, present=[5], instances=2000)
    nearest = np.linalg.norm(bag[:, None] - world.centres[None], axis=-1).argmin(axis=1)
    # Centres 6 apart in unit noise: the nearest centre is right for about 95 % of instances.
    assert np.isin(nearest, [*slides.tissue(1), 5]).mean() > 0.93
    low, high = slides.DIAGNOSTIC_SHARE
    assert low - 0.02 < np.mean(nearest == 5) < high + 0.02
    plain = slides.slide(np.random.default_rng(1), 0, [2], 2000)
    moved = slides.slide(np.random.default_rng(1), 0, [2], 2000, shifted=(2,))
    along = (moved - plain) @ world.direction
    assert np.allclose(np.sort(along)[-50:], slides.SHIFT, atol=1e-4)  # prototype 2's instances
    assert np.sum(np.abs(along) > 1e-4) == np.sum(np.abs(along - slides.SHIFT) < 1e-4) > 0


def test_labels_follow_each_task_s_rule():
    rng = np.random.default_rng(2)
    for task, (classes, _) in slides.TASKS.items():
        bags, labels = slides.bags(rng, task, 30, 16)
        assert bags.shape == (30, 16, 64) and bags.dtype == np.float32
        assert labels.min() >= 0 and labels.max() < classes


def test_draws_are_deterministic_and_the_truth_scores_one():
    env = MILTransfer(target="same-organ")
    first, info = env.reset(seed=3)
    second, _ = MILTransfer(target="same-organ").reset(seed=3)
    for key in first:
        assert np.array_equal(first[key], second[key])
    assert isinstance(info["instance"], Pretrained) and info["instance"].target_classes == 2
    truth = np.eye(2)[env.instance]
    _, reward, terminated, _, info = env.step(truth)
    assert terminated and reward == 1.0 and info["metrics"]["balanced_accuracy"] == 1.0
    env.reset(seed=3)
    _, reward, _, _, info = env.step(np.full((100, 2), 0.5))
    assert reward == 0.5 and not info["invalid_action"]


def test_the_multiclass_target_is_scored_by_balanced_accuracy():
    labels = np.array([0, 0, 0, 1, 2, 3])
    always_zero = np.tile([1.0, 0.0, 0.0, 0.0], (6, 1))
    metrics = classification_metrics(always_zero, labels)
    assert metrics["balanced_accuracy"] == pytest.approx(0.25)
    assert metrics["accuracy"] == pytest.approx(0.5)


def test_bad_answers_raise_or_fail_naming_the_shape():
    env = MILTransfer()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(100, 2\), expected \(100, 4\)"):
        env.step(np.full((100, 2), 0.5))
    _, reward, _, _, info = env.step(np.full((100, 4), np.nan))
    assert reward == 0.0 and info["invalid_action"] is True
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.full((100, 4), 0.5))  # rows sum to 2
    assert reward == 0.0 and info["invalid_action"] is True and info["metrics"]["invalid"] == 1


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"target": "lung"}, "target"), ({"train_size": 2}, "train_size"),
     ({"train_size": 40.0}, "train_size"), ({"size": "huge"}, "size")],
)  # fmt: skip
def test_bad_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MILTransfer(**kwargs)
    with pytest.raises(ValueError, match="init"):
        MILAgent(init="imagenet")


@pytest.mark.parametrize("aggregator", aggregators.AGGREGATORS)
def test_every_aggregator_maps_bags_to_logits_and_embeddings(aggregator):
    import torch

    model = aggregators.build(aggregator, 3, seed=0)
    assert 20_000 < aggregators.parameter_count(model) < 250_000
    bags = np.random.default_rng(0).standard_normal((5, 7, 64)).astype(np.float32)
    logits, streams = model(torch.from_numpy(bags))
    assert logits.shape == (5, 3) and (streams is None) == (aggregator != "dsmil")
    probabilities = aggregators.predict(model, bags)
    assert np.allclose(probabilities.sum(axis=1), 1.0)
    assert aggregators.embed(model, bags).shape[0] == 5
    model.new_head(6)
    assert model(torch.from_numpy(bags))[0].shape == (5, 6)


def test_training_from_scratch_learns():
    env = MILTransfer(target="cross-organ", train_size=120)
    observation, info = env.reset(seed=1)
    untrained = MeanMILAgent(epochs=0).act(observation, info)
    trained = MeanMILAgent(epochs=15).act(observation, info)
    _, before, _, _, _ = env.step(untrained)
    env.reset(seed=1)
    _, after, _, _, _ = env.step(trained)
    assert after > before + 0.3 and after > 0.7


def test_the_probe_answers_probabilities_even_with_one_class():
    model = aggregators.build("abmil", 2, seed=0)
    rng = np.random.default_rng(0)
    bags = rng.standard_normal((6, 5, 64)).astype(np.float32)
    out = probe(model, bags, np.array([0, 1, 0, 1, 2, 2]), bags, classes=4)
    assert out.shape == (6, 4) and np.allclose(out.sum(axis=1), 1.0) and (out[:, 3] == 0).all()
    single = probe(model, bags, np.zeros(6, dtype=int), bags, classes=2)
    assert (single[:, 0] == 1.0).all()


@pytest.fixture
def tiny_fixtures(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(slides, "PRETRAIN_BAGS", 100)
    monkeypatch.setattr(slides, "PRETRAIN_INSTANCES", 16)
    monkeypatch.setattr(aggregators, "PRETRAIN_EPOCHS", 2)
    for cached in (aggregators.pretrained, aggregators.pretraining_set):
        cached.cache_clear()
    yield tmp_path
    for cached in (aggregators.pretrained, aggregators.pretraining_set):
        cached.cache_clear()


def test_fixtures_are_cached_as_arrays_and_transfer_with_a_new_head(tiny_fixtures):
    state = aggregators.pretrained("dsmil", "pan-organ")
    files = list((tiny_fixtures / "omnigym" / "mil").glob("dsmil-pan-organ-*.npz"))
    assert len(files) == 1
    with np.load(files[0], allow_pickle=False) as saved:
        assert set(saved) == set(state)
    aggregators.pretrained.cache_clear()
    again = aggregators.pretrained("dsmil", "pan-organ")
    assert all(np.array_equal(again[k], state[k]) for k in state)
    assert state["instance_head.weight"].shape == (20, aggregators.HIDDEN)
    env = MILTransfer(target="shift")
    observation, info = env.reset(seed=0)
    for mode in ("finetune", "probe"):
        answer = DSMILAgent(init="pan-organ", mode=mode, epochs=1).act(observation, info)
        env.reset(seed=0)
        _, reward, _, _, info = env.step(answer)
        assert not info["invalid_action"] and 0.0 <= reward <= 1.0
        observation, info = env.reset(seed=0)


def test_agents_are_deterministic_for_a_seed():
    env = MILTransfer(target="shift")
    observation, info = env.reset(seed=4)
    first = ABMILAgent(seed=2, epochs=2).act(observation, info)
    second = ABMILAgent(seed=2, epochs=2).act(observation, info)
    assert np.array_equal(first, second)


# ---- claims ----------------------------------------------------------------------------------

#: agent label → score at (the fewest, the most) target slides.
PAPER_LIKE = {
    **{f"{a} scratch finetune": (0.6, 0.85) for a in ("abmil", "transmil", "dsmil")},
    **{f"{a} pan-organ finetune": (0.8, 0.9) for a in ("abmil", "transmil", "dsmil")},
    **{f"{a} single-organ finetune": (0.7, 0.88) for a in ("abmil", "transmil", "dsmil")},
    "mean-mil scratch finetune": (0.7, 0.8),
    "mean-mil pan-organ finetune": (0.75, 0.82),
    "mean-mil single-organ finetune": (0.72, 0.8),
    "max-mil scratch finetune": (0.6, 0.8),
    "max-mil pan-organ finetune": (0.7, 0.85),
    "max-mil single-organ finetune": (0.65, 0.8),
    "abmil pan-organ probe": (0.7, 0.7),
}


def _records(table, targets=("same-organ", "cross-organ", "shift"), sizes=(40, 320)):
    rng = np.random.default_rng(0)
    records = []
    for target in targets:
        for column, size in enumerate(sizes):
            for seed in range(5):
                wobble = 0.01 * rng.standard_normal()
                for agent, scores in table.items():
                    value = scores[column] + wobble
                    records.append({"env_id": f"{target} n={size}", "agent": agent,
                                    "seed": seed, "episode": 0, "return": value,
                                    "metrics": {"score": value}})  # fmt: skip
    return records


def _statuses(records):
    run = Run(load_scenario(SCENARIO), {}, RunFolder(Path("unused")), {}, records)
    return [entry["status"] for entry in check(run)]


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    assert _statuses(_records(PAPER_LIKE)) == ["pass"] * 4 + ["recorded"]


def test_each_claim_fails_when_its_pattern_breaks():
    hurt = {**PAPER_LIKE, "transmil pan-organ finetune": (0.55, 0.9)}
    assert _statuses(_records(hurt))[0] == "fail"
    narrow = {
        **PAPER_LIKE,
        **{f"{a} single-organ finetune": (0.85, 0.95) for a in ("abmil", "transmil", "dsmil")},
    }
    assert _statuses(_records(narrow))[1] == "fail"
    widening = {
        **PAPER_LIKE,
        **{f"{a} pan-organ finetune": (0.8, 0.99) for a in ("abmil", "transmil", "dsmil")},
        **{f"{a} scratch finetune": (0.7, 0.6) for a in ("abmil", "transmil", "dsmil")},
    }
    assert _statuses(_records(widening))[2] == "fail"
    mean_gains = {**PAPER_LIKE, "mean-mil pan-organ finetune": (0.99, 0.99)}
    assert _statuses(_records(mean_gains))[3] == "fail"


def test_claims_are_not_run_without_their_envs_or_agents():
    assert _statuses([]) == ["not run"] * 5
    one_size = _statuses(_records(PAPER_LIKE, sizes=(40,)))
    assert one_size[2] == "not run" and one_size[0] == "pass"
    no_cross = _statuses(_records(PAPER_LIKE, targets=("shift",)))
    assert no_cross[1] == "not run"
