"""Errors of the sidetable client: one class per error code.

Every error is a :class:`SidetableError` carrying ``status`` (HTTP-style,
``None`` for client-side failures), ``code`` (the Azure code as sent on the
wire), ``message`` and ``index`` (the failing operation of a batch).  Each
code of ``docs/protocol.md`` has its own subclass, grouped under a class per
status where several codes share one (``BadRequestError`` for the 400s,
``ResourceNotFoundError`` for both 404s, ``ResourceExistsError`` for the two
"already exists" codes), so ``except`` can be as narrow or as wide as needed.
:func:`error_class` maps a code to its class; an unknown code gets
:class:`SidetableError` itself.
"""

__all__ = [
    "SidetableError", "SidetableTimeout", "SidetableUnreachable",
    "ClientClosedError", "ProtocolError",
    "BadRequestError", "InvalidInputError", "PropertyNameInvalidError",
    "PropertyNameTooLongError", "InvalidDuplicateRowError",
    "OutOfRangeInputError", "PropertyValueTooLargeError",
    "EntityTooLargeError", "TooManyPropertiesError", "KeyValueTooLargeError",
    "InvalidResourceNameError",
    "CommandsInBatchActOnDifferentPartitionsError",
    "AuthorizationError", "AuthorizationFailureError",
    "AuthorizationPermissionMismatchError", "AuthenticationFailedError",
    "ResourceNotFoundError", "TableNotFoundError",
    "ConflictError", "ResourceExistsError", "EntityAlreadyExistsError",
    "TableAlreadyExistsError", "TableBeingDeletedError",
    "UpdateConditionNotSatisfiedError", "PreconditionFailedError",
    "RequestBodyTooLargeError", "InternalServerError",
    "ServiceUnavailableError", "ServerBusyError",
    "ReadSessionNotAvailableError", "InsufficientStorageError",
    "ERROR_CLASSES", "error_class", "make_error",
    "INSUFFICIENT_STORAGE", "SERVER_BUSY", "READ_SESSION_NOT_AVAILABLE",
]

# Error codes a caller may want to act on (docs/protocol.md). A full disk:
# the write was not applied, reads work, writes resume once space is freed
# on the server; not retried automatically (it lasts until an operator acts).
INSUFFICIENT_STORAGE = "InsufficientStorage"   # 507
SERVER_BUSY = "ServerBusy"                     # 503, retried
# A read carrying session tokens (``after``) waited ``wait_ms`` and the
# derived table still did not cover them; nothing stale was returned. Not
# retried automatically (docs/consistency.md).
READ_SESSION_NOT_AVAILABLE = "ReadSessionNotAvailable"   # 504


class SidetableError(Exception):
    """An error reply (any non-2xx status) or a client-side failure.

    ``status`` is the HTTP-style status (``None`` for client-side errors such
    as a time-out), ``code`` the Azure error code (``"EntityAlreadyExists"``),
    ``message`` the server's text, ``index`` the failing operation of a
    batch (``None`` if the server gave none), ``op`` the operation code.
    """

    #: The code this class stands for (``None`` on group classes).
    CODE = None

    def __init__(self, status, code, message, index=None, op=None):
        self.status = status
        self.code = code
        self.message = message
        self.index = index
        self.op = op
        text = "%s %s: %s" % (status if status is not None else "-", code,
                              message)
        if index is not None:
            text += " (operation %d)" % index
        Exception.__init__(self, text)

    @property
    def insufficient_storage(self):
        """True for InsufficientStorage (507): the server's disk is full."""
        return self.code == INSUFFICIENT_STORAGE


class SidetableTimeout(SidetableError):
    """No reply within ``timeout`` on every attempt (code ``Timeout``)."""

    def __init__(self, message, op=None):
        SidetableError.__init__(self, None, "Timeout", message, op=op)


class SidetableUnreachable(SidetableTimeout):
    """Nothing has ever answered at the endpoint: the sidecar is probably not
    running or listens elsewhere.  Raised after about one ``timeout``
    instead of retrying; a subclass of :class:`SidetableTimeout`."""


class ClientClosedError(SidetableError):
    """The client was closed (code ``Closed``)."""


