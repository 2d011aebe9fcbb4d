#!/usr/bin/env python3
"""Measure the client's own cost per sample, beyond torch.cuda.memory_stats().

A fake `torch` whose memory_stats() returns a dict with the key set of a real
torch.cuda.memory_stats() (built fresh per call, as torch does), on 1 and 8 devices.
sample_now() is timed into a connected SOCK_SEQPACKET socket whose peer drains; the
time of the memory_stats() calls alone is measured the same way and subtracted.

    python3 bench_client.py            # fake torch, 1 and 8 devices
    python3 bench_client.py --real     # real torch on the GPUs of this machine too
"""

import argparse
import os
import shutil
import socket
import sys
import tempfile
import threading
import timeit
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vram_exporter_client as vec  # noqa: E402

_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
          "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
_POOLS = ("all", "large_pool", "small_pool")
_METRICS = ("current", "peak", "allocated", "freed")


def realistic_stats(seed=0):
    """The flattened key set of torch.cuda.memory_stats() (torch 2.x)."""
    d = {}
    v = 1 << 20
    for s in _STATS:
        for p in _POOLS:
            for m in _METRICS:
                v = (v * 1103515245 + 12345 + seed) % (1 << 34)
                d["%s.%s.%s" % (s, p, m)] = v
    for s in ("oversize_allocations", "oversize_segments"):
        for m in _METRICS:
            d["%s.%s" % (s, m)] = 0
    d.update({"num_alloc_retries": 0, "num_ooms": 0, "num_sync_all_streams": 0,
              "num_device_alloc": 17, "num_device_free": 3, "max_split_size": -1})
    d["reserved_bytes.all.current"] = max(d["reserved_bytes.all.current"],
                                          d["allocated_bytes.all.current"]) + 1
    return dict(sorted(d.items()))


def fake_torch(n):
    templates = [realistic_stats(i) for i in range(n)]
    torch = types.ModuleType("torch")
    torch.__version__ = "2.11.0+fake"
    cuda = types.SimpleNamespace()
    cuda.is_initialized = lambda: True
    cuda.device_count = lambda: n

    def memory_stats(i):
        # torch builds a new (ordered) dict on every call
        return dict(templates[i])

    cuda.memory_stats = memory_stats
    cuda.get_device_properties = lambda i: types.SimpleNamespace(
        uuid="%08x-1b2c-4d5e-8f90-0123456789ab" % i)
    torch.cuda = cuda
    return torch


class Drain(object):
    """The daemon's side: a separate process (no GIL contention) that reads and
    discards every message."""

    def __init__(self, path):
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ls.bind(path)
        ls.listen(4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork with threads
            self.pid = os.fork()
        if self.pid == 0:
            try:
                c, _ = ls.accept()
                while c.recv(1 << 17):
                    pass
            finally:
                os._exit(0)
        ls.close()

    def wait(self):
        os.waitpid(self.pid, 0)


def big_buffer_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    return s


def best_per_call(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def bench(torch, n, path, number):
    cuda = torch.cuda

    def stats_only():
        for i in range(cuda.device_count()):
            cuda.memory_stats(i)

    r = vec.Reporter(socket_path=path, sources=[vec.torch_source()],
                     labels={"service": "bench", "model": "m"}, _socket_factory=big_buffer_socket,
                     _min_gap=0)  # time every call, not the 20 ms throttle
    try:
        assert r.sample_now(), "first sample not sent"
        t_sample = best_per_call(r.sample_now, number)
        t_stats = best_per_call(stats_only, number)
        size = len(r._encode(*r._collect(), r.dropped))
        return t_sample, t_stats, r.sent, r.dropped, size
    finally:
        r.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--real", action="store_true", help="also bench the real torch on this GPU")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vec-bench-")
    print("python %s, %d keys per memory_stats()" % (sys.version.split()[0], len(realistic_stats())))
    try:
        runs = [("fake", n) for n in (1, 8)]
        if args.real:
            import torch  # noqa: F401  (the caller imports torch, as a server would)
            for i in range(torch.cuda.device_count()):
                torch.ones(1 << 20, device="cuda:%d" % i)
            runs.append(("real", torch.cuda.device_count()))
        saved = sys.modules.get("torch")
        for k, (kind, n) in enumerate(runs):
            path = os.path.join(tmp, "s%d.sock" % k)
            drain = Drain(path)
            if kind == "fake":
                sys.modules["torch"] = fake_torch(n)
            elif saved is not None:
                sys.modules["torch"] = saved
            t_sample, t_stats, sent, dropped, size = bench(sys.modules["torch"], n, path, args.number)
            drain.wait()
            print("%-4s torch, %d device(s): sample_now %7.1f us, memory_stats %7.1f us, "
                  "client cost %6.1f us/sample (%d B/message, sent %d, dropped %d)"
                  % (kind, n, t_sample * 1e6, t_stats * 1e6, (t_sample - t_stats) * 1e6,
                     size, sent, dropped))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
