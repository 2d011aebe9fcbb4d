"""Holds a known amount of GPU memory with PyTorch until killed (gpu-e2e phase 1).

usage: hold.py MIB READY_FILE
"""
import sys
import time

import torch

mib = int(sys.argv[1])
x = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda")
x.fill_(1)
torch.cuda.synchronize()
with open(sys.argv[2], "w") as f:
    f.write("ready\n")
while True:
    time.sleep(3600)
