#!/usr/bin/env python3
"""A plain PyTorch loop that reports its GPU memory to vram_exporter.

    python3 plain_script.py --socket /run/vram_exporter/push.sock --iterations 20

Each iteration allocates a few tensors of varying size on every visible GPU (a
sawtooth on a flat floor), frees them, and reports at the iteration boundary with
sample_now(); a background thread also reports every --interval seconds.  With
--leak-mib N it keeps N MiB per iteration alive, which vram_exporter should call a leak.
Exit status 0 if at least one sample was sent, 1 otherwise.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from vram_exporter_client import Reporter, torch_source  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="PyTorch loop reporting to vram_exporter")
    ap.add_argument("--socket", default=None, help="push socket (default: $VRAM_EXPORTER_SOCKET "
                    "or /run/vram_exporter/push.sock)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--interval", type=float, default=1.0, help="background sample interval, s")
    ap.add_argument("--sleep", type=float, default=0.1, help="pause between iterations, s")
    ap.add_argument("--leak-mib", type=int, default=0, help="MiB kept alive per iteration")
    ap.add_argument("--service", default="plain_script")
    args = ap.parse_args()

    import torch  # the caller imports torch; the client never does

    if not torch.cuda.is_available():
        print("no CUDA device visible", file=sys.stderr)
        return 1
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    reporter = Reporter(socket_path=args.socket, interval=args.interval,
                        labels={"service": args.service, "model": "mlp"},
                        sources=[torch_source()])
    kept = []
    with reporter:  # start() ... stop()
        weights = [torch.randn(4096, 4096, device=d) for d in devices]  # the floor
        for it in range(args.iterations):
            for d, w in zip(devices, weights):
                batch = 64 * (1 + it % 4)  # varying shapes: the cache grows, then plateaus
                x = torch.randn(batch, 4096, device=d)
                for _ in range(4):
                    x = torch.relu(x @ w)
                y = x.sum().item()  # synchronises
                del x
                if args.leak_mib:
                    kept.append(torch.empty(args.leak_mib << 20, dtype=torch.uint8, device=d))
            reporter.sample_now()  # request boundary: the cleanest allocated floor
            if args.sleep:
                time.sleep(args.sleep)
        summary = {
            "sent": reporter.sent, "dropped": reporter.dropped, "errors": reporter.errors,
            "devices": len(devices), "last_output": y,
            "allocated_bytes": [torch.cuda.memory_allocated(d) for d in devices],
            "reserved_bytes": [torch.cuda.memory_reserved(d) for d in devices],
        }
    print(json.dumps(summary))
    return 0 if summary["sent"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
