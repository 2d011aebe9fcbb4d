"""Tests for vram_exporter_client (standard library only).

    cd client/python && python3 -m unittest -v
"""

import gc
import json
import logging
import os
import queue
import re
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import types
import unittest
import warnings
from unittest import mock

import vram_exporter_client as vec

UUID0 = "GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789ab"
UUID1 = "GPU-11111111-2222-3333-4444-555555555555"
WAIT = 5.0  # seconds: generous timeout for arrivals, never a sleep


class FakeServer(object):
    """A real SOCK_SEQPACKET listener that records (connection id, pid, message)."""

    def __init__(self, path, read=True):
        self.path = path
        self.read = threading.Event()
        if read:
            self.read.set()
        self.messages = queue.Queue()
        self.conns = []
        self._closed = False
        self.ls = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ls.bind(path)
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.ls.listen(16)
        self.accepted = queue.Queue()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        n = 0
        while not self._closed:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            c.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self.conns.append(c)
            self.accepted.put(n)
            threading.Thread(target=self._reader, args=(c, n), daemon=True).start()
            n += 1

    def _reader(self, c, cid):
        size = struct.calcsize("3i")
        while not self._closed:
            self.read.wait()
            try:
                data, anc, _flags, _ = c.recvmsg(1 << 17, socket.CMSG_SPACE(size))
            except OSError:
                return
            if not data:
                return
            pid = None
            for level, typ, d in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", d[:size])[0]
            self.messages.put((cid, pid, data))

    def get(self, timeout=WAIT):
        cid, pid, data = self.messages.get(timeout=timeout)
        return cid, pid, json.loads(data.decode("utf-8")), data

    def drain(self):
        out = []
        while True:
            try:
                out.append(self.messages.get_nowait())
            except queue.Empty:
                return out

    def close_connections(self):
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)  # wakes the reader; close alone would not
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass
        self.conns = []

    def close(self):
        self._closed = True
        self.read.set()
        self.close_connections()
        try:
            self.ls.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.ls.close()
        except OSError:
            pass
        try:
            os.unlink(self.path)
        except OSError:
            pass


class FakeClock(object):
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def fake_torch(devices, initialized=True, version="2.11.0+cu130"):
    """devices: list of (uuid-as-torch-gives-it, stats dict)."""
    torch = types.ModuleType("torch")
    torch.__version__ = version
    cuda = types.SimpleNamespace()
    cuda.calls = []
    cuda.prop_calls = []
    cuda.is_initialized = lambda: initialized
    cuda.device_count = lambda: len(devices)

    def memory_stats(i):
        cuda.calls.append(i)
        return dict(devices[i][1])

    def get_device_properties(i):
        cuda.prop_calls.append(i)
        return types.SimpleNamespace(uuid=devices[i][0], name="H200")

    cuda.memory_stats = memory_stats
    cuda.get_device_properties = get_device_properties
    torch.cuda = cuda
    return torch


def torch_stats(allocated, reserved, peak=None, active=None, inactive=0, retries=0, ooms=0):
    return {
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": peak if peak is not None else allocated,
        "reserved_bytes.all.current": reserved,
        "active_bytes.all.current": active if active is not None else allocated,
        "inactive_split_bytes.all.current": inactive,
        "num_alloc_retries": retries,
        "num_ooms": ooms,
    }


def run_workers(fn, n):
    """Runs fn(i) in n threads, i = 0..n-1, waits for them all and returns what they
    raised."""
    errs = []

    def wrap(i):
        try:
            fn(i)
        except Exception as e:  # pragma: no cover - the callers assert there is none
            errs.append(e)

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errs


def is_protocol_int(v):
    return type(v) is int and 0 <= v <= 1 << 50


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vec-")
        self.path = os.path.join(self.dir, "push.sock")
        self.servers = []
        self.reporters = []

    def tearDown(self):
        for r in self.reporters:
            r.stop(timeout=2)
        for s in self.servers:
            s.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, **kw):
        s = FakeServer(self.path, **kw)
        self.servers.append(s)
        return s

    def reporter(self, **kw):
        kw.setdefault("socket_path", self.path)
        kw.setdefault("sources", [])
        kw.setdefault("_min_gap", 0)
        r = vec.Reporter(**kw)
        self.reporters.append(r)
        return r


