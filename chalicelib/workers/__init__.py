"""SQS and schedule handlers (Chalice blueprints); each hands its event to one service.

Each module is the entry point of its functions' Lambdas (Chalice names a blueprint handler
`<module>.<function>`, so those Lambdas never import `app.py`): it calls `startup.start()` as it
is imported. `chalicelib.startup` says how the functions start.
"""
