"""Checks an installed vram-exporter-client (scripts/test.sh runs it after
`pip install ./client/python` in a fresh venv).

    python3 -I install_smoke.py

-I matters: without it the script's own directory, the source tree, would be imported
instead of the installed copy.  Exit status 0 when every check passed.
"""

import importlib.metadata as md
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from typing import List


def main() -> int:
    import vram_exporter_client as vec
    from vram_exporter_client import vllm_plugin

    failures: List[str] = []

    def check(ok: bool, what: str) -> None:
        print("%s %s" % ("ok  " if ok else "FAIL", what))
        if not ok:
            failures.append(what)

    here = os.path.dirname(os.path.abspath(vec.__file__))
    check(here.startswith(os.path.realpath(sys.prefix)) or here.startswith(sys.prefix),
          "imported from the environment (%s), not the source tree" % here)
    check(os.path.isfile(os.path.join(here, "py.typed")), "py.typed installed")
    check(md.version("vram-exporter-client") == vec.__version__,
          "distribution version %s is the module's __version__" % md.version("vram-exporter-client"))
    check(md.metadata("vram-exporter-client").get("Requires-Dist") is None, "no dependencies")

    eps = md.entry_points()
    group = (eps.select(group="vllm.general_plugins") if hasattr(eps, "select")
             else eps.get("vllm.general_plugins", ()))  # Python < 3.10
    found = [ep for ep in group if ep.name == "vram_exporter"]
    check(len(found) == 1, "vllm.general_plugins entry point vram_exporter")
    if found:
        fn = found[0].load()
        check(fn is vllm_plugin.register, "entry point loads vllm_plugin.register")
        # no torch in this process: the plugin must do nothing (and not raise)
        check(fn() is None and vllm_plugin._plugin.reporter is None,
              "register() without torch starts no reporter")
        vllm_plugin._plugin.stop()

    d = tempfile.mkdtemp(prefix="vec-smoke-")
    try:
        path = os.path.join(d, "push.sock")
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ls.bind(path)
        ls.listen(1)
        got: List[bytes] = []
        done = threading.Event()

        def serve() -> None:
            c, _ = ls.accept()
            got.append(c.recv(1 << 17))
            c.close()
            done.set()

        threading.Thread(target=serve, daemon=True).start()
        r = vec.Reporter(socket_path=path, labels={"service": "smoke"}, sources=[])
        r.set_pool("GPU-5c3e2f4a-1b2c-4d5e-8f90-0123456789ab", "manual", allocated=1, reserved=2)
        check(r.sample_now(), "sample_now() sent a message")
        check(done.wait(10), "the listener received it")
        if got:
            m = json.loads(got[0].decode("utf-8"))
            check(m.get("v") == vec.PROTOCOL_VERSION and m.get("labels") == {"service": "smoke"}
                  and m["devices"][0]["pools"][0]["reserved"] == 2, "message is protocol v1: %s" % m)
        r.stop()
        ls.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
