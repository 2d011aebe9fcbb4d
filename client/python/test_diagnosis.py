"""Tests of the client's diagnosis: OOM events and allocator settings (fakes shaped
like torch's, JAX's, CuPy's and TensorRT's APIs; none of them is installed here).

    cd client/python && python3 -m unittest -v test_diagnosis
"""

import os
import types
import unittest
from unittest import mock

import vram_exporter_client as vec
from test_vram_exporter_client import UUID0, Base, fake_torch, torch_stats  # noqa: F401

GIB = 1 << 30


def torch_with_observer(stats, snapshot=None):
    """fake_torch plus torch._C._cuda_attach_out_of_memory_observer and
    cuda.memory_snapshot(); stats is the one device's (mutable) stats dict."""
    torch = fake_torch([(UUID0[4:], stats)])
    observers = []
    torch._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=observers.append)
    torch.cuda.memory_snapshot = lambda: snapshot or []
    torch.cuda.get_allocator_backend = lambda: "native"
    return torch, observers


class OOMTest(Base):
    def setUp(self):
        Base.setUp(self)
        vec._OOM_LOG.clear()
        self.addCleanup(vec._OOM_LOG.clear)

    def sample(self, src):
        srv = self.server()
        r = self.reporter(sources=[src], runtime="torch")
        self.assertTrue(r.sample_now())
        return srv.get()[2]["devices"][0]

    def test_observer_records_what_torch_knew(self):
        stats = torch_stats(2 * GIB, 4 * GIB, inactive=GIB)
        snap = [{"device": 0, "blocks": [{"state": "inactive", "size": 512 << 20},
                                         {"state": "active_allocated", "size": 3 * GIB},
                                         {"state": "inactive", "size": 256 << 20}]},
                {"device": 1, "blocks": [{"state": "inactive", "size": 8 * GIB}]}]
        torch, observers = torch_with_observer(stats, snap)
        with mock.patch.dict("sys.modules", {"torch": torch}):
            src = vec.torch_source()
            dev = self.sample(src)
            self.assertNotIn("oom_seq", dev, "no OOM yet: no OOM fields")
            self.assertEqual(len(observers), 1)
            # torch calls (device, requested, limit or total, free)
            observers[0](0, 3 * GIB, 8 * GIB, 100 << 20)
            observers[0](0, 1 * GIB, 8 * GIB, 100 << 20)
            srv = self.servers[0]
            r = self.reporters[0]
            self.assertTrue(r.sample_now())
            dev = srv.get()[2]["devices"][0]
        self.assertEqual(dev["oom_seq"], 2)
        self.assertEqual(dev["oom_events"][0], {
            "seq": 1, "source": "observer", "requested": 3 * GIB, "device_limit": 8 * GIB,
            "device_free": 100 << 20, "allocated": 2 * GIB, "reserved": 4 * GIB,
            "inactive_split": GIB, "largest_free_block": 512 << 20})
        # the second OOM came within OOM_SNAPSHOT_EVERY: no snapshot, no largest block
        self.assertNotIn("largest_free_block", dev["oom_events"][1])
        self.assertEqual(dev["oom_events"][1]["seq"], 2)

    def test_third_argument_below_reserved_is_no_limit(self):
        torch, observers = torch_with_observer(torch_stats(2 * GIB, 4 * GIB))
        with mock.patch.dict("sys.modules", {"torch": torch}):
            src = vec.torch_source(oom_snapshot=False)
            src()
            observers[0](0, GIB, 3 * GIB, 0)
            dev = self.sample(src)
        self.assertNotIn("device_limit", dev["oom_events"][0])
        self.assertEqual(dev["oom_events"][0]["requested"], GIB)

    def test_observer_attached_once(self):
        torch, observers = torch_with_observer(torch_stats(GIB, 2 * GIB))
        with mock.patch.dict("sys.modules", {"torch": torch}):
            src = vec.torch_source()
            src()
            src()
        self.assertEqual(len(observers), 1)

    def test_newest_events_only_and_count_kept(self):
        torch, observers = torch_with_observer(torch_stats(GIB, 2 * GIB))
        with mock.patch.dict("sys.modules", {"torch": torch}):
            src = vec.torch_source(oom_snapshot=False)
            src()
            for i in range(vec.MAX_OOM_EVENTS + 3):
                observers[0](0, (i + 1) << 20, 8 * GIB, 0)
            dev = self.sample(src)
        self.assertEqual(dev["oom_seq"], vec.MAX_OOM_EVENTS + 3)
        seqs = [e["seq"] for e in dev["oom_events"]]
        self.assertEqual(seqs, list(range(4, vec.MAX_OOM_EVENTS + 4)))

    def test_counter_fallback_without_observer(self):
        stats = torch_stats(GIB, 2 * GIB, ooms=0)
        torch = fake_torch([(UUID0[4:], stats)])  # no torch._C: torch before 2.0
        with mock.patch.dict("sys.modules", {"torch": torch}):
            src = vec.torch_source()
            self.assertNotIn("oom_seq", self.sample(src))
            stats["num_ooms"] = 3
            r = self.reporters[0]
            self.assertTrue(r.sample_now())
            dev = self.servers[0].get()[2]["devices"][0]
        self.assertEqual(dev["oom_seq"], 3)
        self.assertEqual(dev["oom_events"], [{"seq": 3, "source": "counter", "allocated": GIB,
                                              "reserved": 2 * GIB, "inactive_split": 0}])

    def test_observer_never_raises(self):
        torch, observers = torch_with_observer(torch_stats(GIB, 2 * GIB))
        with mock.patch.dict("sys.modules", {"torch": torch}):
            src = vec.torch_source()
            src()

            def boom(i):
                raise RuntimeError("driver gone")
            torch.cuda.memory_stats = boom
            observers[0](0, GIB, 8 * GIB, 0)  # must not raise into torch's allocator


