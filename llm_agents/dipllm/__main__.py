"""``python -m omnigym.llm_agents.dipllm``: the DipLLM-lite command line
(:mod:`omnigym.llm_agents.dipllm.cli`)."""

from .cli import main

raise SystemExit(main())
