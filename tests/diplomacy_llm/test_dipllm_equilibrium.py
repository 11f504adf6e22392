"""DipLLM's equilibrium fine-tuning (docs/diplomacy.md): the target π* ∝ π_base·exp(Q/λ), the
loss toward it under both heads, the published loss moving probability to the higher-Q candidate
where the behaviour-weighted ablation cannot, and the Q estimation's rollout bots and noise."""

import math

import numpy as np
import pytest

pytest.importorskip("diplomacy")
torch = pytest.importorskip("torch")

from omnigym.llm_agents import dipllm  # noqa: E402
from omnigym.llm_agents.dipllm import (  # noqa: E402
    Dataset,
    DipLLMAgent,
    ModelConfig,
    QConfig,
    TrainConfig,
    equilibrium_policy,
    equilibrium_targets,
    estimate_q,
    factorised_logits,
    factorised_loss,
    q_noise,
    rollout_tasks,
    train,
)
from omnigym.threads import one_torch_thread  # noqa: E402

TINY = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32, "max_len": 256}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with one_torch_thread():
        yield


# ---- the target ----------------------------------------------------------------------------


def test_equilibrium_policy_is_base_times_exp_q_over_lambda():
    base, q = [0.6, 0.3, 0.1], [0.0, 1.0, -1.0]
    raw = np.array([0.6, 0.3 * math.exp(2.0), 0.1 * math.exp(-2.0)])  # λ = 0.5
    assert equilibrium_policy(base, q, 0.5) == pytest.approx(raw / raw.sum())
    assert equilibrium_policy([6.0, 3.0, 1.0], q, 0.5) == pytest.approx(raw / raw.sum())
    assert equilibrium_policy(base, q, math.inf) == pytest.approx(base)
    assert equilibrium_policy(base, q, 1e-3) == pytest.approx([0.0, 1.0, 0.0], abs=1e-9)
    assert equilibrium_policy([0.0, 1.0], [5.0, 0.0], 1.0)[0] > 0  # an underflowed base counts
    with pytest.raises(ValueError, match="base"):
        equilibrium_policy([0.5, 0.5], [1.0, 2.0, 3.0], 1.0)


def two_candidate_group(dataset):
    """A hand-built group on the first decision with at least three choices: the behaviour's
    order valued 0, another legal order valued 1 (so at least one choice is no candidate)."""
    turn = next(t for t in dataset.turns if t.adjust == 0 and len(t.legal[0]) >= 3)
    behaviour = dataset.orders[turn.chosen[0]]
    other = next(dataset.orders[o] for o in turn.legal[0].tolist() if o != turn.chosen[0])
    group = {
        "game": turn.key[0],
        "phase_index": turn.key[1],
        "power": turn.key[2],
        "location": turn.locations[0],
        "behaviour": behaviour,
        "candidates": [behaviour, other],
        "q": [0.0, 1.0],
    }
    return turn, group, dataset.order_id(other)


def candidate_probabilities(model, dataset, turn, orders):
    with torch.no_grad():
        logits, decisions = factorised_logits(model, dataset, [turn])
    probabilities = torch.softmax(logits[0], dim=-1)
    options = decisions[0][0].tolist()
    return [float(probabilities[options.index(order)]) for order in orders]


def test_the_loss_is_the_cross_entropy_toward_the_equilibrium_target(pure_data, pure_tokenizer):
    dataset = Dataset.load(pure_data, pure_tokenizer, games=2)
    turn, group, other = two_candidate_group(dataset)
    model = dipllm.build_model(ModelConfig(**TINY), len(pure_tokenizer), seed=0)
    assert dataset.set_groups([group]) == 1
    assert turn.weights.tolist() == [1.0] + [0.0] * (len(turn.locations) - 1)
    shift = equilibrium_targets(model, dataset, lam=0.5)
    base = np.array(candidate_probabilities(model, dataset, turn, [turn.chosen[0], other]))
    expected = base / base.sum() * np.array([1.0, math.exp(2.0)])
    assert turn.targets[0] == pytest.approx(expected / expected.sum())
    assert shift == pytest.approx(0.5 * np.abs(turn.targets[0] - base / base.sum()).sum())
    with torch.no_grad():
        logits, decisions = factorised_logits(model, dataset, [turn])
        log_p = torch.log_softmax(logits[0], dim=-1)
        options = decisions[0][0].tolist()
        by_hand = -sum(
            mass * float(log_p[options.index(order)])
            for order, mass in zip([turn.chosen[0], other], turn.targets[0], strict=True)
        )
        assert float(factorised_loss(model, dataset, [turn])) == pytest.approx(by_hand, rel=1e-5)


