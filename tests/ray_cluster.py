"""A real Ray cluster on this machine for tests: a head node and worker nodes, each started with
``ray start --block`` on 127.0.0.1 with free ports, each killed (its whole process tree) by
``stop()``; the fixture in the tests calls ``stop`` even when a test fails."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_tree(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Kill a ``ray start --block`` process and every process it started."""
    import psutil

    try:
        parent = psutil.Process(proc.pid)
        procs = parent.children(recursive=True) + [parent]
    except psutil.NoSuchProcess:
        procs = []
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=5)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


class LocalRayCluster:
    """``head`` + ``add_node()`` workers, one CPU each unless told otherwise."""

    def __init__(self, cpus: int = 1, env: dict | None = None):
        self.tmp = tempfile.mkdtemp(prefix="xr", dir="/tmp")  # short: Ray's socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # a token of its own: only processes given this environment can use the cluster
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                    "RAY_health_check_period_ms": "1000",
                    "RAY_health_check_failure_threshold": "3", "RAY_USAGE_STATS_ENABLED": "0",
                    **(env or {})}
        self.nodes: list[subprocess.Popen] = []
        self.reserved = {self.port}  # every port handed to a node of this cluster
        self._start(["--head", "--port", str(self.port), "--include-dashboard", "false",
                     "--temp-dir", self.tmp], cpus)

    def _port(self) -> int:
        """A free port that no node of this cluster was given (alone or in a worker range)."""
        while (port := free_port()) in self.reserved:
            pass
        self.reserved.add(port)
        return port

    def _worker_ports(self, n: int = 41) -> int:
        """The first of ``n`` consecutive ports that no node of this cluster was given: Ray
        refuses to start a node whose worker range holds one of its other ports."""
        while not self.reserved.isdisjoint(range(lo := free_port(), lo + n)):
            pass
        self.reserved.update(range(lo, lo + n))
        return lo

    def _start(self, args: list[str], cpus: int) -> subprocess.Popen:
        lo = self._worker_ports()
        cmd = [RAY, "start", "--block", "--node-ip-address", "127.0.0.1", "--num-cpus",
               str(cpus), "--object-store-memory", str(200 * 2**20), "--disable-usage-stats",
               "--node-manager-port", str(self._port()),
               "--object-manager-port", str(self._port()),
               "--metrics-export-port", str(self._port()),
               "--dashboard-agent-listen-port", str(self._port()),
               "--runtime-env-agent-port", str(self._port()),
               "--min-worker-port", str(lo), "--max-worker-port", str(lo + 40), *args]
        log = open(Path(self.tmp) / f"node{len(self.nodes)}.log", "w")
        proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.nodes.append(proc)
        return proc

    def add_node(self, cpus: int = 1) -> subprocess.Popen:
        return self._start(["--address", self.address], cpus)

    def wait_for_nodes(self, n: int, timeout: float = 60) -> None:
        """Wait until ``n`` nodes are alive (asked through the ``ray status`` CLI)."""
        deadline = time.time() + timeout
        out = ""
        while time.time() < deadline:
            for proc in self.nodes:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Ray node exited ({proc.returncode}): {self.logs()}")
            res = subprocess.run([RAY, "status", "--address", self.address], env=self.env,
                                 capture_output=True, text=True, timeout=30)
            out = res.stdout
            if res.returncode == 0 and out.count("node_") >= n and "Pending:\n (no pend" in out \
                    or (res.returncode == 0 and _alive(out) >= n):
                return
            time.sleep(1)
        raise RuntimeError(f"{n} Ray nodes did not come up in {timeout} s: {out}\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in Path(self.tmp).glob("node*.log"))

    def kill_node(self, proc: subprocess.Popen) -> None:
        kill_tree(proc, signal.SIGKILL)

    def stop(self) -> None:
        for proc in reversed(self.nodes):
            kill_tree(proc, signal.SIGTERM)
            kill_tree(proc, signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _alive(status: str) -> int:
    """Alive nodes in ``ray status`` output (the lines of its 'Active:' section)."""
    lines = status.split("Active:", 1)[-1].split("Pending:", 1)[0].splitlines()
    return sum(1 for ln in lines if "node_" in ln)
