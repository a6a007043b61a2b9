"""Read your own writes through derived tables (docs/consistency.md).

A :class:`Session` wraps a :class:`~sidetable.Client`.  Every write made
through it records the LSN the sidecar answered as the newest token of that
table; every read made through it carries all tokens, so a read of a derived
table (an index, an archive) is answered only once that table includes the
session's writes to its sources, or fails with ``ReadSessionNotAvailable``
(504) after ``wait_ms``: never with data older than the session's writes.
Reads of tables nothing is derived into are not delayed.

Tokens travel between processes as a short string (``export()`` ->
``"st1:People=42,Orders=7"``, ``import_tokens()`` merges one in), the same
format as the C++ client's ``client::Session``.  Not thread-safe, like the
client.
"""

import re as _re

__all__ = ["Session"]

_PREFIX = "st1:"
_NAME = _re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")


class Session(object):
    def __init__(self, client, wait_ms=None):
        self.client = client
        self.wait_ms = wait_ms
        self._tokens = {}   # lower-case name -> (name, lsn)

    # -- tokens --

    def record(self, table, lsn):
        """Keep the newer of the stored and the given LSN for ``table``."""
        key = table.lower()
        old = self._tokens.get(key)
        if old is None or lsn > old[1]:
            self._tokens[key] = (table, int(lsn))

    @property
    def tokens(self):
        """``{source_table: lsn}``."""
        return dict(v for _, v in sorted(self._tokens.items()))

    def export(self):
        return _PREFIX + ",".join("%s=%d" % v for _, v in sorted(self._tokens.items()))

    def import_tokens(self, text):
        """Merge an exported string; ``ValueError`` (nothing merged) if malformed."""
        if not isinstance(text, str) or not text.startswith(_PREFIX):
            raise ValueError("a session token string starts with 'st1:'")
        rest = text[len(_PREFIX):]
        parsed = []
        for item in (rest.split(",") if rest else []):
            name, eq, lsn = item.partition("=")
            if not eq or not _NAME.match(name) or name.lower() == "tables" \
                    or not lsn.isdigit() or int(lsn) >= 2 ** 64:
                raise ValueError("bad session token %r" % item)
            parsed.append((name, int(lsn)))
        for name, lsn in parsed:
            self.record(name, lsn)

    def clear(self):
        self._tokens.clear()

    # -- writes: recorded on success --

    def _recorded(self, table, result):
        self.record(table, result.lsn)
        return result

    def execute(self, batch):
        return self._recorded(batch.table, self.client.execute(batch))

    def insert(self, table, entity, **kw):
        return self._recorded(table, self.client.insert(table, entity, **kw))

    def update(self, table, entity, **kw):
        return self._recorded(table, self.client.update(table, entity, **kw))

    def merge(self, table, entity, **kw):
        return self._recorded(table, self.client.merge(table, entity, **kw))

    def delete(self, table, entity_or_pk, rk=None, **kw):
        return self._recorded(table, self.client.delete(table, entity_or_pk, rk, **kw))

    def insert_or_replace(self, table, entity, **kw):
        return self._recorded(table, self.client.insert_or_replace(table, entity, **kw))

    upsert = insert_or_replace

    def insert_or_merge(self, table, entity, **kw):
        return self._recorded(table, self.client.insert_or_merge(table, entity, **kw))

    def request_archive(self, table, pk, row_keys, archive_table, **kw):
        lsn = self.client.request_archive(table, pk, row_keys, archive_table, **kw)
        self.record(table, lsn)
        return lsn

    # -- reads: carry every token --

    def get(self, table, pk, rk, select=None):
        return self.client.get(table, pk, rk, select, after=self.tokens,
                               wait_ms=self.wait_ms)

    def query_page(self, table, filter=None, select=None, top=None,
                   continuation=None, parameters=None):
        return self.client.query_page(table, filter, select, top, continuation,
                                      after=self.tokens, wait_ms=self.wait_ms,
                                      parameters=parameters)

    def query(self, table, filter=None, select=None, top=None, limit=None,
              parameters=None):
        return self.client.query(table, filter, select, top, limit,
                                 after=self.tokens, wait_ms=self.wait_ms,
                                 parameters=parameters)
