"""C-3PO's task environment, ``Methods/ProxyRAG-v0`` (Chen et al., "C-3PO: Compact
Plug-and-Play Proxy Optimization to Achieve Human-like Retrieval-Augmented Generation", ICML
2025; ``docs/c3po.md``).

- :mod:`.world`: the seeded synthetic world (entities, facts, passages, questions; its rules in
  ``world.yaml``);
- :mod:`.retrievers`: BM25 (``bm25s``) and dense all-MiniLM-L6-v2 retrieval;
- :mod:`.readers`: the deterministic rule reader and the SmolLM2-135M-Instruct reader;
- :mod:`.env`: the environment, where the agent is the proxy between them.
"""
