"""Package discovery for the top-level folders that ship under the one import name ``omnigym``.

``envs/`` is ``omnigym.envs``, ``agents/`` is ``omnigym.agents`` and so on (:data:`ROOTS`).
setuptools' declarative ``packages.find`` in pyproject.toml cannot discover packages under such a
mapping (it would name what it finds in ``envs/`` ``craft``, not ``omnigym.envs.craft``), so this
file maps the folders and finds every package below them (``find_namespace_packages``, so data
folders without ``__init__.py`` ship too). Everything else is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

ROOTS = {
    "omnigym": "omnigym",
    "omnigym.envs": "envs",
    "omnigym.agents": "agents",
    "omnigym.llm_agents": "llm_agents",
    "omnigym.evaluators": "evaluators",
    "omnigym.scenarios": "scenarios",
}

setup(
    package_dir=ROOTS,
    packages=[
        package
        for name, folder in ROOTS.items()
        for package in (
            name,
            *(
                f"{name}.{sub}"
                for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])
            ),
        )
    ],
)
