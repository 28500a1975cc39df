"""TEMPORARY stand-in (the helper's module replaces it)."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class FileStamp:
    path: str
    size: int
    mtime_ns: int | None
    etag: str | None = None


def stamp_files(paths: Sequence[str], s3=None) -> list[FileStamp]:
    out = []
    for p in paths:
        st = os.stat(p)
        out.append(FileStamp(str(p), st.st_size, st.st_mtime_ns))
    return out


def entry_key(stamps: Sequence[FileStamp], chain: str) -> str:
    doc = [[s.path, s.size, s.mtime_ns, s.etag] for s in sorted(stamps, key=lambda s: s.path)]
    return hashlib.sha256(json.dumps([doc, chain]).encode()).hexdigest()


class StateCache:
    def __init__(self, folder=None, max_bytes=None):
        self.folder = Path(folder or "/tmp/state-cache-standin")
        self.disabled = None

    def get(self, key):
        p = self.folder / f"{key}.npz"
        if not p.exists():
            return None
        with np.load(p, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files if k != "__meta__"}
            meta = json.loads(bytes(z["__meta__"]).decode())
        return arrays, meta

    def put(self, key, arrays, meta):
        self.folder.mkdir(parents=True, exist_ok=True)
        p = self.folder / f"{key}.npz"
        buf = io.BytesIO()
        np.savez(buf, **arrays, __meta__=np.frombuffer(json.dumps(meta).encode(), "u1"))
        tmp = p.with_suffix(".tmp")
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, p)
        return True
