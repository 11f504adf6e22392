"""A headless Luanti server with omnigym's bridge mod, driven lock-step over TCP.

``LuantiServer`` starts Debian's ``minetestserver`` (Luanti 5.6, packages ``minetest-server``,
``minetest-data`` and ``lua-socket``; ``make luanti`` installs them) on 127.0.0.1 with a fresh
world folder holding the bridge mod, Craftium's ``voxel_api`` and one task mod, and a generated
``minetest.conf`` (a user's ``minetest_conf`` merges into it). The bridge connects back to a
socket this side listens on; then each ``request`` is one server step (``mods/omnigym_bridge``
describes the protocol).

No orphans (``docs/distributed.md``): the server is started with ``die_with_parent`` from a
thread that lives as long as the Python process, so the kernel kills it when the process ends,
SIGKILL included; the bridge also shuts the server down when its link closes. ``close()`` (and
garbage collection, through a finalizer) stops it and removes the world folder.

Faults: a missing engine raises ``LuantiMissing`` naming ``make luanti``; a bridge that does
not answer in time, and a server that dies, raise ``LuantiError`` with the port and the last
lines of the server log.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import weakref
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from omnigym.processes import die_with_parent

HERE = Path(__file__).resolve().parent
MODS = HERE / "mods"
TASK_MODS = HERE / "tasks"
SERVER_PATHS = ("minetestserver", "/usr/games/minetestserver")
GAMES_DIR = Path("/usr/share/games/minetest/games")
INSTALL_HINT = (
    "run `make luanti` (as root: apt-get install minetest-server minetest-data lua-socket)"
)
LOG_LINES = 30
FATAL_LOG_MARK = b"ERROR[Main]: ServerError"
"""What Luanti logs when an error stops its main loop."""
EXIT_WAIT_SECONDS = 2.0
STOP_SECONDS = 5.0
"""How long a server that was asked to shut down may take before it is killed."""

BASE_CONF = {
    "bind_address": "127.0.0.1",
    "server_announce": "false",
    "enable_damage": "true",
    "creative_mode": "false",
    "mg_name": "singlenode",
    "time_speed": "0",
    "dedicated_server_step": "0.001",
    "max_forceloaded_blocks": "4096",
    "active_block_range": "1",
    "active_block_mgmt_interval": "0.05",
    "server_unload_unused_data_timeout": "1000000",
    "enable_mod_channels": "false",
    "debug_log_level": "action",
    "secure.enable_security": "true",
    "ask_reconnect_on_crash": "false",
}
"""``minetest.conf`` lines every server gets before the task's and the user's."""


class LuantiMissing(RuntimeError):
    """Luanti or LuaSocket is not installed."""


class LuantiError(RuntimeError):
    """The server or its bridge failed; the message holds the port and the log's last lines."""


def find_server() -> str:
    """The ``minetestserver`` executable; ``LuantiMissing`` naming ``make luanti`` otherwise."""
    for candidate in SERVER_PATHS:
        found = shutil.which(candidate)
        if found:
            break
    else:
        raise LuantiMissing(f"Luanti's minetestserver is not installed: {INSTALL_HINT}")
    if not (GAMES_DIR / "minetest_game").is_dir():
        raise LuantiMissing(f"minetest_game (package minetest-data) is missing: {INSTALL_HINT}")
    if not any(Path(p).is_file() for p in _LUASOCKET_PATHS):
        raise LuantiMissing(
            f"LuaSocket for Lua 5.1 (package lua-socket) is missing: {INSTALL_HINT}"
        )
    return found


_LUASOCKET_PATHS = (
    "/usr/lib/x86_64-linux-gnu/lua/5.1/socket/core.so",
    "/usr/lib/aarch64-linux-gnu/lua/5.1/socket/core.so",
    "/usr/local/lib/lua/5.1/socket/core.so",
)


def available() -> bool:
    """Whether ``LuantiServer`` can start here."""
    try:
        find_server()
    except LuantiMissing:
        return False
    return True


class _Launcher:
    """One daemon thread that starts every server process: ``die_with_parent`` ties a child to
    the thread that started it, so that thread must live as long as the Python process."""

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                # first use, or a child forked from a process that had one: start afresh
                self._requests = queue.Queue()
                self._thread = threading.Thread(
                    target=self._serve, args=(self._requests,), name="luanti", daemon=True
                )
                self._thread.start()
            requests = self._requests
        answer: queue.Queue = queue.Queue(maxsize=1)
        requests.put((args, kwargs, answer))
        result = answer.get()
        if isinstance(result, BaseException):
            raise result
        return result

    def _serve(self, requests: queue.Queue) -> None:
        while True:
            args, kwargs, answer = requests.get()
            try:
                answer.put(subprocess.Popen(*args, preexec_fn=die_with_parent, **kwargs))
            except BaseException as error:  # handed to the caller
                answer.put(error)


