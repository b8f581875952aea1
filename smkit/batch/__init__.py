"""Batch transform with SageMaker's semantics: splitting, batching, DataProcessing, assembly.

``smkit batch-transform --local`` runs a job against the serving runtime on 127.0.0.1
(:mod:`smkit.batch.local`); without ``--local`` the same options become a CreateTransformJob request
(:mod:`smkit.batch.request`). The pure core (records, jsonpath, dataprocessing, options) needs no server.
"""