def fine_tune(model, dataset, updates=40):
    dataset.keep_weighted()
    return train(model, dataset, TrainConfig(updates=updates, batch_size=1, lr=1e-2, seed=0))


def fresh_two_candidate_case(pure_data, pure_tokenizer):
    """The two-candidate group of the first two games on a fresh tiny factorised model, with
    the model's probabilities of the behaviour's order and the other candidate before training."""
    dataset = Dataset.load(pure_data, pure_tokenizer, games=2)
    turn, group, other = two_candidate_group(dataset)
    model = dipllm.build_model(ModelConfig(**TINY), len(pure_tokenizer), seed=0)
    before = candidate_probabilities(model, dataset, turn, [turn.chosen[0], other])
    return dataset, turn, group, other, model, before


def test_the_published_loss_moves_probability_to_the_higher_q_candidate(pure_data, pure_tokenizer):
    dataset, turn, group, other, model, before = fresh_two_candidate_case(pure_data, pure_tokenizer)
    behaviour, before_other = turn.chosen[0], before[1]
    dataset.set_groups([group])
    equilibrium_targets(model, dataset, lam=0.5)
    target_other = float(turn.targets[0][1])
    assert target_other > 0.8  # the higher Q and e² ≈ 7.4 times the base odds
    fine_tune(model, dataset)
    after_behaviour, after_other = candidate_probabilities(model, dataset, turn, [behaviour, other])
    assert after_other > before_other + 0.3
    assert after_other > after_behaviour
    # The candidates take the location's mass, shared as the target shares it.
    assert after_behaviour + after_other > 0.95
    assert after_other / (after_behaviour + after_other) == pytest.approx(target_other, abs=0.05)


def test_the_behaviour_weighted_ablation_cannot_move_probability_to_another_candidate(
    pure_data, pure_tokenizer
):
    dataset, turn, group, other, model, before = fresh_two_candidate_case(pure_data, pure_tokenizer)
    behaviour, (before_behaviour, before_other) = turn.chosen[0], before
    assert dataset.set_weights([group], lam=0.5, default=0.0) == 1
    assert turn.weights[0] == pytest.approx(2 / (1 + math.exp(2.0)))  # low, but positive
    fine_tune(model, dataset)
    after_behaviour, after_other = candidate_probabilities(model, dataset, turn, [behaviour, other])
    assert after_behaviour > before_behaviour and after_other < before_other
    assert after_other < after_behaviour


def test_the_joint_head_moves_probability_to_the_higher_q_candidates_joint_action(
    pure_data, pure_tokenizer
):
    dataset = Dataset.load(pure_data, pure_tokenizer, games=2)
    turn, group, other = two_candidate_group(dataset)
    model = dipllm.build_model(ModelConfig(**TINY, head="joint"), len(pure_tokenizer), seed=0)
    dataset.set_groups([group])
    joints, places = dipllm.candidate_joints(turn)
    assert joints[0] == turn.chosen and joints[1] == [other, *turn.chosen[1:]]
    assert places == {0: [0, 1]}

    def joint_probabilities():
        with torch.no_grad():
            logits, _ = dipllm.losses.candidate_joint_logits(model, dataset, turn)
        return torch.softmax(logits, dim=-1).tolist()

    before = joint_probabilities()
    equilibrium_targets(model, dataset, lam=0.5)
    expected = np.array(before) * np.array([1.0, math.exp(2.0)])
    assert turn.targets[0] == pytest.approx(expected / expected.sum())
    dataset.keep_weighted()
    train(model, dataset, TrainConfig(updates=40, batch_size=1, lr=1e-2, joint_candidates=8))
    after = joint_probabilities()
    assert after[1] > before[1] and after[1] > after[0]


