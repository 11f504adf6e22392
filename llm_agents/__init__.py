"""Language-model agents: text policies for the LMRL tasks (``models``, ``policy``, ``data``,
``bc``, ``mc_returns``, ``ilql``, ``ppo``; the ``lm:`` agent names), the experiment that compares
them as LMRL-Gym's Table 2 does (``lmrl_experiment``; ``docs/lmrl.md``), and DipLLM for
Diplomacy (the ``dipllm`` package, with its SmolLM2 variant ``dipllm.smollm2``). Each needs
torch; the text policies and ``dipllm.smollm2`` need the ``llm`` extra."""