class SchemaTest(Base):
    def test_message_schema(self):
        srv = self.server()
        r = self.reporter(labels={"service": "ranker", "model": "bert-base"},
                          runtime="torch", runtime_version="2.11.0+cu130")
        r.set_pool(UUID0, "torch", allocated=68157440, reserved=931135488,
                   peak_allocated=2214592512, active=70254592, inactive_split=2097152,
                   alloc_retries=0, ooms=0)
        r.set_pool(UUID0, "vllm.kv_cache", allocated=536870912, reserved=536870912,
                   parent="torch")
        self.assertTrue(r.sample_now())
        _cid, pid, msg, raw = srv.get()
        self.assertEqual(pid, os.getpid())
        self.assertEqual(msg, {
            "v": 1, "runtime": "torch", "runtime_version": "2.11.0+cu130",
            "labels": {"service": "ranker", "model": "bert-base"},
            "client_dropped": 0,
            "devices": [{"uuid": UUID0, "pools": [
                {"name": "torch", "allocated": 68157440, "reserved": 931135488,
                 "peak_allocated": 2214592512, "active": 70254592, "inactive_split": 2097152,
                 "alloc_retries": 0, "ooms": 0},
                {"name": "vllm.kv_cache", "allocated": 536870912, "reserved": 536870912,
                 "parent": "torch"}]}]})
        self.assertNotIn(b" ", raw)  # compact separators
        self.assertEqual(r.sent, 1)
        self.assertEqual((r.dropped, r.errors), (0, 0))

    def test_integers_clamped_and_reserved_at_least_allocated(self):
        srv = self.server()
        r = self.reporter()
        r.set_pool(UUID0, "p", allocated=10.7, reserved=5, peak_allocated=-4,
                   limit=float(1 << 60), ooms=True)
        self.assertTrue(r.sample_now())
        pool = srv.get()[2]["devices"][0]["pools"][0]
        self.assertEqual(pool["allocated"], 10)
        self.assertEqual(pool["reserved"], 10)
        self.assertEqual(pool["peak_allocated"], 0)
        self.assertEqual(pool["limit"], 1 << 50)
        self.assertNotIn("ooms", pool)  # a bool is not a count
        for k in ("allocated", "reserved", "peak_allocated", "limit"):
            self.assertTrue(is_protocol_int(pool[k]), k)

    def test_empty_devices_and_default_runtime(self):
        srv = self.server()
        r = self.reporter()
        self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual(msg["devices"], [])
        self.assertEqual(msg["runtime"], "unknown")
        self.assertEqual(msg["v"], 1)
        self.assertNotIn("labels", msg)

    def test_socket_path_resolution(self):
        with mock.patch.dict(os.environ, {"VRAM_EXPORTER_SOCKET": "/x/env.sock"}):
            self.assertEqual(vec.Reporter(sources=[]).socket_path, "/x/env.sock")
            self.assertEqual(vec.Reporter("/x/arg.sock", sources=[]).socket_path, "/x/arg.sock")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(vec.Reporter(sources=[]).socket_path, "/run/vram_exporter/push.sock")

    def test_invalid_labels_dropped_with_warning(self):
        labels = {"service": "ok", "pid": "1", "__x": "y", "1bad": "v", "bad-name": "v",
                  "empty": "", "long": "x" * 129, "utf8": "caf\u00e9", "num": 3,
                  "surrogate": "\ud800", "obj": object(), "job": "j"}
        with self.assertLogs("vram_exporter_client", level="WARNING") as cm:
            r = self.reporter(labels=labels)
        self.assertEqual(r.labels, {"service": "ok", "utf8": "caf\u00e9", "num": "3"})
        self.assertGreaterEqual(len(cm.output), 9)
        many = {"l%d" % i: "v" for i in range(10)}
        with self.assertLogs("vram_exporter_client", level="WARNING"):
            r2 = self.reporter(labels=many)
        self.assertEqual(len(r2.labels), 8)
        with self.assertLogs("vram_exporter_client", level="WARNING"):
            r3 = self.reporter(runtime="Bad Runtime")
        self.assertIsNone(r3.runtime)

    def test_invalid_pools_and_devices_skipped_not_whole_message(self):
        srv = self.server()
        r = self.reporter()
        r.set_pool(UUID0, "good", allocated=1, reserved=2)
        r.set_pool(UUID0, "bad name", allocated=1, reserved=2)
        r.set_pool(UUID0, "orphan", allocated=1, reserved=1, parent="nope")
        r.set_pool(UUID0, "child", allocated=1, reserved=1, parent="good")
        r.set_pool(UUID0, "grandchild", allocated=1, reserved=1, parent="child")
        r.set_pool("GPU-bad uuid!", "p", allocated=1, reserved=1)
        with self.assertLogs("vram_exporter_client", level="WARNING"):
            self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual([d["uuid"] for d in msg["devices"]], [UUID0])
        self.assertEqual([p["name"] for p in msg["devices"][0]["pools"]], ["good", "child"])

    def test_set_pool_and_clear_pool(self):
        srv = self.server()
        r = self.reporter()
        r.set_pool("5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", "custom", allocated=5, reserved=9)
        self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[2]["devices"],
                         [{"uuid": UUID0, "pools": [{"name": "custom", "allocated": 5,
                                                     "reserved": 9}]}])
        r.clear_pool(UUID0, "custom")
        self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[2]["devices"], [])
        r.clear_pool(UUID0, "never-set")  # no error

    def test_sources_merged_by_uuid_static_overrides(self):
        srv = self.server()
        a = lambda: [{"uuid": UUID0, "pools": [{"name": "a", "allocated": 1, "reserved": 1}]},
                     {"uuid": UUID1, "pools": [{"name": "a", "allocated": 2, "reserved": 2}]}]
        b = lambda: [{"uuid": UUID0, "pools": [{"name": "b", "allocated": 3, "reserved": 3},
                                               {"name": "a", "allocated": 9, "reserved": 9}]}]
        r = self.reporter(sources=[a])
        r.add_source(b)
        r.set_pool(UUID1, "a", allocated=7, reserved=8)
        with self.assertLogs("vram_exporter_client", level="WARNING"):  # duplicate "a"
            self.assertTrue(r.sample_now())
        devs = srv.get()[2]["devices"]
        self.assertEqual(devs, [
            {"uuid": UUID0, "pools": [{"name": "a", "allocated": 1, "reserved": 1},
                                      {"name": "b", "allocated": 3, "reserved": 3}]},
            {"uuid": UUID1, "pools": [{"name": "a", "allocated": 7, "reserved": 8}]}])

    def test_sample_now_never_raises_when_source_raises(self):
        srv = self.server()

        def boom():
            raise RuntimeError("CUDA error: an illegal memory access")

        def garbage():
            return 42

        good = lambda: [{"uuid": UUID0, "pools": [{"name": "g", "allocated": 1, "reserved": 1}]}]
        r = self.reporter(sources=[boom, garbage, good])
        with self.assertLogs("vram_exporter_client", level="WARNING"):
            self.assertTrue(r.sample_now())
        self.assertEqual(r.errors, 2)
        self.assertEqual(srv.get()[2]["devices"][0]["pools"][0]["name"], "g")

    def test_public_methods_never_raise(self):
        r = self.reporter(socket_path=os.path.join(self.dir, "absent.sock"))
        logging.getLogger("vram_exporter_client").disabled = True
        try:
            r.add_source(None)
            r.set_pool(None, None, allocated=object())
            r.clear_pool(object(), [])
            self.assertFalse(r.sample_now())
            r._sources = None  # corrupt state on purpose
            self.assertFalse(r.sample_now())
            r.stop()
            r.stop()
        finally:
            logging.getLogger("vram_exporter_client").disabled = False

    def test_oversized_message_dropped(self):
        srv = self.server()
        r = self.reporter()
        for d in range(16):
            u = "GPU-%08d-0000-0000-0000-000000000000" % d
            for p in range(32):
                r.set_pool(u, "pool%02d-" % p + "x" * 56, allocated=1, reserved=1,
                           note="y" * 128)
        with self.assertLogs("vram_exporter_client", level="WARNING") as cm:
            self.assertFalse(r.sample_now())
        self.assertIn("dropped", "".join(cm.output))
        self.assertEqual((r.sent, r.dropped), (0, 1))
        self.assertTrue(srv.messages.empty())
        # a normal sample afterwards goes through and reports the drop
        r2_pools = list(r._static)
        for u, n in r2_pools:
            r.clear_pool(u, n)
        self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[2]["client_dropped"], 1)


