"""vram_exporter_client: push GPU allocator statistics to the node's vram_exporter.

Standard library only, Python 3.8+.  `pip install ./client/python` (distribution
vram-exporter-client), or copy this one file next to your code as
vram_exporter_client.py: the core is this module alone (vllm_plugin.py beside it is
only the vLLM entry point).

    from vram_exporter_client import Reporter
    reporter = Reporter(labels={"service": "ranker", "model": "bert-base"})
    reporter.start()            # background thread, one sample every 5 s
    ...
    reporter.sample_now()       # optional: at a request boundary (cleanest floor)

Wire contract: docs/protocol.md (push protocol v1).  The process never blocks on
the daemon (non-blocking sends that drop and count), never raises into the caller,
never imports a framework the caller has not imported, and never creates a CUDA
context by itself.
"""

import errno
import functools
import json
import logging
import os
import random
import re
import socket
import sys
import threading
import time
import weakref
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Protocol,
    Sequence, Set, Tuple, TypeVar, Union, cast,
)

if TYPE_CHECKING:  # ctypes is imported only when libcuda is first needed
    import ctypes

__all__ = [
    "Reporter",
    "torch_source",
    "jax_source",
    "cupy_source",
    "TensorRTTracker",
    "cuda_uuid",
    "default_sources",
    "DEFAULT_SOCKET",
    "PROTOCOL_VERSION",
    "MAX_MESSAGE_BYTES",
]

__version__ = "0.1.0"

PROTOCOL_VERSION = 1
DEFAULT_SOCKET = "/run/vram_exporter/push.sock"
SOCKET_ENV = "VRAM_EXPORTER_SOCKET"
MAX_MESSAGE_BYTES = 65536
MAX_VALUE = 1 << 50  # protocol: integers from 0 to 2^50
MAX_LABELS = 8
MAX_DEVICES = 16
MAX_POOLS = 32
MAX_OOM_EVENTS = 8  # protocol: newest OOM events sent per device
MAX_ALLOCATOR_SETTINGS = 16
MAX_PHASES = 16  # protocol: phase peaks per device
MAX_TRT_ENGINES = 8
MAX_REQUESTS_IN_FLIGHT = 1 << 20  # protocol: requests_in_flight from 0 to 2^20
# memory_snapshot() walks every block of the allocator: affordable once per OOM, not per
# OOM of a process failing a thousand requests a second.
OOM_SNAPSHOT_EVERY = 10.0
BACKOFF_MIN = 0.5
BACKOFF_MAX = 30.0
LOG_EVERY = 60.0  # seconds between two log lines of the same kind
# The daemon rate-limits each connection (100 messages/s, burst 200) and closes one whose
# last 20 messages were rejected: sample_now() does no work more often than this.
MIN_SAMPLE_GAP = 0.02
SETTINGS_EVERY = 60.0  # seconds between two reads of the allocator settings

log = logging.getLogger("vram_exporter_client")

# The protocol's shapes, as a source returns them: a device is
# {"uuid": "GPU-…", "pools": [pool, …]} and a pool {"name": …, "allocated": …, …}.
Pool = Dict[str, Any]
Device = Dict[str, Any]
# A source: any callable returning the `devices` list (or None / [] for nothing).
Source = Callable[[], Optional[Iterable[Mapping[str, Any]]]]

_RUNTIME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")
_LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")
_UUID_RE = re.compile(r"^(GPU|MIG)-[A-Za-z0-9/_-]+$")
_POOL_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.:-]{0,63}$")
_EXTRA_FIELD_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SETTING_KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_SETTING_VALUE_RE = re.compile(r"^[A-Za-z0-9_.:+-]{1,64}$")
_PHASE_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_F = TypeVar("_F", bound=Callable[..., Any])
_RESERVED_LABELS = frozenset((
    "pid", "uuid", "gpu", "pool", "parent", "runtime", "runtime_version", "series",
    "window", "verdict", "reason", "comm", "container_id", "pod_uid", "instance", "job",
))
# Integer pool fields defined by protocol v1 (besides allocated/reserved).
_INT_FIELDS = ("peak_allocated", "active", "inactive_split", "limit", "alloc_retries", "ooms")
_INT_FIELD_SET = frozenset(_INT_FIELDS)
_BASE_POOL_KEYS = frozenset(("name", "allocated", "reserved"))

_MSG_FLAGS = getattr(socket, "MSG_DONTWAIT", 0) | getattr(socket, "MSG_NOSIGNAL", 0)
_RECONNECT_ERRNOS = frozenset(
    e for e in (
        getattr(errno, "EPIPE", None), getattr(errno, "ECONNRESET", None),
        getattr(errno, "ENOTCONN", None), getattr(errno, "ECONNREFUSED", None),
        getattr(errno, "EBADF", None), getattr(errno, "ESHUTDOWN", None),
    ) if e is not None)


def _as_int(value: Any) -> Optional[int]:
    """A protocol integer (0..2^50) from an int/float/numpy scalar, or None."""
    if value is None or value is True or value is False:
        return None
    try:
        v = value if type(value) is int else int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if v < 0:
        return 0
    if v > MAX_VALUE:
        return MAX_VALUE
    return v


def _format_uuid(raw: Union[bytes, bytearray, Sequence[int]]) -> Optional[str]:
    """16 raw bytes -> 'GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'."""
    h = bytes(raw[:16]).hex()
    if len(h) != 32:
        return None
    return "GPU-%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


def _prefix_uuid(u: Any) -> Optional[str]:
    """torch/cupy give the UUID without 'GPU-'; NVML (the join key) has it."""
    if u is None:
        return None
    if isinstance(u, (bytes, bytearray)):
        if len(u) == 16:
            return _format_uuid(u)
        u = u.decode("ascii", "replace")
    s = str(u).strip()
    if not s:
        return None
    if s.startswith("GPU-") or s.startswith("MIG-"):
        return s
    return "GPU-" + s


# --------------------------------------------------------------------------------------
# libcuda helper (shared by the JAX and CuPy adapters)

_cuda_lock = threading.Lock()
_cuda_lib: "Optional[ctypes.CDLL]" = None  # once loaded
_cuda_failed = False      # libcuda unavailable: do not retry every sample
_cuda_uuids: Dict[int, str] = {}  # ordinal -> uuid string


def _libcuda() -> "Optional[ctypes.CDLL]":
    global _cuda_lib, _cuda_failed
    if _cuda_lib is not None or _cuda_failed:
        return _cuda_lib
    try:
        import ctypes
        lib = None
        for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if lib is None:
            raise OSError("libcuda not found")
        rc = lib.cuInit(0)  # driver API only; creates no context
        if rc != 0:
            raise OSError("cuInit failed: CUresult %d" % rc)
        _cuda_lib = lib
    except Exception as exc:  # noqa: BLE001
        _cuda_failed = True
        log.debug("libcuda unavailable, GPU UUIDs cannot be resolved: %s", exc)
    return _cuda_lib


def _cached_uuid(cache: Dict[int, str], i: int, what: str,
                 lookup: Callable[[], Optional[str]]) -> Optional[str]:
    """The GPU UUID of device ordinal i: from cache, else from the framework's lookup,
    else from the CUDA driver (cuda_uuid); a found UUID is cached, a miss is retried."""
    u = cache.get(i)
    if u is None:
        try:
            u = lookup()
        except Exception as exc:  # noqa: BLE001
            log.debug("%s(%d) failed: %s", what, i, exc)
            u = None
        if u is None:
            u = cuda_uuid(i)
        if u is not None:
            cache[i] = u
    return u


def cuda_uuid(ordinal: int) -> Optional[str]:
    """UUID ('GPU-…') of CUDA device `ordinal` (as numbered in this process, i.e.
    after CUDA_VISIBLE_DEVICES), through the driver API (cuDeviceGet +
    cuDeviceGetUuid_v2).  Returns None if libcuda cannot be loaded.  Cached.

    cuInit(0) initialises the driver API but creates no context.  Under MIG the
    driver's UUID is formatted with the "GPU-" prefix; prefer a framework's own UUID
    when it has one."""
    try:
        ordinal = int(ordinal)
        u = _cuda_uuids.get(ordinal)
        if u is not None:
            return u
        with _cuda_lock:
            lib = _libcuda()
            if lib is None:
                return None
            import ctypes
            dev = ctypes.c_int(0)
            if lib.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
                log.debug("cuDeviceGet(%d) failed", ordinal)
                return None
            buf = ctypes.create_string_buffer(16)
            fn = getattr(lib, "cuDeviceGetUuid_v2", None) or getattr(lib, "cuDeviceGetUuid", None)
            if fn is None or fn(buf, dev) != 0:
                log.debug("cuDeviceGetUuid(%d) failed", ordinal)
                return None
            u = _format_uuid(buf.raw)
            if u:
                _cuda_uuids[ordinal] = u
            return u
    except Exception as exc:  # noqa: BLE001
        log.debug("cuda_uuid(%r) failed: %s", ordinal, exc)
        return None


