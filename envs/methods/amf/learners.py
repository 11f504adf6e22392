"""The multi-task policies that AMF fine-tunes: an exact Gaussian process and a small MLP.

Bagatella, Hübotter, Martius, Krause, "Active Fine-Tuning of Multi-Task Policies", ICML 2025
(``docs/amf.md``). Both policies map an observation (p, cos θ_c, sin θ_c) of
:mod:`.reach` to the expert's mean action and are cloned from demonstrations; both also offer
what AMF's selection needs, the posterior covariance of the expert's action function at any
states given the data they were fitted on (:meth:`posterior_covariance`, one covariance shared
by the two action dimensions):

- :class:`GaussianProcessPolicy` (AMF-GP): exact GP regression, one GP per action dimension
  sharing an RBF kernel over position and task embedding, noise variance the expert's. Adding
  demonstrations extends the Cholesky factor (:meth:`GaussianProcessPolicy.extended`);
- :class:`MLPPolicy` (AMF-NN): a network from position and task (one-hot) through two tanh
  layers of 64 to a tanh output, pre-trained by behaviour cloning and fine-tuned on the new
  demonstrations only (so it can forget the other tasks). With the **adaptive prior** its output
  is α(c)·f_fine-tuned + (1 − α(c))·f_pre-trained with a learned per-task
  α(c) = sigmoid(β_c), β_c starting at :data:`PRIOR_LOGIT`: a task without new demonstrations
  keeps almost all of its pre-trained behaviour, a task whose new demonstrations the
  fine-tuned network fits better than the pre-trained one moves to it. Its kernel is the inner
  product of last-layer gradient embeddings, φ(x) = (h(x), 1) for the last hidden layer h of
  the fine-tuned network (the linearised network's last layer): the posterior is Bayesian
  linear regression on φ.

Departures from the paper: the GP's hyperparameters are fixed (:data:`LENGTHSCALES`), not fitted
by marginal likelihood. The network reads the task as a one-hot code (a task identifier, as a
language- or goal-conditioned policy's task token), not the goal direction: on the goal
direction a small MLP extrapolates the integrator's nearly linear expert to tasks it never saw,
and nothing would be left to fine-tune. It is trained full-batch with Adam in NumPy for a fixed
number of steps; fine-tuning restarts from the pre-trained weights at every refit (so the
policy depends only on the demonstrations, not on when the refits happened). With the adaptive
prior the fine-tuned network is trained on its own loss plus the mixture's, so that it cannot
fit the demonstrations by growing to make up for a small α(c) (which would leak into the tasks
it was not fine-tuned on). The gradient-embedding kernel leaves out the output's tanh slope,
and its prior weight variance is set so that the prior output variance averages 1 over the
training states, as the GP's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from threadpoolctl import threadpool_limits

from .reach import ACTION_SIZE, EXPERT_NOISE, OBSERVATION_SIZE, TASKS, Demonstration

#: RBF lengthscales of (p_x, p_y, cos θ, sin θ); neighbouring goals (30° apart, 0.52 apart in
#: the embedding) are correlated 0.58, goals 60° apart 0.14.
LENGTHSCALES = np.array([0.5, 0.5, 0.5, 0.5])
SIGNAL_VARIANCE = 1.0
NOISE_VARIANCE = EXPERT_NOISE**2

HIDDEN = 64
PRETRAIN_STEPS = 1500
FINETUNE_STEPS = 400
LEARNING_RATE = 3e-3
#: β_c's start: α(c) = sigmoid(−4) ≈ 0.02 until a task's new demonstrations raise it.
PRIOR_LOGIT = -4.0
PRIOR_LEARNING_RATE = 0.1
ADAM_BETAS, ADAM_EPSILON = (0.9, 0.999), 1e-8


def stack(demonstrations: Sequence[Demonstration]) -> tuple[np.ndarray, np.ndarray]:
    """All observations (n, 4) and actions (n, 2) of ``demonstrations``, in order."""
    if not demonstrations:
        return np.empty((0, OBSERVATION_SIZE)), np.empty((0, ACTION_SIZE))
    return (
        np.concatenate([d.observations for d in demonstrations]),
        np.concatenate([d.actions for d in demonstrations]),
    )


def task_of(observations: np.ndarray) -> np.ndarray:
    """The task index c whose goal direction is nearest each observation's (cos θ, sin θ)."""
    angle = np.arctan2(observations[:, 3], observations[:, 2])
    return np.rint(angle * TASKS / (2 * np.pi)).astype(np.int64) % TASKS