class TorchTest(Base):
    def test_not_initialized_reports_nothing_and_never_calls_stats(self):
        srv = self.server()
        t = fake_torch([("5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", torch_stats(1, 2))],
                       initialized=False)
        with mock.patch.dict(sys.modules, {"torch": t}):
            r = self.reporter(sources=None)  # default sources
            self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual(msg["devices"], [])
        self.assertEqual(msg["runtime"], "torch")
        self.assertEqual(t.cuda.calls, [])

    def test_torch_absent_is_never_imported(self):
        saved = sys.modules.pop("torch", None)
        try:
            with mock.patch("builtins.__import__", side_effect=AssertionError("import")) as imp:
                self.assertEqual(vec.torch_source()(), [])
            self.assertFalse(imp.called)
        finally:
            if saved is not None:
                sys.modules["torch"] = saved

    def test_stats_once_per_device_uuid_prefix_skip_empty(self):
        srv = self.server()
        t = fake_torch([
            ("5c3e2f4a-1b2c-4d5e-8f90-0123456789ab",
             torch_stats(68157440, 931135488, peak=2214592512, active=70254592,
                         inactive=2097152, retries=3, ooms=1)),
            ("11111111-2222-3333-4444-555555555555", torch_stats(0, 0)),  # no state
            ("MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", torch_stats(5.0, 4)),
            ("GPU-99999999-2222-3333-4444-555555555555", torch_stats(1, 1)),
        ])
        with mock.patch.dict(sys.modules, {"torch": t}):
            r = self.reporter(sources=[vec.torch_source()])
            self.assertTrue(r.sample_now())
            self.assertEqual(t.cuda.calls, [0, 1, 2, 3])
            self.assertTrue(r.sample_now())
            self.assertEqual(t.cuda.calls, [0, 1, 2, 3] * 2)
            self.assertEqual(t.cuda.prop_calls, [0, 2, 3])  # UUIDs cached
        msg = srv.get()[2]
        self.assertEqual(msg["runtime"], "torch")
        self.assertEqual(msg["runtime_version"], "2.11.0+cu130")
        self.assertEqual(msg["devices"], [
            {"uuid": UUID0, "pools": [{
                "name": "torch", "allocated": 68157440, "reserved": 931135488,
                "peak_allocated": 2214592512, "active": 70254592, "inactive_split": 2097152,
                "alloc_retries": 3, "ooms": 1}]},
            {"uuid": "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "pools": [{
                "name": "torch", "allocated": 5, "reserved": 5, "peak_allocated": 5,
                "active": 5, "inactive_split": 0, "alloc_retries": 0, "ooms": 0}]},
            {"uuid": "GPU-99999999-2222-3333-4444-555555555555", "pools": [{
                "name": "torch", "allocated": 1, "reserved": 1, "peak_allocated": 1,
                "active": 1, "inactive_split": 0, "alloc_retries": 0, "ooms": 0}]},
        ])
        self.assertIs(type(msg["devices"][1]["pools"][0]["allocated"]), int)

    def test_explicit_runtime_wins(self):
        srv = self.server()
        t = fake_torch([("5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", torch_stats(1, 2))])
        with mock.patch.dict(sys.modules, {"torch": t}):
            r = self.reporter(sources=[vec.torch_source()], runtime="vllm", runtime_version="0.9")
            self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual((msg["runtime"], msg["runtime_version"]), ("vllm", "0.9"))

    def test_nested_pool_via_add_source(self):
        srv = self.server()
        t = fake_torch([("5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", torch_stats(600, 1000))])
        with mock.patch.dict(sys.modules, {"torch": t}):
            r = self.reporter(sources=[vec.torch_source()])
            r.add_source(lambda: [{"uuid": UUID0, "pools": [
                {"name": "vllm.kv_cache", "parent": "torch", "allocated": 512, "reserved": 512}]}])
            self.assertTrue(r.sample_now())
        pools = srv.get()[2]["devices"][0]["pools"]
        self.assertEqual([(p["name"], p.get("parent")) for p in pools],
                         [("torch", None), ("vllm.kv_cache", "torch")])