class ProtocolError(SidetableError):
    """A reply the client could not decode (code ``ProtocolError``)."""


# -- server codes, grouped by status ------------------------------------------

class BadRequestError(SidetableError):
    """Any 400: the request was malformed or broke a limit; not executed."""


class InvalidInputError(BadRequestError):
    CODE = "InvalidInput"


class PropertyNameInvalidError(BadRequestError):
    CODE = "PropertyNameInvalid"


class PropertyNameTooLongError(BadRequestError):
    CODE = "PropertyNameTooLong"


class InvalidDuplicateRowError(BadRequestError):
    CODE = "InvalidDuplicateRow"


class OutOfRangeInputError(BadRequestError):
    CODE = "OutOfRangeInput"


class PropertyValueTooLargeError(BadRequestError):
    CODE = "PropertyValueTooLarge"


class EntityTooLargeError(BadRequestError):
    CODE = "EntityTooLarge"


class TooManyPropertiesError(BadRequestError):
    CODE = "TooManyProperties"


class KeyValueTooLargeError(BadRequestError):
    CODE = "KeyValueTooLarge"


class InvalidResourceNameError(BadRequestError):
    CODE = "InvalidResourceName"


class CommandsInBatchActOnDifferentPartitionsError(BadRequestError):
    CODE = "CommandsInBatchActOnDifferentPartitions"


class AuthorizationError(SidetableError):
    """Any 403."""


class AuthorizationFailureError(AuthorizationError):
    CODE = "AuthorizationFailure"


class AuthorizationPermissionMismatchError(AuthorizationError):
    CODE = "AuthorizationPermissionMismatch"


class AuthenticationFailedError(AuthorizationError):
    """403: the token's signature does not match, its key is unknown, it
    expired, is not yet valid, or its stored access policy was removed."""
    CODE = "AuthenticationFailed"


class ResourceNotFoundError(SidetableError):
    """404: the entity (code ``ResourceNotFound``) or, as the subclass
    :class:`TableNotFoundError`, the table does not exist."""
    CODE = "ResourceNotFound"


class TableNotFoundError(ResourceNotFoundError):
    CODE = "TableNotFound"


class ConflictError(SidetableError):
    """Any 409."""


class ResourceExistsError(ConflictError):
    """409 "already exists": an entity or a table (the subclasses)."""


class EntityAlreadyExistsError(ResourceExistsError):
    CODE = "EntityAlreadyExists"


class TableAlreadyExistsError(ResourceExistsError):
    CODE = "TableAlreadyExists"


class TableBeingDeletedError(ConflictError):
    CODE = "TableBeingDeleted"


class UpdateConditionNotSatisfiedError(SidetableError):
    """412: the ETag given as ``if_match`` is not the stored one."""
    CODE = "UpdateConditionNotSatisfied"


PreconditionFailedError = UpdateConditionNotSatisfiedError


class RequestBodyTooLargeError(SidetableError):
    CODE = "RequestBodyTooLarge"


class InternalServerError(SidetableError):
    CODE = "InternalError"


class ServiceUnavailableError(SidetableError):
    """503: the engine is closed or failed (``ServiceUnavailable``); its
    subclass :class:`ServerBusyError` is the retried, never-executed 503."""
    CODE = "ServiceUnavailable"


class ServerBusyError(ServiceUnavailableError):
    CODE = SERVER_BUSY


class ReadSessionNotAvailableError(SidetableError):
    CODE = READ_SESSION_NOT_AVAILABLE


class InsufficientStorageError(SidetableError):
    CODE = INSUFFICIENT_STORAGE


def _leaves(cls):
    for sub in cls.__subclasses__():
        if sub.__dict__.get("CODE"):
            yield sub.CODE, sub
        yield from _leaves(sub)


#: ``{code: class}`` for every code of docs/protocol.md.
ERROR_CLASSES = dict(_leaves(SidetableError))


def error_class(code):
    """The class for ``code``; :class:`SidetableError` for an unknown one."""
    return ERROR_CLASSES.get(code, SidetableError)


def make_error(status, code, message, index=None, op=None):
    """The exception for an error reply."""
    return error_class(code)(status, code, message, index, op)
