"""Report GPU memory from every vLLM worker process, with the KV cache as a pool
nested in the torch pool.

vLLM runs one worker process per GPU (tensor/pipeline parallel); each must start its
own Reporter *inside* that process: a Reporter created in the API server process
would see no CUDA state, and one inherited through fork reconnects as the child
anyway.  Use a worker subclass:

    vllm serve MODEL --worker-cls vllm_worker_hook.ReportingWorker

(for the V1 engine; the module must be importable in the workers, e.g. on
PYTHONPATH).  The KV cache is allocated by torch, so it is reported as
"vllm.kv_cache" with parent "torch": it is inside the torch pool and never counted
twice.  Attribute names follow vLLM's GPU worker/model runner and are read
defensively (getattr), since they move between releases.
"""

import torch

from vram_exporter_client import Reporter, torch_source

try:  # V1 engine
    from vllm.v1.worker.gpu_worker import Worker as _BaseWorker
except ImportError:  # older releases
    from vllm.worker.worker import Worker as _BaseWorker


def _kv_cache_tensors(worker):
    runner = getattr(worker, "model_runner", None)
    caches = getattr(runner, "kv_caches", None) or getattr(worker, "gpu_cache", None) or []
    out = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    walk(caches)
    return out


def kv_cache_source(worker):
    """A source reporting the worker's KV cache bytes as a pool nested in "torch"."""
    uuid_of = {}

    def source():
        per_device = {}
        seen = set()
        for t in _kv_cache_tensors(worker):
            if not t.is_cuda:
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key in seen:  # several views of one buffer count once
                continue
            seen.add(key)
            i = t.device.index
            per_device[i] = per_device.get(i, 0) + storage.nbytes()
        out = []
        for i, nbytes in per_device.items():
            u = uuid_of.get(i)
            if u is None:
                u = str(torch.cuda.get_device_properties(i).uuid)
                u = u if u.startswith(("GPU-", "MIG-")) else "GPU-" + u
                uuid_of[i] = u
            out.append({"uuid": u, "pools": [{
                "name": "vllm.kv_cache", "parent": "torch",
                "allocated": nbytes, "reserved": nbytes}]})
        return out

    return source


def install(worker, interval=5.0, labels=None):
    """Start a Reporter in this worker process (call once the KV cache exists)."""
    rank = getattr(worker, "rank", None)
    lab = {"service": "vllm"}
    model = getattr(getattr(worker, "model_config", None), "served_model_name", None) or \
        getattr(getattr(worker, "model_config", None), "model", None)
    if isinstance(model, (list, tuple)):
        model = model[0] if model else None
    if model:
        lab["model"] = str(model)[-128:]
    if rank is not None:
        lab["rank"] = str(rank)
    lab.update(labels or {})
    reporter = Reporter(interval=interval, labels=lab, runtime="vllm",
                        runtime_version=_vllm_version(), sources=[torch_source()])
    reporter.add_source(kv_cache_source(worker))
    reporter.start()
    return reporter


def _vllm_version():
    try:
        import vllm
        return vllm.__version__
    except Exception:  # noqa: BLE001
        return None


class ReportingWorker(_BaseWorker):
    """vLLM worker that reports GPU memory once its KV cache is allocated."""

    _vram_reporter = None

    def _start_vram_reporter(self):
        if self._vram_reporter is None:
            self._vram_reporter = install(self)

    def initialize_from_config(self, *args, **kwargs):  # V1: allocates the KV cache
        result = super().initialize_from_config(*args, **kwargs)
        self._start_vram_reporter()
        return result

    def initialize_cache(self, *args, **kwargs):  # older releases
        result = super().initialize_cache(*args, **kwargs)
        self._start_vram_reporter()
        return result

    def execute_model(self, *args, **kwargs):
        try:
            return super().execute_model(*args, **kwargs)
        finally:
            # step boundary; cheap (one memory_stats() per device + ~10-40 us), but a
            # step is short: sample at most every 0.5 s rather than every step
            r = self._vram_reporter
            if r is not None:
                import time
                now = time.monotonic()
                if now - getattr(self, "_vram_last", 0.0) >= 0.5:
                    self._vram_last = now
                    r.sample_now()
