"""Work that a test session does once, whatever the number of xdist workers."""

from __future__ import annotations

import json
import os
import shutil

import filelock  # installed with torch (requirements-test.txt), which depends on it


def shared_once(tmp_path_factory, name: str, produce):
    """Run produce(folder) once per test session, not once per xdist worker, and return (folder, value).

    A session or module fixture runs once in every worker that needs it, and with two workers and
    worksteal scheduling the tests of one module often land on both: the site build and the artifact
    regenerations ran twice on the 2-core CI machine. The first worker to get here produces into a
    folder both workers share, under a file lock; the other waits for the lock and reuses the folder.
    produce's return value (JSON) is kept beside it. If produce raises, nothing is marked done, so the
    other worker produces again and fails the same way, in its own test."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # .../pytest-N/popen-gw0 -> .../pytest-N, which every worker of this run shares
    folder, done = root / f"shared-{name}", root / f"shared-{name}.json"
    with filelock.FileLock(str(root / f"shared-{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            value = produce(folder)
            done.write_text(json.dumps(value))
    return folder, json.loads(done.read_text())
