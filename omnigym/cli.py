"""The ``omnigym`` command line: list, eval, run, claims, report, bench, dataset, play, render.

Bad input (an unknown environment or agent, a malformed scenario, a backend that cannot serve:
Ray not installed, a cluster out of reach, a job bigger than any node) prints one clear message
to stderr and exits with status 2 before anything is written. Long work shows a progress bar on
stderr, so ``--json`` output on stdout stays machine-readable. Ctrl-C and SIGTERM stop a run
cleanly: the finished episodes are stored, every process the run started ends, and the message
says how to resume (the same command; exit status 130 or 143).
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import omnigym
from omnigym.agent import UnknownAgentError
from omnigym.pool import BACKENDS, BackendError, make_pool
from omnigym.processes import Terminated, terminate_raises
from omnigym.registry import UnknownEnvError
from omnigym.scenario import Scenario, ScenarioError

USAGE_ERROR = 2


class UsageError(Exception):
    """Bad input from the command line; printed and answered with exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.stored_in = None  # the folder a handler stores episodes in, for the resume message
    try:
        with terminate_raises():
            return args.handler(args) or 0
    except (UsageError, UnknownEnvError, UnknownAgentError, ScenarioError, BackendError) as error:
        print(f"omnigym {args.command}: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt as interrupt:
        signum = signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT
        command = shlex.join(["omnigym", *(sys.argv[1:] if argv is None else argv)])
        print(_interrupted(args, signum, command), file=sys.stderr)
        return 128 + signum


def _interrupted(args: argparse.Namespace, signum: signal.Signals, command: str) -> str:
    """What an interrupted command left and how to go on."""
    from omnigym.evaluators.store import EPISODES_FILE, read_records

    lines = [f"omnigym {args.command}: interrupted ({signum.name})."]
    if args.stored_in is None:
        lines.append("Nothing was stored (no --out folder).")
    else:
        path = Path(args.stored_in) / EPISODES_FILE
        lines.append(f"{len(read_records(path))} finished episodes are stored in {path}.")
        lines.append(f"Resume with the same command: {command}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omnigym", description="Environments, agents and scorecards for recent ML papers."
    )
    parser.add_argument("--version", action="version", version=f"omnigym {omnigym.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list the registered environments")
    listing.add_argument("--family", help="only this family (e.g. LMRL)")
    listing.add_argument("--json", action="store_true", help="print JSON records")
    listing.set_defaults(handler=_list)

    evaluation = commands.add_parser("eval", help="evaluate one agent on one environment")
    evaluation.add_argument("env_id")
    evaluation.add_argument("--agent", required=True, help="random, oracle, or module:Class")
    evaluation.add_argument("--episodes", type=_positive, default=10)
    evaluation.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    evaluation.add_argument("--workers", type=_positive, default=1)
    _backend_arguments(evaluation, default="local")
    evaluation.add_argument("--out", type=Path, help="write episodes, scorecard and report here")
    evaluation.add_argument("--json", action="store_true", help="print the scorecard record")
    evaluation.add_argument(
        "--export-ratings",
        type=Path,
        metavar="DIR",
        help="MCU ids: write one MCU-style rating JSON per episode into DIR",
    )
    evaluation.set_defaults(handler=_eval)

    run = commands.add_parser("run", help="run a scenario file")
    run.add_argument("scenario", type=Path)
    run.add_argument(
        "--out",
        type=Path,
        help="output folder (default: the scenario's out:, with --quick its quick/ subfolder)",
    )
    run.add_argument(
        "--quick", action="store_true", help="the scenario's quick: profile (a smoke run)"
    )
    _backend_arguments(run, default="the scenario's backend:, else local")
    run.set_defaults(handler=_run)

    claims = commands.add_parser(
        "claims", help="run every paper's claims experiment and write the claims dashboard"
    )
    claims.add_argument("--quick", action="store_true", help="the quick profiles (smoke runs)")
    claims.add_argument(
        "--report",
        action="store_true",
        help="only collect existing runs (or the recorded full runs in docs/results/)",
    )
    claims.add_argument("--out", type=Path, default=Path("results/claims"), help="dashboard folder")
    claims.add_argument("--papers", help="comma-separated paper names (default: all)")
    _backend_arguments(claims, default="each scenario's backend:, else local")
    claims.set_defaults(handler=_claims)

    report = commands.add_parser("report", help="re-render a report from episodes.jsonl")
    report.add_argument("folder", type=Path)
    report.set_defaults(handler=_report)

    bench = commands.add_parser(
        "bench", help="measure an environment's steps per second (agent time excluded)"
    )
    bench.add_argument("env_id")
    bench.add_argument("--steps", type=_positive, default=10_000)
    bench.add_argument("--agent", default="random", help="who picks the actions (default random)")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(handler=_bench)

    dataset = commands.add_parser("dataset", help="write an environment's offline dataset")
    dataset.add_argument("env_id")
    dataset.add_argument("--episodes", type=_positive, help="default: the family's default size")
    dataset.add_argument("--seed", type=int, default=0)
    dataset.add_argument(
        "--out",
        type=Path,
        required=True,
        help="LMRL: FILE.jsonl[.gz]; Safe: DIR (DSRL file name) or FILE.hdf5",
    )
    dataset.set_defaults(handler=_dataset)

    play = commands.add_parser("play", help="play a text environment in the terminal")
    play.add_argument("env_id")
    play.add_argument("--seed", type=int, default=None)
    play.set_defaults(handler=_play)

    render = commands.add_parser(
        "render", help="save a pixel environment's first frame (PNG) or a random rollout (GIF)"
    )
    render.add_argument("env_id")
    render.add_argument("--seed", type=int, default=0, help="reset seed (default 0)")
    render.add_argument("--out", type=Path, required=True, help="FILE.png or FILE.gif")
    render.add_argument(
        "--steps", type=_positive, default=50, help="random steps after the first frame (GIF)"
    )
    render.add_argument("--kwargs", default="{}", help="environment kwargs as a JSON object")
    render.set_defaults(handler=_render)
    return parser


def _backend_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        help=f"where the work runs: local worker processes or Ray tasks (default: {default})",
    )
    parser.add_argument(
        "--address",
        help="with --backend ray: auto (the cluster this machine joined) or the head node's "
        "HOST:PORT (default: a Ray instance of the run's own on this machine)",
    )


