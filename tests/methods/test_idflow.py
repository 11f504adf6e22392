"""IDFlow: energy-based flow matching for 3-D structures (docs/methods.md)."""

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scipy.spatial.transform import Rotation

import omnigym
from omnigym.agents.methods import idflow as flow
from omnigym.agents.methods.idflow import FlowMatchingAgent, sample, train
from omnigym.agents.methods.idflow import Settings as FlowSettings
from omnigym.envs.methods.idflow import (
    MoleculeGeneration,
    angles,
    bond_lengths,
    chain_topology,
    chains,
    conformer_pool,
    dihedrals,
    kabsch_rmsd,
    molecule_topology,
    molecules,
    rdkit_accepts,
)
from omnigym.evaluators.experiment import Run, RunFolder
from omnigym.scenario import load_scenario
from omnigym.scenarios.claims.idflow import check

ENV_ID = "Methods/MoleculeGeneration-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "idflow.yaml"
OCTANE = "CCCCCCCC"
#: The learning test's training: 150 steps at learning rate 1e-2 took flow matching's bond error
#: at NFE 10 from the untrained EGNN's 1.94 to 0.26 (draw 0).
STEPS, LEARNING_RATE = 150, 1e-2


def test_the_registered_id_makes_a_small_env_that_passes_check_env():
    env = omnigym.make(ENV_ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space["train"].shape == (2000, 8, 3)
    assert env.action_space.shape == (200, 8, 3)
    assert omnigym.make(ENV_ID, size="paper").action_space.shape == (2000, 8, 3)


def test_chains_have_the_generator_s_bonds_angles_and_dihedrals():
    x = chains(np.random.default_rng(0), 4000)
    topology = chain_topology()
    assert np.allclose(x.mean(axis=1), 0.0)
    bonds = bond_lengths(x, topology.bonds)
    assert bonds.mean() == pytest.approx(1.5, abs=0.002)
    assert bonds.std() == pytest.approx(0.02, abs=0.002)
    bends = angles(x, topology.triples).ravel()
    assert np.mean(np.abs(bends - 110) < 12) == pytest.approx(0.5, abs=0.03)
    assert np.mean(np.abs(bends - 150) < 12) == pytest.approx(0.5, abs=0.03)
    twists = dihedrals(x, topology.quads).ravel()
    near = [np.mean(np.abs((twists - mode + 180) % 360 - 180) < 35) for mode in (-60, 60, 180)]
    assert near == pytest.approx([1 / 3] * 3, abs=0.03)


def test_kabsch_rmsd_of_a_rotated_and_shifted_copy_is_zero():
    x = chains(np.random.default_rng(1), 3)
    turn = Rotation.random(3, random_state=2).as_matrix()
    moved = np.einsum("nai,nji->naj", x, turn) + 4.0
    assert np.allclose(kabsch_rmsd(x, moved), 0.0, atol=1e-6)  # sqrt of a cancelled difference
    mirrored = x * np.array([1.0, 1.0, -1.0])
    assert np.all(kabsch_rmsd(x, mirrored) > 0.1)  # a reflection is not a rotation


def test_held_out_structures_are_valid_and_a_collapsed_answer_is_not():
    env = MoleculeGeneration()
    observation, _ = env.reset(seed=0)
    truth = env.instance.held_out[:200]
    _, reward, _, _, info = env.step(truth)
    metrics = info["metrics"]
    assert reward == pytest.approx(1.0, abs=0.001) and metrics["bond_error"] < 0.03
    assert metrics["angle_w1"] < 3.0 and metrics["dihedral_w1"] < 10.0
    assert metrics["diversity"] == pytest.approx(metrics["held_out_diversity"], rel=0.1)
    env.reset(seed=0)
    collapsed = np.repeat(truth[:1], 200, axis=0)
    _, reward, _, _, info = env.step(collapsed)
    assert reward == 1.0 and info["metrics"]["diversity"] == pytest.approx(0.0, abs=1e-6)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(truth * 1.2)
    assert reward == 0.0 and info["metrics"]["bond_error"] == pytest.approx(0.3, abs=0.01)


def test_non_finite_answers_fail_and_wrong_shapes_raise_naming_them():
    env = MoleculeGeneration()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.full((200, 8, 3), np.inf))
    assert reward == 0.0 and info["invalid_action"] is True
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(200, 7, 3\), expected \(200, 8, 3\)"):
        env.step(np.zeros((200, 7, 3)))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"dataset": "proteins"}, "dataset"), ({"nfe": 0}, "nfe"), ({"molecule": "CCC"}, "molecule"),
     ({"dataset": "conformers", "molecule": "C1CC"}, "molecule"), ({"size": "huge"}, "size")],
)  # fmt: skip
def test_bad_arguments_raise_value_errors_naming_them(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MoleculeGeneration(**kwargs)


def test_conformers_are_aligned_heavy_atom_structures_rdkit_accepts():
    assert next(iter(molecules())) == OCTANE and len(molecules()) >= 8
    pool = conformer_pool(OCTANE)
    assert pool.shape == (3000, 8, 3) and np.allclose(pool.mean(axis=1), 0.0)
    topology = molecule_topology(OCTANE)
    assert len(topology.bonds) == 7 and len(topology.triples) == 6 and len(topology.quads) == 5
    assert bond_lengths(pool, topology.bonds).mean() == pytest.approx(1.53, abs=0.01)
    assert rdkit_accepts(OCTANE, pool[:50]).all()
    torsions = np.round(dihedrals(pool, topology.quads) / 30.0)
    assert len(np.unique(torsions, axis=0)) >= 20  # many distinct conformers, not one repeated
    broken = pool[:5].copy()
    broken[:, 7] = broken[:, 6] + 3.0  # the last carbon pulled away
    assert not rdkit_accepts(OCTANE, broken).any()
    aligned = kabsch_rmsd(pool[:20], np.repeat(pool[:1], 20, axis=0))
    assert np.allclose(
        aligned, np.sqrt(((pool[:20] - pool[:1]) ** 2).sum(-1).mean(-1)), atol=1e-6
    )  # already in the first conformer's frame


def test_the_conformer_env_reports_rdkit_acceptance():
    env = MoleculeGeneration(dataset="conformers")
    env.reset(seed=3)
    _, reward, _, _, info = env.step(env.instance.held_out[:200])
    assert reward == 1.0 and info["metrics"]["rdkit_valid"] == 1.0


def test_paper_size_conformers_split_the_pool_and_keep_a_held_out_set():
    env = MoleculeGeneration(dataset="conformers", size="paper", nfe=5)
    observation, _ = env.reset(seed=0)
    assert observation["train"].shape == (2400, 8, 3) and len(env.instance.held_out) == 600
    assert env.observation_space.contains(observation)
    _, _, _, _, info = env.step(np.repeat(env.instance.held_out[:1], 2000, axis=0))
    assert np.isfinite(info["metrics"]["angle_w1"]) and np.isfinite(info["metrics"]["dihedral_w1"])


def test_refinement_counts_in_the_budget_and_the_last_step_lands_on_the_prediction():
    import torch

    class Counter(torch.nn.Module):
        calls = 0

        def forward(self, x, t):
            Counter.calls += 1
            return torch.ones_like(x)

    out = sample(Counter(), 2.0, 4, 8, nfe=10, refine=True, seed=0)
    assert Counter.calls == 10 and np.allclose(out, 2.0)
    Counter.calls = 0
    sample(Counter(), 1.0, 4, 8, nfe=5, refine=False, seed=0)
    assert Counter.calls == 5


def test_the_egnn_is_equivariant_to_rotations_reflections_and_translations():
    import torch

    torch.manual_seed(0)
    network = flow.NETWORKS["egnn"](8, FlowSettings()).double()
    x = torch.randn(6, 8, 3, dtype=torch.float64)
    t = torch.rand(6, dtype=torch.float64)
    for turn in (Rotation.random(random_state=1).as_matrix(), np.diag([1.0, 1.0, -1.0])):
        turn = torch.tensor(turn)
        shift = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)
        moved = network((x @ turn.T + shift).reshape(6, -1), t).reshape(6, 8, 3)
        expected = network(x.reshape(6, -1), t).reshape(6, 8, 3) @ turn.T + shift
        assert torch.allclose(moved, expected, atol=1e-5)


