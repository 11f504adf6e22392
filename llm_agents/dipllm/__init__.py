"""DipLLM-lite: a small transformer that orders one unit at a time, fine-tuned toward the
equilibrium policy of a Monte Carlo Q (``docs/diplomacy.md``).

Follows DipLLM (Xu, Chai, Li, Fu, Zhu, Zhao, "DipLLM: Fine-Tuning LLM for Strategic
Decision-making in Diplomacy", ICML 2025; arXiv 2506.09655). Its two ideas are reproduced at a
small scale:

1. **Autoregressive factorisation.** A power with D orderable locations picks its orders one
   location at a time, π(a | s) = Π_d π(a_d | s, a_1 … a_{d−1}), in the env's sorted location
   order. The model reads the board text, the orders already chosen this phase and the name of
   the next location, and scores only that location's legal orders (a masked softmax), so it
   can never emit an illegal order.
2. **Equilibrium fine-tuning.** The model is first trained by behaviour cloning (BC) on the
   data, then fine-tuned toward the equilibrium policy of each Q group: for a (state, earlier
   orders, location) decision with candidate orders a and unit-level values Q(s, a) (the value
   of the order given the earlier units' orders, estimated by Monte Carlo rollouts),
   π*(a | s) ∝ π_base(a | s)·exp(Q(s, a)/λ) (:mod:`.weights`; π_base is the BC model itself,
   piKL's anchor), with the loss −Σ_a π*(a | s) log π_θ(a | s) at each such location, given the
   earlier orders (:mod:`.losses`). λ → ∞ keeps π_base's preferences among the candidates. The
   ablation ``finetune_target="behaviour"`` keeps the data's order as the target, weighted by
   exp(Q/λ) normalised within its group: it re-weights the data, so no probability moves to a
   candidate the data's bot did not play.

Pipeline (each step is also a command, ``python -m omnigym.llm_agents.dipllm
data|q|noise|train``):

- ``data`` (:mod:`.data`): seeded games of a mix of the reference bots
  (:mod:`omnigym.agents.diplomacy.bots`) capped at a year, one gzipped JSON line per phase.
- ``q`` (:mod:`.q`): unit-level Q of a (state, earlier orders, candidate order) triple by
  rollouts of the bots from the saved phase (the data game's bots, or one bot for every power),
  for the behaviour's order, the ``top_k`` most likely orders of the current policy (a trained
  factorised checkpoint) and ``sampled`` more drawn from it; ``noise`` (:mod:`.noise`) measures
  how well the rollouts order the candidates.
- ``train`` (:mod:`.agent`, :mod:`.training`): a model from scratch: ``--updates`` of BC on
  every decision, then, with a Q file, ``--finetune`` epochs of fine-tuning on the decisions
  that have a Q group (the rest of their turn only conditions them); ``--init`` starts from a
  BC checkpoint and skips the first stage when ``--updates 0``.

**Ablations** (as DipLLM's): AF + EW (factorised head, BC then equilibrium fine-tuning), AF + BC
(factorised, BC only: DipLLM's "AF only" row), joint + EW and joint + BC. Heads
(:mod:`.losses`):

- ``factorised`` (AF): the hidden state at location d's name is projected to a query and
  dotted with an embedding of every legal order there;
- ``joint``: no factorisation; the hidden state at a ``<joint>`` token after the board scores
  whole joint actions (the sum of their orders' embeddings) in a softmax over a capped list of
  ``joint_candidates`` joint actions: the behaviour's, the Q candidates' (each in the
  behaviour's joint action) and uniformly sampled ones in training, all sampled uniformly in
  play. Its equilibrium target is π* over the candidates' joint actions (π_base the joint
  model's probabilities of them).

**Model** (:mod:`.model`): a 1 M-parameter decoder-only transformer over word tokens
(:mod:`.text`) with an order encoder.

Departures from the paper, and why: a 1 M-parameter model trained from scratch on the CPU instead
of Llama-3-8B with LoRA (to fit a few CPU hours), so BC on the bots' games plays the part of the
pretrained model; data from the scripted bots instead of DipNet (no weights offline); Q from the
bots' rollouts instead of Cicero's search with its value network (a first round of the policy
improvement; no further rounds); Q only for movement-phase decisions (nearly all decisions) and,
within the CPU budget, only for a seeded sample of ``groups`` of them, which is why the targets
enter through a fine-tuning stage on those decisions rather than over the whole data set;
adjustment-phase locations may also choose ``<none>`` (the env's "no order", index 0: waive, or
leave a site unused), and once the due builds or removals are ordered only ``<none>`` is left,
so the agent never over-orders.
:mod:`.smollm2` runs the behaviour-weighted training on a pretrained language model,
SmolLM2-135M with LoRA.

Seeding: data games, rollouts, candidate draws, minibatches and joint-action samples come from
NumPy generators seeded by the given seed (``SeedSequence``); model initialisation from a forked
torch generator; no global RNG is touched. Worker processes run one torch thread.

Modules: :mod:`.config` (settings), :mod:`.text` (tokens and board text), :mod:`.model`,
:mod:`.data`, :mod:`.weights`, :mod:`.losses`, :mod:`.training`, :mod:`.q` (Q by rollouts),
:mod:`.noise` (Q's noise), :mod:`.agent` (:class:`DipLLMAgent`), :mod:`.cli` (the command line),
:mod:`.experiment` (the whole ablation as an experiment-kit scenario,
``scenarios/claims/dipllm.yaml``; not imported here) and :mod:`.smollm2` (the SmolLM2 variant,
which needs the ``llm`` extra and is not imported here).
"""

