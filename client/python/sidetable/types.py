"""Typed property values for sidetable (Edm types) and the Entity container.

Mapping between Python and Edm types (docs/protocol.md, "Values"):

=================  ===============  ==========================================
Python             Edm type         MessagePack
=================  ===============  ==========================================
``str``            Edm.String       str
``bytes``          Edm.Binary       bin (``bytearray``/``memoryview`` too)
``bool``           Edm.Boolean      bool
``float``          Edm.Double       float64
``int``            Edm.Int32        int, when it fits in 32 bits
``int``            Edm.Int64        ext 1, when it does not fit in 32 bits
``Int32(v)``       Edm.Int32        int (forces Int32; out of range is an error)
``Int64(v)``       Edm.Int64        ext 1 (forces Int64, even for small values)
``DateTime``       Edm.DateTime     ext 2 (100 ns ticks, exact)
``datetime``       Edm.DateTime     ext 2 (must be timezone-aware)
``uuid.UUID``      Edm.Guid         ext 3
=================  ===============  ==========================================

Decoding gives back ``str``, ``bytes``, ``bool``, ``float``, ``int`` (Int32),
``Int64``, ``DateTime`` and ``uuid.UUID``, so writing a value that was read
keeps its Edm type.
"""

import datetime as _dt
import re as _re
import uuid as _uuid

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1

_UTC = _dt.timezone.utc
_EPOCH_TICKS0 = _dt.datetime(1, 1, 1, tzinfo=_UTC)  # .NET ticks start here
TICKS_PER_SECOND = 10_000_000
TICKS_PER_MICROSECOND = 10
# The server accepts DateTime values in 1601-01-01 .. 9999-12-31T23:59:59.9999999Z.
MIN_TICKS = 504911232000000000
MAX_TICKS = 3155378975999999999


class Int32(int):
    """An ``int`` that is sent as Edm.Int32 (a plain MessagePack integer)."""

    __slots__ = ()

    def __new__(cls, value=0):
        v = int.__new__(cls, value)
        if not INT32_MIN <= v <= INT32_MAX:
            raise ValueError("Int32 value out of range: %d" % int(v))
        return v

    def __repr__(self):
        return "Int32(%d)" % int(self)


class Int64(int):
    """An ``int`` that is sent as Edm.Int64 (MessagePack ext type 1).

    Values read from the server as Int64 come back as ``Int64`` so that a
    read-modify-write keeps the type even when the value is small.  Note that
    arithmetic returns plain ``int`` (``Int64(1) + 1`` is ``2``); wrap the
    result again, or let the automatic rule (ints outside Int32 become Int64)
    apply.
    """

    __slots__ = ()

    def __new__(cls, value=0):
        v = int.__new__(cls, value)
        if not INT64_MIN <= v <= INT64_MAX:
            raise ValueError("Int64 value out of range: %d" % int(v))
        return v

    def __repr__(self):
        return "Int64(%d)" % int(self)


_ISO_RE = _re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?"
    r"(Z|[+-]00:00)$")