class JaxCupyTest(Base):
    def test_jax(self):
        class Dev(object):
            def __init__(self, hid, platform, stats):
                self.local_hardware_id, self.id, self.platform, self._s = hid, hid + 10, platform, stats

            def memory_stats(self):
                return self._s

        jax = types.ModuleType("jax")
        jax.__version__ = "0.6.0"
        devs = [Dev(0, "gpu", {"bytes_in_use": 100, "pool_bytes": 300, "peak_bytes_in_use": 200,
                               "bytes_limit": 1000, "bytes_reserved": 50}),
                Dev(1, "gpu", {"bytes_in_use": 100, "bytes_reserved": 150}),
                Dev(2, "gpu", {"bytes_in_use": 70}),
                Dev(3, "cpu", {"bytes_in_use": 1})]
        jax.local_devices = lambda: devs
        uuids = {0: UUID0, 1: UUID1, 2: "GPU-22222222-2222-3333-4444-555555555555"}
        with mock.patch.dict(sys.modules, {"jax": jax}), \
                mock.patch.object(vec, "cuda_uuid", side_effect=lambda i: uuids[i]) as cu:
            got = vec.jax_source()()
        self.assertEqual([c.args[0] for c in cu.call_args_list], [0, 1, 2])
        self.assertEqual(got, [
            {"uuid": UUID0, "pools": [{"name": "jax", "allocated": 100, "reserved": 300,
                                       "peak_allocated": 200, "limit": 1000}]},
            {"uuid": UUID1, "pools": [{"name": "jax", "allocated": 100, "reserved": 150,
                                       "peak_allocated": None, "limit": None}]},
            {"uuid": uuids[2], "pools": [{"name": "jax", "allocated": 70, "reserved": 70,
                                          "peak_allocated": None, "limit": None}]}])
        srv = self.server()
        with mock.patch.dict(sys.modules, {"jax": jax}), \
                mock.patch.object(vec, "cuda_uuid", side_effect=lambda i: uuids[i]):
            r = self.reporter(sources=[vec.jax_source()])
            self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual((msg["runtime"], msg["runtime_version"]), ("jax", "0.6.0"))
        self.assertNotIn("limit", msg["devices"][1]["pools"][0])

    def test_jax_not_initialised_not_touched(self):
        jax = types.ModuleType("jax")
        jax.local_devices = mock.Mock(side_effect=AssertionError("would initialise"))
        xb = types.ModuleType("jax._src.xla_bridge")
        xb._backends = {}
        with mock.patch.dict(sys.modules, {"jax": jax, "jax._src.xla_bridge": xb}):
            self.assertEqual(vec.jax_source()(), [])

    def test_cupy(self):
        current = [0]
        pools = {0: (100, 400, 0), 1: (0, 0, 0), 2: (50, 60, 1000)}

        class Device(object):
            def __init__(self, i):
                self.i = i

            def __enter__(self):
                self.prev, current[0] = current[0], self.i

            def __exit__(self, *a):
                current[0] = self.prev

        class Pool(object):
            def used_bytes(self):
                return pools[current[0]][0]

            def total_bytes(self):
                return pools[current[0]][1]

            def get_limit(self):
                return pools[current[0]][2]

        props = {0: {"uuid": bytes.fromhex("5c3e2f4a1b2c4d5e8f900123456789ab")},
                 1: {}, 2: {}, 3: {}}
        runtime = types.SimpleNamespace(getDeviceCount=lambda: 4, getDevice=lambda: 0,
                                        getDeviceProperties=lambda i: props[i])
        cupy = types.ModuleType("cupy")
        cupy.__version__ = "13.4.0"
        cupy.cuda = types.SimpleNamespace(Device=Device, runtime=runtime)
        cupy.get_default_memory_pool = lambda: Pool()
        active = {0: True, 1: True, 2: True, 3: False}  # device 3: never used, not entered
        with mock.patch.dict(sys.modules, {"cupy": cupy}), \
                mock.patch.object(vec, "_cuda_context_active", side_effect=lambda i: active[i]), \
                mock.patch.object(vec, "cuda_uuid", side_effect=lambda i: {2: UUID1}[i]):
            got = vec.cupy_source()()
        self.assertEqual(got, [
            {"uuid": UUID0, "pools": [{"name": "cupy", "allocated": 100, "reserved": 400}]},
            {"uuid": UUID1, "pools": [{"name": "cupy", "allocated": 50, "reserved": 60,
                                       "limit": 1000}]}])
        self.assertEqual(current[0], 0)
        # without libcuda only the current device is looked at
        with mock.patch.dict(sys.modules, {"cupy": cupy}), \
                mock.patch.object(vec, "_cuda_context_active", return_value=None):
            got = vec.cupy_source()()
        self.assertEqual([d["uuid"] for d in got], [UUID0])

    def test_cuda_uuid_without_libcuda(self):
        with mock.patch.object(vec, "_cuda_lib", None), mock.patch.object(vec, "_cuda_failed", True):
            self.assertIsNone(vec.cuda_uuid(7))
        self.assertEqual(vec._format_uuid(bytes(range(16))),
                         "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f")


