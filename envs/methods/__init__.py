"""Methods: non-RL papers as task environments (spec methods.md; DESIGN §4).

Each paper is one module here (``lort.py``, ``frank_wolfe.py``, ...) with its methods and
baselines as agents in ``omnigym.agents.methods.<paper>``. What a paper registers is data:
``data/<paper>.yaml`` lists its ids (entry point, kwargs, description, citation) and its agents
(name → ``module:Class``, usable on those ids only). Importing this package reads those small
files and registers the ``Methods/`` ids; no paper module (nor scikit-learn, torch or pymoo) is
imported until an environment is made.
"""

from __future__ import annotations

from importlib import resources

import yaml

from omnigym.registry import EnvInfo, register

_MODULE = "omnigym.envs.methods."
_AGENTS = "omnigym.agents.methods."


def _register_all() -> None:
    folder = resources.files(__name__) / "data"
    if not folder.is_dir():
        return
    for item in sorted(folder.iterdir(), key=lambda entry: entry.name):
        if not item.name.endswith(".yaml"):
            continue
        paper = yaml.safe_load(item.read_text(encoding="utf-8"))
        agents = {name: _AGENTS + entry for name, entry in paper.get("agents", {}).items()}
        for env in paper["envs"]:
            register(
                EnvInfo(
                    id=env["id"],
                    entry_point=_MODULE + env["entry_point"],
                    family="Methods",
                    kind="single",
                    obs_kind="dict",
                    paper=paper["paper"],
                    description=env["description"],
                    kwargs=env.get("kwargs", {}),
                    agents=agents,
                )
            )


_register_all()