# ---- AMF-GP -------------------------------------------------------------------------------


def rbf_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SIGNAL_VARIANCE · exp(−½ Σ_i (a_i − b_i)² / ℓ_i²), (len(a), len(b))."""
    scaled_a, scaled_b = a / LENGTHSCALES, b / LENGTHSCALES
    squared = (
        np.sum(scaled_a**2, axis=1)[:, None]
        + np.sum(scaled_b**2, axis=1)[None, :]
        - 2.0 * scaled_a @ scaled_b.T
    )
    return SIGNAL_VARIANCE * np.exp(-0.5 * np.maximum(squared, 0.0))


class GaussianProcessPolicy:
    """Exact GP regression of the expert's actions on the observations (see the module).

    Immutable once built; :meth:`extended` returns a new policy with more demonstrations. The
    Cholesky factor of K + σ²I is cached and left out of pickles (rebuilt on demand).
    """

    noise_variance = NOISE_VARIANCE

    def __init__(self, inputs: np.ndarray, targets: np.ndarray, factor: np.ndarray | None = None):
        self.inputs, self.targets = inputs, targets
        self._factor = factor
        self._weights: np.ndarray | None = None

    @classmethod
    def fit(cls, demonstrations: Sequence[Demonstration]) -> GaussianProcessPolicy:
        return cls(*stack(demonstrations))

    @property
    def factor(self) -> np.ndarray:
        """Lower Cholesky factor L of K(X, X) + σ²I."""
        if self._factor is None:
            gram = rbf_kernel(self.inputs, self.inputs)
            gram[np.diag_indices_from(gram)] += self.noise_variance
            self._factor = np.linalg.cholesky(gram)
        return self._factor

    @property
    def weights(self) -> np.ndarray:
        """(K + σ²I)⁻¹ Y, the weights of the posterior mean."""
        if self._weights is None:
            self._weights = cho_solve((self.factor, True), self.targets)
        return self._weights

    def extended(self, demonstrations: Sequence[Demonstration]) -> GaussianProcessPolicy:
        """This GP with ``demonstrations`` added (the factor grows by one block row)."""
        inputs, targets = stack(demonstrations)
        if len(self.inputs) == 0:
            return GaussianProcessPolicy(inputs, targets)
        cross = solve_triangular(
            self.factor, rbf_kernel(self.inputs, inputs), lower=True, check_finite=False
        )
        corner = rbf_kernel(inputs, inputs) - cross.T @ cross
        corner[np.diag_indices_from(corner)] += self.noise_variance
        size, added = len(self.inputs), len(inputs)
        factor = np.zeros((size + added, size + added))
        factor[:size, :size] = self.factor
        factor[size:, :size] = cross.T
        factor[size:, size:] = np.linalg.cholesky(corner)
        return GaussianProcessPolicy(
            np.concatenate([self.inputs, inputs]), np.concatenate([self.targets, targets]), factor
        )

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        """The posterior mean action at ``observations`` (n, 4) -> (n, 2)."""
        if len(self.inputs) == 0:
            return np.zeros((len(observations), ACTION_SIZE))
        return rbf_kernel(observations, self.inputs) @ self.weights

    def variance(self, observations: np.ndarray) -> np.ndarray:
        """The posterior variance of the mean action (per dimension) at ``observations``."""
        if len(self.inputs) == 0:
            return np.full(len(observations), SIGNAL_VARIANCE)
        explained = solve_triangular(
            self.factor, rbf_kernel(self.inputs, observations), lower=True, check_finite=False
        )
        return SIGNAL_VARIANCE - np.sum(explained**2, axis=0)

    def posterior_covariance(self, points: np.ndarray) -> np.ndarray:
        """Cov[f(points)] given the data, f one action dimension of the expert's mean policy."""
        prior = rbf_kernel(points, points)
        if len(self.inputs) == 0:
            return prior
        explained = solve_triangular(
            self.factor, rbf_kernel(self.inputs, points), lower=True, check_finite=False
        )
        return prior - explained.T @ explained

    def __getstate__(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "targets": self.targets}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["inputs"], state["targets"])


