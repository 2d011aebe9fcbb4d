"""TorchServe handler that reports GPU memory to vram_exporter.

Install the client where TorchServe runs (pip install ./client/python), or package
it with the model as one file (copy vram_exporter_client/__init__.py to
vram_exporter_client.py, then torch-model-archiver --extra-files
vram_exporter_client.py), then use this file as the handler.  Every TorchServe worker
is its own process with its own Reporter.
"""

from ts.torch_handler.base_handler import BaseHandler

from vram_exporter_client import Reporter


class VramReportingHandler(BaseHandler):
    reporter = None

    def initialize(self, context):
        super().initialize(context)  # loads the model: CUDA is initialised now
        model = "unknown"
        try:
            model = context.manifest["model"]["modelName"]
        except Exception:  # noqa: BLE001
            pass
        # interval: a few per TTL (30 s default); labels are bounded and validated
        self.reporter = Reporter(interval=5.0, labels={"service": "torchserve", "model": model})
        self.reporter.start()

    # Each step of BaseHandler.handle in a phase: triage names the one where allocated
    # memory peaks.  The peak counter is process-wide; TorchServe runs one request at a
    # time per worker process, so the phases do not interfere.
    def preprocess(self, data):
        with self.reporter.phase("preprocess"):
            return super().preprocess(data)

    def inference(self, data, *args, **kwargs):
        with self.reporter.phase("inference"):
            return super().inference(data, *args, **kwargs)

    def postprocess(self, data):
        with self.reporter.phase("postprocess"):
            return super().postprocess(data)

    def handle(self, data, context):
        try:
            # Requests in flight: a sample the reporter takes while none is in flight is
            # the process at rest, which lets the leak detector tell a leak from load
            # (and page on a steep one sooner).
            with self.reporter.request():
                return super().handle(data, context)
        finally:
            # request boundary: activations are freed, the allocated floor is cleanest.
            # sample_now() never raises and never blocks on the daemon.
            if self.reporter is not None:
                self.reporter.sample_now()
