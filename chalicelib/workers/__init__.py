"""SQS and schedule handlers (Chalice blueprints); each hands its event to one service."""
