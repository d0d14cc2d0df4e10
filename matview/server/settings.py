"""The session settings the server reports and shows, with their starting values, and the
time settings' values read (``statement_timeout``,
``idle_in_transaction_session_timeout``)."""

import re

from matview.ir.object_ids import SETTINGS

SERVER_VERSION = SETTINGS["server_version"]
REPORTED = {
    "server_version": SERVER_VERSION, "server_encoding": "UTF8", "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on",
    "TimeZone": "UTC", "IntervalStyle": "postgres", "is_superuser": "off",
    "application_name": "",
}
"""Settings sent as ParameterStatus at startup and when SET changes them."""
OTHER_SETTINGS = {
    "server_version_num": SETTINGS["server_version_num"], "search_path": "public",
    "max_identifier_length": "63",
    "transaction_isolation": "serializable", "default_transaction_isolation": "serializable",
    "transaction_read_only": "off", "extra_float_digits": "1", "lc_messages": "C",
    "lc_monetary": "C", "lc_numeric": "C", "lc_time": "C", "statement_timeout": "0",
    "lock_timeout": "0", "idle_in_transaction_session_timeout": "0",
}

TIME_SETTINGS = ("statement_timeout", "idle_in_transaction_session_timeout")
"""The settings that are times (``seconds``), checked when SET."""

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
"""The units of a time setting, in seconds (PostgreSQL's; none: milliseconds)."""


def seconds(name: str, value: str) -> float:
    """A time setting's ``value`` (``5000``, ``'5s'``, ``'1min'``...: PostgreSQL's forms, in
    milliseconds without a unit) in seconds, 0 meaning none; ``ValueError`` naming the
    setting when it is no such time."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", value.lower())
    if found is None or found.group(2) not in ("", *_UNITS):
        raise ValueError(f'invalid value for parameter "{name}": "{value}"'
                         + ('' if found is None else
                            '; valid units are "us", "ms", "s", "min", "h", and "d"'))
    return float(found.group(1)) * _UNITS.get(found.group(2), 1e-3)
