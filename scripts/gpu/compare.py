"""Compares a /metrics scrape with nvidia-smi and with torch's own figures (gpu-e2e).

usage: compare.py phase1 METRICS SMI_APPS_CSV SMI_GPU_CSV HOLD_PID HOLD_MIB
       compare.py phase2 METRICS PUSHCHECK_JSON
Prints one line per check and exits 1 if any fails.
"""
import json
import re
import sys

MiB = 2**20
failed = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def parse(path):
    series = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line.strip())
        if not m:
            continue
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        series.setdefault(m.group(1), []).append((labels, float(m.group(4))))
    return series


def same_mib(got, smi_mib):
    """nvidia-smi prints whole MiB (rounded up for some fields, down for others), so
    "agree to the MiB" means the exporter's bytes are less than 1 MiB away."""
    return len(got) == 1 and abs(got[0] / MiB - float(smi_mib)) < 1.0


def fmt(got):
    return ["%.2f" % (v / MiB) for v in got]


def find(series, name, **want):
    return [v for (l, v) in series.get(name, []) if all(l.get(k) == str(x) for k, x in want.items())]


def phase1(metrics, apps_csv, gpu_csv, hold_pid, hold_mib):
    s = parse(metrics)
    check(find(s, "vram_nvml_up") == [1.0], "vram_nvml_up is 1")
    for line in open(gpu_csv):
        uuid, used, total, reserved = [x.strip() for x in line.split(",")]
        got_used = find(s, "vram_gpu_memory_used_bytes", uuid=uuid)
        got_total = find(s, "vram_gpu_memory_total_bytes", uuid=uuid)
        got_res = find(s, "vram_gpu_memory_driver_reserved_bytes", uuid=uuid)
        check(same_mib(got_total, total), "GPU %s total: exporter %s MiB, nvidia-smi %s MiB" % (uuid, fmt(got_total), total))
        check(same_mib(got_used, used), "GPU %s used: exporter %s MiB, nvidia-smi %s MiB" % (uuid, fmt(got_used), used))
        check(same_mib(got_res, reserved), "GPU %s driver reserved: exporter %s MiB, nvidia-smi %s MiB" % (uuid, fmt(got_res), reserved))
    seen_hold = False
    for line in open(apps_csv):
        pid, uuid, used = [x.strip() for x in line.split(",")]
        got = find(s, "vram_process_gpu_memory_used_bytes", pid=pid, uuid=uuid)
        check(same_mib(got, used), "process %s on %s: exporter %s MiB, nvidia-smi %s MiB" % (pid, uuid, fmt(got), used))
        if pid == str(hold_pid):
            seen_hold = True
            check(int(used) >= int(hold_mib), "holder pid %s uses %s MiB >= the %s MiB tensor it holds" % (pid, used, hold_mib))
    check(seen_hold, "nvidia-smi lists the holder pid %s" % hold_pid)
    check(len(find(s, "vram_process_info", pid=hold_pid)) == 1, "vram_process_info for the holder pid")


def phase2(metrics, pushed_json):
    s = parse(metrics)
    want = json.load(open(pushed_json))
    pid = want["pid"]
    uuid = want["uuid"]
    uuid = uuid if uuid.startswith(("GPU-", "MIG-")) else "GPU-" + uuid
    alloc = find(s, "vram_runtime_allocated_bytes", pid=pid, uuid=uuid, pool="torch")
    res = find(s, "vram_runtime_reserved_bytes", pid=pid, uuid=uuid, pool="torch")
    cached = find(s, "vram_runtime_cached_bytes", pid=pid, uuid=uuid, pool="torch")
    peak = find(s, "vram_runtime_peak_allocated_bytes", pid=pid, uuid=uuid, pool="torch")
    used = find(s, "vram_process_gpu_memory_used_bytes", pid=pid, uuid=uuid)
    unattr = find(s, "vram_process_unattributed_bytes", pid=pid, uuid=uuid)
    print("torch figures at the sample: allocated=%d reserved=%d peak=%d" % (want["allocated"], want["reserved"], want["peak_allocated"]))
    print("exporter: allocated=%s reserved=%s cached=%s peak=%s nvml_used=%s unattributed=%s" % (alloc, res, cached, peak, used, unattr))
    check(alloc == [float(want["allocated"])], "allocated equals torch's allocated_bytes.all.current")
    check(res == [float(want["reserved"])], "reserved equals torch's reserved_bytes.all.current")
    check(peak == [float(want["peak_allocated"])], "peak_allocated equals torch's allocated_bytes.all.peak")
    check(cached == [float(want["reserved"] - want["allocated"])], "cached = reserved - allocated")
    check(len(used) == 1 and used[0] >= want["reserved"], "NVML used >= reserved")
    ok = len(unattr) == 1 and len(used) == 1 and unattr[0] == used[0] - want["reserved"]
    check(ok, "unattributed = NVML used - reserved")
    check(len(unattr) == 1 and 100 * MiB <= unattr[0] <= 2048 * MiB,
          "unattributed is CUDA context + library overhead: %s MiB" % [int(v) // MiB for v in unattr])
    check(len([1 for (l, _) in s.get("vram_runtime_info", []) if l.get("pid") == str(pid) and l.get("service") == "gpu-e2e"]) == 1,
          "vram_runtime_info carries the client labels")


if __name__ == "__main__":
    if sys.argv[1] == "phase1":
        phase1(*sys.argv[2:])
    else:
        phase2(*sys.argv[2:])
    print("%d checks failed" % len(failed))
    sys.exit(1 if failed else 0)