def test_an_agent_fine_tunes_toward_the_equilibrium_target_by_default(tmp_path, pure_data):
    tasks = rollout_tasks(pure_data, QConfig(rollouts=1, top_k=1, horizon_years=1, groups=3))
    estimate_q(tasks, tmp_path / "q.jsonl")
    agent = DipLLMAgent(seed=0, map_name="pure", model=TINY, batch_size=4, lam=0.5, finetune=2)
    stats = agent.learn(pure_data, 2, q=tmp_path / "q.jsonl")
    assert stats["finetune_target"] == "equilibrium" and stats["q_weighted"] == 3
    assert 0.0 <= stats["target_shift"] <= 1.0
    agent.save(tmp_path / "ckpt")
    assert DipLLMAgent(checkpoint=tmp_path / "ckpt").finetune_target == "equilibrium"
    ablation = DipLLMAgent(
        map_name="pure", model=TINY, lam=0.5, finetune=2, finetune_target="behaviour"
    )
    assert ablation.learn(pure_data, 1, q=tmp_path / "q.jsonl")["target_shift"] is None
    with pytest.raises(ValueError, match="finetune_target"):
        DipLLMAgent(map_name="pure", finetune_target="search")


# ---- Q: candidates, rollout bots, noise ----------------------------------------------------


@pytest.mark.parametrize("continuation", ["data", "greedy"])
def test_rollouts_are_continued_by_the_named_bots(tmp_path, pure_data, monkeypatch, continuation):
    made = []

    def recording(name, seed):
        made.append(name)
        return dipllm.data.make_bot(name, seed)

    monkeypatch.setattr(dipllm.q, "make_bot", recording)
    config = QConfig(rollouts=2, top_k=1, horizon_years=1, groups=2, continuation=continuation)
    tasks = rollout_tasks(pure_data, config)
    groups = estimate_q(tasks, tmp_path / "q.jsonl")
    if continuation == "greedy":
        assert set(made) == {"greedy"}
    else:
        assert made == [name for task in tasks for _ in range(4) for name in task.bots.values()]
    for group in groups:
        assert group["continuation"] == continuation
        assert np.shape(group["values"]) == (2, 2)
        assert group["q"] == pytest.approx(np.mean(group["values"], axis=1))


def test_q_noise_reports_standard_errors_spread_and_top_changes():
    groups = [
        {"values": [[1, 1, 3, 3], [0, 0, 0, 0]]},  # halves agree: candidate 0 is best
        {"values": [[2, 0], [0, 2]]},  # halves disagree
        {"values": [[1, 1], [1, 1]]},  # every candidate alike: no order to change
        {"values": [[1], [0]]},  # one rollout: no noise estimate, left out
    ]
    noise = q_noise(groups, lam=1.0)
    sd_first = np.std([1, 1, 3, 3], ddof=1)
    assert noise["groups"] == 3
    assert noise["top_change"] == pytest.approx(1 / 3)
    assert noise["flat"] == pytest.approx(2 / 3)  # the second group's Q ties too: [1, 1]
    assert noise["sd"] == pytest.approx((sd_first / 2 + np.sqrt(2) + 0) / 3)
    assert noise["se"] == pytest.approx((sd_first / 4 + 1 + 0) / 3)
    assert noise["se_difference"] == pytest.approx((sd_first / 2 + 2 + 0) / 3)
    assert noise["spread"] == pytest.approx((np.sqrt(2) + 0 + 0) / 3)

    def tv(first, second):  # between the halves' targets, uniform π_base, λ = 1
        p, q = np.exp(first), np.exp(second)
        return 0.5 * np.abs(p / p.sum() - q / q.sum()).sum()

    expected_tv = (tv([1, 0], [3, 0]) + tv([2, 0], [0, 2]) + 0) / 3
    assert noise["target_tv"] == pytest.approx(expected_tv)
    assert q_noise([{"values": [[1]]}], lam=1.0) == {"groups": 0}