def test_the_noise_is_rotated_onto_the_data():
    import torch

    x1 = torch.tensor(chains(np.random.default_rng(5), 4), dtype=torch.float32)
    x0 = flow._centred_noise(x1.shape, torch.Generator().manual_seed(0))
    turned = flow._rotated_onto(x0, x1)
    assert np.allclose(turned.norm(dim=(1, 2)), x0.norm(dim=(1, 2)), atol=1e-5)
    assert torch.allclose(turned.mean(dim=1), torch.zeros(4, 3), atol=1e-6)
    gap = ((turned - x1) ** 2).sum(dim=(1, 2))
    best = kabsch_rmsd(x0.double().numpy(), x1.double().numpy()) ** 2 * 8
    assert np.allclose(gap.numpy(), best, rtol=1e-4)  # the least-squares rotation


def test_training_fits_bonds_far_better_than_the_untrained_network():
    import torch

    env = MoleculeGeneration(nfe=10)
    observation, info = env.reset(seed=0)
    agent = FlowMatchingAgent(env, steps=STEPS, learning_rate=LEARNING_RATE)
    agent.reset(0)
    _, _, _, _, info = env.step(agent.act(observation, info))
    trained = info["metrics"]
    structures = observation["train"]
    scale = float((structures - structures.mean(axis=1, keepdims=True)).std())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        untrained = flow.NETWORKS["egnn"](8, agent.settings)
    env.reset(seed=0)
    _, _, _, _, info = env.step(sample(untrained, scale, 200, 8, nfe=10, refine=False, seed=0))
    assert trained["bond_error"] < 0.3 * info["metrics"]["bond_error"]


