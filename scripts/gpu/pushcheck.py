"""Allocates and caches known amounts with PyTorch, pushes them through the real client,
and writes torch's own figures at the sample (gpu-e2e phase 2).

usage: pushcheck.py SOCKET OUT_JSON READY_FILE
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
import torch  # noqa: E402

import vram_exporter_client as vc  # noqa: E402

sock, out, ready = sys.argv[1:4]
MiB = 2**20
keep = torch.empty(300 * MiB, dtype=torch.uint8, device="cuda")
tmp = torch.empty(200 * MiB, dtype=torch.uint8, device="cuda")
del tmp  # freed to the cache: allocated drops, reserved stays
torch.cuda.synchronize()

r = vc.Reporter(socket_path=sock, interval=3600, labels={"service": "gpu-e2e", "model": "pushcheck"},
                sources=[vc.torch_source()])
stats = torch.cuda.memory_stats(0)
sent = r.sample_now()
uuid = str(torch.cuda.get_device_properties(0).uuid)
with open(out, "w") as f:
    json.dump({
        "pid": os.getpid(), "uuid": uuid, "sent": sent,
        "allocated": stats["allocated_bytes.all.current"],
        "reserved": stats["reserved_bytes.all.current"],
        "peak_allocated": stats["allocated_bytes.all.peak"],
    }, f)
with open(ready, "w") as f:
    f.write("ready\n")
while True:  # nothing changes from here on, so the scrape must equal the figures above
    time.sleep(3600)
