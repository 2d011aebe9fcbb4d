"""Workloads for scripts/utilprobe (the per-process utilization as a load signal).

  idle       a CUDA context and 64 MiB, no kernel
  saturated  back-to-back 4096² matmuls: never at rest
  bursty     requests of 0.05–0.6 s of back-to-back matmuls, 0.1–2 s of rest between
  decode     requests of 20–200 tokens, each 8 matmuls (about 2 ms of GPU) and 5 ms of
             host work, 0.5–2 s of rest between: a generation server
  light      requests of 0.1–0.4 s that are mostly host work (tokenizing, waiting on I/O)
             around one small kernel: in flight, but all but idle on the GPU

Each request's start and end (Unix seconds) go to --log as a JSON line, for comparing
with the polls of utilprobe -raw.

usage: utilprobe.py --mode MODE --seconds N [--log FILE]
"""
import argparse
import json
import random
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--mode", required=True, choices=["idle", "saturated", "bursty", "decode", "light"])
ap.add_argument("--seconds", type=float, default=30)
ap.add_argument("--log", default="")
a = ap.parse_args()
x = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
log = open(a.log, "w") if a.log else None
rng = random.Random(1)
end = time.time() + a.seconds


def request(work):
    t0 = time.time()
    work()
    if log:
        log.write(json.dumps([t0, time.time()]) + "\n")
        log.flush()


def matmuls(dur):
    t0 = time.time()
    while time.time() - t0 < dur:
        x @ x
        torch.cuda.synchronize()


def tokens(n):
    for _ in range(n):
        for _ in range(8):
            x @ x
        torch.cuda.synchronize()
        time.sleep(0.005)


def host(dur):
    (x[:8] @ x[:, :8]).sum().item()
    time.sleep(dur)


while time.time() < end:
    if a.mode == "idle":
        time.sleep(0.5)
    elif a.mode == "saturated":
        matmuls(1.0)
    elif a.mode == "bursty":
        time.sleep(rng.uniform(0.1, 2.0))
        request(lambda: matmuls(rng.uniform(0.05, 0.6)))
    elif a.mode == "decode":
        time.sleep(rng.uniform(0.5, 2.0))
        request(lambda: tokens(rng.randint(20, 200)))
    elif a.mode == "light":
        time.sleep(rng.uniform(0.1, 1.0))
        request(lambda: host(rng.uniform(0.1, 0.4)))
