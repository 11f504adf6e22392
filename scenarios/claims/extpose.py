"""The claims of ExtPose, checked on a run of ``extpose.yaml`` (``docs/methods.md``).

Chen et al. (ICML 2025) extend a ViT pose estimator with 2-D pose evidence drawn as skeleton
images (patchified by the ViT's own patch embedding) and with cross-frame attention: lower
PA-MPJPE than RGB-only ViTs and than the same evidence as coordinate tokens, robustness to
left/right flips of the 2-D detections, and smoother motion. Here the same mechanisms on
synthetic stick-figure clips (``Methods/PoseEstimation-v0``).

The checker reads the agents by their registry names (``extpose-rgb``, ``extpose-skeleton``,
``extpose-coordinates``, ``extpose-temporal``, ``mean-pose``) on every env of the run.
Differences are paired over draws; a claim holds when the 95% bootstrap interval of the
difference lies above zero on every env.
"""

from __future__ import annotations

from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run

from .draws import above_zero, by_draw, mean_ci, paired, summaries

RGB, SKELETON, COORDINATES = "extpose-rgb", "extpose-skeleton", "extpose-coordinates"
TEMPORAL, MEAN = "extpose-temporal", "mean-pose"
AGENTS = (MEAN, RGB, COORDINATES, SKELETON, TEMPORAL)
METRICS = (
    "pa_mpjpe", "mpjpe", "acceleration_error", "flipped_joint_error", "clean_joint_error",
)  # fmt: skip
PAPER_GAIN = {
    "3DPW PA-MPJPE": "34.0 mm, -23% against other ViT-based methods",
    "FreiHAND PA-MPJPE": "4.9 mm, -18% against other ViT-based methods",
}


def _flip_excess(metrics: dict[str, float]) -> float | None:
    """How much worse the left/right joints are in flipped frames than in clean ones (mm)."""
    flipped, clean = metrics.get("flipped_joint_error"), metrics.get("clean_joint_error")
    if flipped is None or clean is None or flipped != flipped:
        return None
    return flipped - clean


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–6 on this run (see the module docstring)."""
    pa = by_draw(run.records, "pa_mpjpe")
    acceleration = by_draw(run.records, "acceleration_error")
    excess = by_draw(run.records, _flip_excess)
    return [
        _lower(
            1,
            pa,
            RGB,
            MEAN,
            "The RGB-only ViT fine-tuned from the fixture beats the mean training pose "
            "(PA-MPJPE, mean − RGB, interval above 0)",
            "posed for this reproduction: a sanity floor every pose model must clear",
        ),
        _lower(
            2,
            pa,
            SKELETON,
            RGB,
            "Skeleton-image tokens lower PA-MPJPE against RGB only (RGB − skeleton, interval "
            "above 0)",
            PAPER_GAIN,
        ),
        _lower(
            3,
            pa,
            SKELETON,
            COORDINATES,
            "Skeleton-image tokens lower PA-MPJPE against a coordinate-MLP token carrying the "
            "same detections (coordinates − skeleton, interval above 0)",
            "skeleton images beat coordinate tokens in the paper's representation ablation",
        ),
        _lower(
            4,
            excess,
            SKELETON,
            COORDINATES,
            "Skeleton-image tokens fix flips: the extra error of the left and right joints in "
            "frames whose detections were left/right-flipped (flipped − clean, mm) is smaller "
            "with skeleton-image tokens than with the coordinate token (interval above 0)",
            "skeleton-image tokens make the estimate robust to left/right flips of the 2-D "
            "detector in cluttered frames (reported qualitatively)",
        ),
        _lower(
            5,
            acceleration,
            TEMPORAL,
            SKELETON,
            "Cross-frame attention over 4 frames lowers the acceleration error against the same "
            "model frame by frame (skeleton − temporal, interval above 0)",
            "the temporal extension gives smoother, more coherent motion (lower acceleration "
            "error on video benchmarks)",
        ),
        _recorded(run, pa),
    ]


def _lower(
    number: int, table: dict, better: str, worse: str, statement: str, paper: Any
) -> dict[str, Any]:
    """Claim ``number``: ``better`` has a lower value than ``worse`` on every env."""
    envs = sorted(env for env, agents in table.items() if better in agents and worse in agents)
    if not envs:
        return claim(number, statement, "not run", paper=paper)
    measured = {
        env: {
            worse: mean_ci(table[env][worse]),
            better: mean_ci(table[env][better]),
            f"{worse} - {better}": paired(table[env][worse], table[env][better]),
        }
        for env in envs
    }
    holds = all(above_zero(row[f"{worse} - {better}"]) for row in measured.values())
    return claim(number, statement, verdict(holds), measured, paper)


def _recorded(run: Run, pa: dict) -> dict[str, Any]:
    statement = (
        "Every agent's PA-MPJPE, MPJPE, acceleration error and left/right-joint errors in "
        "flipped and clean frames (mm)"
    )
    if not pa:
        return claim(6, statement, "not run")
    return claim(6, statement, "recorded", summaries(run.records, METRICS, AGENTS, sorted(pa)))