class DateTime(object):
    """Edm.DateTime: a count of 100 ns ticks since 0001-01-01T00:00:00Z.

    ``datetime`` only has microseconds; this type keeps the full 100 ns
    precision the server stores.  Build one from ``ticks``, from a
    ``datetime`` (:meth:`from_datetime`) or from ISO 8601 text with up to 7
    fractional digits (:meth:`parse`); convert back with :meth:`to_datetime`
    (which truncates to microseconds) or :meth:`isoformat` (exact).
    """

    __slots__ = ("ticks",)

    def __init__(self, ticks):
        if isinstance(ticks, bool) or not isinstance(ticks, int):
            raise TypeError("DateTime ticks must be an int")
        if not INT64_MIN <= ticks <= INT64_MAX:
            raise ValueError("DateTime ticks out of the 64-bit range")
        object.__setattr__(self, "ticks", int(ticks))

    def __setattr__(self, name, value):
        raise AttributeError("DateTime is immutable")

    @classmethod
    def from_datetime(cls, value):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("DateTime needs a timezone-aware datetime "
                             "(use tzinfo=datetime.timezone.utc)")
        delta = value.astimezone(_UTC) - _EPOCH_TICKS0
        return cls((delta.days * 86400 + delta.seconds) * TICKS_PER_SECOND
                   + delta.microseconds * TICKS_PER_MICROSECOND)

    @classmethod
    def parse(cls, text):
        """Parse ``YYYY-MM-DDTHH:MM[:SS[.fffffff]]Z`` (UTC only)."""
        m = _ISO_RE.match(text)
        if not m:
            raise ValueError("not an ISO 8601 UTC date-time: %r" % (text,))
        y, mo, d, h, mi, s, frac, _ = m.groups()
        base = _dt.datetime(int(y), int(mo), int(d), int(h), int(mi),
                            int(s or 0), tzinfo=_UTC)
        frac_ticks = int((frac or "").ljust(7, "0") or 0)
        return cls(cls.from_datetime(base).ticks + frac_ticks)

    @classmethod
    def now(cls):
        return cls.from_datetime(_dt.datetime.now(_UTC))

    def to_datetime(self):
        """A timezone-aware UTC ``datetime`` (sub-microsecond ticks are cut)."""
        return _EPOCH_TICKS0 + _dt.timedelta(
            microseconds=self.ticks // TICKS_PER_MICROSECOND)

    @property
    def sub_microsecond_ticks(self):
        """The 0..9 ticks (100 ns units) a ``datetime`` cannot hold."""
        return self.ticks % TICKS_PER_MICROSECOND

    def isoformat(self):
        """Exact text, always 7 fractional digits: ``...T00:50:32.1234567Z``."""
        whole = _EPOCH_TICKS0 + _dt.timedelta(
            seconds=self.ticks // TICKS_PER_SECOND)
        return "%s.%07dZ" % (whole.strftime("%Y-%m-%dT%H:%M:%S"),
                             self.ticks % TICKS_PER_SECOND)

    def __str__(self):
        try:
            return self.isoformat()
        except (OverflowError, ValueError):
            return "DateTime(ticks=%d)" % self.ticks

    def __repr__(self):
        return "DateTime(%r)" % (str(self),)

    def __eq__(self, other):
        if isinstance(other, DateTime):
            return self.ticks == other.ticks
        if isinstance(other, _dt.datetime) and other.tzinfo is not None:
            return self.ticks == DateTime.from_datetime(other).ticks
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __lt__(self, other):
        return self.ticks < _ticks_of(other)

    def __le__(self, other):
        return self.ticks <= _ticks_of(other)

    def __gt__(self, other):
        return self.ticks > _ticks_of(other)

    def __ge__(self, other):
        return self.ticks >= _ticks_of(other)

    def __hash__(self):
        return hash(("DateTime", self.ticks))


def _ticks_of(other):
    if isinstance(other, DateTime):
        return other.ticks
    if isinstance(other, _dt.datetime):
        return DateTime.from_datetime(other).ticks
    raise TypeError("cannot compare DateTime with %r" % type(other).__name__)


Guid = _uuid.UUID
"""Edm.Guid is represented by :class:`uuid.UUID`."""


class Entity(dict):
    """An entity: a ``dict`` of its keys and properties, plus metadata.

    ``Entity("Sales", "000223", {"Name": "Jones", "Age": 34})``.  Like the
    Azure SDK's ``TableEntity`` the dict holds ``"PartitionKey"`` and
    ``"RowKey"``; ``pk`` and ``rk`` are the same values as attributes and
    ``props`` the user properties alone.  ``etag`` and ``timestamp`` (a
    :class:`DateTime`) are set on entities read from the server and are not
    sent when writing (they are not properties: a property named ``etag`` is
    an ordinary user property).  ``props`` may repeat the keys only with the
    same values; ``Timestamp`` and names starting with ``odata.`` are refused
    when the entity is written (``ValueError``), never silently dropped.
    """

    __slots__ = ("etag", "timestamp")

    def __init__(self, pk, rk, props=None, etag=None, timestamp=None, **kw):
        dict.__init__(self, props or {}, **kw)
        for name, value in (("PartitionKey", pk), ("RowKey", rk)):
            if name in self and self[name] != value:
                raise ValueError("Entity(%r, %r): props hold %s %r, a "
                                 "different key" % (pk, rk, name, self[name]))
        dict.__setitem__(self, "PartitionKey", pk)
        dict.__setitem__(self, "RowKey", rk)
        self.etag = etag
        self.timestamp = timestamp

    @property
    def pk(self):
        return self.get("PartitionKey")

    @pk.setter
    def pk(self, value):
        self["PartitionKey"] = value

    @property
    def rk(self):
        return self.get("RowKey")

    @rk.setter
    def rk(self, value):
        self["RowKey"] = value

    @property
    def props(self):
        """The user properties (without ``PartitionKey`` and ``RowKey``)."""
        return {k: v for k, v in self.items() if k not in KEY_NAMES}

    def __repr__(self):
        return "Entity(pk=%r, rk=%r, props=%r, etag=%r)" % (
            self.pk, self.rk, self.props, self.etag)

    def __eq__(self, other):
        return dict.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None

    def copy(self):
        return Entity(self.pk, self.rk, self.props, self.etag, self.timestamp)


KEY_NAMES = ("PartitionKey", "RowKey")
