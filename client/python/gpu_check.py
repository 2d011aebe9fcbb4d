#!/usr/bin/env python3
"""Integration check on a GPU machine: the real frameworks against a fake daemon.

    python3 gpu_check.py

Runs examples/plain_script.py against a recording SOCK_SEQPACKET listener and checks
every message against protocol v1's rules; compares the torch, JAX and CuPy adapters'
UUIDs with cuda_uuid() (libcuda); prints the key set of a real memory_stats().
"""

import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vram_exporter_client as vec  # noqa: E402
from test_vram_exporter_client import FakeServer  # noqa: E402

UUID = re.compile(r"^(GPU|MIG)-[A-Za-z0-9/_-]+$")


def check_message(m):
    assert m["v"] == 1 and re.match(r"^[a-z0-9][a-z0-9_.-]{0,31}$", m["runtime"]), m
    assert type(m["client_dropped"]) is int
    uuids = [d["uuid"] for d in m["devices"]]
    assert len(uuids) == len(set(uuids)) <= 16
    for d in m["devices"]:
        assert UUID.match(d["uuid"]), d["uuid"]
        names = {p["name"]: p for p in d["pools"]}
        assert len(names) == len(d["pools"]) <= 32
        for p in d["pools"]:
            for k in ("allocated", "reserved", "peak_allocated", "active", "inactive_split",
                      "limit", "alloc_retries", "ooms"):
                if k in p:
                    assert type(p[k]) is int and 0 <= p[k] <= 1 << 50, (k, p)
            assert p["reserved"] >= p["allocated"], p
            if "parent" in p:
                assert "parent" not in names[p["parent"]], p


def main():
    ok = True
    d = tempfile.mkdtemp()
    path = os.path.join(d, "push.sock")
    srv = FakeServer(path)
    out = subprocess.run([sys.executable, "examples/plain_script.py", "--socket", path,
                          "--iterations", "12", "--interval", "0.5", "--leak-mib", "8"],
                         capture_output=True, text=True, timeout=300)
    print("plain_script rc=%d stdout=%s stderr=%s" % (out.returncode, out.stdout.strip(),
                                                      out.stderr.strip()[-2000:]))
    msgs = [json.loads(x[2]) for x in srv.drain()]
    for m in msgs:
        check_message(m)
    print("messages received: %d, all valid" % len(msgs))
    if msgs:
        print("last message: %s" % json.dumps(msgs[-1]))
        floors = [m["devices"][0]["pools"][0]["allocated"] for m in msgs if m["devices"]]
        print("allocated over time (device 0): %s" % floors)
    ok &= out.returncode == 0 and len(msgs) > 0

    import torch
    torch.ones(1, device="cuda")
    s = torch.cuda.memory_stats(0)
    print("real memory_stats(): %d keys: %s" % (len(s), sorted(s)))
    devs = vec.torch_source()()
    for i in range(torch.cuda.device_count()):
        u = vec.cuda_uuid(i)
        tu = vec._prefix_uuid(str(torch.cuda.get_device_properties(i).uuid))
        print("device %d: torch %s, libcuda %s" % (i, tu, u))
        ok &= u == tu
    print("torch_source: %s" % devs)
    try:
        import cupy
        a = cupy.ones(1 << 20)
        print("cupy_source: %s" % vec.cupy_source()())
        del a
    except ImportError:
        print("cupy not installed")
    except Exception as e:  # noqa: BLE001
        print("cupy check failed: %r" % e)
        ok = False
    try:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax
        print("jax_source before init: %s" % vec.jax_source()())
        x = jax.numpy.ones((1 << 20,))
        x.block_until_ready()
        print("jax_source: %s" % vec.jax_source()())
    except ImportError:
        print("jax not installed")
    except Exception as e:  # noqa: BLE001
        print("jax check failed: %r" % e)
        ok = False
    srv.close()
    print("GPU CHECK", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