class FakeEngine(object):
    def __init__(self, device_memory=1000, plan=5000, streamable=0, budget=None, scratch=None):
        self.device_memory_size_v2 = device_memory
        self._plan = plan
        self.streamable_weights_size = streamable
        if budget is not None:
            self.weight_streaming_budget_v2 = budget
        if scratch is not None:
            self.weight_streaming_scratch_memory_size = scratch
        self.serialize_calls = 0

    def serialize(self):
        self.serialize_calls += 1
        return memoryview(bytearray(self._plan))

    def get_device_memory_size_for_profile_v2(self, profile):
        return 100 * (profile + 1)


class FakeContext(object):
    def __init__(self, engine, profile=0):
        self.engine = engine
        self.active_optimization_profile = profile


class TensorRTTest(Base):
    def test_engine_and_context_weakref_drop(self):
        tr = vec.TensorRTTracker()
        e = FakeEngine(device_memory=1000, plan=5000)
        c1, c2 = FakeContext(e), FakeContext(e, profile=2)
        tr.register_engine(e, UUID0)
        tr.register_context(c1, UUID0)
        tr.register_context(c2, UUID0, name="trt.ctx2", per_profile=True)
        self.assertEqual(tr(), [{"uuid": UUID0, "pools": [
            {"name": "trt.weights", "allocated": 5000, "reserved": 5000},
            {"name": "trt.context", "allocated": 1000, "reserved": 1000},
            {"name": "trt.ctx2", "allocated": 300, "reserved": 300}],
            # the context budget: two contexts, each with its own activation memory
            "trt_engines": [{"engine": "trt.weights", "contexts": 2, "context_bytes": 1000,
                             "held_bytes": 1300, "weights_bytes": 5000}]}])
        tr()
        self.assertEqual(e.serialize_calls, 1)  # plan size computed once
        del c1
        gc.collect()
        self.assertEqual([p["name"] for p in tr()[0]["pools"]], ["trt.weights", "trt.ctx2"])
        tr.unregister(c2)
        self.assertEqual([p["name"] for p in tr()[0]["pools"]], ["trt.weights"])
        del e, c2
        gc.collect()  # the engine is gone only once nothing else holds it
        self.assertEqual(tr(), [])

    def test_same_name_summed_weights_bytes_and_streaming(self):
        tr = vec.TensorRTTracker()
        e1 = FakeEngine(plan=5000)
        e2 = FakeEngine(plan=7000, streamable=4000, budget=1000, scratch=64, device_memory=500)
        tr.register_engine(e1, "5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", weights_bytes=2048)
        tr.register_engine(e2, UUID0)
        tr.register_context(FakeContext(e2), UUID1)  # dropped at once: not reported
        ctx = FakeContext(e2)
        tr.register_context(ctx, UUID1, parent=None)
        self.assertEqual(e1.serialize_calls, 0)
        got = tr()
        # e2: budget 1000 resident + non-streamable (7000 - 4000)
        self.assertEqual(got, [
            {"uuid": UUID0, "pools": [{"name": "trt.weights", "allocated": 2048 + 4000,
                                       "reserved": 2048 + 4000,
                                       "weight_streaming_budget": 1000}],
             # e2's one live context (e1 has none); weights as the pool reports them
             "trt_engines": [{"engine": "trt.weights", "contexts": 1, "context_bytes": 500,
                              "held_bytes": 500, "weights_bytes": 4000,
                              "streamable_bytes": 4000, "streaming_budget_bytes": 1000}]},
            {"uuid": UUID1, "pools": [{"name": "trt.context", "allocated": 500, "reserved": 500,
                                       "weight_streaming_budget": 1000,
                                       "weight_streaming_scratch": 64}]}])
        srv = self.server()
        r = self.reporter(sources=[tr])
        self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual(msg["runtime"], "tensorrt")
        self.assertEqual(msg["devices"][1]["pools"][0]["weight_streaming_scratch"], 64)