def _cuda_context_active(ordinal: int) -> Optional[bool]:
    """True/False whether CUDA device `ordinal` has an active primary context (no
    context is created to find out); None when unknown (no libcuda)."""
    try:
        with _cuda_lock:
            lib = _libcuda()
            if lib is None:
                return None
            import ctypes
            dev = ctypes.c_int(0)
            if lib.cuDeviceGet(ctypes.byref(dev), int(ordinal)) != 0:
                return None
            flags = ctypes.c_uint(0)
            active = ctypes.c_int(0)
            if lib.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) != 0:
                return None
            return bool(active.value)
    except Exception:  # noqa: BLE001
        return None


# --------------------------------------------------------------------------------------
# Diagnosis: out-of-memory events and allocator settings (docs/protocol.md, "OOM events"
# and "Allocator settings").

_OOM_INT_KEYS = ("requested", "device_free", "device_limit", "allocated", "reserved",
                 "inactive_split", "largest_free_block")


class _OOMLog(object):
    """The process's out-of-memory events per GPU UUID: a count and the newest
    MAX_OOM_EVENTS, repeated in every message so that a lost one loses no event (the
    daemon counts each seq once).  Process-wide, like the runtime's allocator."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq: Dict[str, int] = {}
        self._events: Dict[str, List[Dict[str, Any]]] = {}

    def record(self, uuid: str, source: str, figures: Mapping[str, Any], count: int = 1) -> None:
        """Record `count` events on `uuid` (several when a counter rose by more than
        one: only the newest carries the figures)."""
        if count < 1:
            return
        ev: Dict[str, Any] = {"source": source}
        for k in _OOM_INT_KEYS:
            v = _as_int(figures.get(k))
            if v is not None:
                ev[k] = v
        a, r = ev.get("allocated"), ev.get("reserved")
        if a is not None and r is not None and a > r:
            del ev["allocated"]  # the daemon rejects allocated > reserved
        with self._lock:
            seq = self._seq.get(uuid, 0) + count
            self._seq[uuid] = seq
            ev["seq"] = seq
            evs = self._events.setdefault(uuid, [])
            evs.append(ev)
            if len(evs) > MAX_OOM_EVENTS:
                del evs[:len(evs) - MAX_OOM_EVENTS]

    def fragment(self, uuid: str) -> str:
        """The device's `,"oom_seq":…,"oom_events":[…]` JSON, "" when it had none."""
        with self._lock:
            seq = self._seq.get(uuid)
            if seq is None:
                return ""
            evs = list(self._events.get(uuid, ()))
        parts = []
        for ev in evs:
            f = ['{"seq":%d,"source":"%s"' % (ev["seq"], ev["source"])]
            for k in _OOM_INT_KEYS:
                if k in ev:
                    f.append(',"%s":%d' % (k, ev[k]))
            f.append("}")
            parts.append("".join(f))
        return ',"oom_seq":%d,"oom_events":[%s]' % (seq, ",".join(parts))

    def clear(self) -> None:
        with self._lock:
            self._seq, self._events = {}, {}


_OOM_LOG = _OOMLog()


def _split_alloc_conf(conf: str) -> List[str]:
    """PYTORCH_CUDA_ALLOC_CONF's comma-separated items; a comma inside [...] (the list
    form of roundup_power2_divisions) does not split."""
    items: List[str] = []
    cur: List[str] = []
    depth = 0
    for c in conf:
        if c == "[":
            depth += 1
        elif c == "]":
            depth = max(0, depth - 1)
        if c == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    items.append("".join(cur))
    return [i.strip() for i in items if i.strip()]


# The keys of PYTORCH_CUDA_ALLOC_CONF that change the advice or explain an OOM.
_TORCH_SETTINGS = frozenset((
    "backend", "expandable_segments", "max_split_size_mb", "garbage_collection_threshold",
    "roundup_power2_divisions", "release_lock_on_cudamalloc",
))


def _clean_settings(raw: Mapping[str, Any]) -> Dict[str, str]:
    """Settings the daemon accepts: names and values of the protocol's patterns, at most
    MAX_ALLOCATOR_SETTINGS; anything else is left out rather than sent to be rejected."""
    out: Dict[str, str] = {}
    for k in sorted(raw):
        v = raw[k]
        if v is None or isinstance(v, bool):
            v = None if v is None else ("True" if v else "False")
        if v is None:
            continue
        v = str(v)
        if _SETTING_KEY_RE.match(k) and _SETTING_VALUE_RE.match(v) and len(out) < MAX_ALLOCATOR_SETTINGS:
            out[k] = v
    return out


def torch_allocator_settings(env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF) parsed into its known keys."""
    e = os.environ if env is None else env
    conf = e.get("PYTORCH_CUDA_ALLOC_CONF") or e.get("PYTORCH_ALLOC_CONF") or ""
    raw: Dict[str, Any] = {}
    for item in _split_alloc_conf(conf):
        k, sep, v = item.partition(":")
        k = k.strip()
        if sep and k in _TORCH_SETTINGS:
            raw[k] = v.strip()
    return _clean_settings(raw)


def jax_allocator_settings(env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """XLA_PYTHON_CLIENT_PREALLOCATE, _MEM_FRACTION and _ALLOCATOR, with JAX's defaults
    (true, 0.75, default) where unset: the advice for a preallocated pool differs."""
    e = os.environ if env is None else env
    pre = e.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").strip().lower()
    return _clean_settings({
        "preallocate": "false" if pre in ("false", "0", "no", "off") else "true",
        "mem_fraction": e.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75").strip(),
        "allocator": e.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default").strip(),
    })


# --------------------------------------------------------------------------------------
# Adapters.  A source is a callable returning the `devices` list of the protocol:
#   [{"uuid": "GPU-…", "pools": [{"name": …, "allocated": …, "reserved": …, …}]}]
# It may carry `runtime` / `runtime_version` attributes; the Reporter uses them when it
# was given no explicit runtime.


class _FrameworkSource(object):
    """Base of the framework adapters: the runtime name and version come from the
    framework's module, and only once the caller has imported it (we never import it)."""

    module = ""  # the sys.modules name, also the runtime name

    def __init__(self, pool: str) -> None:
        self.pool = pool

    @property
    def runtime(self) -> Optional[str]:
        return self.module if self.module in sys.modules else None

    @property
    def runtime_version(self) -> Optional[str]:
        m = sys.modules.get(self.module)
        return str(getattr(m, "__version__", "")) if m is not None else None


