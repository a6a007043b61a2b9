"""CURVE key files (docs/security.md, "Transport"): read the keys a
:class:`sidetable.Client` needs to reach a sidecar that requires CURVE::

    from sidetable import Client, curve
    server = curve.load_public_key_file("/etc/sidetable/sidecar.pub")
    public, secret = curve.load_secret_key_file("/etc/myapp/client.key")
    c = Client("tcp://db-host:5555", curve_server_key=server,
               curve_public_key=public, curve_secret_key=secret)

The files are those ``sidetable-cli curve keygen --out PREFIX`` writes:
text, ``#`` comment lines and blank lines ignored, one Z85 key (40
characters, as ``zmq.curve_keypair()`` makes them) a line. A secret key file
must not be accessible by group or others; the public key is derived from the
secret one.
"""

import os
import stat

import zmq as _zmq
from zmq.utils import z85 as _z85

__all__ = ["load_public_key_file", "load_secret_key_file", "write_key_pair",
           "is_z85_key"]

_Z85 = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 ".-:+=^!/*?&<>()[]{}@%$#")


def is_z85_key(text):
    """True when ``text`` (str or bytes) is a 40-character Z85 key."""
    if isinstance(text, bytes):
        try:
            text = text.decode("ascii")
        except UnicodeDecodeError:
            return False
    if not isinstance(text, str) or len(text) != 40 or not set(text) <= _Z85:
        return False
    try:
        _z85.decode(text)
    except Exception:   # a group above 2**32
        return False
    return True


def _keys(path, secret):
    with open(path, "rb") as f:
        if secret:
            mode = os.fstat(f.fileno()).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError("key file %s: a secret key accessible by group "
                                 "or others: chmod 600 %s" % (path, path))
        text = f.read(1 << 20).decode("ascii", "replace")
    keys = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key = line.split()[0]
        if not is_z85_key(key):
            raise ValueError("key file %s: line %d: not a Z85 key (40 characters "
                             "of ZeroMQ's Z85 alphabet)" % (path, number))
        keys.append(key)
    if len(keys) != 1:
        raise ValueError("key file %s: holds %d keys, expected one" % (path, len(keys)))
    return keys[0]


def load_public_key_file(path):
    """The one public key (Z85 str) in ``path`` (PREFIX.pub)."""
    return _keys(path, secret=False)


def load_secret_key_file(path):
    """``(public, secret)`` (Z85 str) from ``path`` (PREFIX.key, owner-only)."""
    secret = _keys(path, secret=True)
    public = _zmq.curve_public(secret.encode("ascii")).decode("ascii")
    return public, secret


def write_key_pair(prefix):
    """Writes PREFIX.key (0600) and PREFIX.pub like ``sidetable-cli curve
    keygen`` (never overwriting either); returns the public key."""
    public, secret = (k.decode("ascii") for k in _zmq.curve_keypair())
    fd = os.open(prefix + ".key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write("# sidetable CURVE secret key (Z85); keep it private. "
                "Public key: %s\n%s\n" % (public, secret))
    fd = os.open(prefix + ".pub", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write("# sidetable CURVE public key (Z85)\n%s\n" % public)
    return public