class ConnectionTest(Base):
    def test_server_absent_then_appears_backoff_on_injected_clock(self):
        clock = FakeClock()
        r = self.reporter(_clock=clock, _random=lambda: 0.5)
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        logging.getLogger("vram_exporter_client").setLevel(logging.CRITICAL)
        try:
            self.assertFalse(r.sample_now())
            self.assertEqual(r.errors, 1)
            self.assertFalse(r.sample_now())  # inside the backoff: no attempt
            self.assertEqual(r.errors, 1)
            clock.t += 0.51
            self.assertFalse(r.sample_now())  # 2nd failure: backoff now 1 s
            self.assertEqual(r.errors, 2)
            clock.t += 0.6
            self.assertFalse(r.sample_now())
            self.assertEqual(r.errors, 2)
            for _ in range(12):  # backoff grows to the 30 s cap
                clock.t += 31
                r.sample_now()
            self.assertLessEqual(r._next_connect - clock.t, 30.0)
            self.assertGreaterEqual(r._next_connect - clock.t, 29.9)
            srv = self.server()
            self.assertFalse(r.sample_now())  # still waiting out the backoff
            clock.t += 30.01
            self.assertTrue(r.sample_now())
            self.assertEqual(srv.get()[2]["devices"][0]["uuid"], UUID0)
            self.assertEqual(r._failures, 0)
        finally:
            logging.getLogger("vram_exporter_client").setLevel(logging.NOTSET)

    def test_server_closes_connection_reconnect(self):
        srv = self.server()
        r = self.reporter()
        self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[0], 0)
        srv.accepted.get(timeout=WAIT)
        srv.close_connections()
        # the first send after the close hits EPIPE and reconnects at once
        deadline = time.monotonic() + WAIT
        while True:
            ok = r.sample_now()
            try:
                cid, _pid, _msg, _ = srv.get(timeout=0.2)
                break
            except queue.Empty:
                self.assertLess(time.monotonic(), deadline, "no reconnect")
        self.assertEqual(cid, 1)
        self.assertTrue(ok)
        self.assertGreaterEqual(r.errors, 1)

    def test_daemon_restart(self):
        clock = FakeClock()
        srv = self.server()
        r = self.reporter(_clock=clock)
        self.assertTrue(r.sample_now())
        srv.get()
        srv.close()
        logging.getLogger("vram_exporter_client").setLevel(logging.CRITICAL)
        try:
            self.assertFalse(r.sample_now())  # EPIPE, reconnect fails, backoff
            srv2 = self.server()
            clock.t += 31
            self.assertTrue(r.sample_now())
            self.assertEqual(srv2.get()[2]["v"], 1)
        finally:
            logging.getLogger("vram_exporter_client").setLevel(logging.NOTSET)

    def test_full_socket_drops_without_blocking(self):
        srv = self.server(read=False)

        def small_socket():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1)  # kernel minimum
            return s

        r = self.reporter(_socket_factory=small_socket)
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        logging.getLogger("vram_exporter_client").setLevel(logging.CRITICAL)
        try:
            worst = 0.0
            for _ in range(200):
                t0 = time.monotonic()
                r.sample_now()
                worst = max(worst, time.monotonic() - t0)
                if r.dropped >= 3:
                    break
        finally:
            logging.getLogger("vram_exporter_client").setLevel(logging.NOTSET)
        self.assertGreaterEqual(r.dropped, 3)
        self.assertGreater(r.sent, 0)
        self.assertLess(worst, 0.5)
        self.assertIsNotNone(r._sock)  # a full buffer is not a broken connection
        srv.read.set()  # the daemon catches up
        while True:
            try:
                srv.get(timeout=0.3)
            except queue.Empty:
                break
        dropped = r.dropped
        self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[2]["client_dropped"], dropped)


class RateTest(Base):
    def test_sample_now_throttled_below_daemon_rate_limit(self):
        srv = self.server()
        clock = FakeClock()
        r = self.reporter(_clock=clock, _min_gap=vec.MIN_SAMPLE_GAP)
        self.assertTrue(r.sample_now())
        self.assertFalse(r.sample_now())  # within 20 ms: no work, not a drop
        self.assertEqual((r.sent, r.dropped, r.errors), (1, 0, 0))
        clock.t += 0.021
        self.assertTrue(r.sample_now())
        self.assertEqual(len([srv.get(), srv.get()]), 2)