class _TorchSource(_FrameworkSource):
    """PyTorch caching allocator, one pool "torch" per CUDA device with state."""

    module = "torch"

    def __init__(self, pool: str = "torch", oom_snapshot: bool = True) -> None:
        _FrameworkSource.__init__(self, pool)
        self._uuids: Dict[int, str] = {}
        self._observer: Optional[bool] = None  # None: not tried yet
        self._ooms: Dict[int, int] = {}  # num_ooms last seen, for the counter fallback
        self._oom_snapshot = oom_snapshot
        self._last_snapshot = float("-inf")
        self._conf: Optional[Tuple[str, Dict[str, str]]] = None

    def allocator_settings(self) -> Dict[str, str]:
        """PYTORCH_CUDA_ALLOC_CONF's keys, the backend and the memory fraction."""
        conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF") or ""
        if self._conf is None or self._conf[0] != conf:
            self._conf = (conf, torch_allocator_settings())
        out = dict(self._conf[1])
        torch: Any = sys.modules.get("torch")
        cuda = getattr(torch, "cuda", None) if torch is not None else None
        if cuda is not None and "backend" not in out:
            try:
                b = cuda.get_allocator_backend()
                if isinstance(b, str):
                    out["backend"] = b
            except Exception:  # noqa: BLE001  (older torch)
                pass
        return _clean_settings(out)

    def _attach(self, torch: Any) -> None:
        """Attach the OOM observer once.  Its signature (c10 CUDACachingAllocator's
        OutOfMemoryObserver) is (device, requested, device_limit, device_free): the
        third is the per-process limit when set_per_process_memory_fraction is in
        force, else the device's total, not bytes allocated."""
        self._observer = False
        attach = getattr(getattr(torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
        if attach is None:
            return
        try:
            attach(self._on_oom)
            self._observer = True
        except Exception as exc:  # noqa: BLE001
            log.debug("cannot attach torch's OOM observer: %s", exc)

    def _on_oom(self, device: int, requested: int, limit: int, free: int) -> None:
        """Called by torch, with the GIL, after the allocator has released its lock and
        before it raises OutOfMemoryError.  Never raises."""
        try:
            torch: Any = sys.modules.get("torch")
            cuda = torch.cuda
            figures: Dict[str, Any] = {"requested": requested, "device_limit": limit, "device_free": free}
            s = cuda.memory_stats(device)
            figures["allocated"] = s.get("allocated_bytes.all.current")
            figures["reserved"] = s.get("reserved_bytes.all.current")
            figures["inactive_split"] = s.get("inactive_split_bytes.all.current")
            figures["largest_free_block"] = self._largest_free_block(cuda, device)
            r = _as_int(figures["reserved"])
            if r is not None and _as_int(limit) is not None and int(limit) < r:
                # The allocator never holds more than its limit: a smaller third
                # argument is not one (a torch whose observer passes something else).
                del figures["device_limit"]
            uuid = self._uuid(cuda, device)
            if uuid is not None:
                _OOM_LOG.record(uuid, "observer", figures)
                self._ooms[device] = s.get("num_ooms", self._ooms.get(device, 0))
        except Exception as exc:  # noqa: BLE001
            log.debug("OOM observer failed: %s", exc)

    def _largest_free_block(self, cuda: Any, device: int) -> Optional[int]:
        """The largest inactive block from memory_snapshot(), at most once per
        OOM_SNAPSHOT_EVERY seconds: the snapshot walks every block."""
        if not self._oom_snapshot:
            return None
        now = time.monotonic()
        if now - self._last_snapshot < OOM_SNAPSHOT_EVERY:
            return None
        self._last_snapshot = now
        best = 0
        for seg in cuda.memory_snapshot():
            if seg.get("device") != device:
                continue
            for b in seg.get("blocks", ()):
                if b.get("state") == "inactive":
                    best = max(best, int(b.get("size", 0)))
        return best

    def _uuid(self, cuda: Any, i: int) -> Optional[str]:
        return _cached_uuid(self._uuids, i, "torch get_device_properties",
                            lambda: _prefix_uuid(getattr(cuda.get_device_properties(i), "uuid", None)))

    def __call__(self) -> List[Device]:
        torch: Any = sys.modules.get("torch")  # never import torch for the caller
        if torch is None:
            return []
        cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_initialized():
            return []  # never initialise CUDA ourselves
        if self._observer is None:
            self._attach(torch)
        out = []
        for i in range(cuda.device_count()):
            s = cuda.memory_stats(i)  # once per device per sample
            reserved = s.get("reserved_bytes.all.current", 0)
            if not reserved:
                continue  # no state on this device
            uuid = self._uuid(cuda, i)
            if uuid is None:
                continue
            self._count_ooms(uuid, i, s)
            out.append({"uuid": uuid, "pools": [{
                "name": self.pool,
                "allocated": s.get("allocated_bytes.all.current", 0),
                "reserved": reserved,
                "peak_allocated": s.get("allocated_bytes.all.peak"),
                "active": s.get("active_bytes.all.current"),
                "inactive_split": s.get("inactive_split_bytes.all.current"),
                "alloc_retries": s.get("num_alloc_retries"),
                "ooms": s.get("num_ooms"),
            }]})
        return out

    def _count_ooms(self, uuid: str, i: int, s: Mapping[str, Any]) -> None:
        """Without the observer (torch before 2.0), the ooms counter's rise since the
        last sample is the record: the events carry this sample's figures, no size."""
        n = _as_int(s.get("num_ooms"))
        if n is None:
            return
        last = self._ooms.get(i)
        self._ooms[i] = n
        if self._observer or last is None or n <= last:
            return
        _OOM_LOG.record(uuid, "counter", {
            "allocated": s.get("allocated_bytes.all.current"),
            "reserved": s.get("reserved_bytes.all.current"),
            "inactive_split": s.get("inactive_split_bytes.all.current"),
        }, count=n - last)


def torch_source(pool: str = "torch", oom_snapshot: bool = True) -> Source:
    """Source for PyTorch's CUDA caching allocator.  Reports nothing until the caller
    has initialised CUDA through torch; never imports torch itself.  It attaches torch's
    OOM observer, which records each out-of-memory error; oom_snapshot=False leaves out
    the largest free block (one memory_snapshot() per OOM, at most every 10 s)."""
    return _TorchSource(pool, oom_snapshot)


class _JaxSource(_FrameworkSource):
    module = "jax"

    def __init__(self, pool: str = "jax") -> None:
        _FrameworkSource.__init__(self, pool)

    def __call__(self) -> List[Device]:
        jax: Any = sys.modules.get("jax")
        if jax is None:
            return []
        # jax.local_devices() would initialise the backends (and preallocate GPU
        # memory) if the caller has not: only look once JAX has backends.
        xb = sys.modules.get("jax._src.xla_bridge")
        backends = getattr(xb, "_backends", None) if xb is not None else None
        if backends is not None and not backends:
            return []
        out = []
        for d in jax.local_devices():
            if getattr(d, "platform", None) not in ("gpu", "cuda"):
                continue
            s = d.memory_stats()
            if not s:
                continue
            ordinal = getattr(d, "local_hardware_id", None)
            if ordinal is None:
                ordinal = d.id
            uuid = cuda_uuid(ordinal)
            if uuid is None:
                continue
            allocated = s.get("bytes_in_use", 0)
            reserved = s.get("pool_bytes")
            if reserved is None:
                reserved = s.get("bytes_reserved")
            if reserved is None:
                reserved = allocated
            out.append({"uuid": uuid, "pools": [{
                "name": self.pool, "allocated": allocated, "reserved": reserved,
                "peak_allocated": s.get("peak_bytes_in_use"), "limit": s.get("bytes_limit"),
            }]})
        return out


    def allocator_settings(self) -> Dict[str, str]:
        return jax_allocator_settings()


def jax_source(pool: str = "jax") -> Source:
    """Source for JAX's GPU allocator (device.memory_stats()).  UUIDs through libcuda."""
    return _JaxSource(pool)


class _CupySource(_FrameworkSource):
    module = "cupy"

    def __init__(self, pool: str = "cupy") -> None:
        _FrameworkSource.__init__(self, pool)
        self._uuids: Dict[int, str] = {}

    def _uuid(self, cupy: Any, i: int) -> Optional[str]:
        def lookup() -> Optional[str]:
            props = cupy.cuda.runtime.getDeviceProperties(i)
            return _prefix_uuid(props.get("uuid")) if hasattr(props, "get") else None
        return _cached_uuid(self._uuids, i, "cupy getDeviceProperties", lookup)

    def __call__(self) -> List[Device]:
        cupy: Any = sys.modules.get("cupy")
        if cupy is None:
            return []
        pool = cupy.get_default_memory_pool()
        n = cupy.cuda.runtime.getDeviceCount()
        out = []
        for i in range(n):
            # Entering cupy.cuda.Device(i) calls cudaSetDevice, which creates a
            # context on a device nobody used: look only at devices with one.
            active = _cuda_context_active(i)
            if active is False:
                continue
            if active is None and i != cupy.cuda.runtime.getDevice():
                continue
            with cupy.cuda.Device(i):
                used = pool.used_bytes()
                total = pool.total_bytes()
                limit = pool.get_limit()
            if not total and not used:
                continue
            uuid = self._uuid(cupy, i)
            if uuid is None:
                continue
            p = {"name": self.pool, "allocated": used, "reserved": total}
            if limit:
                p["limit"] = limit
            out.append({"uuid": uuid, "pools": [p]})
        return out


    def allocator_settings(self) -> Dict[str, str]:
        cupy: Any = sys.modules.get("cupy")
        if cupy is None:
            return {}
        try:
            return _clean_settings({"pool_limit": int(cupy.get_default_memory_pool().get_limit())})
        except Exception:  # noqa: BLE001
            return {}


def cupy_source(pool: str = "cupy") -> Source:
    """Source for CuPy's default memory pool, per device that has a context."""
    return _CupySource(pool)


def default_sources() -> List[Source]:
    """The sources a Reporter uses when given none: torch, JAX and CuPy, each of which
    reports nothing unless the caller imported (and initialised) that framework."""
    return [torch_source(), jax_source(), cupy_source()]


def _first_attr(obj: Any, names: Iterable[str]) -> Optional[int]:
    for n in names:
        try:
            v = getattr(obj, n)
        except Exception:  # noqa: BLE001
            continue
        if callable(v):
            try:
                v = v()
            except Exception:  # noqa: BLE001
                continue
        if v is not None and v is not True and v is not False:
            try:
                return int(v)
            except (TypeError, ValueError, OverflowError):
                continue
    return None


class TensorRTTracker(object):
    """Source for TensorRT engines and execution contexts (duck-typed).

    TensorRT reserves exactly what it uses, so its pools report allocated == reserved.
    Registrations are weak references: a dropped engine or context disappears from the
    next sample.  Several objects registered under the same (uuid, name) are summed;
    give distinct names ("trt.weights:bert") to see them apart.

    Weights ("trt.weights"): TensorRT exposes no "device bytes of weights" attribute.
    In order of preference:
      1. `weights_bytes=` given to register_engine() (e.g. the plan file's size);
      2. weight streaming on (`streamable_weights_size` > 0): the resident streamable
         part, `weight_streaming_budget_v2` (read every sample; a negative/automatic
         budget resolves through `get_weight_streaming_automatic_budget()`), plus the
         non-streamable part estimated as plan size − streamable size when the plan
         size is known;
      3. the serialized plan size (`engine.serialize().nbytes`, computed ONCE at
         registration; weights dominate a plan and its kernels are device-resident
         too, so it is a fair upper-bound proxy).  Pass `serialize=False` to skip
         serialising a very large engine (the pool is then reported only under weight
         streaming).
    Context ("trt.context"): `engine.device_memory_size_v2` (falls back to
    `device_memory_size`) — what a context created with the default (static)
    allocation strategy holds; with `per_profile=True`,
    `engine.get_device_memory_size_for_profile_v2(context.active_optimization_profile)`
    for contexts created with the on-profile-change strategy.  Extra fields:
    `weight_streaming_budget`, `weight_streaming_scratch` when weight streaming is on.
    """

    runtime = "tensorrt"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: Dict[int, Dict[str, Any]] = {}  # id(key) -> entry dict
        # The contexts' ExecutionContextAllocationStrategy (STATIC, ON_PROFILE_CHANGE,
        # USER_MANAGED), pushed as the allocator setting allocation_strategy when set.
        self.allocation_strategy: Optional[str] = None
        _track_for_fork(self)

    def allocator_settings(self) -> Dict[str, str]:
        s = self.allocation_strategy
        if s is not None and not isinstance(s, str):
            s = getattr(s, "name", None) or str(s).rsplit(".", 1)[-1]
        return _clean_settings({"allocation_strategy": s})

    @property
    def runtime_version(self) -> Optional[str]:
        t = sys.modules.get("tensorrt")
        return str(getattr(t, "__version__", "")) if t is not None else None

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()

    def _ref(self, obj: Any, key: int) -> Callable[[], Any]:
        def gone(_r: "weakref.ref[Any]", k: int = key) -> None:
            self._forget(k)

        try:
            return weakref.ref(obj, gone)
        except TypeError:
            log.warning("TensorRTTracker: %s does not support weak references; "
                        "call unregister() when you drop it", type(obj).__name__)

            def strong(o: Any = obj) -> Any:
                return o
            return strong

    def _forget(self, key: int) -> None:
        try:
            with self._lock:
                self._entries.pop(key, None)
        except Exception:  # noqa: BLE001
            pass

    def register_engine(self, engine: Any, uuid: Union[str, bytes], name: str = "trt.weights",
                        weights_bytes: Optional[int] = None, parent: Optional[str] = None,
                        serialize: bool = True) -> None:
        """Report `engine`'s weights as pool `name` on GPU `uuid`.  Never raises."""
        try:
            plan = None
            if weights_bytes is None and serialize:
                plan = self._plan_size(engine)
            key = id(engine)
            entry = {"kind": "engine", "ref": self._ref(engine, key), "uuid": _prefix_uuid(uuid),
                     "name": name, "parent": parent,
                     "weights": _as_int(weights_bytes), "plan": plan}
            with self._lock:
                self._entries[key] = entry
        except Exception as exc:  # noqa: BLE001
            log.warning("TensorRTTracker.register_engine failed: %s", exc)

    def register_context(self, context: Any, uuid: Union[str, bytes], name: str = "trt.context",
                         parent: Optional[str] = None, per_profile: bool = False,
                         shared: bool = False) -> None:
        """Report `context`'s device memory as pool `name` on GPU `uuid`.  shared=True:
        the context runs on a user-managed buffer (USER_MANAGED strategy,
        set_device_memory) that it shares with the engine's other shared contexts, so
        the buffer is counted once.  Never raises."""
        try:
            key = id(context)
            entry = {"kind": "context", "ref": self._ref(context, key), "uuid": _prefix_uuid(uuid),
                     "name": name, "parent": parent, "per_profile": bool(per_profile),
                     "shared": bool(shared)}
            with self._lock:
                self._entries[key] = entry
        except Exception as exc:  # noqa: BLE001
            log.warning("TensorRTTracker.register_context failed: %s", exc)

    def unregister(self, obj: Any) -> None:
        """Stop reporting an engine or context.  Never raises."""
        try:
            with self._lock:
                self._entries.pop(id(obj), None)
        except Exception:  # noqa: BLE001
            pass

    @staticmethod
    def _plan_size(engine: Any) -> Optional[int]:
        try:
            mem = engine.serialize()
            if mem is None:
                return None
            n = getattr(mem, "nbytes", None)
            if n is None:
                n = len(memoryview(mem).cast("B"))
            return int(n)
        except Exception as exc:  # noqa: BLE001
            log.debug("TensorRT engine.serialize() failed: %s", exc)
            return None

    @staticmethod
    def _streaming(engine: Any) -> Optional[Tuple[int, int, Optional[int]]]:
        """(streamable, resident budget, scratch) when weight streaming is on, else None."""
        streamable = _first_attr(engine, ("streamable_weights_size",))
        if not streamable or streamable <= 0:
            return None
        budget = _first_attr(engine, ("weight_streaming_budget_v2",))
        if budget is None or budget < 0:
            budget = _first_attr(engine, ("get_weight_streaming_automatic_budget",))
        if budget is None or budget < 0:
            budget = streamable
        scratch = _first_attr(engine, ("weight_streaming_scratch_memory_size",))
        return streamable, min(budget, streamable), scratch

    def _engine_pool(self, e: Dict[str, Any], engine: Any) -> Tuple[Optional[int], Dict[str, int]]:
        extra: Dict[str, int] = {}
        ws = self._streaming(engine)
        if e["weights"] is not None:
            b = e["weights"]
        elif ws is not None:
            streamable, budget, scratch = ws
            b = budget + (max(0, e["plan"] - streamable) if e["plan"] else 0)
        elif e["plan"] is not None:
            b = e["plan"]
        else:
            return None, extra
        if ws is not None:
            extra["weight_streaming_budget"] = ws[1]
        return b, extra

    def _context_pool(self, e: Dict[str, Any], context: Any) -> Tuple[Optional[int], Dict[str, int]]:
        extra: Dict[str, int] = {}
        engine = getattr(context, "engine", None)
        if engine is None:
            return None, extra
        b = None
        if e["per_profile"]:
            prof = getattr(context, "active_optimization_profile", 0)
            for meth in ("get_device_memory_size_for_profile_v2", "get_device_memory_size_for_profile"):
                fn = getattr(engine, meth, None)
                if fn is not None:
                    try:
                        b = int(fn(prof))
                        break
                    except Exception:  # noqa: BLE001
                        continue
        if b is None:
            b = _first_attr(engine, ("device_memory_size_v2", "device_memory_size"))
        ws = self._streaming(engine)
        if ws is not None:
            extra["weight_streaming_budget"] = ws[1]
            if ws[2] is not None:
                extra["weight_streaming_scratch"] = ws[2]
        return b, extra

    def __call__(self) -> List[Device]:
        with self._lock:
            entries = list(self._entries.values())
        sums: Dict[Tuple[str, str], Pool] = {}  # (uuid, name) -> pool
        order: List[Tuple[str, str]] = []
        # per engine object: (uuid, name, weights, streaming) and its contexts' sizes
        engines: Dict[int, Tuple[str, str, Optional[int], Optional[Tuple[int, int, Optional[int]]]]] = {}
        contexts: Dict[int, List[Tuple[int, bool]]] = {}
        for e in entries:
            obj = e["ref"]()
            if obj is None or e["uuid"] is None:
                continue
            if e["kind"] == "engine":
                b, extra = self._engine_pool(e, obj)
                engines[id(obj)] = (e["uuid"], e["name"], b, self._streaming(obj))
            else:
                b, extra = self._context_pool(e, obj)
                eng = getattr(obj, "engine", None)
                if b is not None and eng is not None:
                    contexts.setdefault(id(eng), []).append((max(0, int(b)), e["shared"]))
            if b is None:
                continue
            k = (e["uuid"], e["name"])
            p = sums.get(k)
            if p is None:
                p = {"name": e["name"], "allocated": 0, "reserved": 0}
                if e["parent"]:
                    p["parent"] = e["parent"]
                sums[k] = p
                order.append(k)
            b = max(0, int(b))
            p["allocated"] += b
            p["reserved"] += b
            for f, v in extra.items():
                p[f] = p.get(f, 0) + max(0, int(v))
        devices: Dict[str, Device] = {}
        out: List[Device] = []
        for k in order:
            d = devices.get(k[0])
            if d is None:
                d = devices[k[0]] = {"uuid": k[0], "pools": []}
                out.append(d)
            d["pools"].append(sums[k])
        for key, (u, name, weights, ws) in engines.items():
            d = devices.get(u)
            ctx = contexts.get(key, [])
            if d is None or not ctx:
                continue
            own = [b for b, shared in ctx if not shared]
            common = [b for b, shared in ctx if shared]
            info: Dict[str, Any] = {"engine": name, "contexts": len(ctx),
                                    "context_bytes": max(b for b, _ in ctx),
                                    "held_bytes": sum(own) + (max(common) if common else 0)}
            if weights is not None:
                info["weights_bytes"] = max(0, int(weights))
            if ws is not None:
                info["streamable_bytes"], info["streaming_budget_bytes"] = ws[0], ws[1]
            d.setdefault("trt_engines", []).append(info)
        return out


# --------------------------------------------------------------------------------------
# Fork handling: one at-fork hook for every live Reporter / tracker.

class _ForkAware(Protocol):
    def _after_fork_in_child(self) -> None: ...


_fork_objects: "weakref.WeakSet[_ForkAware]" = weakref.WeakSet()
_fork_hook_lock = threading.Lock()
_fork_hook_installed = False


def _after_fork_in_child() -> None:
    global _cuda_lock
    _cuda_lock = threading.Lock()
    _OOM_LOG.__init__()  # type: ignore[misc]  # the parent's events are not the child's
    for obj in list(_fork_objects):
        try:
            obj._after_fork_in_child()
        except Exception:  # noqa: BLE001
            pass


def _track_for_fork(obj: _ForkAware) -> None:
    global _fork_hook_installed
    with _fork_hook_lock:
        if not _fork_hook_installed and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _fork_hook_installed = True
        _fork_objects.add(obj)


# --------------------------------------------------------------------------------------


def _sanitize_runtime_version(v: Any) -> Optional[str]:
    if v is None:
        return None
    s = "".join(c for c in str(v) if c.isprintable())
    b = s.encode("utf-8", "ignore")[:64]
    return b.decode("utf-8", "ignore") or None


def _validate_labels(labels: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    if not labels:
        return out
    try:
        items = list(dict(labels).items())
    except Exception:  # noqa: BLE001
        log.warning("vram_exporter_client: labels must be a mapping of str to str; ignored")
        return out
    for name, value in items:
        if not isinstance(name, str) or not _LABEL_NAME_RE.match(name) or name.startswith("__") \
                or name in _RESERVED_LABELS:
            log.warning("vram_exporter_client: invalid or reserved label name %r dropped", name)
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            log.warning("vram_exporter_client: label %r: value must be a string; dropped", name)
            continue
        try:
            n = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            n = 0
        if not 1 <= n <= 128:
            log.warning("vram_exporter_client: label %r: value must be 1-128 bytes of UTF-8; dropped",
                        name)
            continue
        if len(out) >= MAX_LABELS:
            log.warning("vram_exporter_client: more than %d labels; %r dropped", MAX_LABELS, name)
            continue
        out[name] = value
    return out


class _Phase(object):
    """The context manager of Reporter.phase()."""

    def __init__(self, reporter: "Reporter", name: str) -> None:
        self._r = reporter
        self._name = name if isinstance(name, str) and _PHASE_RE.match(name) else None
        self._dev: Optional[int] = None
        if self._name is None:
            reporter._warn("phase:%r" % (name,), "invalid phase name %r (want ^[a-z][a-z0-9_]{0,31}$); not recorded", name)

    def __enter__(self) -> "_Phase":
        try:
            torch: Any = sys.modules.get("torch")  # never imported for the caller
            cuda = getattr(torch, "cuda", None) if torch is not None else None
            if self._name is not None and cuda is not None and cuda.is_initialized():
                dev = int(cuda.current_device())
                cuda.reset_peak_memory_stats(dev)
                self._dev = dev
        except Exception as exc:  # noqa: BLE001
            self._r._warn("phase", "cannot reset the peak counter: %s", exc)
        return self

    def __exit__(self, *exc: Any) -> "Literal[False]":
        dev, self._dev = self._dev, None
        if dev is None or self._name is None:
            return False
        try:
            cuda = sys.modules["torch"].cuda
            peak = _as_int(cuda.max_memory_allocated(dev))
            u = self._r._phase_uuid(cuda, dev)
            if peak is not None and u is not None:
                self._r._record_phase(u, self._name, peak)
        except Exception as exc:  # noqa: BLE001
            self._r._warn("phase", "cannot read the peak counter: %s", exc)
        return False


class _Request(object):
    """The context manager of Reporter.request()."""

    def __init__(self, reporter: "Reporter") -> None:
        self._r = reporter
        # the fork generation of each enter not yet exited (one object may be entered
        # again, nested): an exit decrements only the count its enter incremented
        self._held: List[int] = []

    def __enter__(self) -> "_Request":
        try:
            self._held.append(self._r._request_begin())
        except Exception:  # noqa: BLE001
            pass
        return self

    def __exit__(self, *exc: Any) -> "Literal[False]":
        try:
            if self._held:
                self._r._request_end(self._held.pop())
        except Exception:  # noqa: BLE001
            pass
        return False


class Reporter(object):
    """Pushes this process's GPU allocator statistics to vram_exporter.

    Reporter(socket_path=None, interval=5.0, labels=None, runtime=None,
             runtime_version=None, sources=None, logger=None)

    socket_path: argument, else $VRAM_EXPORTER_SOCKET, else /run/vram_exporter/push.sock.
    sources: list of callables returning the protocol's `devices` list; None means
    default_sources() (torch, JAX, CuPy: each silent unless the caller uses it); [] means
    none (use set_pool() / add_source()).
    runtime: explicit runtime name; else the first source that reported devices (or is
    loaded) names it; else "unknown".

    No public method raises.  Counters: sent, dropped (socket full or message too large),
    errors (connect/send failures, failing sources, encoding errors).
    """

    def __init__(self, socket_path: Optional[str] = None, interval: float = 5.0,
                 labels: Optional[Mapping[str, Any]] = None, runtime: Optional[str] = None,
                 runtime_version: Optional[str] = None,
                 sources: Optional[Iterable[Source]] = None,
                 logger: Optional[logging.Logger] = None, **testing: Any) -> None:
        self._log: logging.Logger = logger or log
        self._clock: Callable[[], float] = testing.pop("_clock", time.monotonic)
        self._sleep: Any = testing.pop("_sleep", None)  # reserved for tests; Event.wait is used
        self._socket_factory: Optional[Callable[[], socket.socket]] = testing.pop(
            "_socket_factory", None)
        self._random: Callable[[], float] = testing.pop("_random", random.random)
        self._min_gap: float = testing.pop("_min_gap", MIN_SAMPLE_GAP)
        if testing:
            self._log.warning("vram_exporter_client: unknown Reporter arguments ignored: %s",
                              ", ".join(sorted(testing)))
        try:
            self.socket_path: str = socket_path or os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET
            try:
                self.interval: float = max(0.01, float(interval))
            except (TypeError, ValueError):
                self._log.warning("vram_exporter_client: invalid interval %r; using 5s", interval)
                self.interval = 5.0
            self.labels = _validate_labels(labels)
            self.runtime: Optional[str] = None
            if runtime is not None:
                if isinstance(runtime, str) and _RUNTIME_RE.match(runtime):
                    self.runtime = runtime
                else:
                    self._log.warning("vram_exporter_client: invalid runtime %r ignored", runtime)
            self.runtime_version: Optional[str] = _sanitize_runtime_version(runtime_version)
            self._sources: List[Source] = list(default_sources() if sources is None else sources)
        except Exception as exc:  # noqa: BLE001  (never raise into the caller)
            self._log.warning("vram_exporter_client: bad Reporter arguments: %s", exc)
            self.socket_path = DEFAULT_SOCKET
            self.interval, self.labels, self.runtime, self.runtime_version = 5.0, {}, None, None
            self._sources = []
        self._static: Dict[Tuple[Optional[str], str], Pool] = {}  # (uuid, name) -> pool dict
        self._static_order: List[Tuple[Optional[str], str]] = []
        self._sent = 0
        self._dropped = 0
        self._errors = 0
        self._sock: Optional[socket.socket] = None
        self._pid = os.getpid()
        self._last_sample = float("-inf")
        self._failures = 0
        self._next_connect = 0.0
        self._last_log: Dict[str, float] = {}
        self._suppressed: Dict[str, int] = {}
        self._lock = threading.Lock()       # socket + counters
        self._state_lock = threading.Lock()  # sources + static pools
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self._running = False
        self._last_sample = float("-inf")
        # cached JSON head of the message, keyed by (runtime, runtime_version)
        self._head: Optional[Tuple[Tuple[str, Optional[str], str], str]] = None
        self._ok_uuids: Set[str] = set()   # validation caches
        self._ok_names: Set[str] = set()
        self._rv_cache: Dict[Any, Optional[str]] = {}
        # allocator settings of the message's runtime, re-read every SETTINGS_EVERY s
        self._settings: Optional[Tuple[str, float, str]] = None  # (runtime, when, JSON)
        # phase peaks since the last message sent: uuid -> phase -> bytes
        self._phases: Dict[str, Dict[str, int]] = {}
        self._phase_uuids: Dict[int, str] = {}
        self._engines: Dict[str, str] = {}  # uuid -> trt_engines JSON of the last _collect
        # requests in flight (request()): its own lock, never held around I/O, so a
        # request never waits for a sample being sent
        self._flight_lock = threading.Lock()
        self._in_flight = 0
        self._flight_used = False  # request() seen once: messages carry requests_in_flight
        self._flight_gen = 0       # bumped in a forked child: the parent's requests are not its own
        _track_for_fork(self)

    # ---- counters ------------------------------------------------------------------
    @property
    def sent(self) -> int:
        """Messages handed to the kernel."""
        return self._sent

    @property
    def dropped(self) -> int:
        """Samples dropped instead of blocking (socket buffer full) or because the
        message was over 64 KiB.  Sent to the daemon as client_dropped."""
        return self._dropped

    @property
    def errors(self) -> int:
        """Connect/send failures, failing sources, encoding errors."""
        return self._errors

    # ---- logging -------------------------------------------------------------------
    def _warn(self, key: str, msg: str, *args: Any, **kw: Any) -> None:
        """Rate-limited: at most one line per key per LOG_EVERY seconds."""
        level = kw.get("level", logging.WARNING)
        try:
            now = self._clock()
            last = self._last_log.get(key)
            if last is not None and now - last < LOG_EVERY:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return
            self._last_log[key] = now
            n = self._suppressed.pop(key, 0)
            if n:
                msg += " (%d similar messages suppressed)" % n
            self._log.log(level, "vram_exporter_client: " + msg, *args)
        except Exception:  # noqa: BLE001
            pass

    # ---- configuration -------------------------------------------------------------
    def add_source(self, fn: Source) -> None:
        """Add a callable returning the protocol's `devices` list.  Never raises."""
        try:
            if not callable(fn):
                self._warn("add_source", "add_source: %r is not callable; ignored", fn)
                return
            with self._state_lock:
                self._sources = self._sources + [fn]
        except Exception:  # noqa: BLE001
            pass

    def set_pool(self, uuid: Union[str, bytes], name: str, allocated: int = 0,
                 reserved: Optional[int] = None, **more: Any) -> None:
        """A static pool on GPU `uuid` included in every sample until clear_pool().
        `more`: peak_allocated, active, inactive_split, limit, parent, alloc_retries,
        ooms.  It overrides a source's pool of the same name on the same GPU."""
        try:
            u = _prefix_uuid(uuid)
            p = {"name": name, "allocated": allocated,
                 "reserved": allocated if reserved is None else reserved}
            p.update(more)
            with self._state_lock:
                k = (u, name)
                if k not in self._static:
                    self._static_order = self._static_order + [k]
                self._static[k] = p
        except Exception as exc:  # noqa: BLE001
            self._warn("set_pool", "set_pool failed: %s", exc)

    def clear_pool(self, uuid: Union[str, bytes], name: str) -> None:
        """Remove a pool added with set_pool().  Never raises."""
        try:
            k = (_prefix_uuid(uuid), name)
            with self._state_lock:
                if self._static.pop(k, None) is not None:
                    self._static_order = [x for x in self._static_order if x != k]
        except Exception:  # noqa: BLE001
            pass

    # ---- phases --------------------------------------------------------------------
    def phase(self, name: str) -> "_Phase":
        """`with reporter.phase("preprocess"):` records the peak allocated bytes inside
        the block (torch: the current device's peak counter, reset when the block
        begins), pushed as the phase's peak since the previous message.  The counter is
        process-wide: two phases running at once in two threads see each other's
        allocations, and the pool's peak_allocated becomes "since the last reset".
        Names: ^[a-z][a-z0-9_]{0,31}$, at most 16 per GPU.  Never raises."""
        return _Phase(self, name)

    def phased(self, name: str) -> Callable[[_F], _F]:
        """Decorator form of phase(): `@reporter.phased("infer")`."""
        def wrap(fn: _F) -> _F:
            @functools.wraps(fn)
            def inner(*args: Any, **kw: Any) -> Any:
                with self.phase(name):
                    return fn(*args, **kw)
            return cast(_F, inner)
        return wrap

    # ---- requests in flight --------------------------------------------------------
    def request(self) -> "_Request":
        """`with reporter.request(): handle(...)` counts one request in flight for the
        block's duration (also when it raises).  Once used, every message carries
        requests_in_flight: the requests in flight while the allocator stats were read.
        It lets the daemon tell a leak from load in flight: a server never idle has an
        allocated floor equal to its least load, which climbs with traffic like a leak;
        a sample with 0 in flight is the process at rest, its true floor.  Before the
        first request() no message carries the field.  Thread-safe; never raises."""
        return _Request(self)

    def requested(self, fn: _F) -> _F:
        """Decorator form of request(): `@reporter.requested` on the request handler."""
        @functools.wraps(fn)
        def inner(*args: Any, **kw: Any) -> Any:
            with self.request():
                return fn(*args, **kw)
        return cast(_F, inner)

    def _request_begin(self) -> int:
        with self._flight_lock:
            self._in_flight += 1
            self._flight_used = True
            return self._flight_gen

    def _request_end(self, gen: int) -> None:
        with self._flight_lock:
            if gen == self._flight_gen and self._in_flight > 0:
                self._in_flight -= 1

    def _requests_in_flight(self) -> Optional[int]:
        """The requests in flight now, None before request() was first used."""
        with self._flight_lock:
            return self._in_flight if self._flight_used else None

    def _phase_uuid(self, cuda: Any, dev: int) -> Optional[str]:
        u = self._phase_uuids.get(dev)
        if u is None:
            try:
                u = _prefix_uuid(getattr(cuda.get_device_properties(dev), "uuid", None))
            except Exception:  # noqa: BLE001
                u = None
            if u is None:
                u = cuda_uuid(dev)
            if u is not None:
                self._phase_uuids[dev] = u
        return u

    def _record_phase(self, uuid: str, name: str, peak: int) -> None:
        with self._state_lock:
            per = self._phases.setdefault(uuid, {})
            if name not in per and len(per) >= MAX_PHASES:
                self._warn("phases", "more than %d phases on %s; phase %r not recorded", MAX_PHASES, uuid, name)
                return
            per[name] = max(per.get(name, 0), peak)

    def _phase_fragment(self, uuid: str, taken: Dict[str, Dict[str, int]]) -> str:
        per = taken.get(uuid)
        if not per:
            return ""
        return ',"phase_peaks":[%s]' % ",".join(
            '{"phase":"%s","peak_allocated":%d}' % (n, min(v, MAX_VALUE)) for n, v in sorted(per.items()))

    # ---- sampling ------------------------------------------------------------------
    def _collect(self) -> Tuple[str, Optional[str], List[Tuple[str, List[str]]]]:
        """Run the sources, merge by uuid, validate.  Returns (runtime, rversion, devices)."""
        with self._state_lock:
            sources = self._sources
            static = [(k, self._static[k]) for k in self._static_order]
        devices: Dict[Any, Dict[Any, Any]] = {}   # uuid -> {name: pool}
        order: List[Any] = []
        engines: Dict[str, List[Any]] = {}  # uuid -> TensorRT engines (trt_engines)
        runtime: Any = self.runtime
        rversion = self.runtime_version
        fallback: Optional[Source] = None
        for src in sources:
            try:
                res = src()
            except Exception as exc:  # noqa: BLE001
                with self._lock:
                    self._errors += 1
                self._warn("source:%s" % _src_name(src), "source %s raised %s: %s",
                           _src_name(src), type(exc).__name__, exc)
                continue
            if runtime is None:
                r = getattr(src, "runtime", None)
                if r:
                    if res:
                        runtime = r
                        if rversion is None:
                            rversion = self._rversion(getattr(src, "runtime_version", None))
                    elif fallback is None:
                        fallback = src
            if not res:
                continue
            try:
                for dev in res:
                    u = dev.get("uuid")
                    pools = devices.get(u)
                    if pools is None:
                        pools = devices[u] = {}
                        order.append(u)
                    engs = dev.get("trt_engines")
                    if engs and isinstance(u, str):
                        engines.setdefault(u, []).extend(engs)
                    for p in dev.get("pools") or ():
                        n = p.get("name")
                        if n in pools:
                            self._warn("dup:%s" % n, "pool %r on %s reported twice; kept the first",
                                       n, u)
                            continue
                        pools[n] = p
            except Exception as exc:  # noqa: BLE001
                with self._lock:
                    self._errors += 1
                self._warn("source:%s" % _src_name(src), "source %s returned a malformed result: %s",
                           _src_name(src), exc)
        for (u, n), p in static:  # static pools override
            pools = devices.get(u)
            if pools is None:
                pools = devices[u] = {}
                order.append(u)
            pools[n] = p
        if runtime is None and fallback is not None:
            runtime = getattr(fallback, "runtime", None)
            if rversion is None:
                rversion = self._rversion(getattr(fallback, "runtime_version", None))
        if runtime is not self.runtime and not (isinstance(runtime, str) and _RUNTIME_RE.match(runtime)):
            runtime = "unknown"
        if runtime is None:
            runtime = "unknown"
        self._engines = dict((u, self._engines_json(u, e)) for u, e in engines.items())
        return runtime, rversion, self._validate(devices, order)

    def _engines_json(self, uuid: str, engines: List[Any]) -> str:
        """The device's `,"trt_engines":[…]`: engines named by the pool pattern, unique,
        at most MAX_TRT_ENGINES; anything else is left out with a warning."""
        parts: List[str] = []
        seen: Set[str] = set()
        for e in engines:
            try:
                name, n = e.get("engine"), _as_int(e.get("contexts"))
                if not isinstance(name, str) or not _POOL_RE.match(name) or name in seen or n is None:
                    self._warn("trt_engine", "TensorRT engine %r on %s skipped", name, uuid)
                    continue
                if len(parts) >= MAX_TRT_ENGINES:
                    self._warn("trt_engines", "more than %d TensorRT engines on %s", MAX_TRT_ENGINES, uuid)
                    break
                seen.add(name)
                f = ['{"engine":"%s","contexts":%d' % (name, n)]
                for k in ("context_bytes", "held_bytes", "weights_bytes", "streamable_bytes", "streaming_budget_bytes"):
                    v = _as_int(e.get(k))
                    if v is not None:
                        f.append(',"%s":%d' % (k, v))
                f.append("}")
                parts.append("".join(f))
            except Exception as exc:  # noqa: BLE001
                self._warn("trt_engine", "TensorRT engine on %s skipped: %s", uuid, exc)
        return ',"trt_engines":[%s]' % ",".join(parts) if parts else ""

    def _rversion(self, raw: Any) -> Optional[str]:
        v = self._rv_cache.get(raw)
        if v is None and raw is not None:
            v = _sanitize_runtime_version(raw)
            if len(self._rv_cache) < 64:
                self._rv_cache[raw] = v
        return v

    def _validate(self, devices: Dict[Any, Dict[Any, Any]],
                  order: List[Any]) -> List[Tuple[str, List[str]]]:
        """Validate and serialise: returns [(uuid, [pool JSON fragment, ...])].

        Pools are serialised here, straight from validated parts (names and UUIDs match
        the protocol's patterns, so they need no escaping), which costs about half of
        json.dumps() on the same data."""
        out: List[Tuple[str, List[str]]] = []
        ok_uuids = self._ok_uuids
        for u in order:
            if u not in ok_uuids:
                if not isinstance(u, str) or len(u) > 96 or not _UUID_RE.match(u):
                    self._warn("uuid", "invalid GPU UUID %r skipped", u)
                    continue
                if len(ok_uuids) < 1024:
                    ok_uuids.add(u)
            if len(out) >= MAX_DEVICES:
                self._warn("devices", "more than %d devices; the rest skipped", MAX_DEVICES)
                break
            frags: List[Tuple[str, Optional[str], str]] = []
            children: Optional[List[int]] = None
            for name, p in devices[u].items():
                q = self._pool(name, p)
                if q is None:
                    continue
                if q[1] is not None:
                    if children is None:
                        children = []
                    children.append(len(frags))
                frags.append(q)
            if children:
                # a parent must be another pool of this device, without a parent itself
                top = set(q[2] for q in frags if q[1] is None)
                bad = set()
                for i in children:
                    _f, par, name = frags[i]
                    if par not in top:
                        self._warn("parent:%s" % name,
                                   "pool %r: parent %r missing or nested; pool skipped", name, par)
                        bad.add(i)
                if bad:
                    frags = [q for i, q in enumerate(frags) if i not in bad]
            if len(frags) > MAX_POOLS:
                self._warn("pools", "more than %d pools on %s; the rest skipped", MAX_POOLS, u)
                frags = frags[:MAX_POOLS]
            out.append((u, [q[0] for q in frags]))
        return out

    def _pool(self, name: Any, p: Mapping[str, Any]) -> Optional[Tuple[str, Optional[str], str]]:
        """(JSON fragment, parent or None, name) for one pool, or None if invalid."""
        if name not in self._ok_names:
            if not isinstance(name, str) or not _POOL_RE.match(name):
                self._warn("poolname", "invalid pool name %r skipped", name)
                return None
            if len(self._ok_names) < 4096:
                self._ok_names.add(name)
        a = p.get("allocated")
        if type(a) is not int or not 0 <= a <= MAX_VALUE:
            a = _as_int(a)
            if a is None:
                self._warn("alloc:%s" % name, "pool %r has no integer 'allocated'; skipped", name)
                return None
        r = p.get("reserved")
        if type(r) is not int or not 0 <= r <= MAX_VALUE:
            r = _as_int(r)
        if r is None or r < a:
            r = a  # the daemon rejects allocated > reserved
        parts = ['{"name":"', name, '","allocated":', str(a), ',"reserved":', str(r)]
        parent = None
        for k, v in p.items():
            if v is None or k in _BASE_POOL_KEYS:
                continue
            if k in _INT_FIELD_SET:
                if type(v) is not int or not 0 <= v <= MAX_VALUE:
                    v = _as_int(v)
                    if v is None:
                        continue
                parts.append(',"%s":%d' % (k, v))
            elif k == "parent":
                if not v:
                    continue
                if not isinstance(v, str) or not _POOL_RE.match(v) or v == name:
                    self._warn("parent:%s" % name, "pool %r: invalid parent %r; pool skipped",
                               name, v)
                    return None
                parent = v
                parts.append(',"parent":"%s"' % v)
            elif isinstance(k, str) and _EXTRA_FIELD_RE.match(k):
                # not in protocol v1: the daemon ignores it, but it is kept for readers
                if isinstance(v, str):
                    if len(v) <= 128:
                        parts.append(',"%s":%s' % (k, json.dumps(v)))
                else:
                    v = _as_int(v)
                    if v is not None:
                        parts.append(',"%s":%d' % (k, v))
        parts.append("}")
        return "".join(parts), parent, name

    def _allocator_json(self, runtime: str) -> str:
        """The `,"allocator":{…}` of the message's runtime, "" when it has none: from
        the source that names the runtime, else from the environment by name."""
        now = self._clock()
        cached = self._settings
        if cached is not None and cached[0] == runtime and now - cached[1] < SETTINGS_EVERY:
            return cached[2]
        settings: Dict[str, str] = {}
        try:
            found = False
            for src in self._sources:
                fn = getattr(src, "allocator_settings", None)
                if fn is not None and getattr(src, "runtime", None) == runtime:
                    settings, found = fn(), True
                    break
            if not found and runtime == "torch":
                settings = torch_allocator_settings()
            elif not found and runtime == "jax":
                settings = jax_allocator_settings()
            settings = _clean_settings(settings)
        except Exception as exc:  # noqa: BLE001
            self._warn("settings", "cannot read the allocator settings: %s", exc)
            settings = {}
        js = ',"allocator":' + json.dumps(settings, separators=(",", ":"), sort_keys=True) if settings else ""
        self._settings = (runtime, now, js)
        return js

    def _encode(self, runtime: str, rversion: Optional[str],
                devices: List[Tuple[str, List[str]]], dropped: int,
                in_flight: Optional[int] = None) -> bytes:
        """The message.  in_flight: requests in flight while the stats were read
        (sample_now), None to leave requests_in_flight out."""
        settings = self._allocator_json(runtime)
        head = self._head
        if head is None or head[0] != (runtime, rversion, settings):
            h = '{"v":%d,"runtime":%s' % (PROTOCOL_VERSION, json.dumps(runtime))
            if rversion:
                h += ',"runtime_version":' + json.dumps(rversion)
            if self.labels:
                h += ',"labels":' + json.dumps(self.labels, separators=(",", ":"))
            h += settings
            h += ',"client_dropped":'
            head = self._head = ((runtime, rversion, settings), h)
        parts = [head[1], str(int(dropped))]
        if in_flight is not None:
            parts.append(',"requests_in_flight":%d' % min(max(int(in_flight), 0), MAX_REQUESTS_IN_FLIGHT))
        parts.append(',"devices":[')
        with self._state_lock:
            taken = self._phases
        for i, (u, frags) in enumerate(devices):
            parts.append('%s{"uuid":"%s","pools":[%s]%s%s%s}' % (
                "," if i else "", u, ",".join(frags), _OOM_LOG.fragment(u),
                self._phase_fragment(u, taken), self._engines.get(u, "")))
        parts.append("]}")
        return "".join(parts).encode("utf-8")

    def sample_now(self) -> bool:
        """Collect and send one sample in the caller's thread.  Returns True if the
        message was handed to the kernel.  Never raises, never blocks on the daemon.
        Calls within 20 ms of the previous sample return False at once (the daemon
        accepts at most 100 messages/s per connection)."""
        try:
            if self._pid != os.getpid():
                self._after_fork_in_child()
            if self._min_gap:
                now = self._clock()
                if now - self._last_sample < self._min_gap:
                    return False  # a sample went out just now (daemon rate limit)
                self._last_sample = now
            # Read before and after the stats: a request that began while they were read
            # counts as in flight (err towards busy: an idle sample is the true floor).
            before = self._requests_in_flight()
            runtime, rversion, devices = self._collect()
            after = self._requests_in_flight()
            in_flight = None if after is None else max(before or 0, after)
            with self._lock:
                try:
                    data = self._encode(runtime, rversion, devices, self._dropped, in_flight)
                except Exception as exc:  # noqa: BLE001
                    self._errors += 1
                    self._warn("encode", "cannot encode sample: %s", exc)
                    return False
                if len(data) > MAX_MESSAGE_BYTES:
                    self._dropped += 1
                    self._warn("too_large", "sample of %d bytes is over %d bytes; dropped",
                               len(data), MAX_MESSAGE_BYTES)
                    return False
                with self._state_lock:
                    taken, self._phases = self._phases, {}
                ok = self._send_locked(data)
                if not ok:  # keep the peaks for the next message
                    with self._state_lock:
                        for u, per in taken.items():
                            mine = self._phases.setdefault(u, {})
                            for n, v in per.items():
                                mine[n] = max(mine.get(n, 0), v)
                return ok
        except Exception as exc:  # noqa: BLE001
            try:
                self._errors += 1
                self._warn("sample", "sample failed: %s: %s", type(exc).__name__, exc)
            except Exception:  # noqa: BLE001
                pass
            return False

    # ---- socket --------------------------------------------------------------------
    def _connect_locked(self) -> bool:
        now = self._clock()
        if now < self._next_connect:
            return False
        try:
            if self._socket_factory is not None:
                s = self._socket_factory()
            else:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                s.setblocking(False)
                s.connect(self.socket_path)
            except Exception:
                s.close()
                raise
        except Exception as exc:  # noqa: BLE001
            self._errors += 1
            self._failures += 1
            delay = min(BACKOFF_MAX, BACKOFF_MIN * (2 ** min(self._failures - 1, 16)))
            delay = min(BACKOFF_MAX, delay * (0.8 + 0.4 * self._random()))
            self._next_connect = now + delay
            self._warn("connect", "cannot connect to %s: %s (retry in %.1fs)",
                       self.socket_path, exc, delay)
            return False
        if self._failures:
            self._log.info("vram_exporter_client: connected to %s", self.socket_path)
        self._failures = 0
        self._sock = s
        return True

    def _close_locked(self) -> None:
        s, self._sock = self._sock, None
        if s is not None:
            try:
                s.close()
            except Exception:  # noqa: BLE001
                pass

    def _send_locked(self, data: bytes) -> bool:
        for attempt in (0, 1):
            if self._sock is None and not self._connect_locked():
                return False
            try:
                # _connect_locked() has set the socket when it returned True
                cast(socket.socket, self._sock).send(data, _MSG_FLAGS)
                self._sent += 1
                return True
            except (BlockingIOError, InterruptedError):
                self._dropped += 1
                self._warn("full", "socket buffer full (daemon overloaded?); sample dropped",
                           level=logging.INFO)
                return False
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:
                    self._dropped += 1
                    self._warn("msgsize", "sample of %d bytes too large for the socket; dropped",
                               len(data))
                    return False
                self._errors += 1
                self._close_locked()
                if exc.errno in _RECONNECT_ERRNOS and attempt == 0:
                    # peer gone (daemon restarted?): one immediate reconnect attempt
                    self._warn("send", "connection lost (%s); reconnecting", exc, level=logging.INFO)
                    continue
                self._warn("send", "send failed: %s", exc)
                return False
        return False

    # ---- thread --------------------------------------------------------------------
    def _run(self, stop: threading.Event) -> None:
        next_t = self._clock()
        while not stop.is_set():
            self.sample_now()
            next_t += self.interval
            now = self._clock()
            if next_t < now:  # fell behind (suspended?): don't burst
                next_t = now + self.interval
            stop.wait(max(0.0, next_t - now))

    def _start_thread(self) -> None:
        stop = threading.Event()
        self._stop = stop
        t = threading.Thread(target=self._run, args=(stop,), name="vram_exporter_client",
                             daemon=True)
        self._thread = t
        t.start()

    def start(self) -> "Reporter":
        """Start the background thread (idempotent).  Returns self.  Never raises."""
        try:
            with self._state_lock:
                if self._running and self._thread is not None and self._thread.is_alive():
                    return self
                self._running = True
                self._start_thread()
        except Exception as exc:  # noqa: BLE001
            self._warn("start", "cannot start reporter thread: %s", exc)
        return self

    def stop(self, timeout: Optional[float] = None) -> None:
        """Stop the thread and close the connection (the daemon drops this process's
        series at once).  Never raises."""
        try:
            with self._state_lock:
                self._running = False
                t, self._thread = self._thread, None
                self._stop.set()
            if t is not None and t is not threading.current_thread():
                t.join(timeout)
            with self._lock:
                self._close_locked()
        except Exception:  # noqa: BLE001
            pass

    close = stop

    def __enter__(self) -> "Reporter":
        return self.start()

    def __exit__(self, *exc: Any) -> "Literal[False]":
        self.stop()
        return False

    def _after_fork_in_child(self) -> None:
        # The inherited socket is the parent's connection: close our fd (no shutdown:
        # the parent's connection stays up) and let the next send connect anew, so the
        # daemon sees the child as a separate sender.
        self._lock = threading.Lock()
        self._state_lock = threading.Lock()
        # Only the forking thread lives on in the child, and a request it was inside
        # (multiprocessing's fork) never ends there: the child starts at 0 in flight, and
        # exits of requests begun in the parent leave its count alone.
        self._flight_lock = threading.Lock()
        self._in_flight = 0
        self._flight_gen += 1
        s, self._sock = self._sock, None
        if s is not None:
            try:
                s.close()
            except Exception:  # noqa: BLE001
                pass
        self._pid = os.getpid()
        self._last_sample = float("-inf")
        self._failures = 0
        self._next_connect = 0.0
        self._thread = None
        if self._running:
            try:
                self._start_thread()
            except Exception:  # noqa: BLE001
                self._running = False


def _src_name(src: Any) -> str:
    return getattr(src, "__name__", None) or type(src).__name__
