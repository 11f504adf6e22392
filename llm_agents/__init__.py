"""Language-model agents (DipLLM, C-3PO, BC/filtered-BC/PPO text policies) — later issues."""
