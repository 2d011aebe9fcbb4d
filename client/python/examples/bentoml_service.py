"""BentoML (1.2+ service API) service that reports GPU memory to vram_exporter.

    bentoml serve bentoml_service:Ranker

Each BentoML worker process builds its own service instance, so each gets its own
Reporter (and its own connection: the daemon identifies the process by its PID).
"""

import bentoml
import torch

from vram_exporter_client import Reporter


@bentoml.service(resources={"gpu": 1}, traffic={"timeout": 30})
class Ranker:
    def __init__(self):
        self.model = torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1)
        ).cuda().eval()
        self.reporter = Reporter(labels={"service": "ranker", "model": "mlp"})
        self.reporter.start()

    @bentoml.api(batchable=True)
    def score(self, features: list) -> list:
        try:
            # Requests in flight (counted across BentoML's threads): a sample taken with
            # none in flight is the worker at rest, which lets the leak detector tell a
            # leak from load.  Phases: triage names the one where allocated memory
            # peaks.  The peak counter is process-wide; with several requests at once in
            # this worker, the phases see each other's allocations.
            with self.reporter.request():
                with self.reporter.phase("preprocess"):
                    x = torch.tensor(features, dtype=torch.float32, device="cuda")
                return self._forward(x)
        finally:
            self.reporter.sample_now()  # request boundary

    def _forward(self, x):
        with self.reporter.phase("inference"), torch.inference_mode():
            return self.model(x).squeeze(-1).tolist()

    @bentoml.on_shutdown
    def shutdown(self):
        self.reporter.stop(timeout=1.0)  # closing the connection drops our series at once