_LAUNCHER = _Launcher()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: setattr(_LAUNCHER, "_lock", threading.Lock()))


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def conf_lines(conf: Mapping[str, Any]) -> str:
    """``minetest.conf`` text of ``conf`` (bools as true/false, one key per line)."""
    lines = []
    for key, value in conf.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        text = str(value)
        if "\n" in text or "\n" in key:
            raise ValueError(f"minetest_conf[{key!r}] must be one line, got {value!r}")
        lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"


def _stop(process: subprocess.Popen, link: socket.socket | None, folder: str) -> None:
    """Ends the server (politely, then by SIGKILL) and removes its folder; safe to repeat."""
    polite = False
    if link is not None:
        try:
            link.sendall(b"close\n")
            polite = True
        except OSError:
            pass
        link.close()
    if process.poll() is None:
        try:
            process.wait(timeout=STOP_SECONDS if polite else 0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    shutil.rmtree(folder, ignore_errors=True)


class LuantiServer:
    """One ``minetestserver`` running ``task_mod`` (a mod folder) under the bridge.

    Args:
        task_mod: folder of the task mod (its ``mod.conf`` names it).
        bridge: the bridge's settings (``omnigym.json``: area, spawn, region, physics, ...).
        conf: extra ``minetest.conf`` entries (the task's, then the user's ``minetest_conf``).
        timeout: seconds to wait for the bridge's hello and for each reply.
        files: more files for the world folder, by name (an exported world).
    """

    def __init__(
        self,
        task_mod: Path,
        bridge: Mapping[str, Any],
        conf: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        files: Mapping[str, bytes] | None = None,
    ):
        executable = find_server()
        task_mod = Path(task_mod)
        self.task_mod_name = _mod_name(task_mod)
        self.timeout = timeout
        self.folder = tempfile.mkdtemp(prefix="omnigym-luanti-")
        world = Path(self.folder) / "world"
        mods = world / "worldmods"
        mods.mkdir(parents=True)
        for mod in (MODS / "omnigym_bridge", MODS / "voxel_api", task_mod):
            shutil.copytree(
                mod, mods / _mod_name(mod), ignore=shutil.ignore_patterns("__pycache__")
            )
        _load_after_bridge(mods / self.task_mod_name / "mod.conf")
        for name, data in (files or {}).items():
            (world / name).write_bytes(data)
        (world / "world.mt").write_text(
            "gameid = minetest_game\nbackend = dummy\nplayer_backend = dummy\n"
            "auth_backend = files\nmod_storage_backend = files\n"
        )
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        (world / "omnigym.json").write_text(
            json.dumps({**bridge, "port": self.port, "task_mod": self.task_mod_name})
        )
        self.game_port = free_udp_port()
        settings = {
            **BASE_CONF,
            "secure.trusted_mods": "omnigym_bridge",
            "port": self.game_port,
            **dict(conf or {}),
        }
        conf_path = Path(self.folder) / "minetest.conf"
        conf_path.write_text(conf_lines(settings))
        self.log_path = Path(self.folder) / "server.log"
        self._log = self.log_path.open("wb")
        self._log_checked = 0
        self.process = _LAUNCHER.popen(
            [executable, "--config", str(conf_path), "--world", str(world)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
        )
        self.link: socket.socket | None = None
        self._reader = None
        self._finalizer = weakref.finalize(self, _stop, self.process, None, self.folder)
        try:
            self.link = self._accept()
            self._reader = self.link.makefile("rb")
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _stop, self.process, self.link, self.folder)
            self.hello, _ = self.receive()
        except BaseException:
            self.close()
            raise

    # ---- link -------------------------------------------------------------------------------

    def _accept(self) -> socket.socket:
        self.listener.settimeout(0.25)
        waited = 0.0
        try:
            while True:
                try:
                    link, _ = self.listener.accept()
                    break
                except TimeoutError:
                    waited += 0.25
                    if self.process.poll() is not None:
                        raise self.failure(
                            "the server exited before its bridge connected"
                        ) from None
                    if waited >= self.timeout:
                        raise self.failure(
                            f"the bridge did not connect within {self.timeout:g} s"
                        ) from None
        finally:
            self.listener.close()
        link.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link.settimeout(self.timeout)
        return link

    def failure(self, what: str, exiting: bool = False) -> LuantiError:
        """A ``LuantiError`` for ``what``, with the port and the end of the server log;
        ``exiting``: the server is going away (it closed the link), so its exit is awaited a
        moment, for its status and last log lines."""
        if exiting:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=EXIT_WAIT_SECONDS)
        self._log.flush()
        status = self.process.poll()
        state = "running" if status is None else f"exit status {status}"
        return LuantiError(
            f"Luanti server on port {self.port} (bridge) / {self.game_port} (game), {state}: "
            f"{what}. Last lines of {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = LOG_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    @property
    def alive(self) -> bool:
        return self.link is not None and self.process.poll() is None

    def request(self, line: str) -> tuple[dict[str, Any], bytes]:
        """Sends one command line and returns the reply's JSON and blob."""
        if self.link is None:
            raise LuantiError(f"Luanti server on port {self.port} is closed")
        try:
            self.link.sendall(line.encode() + b"\n")
        except OSError as error:
            raise self.failure(f"the link failed ({error})", exiting=True) from None
        return self.receive()

    def receive(self) -> tuple[dict[str, Any], bytes]:
        try:
            header = self._reader.readline()
            if not header:
                raise self.failure("the server closed the link (crashed?)", exiting=True)
            json_len, blob_len = (int(word) for word in header.split())
            body = self._reader.read(json_len + blob_len)
        except TimeoutError:
            error = self.failure(f"the bridge did not answer within {self.timeout:g} s")
            self._end()
            raise error from None
        except (OSError, ValueError) as error:
            # A reset or broken link: the server is most likely going away, as when it closes.
            raise self.failure(f"the link failed ({error!r})", exiting=True) from None
        if len(body) != json_len + blob_len:
            raise self.failure("the server closed the link mid-reply (crashed?)", exiting=True)
        reply = json.loads(body[:json_len])
        if "error" in reply:
            error = self.failure(f"Lua error: {reply['error']}")
            self._end()
            raise error
        self._check_log()
        return reply, body[json_len:]

    def _check_log(self) -> None:
        """Raises when the log has grown by an engine error: an error the engine catches
        (in an entity's callback, say) stops its main loop but not the step that serves the
        bridge, so the link alone would not show it."""
        size = os.fstat(self._log.fileno()).st_size
        if size == self._log_checked:
            return
        with self.log_path.open("rb") as log:
            log.seek(self._log_checked)
            new = log.read(size - self._log_checked)
        self._log_checked = size
        if FATAL_LOG_MARK in new:
            error = self.failure("the engine stopped on an error")
            self._end()
            raise error

    def _end(self) -> None:
        """Kills the server after a failure (the log stays until ``close``)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        """Stops the server and removes its world; later calls do nothing."""
        link, self.link = self.link, None
        self._finalizer.detach()
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        _stop(self.process, link, self.folder)
        self._log.close()


def decode_region(header: Mapping[str, Any], blob: bytes) -> dict[str, np.ndarray]:
    """The region a reply carries: ``content`` (uint16), ``light`` and ``param2`` (uint8), each
    indexed ``[x, y, z]``, and ``origin``, the node at index 0."""
    sx, sy, sz = (int(s) for s in header["size"])
    raw = zlib.decompress(blob)
    count = sx * sy * sz
    zyx = (sz, sy, sx)
    content = np.frombuffer(raw, "<u2", count).reshape(zyx)
    light = np.frombuffer(raw, np.uint8, count, offset=2 * count).reshape(zyx)
    param2 = np.frombuffer(raw, np.uint8, count, offset=3 * count).reshape(zyx)
    return {
        "content": np.ascontiguousarray(content.transpose(2, 1, 0)).astype(np.uint16),
        "light": np.ascontiguousarray(light.transpose(2, 1, 0)),
        "param2": np.ascontiguousarray(param2.transpose(2, 1, 0)),
        "origin": np.array(header["min"], dtype=np.int64),
    }


def encode_world(world: Any) -> tuple[dict[str, Any], bytes]:
    """An embedded engine ``World`` for the bridge's ``omnigym.load_world``: its header (origin,
    size, node-name palette) and blob (palette indices as little-endian uint16, then param2, one
    byte each, laid out z, y, x; zlib-compressed)."""
    ids, index = np.unique(world.content.transpose(2, 1, 0), return_inverse=True)
    palette = [world.materials.name(int(cid)) for cid in ids]
    raw = index.astype("<u2").tobytes() + world.param2.transpose(2, 1, 0).astype(np.uint8).tobytes()
    header = {
        "origin": [int(v) for v in world.origin],
        "size": [int(v) for v in world.shape],
        "palette": palette,
    }
    return header, zlib.compress(raw)


def _load_after_bridge(conf: Path) -> None:
    """Makes the (copied) task mod load after the bridge, so that Craftium's globals and
    ``omnigym`` exist while its ``init.lua`` runs."""
    lines = conf.read_text().splitlines() if conf.is_file() else [f"name = {conf.parent.name}"]
    for i, line in enumerate(lines):
        key, _, value = line.partition("=")
        if key.strip() == "optional_depends":
            lines[i] = f"optional_depends = {value.strip()}, omnigym_bridge"
            break
    else:
        lines.append("optional_depends = omnigym_bridge")
    conf.write_text("\n".join(lines) + "\n")


def _mod_name(folder: Path) -> str:
    """The ``name`` in a mod folder's ``mod.conf`` (the folder's name without one)."""
    conf = folder / "mod.conf"
    if not folder.is_dir():
        raise ValueError(f"task mod folder {folder} does not exist")
    if conf.is_file():
        for line in conf.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "name" and value.strip():
                return value.strip()
    return folder.name