class ThreadTest(Base):
    def test_background_thread_and_context_manager(self):
        srv = self.server()
        with self.reporter(interval=0.02) as r:
            r.set_pool(UUID0, "p", allocated=1, reserved=1)
            r.start()  # idempotent
            t = r._thread
            for _ in range(3):
                srv.get()
            self.assertIs(r._thread, t)
            self.assertEqual(sum(1 for th in threading.enumerate()
                                 if th.name == "vram_exporter_client"), 1)
        self.assertIsNone(r._thread)
        self.assertFalse(t.is_alive())
        self.assertIsNone(r._sock)

    def test_concurrent_sample_now(self):
        srv = self.server()
        r = self.reporter(interval=0.001)
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        r.start()

        def worker(_i):
            for _ in range(200):
                r.sample_now()

        errs = run_workers(worker, 4)
        r.stop()
        self.assertEqual(errs, [])
        n = 0
        for _cid, _pid, data in srv.drain():
            json.loads(data)
            n += 1
        self.assertEqual(r.errors, 0)
        self.assertGreater(r.sent, 0)
        self.assertGreaterEqual(r.sent + r.dropped, 800)
        while n < r.sent:  # every message sent arrives whole
            json.loads(srv.get()[3])
            n += 1


class RequestsInFlightTest(Base):
    def msg(self, srv, r):
        self.assertTrue(r.sample_now())
        return srv.get()[2]

    def test_absent_until_request_used(self):
        srv = self.server()
        r = self.reporter()
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        for _ in range(2):
            self.assertNotIn("requests_in_flight", self.msg(srv, r))
        r.request()  # made, never entered: not used yet
        self.assertNotIn("requests_in_flight", self.msg(srv, r))
        self.assertIsNone(r._requests_in_flight())
        self.assertNotIn(b"requests_in_flight", r._encode(*r._collect(), 0, r._requests_in_flight()))

    def test_count_inside_and_after(self):
        srv = self.server()
        r = self.reporter(runtime="torch", labels={"service": "ranker"})
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        with r.request():
            msg = self.msg(srv, r)
            self.assertEqual(msg["requests_in_flight"], 1)
            with r.request(), r.request():
                self.assertEqual(self.msg(srv, r)["requests_in_flight"], 3)
            self.assertEqual(self.msg(srv, r)["requests_in_flight"], 1)
        self.assertTrue(r.sample_now())
        _cid, _pid, after, raw = srv.get()
        self.assertEqual(after["requests_in_flight"], 0)  # opted in: idle is sent as 0
        # at top level, right after client_dropped; the rest as before
        self.assertIn(b'"client_dropped":0,"requests_in_flight":0,"devices":[', raw)
        self.assertEqual(after["labels"], {"service": "ranker"})
        self.assertEqual(after["devices"][0]["pools"][0]["name"], "p")
        self.assertEqual((r.dropped, r.errors), (0, 0))

    def test_decrement_on_exception_and_never_negative(self):
        srv = self.server()
        r = self.reporter()

        class Boom(Exception):
            pass

        with self.assertRaises(Boom):  # the block's exception goes through
            with r.request():
                self.assertEqual(r._in_flight, 1)
                raise Boom()
        self.assertEqual(r._in_flight, 0)
        ctx = r.request()
        ctx.__exit__(None, None, None)  # exit without enter
        r._request_end(r._flight_gen)   # more ends than begins
        self.assertEqual(r._in_flight, 0)
        with ctx, ctx:  # one object entered twice, nested
            self.assertEqual(r._in_flight, 2)
        self.assertEqual(r._in_flight, 0)
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 0)

    def test_torchserve_example_counts_its_requests(self):
        # examples/torchserve_handler.py, with a stand-in for TorchServe's BaseHandler:
        # each request is in flight while BaseHandler.handle runs it, and the sample at
        # the request boundary (after it) is the worker at rest.
        srv = self.server()
        r = self.reporter()
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        seen = []

        class BaseHandler(object):
            def handle(self, data, context):
                seen.append(r._in_flight)
                return self.postprocess(self.inference(self.preprocess(data)))

            def preprocess(self, data):
                return data

            def inference(self, data, *args, **kwargs):
                return [x * 2 for x in data]

            def postprocess(self, data):
                return data

        stub = types.ModuleType("ts.torch_handler.base_handler")
        stub.BaseHandler = BaseHandler
        here = os.path.dirname(os.path.abspath(__file__))
        stubs = {"ts": types.ModuleType("ts"), "ts.torch_handler": types.ModuleType("ts.torch_handler"),
                 "ts.torch_handler.base_handler": stub}
        with mock.patch.dict(sys.modules, stubs):
            ns = {"__name__": "torchserve_handler"}
            with open(os.path.join(here, "examples", "torchserve_handler.py")) as f:
                exec(compile(f.read(), f.name, "exec"), ns)
        h = ns["VramReportingHandler"]()
        h.reporter = r  # what initialize() builds, on the test's socket
        self.assertEqual(h.handle([1, 2], None), [2, 4])
        self.assertEqual(seen, [1])
        _cid, _pid, msg, _raw = srv.get()  # the boundary's sample_now()
        self.assertEqual(msg["requests_in_flight"], 0)

    def test_decorator(self):
        srv = self.server()
        r = self.reporter()
        seen = []

        @r.requested
        def handle(x):
            """doc"""
            seen.append(r._in_flight)
            if x is None:
                raise ValueError("bad")
            return x * 2

        self.assertEqual(handle(21), 42)
        self.assertEqual((handle.__name__, handle.__doc__), ("handle", "doc"))
        with self.assertRaises(ValueError):
            handle(None)
        self.assertEqual(seen, [1, 1])
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 0)

    def test_concurrent_threads_end_at_zero(self):
        srv = self.server()
        r = self.reporter(interval=0.001)
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        r.start()  # the background thread samples meanwhile
        go = threading.Barrier(8)

        def worker(i):
            go.wait()
            for n in range(500):
                try:
                    with r.request():
                        if n % 50 == 0:
                            time.sleep(0)  # yield: let the others and the sampler run
                        if (i + n) % 7 == 0:
                            raise KeyError(n)
                except KeyError:
                    pass

        errs = run_workers(worker, 8)
        r.stop()
        self.assertEqual(errs, [])
        self.assertEqual(r._in_flight, 0)
        for _cid, _pid, data in srv.drain():
            v = json.loads(data).get("requests_in_flight", 0)
            self.assertTrue(0 <= v <= 8, v)
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 0)

    def test_request_starting_while_stats_read_counts(self):
        """N is the larger of the counts just before and just after the stats are
        read: a request that begins during the read makes the sample busy."""
        srv = self.server()
        r = self.reporter()
        ctx = {}

        def begins_during_read():  # a source: its call is the allocator stats' read
            if ctx.get("begin"):
                ctx["req"] = r.request()
                ctx["req"].__enter__()
            return [{"uuid": UUID0, "pools": [{"name": "p", "allocated": 1, "reserved": 1}]}]

        def ends_during_read():
            if ctx.get("end"):
                ctx.pop("req").__exit__(None, None, None)
            return []

        r.add_source(begins_during_read)
        r.add_source(ends_during_read)
        with r.request():
            pass  # opted in, idle
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 0)
        ctx["begin"] = True  # 0 before the read, 1 after: 1
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 1)
        ctx["begin"], ctx["end"] = False, True  # 1 before, 0 after: 1
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 1)
        self.assertEqual(r._in_flight, 0)
        ctx["end"] = False
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 0)

    def test_first_request_during_read_opts_in(self):
        srv = self.server()
        r = self.reporter()
        ctx = {}

        def src():
            if ctx.get("begin"):
                ctx["req"] = r.request()
                ctx["req"].__enter__()
            return []

        r.add_source(src)
        self.assertNotIn("requests_in_flight", self.msg(srv, r))
        ctx["begin"] = True
        self.assertEqual(self.msg(srv, r)["requests_in_flight"], 1)

    def test_clamped_to_protocol_bound(self):
        srv = self.server()
        r = self.reporter()
        with r.request():
            r._in_flight = vec.MAX_REQUESTS_IN_FLIGHT + 5
            self.assertEqual(self.msg(srv, r)["requests_in_flight"], 1 << 20)
        r._in_flight = 0