class WireFixtureTest(unittest.TestCase):
    """push/testdata/python_diagnosis.json, which the Go decoder's test reads, is what
    this client encodes: a change on either side fails one of the two tests."""

    def encode(self):
        torch, obs = torch_with_observer(torch_stats(2 * GIB, 4 * GIB, inactive=GIB),
                                         [{"device": 0, "blocks": [{"state": "inactive", "size": 512 << 20}]}])
        vec._OOM_LOG.clear()
        self.addCleanup(vec._OOM_LOG.clear)
        env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:512"}
        with mock.patch.dict("sys.modules", {"torch": torch}), mock.patch.dict("os.environ", env):
            src = vec.torch_source()
            r = vec.Reporter(sources=[src], socket_path="/nonexistent", labels={"service": "ranker"})
            src()
            obs[0](0, 3 * GIB, 8 * GIB, 100 << 20)
            return r._encode(*r._collect(), 0)

    def test_wire_fixture(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "push", "testdata",
                            "python_diagnosis.json")
        if os.environ.get("UPDATE_FIXTURES"):
            with open(path, "wb") as f:
                f.write(self.encode())
        with open(path, "rb") as f:
            self.assertEqual(f.read(), self.encode())


def torch_with_peaks(stats):
    """fake torch with a peak counter: set_peak(n) is what the next phase will read."""
    torch, _ = torch_with_observer(stats)
    state = {"peak": 0, "resets": 0}
    torch.cuda.current_device = lambda: 0

    def reset(dev):
        state["resets"] += 1
        state["peak"] = 0
    torch.cuda.reset_peak_memory_stats = reset
    torch.cuda.max_memory_allocated = lambda dev: state["peak"]
    return torch, state


class PhaseTest(Base):
    def test_phase_peaks_max_since_last_push(self):
        torch, state = torch_with_peaks(torch_stats(GIB, 2 * GIB))
        srv = self.server()
        with mock.patch.dict("sys.modules", {"torch": torch}):
            r = self.reporter(sources=[vec.torch_source()])

            @r.phased("infer")
            def infer(n):
                state["peak"] = n
                return n

            with r.phase("preprocess"):
                state["peak"] = 3 * GIB
            self.assertEqual(infer(GIB), GIB)
            infer(2 * GIB)
            infer(GIB // 2)  # max since the last push, not the last value
            self.assertEqual(state["resets"], 4, "the counter is reset when each phase begins")
            self.assertTrue(r.sample_now())
            dev = srv.get()[2]["devices"][0]
            self.assertEqual(dev["phase_peaks"], [{"phase": "infer", "peak_allocated": 2 * GIB},
                                                  {"phase": "preprocess", "peak_allocated": 3 * GIB}])
            self.assertTrue(r.sample_now())
            self.assertNotIn("phase_peaks", srv.get()[2]["devices"][0], "sent peaks are not repeated")

    def test_peaks_kept_when_the_send_fails(self):
        torch, state = torch_with_peaks(torch_stats(GIB, 2 * GIB))
        with mock.patch.dict("sys.modules", {"torch": torch}):
            r = self.reporter(sources=[vec.torch_source()])  # no server: sends fail
            with r.phase("infer"):
                state["peak"] = GIB
            self.assertFalse(r.sample_now())
            srv = self.server()
            r._next_connect = 0.0  # no backoff wait in the test
            self.assertTrue(r.sample_now())
            self.assertEqual(srv.get()[2]["devices"][0]["phase_peaks"], [{"phase": "infer", "peak_allocated": GIB}])

    def test_invalid_names_and_bounds(self):
        torch, state = torch_with_peaks(torch_stats(GIB, 2 * GIB))
        with mock.patch.dict("sys.modules", {"torch": torch}):
            r = self.reporter(sources=[vec.torch_source()])
            with r.phase("Bad Name"):
                state["peak"] = GIB
            self.assertEqual(state["resets"], 0, "an invalid phase touches no counter")
            for i in range(vec.MAX_PHASES + 2):
                with r.phase("p%d" % i):
                    state["peak"] = i
        self.assertEqual(len(r._phases[UUID0]), vec.MAX_PHASES)

    def test_phase_without_torch_does_nothing(self):
        r = self.reporter()
        with mock.patch.dict("sys.modules", {"torch": None}):
            with r.phase("infer"):
                pass
        self.assertEqual(r._phases, {})


class TensorRTBudgetTest(Base):
    """Fakes shaped like TensorRT's Python API (ICudaEngine.device_memory_size_v2,
    IExecutionContext.engine); TensorRT is not installed here."""

    def test_shared_user_managed_buffer_counted_once(self):
        from test_vram_exporter_client import FakeContext, FakeEngine
        tr = vec.TensorRTTracker()
        e = FakeEngine(device_memory=1200, plan=2000)
        cs = [FakeContext(e) for _ in range(4)]
        tr.register_engine(e, UUID0)
        for c in cs[:3]:
            tr.register_context(c, UUID0, shared=True)
        tr.register_context(cs[3], UUID0)
        eng = tr()[0]["trt_engines"][0]
        self.assertEqual((eng["contexts"], eng["context_bytes"], eng["held_bytes"]), (4, 1200, 2400))

    def test_engines_reach_the_wire(self):
        from test_vram_exporter_client import FakeContext, FakeEngine
        tr = vec.TensorRTTracker()
        e = FakeEngine(device_memory=1200, plan=2000)
        cs = [FakeContext(e) for _ in range(4)]
        tr.register_engine(e, UUID0)
        for c in cs:
            tr.register_context(c, UUID0)
        tr.allocation_strategy = "STATIC"
        srv = self.server()
        r = self.reporter(sources=[tr])
        self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual(msg["allocator"], {"allocation_strategy": "STATIC"})
        self.assertEqual(msg["devices"][0]["trt_engines"], [
            {"engine": "trt.weights", "contexts": 4, "context_bytes": 1200, "held_bytes": 4800, "weights_bytes": 2000}])

    def test_bad_engines_left_out(self):
        srv = self.server()
        bad = [{"engine": "a b", "contexts": 1}, {"engine": "ok", "contexts": "x"},
               {"engine": "dup", "contexts": 1}, {"engine": "dup", "contexts": 2}]
        r = self.reporter(sources=[lambda: [{"uuid": UUID0, "pools": [{"name": "p", "allocated": 1, "reserved": 1}],
                                             "trt_engines": bad}]])
        self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[2]["devices"][0]["trt_engines"], [{"engine": "dup", "contexts": 1}])


