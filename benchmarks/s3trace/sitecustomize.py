"""Loaded at start-up by processes of ``bench_network.py --trace-s3`` (on ``PYTHONPATH``).

Appends one JSON line per S3 request of this process to ``$DGLC_TRACE_S3/<pid>.jsonl``:
time, method, key, requested range, bytes sent (body) and bytes received (content length).
"""

import json
import os
import time

_DIR = os.environ.get("DGLC_TRACE_S3")

if _DIR:
    try:
        import s3fs.core
    except ImportError:  # not a process that talks to S3
        pass
    else:
        _original = s3fs.core.S3FileSystem._call_s3

        async def _traced(self, method, *args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.time()
            out = await _original(self, method, *args, **kwargs)
            body = kwargs.get("Body")
            if isinstance(body, (bytes, bytearray, memoryview)):
                sent = len(body)
            elif hasattr(body, "seek") and hasattr(body, "tell"):  # a file object: its size
                here = body.tell()
                sent = body.seek(0, 2) - here
                body.seek(here)
            else:
                sent = 0
            received = out.get("ContentLength", 0) if isinstance(out, dict) and method == "get_object" else 0
            record = {
                "t": start,
                "m": method,
                "key": kwargs.get("Key", kwargs.get("Prefix", "")),
                "range": kwargs.get("Range"),
                "sent": sent,
                "received": received,
            }
            with open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a") as f:
                f.write(json.dumps(record) + "\n")
            return out

        s3fs.core.S3FileSystem._call_s3 = _traced
        # the sync twin (file writes use it) wraps the original function at class creation
        from fsspec.asyn import sync_wrapper

        s3fs.core.S3FileSystem.call_s3 = sync_wrapper(_traced)
