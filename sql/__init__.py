"""matview's SQL front end: parses SQL in the ``matview`` dialect (``dialect``) and binds each
statement against the catalog (``parse.bind_statement``) into ``statements`` whose queries are
``matview.ir`` plans. Imports only ``matview.ir`` and sqlglot."""
