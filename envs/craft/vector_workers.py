"""``CraftWorkerVectorEnv``: the worlds of a Craft vector env stepped by several processes.

``CraftVectorEnv(task, num_envs, workers=k)`` with ``k > 1`` returns one. The worlds are cut
into ``k`` contiguous shares: the calling process steps the first with an ordinary
``CraftVectorEnv``, and each of ``k - 1`` worker processes steps another, at the same time. The
Python of a world's step (physics and digging around small kernels, entities, the task's
rules) holds the GIL, so one process steps its worlds on one core whatever its threads do;
``k`` processes use ``k`` cores (``docs/craft.md``, "What is measured"). World i is the same
world as in a one-process env: ``reset(seed=s)`` seeds it with ``s + i``, and every
observation, reward, flag and info is the one-process env's, bit for bit
(``tests/craft/test_vector_workers.py``).

Observations are written in shared memory: each buffer is a ``memfd`` that this process makes
and hands to the workers as a file descriptor (nothing is left behind in ``/dev/shm`` if a
process is killed), and every process writes its share's rows into it. With ``copy=True``
(default) each step still returns arrays of its own: a step writes into a buffer whose arrays
the caller no longer holds (``sys.getrefcount`` of the buffer's arrays, which every view of
them holds), and makes a new one when the caller holds them all, up to ``MAX_BUFFERS``; past
that it writes into a scratch buffer and returns copies. With ``copy=False`` every step writes
into one buffer. Rewards, flags and infos come back over a socket and are joined into
Gymnasium's vector infos.

Workers are plain interpreters started with ``subprocess``. Each ends with ``close()`` and,
however the process that started it ends (SIGKILL included), with that process
(``omnigym.processes.exit_with``).
"""

from __future__ import annotations

import contextlib
import mmap
import numbers
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from omnigym.envs.craft.vector import CraftVectorEnv, check_actions, check_vector_args
from omnigym.processes import exit_with

MAX_BUFFERS = 8
"""Shared observation buffers one env keeps at most (a caller holding more observations gets
copies)."""

SPIN_S = 0.002
"""How long a side waiting for the other polls before it sleeps. A worker that sleeps between
steps wakes to cold caches: on the 2-core machine a 32-world voxel step then costs ~40 % more
CPU (~870 against ~610 us), and 64 worlds in two processes ran at ~50,000 steps/s, no faster
than one; polling, they run at ~84,000 (docs/craft.md)."""

_ALIGN = 64
_WORKER = "from omnigym.envs.craft.vector_workers import main; main()"
_START_TIMEOUT_S = 300.0
"""How long a worker may take to build its worlds (a clean clone compiles the kernels first)."""


def split(num_envs: int, workers: int) -> list[tuple[int, int]]:
    """The ``(first, size)`` share of each worker: contiguous, sizes differing by at most one."""
    base, extra = divmod(num_envs, workers)
    shares, first = [], 0
    for j in range(workers):
        size = base + (j < extra)
        shares.append((first, size))
        first += size
    return shares


