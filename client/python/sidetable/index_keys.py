"""The keys of index-table entries, as ``patterns/index_table/index_keys.h``
makes them (docs/patterns.md, "Index keys"), so that an application can look
a value up in an index table without copying the rules.

An entry of the ``index_table`` pattern has:

- PartitionKey: the layout (``{value}``, ``{prefix}_{value}``,
  ``{property}_{value}``, ...) with ``{value}`` replaced by
  ``escape_key_text(index_value_text(value))``;
- RowKey: ``make_source_row_key(source_pk, source_rk)``, i.e. both source
  keys escaped and joined by ``|``;
- properties ``SourcePartitionKey``, ``SourceRowKey``, ``SourceVersion``,
  ``IndexedProperty`` (with several properties) and the projected ones.

Escaping: the UTF-8 bytes of ``% | / \\ # ?`` and of the control characters
U+0000..U+001F and U+007F..U+009F become ``%XX`` (upper-case hex); every
other character stays.  Unescaping accepts only that canonical form.

Example, with ``layout: "{prefix}_{value}"`` and ``prefix: email``::

    from sidetable.index_keys import IndexLayout, parse_source_row_key
    pk = IndexLayout("{prefix}_{value}", "email").partition_key("Email", "j@x.com")
    for entry in client.query("EmployeesByEmail", "PartitionKey eq @pk",
                              parameters={"pk": pk}):
        src_pk, src_rk = parse_source_row_key(entry.rk)

Pure functions; ``ValueError`` for anything the C++ side answers with
``InvalidInput`` or ``KeyValueTooLarge``.
"""

import datetime as _dt
import decimal as _decimal
import math as _math
import re as _re
import uuid as _uuid

from .types import DateTime

__all__ = ["escape_key_text", "unescape_key_text", "index_value_text",
           "make_source_row_key", "parse_source_row_key", "IndexLayout",
           "valid_key", "KEY_ESCAPE", "SOURCE_KEY_SEPARATOR"]

KEY_ESCAPE = "%"
SOURCE_KEY_SEPARATOR = "|"
MAX_KEY_BYTES = 1024          # counted in UTF-16, as engine/limits.h does

_ESCAPED_ASCII = frozenset("%|/\\#?")


def _needs_escape(ch):
    o = ord(ch)
    return o < 0x20 or 0x7F <= o <= 0x9F or ch in _ESCAPED_ASCII


def escape_key_text(text):
    """``text`` with the characters keys forbid (and ``%``, ``|``) escaped."""
    out = []
    for ch in text:
        if _needs_escape(ch):
            out.extend("%%%02X" % b for b in ch.encode("utf-8"))
        else:
            out.append(ch)
    return "".join(out)


_ESCAPE_RE = _re.compile(r"%([0-9A-F]{2})")


def unescape_key_text(escaped):
    """The inverse of :func:`escape_key_text`; ``ValueError`` unless
    ``escaped`` is exactly what it produces for some text."""
    data = bytearray()
    i, n = 0, len(escaped)
    while i < n:
        if escaped[i] != KEY_ESCAPE:
            j = escaped.find(KEY_ESCAPE, i)
            j = n if j < 0 else j
            data += escaped[i:j].encode("utf-8", "surrogatepass")
            i = j
            continue
        m = _ESCAPE_RE.match(escaped, i)
        if not m:
            raise ValueError("bad escape sequence at offset %d" % i)
        data.append(int(m.group(1), 16))
        i += 3
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not a canonically escaped key text")
    if escape_key_text(text) != escaped:
        raise ValueError("not a canonically escaped key text")
    return text


def _utf16_len(text):
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def valid_key(key):
    """True if ``key`` is a valid PartitionKey or RowKey (engine/limits.h)."""
    if 2 * _utf16_len(key) > MAX_KEY_BYTES:
        return False
    return not any(ch in "/\\#?" or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F
                   for ch in key)


def _double_text(d):
    """std::to_chars(double): the shortest round-trip digits, in fixed or
    scientific notation, whichever is shorter (fixed on a tie)."""
    if _math.isnan(d):
        return "NaN"
    if _math.isinf(d):
        return "INF" if d > 0 else "-INF"
    if d == 0:
        return "0"
    sign = "-" if d < 0 else ""
    t = _decimal.Decimal(repr(abs(d))).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    exp = t.exponent                          # value = int(digits) * 10**exp
    sci_exp = exp + len(digits) - 1
    sci = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + \
        "e%s%02d" % ("-" if sci_exp < 0 else "+", abs(sci_exp))
    if exp >= 0:
        fixed = digits + "0" * exp
    else:
        point = len(digits) + exp
        fixed = (digits[:point] + "." + digits[point:] if point > 0
                 else "0." + "0" * -point + digits)
    return sign + (fixed if len(fixed) <= len(sci) else sci)


