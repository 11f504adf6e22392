"""Language-model agents: text policies for the LMRL tasks (``models``, ``policy``, ``data``,
``bc``, ``mc_returns``, ``ilql``, ``ppo``; the ``lm:`` agent names) and DipLLM for Diplomacy
(``dipllm``, ``dipllm_lm``). Each needs torch; the text policies need the ``llm`` extra."""