class SharedObservations:
    """One batch observation in a shared ``memfd``: ``arrays`` (an array, or a dict of them, as
    the batch's observation space), and the descriptor to hand to the workers."""

    def __init__(self, space: spaces.Space):
        leaves = space.spaces if isinstance(space, spaces.Dict) else {None: space}
        self.layout: list[tuple[Any, tuple[int, ...], np.dtype, int]] = []
        size = 0
        for key, leaf in leaves.items():
            self.layout.append((key, leaf.shape, np.dtype(leaf.dtype), size))
            nbytes = int(np.prod(leaf.shape)) * np.dtype(leaf.dtype).itemsize
            size += -(-nbytes // _ALIGN) * _ALIGN
        self.nbytes = max(size, _ALIGN)
        self.fd = os.memfd_create("omnigym-craft-obs", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.nbytes)
        self.memory = mmap.mmap(self.fd, self.nbytes)
        shaped = dict(shaped_views(self.memory, self.layout))
        self.arrays = shaped.get(None, shaped)
        # A view of a view has the first array as its base: a view of a returned array holds
        # the flat array under it, so both are watched.
        self._watched = [*(array.base for array in shaped.values()), *shaped.values()]
        del shaped  # counted references are the ones this object keeps
        self._held = self._references()

    def _references(self) -> list[int]:
        return [sys.getrefcount(array) for array in self._watched]

    def rows(self, first: int, size: int):
        """Arrays of the worlds ``first .. first + size - 1`` only (not counted as held)."""
        return views(self.memory, self.layout, slice(first, first + size))

    def free(self) -> bool:
        """Whether no array (or view) of this buffer is held outside it."""
        return self._references() == self._held

    def close_fd(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def shaped_views(memory: mmap.mmap, layout):
    """``(key, array)`` for each entry of ``layout``: its shape over its bytes of ``memory``."""
    for key, shape, dtype, offset in layout:
        yield key, np.frombuffer(memory, dtype, int(np.prod(shape)), offset).reshape(shape)


def views(memory: mmap.mmap, layout, rows: slice = slice(None)):
    """The arrays of ``layout`` in ``memory``, each cut to ``rows`` (a worker's worlds)."""
    arrays = {key: array[rows] for key, array in shaped_views(memory, layout)}
    return arrays.get(None, arrays)


def join_infos(parts: Sequence[Mapping[str, Any]], sizes: Sequence[int]) -> dict[str, Any]:
    """The vector infos of all worlds from those of each worker's share (Gymnasium's layout:
    arrays over the worlds, masks ``_key`` beside them, dicts joined key by key)."""
    total = sum(sizes)
    joined: dict[str, Any] = {}
    keys = dict.fromkeys(key for part in parts for key in part)
    for key in keys:
        values = [part.get(key) for part in parts]
        if any(isinstance(value, Mapping) for value in values):
            joined[key] = join_infos([value or {} for value in values], sizes)
            continue
        present = next(np.asarray(value) for value in values if value is not None)
        shape = (total, *present.shape[1:])
        if present.dtype == object:
            array = np.full(shape, None, dtype=object)
        else:
            array = np.zeros(shape, dtype=present.dtype)
        first = 0
        for value, size in zip(values, sizes, strict=True):
            if value is not None:
                array[first : first + size] = value
            first += size
        joined[key] = array
    return joined


def wait(connection: Connection, timeout: float | None = None) -> bool:
    """Whether ``connection`` has a message within ``timeout`` seconds (None: ever). Polls for
    ``SPIN_S`` first, yielding the core to anything else that can run, and only then sleeps."""
    deadline = time.perf_counter() + SPIN_S
    while not connection.poll(0):
        if time.perf_counter() >= deadline:
            return connection.poll(timeout)
        os.sched_yield()
    return True


def main() -> None:
    """A worker process (``python -c "...; main()" FD PID``): serves the parent at the other end
    of socket ``FD`` and ends with process ``PID``."""
    descriptor, parent = int(sys.argv[1]), int(sys.argv[2])
    exit_with(parent)
    connection = Connection(descriptor)
    task, rows, kwargs = connection.recv()
    with contextlib.suppress(EOFError):  # the parent went away without a "close"
        serve(connection, task, rows, kwargs)


def serve(connection: Connection, task: str, rows: tuple[int, int], kwargs) -> None:
    """Builds ``CraftVectorEnv(task, size, copy=False, **kwargs)`` for the worlds ``rows``
    (first, size) and answers the parent's commands until ``close``."""
    first, size = rows
    try:
        env = CraftVectorEnv(task, size, copy=False, **kwargs)
    except Exception as error:  # handed to the parent, which raises it
        connection.send(("error", error))
        return
    connection.send(("ok", None))
    buffers: dict[int, Any] = {}
    while True:
        wait(connection)
        command, *args = connection.recv()
        try:
            if command == "buffer":
                number, nbytes, layout = args
                fd = reduction.recv_handle(connection)
                memory = mmap.mmap(fd, nbytes)
                os.close(fd)
                buffers[number] = views(memory, layout, slice(first, first + size))
                continue
            if command == "reset":
                number, seed, options = args
                env.write_into(buffers[number])
                answer = env.reset(seed=seed, options=options)[1]
            elif command == "step":
                number, actions = args
                env.write_into(buffers[number])
                answer = env.step(actions)[1:]
            elif command == "render":
                answer = env.render()
            elif command == "close":
                env.close()
                connection.send(("ok", None))
                return
            else:
                raise ValueError(f"unknown command {command!r}")
        except Exception as error:
            connection.send(("error", error))
            continue
        connection.send(("ok", answer))


def describe(env: CraftVectorEnv) -> dict[str, Any]:
    """The attributes of a one-process env that this env shows as well (spaces, the task's
    settings)."""
    return {
        name: getattr(env, name)
        for name in (
            "task_id",
            "obs_mode",
            "frameskip",
            "max_timesteps",
            "radii",
            "enable_voxel_obs",
            "actions",
            "mouse_mov",
            "single_action_space",
            "single_observation_space",
        )
    } | {"kernel": env.envs[0].sim.kernel}


class CraftWorkerVectorEnv(VectorEnv):
    """``num_envs`` worlds of one Craft task stepped by this process and ``workers - 1`` worker
    processes; made by ``CraftVectorEnv(task, num_envs, workers=k)``, whose docstring describes
    the spaces, arguments and autoreset (the same here)."""

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        task: str,
        num_envs: int,
        workers: int,
        *,
        copy: bool = True,
        render_mode: str | None = None,
        **kwargs: Any,
    ):
        self.closed = True  # until the worlds exist: nothing to close
        mode = check_vector_args(num_envs, kwargs.get("autoreset_mode"), copy, render_mode)
        if (
            not isinstance(workers, numbers.Integral)
            or isinstance(workers, bool)
            or not 1 < workers <= num_envs
        ):
            raise ValueError(f"workers must be an int in [2, num_envs={num_envs}], got {workers!r}")
        self.num_envs = int(num_envs)
        self.workers = int(workers)
        self.copy = copy
        self.render_mode = render_mode
        self.autoreset_mode = mode
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.shares = split(self.num_envs, self.workers)
        self._sizes = [size for _, size in self.shares]
        self._connections: list[Any] = []
        self._processes: list[Any] = []
        self._buffers: list[SharedObservations] = []
        self._scratch: SharedObservations | None = None
        self._local_rows: dict[int, Any] = {}
        self._started = False
        kwargs["render_mode"] = render_mode
        # The first share is stepped here, which also checks every argument before any
        # process starts.
        self._local = CraftVectorEnv(task, self.shares[0][1], copy=False, **kwargs)
        for name, value in describe(self._local).items():
            setattr(self, name, value)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.closed = False
        # Plain interpreters, not multiprocessing's spawn or forkserver: those import the
        # caller's __main__ again in the worker, which runs a script without a __main__ guard
        # twice; and no fork of a process whose render threads may be running.
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}
        try:
            for rows in self.shares[1:]:
                mine, theirs = socket.socketpair()
                process = subprocess.Popen(
                    [sys.executable, "-c", _WORKER, str(theirs.fileno()), str(os.getpid())],
                    pass_fds=(theirs.fileno(),),
                    env=environment,
                    stdin=subprocess.DEVNULL,
                )
                theirs.close()
                connection = Connection(mine.detach())
                self._connections.append(connection)
                self._processes.append(process)
                connection.send((task, rows, kwargs))
            for j in range(len(self._connections)):
                self._answer(j, _START_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    # ---- gymnasium API ----------------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: Mapping[str, Any] | None = None,
    ):
        """Resets every world: world i with ``seed + i`` (or ``seed[i]``, or unseeded)."""
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            super().reset(seed=int(seed))
            seeds = [int(seed) + first for first, _ in self.shares]
        elif seed is None:
            seeds = [None] * self.workers
        elif isinstance(seed, Sequence) and len(seed) == self.num_envs:
            seeds = [list(seed[first : first + size]) for first, size in self.shares]
        else:
            raise ValueError(
                f"seed must be None, an int or a list of {self.num_envs} seeds, got {seed!r}"
            )
        number, buffer = self._take_buffer()
        for j in range(len(self._connections)):
            self._send(j, ("reset", number, seeds[j + 1], options))
        self._local.write_into(self._local_rows[number])
        infos = [self._local.reset(seed=seeds[0], options=options)[1], *self._answers()]
        self._started = True
        return self._observation(buffer), join_infos(infos, self._sizes)

    def step(self, actions: Any):
        """Steps every world with its index of ``actions`` (shape ``(num_envs,)``)."""
        if not self._started:
            raise RuntimeError(f"{self.task_id}: call reset() before step()")
        indices = check_actions(actions, self.num_envs, self.action_space, self.task_id)
        number, buffer = self._take_buffer()
        for j, (first, size) in enumerate(self.shares[1:]):
            self._send(j, ("step", number, indices[first : first + size]))
        self._local.write_into(self._local_rows[number])
        answers = [self._local.step(indices[: self._sizes[0]])[1:], *self._answers()]
        rewards = np.concatenate([answer[0] for answer in answers])
        terminations = np.concatenate([answer[1] for answer in answers])
        truncations = np.concatenate([answer[2] for answer in answers])
        infos = join_infos([answer[3] for answer in answers], self._sizes)
        return self._observation(buffer), rewards, terminations, truncations, infos

    def render(self) -> tuple[np.ndarray, ...] | None:
        """With ``render_mode="rgb_array"``, each world's current frame, ``uint8 (H, W, 3)``."""
        if self.render_mode is None:
            return None
        for j in range(len(self._connections)):
            self._send(j, ("render",))
        shares = [self._local.render(), *self._answers()]
        return tuple(frame for frames in shares for frame in frames)

    def close_extras(self, **kwargs: Any) -> None:
        for connection in self._connections:
            with contextlib.suppress(OSError):
                connection.send(("close",))
        for process, connection in zip(self._processes, self._connections, strict=True):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            connection.close()
        self._connections, self._processes = [], []
        self._buffers, self._scratch, self._local_rows = [], None, {}
        self._local.close()

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close()

    # ---- workers and buffers ----------------------------------------------------------------

    def _answer(self, j: int, timeout: float | None = None) -> Any:
        """Worker j's answer (the worker of share j + 1), raising what it raised."""
        connection = self._connections[j]
        first, size = self.shares[j + 1]
        if not wait(connection, timeout):
            raise TimeoutError(f"the worker of worlds {first}..{first + size - 1} did not start")
        try:
            status, value = connection.recv()
        except (EOFError, OSError):
            raise self._ended(j) from None
        if status == "error":
            raise value
        return value

    def _send(self, j: int, message: tuple) -> None:
        try:
            self._connections[j].send(message)
        except OSError:
            raise self._ended(j) from None

    def _ended(self, j: int) -> RuntimeError:
        first, size = self.shares[j + 1]
        code = self._processes[j].poll()
        return RuntimeError(
            f"the worker of worlds {first}..{first + size - 1} ended (exit code {code}); "
            "close this env and make a new one"
        )

    def _answers(self) -> list[Any]:
        answers, error = [], None
        for j in range(len(self._connections)):  # read every answer: none is left in a pipe
            try:
                answers.append(self._answer(j))
            except Exception as failure:
                error = error or failure
        if error is not None:
            raise error
        return answers

    def _take_buffer(self) -> tuple[int, SharedObservations | None]:
        """The buffer the next observation is written into, and its number; ``None`` as the
        buffer when the step writes into the scratch buffer, to be copied (``copy=True`` with
        ``MAX_BUFFERS`` buffers held)."""
        if not self.copy and self._buffers:
            return 0, self._buffers[0]
        for number, buffer in enumerate(self._buffers):
            if buffer.free():
                return number, buffer
        if len(self._buffers) >= MAX_BUFFERS:
            if self._scratch is None:
                self._scratch = self._new_buffer(MAX_BUFFERS)
            return MAX_BUFFERS, None
        self._buffers.append(self._new_buffer(len(self._buffers)))
        return len(self._buffers) - 1, self._buffers[-1]

    def _new_buffer(self, number: int) -> SharedObservations:
        buffer = SharedObservations(self.observation_space)
        for j, (connection, process) in enumerate(
            zip(self._connections, self._processes, strict=True)
        ):
            self._send(j, ("buffer", number, buffer.nbytes, buffer.layout))
            try:
                reduction.send_handle(connection, buffer.fd, process.pid)
            except OSError:
                raise self._ended(j) from None
        buffer.close_fd()
        self._local_rows[number] = buffer.rows(0, self._sizes[0])
        return buffer

    def _observation(self, buffer: SharedObservations | None):
        """The step's observation: the buffer's arrays (a dict of its own, which the caller may
        change), or copies of the scratch buffer's."""
        if buffer is not None:
            arrays = buffer.arrays
            return dict(arrays) if isinstance(arrays, dict) else arrays
        arrays = self._scratch.arrays
        if isinstance(arrays, dict):
            return {key: array.copy() for key, array in arrays.items()}
        return arrays.copy()


__all__ = ["CraftWorkerVectorEnv", "MAX_BUFFERS", "join_infos", "split"]