def index_value_text(value):
    """The canonical text of an indexed value (``IndexValueText``): strings
    as they are, integers in decimal, doubles as ``std::to_chars`` writes
    them, ``true``/``false``, DateTime with 7 fractional digits, Guids in
    lower case, binary as lower-case hex."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return "%d" % int(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, _dt.datetime):
        value = DateTime.from_datetime(value)
    if isinstance(value, DateTime):
        return value.isoformat()
    if isinstance(value, _uuid.UUID):
        return str(value)
    raise TypeError("%s is not an Edm value" % type(value).__name__)


def make_source_row_key(partition_key, row_key):
    """An index entry's RowKey for the source entity (pk, rk);
    ``ValueError`` (KeyValueTooLarge) if it would be too long a key."""
    key = escape_key_text(partition_key) + SOURCE_KEY_SEPARATOR + \
        escape_key_text(row_key)
    if not valid_key(key):
        raise ValueError("KeyValueTooLarge: index RowKey is larger than "
                         "1 KiB (UTF-16)")
    return key


def parse_source_row_key(row_key):
    """``(source_pk, source_rk)`` of an index entry's RowKey."""
    sep = row_key.find(SOURCE_KEY_SEPARATOR)
    if sep < 0:
        raise ValueError("index RowKey has no '|' separator")
    try:
        pk = unescape_key_text(row_key[:sep])
    except ValueError as e:
        raise ValueError("index RowKey: PartitionKey part %s" % e)
    try:
        rk = unescape_key_text(row_key[sep + 1:])   # a second '|' fails here
    except ValueError as e:
        raise ValueError("index RowKey: RowKey part %s" % e)
    return pk, rk


class IndexLayout(object):
    """An entry PartitionKey layout, e.g. ``"{value}"`` (the default),
    ``"{prefix}_{value}"`` (the default when a prefix is set),
    ``"{property}_{value}"``.  Checked as the worker checks its settings:
    ``{value}`` exactly once, literal text and the prefix without ``%`` or
    characters keys forbid; ``ValueError`` naming the problem."""

    DEFAULT = "{value}"
    DEFAULT_WITH_PREFIX = "{prefix}_{value}"

    def __init__(self, layout=None, prefix=""):
        if layout is None:
            layout = self.DEFAULT_WITH_PREFIX if prefix else self.DEFAULT
        self.text = layout
        self.prefix = prefix
        self._segments = []                    # (kind, literal)

        def bad(why):
            return ValueError("layout '%s': %s" % (layout, why))

        def check_literal(text, what):
            if KEY_ESCAPE in text:
                raise bad("%s may not contain '%%'" % what)
            if not valid_key(text):
                raise bad("%s is not valid in a key" % what)

        check_literal(prefix, "prefix")
        values, uses_prefix, i = 0, False, 0
        while i < len(layout):
            if layout[i] == "{":
                close = layout.find("}", i)
                if close < 0:
                    raise bad("unclosed '{'")
                name = layout[i + 1:close]
                if name not in ("value", "prefix", "property"):
                    raise bad("unknown placeholder {%s} (known: {value}, "
                              "{prefix}, {property})" % name)
                values += name == "value"
                uses_prefix |= name == "prefix"
                self._segments.append((name, ""))
                i = close + 1
            else:
                nxt = layout.find("{", i)
                nxt = len(layout) if nxt < 0 else nxt
                literal = layout[i:nxt]
                if "}" in literal:
                    raise bad("stray '}'")
                check_literal(literal, "literal text")
                self._segments.append(("literal", literal))
                i = nxt
        if values != 1:
            raise bad("needs {value} exactly once")
        if uses_prefix and not prefix:
            raise bad("uses {prefix} but no prefix is set")
        if not uses_prefix and prefix:
            raise bad("a prefix is set but the layout has no {prefix}")

    def _render(self, property, value_text):
        parts = []
        for kind, literal in self._segments:
            parts.append({"literal": literal, "prefix": self.prefix,
                          "property": property,
                          "value": value_text}[kind])
        return "".join(parts)

    def partition_key(self, property, value):
        """The PartitionKey of the entries for ``value`` of ``property``;
        ``None`` when it would be too long (such values are not indexed)."""
        key = self._render(property,
                           escape_key_text(index_value_text(value)))
        return key if valid_key(key) else None

    def __repr__(self):
        return "IndexLayout(%r, %r)" % (self.text, self.prefix)
