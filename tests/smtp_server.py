#!/usr/bin/env python3
"""A small SMTP server for semclip's tests (aiosmtpd, Debian: python3-aiosmtpd).

Listens on 127.0.0.1:PORT and stores every message it accepts in MAILDIR as
NNNNNN.eml (the data as received) beside NNNNNN.json (the envelope: mail_from,
rcpt_tos, login). Both are written to a temporary name first and renamed, the
.eml last, so a reader that sees an .eml sees the whole message and its
envelope. With --auth USER:PASS, AUTH PLAIN/LOGIN is offered over the plain
connection and required before MAIL; wrong credentials get 535.
Prints "ready" on stdout once it accepts connections; runs until killed.
"""

import argparse
import itertools
import json
import os
import signal
import sys
import threading
import warnings

try:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword
except ImportError:
    sys.stderr.write(
        "smtp_server.py needs aiosmtpd: apt-get install python3-aiosmtpd\n")
    sys.exit(3)


class Store:
    """Writes accepted messages into the maildir."""

    def __init__(self, maildir):
        self.maildir = maildir
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def _write(self, name, data):
        tmp = os.path.join(self.maildir, "." + name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, os.path.join(self.maildir, name))

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            n = next(self.counter)
        stem = "%06d" % n
        login = session.auth_data.login if isinstance(
            session.auth_data, LoginPassword) else None
        meta = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "login": login.decode("utf-8", "replace") if login else None,
        }
        self._write(stem + ".json", json.dumps(meta).encode("utf-8"))
        self._write(stem + ".eml", envelope.original_content or envelope.content)
        return "250 Message accepted for delivery"


def authenticator_for(user, password):
    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword)
              and auth_data.login == user.encode("utf-8")
              and auth_data.password == password.encode("utf-8"))
        return AuthResult(success=ok, handled=False,
                          auth_data=auth_data if ok else None)
    return authenticate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--maildir", required=True)
    parser.add_argument("--auth", metavar="USER:PASS")
    args = parser.parse_args()

    os.makedirs(args.maildir, exist_ok=True)
    # AUTH over a plain connection is the point here (a loopback test server).
    warnings.simplefilter("ignore")
    params = {}
    if args.auth:
        user, sep, password = args.auth.partition(":")
        if not sep:
            parser.error("--auth wants USER:PASS")
        params.update(
            authenticator=authenticator_for(user, password),
            auth_require_tls=False,
            auth_required=True,
        )
    controller = Controller(Store(args.maildir), hostname="127.0.0.1",
                            port=args.port, **params)
    controller.start()
    print("ready", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    main()
