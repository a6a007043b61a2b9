"""Python client for sidetable, written from docs/protocol.md.

``Client`` (blocking, pipelined) and ``sidetable.aio.AsyncClient``
(asyncio) speak to one sidecar; errors are ``SidetableError`` subclasses,
one per error code (``sidetable.errors``); ``format_filter`` binds
``@name`` parameters into a ``$filter``; ``sidetable.index_keys`` builds the
keys of index-table entries.
"""

from .types import (DateTime, Entity, Guid, Int32, Int64, INT32_MIN,
                    INT32_MAX, INT64_MIN, INT64_MAX)
from .errors import *  # noqa: F401,F403  (one class per error code)
from .errors import __all__ as _error_names
from .client import (Batch, ChangesPage, Client, Handle, QueryPage,
                     Watermark, WriteResult, check_endpoint)
from .filters import format_filter, odata_literal
from .session import Session
from . import curve, errors, index_keys, wire

__all__ = ["Batch", "ChangesPage", "Client", "DateTime", "Entity", "Guid",
           "Handle", "Int32", "Int64", "QueryPage", "WriteResult", "wire",
           "curve", "errors", "index_keys", "INT32_MIN", "INT32_MAX", "INT64_MIN",
           "INT64_MAX", "Session", "Watermark", "format_filter",
           "odata_literal", "check_endpoint"] + list(_error_names)
__version__ = "0.2.0"
PROTOCOL_VERSION = 1
