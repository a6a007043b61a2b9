"""Bound parameters for OData ``$filter`` text (docs/queries.md, "Literals").

``format_filter("Age gt @age and Name eq @name", {"age": 30, "name": "O'Hara"})``
gives ``"Age gt 30 and Name eq 'O''Hara'"``.  A parameter is ``@`` followed
by a name (letters, digits, ``_``) outside quoted literals; ``@`` inside a
``'...'`` literal (including ``datetime'...'`` and friends) is left alone.
A parameter the text uses but ``parameters`` lacks, or one it has but the
text never uses, is a ``ValueError``: both are typos that would otherwise
give a silently wrong query.  Values become literals of their Edm type, as
property values do (``docs/protocol.md``): an ``int`` that fits in 32 bits
an Int32 literal, a larger one or an :class:`~sidetable.Int64` ``...L``.
"""

import datetime as _dt
import math as _math
import re as _re
import uuid as _uuid

from .types import DateTime, Int32, Int64, INT32_MIN, INT32_MAX, \
    INT64_MIN, INT64_MAX

__all__ = ["format_filter", "odata_literal"]

_NAME = _re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def odata_literal(value):
    """The OData literal text of a Python value (its Edm type kept)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Int64):
        return "%dL" % int(value)
    if isinstance(value, Int32):
        return "%d" % int(value)
    if isinstance(value, int):
        if INT32_MIN <= value <= INT32_MAX:
            return "%d" % value
        if INT64_MIN <= value <= INT64_MAX:
            return "%dL" % value
        raise ValueError("integer %d does not fit in Edm.Int64" % value)
    if isinstance(value, float):
        if _math.isnan(value) or _math.isinf(value):
            raise ValueError("%r has no OData literal" % value)
        text = repr(value)            # shortest round trip: "1.0", "1e-05"
        return text if ("." in text or "e" in text) else text + ".0"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "X'" + bytes(value).hex().upper() + "'"
    if isinstance(value, _dt.datetime):
        value = DateTime.from_datetime(value)   # naive: ValueError
    if isinstance(value, DateTime):
        return "datetime'" + value.isoformat() + "'"
    if isinstance(value, _uuid.UUID):
        return "guid'" + str(value) + "'"
    raise TypeError("%s has no OData literal" % type(value).__name__)


def format_filter(text, parameters):
    """``text`` with every ``@name`` replaced by ``odata_literal(parameters[name])``."""
    params = dict(parameters or {})
    out = []
    used = set()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "'":                       # a quoted literal, '' is a quote
            j = i + 1
            while j < n:
                if text[j] == "'":
                    if j + 1 < n and text[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                raise ValueError("$filter: unterminated string literal at "
                                 "position %d" % i)
            out.append(text[i:j + 1])
            i = j + 1
        elif c == "@":
            m = _NAME.match(text, i + 1)
            if not m:
                raise ValueError("$filter: '@' without a parameter name at "
                                 "position %d" % i)
            name = m.group(0)
            if name not in params:
                raise ValueError("$filter uses parameter @%s, which "
                                 "parameters does not give" % name)
            try:
                out.append(odata_literal(params[name]))
            except (TypeError, ValueError) as e:
                raise type(e)("parameter @%s: %s" % (name, e)) from None
            used.add(name)
            i = m.end()
        else:
            out.append(c)
            i += 1
    unused = sorted(set(params) - used)
    if unused:
        raise ValueError("parameters not used by the $filter: %s"
                         % ", ".join("@" + u for u in unused))
    return "".join(out)