@unittest.skipUnless(hasattr(os, "fork"), "needs fork")
class ForkTest(Base):
    def _fork(self, child):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork with threads
            pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if child() else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return pid, os.WEXITSTATUS(status)

    def test_fork_child_starts_idle(self):
        """A forked child has none of its parent's requests in flight, and its own
        sample says so; the parent's count is untouched by the child."""
        srv = self.server()
        r = self.reporter()
        with r.request():
            child_pid, code = self._fork(lambda: r._in_flight == 0 and r.sample_now())
            self.assertEqual(code, 0)
            self.assertEqual(r._in_flight, 1)
        self.assertEqual(r._in_flight, 0)
        _cid, cpid, msg, _ = srv.get()
        self.assertEqual((cpid, msg["requests_in_flight"]), (child_pid, 0))

    def test_fork_child_uses_new_connection(self):
        srv = self.server()
        r = self.reporter()
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        self.assertTrue(r.sample_now())
        cid, pid, _, _ = srv.get()
        self.assertEqual((cid, pid), (0, os.getpid()))
        child_pid, code = self._fork(lambda: r.sample_now() and r._pid == os.getpid())
        self.assertEqual(code, 0)
        cid, pid, _, _ = srv.get()
        self.assertEqual((cid, pid), (1, child_pid))  # new connection, child's PID
        self.assertTrue(r.sample_now())  # parent's connection unaffected
        cid, pid, _, _ = srv.get()
        self.assertEqual((cid, pid), (0, os.getpid()))

    def test_fork_restarts_thread_in_child(self):
        srv = self.server()
        r = self.reporter(interval=0.02)
        r.set_pool(UUID0, "p", allocated=1, reserved=1)
        r.start()
        srv.get()

        def child():
            deadline = time.monotonic() + WAIT
            start = r.sent
            while time.monotonic() < deadline:
                if r.sent > start and r._thread is not None and r._thread.is_alive():
                    return True
                time.sleep(0.01)
            return False

        child_pid, code = self._fork(child)
        self.assertEqual(code, 0)
        seen = set()
        deadline = time.monotonic() + WAIT
        while child_pid not in seen and time.monotonic() < deadline:
            _cid, pid, _, _ = srv.get()
            seen.add(pid)
        self.assertIn(child_pid, seen)
        r.stop()


if __name__ == "__main__":
    unittest.main()
