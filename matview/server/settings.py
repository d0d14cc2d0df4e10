"""The session settings the server reports and shows, with their starting values."""

SERVER_VERSION = "15.0 (matview)"
REPORTED = {
    "server_version": SERVER_VERSION, "server_encoding": "UTF8", "client_encoding": "UTF8",
    "DateStyle": "ISO, MDY", "integer_datetimes": "on", "standard_conforming_strings": "on",
    "TimeZone": "UTC", "IntervalStyle": "postgres", "is_superuser": "off",
    "application_name": "",
}
"""Settings sent as ParameterStatus at startup and when SET changes them."""
OTHER_SETTINGS = {
    "server_version_num": "150000", "search_path": "public", "max_identifier_length": "63",
    "transaction_isolation": "serializable", "default_transaction_isolation": "serializable",
    "transaction_read_only": "off", "extra_float_digits": "1", "lc_messages": "C",
    "lc_monetary": "C", "lc_numeric": "C", "lc_time": "C", "statement_timeout": "0",
    "lock_timeout": "0", "idle_in_transaction_session_timeout": "0",
}
