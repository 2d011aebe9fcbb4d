"""A small PyTorch serving loop that reports through the real client (gpu-e2e phase 3).

Modes (the three handlers of the leak-detection issue):
  leak               keeps every output tensor in a global list (a classic leak)
  healthy            varying batch and sequence lengths under inference_mode; nothing kept
  no_inference_mode  no inference_mode/no_grad, and a running metric accumulated as a
                     tensor, so every request's autograd graph (activations) stays alive

usage: serve_loop.py --mode MODE --socket PATH --seconds N [--rate 5]
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
import torch  # noqa: E402

import vram_exporter_client as vc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--mode", required=True, choices=["leak", "healthy", "no_inference_mode"])
ap.add_argument("--socket", required=True)
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("--rate", type=float, default=5.0, help="requests per second")
args = ap.parse_args()

torch.manual_seed(0)
rng = random.Random(1)
dev = "cuda"
hidden = 2048
model = torch.nn.Sequential(
    torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(), torch.nn.Linear(4 * hidden, hidden),
).to(dev, dtype=torch.bfloat16)

reporter = vc.Reporter(socket_path=args.socket, interval=1.0,
                       labels={"service": "gpu-e2e-" + args.mode.replace("_", "-"), "model": "mlp"},
                       sources=[vc.torch_source()])
reporter.start()

kept = []
running = None
start = time.time()
n = 0
while time.time() - start < args.seconds:
    batch = rng.choice([1, 2, 4, 8, 16])
    seq = rng.choice([32, 64, 128, 256]) if args.mode == "healthy" else 32
    if args.mode == "no_inference_mode":
        batch, seq = 1, 8  # each kept graph holds ~0.3 MiB of activations: ~100 MiB/min
    x = torch.randn(batch, seq, hidden, device=dev, dtype=torch.bfloat16)
    if args.mode == "no_inference_mode":
        out = model(x)
        score = out.float().pow(2).mean()
        running = score if running is None else running + score  # keeps every graph alive
    else:
        with torch.inference_mode():
            out = model(x)
        if args.mode == "leak":
            kept.append(out[:, :8].clone())  # outputs kept across requests
    torch.cuda.synchronize()
    reporter.sample_now()  # request boundary: the cleanest allocated floor
    n += 1
    time.sleep(max(0.0, 1.0 / args.rate))
s = torch.cuda.memory_stats(0)
print("mode=%s requests=%d allocated=%d reserved=%d sent=%d dropped=%d" % (
    args.mode, n, s["allocated_bytes.all.current"], s["reserved_bytes.all.current"], reporter.sent, reporter.dropped))
reporter.stop()