def _chosen_backend(
    args: argparse.Namespace, backend: str = "local", address: str | None = None
) -> tuple[str, str | None]:
    """The command line's ``--backend`` and ``--address`` over ``backend`` and ``address`` (a
    scenario's); a scenario's address goes with its backend only."""
    chosen = args.backend or backend
    if args.address is not None:
        address = args.address
    elif chosen != backend:
        address = None
    if address is not None and chosen != "ray":
        raise UsageError(f"--address {address} is for --backend ray")
    return chosen, address


def _on_backend(scenario: Scenario, args: argparse.Namespace) -> Scenario:
    """``scenario`` with the command line's ``--backend`` and ``--address`` over its own."""
    backend, address = _chosen_backend(args, scenario.backend, scenario.address)
    return scenario.model_copy(update={"backend": backend, "address": address})


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _list(args: argparse.Namespace) -> int:
    envs = omnigym.list_envs(family=args.family)
    if args.family and not envs:
        families = sorted({info.family for info in omnigym.list_envs()})
        raise UsageError(f"no family {args.family!r} (families: {', '.join(families)})")
    if args.json:
        records = [{**info.to_dict(), "agents": omnigym.list_agents(info.id)} for info in envs]
        print(json.dumps(records, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    from omnigym.agent import list_agent_prefixes

    table = Table("id", "family", "kind", "obs", "agents", "description")
    for info in envs:
        names = omnigym.list_agents(info.id) + [f"{p}…" for p in list_agent_prefixes(info.id)]
        agents = ", ".join(names)
        table.add_row(info.id, info.family, info.kind, info.obs_kind, agents, info.description)
    Console().print(table)
    return 0


@contextmanager
def _progress(total: int, description: str) -> Iterator[Any]:
    """A rich progress bar on stderr; yields the per-episode callback."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)

        def advance(record: dict[str, Any]) -> None:
            progress.update(task, advance=1, description=f"{record['env_id']} {record['agent']}")

        yield advance


def _eval(args: argparse.Namespace) -> int:
    from omnigym.agent import load_agent_factory

    omnigym.spec(args.env_id)
    load_agent_factory(args.agent, args.env_id)
    # Validated: only now pay for scipy and matplotlib.
    from omnigym.evaluators.experiment import write_outputs
    from omnigym.evaluators.rollout import evaluate
    from omnigym.evaluators.scorecard import build_scorecard, format_table
    from omnigym.evaluators.store import EpisodeStore

    backend, address = _chosen_backend(args)
    pool = make_pool(args.workers, backend, address, job=f"{args.env_id} {args.agent}")
    store = EpisodeStore(args.out) if args.out else None
    args.stored_in = args.out
    try:
        with pool, _progress(args.episodes, f"{args.env_id} {args.agent}") as advance:
            records = evaluate(
                args.env_id,
                args.agent,
                episodes=args.episodes,
                seeds=[args.seed],
                store=store,
                on_episode=advance,
                pool=pool,
            )
    finally:
        if store is not None:
            store.close()
    if args.export_ratings:
        from omnigym.evaluators.mcu_ratings import write_ratings

        paths = write_ratings(records, args.export_ratings)
        print(f"wrote {len(paths)} ratings to {args.export_ratings}")
    if args.out:
        scorecard = write_outputs(records, args.out, title=f"{args.env_id}: {args.agent}").scorecard
    else:
        scorecard = build_scorecard(records)
    if args.json:
        print(json.dumps(scorecard["results"][0], indent=2))
    else:
        print(format_table(scorecard))
        if args.out:
            print(f"report: {(args.out / 'report.html').resolve()}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from omnigym.scenario import load_scenario

    scenario = _on_backend(load_scenario(args.scenario), args)
    if args.quick:
        scenario = scenario.quickened()
    from omnigym.evaluators.experiment import experiment_class, run_folder

    try:
        folder = run_folder(scenario, args.out)
        experiment = experiment_class(scenario)(scenario, folder)
    except ValueError as error:
        raise UsageError(f"{args.scenario}: {error}") from None
    args.stored_in = folder
    with _progress(experiment.total_episodes(), scenario.name) as advance:
        experiment.on_episode = advance
        output = experiment.execute()
    print(output.summary)
    print(f"scorecard: {output.scorecard_json.resolve()}")
    print(f"report: {output.report_html.resolve()}")
    return 0


def _claims(args: argparse.Namespace) -> int:
    from omnigym.evaluators.dashboard import claims_scenarios, collect, write_dashboard
    from omnigym.scenario import load_scenario

    available = claims_scenarios()
    papers = list(available) if not args.papers else args.papers.split(",")
    unknown = sorted(set(papers) - set(available))
    if unknown:
        raise UsageError(f"unknown papers {unknown} (known: {', '.join(available)})")
    failed = []
    if not args.report:
        from omnigym.evaluators.experiment import experiment_class, run_folder

        for paper in papers:
            scenario = _on_backend(load_scenario(available[paper]), args)
            scenario = scenario.quickened() if args.quick else scenario
            experiment = experiment_class(scenario)(scenario, run_folder(scenario))
            print(f"{paper}: running into {run_folder(scenario)}", file=sys.stderr)
            args.stored_in = run_folder(scenario)
            try:
                with _progress(experiment.total_episodes(), paper) as advance:
                    experiment.on_episode = advance
                    experiment.execute()
            except BackendError:
                raise
            except (ImportError, RuntimeError, ValueError, OSError) as error:
                failed.append(paper)
                print(f"{paper}: failed: {error}", file=sys.stderr)
    entries = collect(quick=args.quick, papers=papers)
    markdown, page = write_dashboard(entries, args.out)
    for entry in entries:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(_status_counts(entry.claims).items()))
        print(f"{entry.paper}: {counts or 'no run'}")
    print(f"dashboard: {page.resolve()}")
    return 1 if failed else 0


def _status_counts(claims: dict[str, Any] | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in (claims or {}).get("claims", []):
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    return counts


def _report(args: argparse.Namespace) -> int:
    from omnigym.evaluators.claims import read_claims
    from omnigym.evaluators.experiment import write_outputs
    from omnigym.evaluators.store import EPISODES_FILE, read_records

    records = read_records(args.folder / EPISODES_FILE)
    if not records:
        raise UsageError(f"{args.folder}: no episode records in {EPISODES_FILE}")
    output = write_outputs(
        records, args.folder, title=args.folder.name, claims=read_claims(args.folder)
    )
    print(f"report: {output.report_html.resolve()}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    result = bench(args.env_id, steps=args.steps, agent=args.agent, seed=args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['env_id']}: {result['steps']} steps in {result['seconds']:.3f} s = "
            f"{result['steps_per_sec']:,.0f} steps/s, peak RSS {result['peak_rss_mb']:.0f} MB"
        )
    return 0


def bench(env_id: str, steps: int, agent: str = "random", seed: int = 0) -> dict[str, Any]:
    """Time ``steps`` environment steps (resets included) with actions from ``agent``.

    ``seconds`` counts only the time spent inside ``step`` and ``reset``: the agent's own time
    to choose an action is left out, so the figure is the environment's speed.
    """
    env = omnigym.make(env_id)
    actor = omnigym.make_agent(agent, env=env, env_id=env_id)
    if hasattr(actor, "reset"):
        actor.reset(seed)
    observation, info = env.reset(seed=seed)
    clock = time.perf_counter
    seconds = 0.0
    for _ in range(steps):
        action = actor.act(observation, info)
        start = clock()
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            observation, info = env.reset()
        seconds += clock() - start
    env.close()
    return {
        "env_id": env_id,
        "steps": steps,
        "seconds": seconds,
        "steps_per_sec": steps / seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _dataset(args: argparse.Namespace) -> int:
    info = omnigym.spec(args.env_id)
    if info.dataset is None:
        with_data = [env.id for env in omnigym.list_envs() if env.dataset is not None]
        raise UsageError(
            f"{args.env_id} has no offline dataset (these do: {', '.join(with_data) or 'none'})"
        )
    from omnigym.registry import load_entry_point

    start = time.perf_counter()
    stats = load_entry_point(info.dataset)(args.env_id, args.episodes, args.seed, args.out)
    print(json.dumps({**stats, "seconds": time.perf_counter() - start}, indent=2))
    return 0


def _play(args: argparse.Namespace) -> int:
    env = omnigym.make(args.env_id)
    if omnigym.spec(args.env_id).obs_kind != "text":
        raise UsageError(f"{args.env_id} is not a text environment; play works on text tasks")
    _, info = env.reset(seed=args.seed)
    print(info.get("last_message", ""))
    total = 0.0
    while True:
        legal = info.get("legal_actions")
        if legal:
            print(f"(moves: {', '.join(legal)})")
        try:
            action = input("> ")
        except EOFError:
            print()
            break
        _, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        flag = "  (invalid)" if info.get("invalid_action") else ""
        print(f"{info.get('last_message', '')}\n[reward {reward:+g}, return {total:+g}]{flag}")
        if terminated or truncated:
            outcome = "solved" if info.get("success") else ("cut off" if truncated else "over")
            score = info.get("normalized_score")
            extra = f", normalized score {score:.1f}" if score is not None else ""
            print(f"episode {outcome}: return {total:+g}{extra}")
            break
    env.close()
    return 0


RENDER_FORMATS = (".png", ".gif")


def _render(args: argparse.Namespace) -> int:
    suffix = args.out.suffix.lower()
    if suffix not in RENDER_FORMATS:
        raise UsageError(f"{args.out}: expected a .png or .gif file name")
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as error:
        raise UsageError(f"--kwargs is not valid JSON: {error}") from None
    if not isinstance(kwargs, dict):
        raise UsageError(f"--kwargs must be a JSON object, got {args.kwargs}")
    info = omnigym.spec(args.env_id)
    if info.kind != "single" or not _draws_pictures(info):
        raise UsageError(
            f"{args.env_id} is not a single-agent pixel environment (its observations: "
            f"{info.obs_kind}) and has no rgb_array rendering; render draws frames of pixel "
            "tasks and of tasks that picture their instance"
        )
    steps = args.steps if suffix == ".gif" else 0
    frames, fps = render_frames(args.env_id, args.seed, steps, kwargs)
    from omnigym.io import atomic_write_bytes

    atomic_write_bytes(args.out, _encode_frames(frames, suffix, fps))
    height, width = frames[0].shape[:2]
    print(f"{args.out}: {len(frames)} frame(s) of {width}x{height}")
    return 0


def _draws_pictures(info: Any) -> bool:
    """Whether ``render`` can draw ``info``'s environment: pixel observations, or an
    environment class that offers ``render_mode="rgb_array"`` (a task environment's picture
    of its instance, such as ``Methods/IncrementalDetection-v0``'s images)."""
    from omnigym.registry import load_entry_point

    if info.obs_kind == "pixels":
        return True
    metadata = getattr(load_entry_point(info.entry_point), "metadata", {})
    return "rgb_array" in metadata.get("render_modes", ())


def render_frames(
    env_id: str, seed: int, steps: int, kwargs: dict[str, Any] | None = None
) -> tuple[list[Any], float]:
    """The frame after ``reset(seed=seed)`` and after each of ``steps`` random actions (drawn
    from the action space seeded with ``seed``), stopping early where the episode ends; and
    the environment's ``render_fps`` (20 where it declares none)."""
    try:
        env = omnigym.make(env_id, render_mode="rgb_array", **(kwargs or {}))
    except (TypeError, ValueError) as error:
        raise UsageError(f"{env_id}: {error}") from None
    try:
        env.reset(seed=seed)
        env.action_space.seed(seed)
        frames = [env.render()]
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            frames.append(env.render())
            if terminated or truncated:
                break
        fps = float(env.metadata.get("render_fps") or 20)
    finally:
        env.close()
    return frames, fps


def _encode_frames(frames: list[Any], suffix: str, fps: float) -> bytes:
    """PNG of the first frame, or an animated GIF of all (Pillow, matplotlib's own dependency)."""
    import io

    from PIL import Image

    images = [Image.fromarray(frame) for frame in frames]
    buffer = io.BytesIO()
    if suffix == ".png":
        images[0].save(buffer, format="PNG")
    else:
        images[0].save(
            buffer,
            format="GIF",
            save_all=True,
            append_images=images[1:],
            duration=round(1000 / fps),
            loop=0,
        )
    return buffer.getvalue()


if __name__ == "__main__":
    sys.exit(main())
