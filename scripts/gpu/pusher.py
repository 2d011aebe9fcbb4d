"""A serving-like process for gpu-e2e's cost phase: holds a little GPU memory and pushes
through the real client once a second (PUSH_INTERVAL seconds if set) until killed.

usage: pusher.py SOCKET READY_FILE
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
import torch  # noqa: E402

import vram_exporter_client as vc  # noqa: E402

sock, ready = sys.argv[1:3]
keep = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
r = vc.Reporter(socket_path=sock, interval=float(os.environ.get("PUSH_INTERVAL", "1")), labels={"service": "gpu-e2e-cost"}, sources=[vc.torch_source()])
r.start()
r.sample_now()
with open(ready, "w") as f:
    f.write("ready\n")
while True:
    time.sleep(3600)