from .agent import CONFIG_FILE, FINETUNE_TARGETS, WEIGHTS_FILE, DipLLMAgent
from .cli import main
from .config import CONTINUATIONS, HEADS, ModelConfig, QConfig, TrainConfig
from .data import Dataset, DataSpec, Turn, generate_data, play_data_game, read_phases
from .losses import (
    candidate_joints,
    factorised_logits,
    factorised_loss,
    factorised_targets,
    joint_logits,
    joint_loss,
    sample_joint,
)
from .model import DipLLMModel, build_model, count_parameters
from .noise import q_noise
from .q import (
    RolloutTask,
    estimate_q,
    group_values,
    read_q,
    rollout_tasks,
    rollout_value,
    select_groups,
)
from .text import (
    MAX_ORDER_WORDS,
    NONE,
    SPECIALS,
    UNK,
    Tokenizer,
    adjustment_count,
    board_text,
    board_view,
    choices,
    turn_text,
)
from .training import equilibrium_targets, rank_choices, train
from .weights import behaviour_weight, equilibrium_policy, group_weights, joint_weight

__all__ = [
    "CONFIG_FILE",
    "CONTINUATIONS",
    "FINETUNE_TARGETS",
    "HEADS",
    "MAX_ORDER_WORDS",
    "NONE",
    "SPECIALS",
    "UNK",
    "WEIGHTS_FILE",
    "DataSpec",
    "Dataset",
    "DipLLMAgent",
    "DipLLMModel",
    "ModelConfig",
    "QConfig",
    "RolloutTask",
    "Tokenizer",
    "TrainConfig",
    "Turn",
    "adjustment_count",
    "behaviour_weight",
    "board_text",
    "board_view",
    "build_model",
    "candidate_joints",
    "choices",
    "count_parameters",
    "equilibrium_policy",
    "equilibrium_targets",
    "estimate_q",
    "factorised_logits",
    "factorised_loss",
    "factorised_targets",
    "generate_data",
    "group_values",
    "group_weights",
    "joint_logits",
    "joint_loss",
    "joint_weight",
    "main",
    "play_data_game",
    "q_noise",
    "rank_choices",
    "read_phases",
    "read_q",
    "rollout_tasks",
    "rollout_value",
    "sample_joint",
    "select_groups",
    "train",
    "turn_text",
]
