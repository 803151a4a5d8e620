"""A real two-node Ray cluster on this machine, shared by a module's tests (``--backend ray``).

The head and one worker node each offer 2 CPUs and a small object store. Every node's
processes inherit this process's environment, so the secret a test plants for its agents is set
before the cluster starts and kept until it stops. Ray's files (sessions, logs, the shipped
working directories, spilled objects) all go under one short temp dir, which a test scans.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SECRET_VAR = "COALMINE_RAY_TEST_KEY"
"""The variable an agent's ``api_key_env`` names: set on every node, never in a spec."""
NODE: dict[str, Any] = {"num_cpus": 2, "object_store_memory": 80 * 1024 * 1024}


@dataclass
class RayCluster:
    """The running cluster: its address, its temp dir, and the secret its nodes hold."""

    cluster: Any
    address: str
    temp_dir: Path
    spill_dir: Path
    secret: str
    worker: Any
    """The worker node (a ``ray._private.node.Node``): a test may remove it."""

    def remove_worker(self) -> None:
        """Kill the worker node's processes, as a machine going away would."""
        self.cluster.remove_node(self.worker)

    def add_worker(self) -> None:
        """Start a worker node again (after :meth:`remove_worker`)."""
        self.worker = self.cluster.add_node(**NODE)
        self.cluster.wait_for_nodes()

    def wait_idle(self, timeout: float = 30) -> None:
        """Wait until every CPU is free again (a killed driver's actors are reaped)."""
        state = self.cluster.global_state
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            total = state.cluster_resources().get("CPU", 0)
            if total and state.available_resources().get("CPU", 0) == total:
                return
            time.sleep(0.2)
        raise TimeoutError(f"the cluster's CPUs were not free after {timeout} s")

    def files(self) -> Iterator[Path]:
        """Every file Ray wrote under its temp dir (sockets and the like left out)."""
        for path in self.temp_dir.rglob("*"):
            if path.is_file() and not path.is_symlink():
                yield path

    def shipped(self) -> list[Path]:
        """The working directories shipped to the nodes (one a run)."""
        return sorted(self.temp_dir.glob("session_*/runtime_resources/working_dir_files/*"))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    """Start a head node and one worker node; yield them; shut both down."""
    try:
        from ray.cluster_utils import Cluster
    except ImportError as exc:
        pytest.skip(f"--backend ray tests need Ray (pip install 'coalmine[ray]'): {exc}")
    # A unix socket path holds ~107 characters: Ray's session dir must stay short.
    temp_dir = Path(tempfile.mkdtemp(prefix="rayt-", dir="/tmp"))
    spill_dir = temp_dir / "spill"
    secret = f"sk-ray-planted-{secrets.token_hex(12)}"
    spilling = {"type": "filesystem", "params": {"directory_path": str(spill_dir)}}
    cluster: Any = None
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SECRET_VAR, secret)  # before any node starts: the nodes inherit it
        env.delenv("RAY_ADDRESS", raising=False)
        # where Ray writes the address of "the current cluster" (by default /tmp/ray, which a
        # fresh machine may not have, and which other Ray users share)
        env.setenv("RAY_TMPDIR", str(temp_dir))
        (temp_dir / "ray").mkdir()
        try:
            cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    **NODE,
                    "include_dashboard": False,
                    "temp_dir": str(temp_dir),
                    "_system_config": {"object_spilling_config": json.dumps(spilling)},
                },
            )
            worker = cluster.add_node(**NODE)
            cluster.wait_for_nodes()
            yield RayCluster(cluster, cluster.address, temp_dir, spill_dir, secret, worker)
        finally:
            if cluster is not None:
                cluster.shutdown()
            shutil.rmtree(temp_dir, ignore_errors=True)
