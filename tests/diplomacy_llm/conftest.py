"""Fixtures of the DipLLM-lite tests: seeded bot games on the tiny pure map and its tokenizer."""

import pytest


@pytest.fixture(scope="session")
def pure_data(tmp_path_factory):
    """Twenty seeded bot games on the tiny pure map, to 1904."""
    from omnigym.llm_agents.dipllm import DataSpec, generate_data

    path = tmp_path_factory.mktemp("dipllm") / "pure.jsonl.gz"
    generate_data(DataSpec(games=20, seed=0, max_year=1904, map_name="pure"), path)
    return path


@pytest.fixture(scope="session")
def pure_tokenizer():
    from omnigym.llm_agents.dipllm import Tokenizer

    return Tokenizer.for_map("pure")