# ---- AMF-NN -------------------------------------------------------------------------------

Network = dict[str, np.ndarray]


def encode(observations: np.ndarray) -> np.ndarray:
    """The network's input: the position and the task as a one-hot code (n, 14)."""
    return np.concatenate([observations[:, :2], np.eye(TASKS)[task_of(observations)]], axis=1)


def init_network(rng: np.random.Generator) -> Network:
    """A 14-64-64-2 network with Glorot-uniform weights and zero biases."""
    sizes = (2 + TASKS, HIDDEN, HIDDEN, ACTION_SIZE)
    network = {}
    for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True), start=1):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        network[f"w{layer}"] = rng.uniform(-limit, limit, (fan_in, fan_out))
        network[f"b{layer}"] = np.zeros(fan_out)
    return network


def forward(
    network: Network, observations: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The output (n, 2) at ``observations`` and the activations that :func:`backward` needs."""
    x = encode(observations)
    h1 = np.tanh(x @ network["w1"] + network["b1"])
    h2 = np.tanh(h1 @ network["w2"] + network["b2"])
    output = np.tanh(h2 @ network["w3"] + network["b3"])
    return output, (x, h1, h2, output)


def backward(network: Network, cache: tuple[np.ndarray, ...], grad_out: np.ndarray) -> Network:
    """Gradients of Σ grad_out · output with respect to every parameter."""
    x, h1, h2, output = cache
    grad_out = grad_out * (1.0 - output**2)
    grad_h2 = (grad_out @ network["w3"].T) * (1.0 - h2**2)
    grad_h1 = (grad_h2 @ network["w2"].T) * (1.0 - h1**2)
    return {
        "w3": h2.T @ grad_out,
        "b3": grad_out.sum(axis=0),
        "w2": h1.T @ grad_h2,
        "b2": grad_h2.sum(axis=0),
        "w1": x.T @ grad_h1,
        "b1": grad_h1.sum(axis=0),
    }


class Adam:
    """Adam (Kingma and Ba, 2015) over a dict of arrays, each with its learning rate."""

    def __init__(self, parameters: dict[str, np.ndarray], rates: dict[str, float]):
        self.rates = rates
        self.moments = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in parameters.items()}
        self.steps = 0

    def step(self, parameters: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.steps += 1
        beta1, beta2 = ADAM_BETAS
        for key, grad in grads.items():
            first, second = self.moments[key]
            first[...] = beta1 * first + (1 - beta1) * grad
            second[...] = beta2 * second + (1 - beta2) * grad**2
            corrected = first / (1 - beta1**self.steps)
            scale = np.sqrt(second / (1 - beta2**self.steps)) + ADAM_EPSILON
            parameters[key] -= self.rates[key] * corrected / scale


def pretrain(demonstrations: Sequence[Demonstration], rng: np.random.Generator) -> Network:
    """Behaviour cloning (mean squared error) of a fresh network on ``demonstrations``."""
    inputs, targets = stack(demonstrations)
    network = init_network(rng)
    optimizer = Adam(network, dict.fromkeys(network, LEARNING_RATE))
    with threadpool_limits(limits=1, user_api="blas"):  # small products: threads only cost
        for _ in range(PRETRAIN_STEPS):
            output, cache = forward(network, inputs)
            optimizer.step(network, backward(network, cache, (output - targets) / len(inputs)))
    return network


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def fine_tune(
    pretrained: Network,
    pretraining: Sequence[Demonstration],
    demonstrations: Sequence[Demonstration],
    adaptive_prior: bool,
) -> MLPPolicy:
    """Fine-tune a copy of ``pretrained`` on ``demonstrations`` alone (the pre-training data
    only enters the policy's kernel), with or without the adaptive prior."""
    inputs, targets = stack(demonstrations)
    if len(inputs) == 0:
        return MLPPolicy(pretrained, None, None, pretraining, demonstrations)
    network = {key: value.copy() for key, value in pretrained.items()}
    rates = dict.fromkeys(network, LEARNING_RATE)
    logits = np.full(TASKS, PRIOR_LOGIT) if adaptive_prior else None
    if adaptive_prior:
        network["prior_logits"], rates["prior_logits"] = logits, PRIOR_LEARNING_RATE
        frozen, _ = forward(pretrained, inputs)
        tasks = task_of(inputs)
    optimizer = Adam(network, rates)
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(FINETUNE_STEPS):
            output, cache = forward(network, inputs)
            residual = (output - targets) / len(inputs)
            if not adaptive_prior:
                optimizer.step(network, backward(network, cache, residual))
                continue
            # The fine-tuned network fits the demonstrations on its own (its own loss) and
            # through the mixture; α(c) only learns how far to trust it on task c.
            alpha = sigmoid(logits[tasks])[:, None]
            mixed = (alpha * output + (1 - alpha) * frozen - targets) / len(inputs)
            grads = backward(network, cache, residual + alpha * mixed)
            slope = alpha[:, 0] * (1 - alpha[:, 0])
            grads["prior_logits"] = np.bincount(
                tasks, np.sum(mixed * (output - frozen), axis=1) * slope, minlength=TASKS
            )
            optimizer.step(network, grads)
    network.pop("prior_logits", None)
    return MLPPolicy(pretrained, network, logits, pretraining, demonstrations)


class MLPPolicy:
    """A pre-trained network, fine-tuned or not, and its gradient-embedding posterior.

    ``finetuned`` is None before any fine-tuning; ``prior_logits`` (the β_c of the adaptive
    prior) None without it. The posterior of the last-layer weights is fitted on every
    demonstration the policy has seen, pre-training included.
    """

    noise_variance = NOISE_VARIANCE

    def __init__(
        self,
        pretrained: Network,
        finetuned: Network | None,
        prior_logits: np.ndarray | None,
        pretraining: Sequence[Demonstration],
        demonstrations: Sequence[Demonstration],
    ):
        self.pretrained, self.finetuned, self.prior_logits = pretrained, finetuned, prior_logits
        embeddings = self.embed(stack([*pretraining, *demonstrations])[0])
        self.prior_variance = 1.0 / np.mean(np.sum(embeddings**2, axis=1))
        precision = embeddings.T @ embeddings / self.noise_variance
        precision[np.diag_indices_from(precision)] += 1.0 / self.prior_variance
        self.weight_covariance = np.linalg.inv(precision)

    @property
    def network(self) -> Network:
        return self.pretrained if self.finetuned is None else self.finetuned

    def alpha(self, observations: np.ndarray) -> np.ndarray | None:
        """α(c) of each observation's task, or None (no adaptive prior, or not fine-tuned)."""
        if self.finetuned is None or self.prior_logits is None:
            return None
        return sigmoid(self.prior_logits[task_of(observations)])

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        """The mean action at ``observations`` (n, 4) -> (n, 2)."""
        output, _ = forward(self.network, observations)
        alpha = self.alpha(observations)
        if alpha is None:
            return output
        frozen, _ = forward(self.pretrained, observations)
        return alpha[:, None] * output + (1 - alpha[:, None]) * frozen

    def variance(self, observations: np.ndarray) -> np.ndarray:
        """The posterior variance of the mean action (per dimension) under the kernel."""
        embeddings = self.embed(observations)
        return np.einsum("ij,jk,ik->i", embeddings, self.weight_covariance, embeddings)

    def embed(self, observations: np.ndarray) -> np.ndarray:
        """φ(x) = (h(x), 1): the gradient of an output with respect to the last layer."""
        _, (_, _, last_hidden, _) = forward(self.network, observations)
        return np.concatenate([last_hidden, np.ones((len(observations), 1))], axis=1)

    def posterior_covariance(self, points: np.ndarray) -> np.ndarray:
        """Cov[f(points)] given the data under the gradient-embedding kernel."""
        embeddings = self.embed(points)
        return embeddings @ self.weight_covariance @ embeddings.T
