"""Python client for sidetable, written from docs/protocol.md."""

from .types import (DateTime, Entity, Guid, Int32, Int64, INT32_MIN,
                    INT32_MAX, INT64_MIN, INT64_MAX)
from .client import (Batch, ChangesPage, Client, Handle, QueryPage,
                     SidetableError, SidetableTimeout, Watermark, WriteResult,
                     INSUFFICIENT_STORAGE, READ_SESSION_NOT_AVAILABLE,
                     SERVER_BUSY)
from .session import Session
from . import wire

__all__ = ["Batch", "ChangesPage", "Client", "DateTime", "Entity", "Guid",
           "Handle", "Int32", "Int64", "QueryPage", "SidetableError",
           "SidetableTimeout", "WriteResult", "wire", "INT32_MIN",
           "INT32_MAX", "INT64_MIN", "INT64_MAX", "INSUFFICIENT_STORAGE",
           "SERVER_BUSY", "READ_SESSION_NOT_AVAILABLE", "Session", "Watermark"]
__version__ = "0.1.0"
PROTOCOL_VERSION = 1
