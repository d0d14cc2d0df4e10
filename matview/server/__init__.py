"""``matview serve``: a PostgreSQL wire-protocol (v3) server in front of one matview
connection, so that psql, psycopg and other PostgreSQL clients can use it.

    import matview
    from matview.server import serve
    server = serve(matview.connect(), port=6875)   # background threads
    ...
    server.close()

Every client session runs on its own thread over the one shared ``Connection`` (see
``executor`` for how transaction blocks map onto matview's transactions).
"""

from matview.server.listener import Server, serve

__all__ = ["Server", "serve"]
