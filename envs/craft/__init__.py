"""Craft: an embedded voxel engine re-creating the Craftium task suite (spec craft.md).

Importing this package registers the ``Craft/`` ids (entry-point strings only: the engine, its
Numba kernels and the task modules load when an environment is made). Each single-agent id is
``CraftEnv(task=<name>)`` wrapped in Craftium's ``DiscreteActionWrapper`` with the task's
actions (``env.make_task_env``), so ``env.action_space`` is ``Discrete(n)`` and
``env.unwrapped.action_space`` the raw 22-key ``Dict``; ``CraftVectorEnv`` is each id's vector
entry point. The action lists and episode lengths are the data of ``data/tasks/*.yaml``; the
lists below repeat them (a test checks they agree) so that importing this module reads no file.
"""

from omnigym.registry import EnvInfo, register

PAPER = (
    "Craftium: Bridging Flexibility and Efficiency for Rich 3D Single- and Multi-Agent "
    "Environments (Malagón, Ceberio, Lozano, ICML 2025)"
)
_ENV = "omnigym.envs.craft.env:make_task_env"
_VECTOR = "omnigym.envs.craft.vector:CraftVectorEnv"

_SCRIPTED = "omnigym.agents.scripted."

# task name, DiscreteActionWrapper actions and mouse_mov (as in data/tasks/*.yaml; passed as
# kwargs, so the registry shows them and gym.make(..., actions=[...]) can change them), scripted
# agent, description
_SINGLE = (
    (
        "Room",
        ("forward", "mouse x+", "mouse x-"),
        0.5,
        "room:RoomScripted",
        "Closed room: walk to the orange block; -1 per step, at most 1000 steps.",
    ),
    (
        "SmallRoom",
        ("forward", "mouse x+", "mouse x-"),
        0.5,
        "room:RoomScripted",
        "10x10 room: walk to the orange block; -1 per step, at most 500 steps.",
    ),
    (
        "ChopTree",
        ("forward", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"),
        0.5,
        "chop_tree:ChopTreeScripted",
        "Fell trunk nodes in a dense forest with a steel axe; +1 per trunk node dug, 2000 steps.",
    ),
    (
        "Speleo",
        ("forward", "jump", "mouse x+", "mouse x-", "mouse y+", "mouse y-"),
        0.5,
        "speleo:SpeleoScripted",
        "Descend a closed torch-lit cave; reward -(player y) per step, 500 steps, death by a "
        "fall or lava.",
    ),
    (
        "SpidersAttack",
        ("forward", "left", "right", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"),
        0.5,
        "spiders_attack:SpidersAttackScripted",
        "Kill rounds of 1 to 5 spiders in a walled cage with a steel sword; +1 per kill; ends when "
        "round 5 is cleared or on death.",
    ),
    (
        "OpenWorld",
        (
            "forward",
            "backward",
            "left",
            "right",
            "jump",
            "sneak",
            "dig",
            "place",
            "slot_1",
            "slot_2",
            "slot_3",
            "slot_4",
            "slot_5",
            "mouse x+",
            "mouse x-",
            "mouse y+",
            "mouse y-",
        ),
        0.1,
        "open_world:OpenWorldScripted",
        "Survive, hunt and climb the tools track (wood, stone, iron, diamond) in a 256x80x256 "
        "generated world with day and night, animals, villagers and monsters; 320x180 frames.",
    ),
    (
        "ProcDungeons",
        ("forward", "left", "right", "jump", "dig", "mouse x+", "mouse x-", "mouse y+", "mouse y-"),
        0.1,
        "proc_dungeons:ProcDungeonsScripted",
        "Dungeon from an ASCII map: +0.5 per monster killed, +10 for the objective; ends on "
        "pickup or death, at most 4000 steps.",
    ),
)

for _name, _actions, _mouse_mov, _scripted, _description in _SINGLE:
    register(
        EnvInfo(
            id=f"Craft/{_name}-v0",
            entry_point=_ENV,
            family="Craft",
            kind="single",
            obs_kind="pixels",
            paper=PAPER,
            description=_description,
            kwargs={"task": _name, "actions": list(_actions), "mouse_mov": _mouse_mov},
            agents={"scripted": _SCRIPTED + _scripted},
            vector_entry_point=_VECTOR,
        )
    )

register(
    EnvInfo(
        id="Craft/MultiAgentCombat-v0",
        entry_point="omnigym.envs.craft.multi:CraftParallelEnv",
        family="Craft",
        kind="multi",
        obs_kind="pixels",
        paper=PAPER,
        description=(
            "Two players punch each other bare-handed in a walled arena, moving simultaneously: "
            "+1 per landed hit, -0.1 per hit taken; the 15th hit on one player ends it."
        ),
        kwargs={"task": "MultiAgentCombat"},
    )
)
