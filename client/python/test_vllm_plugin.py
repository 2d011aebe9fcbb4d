"""Tests for the vLLM general plugin (vram_exporter_client.vllm_plugin), with fakes:
vLLM itself is not installed here.  What a real vLLM adds is only the call of
register() in each process, which these tests make themselves.

    cd client/python && python3 -m unittest -v test_vllm_plugin
"""

import logging
import os
import queue
import sys
import threading
import time
import types
import unittest
import warnings
from unittest import mock

import vram_exporter_client as vec
from test_vram_exporter_client import UUID0, WAIT, Base, fake_torch, torch_stats
from vram_exporter_client import vllm_plugin


class StrictCuda(object):
    """torch.cuda where only is_initialized() may be called: anything else (set_device,
    init, device_count, memory_stats, ...) could create a context and fails the test."""

    def __init__(self):
        self.initialized = False
        self.touched = []

    def is_initialized(self):
        return self.initialized

    def __getattr__(self, name):
        self.touched.append(name)
        raise AssertionError("torch.cuda.%s used before CUDA was initialised" % name)


class PluginTest(Base):
    def setUp(self):
        super().setUp()
        self.plugins = []
        env = {vec.SOCKET_ENV: self.path}
        for k in (vllm_plugin.ENV_LABELS, vllm_plugin.ENV_INTERVAL, vllm_plugin.ENV_DISABLE):
            env[k] = ""
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)

    def tearDown(self):
        for p in self.plugins:
            p.stop()
        super().tearDown()

    def plugin(self, **kw):
        kw.setdefault("new_reporter", lambda: vllm_plugin.make_reporter(os.environ))
        p = vllm_plugin._Plugin(**kw)
        self.plugins.append(p)
        return p

    def assert_no_connection(self, srv):
        self.assertTrue(srv.accepted.empty(), "the plugin connected to the daemon")
        self.assertTrue(srv.messages.empty())

    def test_nothing_before_cuda_init_and_never_touches_cuda(self):
        srv = self.server()
        cuda = StrictCuda()
        torch = types.ModuleType("torch")
        torch.cuda = cuda
        with mock.patch.dict(sys.modules, {"torch": torch}):
            p = self.plugin(poll=3600)
            for _ in range(3):
                p.ensure()
                self.assertFalse(p.check())
        self.assertIsNone(p.reporter)
        self.assertEqual(cuda.touched, [])
        self.assert_no_connection(srv)

    def test_process_without_torch_imports_nothing_and_connects_nowhere(self):
        srv = self.server()
        saved = sys.modules.pop("torch", None)
        try:
            p = self.plugin(poll=3600)
            with mock.patch("builtins.__import__", side_effect=AssertionError("import")) as imp:
                p.ensure()
                self.assertFalse(p.check())
            self.assertFalse(imp.called)
        finally:
            if saved is not None:
                sys.modules["torch"] = saved
        self.assertIsNone(p.reporter)
        self.assert_no_connection(srv)

    def test_reporter_starts_once_cuda_is_initialised(self):
        srv = self.server()
        t = fake_torch([(UUID0[4:], torch_stats(100, 300))], initialized=False)
        initialized = [False]
        t.cuda.is_initialized = lambda: initialized[0]
        vllm = types.ModuleType("vllm")
        vllm.__version__ = "0.11.0"
        os.environ[vllm_plugin.ENV_LABELS] = "model=llama-3-8b, team = search ,bogus"
        with mock.patch.dict(sys.modules, {"torch": t, "vllm": vllm}), \
                self.assertLogs("vram_exporter_client", logging.WARNING) as logs:
            p = self.plugin(poll=3600)
            p.ensure()
            self.assertFalse(p.check())
            self.assertEqual(t.cuda.calls, [])  # memory_stats not read before CUDA init
            initialized[0] = True
            self.assertTrue(p.check())
            _cid, pid, m, _ = srv.get()
        self.assertTrue(any("bogus" in line for line in logs.output))
        self.assertEqual(pid, os.getpid())
        self.assertEqual(m["runtime"], "vllm")
        self.assertEqual(m["runtime_version"], "0.11.0")
        self.assertEqual(m["labels"], {"service": "vllm", "model": "llama-3-8b", "team": "search"})
        self.assertEqual(m["devices"], [{"uuid": UUID0, "pools": [{
            "name": "torch", "allocated": 100, "reserved": 300, "peak_allocated": 100,
            "active": 100, "inactive_split": 0, "alloc_retries": 0, "ooms": 0}]}])
        self.assertEqual(p.reporter.interval, vllm_plugin.DEFAULT_INTERVAL)

    def test_watcher_thread_starts_reporter_and_repeated_calls_make_one(self):
        self.server()
        made = []
        started = threading.Event()
        ready = threading.Event()

        def new_reporter():
            r = self.reporter()
            made.append(r)
            started.set()
            return r

        p = self.plugin(new_reporter=new_reporter, ready=ready.is_set, poll=0.01)
        p.ensure()
        watcher = p._thread
        self.assertIsNotNone(watcher)
        for _ in range(5):  # vLLM may load plugins more than once in a process
            p.ensure()
            self.assertIs(p._thread, watcher)
        self.assertEqual(made, [])
        ready.set()
        self.assertTrue(started.wait(WAIT))
        watcher.join(WAIT)
        self.assertFalse(watcher.is_alive(), "the watcher ends once the reporter runs")
        for _ in range(5):
            p.ensure()
        self.assertEqual(len(made), 1)
        self.assertIs(p.reporter, made[0])

    def test_cuda_already_up_starts_at_once_without_watcher(self):
        self.server()
        made = []
        p = self.plugin(new_reporter=lambda: made.append(self.reporter()) or made[-1],
                        ready=lambda: True)
        p.ensure()
        p.ensure()
        self.assertIsNone(p._thread)
        self.assertEqual(len(made), 1)

    def test_never_raises(self):
        def boom():
            raise RuntimeError("boom")

        with self.assertLogs("vram_exporter_client", logging.WARNING) as logs:
            p = self.plugin(ready=boom, poll=3600)
            p.ensure()  # the failing check runs at once, in the caller
            p.ensure()
            q = self.plugin(new_reporter=boom, ready=lambda: True)
            q.ensure()
            q.ensure()
        self.assertIsNone(p.reporter)
        self.assertIsNone(p._thread)
        self.assertIsNone(q.reporter)
        self.assertEqual(sum("cannot start a reporter" in line for line in logs.output), 2,
                         "one warning per plugin, not one per call")

        broken = mock.Mock()
        broken.ensure.side_effect = RuntimeError("boom")
        with mock.patch.object(vllm_plugin, "_plugin", broken):
            self.assertIsNone(vllm_plugin.register())
        self.assertTrue(broken.ensure.called)

    def test_register_is_the_process_singleton_and_can_be_disabled(self):
        srv = self.server()
        t = fake_torch([(UUID0, torch_stats(1, 2))])
        with mock.patch.dict(sys.modules, {"torch": t}):
            p = self.plugin(poll=3600)
            with mock.patch.object(vllm_plugin, "_plugin", p):
                for _ in range(3):
                    self.assertIsNone(vllm_plugin.register())
                srv.get()
                self.assertIsNotNone(p.reporter)
        self.assertEqual(srv.accepted.qsize(), 1, "one connection for three register() calls")

        off = mock.Mock()
        for value in ("0", "false", "off"):
            with mock.patch.dict(os.environ, {vllm_plugin.ENV_DISABLE: value}), \
                    mock.patch.object(vllm_plugin, "_plugin", off):
                vllm_plugin.register()
        self.assertFalse(off.ensure.called)

    def test_settings_from_environment(self):
        self.assertEqual(vllm_plugin.parse_labels(None), {})
        self.assertEqual(vllm_plugin.parse_labels("a=1,,b = two words , service=chat"),
                         {"a": "1", "b": "two words", "service": "chat"})
        with self.assertLogs("vram_exporter_client", logging.WARNING):
            self.assertEqual(vllm_plugin._interval("soon"), vllm_plugin.DEFAULT_INTERVAL)
        with self.assertLogs("vram_exporter_client", logging.WARNING):
            self.assertEqual(vllm_plugin._interval("-1"), vllm_plugin.DEFAULT_INTERVAL)
        self.assertEqual(vllm_plugin._interval("2.5"), 2.5)
        r = vllm_plugin.make_reporter({vllm_plugin.ENV_INTERVAL: "2",
                                       vllm_plugin.ENV_LABELS: "service=chat"})
        self.reporters.append(r)
        self.assertEqual((r.interval, r.labels, r.runtime), (2.0, {"service": "chat"}, "vllm"))

    def test_fork_child_gets_its_own_watcher(self):
        # vLLM does not call register() again in a forked child: the watcher must be
        # restarted there, and start the child's own Reporter on the child's CUDA init.
        srv = self.server()
        ready = threading.Event()
        p = self.plugin(ready=ready.is_set, poll=0.01)
        p.ensure()
        parent_watcher = p._thread
        r, w = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork with threads
            pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                t = p._thread
                ok = t is not None and t is not parent_watcher and t.is_alive()
                ready.set()  # the child's "CUDA init"
                t.join(WAIT)
                ok = ok and p.reporter is not None
                deadline = time.monotonic() + WAIT
                while ok and p.reporter.sent == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)  # bounded wait for the first push before exiting
                ok = ok and p.reporter.sent > 0
                os.write(w, b"1" if ok else b"0")
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(r, "rb") as f:
            self.assertEqual(f.read(), b"1")
        self.assertEqual(os.WEXITSTATUS(status), 0)
        seen = set()
        while pid not in seen:
            try:
                _cid, mpid, _m, _ = srv.get()
            except queue.Empty:
                break
            seen.add(mpid)
        self.assertIn(pid, seen, "the child's reporter pushed under the child's PID")
        self.assertIsNone(p.reporter, "the parent still waits for its own CUDA init")
        self.assertTrue(parent_watcher.is_alive())


if __name__ == "__main__":
    unittest.main()
