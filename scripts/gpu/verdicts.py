"""Scores gpu-e2e phase 3: each serving loop's verdicts, from `vram_exporter replay
--output json` of the recorded trace, against what the loop did (its --meta line).

For every loop it prints the verdicts it went through, the first leak or
unattributed_growth and its delay from the onset, and the last verdict; then the GPU
exhaustion forecast lines. A look-alike (staircase, burst, healthy, nvml_only, gc_sawtooth…) must never
be leak or unattributed_growth; a leak must be flagged after its onset; a probe (a loop
whose --meta says "probe": a shape outside the built ranges) is printed, not scored. Exit
status 1 when one is not, 2 when the inputs cannot be read.

usage: verdicts.py REPLAY_JSON META_JSON...
"""
import json
import sys

ALERTS = ("leak", "unattributed_growth")


def load_lines(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise SystemExit("%s:%d: not JSON (%s); is it `replay --output json`?" % (path, n, e))
    return out


def fmt_delay(seconds):
    if seconds is None:
        return "-"
    sign = "-" if seconds < 0 else ""
    seconds = abs(int(round(seconds)))
    return "%s%dm%02ds" % (sign, seconds // 60, seconds % 60)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    try:
        replay = load_lines(argv[1])
        loops = [m for path in argv[2:] for m in load_lines(path)]
    except OSError as e:
        sys.stderr.write("verdicts.py: %s\n" % e)
        return 2
    by_pid = {}
    gpu = []
    for line in replay:
        if "pid" in line:
            by_pid.setdefault(line["pid"], []).append(line)
        else:
            gpu.append(line)

    failed = 0
    print("%-22s %7s %-6s %-40s %-20s %10s %-19s %s" % (
        "MODE", "PID", "EXPECT", "VERDICTS", "FIRST ALERT", "DELAY", "FINAL", "RESULT"))
    for m in sorted(loops, key=lambda m: m["mode"]):
        changes = sorted(by_pid.get(m["pid"], []), key=lambda c: c["t"])
        verdicts = [c["verdict"] for c in changes]
        first = next((c for c in changes if c["verdict"] in ALERTS), None)
        onset = m.get("onset")
        delay = first["t"] - onset if first and onset is not None else None
        final = verdicts[-1] if verdicts else "(none)"
        if m.get("probe"):
            # A shape outside the built ranges: what it does is measured, not scored.
            ok, why = True, "PROBE (not scored)"
        elif m["expect"] == "leak":
            ok = first is not None and onset is not None and first["t"] >= onset
            why = "PASS" if ok else ("FAIL: not flagged" if first is None else "FAIL: flagged before the onset")
        else:
            ok = first is None
            why = "PASS" if ok else "FAIL: %s on a look-alike" % first["verdict"]
        failed += not ok
        path = " > ".join(dict.fromkeys(verdicts)) or "(no verdict)"
        print("%-22s %7d %-6s %-40s %-20s %10s %-19s %s" % (
            m["mode"], m["pid"], m["expect"], path[:40], first["verdict"] if first else "quiet",
            fmt_delay(delay), final, why))
        if first is not None:
            print("    %s" % first.get("reason", ""))
    if gpu:
        print("GPU exhaustion forecast lines:")
        t0 = min(m["start"] for m in loops) if loops else gpu[0]["t"]
        for g in gpu:
            sec = g.get("exhaustion_seconds")
            what = "gone" if sec is None else "%.0f s (%.1f h)" % (sec, sec / 3600.0)
            print("    +%s %s %s" % (fmt_delay(g["t"] - t0), g["uuid"], what))
    else:
        print("GPU exhaustion forecast: none")
    print("phase 3 verdicts: %s" % ("PASS" if failed == 0 else "FAIL (%d)" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
