"""What a client's socket saw of its connection, so that a request nobody
answered says why (the C++ client's client/connection_watch.h, the same
reading and the same phrases).

A DEALER hides behind its queue and its reconnects whether nothing listens
at the endpoint, the sidecar closes each connection during the ZeroMQ
handshake (it is at ``sidecar.max_connections``, or CURVE is on one side
only), the sidecar refuses this client's CURVE key, or the connection is up
and the sidecar does not answer. libzmq's socket monitor tells them apart;
the clients read it when a request runs out of time and when they are
idle, never per reply."""

import itertools as _itertools
import os as _os
import struct as _struct

import zmq as _zmq

_EVENTS = (_zmq.EVENT_CONNECTED | _zmq.EVENT_CONNECT_RETRIED |
           _zmq.EVENT_DISCONNECTED | _zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL |
           _zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL |
           _zmq.EVENT_HANDSHAKE_FAILED_AUTH | _zmq.EVENT_HANDSHAKE_SUCCEEDED)
_names = _itertools.count()


def _times(n):
    return "once" if n == 1 else "%d times" % n


class ConnectionWatch(object):
    """Watches ``sock`` (made in ``ctx``, not yet connected). If libzmq
    cannot monitor it, the watch stays empty and ``explain`` says nothing."""

    def __init__(self, sock, ctx):
        self._reset()
        self.ever_up = False
        self.drops = 0      # connections lost after their handshake
        self._connected_since_retry = False
        self._mon = None
        # A context may be shared by many clients: one name per watch.
        addr = "inproc://sidetable.watch.%d.%d" % (_os.getpid(), next(_names))
        try:
            sock.monitor(addr, _EVENTS)
            mon = _zmq.Socket(ctx, _zmq.PAIR)   # a plain socket, asyncio or not
            mon.setsockopt(_zmq.LINGER, 0)
            mon.connect(addr)
            self._mon = mon
        except _zmq.ZMQError:
            pass

    def _reset(self):
        self.up = False
        self.tcp_open = False
        self.refused_connects = 0
        self.closed_in_handshake = 0
        self.auth_refused = 0
        self.protocol_errors = 0
        self.last_protocol_error = 0

    def close(self):
        """After the watched socket is closed, before its context ends."""
        if self._mon is not None:
            self._mon.close(0)
            self._mon = None

    def drain(self):
        """Reads the events queued so far; never blocks."""
        while self._mon is not None:
            try:
                frames = self._mon.recv_multipart(_zmq.NOBLOCK)
            except _zmq.Again:
                return
            if len(frames[0]) >= 6:
                event, value = _struct.unpack("=Hi", frames[0][:6])
                self.on_event(event, value)

    def on_event(self, event, value):
        if event == _zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self._reset()
            self.up = self.ever_up = True
        elif event == _zmq.EVENT_CONNECTED:
            self.tcp_open = True
            self._connected_since_retry = True
        elif event == _zmq.EVENT_CONNECT_RETRIED:
            # libzmq retries after a failed connect, and reconnects after a
            # disconnect: only the first kind says nothing listens.
            if not self._connected_since_retry:
                self.refused_connects += 1
            self._connected_since_retry = False
        elif event == _zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
            self.closed_in_handshake += 1
            self.tcp_open = False       # its DISCONNECTED follows: counted once
        elif event == _zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            self.auth_refused += 1
            self.tcp_open = False
        elif event == _zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
            self.protocol_errors += 1
            self.last_protocol_error = value
            self.tcp_open = False
        elif event == _zmq.EVENT_DISCONNECTED:
            if self.up:
                self.drops += 1
            elif self.tcp_open:
                self.closed_in_handshake += 1
            self.tcp_open = False
            self.up = False

    def still_up(self, drops):
        """Drains, then whether the connection is up and has not been lost
        since ``drops`` was read: a request sent then is still with the
        sidecar, so a long operation (Backup) is worth waiting for. A monitor
        that could not be made says yes, as the clients did before."""
        if self._mon is None:
            return True
        self.drain()
        return self.up and self.drops == drops

    def explain(self, endpoint, curve):
        """Drains, then a phrase saying why ``endpoint`` has not answered;
        "" when nothing was seen yet."""
        self.drain()
        if self.up:
            return ("the connection is up: the sidecar did not answer in "
                    "time (busy or stopped)")
        if self.auth_refused:
            return ("the sidecar refused this client's CURVE key at the "
                    "handshake (%s): it is not in the sidecar's "
                    "security.curve_clients_file" % _times(self.auth_refused))
        if self.protocol_errors:
            return ("the ZeroMQ handshake failed (%s, protocol error 0x%x): "
                    "%s" % (_times(self.protocol_errors),
                            self.last_protocol_error & 0xffffffff,
                            "the sidecar does not use CURVE, or uses another "
                            "key than this client's server key" if curve else
                            "the sidecar may require CURVE (docs/security.md)"))
        if self.closed_in_handshake:
            return ("the sidecar closed the connection during the handshake "
                    "(%s): it is at its connection bound "
                    "(sidecar.max_connections), or %s" % (
                        _times(self.closed_in_handshake),
                        "this client's server key is not the sidecar's"
                        if curve else "it requires CURVE (docs/security.md)"))
        if self.refused_connects:
            return "%sthe connect failed (%s): nothing listens at %s" % (
                "the connection was lost, and " if self.ever_up else "",
                _times(self.refused_connects), endpoint)
        if self.ever_up:
            return "the connection was lost"
        return ""
