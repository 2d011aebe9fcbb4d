"""vLLM plugin: a Reporter in every vLLM process that uses a GPU, without a worker class.

Installed with the package as entry point ``vram_exporter`` in the group
``vllm.general_plugins``.  vLLM calls ``register()`` (no arguments, result ignored) in
every process it starts -- API server, engine core, each tensor/pipeline-parallel
worker -- before that process does any work, so before it initialises CUDA, and may
call it more than once in one process.

So ``register()`` starts no Reporter by itself: it starts a watcher thread that looks
at ``torch.cuda.is_initialized()`` every ``POLL_SECONDS`` (never importing torch, never
touching CUDA), and starts the Reporter once torch has initialised CUDA in this
process.  A process that never uses a GPU (the API server) never connects to the
daemon.  vLLM allocates its KV cache through torch, so the ``torch`` pool includes it.

Settings, from the environment of the vLLM processes:

``VRAM_EXPORTER_SOCKET``
    push socket, as for ``Reporter`` (default ``/run/vram_exporter/push.sock``)
``VRAM_EXPORTER_VLLM_LABELS``
    ``name=value`` pairs separated by commas, e.g. ``model=llama-3-8b,team=search``;
    added to ``service=vllm`` (which they may override)
``VRAM_EXPORTER_VLLM_INTERVAL``
    seconds between samples (default 5)
``VRAM_EXPORTER_VLLM=0``
    turns the plugin off (so does leaving ``vram_exporter`` out of ``VLLM_PLUGINS``)
"""

import logging
import os
import sys
import threading
from typing import Any, Callable, Dict, Mapping, Optional

from . import Reporter, _track_for_fork, torch_source

__all__ = ["register", "POLL_SECONDS"]

POLL_SECONDS = 1.0
ENV_DISABLE = "VRAM_EXPORTER_VLLM"
ENV_LABELS = "VRAM_EXPORTER_VLLM_LABELS"
ENV_INTERVAL = "VRAM_EXPORTER_VLLM_INTERVAL"
DEFAULT_INTERVAL = 5.0

log = logging.getLogger("vram_exporter_client")


def cuda_ready() -> bool:
    """Whether torch has initialised CUDA in this process.  Looks at ``sys.modules``
    only: torch is never imported here, and ``is_initialized()`` creates no context
    (it is also False in a child forked from an initialised parent, where CUDA cannot
    be used)."""
    torch: Any = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    if cuda is None:
        return False
    try:
        return bool(cuda.is_initialized())
    except Exception:  # noqa: BLE001
        return False


def parse_labels(raw: Optional[str]) -> Dict[str, str]:
    """``"a=1,b=2"`` -> ``{"a": "1", "b": "2"}``; a part without ``=`` is dropped with a
    warning (the Reporter validates names and values)."""
    out: Dict[str, str] = {}
    for part in (raw or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep:
            log.warning("vram_exporter_client: %s: %r is not name=value; ignored",
                        ENV_LABELS, part)
            continue
        out[name.strip()] = value.strip()
    return out


def _interval(raw: Optional[str]) -> float:
    if not raw:
        return DEFAULT_INTERVAL
    try:
        v = float(raw)
    except ValueError:
        v = 0.0
    if not v > 0:
        log.warning("vram_exporter_client: %s=%r is not a positive number of seconds; "
                    "using %gs", ENV_INTERVAL, raw, DEFAULT_INTERVAL)
        return DEFAULT_INTERVAL
    return v


def make_reporter(environ: Mapping[str, str]) -> Reporter:
    """The Reporter the plugin starts: torch pool, runtime ``vllm`` with the version of
    the vllm module already loaded (never imported here)."""
    labels = {"service": "vllm"}
    labels.update(parse_labels(environ.get(ENV_LABELS)))
    vllm = sys.modules.get("vllm")
    version = getattr(vllm, "__version__", None) if vllm is not None else None
    return Reporter(interval=_interval(environ.get(ENV_INTERVAL)), labels=labels,
                    runtime="vllm", runtime_version=version, sources=[torch_source()])


class _Plugin(object):
    """The per-process state behind register(): at most one watcher thread and one
    Reporter, whatever the number of calls."""

    def __init__(self, new_reporter: Callable[[], Reporter],
                 ready: Callable[[], bool] = cuda_ready,
                 poll: float = POLL_SECONDS) -> None:
        self._new_reporter = new_reporter
        self._ready = ready
        self._poll = poll
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._failed = False
        self._stopped = False
        self.reporter: Optional[Reporter] = None
        _track_for_fork(self)

    def ensure(self) -> None:
        """Start the Reporter now if CUDA is up, else the watcher (once).  Never raises."""
        try:
            with self._lock:
                if self.reporter is not None or self._failed or self._stopped:
                    return
                if self._thread is not None and self._thread.is_alive():
                    return
                if self._check_locked():
                    return
                self._start_watcher_locked()
        except Exception as exc:  # noqa: BLE001  (never raise into vLLM)
            log.warning("vram_exporter_client: vLLM plugin not started: %s", exc)

    def check(self) -> bool:
        """One look: start the Reporter if CUDA is up.  True once there is one (or it
        cannot be made): the watcher then ends."""
        with self._lock:
            return self._check_locked()

    def _check_locked(self) -> bool:
        if self.reporter is not None or self._failed or self._stopped:
            return True
        try:
            if not self._ready():
                return False
            self.reporter = self._new_reporter().start()
            log.debug("vram_exporter_client: vLLM plugin started a reporter in pid %d",
                      os.getpid())
        except Exception as exc:  # noqa: BLE001
            self._failed = True  # one warning, not one per poll
            log.warning("vram_exporter_client: vLLM plugin cannot start a reporter: %s", exc)
        return True

    def _watch(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if self.check():
                    return
            except Exception:  # noqa: BLE001
                return
            stop.wait(self._poll)

    def _start_watcher_locked(self) -> None:
        stop = threading.Event()
        self._stop = stop
        t = threading.Thread(target=self._watch, args=(stop,),
                             name="vram_exporter_client.vllm", daemon=True)
        self._thread = t
        t.start()

    def stop(self) -> None:
        """End the watcher and the Reporter for good (tests)."""
        with self._lock:
            self._stopped = True
            self._stop.set()
            t, self._thread = self._thread, None
            r, self.reporter = self.reporter, None
        if t is not None and t is not threading.current_thread():
            t.join()
        if r is not None:
            r.stop()

    def _after_fork_in_child(self) -> None:
        # A Reporter restarts itself in the child; a watcher thread did not survive the
        # fork, and vLLM does not call register() again in a forked child (its
        # plugins_loaded flag is inherited), so the watcher is restarted here.
        self._lock = threading.Lock()
        watching = self._thread is not None and not self._stopped
        self._thread = None
        self._stop = threading.Event()
        if watching and self.reporter is None and not self._failed:
            try:
                self._start_watcher_locked()
            except Exception:  # noqa: BLE001
                pass


_plugin = _Plugin(lambda: make_reporter(os.environ))


def register() -> None:
    """The ``vllm.general_plugins`` entry point.  Idempotent per process; never raises;
    creates no CUDA context and imports neither torch nor vllm."""
    try:
        if os.environ.get(ENV_DISABLE, "").strip().lower() in ("0", "false", "no", "off"):
            return
        _plugin.ensure()
    except Exception:  # noqa: BLE001
        pass
