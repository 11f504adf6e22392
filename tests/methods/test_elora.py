"""ELoRA: low-rank adaptation of an equivariant interatomic potential (docs/methods.md).

The pretrained potential is built once (about a minute and a half of one core), then cached."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.agents.methods.elora import (
    ELoRAAgent,
    FullFineTuneAgent,
    NaiveLoRAAgent,
    ReadoutOnlyAgent,
    add_path_lora,
    predictions,
)
from omnigym.envs.methods import potential
from omnigym.envs.methods.elora import EquivariantFineTuning
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.elora import check

ENV_ID = "Methods/EquivariantFineTuning-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "elora.yaml"
FAST = {"steps": 40}


def _play(agent, seed=0, **kwargs):
    env = EquivariantFineTuning(**kwargs)
    observation, info = env.reset(seed=seed)
    _, reward, terminated, _, info = env.step(agent.act(observation, info))
    assert terminated
    return reward, info["metrics"]


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space["train_positions"].shape == (10, 12, 3)
    assert env.action_space["forces"].shape == (40, 12, 3)
    paper = omnigym.make(ENV_ID, size="paper", train_size=50, rotations=2)
    assert paper.action_space["energies"].shape == (600,)


def test_clusters_are_compact_fcc_fragments_labelled_by_emt():
    data = potential.clusters(np.random.default_rng(0), 5, "Au", rattle=0.0, strain=0.0)
    for positions, mask in zip(data.positions, data.mask, strict=True):
        atoms = positions[mask.astype(bool)]
        assert 8 <= len(atoms) <= 12 and np.allclose(atoms.mean(axis=0), 0.0)
        gaps = np.linalg.norm(atoms[:, None] - atoms[None], axis=-1) + 10 * np.eye(len(atoms))
        assert gaps.min() == pytest.approx(4.08 / np.sqrt(2))  # the FCC nearest-neighbour distance
    forces = data.forces[data.mask.astype(bool)]
    assert np.allclose(forces.sum(axis=0), 0.0, atol=1e-8)  # no net force on a free cluster


def test_rotated_copies_carry_rotated_positions_and_forces():
    env = EquivariantFineTuning(rotations=2)
    observation, _ = env.reset(seed=1)
    instance = env.instance
    test = instance.test
    assert len(instance.copies) == 40 and np.array_equal(instance.originals[:20], np.arange(20))
    for copy, original, rotation in zip(
        instance.copies, instance.originals, instance.rotations, strict=True
    ):
        assert np.allclose(test.positions[copy], test.positions[original] @ rotation.T)
        assert np.allclose(test.forces[copy], test.forces[original] @ rotation.T)
        assert test.energies[copy] == test.energies[original]
    assert np.array_equal(observation["test_positions"], test.positions)


def test_the_true_labels_score_zero_and_an_unrotated_answer_scores_its_equivariance_gap():
    env = EquivariantFineTuning()
    env.reset(seed=2)
    test = env.instance.test
    _, reward, _, _, info = env.step({"energies": test.energies, "forces": test.forces})
    metrics = info["metrics"]
    assert reward == 0.0 and metrics["energy_mae_per_atom"] == 0.0
    assert metrics["equivariance_error"] < 1e-10
    env.reset(seed=2)
    broken = test.forces.copy()
    broken[env.instance.copies] = test.forces[env.instance.originals]  # ignore the rotation
    _, reward, _, _, info = env.step({"energies": test.energies, "forces": broken})
    assert reward < 0 and info["metrics"]["equivariance_error"] > 0.1


def test_non_finite_answers_fail_and_wrong_shapes_raise_naming_them():
    env = EquivariantFineTuning()
    env.reset(seed=0)
    forces = np.zeros((40, 12, 3))
    _, reward, _, _, info = env.step({"energies": np.full(40, np.nan), "forces": forces})
    assert reward == -10.0 and info["invalid_action"] is True
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(40, 12\), expected \(40, 12, 3\)"):
        env.step({"energies": np.zeros(40), "forces": np.zeros((40, 12))})


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"target": "Fe"}, "target"), ({"train_size": 0}, "train_size"),
     ({"rotations": 0}, "rotations"), ({"size": "huge"}, "size")],
)  # fmt: skip
def test_bad_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        EquivariantFineTuning(**kwargs)


def test_the_pretrained_potential_is_equivariant_and_fits_cu_better_than_au():
    instance = EquivariantFineTuning().pretrained
    model = instance.model()
    from scipy.spatial.transform import Rotation

    data = potential.clusters(np.random.default_rng(5), 6, "Cu", 0.1, 0.03)
    rotation = Rotation.random(random_state=0).as_matrix()
    plain = predictions(model, data.positions, data.mask)
    turned = predictions(model, data.positions @ rotation.T, data.mask)
    assert np.max(np.abs(turned["forces"] - plain["forces"] @ rotation.T)) < 1e-5
    assert np.allclose(turned["energies"], plain["energies"], atol=1e-4)
    real = data.mask.astype(bool)
    cu_error = np.abs(plain["forces"] - data.forces)[real].mean()
    gold = potential.clusters(np.random.default_rng(5), 6, "Au", 0.1, 0.03)
    au = predictions(model, gold.positions, gold.mask)
    assert cu_error < 0.5 * np.abs(au["forces"] - gold.forces)[gold.mask.astype(bool)].mean()


def test_path_wise_updates_start_at_zero_follow_each_instruction_and_leave_the_base_frozen():
    model = EquivariantFineTuning().pretrained.model()
    before = {name: value.clone() for name, value in model.state_dict().items()}
    parameters = add_path_lora(model, rank=4, alpha=4.0, seed=0)
    readout = model.readout
    paths = readout.parametrizations.weight[0]
    assert [tuple(a.shape) for a in paths.a] == [
        (instruction.path_shape[0], 1) for instruction in readout.instructions
    ]
    assert all(not p.requires_grad for name, p in model.named_parameters() if "original" in name)
    assert all(p.requires_grad for p in parameters) and len(parameters) > 0
    for name, value in model.state_dict().items():
        if name in before:
            assert (value == before[name]).all()


def test_elora_keeps_equivariance_and_naive_lora_breaks_it():
    _, elora = _play(ELoRAAgent(**FAST))
    _, naive = _play(NaiveLoRAAgent(**FAST))
    assert elora["equivariance_error"] < 1e-5
    assert naive["equivariance_error"] > 1e-3


def test_fine_tuning_beats_the_pretrained_potential_and_the_read_out_alone():
    zero_steps = ReadoutOnlyAgent(steps=1, learning_rate=1e-12)
    _, untouched = _play(zero_steps, train_size=20)
    _, readout = _play(ReadoutOnlyAgent(**FAST), train_size=20)
    _, elora = _play(ELoRAAgent(**FAST), train_size=20)
    _, full = _play(FullFineTuneAgent(**FAST), train_size=20)
    assert elora["force_mae"] < readout["force_mae"] <= untouched["force_mae"] + 1e-6
    assert full["force_mae"] < readout["force_mae"]


def test_agents_are_deterministic_for_a_seed():
    first = ELoRAAgent(seed=3, **FAST)
    second = ELoRAAgent(seed=3, **FAST)
    env = EquivariantFineTuning()
    observation, info = env.reset(seed=4)
    assert np.array_equal(
        first.act(observation, info)["forces"], second.act(observation, info)["forces"]
    )


# ---- claims ----------------------------------------------------------------------------------

PAPER_LIKE = {  # agent -> (force MAE, equivariance error)
    "elora": (0.10, 2e-6),
    "full-finetune": (0.12, 2e-6),
    "naive-lora": (0.11, 5e-2),
    "readout-only": (0.30, 1e-6),
    "from-scratch": (0.40, 1e-6),
}


def _records(table, sizes=(20, 50)):
    rng = np.random.default_rng(0)
    records = []
    for size in sizes:
        for seed in (0, 1, 2):
            wobble = 0.005 * rng.standard_normal()
            for agent, (force, equivariance) in table.items():
                metrics = {"force_mae": force + wobble, "energy_mae_per_atom": 0.01,
                           "equivariance_error": equivariance}  # fmt: skip
                records.append({"env_id": f"Au n={size}", "agent": agent, "seed": seed,
                                "episode": 0, "return": -force, "metrics": metrics})  # fmt: skip
    return records


def _statuses(records):
    run = Run(load_scenario(SCENARIO), {}, RunFolder(Path("unused")), {}, records)
    return [entry["status"] for entry in check(run)]


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    assert _statuses(_records(PAPER_LIKE)) == ["pass"] * 3 + ["recorded"]


def test_each_claim_fails_when_its_pattern_breaks():
    worse = {**PAPER_LIKE, "elora": (0.13, 2e-6)}
    assert _statuses(_records(worse))[0] == "fail"
    kept = {**PAPER_LIKE, "naive-lora": (0.11, 5e-4)}
    assert _statuses(_records(kept))[1] == "fail"
    leaky = {**PAPER_LIKE, "elora": (0.10, 3e-5)}
    assert _statuses(_records(leaky))[1] == "fail"
    fitted = {**PAPER_LIKE, "readout-only": (0.115, 1e-6)}
    assert _statuses(_records(fitted))[2] == "fail"


def test_claims_are_not_run_without_their_agents():
    assert _statuses([]) == ["not run"] * 4
    only = {agent: PAPER_LIKE[agent] for agent in ("elora", "readout-only")}
    assert _statuses(_records(only)) == ["not run", "not run", "not run", "recorded"]
