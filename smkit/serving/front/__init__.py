"""The front-end process of the serving runtime: HTTP, the worker pool, sessions, adapters, WebSocket.

It never imports :mod:`smkit.serving.worker`; it talks to model workers in :mod:`smkit.serving.wire` frames.
"""