def test_an_agent_trains_once_per_draw_and_is_deterministic_for_a_seed():
    structures = chains(np.random.default_rng(4), 300)
    settings = FlowSettings(steps=10)
    first = train(structures, settings, seed=1)
    assert train(structures, settings, seed=1) is first
    a = sample(*first, 10, 8, nfe=4, refine=True, seed=2)
    assert np.array_equal(a, sample(*first, 10, 8, nfe=4, refine=True, seed=2))
    flow._MODELS.clear()
    again = train(structures, settings, seed=1)
    assert again is not first
    assert np.array_equal(a, sample(*again, 10, 8, nfe=4, refine=True, seed=2))
    other = train(structures, settings, seed=2)
    assert not np.array_equal(a, sample(*other, 10, 8, nfe=4, refine=True, seed=2))


def test_the_mlp_stays_selectable_and_an_unknown_network_raises():
    structures = chains(np.random.default_rng(6), 100)
    model = train(structures, FlowSettings(network="mlp", hidden=16, steps=5), seed=0)
    assert np.isfinite(sample(*model, 10, 8, nfe=4, refine=True, seed=0)).all()
    with pytest.raises(ValueError, match="network"):
        FlowSettings(network="transformer")


# ---- claims ----------------------------------------------------------------------------------

PAPER_LIKE = {  # nfe -> agent -> (bond error, valid fraction, diversity)
    5: {"idflow": (0.05, 0.80, 2.0), "flow-matching": (0.12, 0.40, 2.05),
        "idflow-train-only": (0.08, 0.6, 2.0), "idflow-sample-only": (0.09, 0.55, 2.0)},
    10: {"idflow": (0.04, 0.90, 2.0), "flow-matching": (0.07, 0.70, 2.02),
         "idflow-train-only": (0.05, 0.8, 2.0), "idflow-sample-only": (0.06, 0.75, 2.0)},
    20: {"idflow": (0.03, 0.95, 2.0), "flow-matching": (0.035, 0.93, 2.0),
         "idflow-train-only": (0.03, 0.94, 2.0), "idflow-sample-only": (0.03, 0.94, 2.0)},
}  # fmt: skip


def _records(table, dataset="chains"):
    rng = np.random.default_rng(0)
    records = []
    for nfe, agents in table.items():
        for seed in (0, 1, 2):
            wobble = 0.003 * rng.standard_normal()
            for agent, (bond, valid, spread) in agents.items():
                metrics = {"bond_error": bond + wobble, "valid_fraction": valid - wobble,
                           "diversity": spread + wobble, "angle_w1": 1.0,
                           "dihedral_w1": 5.0}  # fmt: skip
                records.append({"env_id": f"{dataset} nfe={nfe}", "agent": agent, "seed": seed,
                                "episode": 0, "return": valid, "metrics": metrics})  # fmt: skip
    return records


def _statuses(records):
    run = Run(load_scenario(SCENARIO), {}, RunFolder(Path("unused")), {}, records)
    return [entry["status"] for entry in check(run)]


def test_claims_pass_on_a_run_that_shows_the_paper_s_pattern():
    records = _records(PAPER_LIKE) + _records(PAPER_LIKE, "octane")
    assert _statuses(records) == ["pass"] * 3 + ["recorded"]


def test_each_claim_fails_when_its_pattern_breaks():
    worse = {n: dict(agents) for n, agents in PAPER_LIKE.items()}
    worse[10]["idflow"] = (0.08, 0.90, 2.0)  # a higher bond error at NFE 10
    assert _statuses(_records(worse))[0] == "fail"
    narrow = {n: dict(agents) for n, agents in PAPER_LIKE.items()}
    narrow[5]["idflow"] = (0.05, 0.80, 1.5)  # 27% less diverse
    assert _statuses(_records(narrow))[1] == "fail"
    widening = {n: dict(agents) for n, agents in PAPER_LIKE.items()}
    widening[20]["flow-matching"] = (0.20, 0.5, 2.0)
    assert _statuses(_records(widening))[2] == "fail"


def test_claims_are_not_run_without_the_budgets_or_agents():
    assert _statuses([]) == ["not run"] * 4
    only_many = {20: PAPER_LIKE[20]}
    assert _statuses(_records(only_many)) == ["not run", "not run", "not run", "recorded"]
