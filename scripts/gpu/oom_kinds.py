"""Provokes one kind of allocator out-of-memory error with PyTorch under a per-process
limit and pushes it through the real client (gpu-e2e, PHASE_OOM=1).  Each kind runs in
its own process, so the daemon classifies each against that process's own floor.

usage: oom_kinds.py KIND SOCKET READY_FILE [LIMIT_GIB] [WARM_SECONDS]
  KIND: shortage | fragmentation | peak

With torch.cuda.set_per_process_memory_fraction(LIMIT/total) the allocator fails as
soon as reserved + request would pass LIMIT, however much the GPU has free:
  shortage:      3 GiB held as the usual floor; a 2 GiB request (demand 5 GiB, under
                 twice the floor) with 1 GiB left under the limit and nothing cached.
  fragmentation: a 3 GiB segment split into 15 blocks of 200 MiB, every other one
                 freed: 1.4 GiB cached in 200 MiB pieces that cannot be released (their
                 segment has live blocks) plus 1 GiB left under the limit; a 1200 MiB
                 request finds the bytes but no block (expandable_segments must be off).
  peak:          512 MiB held as the usual floor; four 1 GiB "concurrent requests"
                 arrive at once and the fourth fails (demand 4.5 GiB, over twice the
                 floor).
The process waits WARM_SECONDS (default 70, above the daemon's one-minute floor warm-up)
before provoking, pushes right after the error, writes READY_FILE and then sleeps until
killed, so that triage can read it.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
import torch  # noqa: E402

import vram_exporter_client as vc  # noqa: E402

kind, sock, ready = sys.argv[1:4]
GiB, MiB = 1 << 30, 1 << 20
limit = int(float(sys.argv[4]) * GiB) if len(sys.argv) > 4 else 4 * GiB
warm = float(sys.argv[5]) if len(sys.argv) > 5 else 70.0
if "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
    sys.exit("oom_kinds.py: unset PYTORCH_CUDA_ALLOC_CONF's expandable_segments: it changes what fragmentation means")

total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(limit / total, 0)


def block(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


keep = []
if kind == "shortage":
    keep.append(block(3 * GiB))
elif kind == "fragmentation":
    big = block(3 * GiB)
    del big  # one cached 3 GiB segment for the small blocks to be split from
    parts = [block(200 * MiB) for _ in range(15)]
    keep = parts[0::2]  # 8 live blocks pin the segment; 7 freed ones stay split in it
    del parts
elif kind == "peak":
    keep.append(block(512 * MiB))
else:
    sys.exit("oom_kinds.py: KIND must be shortage, fragmentation or peak")
torch.cuda.synchronize()

r = vc.Reporter(socket_path=sock, interval=1.0, labels={"service": "oom-" + kind},
                sources=[vc.torch_source()])
r.start()
time.sleep(warm)  # the daemon learns the usual floor

before = torch.cuda.memory_stats(0)
err = None
tmp = []
try:
    if kind == "shortage":
        tmp.append(block(2 * GiB))
    elif kind == "fragmentation":
        tmp.append(block(1200 * MiB))
    else:
        for _ in range(4):
            tmp.append(block(1 * GiB))
except torch.cuda.OutOfMemoryError as e:
    err = str(e).splitlines()[0]
del tmp  # a server frees the request's tensors and carries on
torch.cuda.synchronize()
r.sample_now()
stats = torch.cuda.memory_stats(0)
print(json.dumps({"kind": kind, "pid": os.getpid(), "error": err, "num_ooms": stats.get("num_ooms"),
                  "allocated_before": before["allocated_bytes.all.current"],
                  "reserved_before": before["reserved_bytes.all.current"],
                  "inactive_split_before": before["inactive_split_bytes.all.current"]}), flush=True)
with open(ready, "w") as f:
    f.write("%d\n" % os.getpid())
while True:
    time.sleep(3600)
