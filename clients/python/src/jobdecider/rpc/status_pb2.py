"""google.rpc.status_pb2 itself; status_pb2.pyi beside this file types it (see __init__.py)."""

from google.rpc.status_pb2 import *  # noqa: F403 (the same module's every message and DESCRIPTOR)