class SettingsTest(Base):
    def test_torch_alloc_conf(self):
        env = {"PYTORCH_CUDA_ALLOC_CONF":
               "expandable_segments:True, max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2],"
               "garbage_collection_threshold:0.6,unknown_key:1,backend:native"}
        self.assertEqual(vec.torch_allocator_settings(env), {
            "expandable_segments": "True", "max_split_size_mb": "512",
            "garbage_collection_threshold": "0.6", "backend": "native"})
        self.assertEqual(vec.torch_allocator_settings({"PYTORCH_ALLOC_CONF": "expandable_segments:False"}),
                         {"expandable_segments": "False"})
        self.assertEqual(vec.torch_allocator_settings({}), {})

    def test_jax_defaults_and_env(self):
        self.assertEqual(vec.jax_allocator_settings({}),
                         {"preallocate": "true", "mem_fraction": "0.75", "allocator": "default"})
        self.assertEqual(vec.jax_allocator_settings({
            "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5",
            "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}),
            {"preallocate": "false", "mem_fraction": ".5", "allocator": "platform"})

    def test_values_the_daemon_would_refuse_are_left_out(self):
        self.assertEqual(vec._clean_settings({"a": "x y", "B": "1", "ok": "1", "long": "v" * 65}), {"ok": "1"})
        many = dict(("k%02d" % i, "v") for i in range(40))
        self.assertEqual(len(vec._clean_settings(many)), vec.MAX_ALLOCATOR_SETTINGS)

    def test_message_carries_the_runtime_settings(self):
        torch, _ = torch_with_observer(torch_stats(GIB, 2 * GIB))
        srv = self.server()
        with mock.patch.dict("sys.modules", {"torch": torch}), \
                mock.patch.dict("os.environ", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}):
            r = self.reporter(sources=[vec.torch_source()])
            self.assertTrue(r.sample_now())
        msg = srv.get()[2]
        self.assertEqual(msg["runtime"], "torch")
        self.assertEqual(msg["allocator"], {"expandable_segments": "True", "backend": "native"})

    def test_jax_process_gets_jax_settings(self):
        srv = self.server()
        with mock.patch.dict("os.environ", {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}):
            r = self.reporter(runtime="jax")
            self.assertTrue(r.sample_now())
        self.assertEqual(srv.get()[2]["allocator"]["preallocate"], "true")

    def test_tensorrt_strategy(self):
        t = vec.TensorRTTracker()
        self.assertEqual(t.allocator_settings(), {})
        t.allocation_strategy = types.SimpleNamespace(name="USER_MANAGED")
        self.assertEqual(t.allocator_settings(), {"allocation_strategy": "USER_MANAGED"})

    def test_no_settings_no_field(self):
        srv = self.server()
        r = self.reporter(runtime="custom")
        self.assertTrue(r.sample_now())
        self.assertNotIn("allocator", srv.get()[2])


if __name__ == "__main__":
    unittest.main()
